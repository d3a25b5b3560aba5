/* p4mcc switch program: IGMP snooping and proxying in the data plane.
 *
 * Membership is a bitmap of ports per group (member_bitmap) plus a report
 * time per (group, port) (member_ts), so a join or leave takes effect for
 * the very next data packet, with no controller round trip.
 *
 * Proxy rule: a join is sent toward the group's upstream port only when the
 * group goes from empty to non-empty here (or, if proxy_refresh is set, when
 * the last join sent upstream is older than proxy_refresh, so the upstream
 * switch's membership timer is refreshed); a leave only when the group
 * becomes empty. So a join climbs the tree to the first switch that already
 * carries the group and stops there. */
#ifndef P4MCC_IGMP_P4
#define P4MCC_IGMP_P4

/* Classifies one IGMPv3 group record (zero sources, as Linux sends):
 * EXCLUDE({}) = member (join), INCLUDE({}) = not a member (leave); the
 * other record types with no sources change nothing. */
control ClassifyRecord(in igmpv3_record_t rec, out bit<32> group, out bit<2> kind) {
    apply {
        group = rec.group;
        kind = REC_NONE;
        if (rec.isValid() && rec.group[31:28] == 0xE) {
            if (rec.record_type == IGMPV3_MODE_IS_EXCLUDE
                    || rec.record_type == IGMPV3_TO_EXCLUDE) {
                kind = REC_JOIN;
            } else if (rec.record_type == IGMPV3_MODE_IS_INCLUDE
                    || rec.record_type == IGMPV3_TO_INCLUDE) {
                kind = REC_LEAVE;
            }
        }
    }
}

/* Looks a group up and, for a join or leave, updates its membership.
 * Instantiated four times (record0..record3) so one packet can carry four
 * IGMPv3 records; record0 also serves the data path (kind REC_DATA). The
 * controller writes the same entries into all four `groups` tables. */
control GroupRecord(in bit<32> group, in bit<2> kind, in bit<9> port,
                    in bit<48> now, in bit<48> timeout, in bit<48> refresh,
                    out record_result_t r) {

    /* gidx: the group's slot in the membership registers (< MAX_GROUPS).
     * mgid: PRE group holding every port that may carry the group.
     * upstream_port / has_upstream: where joins and leaves are proxied
     * (has_upstream = 0 at the switch whose host is the source).
     * mgid 0 names no PRE group: such an entry counts as a miss. (This also
     * keeps mgid live in record1..3, whose callers read only r.hit.) */
    action set_group(bit<32> gidx, bit<16> mgid, bit<9> upstream_port,
                     bit<1> has_upstream) {
        if (mgid != 0) {
            r.hit = 1;
        }
        r.gidx = gidx;
        r.mgid = mgid;
        r.upstream_port = upstream_port;
        r.has_upstream = has_upstream;
    }

    table groups {
        key = { group: exact @name("group"); }
        actions = { set_group; @defaultonly NoAction; }
        default_action = NoAction();
        size = MAX_GROUPS;
    }

    apply {
        r.hit = 0;
        r.gidx = 0;
        r.mgid = 0;
        r.has_upstream = 0;
        r.upstream_port = 0;
        r.want_forward = 0;
        r.is_join = 0;
        r.changed = 0;
        r.members = 0;
        if (kind != REC_NONE) {
            groups.apply();
        }
        if (r.hit == 1 && r.gidx < MAX_GROUPS && port < MEMBER_PORT_LIMIT
                && (kind == REC_JOIN || kind == REC_LEAVE)) {
            bit<64> bm;
            bit<48> ts;
            bit<48> last;
            /* BMv2 limits a shift amount to 8 bits; port < 64 here. */
            bit<64> pbit = 64w1 << (bit<8>)port;
            bit<32> idx = r.gidx * MEMBER_PORTS + (bit<32>)port;
            member_bitmap.read(bm, r.gidx);
            member_ts.read(ts, idx);
            group_last_report.read(last, r.gidx);
            /* If the newest report of the group is older than the timeout,
             * every member port is stale: the group is empty. */
            bool group_fresh = bm != 0 && (timeout == 0 || now - last <= timeout);
            bool was_member = (bm & pbit) != 0 && (timeout == 0 || now - ts <= timeout);
            if (!group_fresh) {
                bm = 0;
            }
            if (kind == REC_JOIN) {
                r.is_join = 1;
                bm = bm | pbit;
                member_ts.write(idx, now);
                group_last_report.write(r.gidx, now);
                if (!was_member) {
                    r.changed = 1;
                }
                if (r.has_upstream == 1 && port != r.upstream_port) {
                    bit<48> up;
                    upstream_last_join.read(up, r.gidx);
                    if (!group_fresh || (refresh != 0 && now - up >= refresh)) {
                        r.want_forward = 1;
                    }
                }
            } else {
                if ((bm & pbit) != 0) {
                    bm = bm & ~pbit;
                    r.changed = 1;
                    if (bm == 0 && r.has_upstream == 1 && port != r.upstream_port) {
                        r.want_forward = 1;
                    }
                }
            }
            member_bitmap.write(r.gidx, bm);
            r.members = bm;
        }
    }
}

/* Turns a record that must not go upstream into ALLOW_NEW_SOURCES({}),
 * which RFC 3376 defines as no change, and patches the IGMP checksum
 * incrementally (RFC 1624) so the rest of the report stays intact. */
