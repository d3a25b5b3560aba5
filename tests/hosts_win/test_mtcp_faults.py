"""MTCP survives receivers that die: dead-child timeout, adoption, tree repair.

Sessions run in the simulator (``netsim.run.build_run``); a receiver either
leaves (its agent stops and leaves the group, as ``leave_at`` does) or
crashes silently (the driver simply stops feeding its agent: it keeps its
group membership and never says a word again).  Each test checks the two
bounds of the fault-recovery requirement: every surviving receiver gets
every byte, and the survivors' throughput is back to 80 % of its pre-fault
value within 5 s.
"""

from __future__ import annotations

import pytest

from netsim.run import build_run
from scenario.shapes import star
from netsim.switches import choose_switch
from scenario.model import Scenario, Session

FAULT_AT = 10.0
TOTAL = 9000  # the session ends after the fault


def _ips(run) -> dict[str, str]:
    return {n: h.ip for n, h in run.net.hosts.items()}


def _run(tree: dict[str, str] | None, victim: str, *, crash: bool, assisted: bool = False,
         duration: float = 40.0):
    topo = star(receivers=4, rate="4Mbps", delay="10ms", queue=40)
    params: dict = {"total_packets": TOTAL}
    if assisted:
        params["assisted"] = True
    elif tree is None:
        params["receivers"] = 4
    sess = Session(name="s", protocol="mtcp", sender="snd", receivers=("r1", "r2", "r3", "r4"),
                   group="239.5.5.5", port=5005, params=params, assistance=assisted, session_id=1,
                   leave_at={} if crash else {victim: FAULT_AT})
    sc = Scenario(name="mtcp-fault", description="", topology=topo, sessions=[sess], tcp_flows=[],
                  duration=duration, seed=3)
    if tree is not None:
        probe = build_run(sc, switch=choose_switch("model"))
        ip = _ips(probe)
        sess.params["tree"] = ",".join(f"{ip[c]}>{ip[p]}" for c, p in tree.items())
    run = build_run(sc, switch=choose_switch("p4" if assisted else "model"))
    if crash:
        host = run.net.hosts[victim]
        slot = next(s for slots in host._udp.values() for s in slots)

        def die() -> None:  # no leave, no goodbye: the agent just stops
            slot.running = False
            slot.token += 1

        run.sim.at(FAULT_AT, die)
    return run


def _progress(run, survivors: list[str], until: float, step: float = 0.5) -> list[tuple[float, int]]:
    """(time, lowest cumulative ACK among the survivors), every ``step`` s."""
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    out = []
    t = 0.0
    while t < until:
        t += step
        run.sim.run(until=t)
        out.append((t, min(agents[r].rbuf.cum_ack for r in survivors)))
    return out


def _recovery(prog: list[tuple[float, int]]) -> float:
    """Seconds from the fault until the survivors' rate (over 1 s) is back to 80 % of before."""
    def rate(t0: float, t1: float) -> float:
        a = max(c for t, c in prog if t <= t0 + 1e-9)
        b = max(c for t, c in prog if t <= t1 + 1e-9)
        return (b - a) / (t1 - t0)

    before = rate(FAULT_AT - 3.0, FAULT_AT)
    assert before > 100  # packets/s: the session was running
    for t, _c in prog:
        if t >= FAULT_AT + 1.0 and rate(t - 1.0, t) >= 0.8 * before:
            return t - FAULT_AT
    return float("inf")


CASES = [
    # interior agent r1 (parent of r2, r3) dies; r4 is a sibling of r1
    ("interior-leave", {"r1": "snd", "r2": "r1", "r3": "r1", "r4": "snd"}, "r1", False),
    ("interior-crash", {"r1": "snd", "r2": "r1", "r3": "r1", "r4": "snd"}, "r1", True),
    # two levels below the sender: r2 adopts r3's orphan r4
    ("deep-crash", {"r1": "snd", "r2": "r1", "r3": "r2", "r4": "r3"}, "r3", True),
    # a leaf of a flat tree, no switch assistance
    ("flat-leaf-crash", None, "r2", True),
]


@pytest.mark.parametrize("name,tree,victim,crash", CASES, ids=[c[0] for c in CASES])
def test_mtcp_survivors_get_every_byte_and_recover_within_5_s(name, tree, victim, crash):
    run = _run(tree, victim, crash=crash)
    survivors = [r for r in ("r1", "r2", "r3", "r4") if r != victim]
    prog = _progress(run, survivors, until=40.0)
    snd = run.agents["s/snd"]
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    for r in survivors:  # bytes never delivered: 0
        assert agents[r].rbuf.cum_ack == TOTAL and agents[r].rbuf.delivered_bytes == TOTAL * 1000
        assert agents[r].corrupt == 0
    assert snd.done
    assert sum(a.dead_children for a in run.agents.values()) == 1
    assert _recovery(prog) <= 5.0


