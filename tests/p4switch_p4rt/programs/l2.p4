// Test program of the P4Runtime tests: L2 forwarding, multicast, CPU port,
// a digest, every extern kind a controller can address.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }

header ethernet_t { macAddr_t dstAddr; macAddr_t srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    ip4Addr_t srcAddr; ip4Addr_t dstAddr;
}
struct learn_t { macAddr_t mac; bit<9> port; }
struct metadata { bit<8> x; bit<2> color; }
struct headers { packet_out_t packet_out; packet_in_t packet_in; ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) { 64: parse_packet_out; default: parse_ethernet; }
    }
    state parse_packet_out { packet.extract(hdr.packet_out); transition parse_ethernet; }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { TYPE_IPV4: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) port_pkts;
    direct_counter(CounterType.packets_and_bytes) fwd_hits;
    meter(4, MeterType.bytes) police;
    register<bit<16>>(8) state;
    direct_meter<bit<2>>(MeterType.bytes) acl_meter;

    action drop() { mark_to_drop(standard_metadata); }
    action forward(egressSpec_t port) { standard_metadata.egress_spec = port; }
    action flood(bit<16> grp) { standard_metadata.mcast_grp = grp; }
    @defaultonly action to_cpu() { standard_metadata.egress_spec = 64; }
    action learn() { digest<learn_t>(1, {hdr.ethernet.srcAddr, standard_metadata.ingress_port}); }

    table fwd {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; flood; drop; @defaultonly to_cpu; }
        counters = fwd_hits;
        size = 64;
        default_action = drop();
    }
    action meter_acl() { acl_meter.read(meta.color); }
    table acl {
        key = { hdr.ipv4.srcAddr: ternary; hdr.ipv4.dstAddr: lpm; }
        actions = { drop; meter_acl; NoAction; }
        meters = acl_meter;
        default_action = NoAction();
    }
    table smac {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
    }
    table fixed {
        key = { hdr.ipv4.protocol: exact; }
        actions = { drop; NoAction; }
        const entries = { 17 : NoAction(); }
        const default_action = NoAction();
    }
    apply {
        port_pkts.count((bit<32>)standard_metadata.ingress_port);
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (hdr.ethernet.isValid()) {
            fwd.apply();
            if (hdr.ipv4.isValid()) {
                acl.apply();
                fixed.apply();
                bit<16> v;
                state.read(v, 0);
                state.write(0, v + 1);
            }
        }
        if (hdr.ethernet.isValid()) {
            smac.apply();
        }
        if (standard_metadata.egress_spec == 64) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.packet_in); packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
