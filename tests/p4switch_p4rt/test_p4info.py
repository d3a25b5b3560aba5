"""P4Info generation: names, ids and contents as p4c produces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

from finsy.proto import p4i
from p4mcc.p4switch.frontend import compile_file, compile_text
from p4mcc.p4switch.p4rt.ids import IdAllocator, Prefix, jenkins_one_at_a_time
from p4mcc.p4switch.p4rt.p4info import build_p4info

ROOT = Path(__file__).resolve().parents[2]
L2 = Path(__file__).parent / "programs" / "l2.p4"

# The p4lang tutorials' basic.p4 (its ingress, trimmed), whose P4Info p4c publishes.
BASIC = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
  bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
  bit<32> srcAddr; bit<32> dstAddr; }
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.ethernet); packet.extract(hdr.ipv4); transition accept; }
}
control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply { if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); } }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
"""


def by_name(items):
    return {x.preamble.name: x for x in items}


def test_jenkins_hash_reference_values():
    # One-at-a-time hash of "a" and of the empty string (published test vectors).
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442
    assert jenkins_one_at_a_time(b"") == 0


def test_ids_equal_p4c_for_the_tutorial_program():
    info = build_p4info(compile_text(BASIC))
    tables, actions = by_name(info.tables), by_name(info.actions)
    # Ids from p4c's basic.p4.p4info.txtpb in p4lang/tutorials.
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 37375156
    assert actions["MyIngress.ipv4_forward"].preamble.id == 28792405
    assert actions["MyIngress.drop"].preamble.id == 25652968
    assert actions["NoAction"].preamble.id == 21257015
    t = tables["MyIngress.ipv4_lpm"]
    assert t.preamble.alias == "ipv4_lpm"
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4i.MatchField.LPM)]
    assert [a.id for a in t.action_refs] == [28792405, 25652968, 21257015]
    assert t.size == 1024
    fwd = actions["MyIngress.ipv4_forward"]
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dstAddr", 48), (2, "port", 9)]


def test_collisions_probe_the_next_id_and_fixed_ids_win():
    alloc = IdAllocator()
    fixed = alloc.reserve(Prefix.TABLE, jenkins_one_at_a_time(b"x.t") & 0xFFFFFF)
    hashed = alloc.assign(Prefix.TABLE, "x.t")
    assert hashed == fixed + 1
    with pytest.raises(ValueError):
        alloc.reserve(Prefix.ACTION, fixed)  # wrong prefix in a full id


ANNOTATED = BASIC.replace(
    "    table ipv4_lpm {", '    @name("routes") @id(7) table ipv4_lpm {').replace(
    "    action drop() {", '    @name(".global_drop") action drop() {').replace(
    "        key = { hdr.ipv4.dstAddr: lpm; }", '        key = { hdr.ipv4.dstAddr: lpm @name("dst"); }')


def test_name_and_id_annotations():
    info = build_p4info(compile_text(ANNOTATED))
    tables, actions = by_name(info.tables), by_name(info.actions)
    t = tables["MyIngress.routes"]
    assert t.preamble.id == (0x02 << 24) | 7
    assert t.match_fields[0].name == "dst"
    assert "global_drop" in actions
    assert actions["global_drop"].preamble.id == (0x01 << 24) | (jenkins_one_at_a_time(b"global_drop") & 0xFFFFFF)


def test_l2_program_objects():
    info = build_p4info(compile_file(str(L2)))
    tables = by_name(info.tables)
    fwd = tables["MyIngress.fwd"]
    (dc,) = info.direct_counters
    assert dc.preamble.name == "MyIngress.fwd_hits" and dc.direct_table_id == fwd.preamble.id
    assert list(fwd.direct_resource_ids) == [dc.preamble.id]
    assert fwd.size == 64
    to_cpu = by_name(info.actions)["MyIngress.to_cpu"].preamble.id
    (ref,) = [r for r in fwd.action_refs if r.id == to_cpu]
    assert ref.scope == p4i.ActionRef.DEFAULT_ONLY and list(ref.annotations) == ["@defaultonly"]
    fixed = tables["MyIngress.fixed"]
    assert fixed.is_const_table and fixed.has_initial_entries
    assert fixed.const_default_action_id == by_name(info.actions)["NoAction"].preamble.id
    (c,) = info.counters
    assert (c.preamble.name, c.spec.unit, c.size) == ("MyIngress.port_pkts", p4i.CounterSpec.BOTH, 512)
    (m,) = info.meters
    assert (m.spec.unit, m.size) == (p4i.MeterSpec.BYTES, 4)
    (r,) = info.registers
    assert r.type_spec.bitstring.bit.bitwidth == 16 and r.size == 8
    cpm = by_name(info.controller_packet_metadata)
    assert [(x.id, x.name, x.bitwidth) for x in cpm["packet_out"].metadata] == [(1, "egress_port", 9), (2, "_pad", 7)]
    (d,) = info.digests
    assert d.preamble.name == "learn_t" and d.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(x.name, x.type_spec.bitstring.bit.bitwidth) for x in members] == [("mac", 48), ("port", 9)]
    for obj in list(info.tables) + list(info.actions) + list(info.counters) + list(info.registers):
        assert obj.preamble.id >> 24 == {
            "tables": 0x02, "actions": 0x01, "counters": 0x12, "registers": 0x16}[
            "tables" if obj in info.tables else "actions" if obj in info.actions
            else "counters" if obj in info.counters else "registers"]


def test_check_command_writes_p4info(tmp_path):
    out = tmp_path / "l2.p4info.txtpb"
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "check", str(L2), "--p4info", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    info = text_format.Parse(out.read_text(), p4i.P4Info())
    assert info == build_p4info(compile_file(str(L2)))


NESTED = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; } }
control V(inout headers hdr, inout metadata m) { apply { } }
control Sub(inout headers hdr, inout standard_metadata_t sm) {
    action set(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.h.a: exact; } actions = { set; } }
    apply { t.apply(); }
}
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sub.apply(hdr, sm); }
}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_nested_control_instances_and_implicit_noaction_default():
    info = build_p4info(compile_text(NESTED))
    (t,) = info.tables
    assert t.preamble.name == "I.sub.t" and t.preamble.alias == "t"
    actions = by_name(info.actions)
    assert set(actions) == {"I.sub.set", "NoAction"}
    refs = {r.id: r for r in t.action_refs}
    noaction = refs[actions["NoAction"].preamble.id]
    assert noaction.scope == p4i.ActionRef.DEFAULT_ONLY and list(noaction.annotations) == ["@defaultonly"]
    assert refs[actions["I.sub.set"].preamble.id].scope == p4i.ActionRef.TABLE_AND_DEFAULT
