// Writes the queueing metadata egress sees into the frame:
// ethernet.srcAddr = deq_timedelta (us), ethernet.etherType = enq_qdepth.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control V(inout headers hdr, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 2; }
}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply {
        hdr.ethernet.srcAddr = (bit<48>)sm.deq_timedelta;
        hdr.ethernet.etherType = (bit<16>)sm.enq_qdepth;
    }
}
control C(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
