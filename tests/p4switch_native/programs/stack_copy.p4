// Two header stacks of one type, one assigned to the other, with a third of
// another size beside them: the emitted C must give equal stack types one C
// type (a struct assignment needs it), and keep the other size apart.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> v; }
struct headers { tag_t[2] seen; tag_t[2] copy; tag_t[3] spare; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.seen.next);
        pkt.extract(h.seen.next);
        h.copy = h.seen;
        transition accept;
    }
}
control V(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.copy[0].v = h.copy[0].v + 1;  // the copy is its own storage
        h.spare[2].setValid();
        h.spare[2].v = h.seen[1].v;
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers h) { apply { pkt.emit(h.seen); pkt.emit(h.copy); pkt.emit(h.spare); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
