// Arithmetic at the machine word's edges and beyond it: 48, 64 and 128-bit
// fields, signed 64-bit values, shifts by run-time amounts, slices across
// the 64-bit boundary, concatenation into 128 bits, saturation, a register
// of 128-bit cells. Every result is emitted, so both pipelines' output
// frames must agree bit for bit.
#include <core.p4>
#include <v1model.p4>

header in_t { bit<64> x; bit<64> y; bit<128> z; bit<48> t; int<64> s; bit<8> n; bit<8> op; }
header out_t {
    bit<64> add; bit<64> sub; bit<64> mul; bit<64> shl; bit<64> shr; bit<64> sat;
    bit<128> cat; bit<128> zadd; bit<128> zshl; bit<64> zslice; bit<48> tdiff; int<64> sshr;
    bit<64> ssat; bit<8> cmp; bit<128> reg; bit<64> div; bit<32> mid;
}
struct headers { in_t i; out_t o; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control V(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<128>>(4) acc;
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.add = h.i.x + h.i.y;
        h.o.sub = h.i.x - h.i.y;
        h.o.mul = h.i.x * h.i.y;
        h.o.shl = h.i.x << h.i.n;
        h.o.shr = h.i.x >> h.i.n;
        h.o.sat = h.i.x |+| h.i.y;
        h.o.cat = h.i.x ++ h.i.y;
        h.o.zadd = h.i.z + (bit<128>)h.i.x;
        h.o.zshl = h.i.z << h.i.n;
        h.o.zslice = h.i.z[95:32];
        h.o.tdiff = h.i.t - (bit<48>)h.i.y;
        h.o.sshr = h.i.s >> h.i.n;
        h.o.ssat = (bit<64>)(h.i.s |-| (int<64>)h.i.y);
        h.o.cmp = 0;
        if (h.i.s < 0) { h.o.cmp = h.o.cmp | 1; }
        if (h.i.z > (bit<128>)h.i.x) { h.o.cmp = h.o.cmp | 2; }
        if ((int<64>)h.i.x < h.i.s) { h.o.cmp = h.o.cmp | 4; }
        bit<2> slot = h.i.op[1:0];
        bit<128> cell;
        acc.read(cell, (bit<32>)slot);
        cell = cell + h.i.z;
        cell[70:60] = h.i.x[10:0];
        acc.write((bit<32>)slot, cell);
        h.o.reg = cell;
        h.o.div = h.i.y == 0 ? 64w0 : h.i.x / h.i.y;
        h.o.mid = h.i.z[79:48];
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers h) { apply { pkt.emit(h.o); pkt.emit(h.i); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
