"""Switches built from one program share its lowering but none of its state.

``p4switch.interp.shared`` lowers a program once and gives every switch
built from the same program object the same code objects and classes, with
its own functions, tables, registers, counters, value sets and packet
context.  A switch writing any of these must not change what another one
does, and each must behave as a switch that lowered the program itself.
"""

from __future__ import annotations

from pathlib import Path

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; bit<8> y; }
struct headers_t { a_t a; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) special;
    state start {
        pkt.extract(h.a);
        transition select(h.a.x) { special: mark; default: accept; }
    }
    state mark { meta.m = 1; transition accept; }
}
control VC(inout headers_t h, inout meta_t meta) { apply { } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(4) last;
    counter(8, CounterType.packets) seen;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t { key = { h.a.x: exact; } actions = { fwd; drop; } default_action = drop(); }
    apply {
        bit<8> prev;
        last.read(prev, 0);
        last.write(0, h.a.x);
        h.a.y = prev + meta.m;
        seen.count((bit<32>) sm.ingress_port);
        t.apply();
    }
}
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _program(tmp_path: Path):
    src = tmp_path / "shared.p4"
    src.write_text(PROGRAM)
    return compile_file(str(src))


def _send(sw: Switch, x: int, port: int = 1) -> list[tuple[int, bytes]]:
    return [(o.port, o.data) for o in sw.process(port, bytes([x, 0]))]


def test_switches_share_code_and_classes_not_functions_or_state(tmp_path: Path) -> None:
    prog = _program(tmp_path)
    s1, s2 = Switch(prog), Switch(prog)
    assert s1._ingress.__code__ is s2._ingress.__code__  # one lowering
    assert type(s1._new_H()) is type(s2._new_H())
    assert s1._ingress is not s2._ingress and s1._ingress.__globals__ is not s2._ingress.__globals__
    for attr in ("tables", "registers", "counters", "value_sets"):
        mine, theirs = getattr(s1, attr), getattr(s2, attr)
        assert mine.keys() == theirs.keys() and mine
        assert all(mine[k] is not theirs[k] for k in mine), attr
    assert s1._ctx is not s2._ctx
    # each node's generated code reaches its own tables and packet context
    assert s1._ingress.__globals__["_pk"] is s1._ctx and s2._ingress.__globals__["_pk"] is s2._ctx


def test_table_register_counter_and_value_set_writes_stay_in_their_switch(tmp_path: Path) -> None:
    prog = _program(tmp_path)
    s1, s2 = Switch(prog), Switch(prog)
    s1.table_add("t", [5], "fwd", [3])
    s1.value_set_write("special", [5])
    assert _send(s1, 5) == [(3, bytes([5, 1]))]  # s1's value set: meta.m = 1
    assert _send(s2, 5) == []  # no entry there: the default action drops
    assert s2.value_set_read("special") == []
    assert s1.register_read("last", 0) == 5 and s2.register_read("last", 0) == 5
    s1.register_write("last", 0, 9)
    assert s2.register_read("last", 0) == 5
    # the second packet on s2 reads s2's cell (5), never s1's (9)
    s2.table_add("t", [7], "fwd", [2])
    assert _send(s2, 7) == [(2, bytes([7, 5]))]
    assert s1.counter_read("seen", 1)[0] == 1 and s2.counter_read("seen", 1)[0] == 2
    _send(s1, 5, port=4)
    assert s1.counter_read("seen", 4)[0] == 1 and s2.counter_read("seen", 4)[0] == 0
    # a switch built after the others were written starts from nothing
    s3 = Switch(prog)
    assert s3.table_entries("t") == [] and s3.register_read("last", 0) == 0
    assert s3.counter_read("seen", 1) == (0, 0)


def test_shared_lowering_matches_own_lowering_packet_for_packet(tmp_path: Path) -> None:
    prog = _program(tmp_path)
    shared, own = Switch(prog), Switch(prog, fast=False)
    assert shared._ingress.__code__ is not own._ingress.__code__
    for sw in (shared, own):
        sw.table_add("t", [1], "fwd", [2])
        sw.table_add("t", [2], "fwd", [3])
        sw.value_set_write("special", [2])
    for x in (1, 2, 3, 2, 1, 1):
        assert _send(shared, x) == _send(own, x)
    assert shared.counter_read("seen", 1) == own.counter_read("seen", 1)
