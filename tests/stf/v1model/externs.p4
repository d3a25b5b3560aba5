// v1model externs: register, counter, direct_counter, meter, direct_meter,
// hash (crc16, crc32, csum16, xor16, identity), random, digest, truncate,
// log_msg, assert, verify and parser errors, lookahead, header stacks,
// ternary/optional tables with priorities, range const entries, switch on action_run, exit.
#include <core.p4>
#include <v1model.p4>

error { BadOp }

header res_t { bit<8> code; }
header ext_t { bit<8> op; bit<32> a; bit<32> b; bit<16> h16; bit<32> h32; }
header item_t { bit<8> v; }
struct headers_t { res_t res; ext_t ext; item_t[3] items; }
struct meta_t { bit<8> color; }
struct learn_t { bit<32> a; bit<8> op; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.ext);
        verify(h.ext.op != 0xEE, error.BadOp);
        transition select(h.ext.op) { 8: items; default: accept; }
    }
    state items {
        // lookahead: stop at a zero byte; at most three items (StackOutOfBounds after)
        transition select(pkt.lookahead<bit<8>>()) { 0: accept; default: one; }
    }
    state one { pkt.extract(h.items.next); transition items; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }

control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(4) r;
    counter(4, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets) dc;
    meter(1, MeterType.packets) mtr;

    action hit_dc() { dc.count(); h.ext.h16 = 0xd0; }
    table counted {
        key = { h.ext.a: exact; }
        actions = { hit_dc; NoAction; }
        counters = dc;
        default_action = NoAction();
    }
    action set16(bit<16> v) { h.ext.h16 = v; }
    action quit() { h.ext.h16 = 0xe0; exit; }
    table classify {
        key = { h.ext.a: ternary; h.ext.op: optional; }
        actions = { set16; quit; NoAction; }
        default_action = set16(0xffff);
    }
    action set32(bit<32> v) { h.ext.h32 = v; }
    table rng {
        key = { h.ext.b: range; }
        actions = { set32; }
        const entries = {
            0 .. 9  : set32(1);   // first entry wins where both match
            5 .. 20 : set32(2);
        }
        default_action = set32(0);
    }

    apply {
        h.res.setValid();
        if (sm.parser_error == error.PacketTooShort) {
            h.res.code = 1;
        } else if (sm.parser_error == error.BadOp) {
            h.res.code = 2;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            h.res.code = 3;
        } else {
            h.res.code = 0;
        }
        sm.egress_spec = 1;
        if (!h.ext.isValid()) { return; }
        bit<32> x;
        if (h.ext.op == 1) {
            r.read(x, (bit<32>) h.ext.a[1:0]);
            x = x + h.ext.b;
            r.write((bit<32>) h.ext.a[1:0], x);
            h.ext.h32 = x;
        } else if (h.ext.op == 2) {
            hash(h.ext.h16, HashAlgorithm.crc16, 16w0, { h.ext.a, h.ext.b }, 32w65536);
            hash(h.ext.h32, HashAlgorithm.crc32, 32w0, { h.ext.a, h.ext.b }, 33w0x100000000);
        } else if (h.ext.op == 3) {
            hash(h.ext.h16, HashAlgorithm.csum16, 16w0, { h.ext.a, h.ext.b }, 32w65536);
            hash(h.ext.h32, HashAlgorithm.identity, 32w10, { h.ext.a }, 32w1000);
            hash(h.ext.b, HashAlgorithm.xor16, 32w0, { h.ext.a, h.ext.b }, 32w65536);
        } else if (h.ext.op == 4) {
            c.count((bit<32>) h.ext.a[1:0]);
            counted.apply();
        } else if (h.ext.op == 5) {
            mtr.execute_meter(32w0, m.color);
            h.ext.h16 = (bit<16>) m.color;
        } else if (h.ext.op == 6) {
            random(h.ext.h16, 16w7, 16w7);
            log_msg("op 6, a={}", { h.ext.a });
            assert(h.ext.h16 == 7);
            truncate(4);
        } else if (h.ext.op == 7) {
            digest<learn_t>(1, { h.ext.a, h.ext.op });
            switch (classify.apply().action_run) {
                set16: { h.ext.h32 = 1; }
                NoAction: { h.ext.h32 = 2; }
            }
            h.ext.h32 = h.ext.h32 + 0x100;
        } else if (h.ext.op == 9) {
            rng.apply();
        } else if (h.ext.op == 8) {
            h.ext.h16 = (bit<16>) h.items[0].v + (bit<16>) h.items[1].v;
            if (h.items[2].isValid()) { h.ext.h32 = 3; }
        }
    }
}

control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.res); pkt.emit(h.ext); pkt.emit(h.items); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
