/* A v1model program that touches most of the language: the front-end tests
 * parse it, check it, look at its typed IR and mutate it for the fuzz test. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_VLAN 0x8100
#define MAX_LABELS 3

const bit<16> TYPE_MPLS = 16w0x8847;
const int SHIFT = 2 + 1;
typedef bit<48> mac_t;
type bit<32> ip4_t;

enum bit<8> Proto { TCP = 6, UDP = 17 }
enum Color { RED, GREEN }
error { BadVersion, TooManyLabels }

header ethernet_t { mac_t dst; mac_t src; bit<16> etherType; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> etherType; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; Proto protocol; bit<16> hdrChecksum; bit<32> srcAddr; bit<32> dstAddr;
}
header ipv4_opts_t { varbit<320> options; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
header tcp_t { bit<16> sport; bit<16> dport; bit<32> seq; }
header_union l4_t { udp_t udp; tcp_t tcp; }

struct headers_t {
    ethernet_t ethernet;
    vlan_t vlan;
    mpls_t[MAX_LABELS] mpls;
    ipv4_t ipv4;
    ipv4_opts_t opts;
    l4_t l4;
}

struct digest_t { mac_t src; bit<9> port; }

struct meta_t {
    @field_list(1) bit<32> hash;
    bit<8> counter;
    bool is_ip;
    Color color;
    int<8> delta;
    bit<16> l4_port;
}

parser VlanParser(packet_in pkt, inout headers_t hdr, out bit<16> next) {
    state start {
        pkt.extract(hdr.vlan);
        next = hdr.vlan.etherType;
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) extra_types;
    VlanParser() vlan_parser;
    bit<16> et;

    state start {
        pkt.extract(hdr.ethernet);
        et = hdr.ethernet.etherType;
        transition select(et) {
            ETHERTYPE_VLAN: parse_vlan;
            TYPE_MPLS: parse_mpls;
            ETHERTYPE_IPV4: parse_ipv4;
            extra_types: accept;
            default: accept;
        }
    }
    state parse_vlan {
        vlan_parser.apply(pkt, hdr, et);
        transition select(et) {
            0x0800 &&& 0xffff: parse_ipv4;
            0x0000 .. 0x05ff: accept;
            _: accept;
        }
    }
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        verify(hdr.mpls.lastIndex < MAX_LABELS - 1 || hdr.mpls.last.bos == 1, error.TooManyLabels);
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: parse_ipv4;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.BadVersion);
        pkt.extract(hdr.opts, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        meta.is_ip = true;
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (Proto.UDP, 0): parse_udp;
            (Proto.TCP, 0): parse_tcp;
            (_, _): accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.l4.udp);
        meta.l4_port = pkt.lookahead<bit<16>>();
        transition accept;
    }
    state parse_tcp {
        pkt.advance(0);
        pkt.extract(hdr.l4.tcp);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

bit<8> sat_inc(in bit<8> x) {
    return x |+| 1;
}

control Count(inout meta_t meta)(bit<8> step) {
    apply { meta.counter = meta.counter + step; }
}

control Bump(inout meta_t meta) {
    apply { meta.counter = meta.counter + 1; }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>, bit<10>>(1024) flows;
    counter<bit<9>>(512, CounterType.packets_and_bytes) port_pkts;
    direct_counter(CounterType.packets) fwd_hits;
    meter<bit<8>>(16, MeterType.bytes) policer;
    Count(8w2) count2;

    action drop() { mark_to_drop(sm); }
    action set_port(bit<9> port) { sm.egress_spec = port; fwd_hits.count(); }
    action set_mcast(bit<16> grp) { sm.mcast_grp = grp; }
    @name("ingress.rewrite") action rewrite(in bit<8> ttl_dec, mac_t dst) {
        hdr.ethernet.dst = dst;
        hdr.ipv4.ttl = hdr.ipv4.ttl - ttl_dec;
    }

    table fwd {
        key = {
            hdr.ipv4.dstAddr: lpm @name("dst");
            hdr.ipv4.isValid(): exact;
        }
        actions = { set_port; set_mcast; drop; @defaultonly NoAction; }
        default_action = drop();
        size = 1024;
        counters = fwd_hits;
    }

    table acl {
        key = {
            hdr.ipv4.srcAddr: ternary;
            meta.l4_port: range;
            hdr.ipv4.protocol: exact;
            (bit<8>)meta.delta: optional @name("delta");
        }
        actions = { drop; NoAction; rewrite(1); }
        const entries = {
            (0x0a000000 &&& 0xff000000, 0 .. 1023, Proto.TCP, _): drop();
            (_, 53, Proto.UDP, 1): rewrite(1, 48w0x020000000001);
            (_, _, Proto.UDP, _): NoAction() @priority(7);
        }
        const default_action = NoAction();
    }

    table prio {
        key = { hdr.ipv4.diffserv: ternary; }
        actions = { drop; NoAction; }
        entries = {
            priority = 10: 0x10 &&& 0xf0 : drop();
            0x20 &&& 0xf0 : NoAction();
            priority = 50: _ : NoAction();
        }
    }

    apply {
        bit<32> old;
        bit<10> idx = hdr.ipv4.srcAddr[9:0];
        int<8> s = -8s3;
        meta.delta = s >> 1;
        flows.read(old, idx);
        flows.write(idx, old + 1);
        port_pkts.count(sm.ingress_port);
        policer.execute_meter(8w3, meta.counter);
        hash(meta.hash, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol }, 32w65536);
        if (!hdr.ipv4.isValid()) {
            drop();
            exit;
        }
        switch (fwd.apply().action_run) {
            set_port: { meta.counter = sat_inc(meta.counter); }
            set_mcast:
            drop: { return; }
            default: {}
        }
        if (acl.apply().hit) {
            meta.counter = meta.counter |-| 3;
        } else if (prio.apply().miss) {
            count2.apply(meta);
        }
        Bump.apply(meta);
        meta.counter = meta.counter << SHIFT;
        meta.counter = (bit<8>)(hdr.ipv4.ttl ++ 4w0)[11:4];
        hdr.ipv4.ttl = hdr.ipv4.ttl > 1 ? hdr.ipv4.ttl - 1 : 8w0;
        hdr.mpls[0].ttl = hdr.ipv4.ttl;
        hdr.mpls.push_front(1);
        hdr.mpls.pop_front(1);
        hdr.l4.udp.setInvalid();
        meta.color = meta.is_ip ? Color.GREEN : Color.RED;
        meta.counter[3:0] = 4w0xf;
        meta.counter += 1;
        digest<digest_t>(1, { hdr.ethernet.src, sm.ingress_port });
        if (hdr.ipv4.ttl == 0) {
            clone_preserving_field_list(CloneType.I2E, 32w5, 1);
        }
        log_msg("ttl={}", { hdr.ipv4.ttl });
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_rid != 0) {
            truncate(64);
        }
        if (sm.instance_type == 1) {
            recirculate_preserving_field_list(0);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.opts);
        pkt.emit(hdr.l4);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
