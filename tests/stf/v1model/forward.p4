// IPv4 forwarding: LPM table, TTL decrement, checksum verify/update,
// default drop (egress_spec 511) and mark_to_drop on TTL expiry.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}
struct headers_t { ethernet_t eth; ipv4_t ipv4; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.etype) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 { pkt.extract(h.ipv4); transition accept; }
}

control VC(inout headers_t h, inout meta_t m) {
    apply {
        verify_checksum(h.ipv4.isValid(),
            { h.ipv4.version, h.ipv4.ihl, h.ipv4.tos, h.ipv4.len, h.ipv4.id, h.ipv4.flags,
              h.ipv4.frag, h.ipv4.ttl, h.ipv4.proto, h.ipv4.src, h.ipv4.dst },
            h.ipv4.csum, HashAlgorithm.csum16);
    }
}

control Ing(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<48> dmac, bit<9> port) {
        h.eth.src = h.eth.dst;
        h.eth.dst = dmac;
        sm.egress_spec = port;
        h.ipv4.ttl = h.ipv4.ttl - 1;
    }
    table route {
        key = { h.ipv4.dst: lpm; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply {
        if (sm.checksum_error == 1) {
            mark_to_drop(sm);
        } else if (h.ipv4.isValid()) {
            if (h.ipv4.ttl > 1) {
                route.apply();
            } else {
                sm.egress_spec = 511;
            }
        }
    }
}

control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum(h.ipv4.isValid(),
            { h.ipv4.version, h.ipv4.ihl, h.ipv4.tos, h.ipv4.len, h.ipv4.id, h.ipv4.flags,
              h.ipv4.frag, h.ipv4.ttl, h.ipv4.proto, h.ipv4.src, h.ipv4.dst },
            h.ipv4.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); pkt.emit(h.ipv4); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
