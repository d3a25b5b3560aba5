// A parser value set: frames whose EtherType is in the set reach port 2, others are dropped.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { bit<1> known; }
parser P(packet_in pkt, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) types;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { types: known; default: accept; }
    }
    state known { m.known = 1; transition accept; }
}
control V(inout headers hdr, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply { if (m.known == 1) { sm.egress_spec = 2; } else { mark_to_drop(sm); } }
}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
