// Traffic-manager paths: unicast, multicast with egress_rid, ingress and
// egress clones with a preserved field list, resubmit and recirculate, and
// the instance_type each copy carries (as BMv2 does, a resubmitted or
// recirculated packet that is then unicast shows instance_type 0 in egress).  Egress writes what it saw into the
// packet so the STF file can check it byte by byte.
#include <core.p4>
#include <v1model.p4>

header tm_t {
    bit<8>  op;        // which path to take
    bit<8>  ii;        // instance_type seen in ingress
    bit<8>  itype;     // instance_type seen in egress
    bit<16> rid;       // egress_rid seen in egress
    bit<8>  port;      // egress_port seen in egress
    bit<8>  keep;      // meta.keep (preserved in field list 1)
    bit<8>  lost;      // meta.lost (never preserved)
    bit<8>  len;       // packet_length seen in egress (low byte)
}
struct headers_t { tm_t tm; }
struct meta_t {
    @field_list(1) bit<8> keep;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.tm); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }

control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.tm.ii = (bit<8>) sm.instance_type;
        if (sm.instance_type == 6) {          // resubmitted
            sm.egress_spec = 3;
            return;
        }
        if (sm.instance_type == 4) {          // recirculated
            sm.egress_spec = 4;
            return;
        }
        m.lost = 0x55;
        if (h.tm.op == 1) {
            sm.egress_spec = 2;
        } else if (h.tm.op == 2) {
            sm.mcast_grp = 1;
        } else if (h.tm.op == 3) {
            m.keep = 0x77;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            sm.egress_spec = 2;
        } else if (h.tm.op == 4) {
            m.keep = 0x66;
            resubmit_preserving_field_list(1);
        } else if (h.tm.op == 5) {
            sm.egress_spec = 2;
        } else if (h.tm.op == 6) {
            sm.egress_spec = 2;
        } else {
            mark_to_drop(sm);
        }
    }
}

control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.tm.itype = (bit<8>) sm.instance_type;
        h.tm.rid = sm.egress_rid;
        h.tm.port = (bit<8>) sm.egress_port;
        h.tm.keep = m.keep;
        h.tm.lost = m.lost;
        h.tm.len = (bit<8>) sm.packet_length;
        if (h.tm.op == 5 && m.keep != 0x44) {
            m.keep = 0x44;
            recirculate_preserving_field_list(1);
        }
        if (h.tm.op == 6 && sm.instance_type == 0) {
            clone(CloneType.E2E, 6);
        }
    }
}

control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.tm); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
