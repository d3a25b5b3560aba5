/* p4mcc switch program: ingress.
 *
 * Order of decisions for one packet:
 *   parser error / bad IPv4 checksum / truncated  -> drop, counted
 *   packet_out from the controller                 -> its port, or flood
 *   ARP                                            -> answer, forward or flood
 *   IGMP                                           -> membership + proxy
 *   IPv4 multicast                                 -> PRE group (egress prunes)
 *   IPv4 unicast (p4mcc feedback: police, then
 *     aggregate or filter per session)             -> ipv4_fwd
 *   anything else                                  -> drop, counted */
#ifndef P4MCC_INGRESS_P4
#define P4MCC_INGRESS_P4

control MccIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {

    ClassifyRecord() classify0;
    ClassifyRecord() classify1;
    ClassifyRecord() classify2;
    ClassifyRecord() classify3;
    GroupRecord() record0;
    GroupRecord() record1;
    GroupRecord() record2;
    GroupRecord() record3;
    IgmpProxy() igmp;
    Aggregate() aggregate;
    FeedbackFilter() filter;

    /* ---- switch-wide settings: a keyless table, set its default action ---- */
    action set_config(bit<16> flood_mgid, bit<48> membership_timeout_us,
                      bit<48> proxy_refresh_us) {
        meta.flood_mgid = flood_mgid;
        meta.membership_timeout = membership_timeout_us;
        meta.proxy_refresh = proxy_refresh_us;
    }

    table switch_config {
        key = { }
        actions = { set_config; }
        default_action = set_config(0, 0, 0);
        size = 1;
    }

    /* ---- port-set replication groups ----
     * When the controller sets this table's default action, the PRE holds one
     * group per set of this switch's ports (group base + the set's port
     * bitmap, for every set within `ports`), and multicast data is
     * replicated to exactly its group's member ports: a copy that egress
     * would prune never enters a port's egress queue, so it costs no queue
     * room or rate (BMv2's egress queue sits before egress).  Unset, data
     * goes to the group's own PRE group and egress prunes, as before. */
    action set_port_sets(bit<16> base, bit<64> ports) {
        meta.port_set_base = base;
        meta.port_set_ports = ports;
    }

    table port_sets {
        key = { }
        actions = { set_port_sets; @defaultonly NoAction; }
        default_action = NoAction();
        size = 1;
    }

    /* ---- ARP ---- */
    /* Answers a request for tpa on behalf of its owner. */
    action arp_reply(bit<48> mac) {
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        hdr.arp.oper = 2;
        hdr.arp.tha = hdr.arp.sha;
        bit<32> target = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.sha = mac;
        hdr.arp.spa = target;
        sm.egress_spec = meta.in_port;
    }

    table arp_proxy {
        key = { hdr.arp.tpa: exact; }
        actions = { arp_reply; @defaultonly NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* ---- unicast IPv4 (and ARP replies, keyed on their tpa) ---- */

    action forward(bit<9> port) {
        sm.egress_spec = port;
    }

    action forward_mac(bit<9> port, bit<48> dst_mac) {
        sm.egress_spec = port;
        hdr.ethernet.dst_addr = dst_mac;
    }

    action to_cpu() {
        sm.egress_spec = CPU_PORT;
        meta.kind = KIND_PUNT;
        meta.punt_reason = PUNT_TABLE;
    }

    action drop_packet() {
        meta.drop = 1;
        meta.drop_reason = DROP_CONFIG;
    }

    table ipv4_fwd {
        key = { meta.fwd_dst: lpm @name("dst_addr"); }
        actions = { forward; forward_mac; to_cpu; drop_packet; @defaultonly NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* ---- per-session assistance ---- */
    /* sidx: session slot (< MAX_SESSIONS); gidx: the slot of the session's
     * data group, whose member ports the fold covers. */
    action assist_aggregate(bit<32> sidx, bit<32> gidx) {
        meta.assist = ASSIST_AGGREGATE;
        meta.sidx = sidx;
        meta.session_gidx = gidx;
    }

    /* window_us: VLMCC challenge round length (TFMCC uses fb_round). */
    action assist_filter(bit<32> sidx, bit<48> window_us) {
        meta.assist = ASSIST_FILTER;
        meta.sidx = sidx;
        meta.filter_window = window_us;
    }

    action assist_none() {
        meta.assist = ASSIST_NONE;
    }

    table sessions {
        key = { hdr.mcc.session_id: exact; }
        actions = { assist_aggregate; assist_filter; assist_none; }
        default_action = assist_none();
        size = MAX_SESSIONS;
    }

    action drop_for(bit<32> reason) {
        meta.drop = 1;
        meta.drop_reason = reason;
    }

    apply {
        meta.now = sm.ingress_global_timestamp;
        meta.in_port = sm.ingress_port;
        meta.kind = KIND_OTHER;
        meta.drop = 0;
        meta.rewritten = 0;
        meta.digest_pending = 0;
        meta.assist = ASSIST_NONE;
        switch_config.apply();
        port_rx.count((bit<32>)sm.ingress_port);

        bit<32> g0 = 0;
        bit<32> g1 = 0;
        bit<32> g2 = 0;
        bit<32> g3 = 0;
        bit<2> k0 = REC_NONE;
        bit<2> k1 = REC_NONE;
        bit<2> k2 = REC_NONE;
        bit<2> k3 = REC_NONE;
        bool is_igmp = false;
        bool is_mdata = false;
        bool is_unicast = false;
        bool do_fwd = false;
        bool do_flood = false;
        bit<32> l2_len = 14;
        if (hdr.packet_out.isValid()) {
            l2_len = 16;
        }

        if (sm.parser_error != error.NoError) {
            drop_for(DROP_PARSER_ERROR);
            port_parser_errors.count((bit<32>)sm.ingress_port);
        } else if (sm.checksum_error == 1) {
            drop_for(DROP_BAD_CHECKSUM);
        } else if (hdr.ipv4.isValid()
                   && (bit<32>)hdr.ipv4.total_len + l2_len > sm.packet_length) {
            drop_for(DROP_TRUNCATED);
        } else if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.flood == 1) {
                do_flood = true;
            } else {
                sm.egress_spec = hdr.packet_out.egress_port;
            }
        } else if (hdr.arp.isValid()) {
            if (hdr.arp.htype != 1 || hdr.arp.ptype != ETHERTYPE_IPV4
                    || hdr.arp.hlen != 6 || hdr.arp.plen != 4) {
                drop_for(DROP_ARP_INVALID);
            } else if (hdr.arp.oper == 1 && hdr.arp.spa != 0
                       && hdr.arp.spa != hdr.arp.tpa) {
                /* A hit answers (arp_reply); probes and misses are flooded. */
                if (!arp_proxy.apply().hit) {
                    do_flood = true;
                }
            } else if (hdr.arp.oper == 2) {
                meta.fwd_dst = hdr.arp.tpa;
                do_fwd = true;
            } else {
                do_flood = true;
            }
        } else if (hdr.igmp.isValid()) {
            is_igmp = true;
            if (meta.igmp_unsupported == 1) {
                sm.egress_spec = CPU_PORT;
                meta.kind = KIND_PUNT;
                meta.punt_reason = PUNT_IGMP_UNSUPPORTED;
                is_igmp = false;
            } else if (hdr.igmp.type == IGMP_V2_REPORT || hdr.igmp.type == IGMP_V1_REPORT) {
                g0 = hdr.igmp.group;
                if (g0[31:28] == 0xE) { k0 = REC_JOIN; }
            } else if (hdr.igmp.type == IGMP_V2_LEAVE) {
                g0 = hdr.igmp.group;
                if (g0[31:28] == 0xE) { k0 = REC_LEAVE; }
            } else if (hdr.igmp.type == IGMP_V3_REPORT) {
                classify0.apply(hdr.rec0, g0, k0);
                classify1.apply(hdr.rec1, g1, k1);
                classify2.apply(hdr.rec2, g2, k2);
                classify3.apply(hdr.rec3, g3, k3);
            } else if (hdr.igmp.type == IGMP_QUERY) {
                /* Queries come from the controller (packet_out); one from a
                 * port is not flooded further. */
                drop_for(DROP_IGMP_QUERY);
                is_igmp = false;
            } else {
                drop_for(DROP_IGMP_CONSUMED);
                is_igmp = false;
            }
        } else if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.dst_addr[31:28] == 0xE) {
                is_mdata = true;
                g0 = hdr.ipv4.dst_addr;
                k0 = REC_DATA;
            } else {
                is_unicast = true;
            }
        } else {
            drop_for(DROP_NOT_IPV4_OR_ARP);
        }

        record_result_t r0;
        record0.apply(g0, k0, meta.in_port, meta.now, meta.membership_timeout,
                      meta.proxy_refresh, r0);

        if (is_igmp) {
            /* Only an IGMPv3 report carries records 1..3 (k1..k3 stay
             * REC_NONE otherwise), so other packets skip their lookups. */
            record_result_t r1;
            record_result_t r2;
            record_result_t r3;
            record1.apply(g1, k1, meta.in_port, meta.now, meta.membership_timeout,
                          meta.proxy_refresh, r1);
            record2.apply(g2, k2, meta.in_port, meta.now, meta.membership_timeout,
                          meta.proxy_refresh, r2);
            record3.apply(g3, k3, meta.in_port, meta.now, meta.membership_timeout,
                          meta.proxy_refresh, r3);
            igmp.apply(hdr, meta, sm, r0, r1, r2, r3, g0, g1, g2, g3, k0, k1, k2, k3);
        } else if (is_mdata) {
            port_data_rx.count((bit<32>)meta.in_port);
            if (r0.hit == 1 && r0.mgid != 0) {
                sm.mcast_grp = r0.mgid;
                meta.kind = KIND_MCAST_DATA;
                meta.gidx = r0.gidx;
                group_data_rx.count(r0.gidx);
                meta.port_set_base = 0;
                port_sets.apply();
                if (meta.port_set_base != 0 && r0.gidx < MAX_GROUPS) {
                    bit<64> members;
                    member_bitmap.read(members, r0.gidx);
                    if (meta.in_port < MEMBER_PORT_LIMIT) {
                        /* BMv2 limits a shift amount to 8 bits; in_port < 64 here. */
                        members = members & ~(64w1 << (bit<8>)meta.in_port);
                    }
                    if (members == 0) {
                        drop_for(DROP_NO_MEMBERS);
                    } else if ((members & ~meta.port_set_ports) == 0) {
                        sm.mcast_grp = meta.port_set_base + (bit<16>)members;
                    }
                }
            } else {
                drop_for(DROP_UNKNOWN_GROUP);
            }
        } else if (is_unicast) {
            if (hdr.mcc.isValid() && (hdr.mcc.msg_type & 0x0f) != 1) {
                /* p4mcc feedback: police, then assist per session. */
                port_feedback_rx.count((bit<32>)meta.in_port);
                bit<2> color;
                feedback_meter.execute_meter((bit<32>)meta.in_port, color);
                if (color == V1MODEL_METER_COLOR_RED) {
                    drop_for(DROP_POLICED);
                    port_policed.count((bit<32>)meta.in_port);
                } else {
                    sessions.apply();
                    if (meta.assist != ASSIST_NONE && meta.sidx < MAX_SESSIONS) {
                        session_feedback_rx.count(meta.sidx);
                    }
                    if (meta.assist == ASSIST_AGGREGATE && hdr.mtcp_ack.isValid()
                            && (hdr.mcc.flags & MCC_FLAG_ACKER) == 0) {
                        /* an acker's own copy passes on unfolded (aggregation.p4) */
                        aggregate.apply(hdr, meta);
                    } else if (meta.assist == ASSIST_FILTER
                               && (hdr.tfmcc_report.isValid()
                                   || hdr.vlmcc_challenge.isValid())) {
                        filter.apply(hdr, meta);
                    }
                    if (meta.drop == 0 && meta.assist != ASSIST_NONE
                            && meta.sidx < MAX_SESSIONS) {
                        session_feedback_fwd.count(meta.sidx);
                    }
                }
            }
            if (meta.drop == 0) {
                meta.fwd_dst = hdr.ipv4.dst_addr;
                do_fwd = true;
            }
        }

        if (do_fwd) {
            if (!ipv4_fwd.apply().hit) {
                if (hdr.arp.isValid()) {
                    do_flood = true;   /* ARP reply toward an unknown host */
                } else {
                    drop_for(DROP_IPV4_MISS);
                }
            }
        }

        if (do_flood) {
            if (meta.flood_mgid == 0) {
                drop_for(DROP_NO_FLOOD_GROUP);
            } else {
                sm.mcast_grp = meta.flood_mgid;
                meta.kind = KIND_FLOOD;
            }
        }

        if (meta.drop == 1) {
            mark_to_drop(sm);
            drop_reasons.count(meta.drop_reason);
            port_drops.count((bit<32>)meta.in_port);
        }
        if (meta.digest_pending == 1) {
            digest<membership_digest_t>(1, meta.digest);
        }
    }
}

#endif
