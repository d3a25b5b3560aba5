/* p4mcc switch program: egress.
 *
 * Multicast data replicas are pruned here, per port: a replica leaves only
 * toward a port that is not the packet's ingress port and has a member of
 * the group whose last report is within the membership timeout (timeout 0:
 * no ageing). Flood replicas skip the ingress port. Packets to the CPU port
 * get the packet_in header. */
#ifndef P4MCC_EGRESS_P4
#define P4MCC_EGRESS_P4

control MccEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    apply {
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
            }
            port_tx.count((bit<32>)sm.egress_port);
        }
    }
}

#endif
