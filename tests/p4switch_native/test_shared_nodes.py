"""Simulator P4 nodes share everything immutable and own their state.

A network of P4 nodes compiles ``mcc.p4`` once, loads one native module,
lowers the program once, and normalises each distinct table entry once
(docs/performance.md, "Setting up P4 nodes"); each node still owns its
tables, registers and counters.  Not a timing test: it checks the sharing
itself, which is what makes a node after the first cheap.
"""

from __future__ import annotations

import pytest
from native_util import cbr_tree

from p4mcc.netsim import p4_switch as P
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.netsim.switches import choose_switch
from p4mcc.p4switch.native import PIPELINE_ENV


def _tree():
    return cbr_tree("shared", 2, 4, "100Mbps")


def _network(monkeypatch):
    monkeypatch.setenv(PIPELINE_ENV, "native")
    sc = _tree()
    choice = choose_switch("p4", sc)
    net = build_network(Simulator(1), sc.topology, switch_factory=choice.factory)
    choice.configure(net, sc)
    nodes = list(net.switches.values())
    if not all(n.sw.native for n in nodes):
        pytest.skip("the native pipeline is not available here (no C compiler?)")
    return nodes


def test_nodes_share_the_program_module_and_lowering(monkeypatch) -> None:
    a, b, *_ = _network(monkeypatch)
    c = _network(monkeypatch)[0]  # a second network of the same program in this process
    assert a.program is b.program is c.program is P.load_program()
    assert a.sw._mod is b.sw._mod is c.sw._mod  # one compiled module, loaded once
    assert a.sw._W != b.sw._W  # each node its own native state
    ca, cb = a.sw._low.g, b.sw._low.g
    assert ca is not cb
    shared_classes = [k for k, v in ca.items() if isinstance(v, type) and cb.get(k) is v]
    assert shared_classes  # the generated classes are the template's, not lowered again


def test_equal_entries_are_prepared_once_but_tables_are_per_node(monkeypatch) -> None:
    nodes = _network(monkeypatch)
    a, b = nodes[0], nodes[1]
    shared = 0
    for name, ta in a.sw.tables.items():
        tb = b.sw.tables[name]
        assert ta is not tb and ta.entries is not tb.entries
        assert ta.schema() == tb.schema()
        by_match = {e.keys: e for e in tb.entries.values()}
        for e in ta.entries.values():
            twin = by_match.get(e.keys)
            if twin is not None and twin.params == e.params:
                assert twin is not e  # each node its own entry (handles, counters) ...
                assert twin.keys is e.keys  # ... over one normalised match
                shared += 1
    assert shared >= 5  # at least the routes and ARP answers every node holds alike


def test_node_state_stays_its_own(monkeypatch) -> None:
    a, b, *_ = _network(monkeypatch)
    reg = next(iter(a.sw.registers))
    a.sw.registers[reg].write(0, 1)
    assert a.sw.registers[reg].read(0) == 1 and b.sw.registers[reg].read(0) == 0
    t = next(n for n, tb in a.sw.tables.items() if tb.entries)
    before = len(b.sw.tables[t].entries)
    a.sw.table_clear(t)
    assert len(b.sw.tables[t].entries) == before > 0
