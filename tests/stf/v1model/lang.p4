// Expression semantics the lowering must keep exactly: bit<W> wrap-around,
// int<W> two's complement, saturating arithmetic, shifts past the width,
// slices and slice assignment, concatenation, casts, short-circuit with
// side effects, copy-out on exit, header unions.
#include <core.p4>
#include <v1model.p4>

header in_t { bit<8> a; bit<8> b; int<8> s; bit<8> op; }
header out_t {
    bit<8> sum; bit<8> diff; bit<8> prod; bit<8> sat_add; bit<8> sat_sub;
    int<8> s_neg; int<8> s_sat; bit<8> shl; bit<8> shr_s; bit<16> cat;
    bit<8> slice; bit<8> sliced_set; bit<8> cast_s; bit<8> calls; bit<8> exit_out;
}
header u8_t { bit<8> v; }
header u16_t { bit<16> v; }
header_union u_t { u8_t short; u16_t long; }
struct headers_t { in_t i; out_t o; u_t u; }
struct meta_t { bit<8> calls; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.i);
        transition select(h.i.op) { 1: short; 2: long; default: accept; }
    }
    state short { pkt.extract(h.u.short); transition accept; }
    state long { pkt.extract(h.u.long); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }

bool bump(inout bit<8> c) { c = c + 1; return true; }

control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action leave(inout bit<8> x) { x = 0x5a; exit; }
    apply {
        sm.egress_spec = 1;
        h.o.setValid();
        h.o.sum = h.i.a + h.i.b;
        h.o.diff = h.i.a - h.i.b;
        h.o.prod = h.i.a * h.i.b;
        h.o.sat_add = h.i.a |+| h.i.b;
        h.o.sat_sub = h.i.a |-| h.i.b;
        h.o.s_neg = -h.i.s;
        h.o.s_sat = h.i.s |-| 8s100;
        h.o.shl = h.i.a << h.i.b;
        h.o.shr_s = (bit<8>) (h.i.s >> 2);
        h.o.cat = h.i.a ++ h.i.b;
        h.o.slice = (bit<8>) h.i.a[7:4];
        h.o.sliced_set = 0xff;
        h.o.sliced_set[3:1] = 3w0;
        h.o.cast_s = (bit<8>) (int<8>) (bit<8>) h.i.s;
        m.calls = 0;
        if (false && bump(m.calls)) { m.calls = 0x80; }
        if (true || bump(m.calls)) { m.calls = m.calls + 0x10; }
        if (bump(m.calls) && bump(m.calls)) { m.calls = m.calls + 0x20; }
        h.o.calls = m.calls;
        if (h.u.short.isValid()) { h.u.long.setValid(); h.u.long.v = 0xbeef; }
        if (h.i.op == 3) { leave(h.o.exit_out); }
        h.o.exit_out = 0x11;
    }
}

control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); pkt.emit(h.u); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
