// Checksums over the payload, crc16_custom, the random hash algorithm with
// max 1, assume, a direct meter, and the timestamp and queue metadata the
// switch fills in (tests/p4switch_interp drives the port model).
#include <core.p4>
#include <v1model.p4>

header m_t {
    bit<8>  op;
    bit<16> csum;      // covers a ++ payload
    bit<16> a;
    bit<16> h;
    bit<8>  color;
    bit<32> its;       // ingress_global_timestamp (low 32 bits)
    bit<32> ets;       // egress_global_timestamp (low 32 bits)
    bit<32> delta;     // deq_timedelta
    bit<32> qdepth;    // enq_qdepth ++ deq_qdepth (13 bits padding)
}
struct headers_t { m_t m; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.m); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) {
    apply {
        verify_checksum_with_payload(h.m.op == 2, { h.m.a }, h.m.csum, HashAlgorithm.csum16);
    }
}
control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    action colour() { dm.read(h.m.color); }
    table metered {
        key = { h.m.a: exact; }
        actions = { colour; NoAction; }
        meters = dm;
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        assume(h.m.isValid());
        if (h.m.op == 2 && sm.checksum_error == 1) {
            h.m.h = 0xbad;
        } else if (h.m.op == 3) {
            hash(h.m.h, HashAlgorithm.crc16_custom, 16w0, { h.m.a }, 32w65536);
        } else if (h.m.op == 4) {
            hash(h.m.h, HashAlgorithm.random, 16w9, { h.m.a }, 32w1);
        } else if (h.m.op == 5) {
            metered.apply();
        }
        h.m.its = (bit<32>) sm.ingress_global_timestamp;
    }
}
control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.m.ets = (bit<32>) sm.egress_global_timestamp;
        h.m.delta = sm.deq_timedelta;
        h.m.qdepth = 13w0 ++ sm.enq_qdepth;
    }
}
control CC(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum_with_payload(h.m.op == 1, { h.m.a }, h.m.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.m); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