def test_mtcp_switch_assisted_session_survives_a_receiver_leaving():
    """With the switch folding ACKs, a leaving member drops out of the fold (IGMP leave)."""
    run = _run(None, "r2", crash=False, assisted=True)
    survivors = ["r1", "r3", "r4"]
    prog = _progress(run, survivors, until=40.0)
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    for r in survivors:
        assert agents[r].rbuf.cum_ack == TOTAL
    assert run.agents["s/snd"].done
    assert _recovery(prog) <= 5.0


# Unit rules (fake clock, scripted messages) -------------------------------------------------

from win_util import GROUP, PORT, SENDER, cfg, feed, out, run_timers  # noqa: E402

from hosts.core import node_id  # noqa: E402
from hosts.mtcp import NO_CWND, MtcpParams, MtcpReceiver, MtcpSender  # noqa: E402
from hosts.wire import MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us  # noqa: E402

A, B, C = "10.0.1.1", "10.0.1.2", "10.0.1.3"
CHAIN = f"{A}>{SENDER},{B}>{A},{C}>{SENDER}"  # A is B's agent; C a leaf of the sender


def _report(node: str, cum: int, cls=MtcpAck, echo: int = 0) -> MtcpAck:
    return cls(session_id=9, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=256,
               node_id=node_id(node), echo_ts=echo)


def _started_sender(tree: str = CHAIN) -> MtcpSender:
    s = MtcpSender(cfg(MtcpParams(tree=tree)))
    s.start(0.0)
    for c in s.tree.children_of(SENDER):
        feed(s, _report(c, 0, MtcpWindowUpdate), 0.0, src=c)
    return s


def _probes(msgs, to: str) -> list[MtcpWindowUpdate]:
    return [m for (d, m) in msgs if isinstance(m, MtcpWindowUpdate) and d == (to, PORT)]


def test_probe_every_two_seconds_and_its_answer_is_an_rtt_sample():
    s = _started_sender()
    out(s)
    t, pa = 0.0, []
    while not pa:  # section 3.3: each child polled every 2 s (jittered +-50 %)
        t = s.get_timer()
        run_timers(s, t)
        pa = _probes(out(s), A)
    assert 1.0 <= t <= 3.0 and pa[0].node_id == node_id(SENDER)
    feed(s, _report(A, 0, MtcpWindowUpdate, echo=pa[0].timestamp), t + 0.08, src=A)
    assert s.children[node_id(A)].rtt.srtt == pytest.approx(0.08)
    # Answered: the next probe comes one (jittered) period later, not at the RTO.
    t2, pa2 = t, []
    while not pa2:
        t2 = s.get_timer()
        feed(s, _report(A, 0), t2, src=A)
        run_timers(s, t2)
        pa2 = _probes(out(s), A)
    assert 1.0 <= t2 - t <= 3.0


def test_silent_child_is_timed_out_and_its_children_adopted():
    s = _started_sender()
    feed(s, _report(C, 0), 0.0, src=C)
    assert [m.seq for _d, m in out(s) if isinstance(m, MtcpData)] == [1]
    # C keeps acknowledging; A never says a word again.
    t = 0.0
    while t < 8.0 and node_id(A) in s.children:
        t += 0.1
        feed(s, _report(C, 1), t, src=C)
        run_timers(s, t)
    assert node_id(A) not in s.children and s.dead_children == 1
    assert t < 6.0  # one period to the first probe, then three unanswered probes
    # Packet 1 no longer waits for A; B (A's child) is adopted and probed at once.
    assert 1 not in s.buf
    assert node_id(B) in s.children
    assert _probes(out(s), B)
    # A late ACK of the dead child is ignored ...
    feed(s, _report(A, 1), t + 0.1, src=A)
    assert node_id(A) not in s.children
    # ... but a hello makes it a child again.
    feed(s, _report(A, 1, MtcpWindowUpdate), t + 0.2, src=A)
    assert node_id(A) in s.children


def test_a_child_that_keeps_reporting_is_never_timed_out():
    s = _started_sender()
    for i in range(1, 200):  # 20 s: probe answers lost, but its ACKs keep coming
        t = i * 0.1
        feed(s, _report(A, 0), t, src=A)
        feed(s, _report(C, 0), t, src=C)
        run_timers(s, t)
    assert s.dead_children == 0 and node_id(A) in s.children


