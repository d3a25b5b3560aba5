"""A simulator P4 node's queue table holds what its queue model answers.

On the compiled pipeline a node runs each packet in one native call, so it
writes every port's queue metadata into the switch's table before the
packet instead of answering between ingress and egress (netsim/p4_switch.py).
The table must then hold, for every port and at every time, exactly what
``_queue_model`` gives: here queues are filled on several ports by frames
sent back to back and drained over time, and the table is compared with the
model row by row, as the queues grow, drain and empty.
"""

from __future__ import annotations

import pytest
from native_util import cbr_tree

from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.netsim.switches import choose_switch
from p4mcc.p4switch.native import PIPELINE_ENV


def _node(monkeypatch):
    monkeypatch.setenv(PIPELINE_ENV, "native")
    sc = cbr_tree("qtable", 3, 3, "10Mbps")
    choice = choose_switch("p4", sc)
    sim = Simulator(1)
    net = build_network(sim, sc.topology, switch_factory=choice.factory)
    choice.configure(net, sc)
    node = max(net.switches.values(), key=lambda n: len(n.ports))
    if not node.sw.native:
        pytest.skip("the native pipeline is not available here (no C compiler?)")
    return sim, node


def test_the_table_follows_the_queue_model_as_queues_fill_and_drain(monkeypatch) -> None:
    sim, node = _node(monkeypatch)
    table = node.sw.use_queue_table()
    assert table is not None and node._qtable is table  # mcc.p4 reads deq_timedelta
    ports = sorted(node.ports)
    assert len(ports) >= 3
    for k, port in enumerate(ports[:3]):  # 0, 6 and 12 frames queued at once
        for _ in range(6 * k):
            node.ports[port].send(bytes(1000))
    busy_seen = set()
    for step in range(40):  # 0.5 ms apart: a 1000-byte frame takes 0.8 ms at 10 Mb/s
        now = step * 5e-4
        node._fill_queue_table(now)
        for port in ports:
            want = node._queue_model(port, now)
            assert tuple(table[3 * port:3 * port + 3]) == want, (port, now)
            if want != (0, 0, 0):
                busy_seen.add(port)
    assert busy_seen == set(ports[1:3])  # both filled queues were seen busy, then drained to zero
    assert all(node._queue_model(p, 0.02) == (0, 0, 0) for p in ports)


def test_a_port_idle_then_busy_again_and_a_restart_are_seen(monkeypatch) -> None:
    """The node looks only at ports queued on since they were last seen empty:
    a port whose queue drained must come back when a frame is queued on it
    again, and a restarted switch's fresh table must get every busy port's row."""
    sim, node = _node(monkeypatch)
    port = sorted(node.ports)[0]
    ch = node.ports[port]

    def row(now: float) -> tuple[int, ...]:
        node._fill_queue_table(now)
        return tuple(node._qtable[3 * port:3 * port + 3])

    for _ in range(3):
        ch.send(bytes(1000))
    assert row(0.0) == node._queue_model(port, 0.0) != (0, 0, 0)
    assert row(0.01) == (0, 0, 0)  # drained: 3 x 0.8 ms at 10 Mb/s
    assert 3 * port not in node._qactive  # and no longer looked at
    sim.now = 0.01
    ch.send(bytes(1000))
    ch.send(bytes(1000))
    assert row(0.01) == node._queue_model(port, 0.01) == (1, 1600, 1)  # one waits; both leave in 1.6 ms
    node.reset()  # a fresh table, all zeros: the busy port's row is written at the next packet
    assert row(0.0102) == node._queue_model(port, 0.0102) == (1, 1400, 1)
