/* p4mcc switch program: egress.
 *
 * Multicast data replicas are pruned here, per port: a replica leaves only
 * toward a port that is not the packet's ingress port and has a member of
 * the group whose last report is within the membership timeout (timeout 0:
 * no ageing). Flood replicas skip the ingress port. Packets to the CPU port
 * get the packet_in header.
 *
 * Congestion stamp (docs/stamp.md): on a port whose rate the controller
 * wrote (port_rate), every departing packet counts toward the port's
 * departure rate; a p4mcc data packet of a session in stamp_sessions gets
 * the worse of its stamp and this port's: queue code (max) from the time
 * it waited in the queue (deq_timedelta), spare code (min) from the port's
 * rate minus its departure rate; and the port's max-min share (share.p4)
 * by minimum. Only per-port state and the departure
 * time (egress_global_timestamp) are used, so a target that runs egress
 * when the packet is queued, with the wait it will have, computes the same. */
#ifndef P4MCC_EGRESS_P4
#define P4MCC_EGRESS_P4

/* The queue code of a packet that waited `delay` us: 1 below 512 us,
 * q for [2^(q+7), 2^(q+8)) us, 15 from 2^22 us (hosts.wire.Stamp). */
control QueueCode(in bit<32> delay, out bit<4> q) {
    apply {
        if      (delay >= 32w1 << 22) { q = 15; }
        else if (delay >= 32w1 << 21) { q = 14; }
        else if (delay >= 32w1 << 20) { q = 13; }
        else if (delay >= 32w1 << 19) { q = 12; }
        else if (delay >= 32w1 << 18) { q = 11; }
        else if (delay >= 32w1 << 17) { q = 10; }
        else if (delay >= 32w1 << 16) { q = 9; }
        else if (delay >= 32w1 << 15) { q = 8; }
        else if (delay >= 32w1 << 14) { q = 7; }
        else if (delay >= 32w1 << 13) { q = 6; }
        else if (delay >= 32w1 << 12) { q = 5; }
        else if (delay >= 32w1 << 11) { q = 4; }
        else if (delay >= 32w1 << 10) { q = 3; }
        else if (delay >= 32w1 << 9)  { q = 2; }
        else                          { q = 1; }
    }
}

/* The spare code of `units` spare 40 kb/s units: floor(log2), at most 15;
 * 0 below 2 units (RFC 4782 3.1's rate scale). */
control SpareCode(in bit<32> units, out bit<4> s) {
    apply {
        if      (units >= 32w1 << 15) { s = 15; }
        else if (units >= 32w1 << 14) { s = 14; }
        else if (units >= 32w1 << 13) { s = 13; }
        else if (units >= 32w1 << 12) { s = 12; }
        else if (units >= 32w1 << 11) { s = 11; }
        else if (units >= 32w1 << 10) { s = 10; }
        else if (units >= 32w1 << 9)  { s = 9; }
        else if (units >= 32w1 << 8)  { s = 8; }
        else if (units >= 32w1 << 7)  { s = 7; }
        else if (units >= 32w1 << 6)  { s = 6; }
        else if (units >= 32w1 << 5)  { s = 5; }
        else if (units >= 32w1 << 4)  { s = 4; }
        else if (units >= 32w1 << 3)  { s = 3; }
        else if (units >= 32w1 << 2)  { s = 2; }
        else if (units >= 32w1 << 1)  { s = 1; }
        else                          { s = 0; }
    }
}

control MccEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {

    QueueCode() queue_code;
    SpareCode() spare_code;
    ShareEstimate() share_estimate;

    /* rate_units: the port's rate in 40 kb/s units; epoch_shift: the share
     * estimate's epoch, STAMP_WINDOW_US << epoch_shift, spanning the longest
     * round trip through the port (the controller writes one entry per port
     * of a switch that stamps for some session). */
    action set_port_rate(bit<32> rate_units, bit<8> epoch_shift) {
        meta.port_rated = 1;
        meta.port_rate_units = rate_units;
        meta.epoch_shift = epoch_shift;
        if (epoch_shift > SHARE_MAX_SHIFT) {
            meta.epoch_shift = SHARE_MAX_SHIFT;
        }
    }

    table port_rate {
        key = { sm.egress_port: exact @name("port"); }
        actions = { set_port_rate; @defaultonly NoAction; }
        default_action = NoAction();
        size = PORT_SPACE;
    }

    action stamp() {
        meta.stamp_on = 1;
    }

    /* Sessions whose data packets carry the stamp (assistance: stamp). */
    table stamp_sessions {
        key = { hdr.mcc.session_id: exact; }
        actions = { stamp; @defaultonly NoAction; }
        default_action = NoAction();
        size = MAX_SESSIONS;
    }

    apply {
        meta.port_rated = 0;
        meta.port_rate_units = 0;
        meta.stamp_on = 0;
        meta.epoch_shift = 0;
        meta.share = SHARE_NONE;
        meta.share_h = 0;
        meta.share_k = 0;
        bool prune = false;
        if (meta.kind == KIND_MCAST_DATA) {
            if (sm.egress_port == meta.in_port || sm.egress_port >= MEMBER_PORT_LIMIT
                    || meta.gidx >= MAX_GROUPS) {
                prune = true;
            } else {
                bit<64> bm;
                member_bitmap.read(bm, meta.gidx);
                if ((bm & (64w1 << (bit<8>)sm.egress_port)) == 0) {   /* egress_port < 64 */
                    prune = true;
                } else if (meta.membership_timeout != 0) {
                    bit<48> ts;
                    member_ts.read(ts, meta.gidx * MEMBER_PORTS + (bit<32>)sm.egress_port);
                    if (meta.now - ts > meta.membership_timeout) {
                        prune = true;
                    }
                }
            }
            if (prune) {
                port_pruned.count((bit<32>)sm.egress_port);
                if (meta.gidx < MAX_GROUPS) {
                    group_pruned.count(meta.gidx);
                }
            } else {
                port_data_tx.count((bit<32>)sm.egress_port);
                group_data_tx.count(meta.gidx);
            }
        } else if (meta.kind == KIND_FLOOD) {
            if (sm.egress_port == meta.in_port) {
                prune = true;
            }
        }

        if (prune) {
            mark_to_drop(sm);
        } else {
            if (sm.egress_port == CPU_PORT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = meta.in_port;
                hdr.packet_in.reason = meta.punt_reason;
                hdr.packet_in._pad = 0;
            } else {
                port_rate.apply();
                if (hdr.mcc.isValid() && (hdr.mcc.msg_type & 0x0f) == 1) {
                    stamp_sessions.apply();
                }
            }
            port_tx.count((bit<32>)sm.egress_port);
        }

        /* The port's departure rate over aligned windows of STAMP_WINDOW_US. */
        bit<32> last = 0;
        if (!prune && meta.port_rated == 1) {
            bit<32> idx = (bit<32>)sm.egress_port;
            bit<48> t = sm.egress_global_timestamp;
            bit<48> start;
            bit<32> cur;
            stamp_win_start.read(start, idx);
            stamp_win_bytes.read(cur, idx);
            stamp_last_bytes.read(last, idx);
            bit<48> age = t - start;
            if (age >= STAMP_WINDOW_US) {
                if (age >= STAMP_WINDOW_US + STAMP_WINDOW_US) {
                    last = 0;           /* a whole window went by idle */
                    start = t;
                } else {
                    last = cur;
                    start = start + STAMP_WINDOW_US;
                }
                cur = 0;
                stamp_win_start.write(idx, start);
                stamp_last_bytes.write(idx, last);
            }
            stamp_win_bytes.write(idx, cur + sm.packet_length);
            if (sm.egress_port < SHARE_PORT_LIMIT) {
                share_estimate.apply(hdr, meta, sm);
            }
        }

        if (!prune && meta.stamp_on == 1) {
            bit<4> q;
            queue_code.apply((bit<32>)sm.deq_timedelta, q);
            bit<4> s = STAMP_NO_LIMIT;
            if (meta.port_rated == 1) {
                bit<32> used = last >> STAMP_UNIT_SHIFT;
                bit<32> spare = 0;
                if (meta.port_rate_units > used) {
                    spare = meta.port_rate_units - used;
                }
                spare_code.apply(spare, s);
            }
            bit<8> old = hdr.mcc.stamp;
            if (old[7:4] > q) {
                q = old[7:4];
            }
            if (old[7:4] != 0 && old[3:0] < s) {
                s = old[3:0];
            }
            hdr.mcc.stamp = q ++ s;
            /* The share: the smallest estimate along the path; a port without
             * one (meta.share 0) leaves what upstream wrote. */
            bit<8> old_share = hdr.mcc.share;
            if (meta.share != SHARE_NONE && (old_share == SHARE_NONE || meta.share < old_share)) {
                hdr.mcc.share = meta.share;
            }
            /* UDP checksum: incremental update of the 16-bit words version ++
             * stamp and share ++ rsvd (RFC 1624 eqn. 3); 0 (none sent) stays 0. */
            if (hdr.udp.checksum != 0) {
                bit<32> sum = (bit<32>)(~hdr.udp.checksum)
                              + (bit<32>)(~(hdr.mcc.version ++ old))
                              + (bit<32>)(hdr.mcc.version ++ hdr.mcc.stamp)
                              + (bit<32>)(~(old_share ++ hdr.mcc.rsvd))
                              + (bit<32>)(hdr.mcc.share ++ hdr.mcc.rsvd);
                sum = (sum & 0xffff) + (sum >> 16);
                sum = (sum & 0xffff) + (sum >> 16);
                bit<16> csum = ~sum[15:0];
                if (csum == 0) {
                    csum = 0xffff;
                }
                hdr.udp.checksum = csum;
            }
            port_stamped.count((bit<32>)sm.egress_port);
        }
    }
}

#endif