def test_receiver_answers_its_parent_and_reattaches_to_an_adopting_ancestor():
    r = MtcpReceiver(cfg(MtcpParams(tree=CHAIN), local=B))
    r.start(0.0)
    out(r)
    assert r.parent == (A, PORT)
    probe = MtcpWindowUpdate(session_id=9, timestamp=12345, node_id=node_id(A))
    feed(r, probe, 1.0, src=A)
    (dest, ans), = out(r)
    assert dest == (A, PORT) and isinstance(ans, MtcpWindowUpdate) and ans.echo_ts == 12345
    # A stranger (not an ancestor) cannot take B over.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=7, node_id=node_id(C)), 2.0, src=C)
    assert out(r) == [] and r.parent == (A, PORT)
    # The sender adopts B after A died: B answers it and reports there from now on,
    # with a NACK for what it lacks.
    feed(r, MtcpData(session_id=9, seq=2, timestamp=ts_us(2.5), payload=b"\0\0\0\2" * 250), 2.5, src=SENDER)
    out(r)
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=999, node_id=node_id(SENDER)), 3.0, src=SENDER)
    msgs = out(r)
    assert r.parent == (SENDER, PORT) and r.reattached == 1
    assert all(d == (SENDER, PORT) for d, _m in msgs)
    assert any(isinstance(m, MtcpWindowUpdate) and m.echo_ts == 999 for _d, m in msgs)
    assert any(isinstance(m, MtcpNack) and m.missing == (1,) for _d, m in msgs)


def test_sender_repairs_an_adopted_orphan_from_the_stream_it_released():
    s = _started_sender(f"{A}>{SENDER}")
    for seq in range(1, 4):  # A acknowledges 1..3: nothing is buffered any more
        feed(s, _report(A, seq), 0.1 * seq, src=A)
    out(s)
    assert not {1, 2, 3} & set(s.buf) and s.next_seq > 3
    # B, adopted after its agent died, lacks packet 2.
    feed(s, MtcpNack(session_id=9, cum_ack=1, node_id=node_id(B), missing=(2,)), 1.0, src=B)
    rep = [(d, m) for d, m in out(s) if isinstance(m, MtcpData)]
    assert [(d, m.seq) for d, m in rep] == [((B, PORT), 2)]
    assert rep[0][1].payload == b"\0\0\0\2" * 250
    assert GROUP  # the repair is unicast, not to the group


def _dumbbell(window: str | None, duration: float) -> Scenario:
    from scenario.model import scenario_from_dict

    hosts = {"snd": {"ip": "10.0.1.1/24"}, "tsrc": {"ip": "10.0.1.2/24"}, "tdst": {"ip": "10.0.2.9/24"},
             "r1": {"ip": "10.0.2.1/24"}, "r2": {"ip": "10.0.2.2/24"}}
    links = [{"a": "s1-p1", "b": "s2-p1", "rate": "4Mbps", "delay": "28ms", "queue": 40}]
    links += [[h, "s1" if h in ("snd", "tsrc") else "s2"] for h in hosts]
    params = {"window": window} if window else {}
    return scenario_from_dict({
        "name": "mtcp-dumbbell", "duration": duration, "seed": 1,
        "topology": {"hosts": hosts, "switches": {"s1": {}, "s2": {}},
                     "link_defaults": {"rate": "100Mbps", "delay": "1ms"}, "links": links},
        "sessions": [{"name": "m", "protocol": "mtcp", "sender": "snd", "receivers": ["r1", "r2"],
                      "params": params}],
        "tcp_flows": [{"name": "tcp", "src": "tsrc", "dst": "tdst"}]})


def _steady_ratio(window: str | None, duration: float = 60.0) -> float:
    run = build_run(_dumbbell(window, duration), switch=choose_switch("model"))
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    tcp = run.tcp["tcp"].receiver
    run.sim.run(until=duration / 2)
    m0 = [agents[r].rbuf.delivered_bytes for r in ("r1", "r2")]
    t0 = tcp.delivered_bytes
    run.sim.run(until=duration)
    m1 = [agents[r].rbuf.delivered_bytes for r in ("r1", "r2")]
    mtcp = sum(b - a for a, b in zip(m0, m1)) / 2
    return mtcp / (tcp.delivered_bytes - t0)


def test_mtcp_shares_a_drop_tail_dumbbell_with_tcp():
    """4 Mb/s, 64 ms RTT, 40-packet drop-tail queue (1.25 BDP), one TCP flow, two receivers.

    The bound is TFRC's [0.5, 2] on the second half of the run.  With the
    paper's Vegas window (``window: vegas``) MTCP keeps a small fraction.
    """
    ratio = _steady_ratio(None)
    assert 0.5 <= ratio <= 2.0
    assert _steady_ratio("vegas", 40.0) < 0.4