control MuteRecord(inout igmpv3_record_t rec, inout bit<16> csum, in bit<1> keep) {
    apply {
        if (rec.isValid() && keep == 0 && rec.record_type != IGMPV3_ALLOW_NEW) {
            bit<16> old_word = rec.record_type ++ rec.aux_len;
            rec.record_type = IGMPV3_ALLOW_NEW;
            bit<16> new_word = rec.record_type ++ rec.aux_len;
            bit<32> sum = (bit<32>)(~csum) + (bit<32>)(~old_word) + (bit<32>)new_word;
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            csum = ~sum[15:0];
        }
    }
}

/* Join / leave counters per port and per group for one record. */
control CountRecord(inout metadata_t meta, in bit<2> kind, in record_result_t r) {
    apply {
        if (kind == REC_JOIN) {
            port_joins.count((bit<32>)meta.in_port);
            if (r.hit == 1) { group_joins.count(r.gidx); }
        } else if (kind == REC_LEAVE) {
            port_leaves.count((bit<32>)meta.in_port);
            if (r.hit == 1) { group_leaves.count(r.gidx); }
        }
    }
}

/* Keeps the first membership change of the packet for the digest
 * (v1model sends at most one digest per packet). */
control DigestRecord(inout metadata_t meta, in bit<32> group, in record_result_t r) {
    apply {
        if (r.changed == 1 && meta.digest_pending == 0) {
            meta.digest_pending = 1;
            meta.digest.group = group;
            meta.digest.port = (bit<16>)meta.in_port;
            meta.digest.event = EVENT_LEAVE;
            if (r.is_join == 1) {
                meta.digest.event = EVENT_JOIN;
            }
            meta.digest.members = r.members;
            meta.digest.timestamp = meta.now;
        }
    }
}

/* After the four records were applied: picks where the report goes
 * upstream, records the join time, rewrites the records that stay here,
 * counts, and queues the first membership change as a digest. */
control IgmpProxy(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm,
                  in record_result_t r0, in record_result_t r1,
                  in record_result_t r2, in record_result_t r3,
                  in bit<32> g0, in bit<32> g1, in bit<32> g2, in bit<32> g3,
                  in bit<2> k0, in bit<2> k1, in bit<2> k2, in bit<2> k3) {
    MuteRecord() mute0;
    MuteRecord() mute1;
    MuteRecord() mute2;
    MuteRecord() mute3;
    CountRecord() count0;
    CountRecord() count1;
    CountRecord() count2;
    CountRecord() count3;
    DigestRecord() digest0;
    DigestRecord() digest1;
    DigestRecord() digest2;
    DigestRecord() digest3;

    apply {
        /* The report goes out of the upstream port of the first record
         * that must be proxied; records whose upstream port differs stay
         * here this time (Linux reports a join or leave in a report of its
         * own, so this only delays query answers, see docs/p4-program.md). */
        bit<1> have = 0;
        bit<9> out_port = 0;
        if (r0.want_forward == 1) {
            have = 1;
            out_port = r0.upstream_port;
        } else if (r1.want_forward == 1) {
            have = 1;
            out_port = r1.upstream_port;
        } else if (r2.want_forward == 1) {
            have = 1;
            out_port = r2.upstream_port;
        } else if (r3.want_forward == 1) {
            have = 1;
            out_port = r3.upstream_port;
        }
        bit<1> f0 = 0;
        bit<1> f1 = 0;
        bit<1> f2 = 0;
        bit<1> f3 = 0;
        if (r0.want_forward == 1 && r0.upstream_port == out_port) { f0 = 1; }
        if (r1.want_forward == 1 && r1.upstream_port == out_port) { f1 = 1; }
        if (r2.want_forward == 1 && r2.upstream_port == out_port) { f2 = 1; }
        if (r3.want_forward == 1 && r3.upstream_port == out_port) { f3 = 1; }
        if (f0 == 1 && r0.is_join == 1) { upstream_last_join.write(r0.gidx, meta.now); }
        if (f1 == 1 && r1.is_join == 1) { upstream_last_join.write(r1.gidx, meta.now); }
        if (f2 == 1 && r2.is_join == 1) { upstream_last_join.write(r2.gidx, meta.now); }
        if (f3 == 1 && r3.is_join == 1) { upstream_last_join.write(r3.gidx, meta.now); }

        if (hdr.igmp.type == IGMP_V3_REPORT) {
            mute0.apply(hdr.rec0, hdr.igmp.checksum, f0);
            mute1.apply(hdr.rec1, hdr.igmp.checksum, f1);
            mute2.apply(hdr.rec2, hdr.igmp.checksum, f2);
            mute3.apply(hdr.rec3, hdr.igmp.checksum, f3);
        }

        count0.apply(meta, k0, r0);
        count1.apply(meta, k1, r1);
        count2.apply(meta, k2, r2);
        count3.apply(meta, k3, r3);
        digest0.apply(meta, g0, r0);
        digest1.apply(meta, g1, r1);
        digest2.apply(meta, g2, r2);
        digest3.apply(meta, g3, r3);

        if (have == 1) {
            sm.egress_spec = out_port;
        } else {
            meta.drop = 1;
            meta.drop_reason = DROP_IGMP_CONSUMED;
        }
    }
}

#endif
