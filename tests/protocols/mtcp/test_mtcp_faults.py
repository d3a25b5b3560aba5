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

from p4mcc.netsim.run import build_run
from p4mcc.scenario.shapes import star
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import Scenario, Session

FAULT_AT = 10.0
TOTAL = 6200  # the session ends after the fault (9 MB)


def _ips(run) -> dict[str, str]:
    return {n: h.ip for n, h in run.net.hosts.items()}


def _run(tree: dict[str, str] | None, victim: str, *, crash: bool, assisted: bool = False,
         duration: float = 40.0, membership=None):
    topo = star(receivers=4, rate="4Mbps", delay="10ms", queue=40)
    params: dict = {"total_packets": TOTAL}
    if assisted:
        params["assisted"] = True
    elif tree is None:
        params["receivers"] = 4
    sess = Session(name="s", protocol="mtcp", sender="snd", receivers=("r1", "r2", "r3", "r4"),
                   group="239.5.5.5", port=5005, params=params, assistance=assisted, session_id=1,
                   leave_at={} if crash else {victim: FAULT_AT})
    extra = {} if membership is None else {"membership": membership}
    sc = Scenario(name="mtcp-fault", description="", topology=topo, sessions=[sess], tcp_flows=[],
                  duration=duration, seed=3, **extra)
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
        assert agents[r].rbuf.cum_ack == TOTAL and agents[r].rbuf.delivered_bytes == TOTAL * MtcpParams().packet_size
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

from p4mcc.hosts.core import node_id  # noqa: E402
from mtcp_util import MtcpReceiver, MtcpSender, PaperSender, composed, profile_factory  # noqa: E402

from p4mcc.hosts.mtcp import NO_CWND, MtcpParams  # noqa: E402
from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us  # noqa: E402

A, B, C = "10.0.1.1", "10.0.1.2", "10.0.1.3"
CHAIN = f"{A}>{SENDER},{B}>{A},{C}>{SENDER}"  # A is B's agent; C a leaf of the sender


def _report(node: str, cum: int, cls=MtcpAck, echo: int = 0) -> MtcpAck:
    return cls(session_id=9, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=256,
               node_id=node_id(node), echo_ts=echo)


def _started_sender(tree: str = CHAIN, **rules: bool) -> MtcpSender:
    """A started sender whose window begins at the paper's one packet (rules switched by name)."""
    s = composed(PaperSender, **{"initial_window": False, **rules})(cfg(MtcpParams(tree=tree)))
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
    # A report of the dead child shows it alive: it is a child again.
    feed(s, _report(A, 1), t + 0.1, src=A)
    assert node_id(A) in s.children and s.readmitted == 1


def test_without_remove_dead_children_a_silent_child_holds_the_window_for_good():
    s = _started_sender(remove_dead_children=False)
    feed(s, _report(C, 0), 0.0, src=C)
    out(s)
    t = 0.0
    while t < 12.0:  # twice the time the rule takes to remove A
        t += 0.1
        feed(s, _report(C, 1), t, src=C)
        run_timers(s, t)
    assert node_id(A) in s.children and s.dead_children == 0
    assert 1 in s.buf and _probes(out(s), A)  # still waiting for A, and still probing it


def test_a_child_timed_out_in_error_comes_back_and_is_repaired():
    """A live child whose reports were all lost for the dead timeout (a
    feedback flood policed at its port) is dropped; its next report makes it
    a child again, and what it lacks is repaired to it, a packet released
    without it from the stream.  Ignored, it stalled for good at that packet
    (``bench/faults.py``, ``feedback-flood``)."""
    s = _started_sender(tree=f"{A}>{SENDER},{C}>{SENDER}")
    out(s)
    t = 0.0
    while t < 8.0 and node_id(A) in s.children:  # A's reports are lost, C's arrive
        t += 0.1
        feed(s, _report(C, s.next_seq - 1), t, src=C)
        run_timers(s, t)
    assert node_id(A) not in s.children
    released = s.next_seq - 1
    feed(s, _report(C, released), t + 0.05, src=C)  # C, the only child left: gone from the buffer
    assert [m.seq for _d, m in out(s) if isinstance(m, MtcpData)]  # the window moved on
    assert released + 1 in s.buf and all(x not in s.buf for x in range(1, released + 1))
    # A lacks the last released packet and the next one (still buffered).
    missing = (released, released + 1)
    feed(s, MtcpNack(session_id=9, cum_ack=released - 1, node_id=node_id(A), missing=missing), t + 0.1, src=A)
    assert node_id(A) in s.children and s.readmitted == 1
    run_timers(s, t + 0.1)
    repaired = {m.seq for d, m in out(s) if isinstance(m, MtcpData) and d == (A, PORT)}
    # The released packet went from the stream; the other waits for the
    # retransmission window (one packet at first, paper 3.6).
    assert released in repaired and set(missing) <= repaired | s.children[node_id(A)].rqueue


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
    assert rep[0][1].payload == (b"\0\0\0\2" * 400)[:MtcpParams().packet_size]
    assert GROUP  # the repair is unicast, not to the group


def _dumbbell(duration: float) -> Scenario:
    from p4mcc.scenario.model import scenario_from_dict

    hosts = {"snd": {"ip": "10.0.1.1/24"}, "tsrc": {"ip": "10.0.1.2/24"}, "tdst": {"ip": "10.0.2.9/24"},
             "r1": {"ip": "10.0.2.1/24"}, "r2": {"ip": "10.0.2.2/24"}}
    links = [{"a": "s1-p1", "b": "s2-p1", "rate": "4Mbps", "delay": "28ms", "queue": 40}]
    links += [[h, "s1" if h in ("snd", "tsrc") else "s2"] for h in hosts]
    return scenario_from_dict({
        "name": "mtcp-dumbbell", "duration": duration, "seed": 1,
        "topology": {"hosts": hosts, "switches": {"s1": {}, "s2": {}},
                     "link_defaults": {"rate": "100Mbps", "delay": "1ms"}, "links": links},
        "sessions": [{"name": "m", "protocol": "mtcp", "sender": "snd", "receivers": ["r1", "r2"],
                      "params": {}}],
        "tcp_flows": [{"name": "tcp", "src": "tsrc", "dst": "tdst"}]})


def _steady_ratio(profile: str = "default", duration: float = 60.0) -> float:
    factory = profile_factory(profile, switch_assists=False)
    run = build_run(_dumbbell(duration), agent_factory=factory, switch=choose_switch("model"))
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
    paper's Vegas window (the ``paper`` profile) MTCP keeps a small fraction.
    """
    ratio = _steady_ratio()
    assert 0.5 <= ratio <= 2.0
    assert _steady_ratio("paper", 40.0) < 0.4


def test_mtcp_switch_assisted_session_survives_a_silent_crash_without_membership_ageing():
    """The switch folds ACKs; a member that crashes silently keeps its port in the fold
    (no ageing here), so its last summary would hold the fold's cum_ack for ever.
    The sender's roll call finds the stall and unfolds the session."""
    from p4mcc.scenario.faults import Membership

    run = _run(None, "r2", crash=True, assisted=True, membership=Membership(timeout=0.0))
    survivors = ["r1", "r3", "r4"]
    prog = _progress(run, survivors, until=40.0)
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    for r in survivors:  # bytes never delivered: 0
        assert agents[r].rbuf.cum_ack == TOTAL and agents[r].rbuf.delivered_bytes == TOTAL * MtcpParams().packet_size
    snd = run.agents["s/snd"]
    assert snd.done and snd.unfolds == 1
    assert _recovery(prog) <= 5.0


# Roll calls: a switch fold held by a silent member ------------------------------------------

from p4mcc.hosts.mtcp import FOLD_ID  # noqa: E402
from p4mcc.hosts.reliable import payload_for  # noqa: E402
from p4mcc.hosts.wire import Flags  # noqa: E402

M1, M2, M3 = "10.0.5.1", "10.0.5.2", "10.0.5.3"  # receivers behind the folding switch


def _fold(cum: int, reporter: str = M1, cls=MtcpAck) -> MtcpAck:
    return cls(session_id=9, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=256,
               node_id=node_id(reporter), flags=Flags.AGGREGATED)


def _folded_sender(**rules: bool) -> MtcpSender:
    s = composed(PaperSender, **rules)(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    feed(s, _fold(0, cls=MtcpWindowUpdate), 0.0, src=M1)
    s.cwnd = 4.0
    feed(s, _fold(0), 0.01, src=M1)
    feed(s, _fold(2), 0.1, src=M1)  # the fold moves to 2, then holds there
    s.children[FOLD_ID].rtt.sample(0.05)  # as from its repairs
    out(s)
    return s


def _rollcalls(msgs) -> list[MtcpWindowUpdate]:
    return [m for d, m in msgs if isinstance(m, MtcpWindowUpdate) and d == (GROUP, PORT)]


def _answer(s: MtcpSender, node: str, cum: int, t: float, missing=()) -> None:
    feed(s, MtcpNack(session_id=9, cum_ack=cum, node_id=node_id(node), missing=tuple(missing)), t, src=node)


def test_sender_roll_calls_a_stalled_fold_and_unfolds_when_it_stays_frozen():
    s = _folded_sender()
    assert 3 in s.buf
    t = s.timer_at("pkt")
    run_timers(s, t)  # packet 3 times out: the fold lacks it
    calls = _rollcalls(out(s))
    assert len(calls) == 1 and calls[0].cum_ack == 3 and calls[0].node_id == node_id(SENDER)
    assert calls[0].adv_wnd == 0  # not (yet) unfolded
    # M2 and M3 answer by NACK: both hold 3 (and more); M1, whose last summary holds the fold, is silent.
    _answer(s, M2, 5, t + 0.05)
    _answer(s, M3, 4, t + 0.06, missing=(5,))
    assert s.timer_at("rollcall") == pytest.approx(t + 0.15)  # srtt + 4 rttvar of the fold
    run_timers(s, t + 0.2)
    # The first time the fold's last message may have been lost: the answers move it on.
    assert not s.unfolded and s.children[FOLD_ID].sb.cum_ack == 4
    assert 3 not in s.buf and 4 not in s.buf and 5 in s.buf
    assert s.cwnd >= 4.0  # the timeout's cut was the stalled fold's: undone
    out(s)
    # The switch's fold still says 2 (M1 holds it): below the answers, so the roll is called again.
    feed(s, _fold(2, reporter=M2), t + 0.3, src=M2)
    assert len(_rollcalls(out(s))) == 1
    _answer(s, M2, 6, t + 0.35)
    _answer(s, M3, 6, t + 0.36)
    run_timers(s, s.timer_at("rollcall"))
    # Frozen across two calls: unfolded; M2 and M3 acknowledge by NACK from now on.
    assert s.unfolded and s.unfolds == 1 and FOLD_ID not in s.children
    assert {c.nid for c in s._acking()} == {node_id(M2), node_id(M3)}
    assert 5 not in s.buf and 6 not in s.buf
    calls = _rollcalls(out(s))  # the call that tells every member to report by NACK
    assert len(calls) == 1 and calls[0].adv_wnd == 1
    # A NACK from a member that was not a child yet makes it one.
    run_timers(s, t + 1.0)
    _answer(s, M1, 6, t + 1.05)
    assert node_id(M1) in {c.nid for c in s._acking()}


def test_without_fold_roll_call_a_fold_a_silent_member_holds_keeps_every_packet_for_good():
    """The paper has no fold, so no call: M2 and M3 hold 3 and more and NACK nothing, yet M1's
    last summary keeps the fold at 2, and for 30 s the sender releases nothing it sent from 3 on
    (it may send at most the fold's advertised window past 2)."""
    s = _folded_sender(fold_roll_call=False)
    t = s.timer_at("pkt")
    msgs = []
    for i in range(60):
        run_timers(s, t + 0.5 * i)
        _answer(s, M2, 5, t + 0.5 * i + 0.01)
        _answer(s, M3, 5, t + 0.5 * i + 0.02)
        msgs += out(s)
    assert not _rollcalls(msgs) and s.children[FOLD_ID].sb.cum_ack == 2
    assert sorted(s.buf) == list(range(3, s.next_seq)) and not hasattr(s, "unfolds")


def test_a_lost_fold_is_moved_on_without_unfolding():
    s = _folded_sender()
    t = s.timer_at("pkt")
    run_timers(s, t)
    _answer(s, M2, 5, t + 0.05)
    _answer(s, M3, 5, t + 0.06)
    run_timers(s, t + 0.2)
    assert s.children[FOLD_ID].sb.cum_ack == 5 and not s.unfolded
    feed(s, _fold(6), t + 0.3, src=M1)  # the fold moves again: it was only a lost message
    assert not s.unfolded and s.fold_stalled_at is None and 6 not in s.buf


def test_a_member_behind_the_answers_gets_its_gap_from_the_stream():
    s = _folded_sender()
    t = s.timer_at("pkt")
    run_timers(s, t)
    _answer(s, M2, 5, t + 0.05)
    run_timers(s, t + 0.2)  # the fold is taken to 5 from M2's answer alone
    out(s)
    _answer(s, M3, 2, t + 0.5)  # M3's answer was lost; it lacks 3..5
    rep = [m.seq for d, m in out(s) if isinstance(m, MtcpData) and m.seq <= 5]
    assert rep[:1] == [3]  # paced by its retransmission window, from the stream


def test_a_fold_held_by_a_live_slow_member_is_not_unfolded():
    s = _folded_sender()
    t = s.timer_at("pkt")
    run_timers(s, t)
    assert _rollcalls(out(s))
    _answer(s, M2, 5, t + 0.05)
    _answer(s, M3, 2, t + 0.06, missing=(3,))
    run_timers(s, s.timer_at("rollcall"))
    # M3 lacks 3 itself: a loss, not a stall
    assert not s.unfolded and s.children[FOLD_ID].sb.cum_ack == 2 and s.fold_stalled_at is None


def test_receiver_answers_a_roll_call_by_nack_and_reports_by_nack_from_then_on():
    r = MtcpReceiver(cfg(MtcpParams(assisted=True), local=M2))
    r.start(0.0)
    for seq in (1, 2, 4):
        feed(r, MtcpData(session_id=9, seq=seq, timestamp=ts_us(0.1), payload=payload_for(seq, 100)),
             0.1, src=SENDER)
    run_timers(r, 0.2)
    assert any(isinstance(m, MtcpAck) for _d, m in out(r))  # folded by the switch
    # A plain probe is answered by a window update, as before.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=5, node_id=node_id(SENDER)), 0.3, src=SENDER)
    assert [type(m) for _d, m in out(r)] == [MtcpWindowUpdate] and not r.solo
    # A roll call (cum_ack set) is answered by NACK, which no switch folds.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=6, node_id=node_id(SENDER), cum_ack=3), 0.4,
         src=SENDER)
    (dest, ans), = out(r)
    assert dest == (SENDER, PORT) and isinstance(ans, MtcpNack) and ans.cum_ack == 2
    assert ans.missing == (3,) and not r.solo
    # In an unfolded session (adv_wnd 1) it reports by NACK from then on.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=7, node_id=node_id(SENDER), cum_ack=3, adv_wnd=1),
         0.45, src=SENDER)
    assert [type(m) for _d, m in out(r)] == [MtcpNack] and r.solo
    feed(r, MtcpData(session_id=9, seq=5, timestamp=ts_us(0.5), payload=payload_for(5, 100)), 0.5, src=SENDER)
    run_timers(r, 0.6)
    assert [type(m) for _d, m in out(r)] == [MtcpNack]
    # A unicast probe rewritten by a folding switch (fold fields, AGGREGATED) is a plain probe.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=8, node_id=node_id(SENDER), cum_ack=3, adv_wnd=256,
                             flags=Flags.AGGREGATED), 0.65, src=SENDER)
    assert [type(m) for _d, m in out(r)] == [MtcpNack]  # answered (it reports by NACK now)
    r2 = MtcpReceiver(cfg(MtcpParams(assisted=True), local=M3))
    r2.start(0.0)
    out(r2)
    feed(r2, MtcpWindowUpdate(session_id=9, timestamp=8, node_id=node_id(SENDER), cum_ack=3, adv_wnd=256,
                              flags=Flags.AGGREGATED), 0.1, src=SENDER)
    (_d, a2), = out(r2)
    assert isinstance(a2, MtcpWindowUpdate) and a2.echo_ts == 8 and not r2.solo
    # A roll call from anyone but its parent, the sender, is ignored.
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=7, node_id=node_id(M3), cum_ack=3), 0.7, src=M3)
    assert out(r) == []


def test_a_silent_nack_reporting_child_is_timed_out_by_roll_calls():
    s = _folded_sender()
    t = s.timer_at("pkt")
    run_timers(s, t)
    s.fold_stalled_at = s.fold_reported  # a roll call found the fold stalled before
    _answer(s, M2, 5, t + 0.05)
    _answer(s, M3, 5, t + 0.06)
    run_timers(s, s.timer_at("rollcall"))
    assert s.unfolded
    # M3 falls silent too; M2 keeps acknowledging by NACK.
    now, cum = t + 0.1, 5
    while now < t + 30 and node_id(M3) in s.children:
        now += 0.05
        cum = max(cum, s.next_seq - 1)
        feed(s, MtcpNack(session_id=9, cum_ack=cum, node_id=node_id(M2)), now, src=M2)
        run_timers(s, now)
    assert node_id(M3) not in s.children and s.dead_children == 1
    assert now - t < 8.0  # a packet timeout, then three roll calls unanswered


def test_mtcp_receiver_crash_scenario_recovers_without_ageing():
    """The shipped fault scenario (ageing off, r1 crashes for good at 6 s): both
    survivors are back above 80 % of their pre-fault rate within 5 s."""
    from pathlib import Path

    from p4mcc.scenario.model import load_scenario

    path = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "faults" / "mtcp-receiver-crash.yaml"
    sc = load_scenario(path)
    assert sc.membership is not None and sc.membership.timeout == 0
    run = build_run(sc, switch=choose_switch("p4", sc))
    agents = {label.split("/")[1]: a for label, a in run.agents.items()}
    crash = sc.faults[0].at
    prog = []
    t = 0.0
    while t < crash + 6.0:
        t += 0.25
        run.sim.run(until=t)
        prog.append((t, min(agents[r].rbuf.cum_ack for r in ("r2", "r3"))))

    def rate(t0: float, t1: float) -> float:
        c = dict(prog)
        return (c[t1] - c[t0]) / (t1 - t0)

    before = rate(crash - 3.0, crash)
    assert before > 100
    back = next((t for t, _c in prog if t >= crash + 1.0 and rate(t - 1.0, t) >= 0.8 * before), None)
    assert back is not None and back - crash <= 5.0
    assert agents["h1"].unfolds == 1 and agents["r1"].rbuf.cum_ack < agents["r2"].rbuf.cum_ack


# Late joiners: a receiver with fresh state in a running session ------------------------------


def test_a_fresh_child_of_a_running_session_is_told_where_its_stream_starts():
    s = _started_sender(f"{A}>{SENDER}")
    for seq in range(1, 4):  # A acknowledges 1..3: released, never to be sent again
        feed(s, _report(A, seq), 0.1 * seq, src=A)
    out(s)
    low = min(s.buf)
    assert low == 4
    # A restarts with fresh state: it has nothing, and NACKs from packet 1.
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(A), missing=(1, 2, 3, 4, 5)), 1.0, src=A)
    msgs = out(s)
    joins = [(d, m) for d, m in msgs if isinstance(m, MtcpNack)]
    assert joins == [((A, PORT), joins[0][1])] and joins[0][1].cum_ack == low - 1
    assert joins[0][1].node_id == node_id(SENDER)
    assert not [m for _d, m in msgs if isinstance(m, MtcpData) and m.seq < low]  # no replay of the past
    assert s.children[node_id(A)].sb.cum_ack == low - 1 and s.late_joins == 1
    # A report with data (cum_ack > 0) is never a join.
    feed(s, MtcpNack(session_id=9, cum_ack=low, node_id=node_id(A), missing=(low + 1,)), 1.1, src=A)
    assert not [m for _d, m in out(s) if isinstance(m, MtcpNack)] and s.late_joins == 1


def test_without_join_at_window_edge_a_fresh_child_never_gets_what_it_had_acknowledged():
    s = _started_sender(f"{A}>{SENDER}", join_at_window_edge=False)
    for seq in range(1, 4):
        feed(s, _report(A, seq), 0.1 * seq, src=A)
    out(s)
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(A), missing=(1, 2, 3, 4, 5)), 1.0, src=A)
    msgs = out(s)
    assert not [m for _d, m in msgs if isinstance(m, MtcpNack)]  # no join: the paper has none
    # Its record still holds 1..3 (released, never to be repaired), and its stream cannot start.
    assert s.children[node_id(A)].sb.cum_ack == 3
    assert not [m for _d, m in msgs if isinstance(m, MtcpData) and m.seq < 4]
    assert not hasattr(s, "late_joins")


def test_sender_starts_nobody_late_at_the_sessions_first_packet():
    s = _started_sender(f"{A}>{SENDER}")
    out(s)
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(A), missing=(1,)), 0.5, src=A)
    assert not [m for _d, m in out(s) if isinstance(m, MtcpNack)] and s.late_joins == 0


def _data(seq: int, t: float) -> MtcpData:
    return MtcpData(session_id=9, seq=seq, timestamp=ts_us(t), payload=seq.to_bytes(4, "big") * 250)


def test_a_fresh_receiver_takes_its_parents_join_and_one_with_data_does_not():
    r = MtcpReceiver(cfg(MtcpParams(tree=f"{A}>{SENDER}"), local=A))
    r.start(0.0)
    for seq in (7, 8):
        feed(r, _data(seq, 1.0), 1.0, src=SENDER)
    assert r.rbuf.cum_ack == 0
    feed(r, MtcpNack(session_id=9, cum_ack=4, node_id=node_id(SENDER)), 1.1, src=SENDER)
    assert r.rbuf.cum_ack == 4 and r.late_joined == 5  # 5 and 6 still owed, then 7, 8
    feed(r, _data(5, 1.2), 1.2, src=SENDER)
    feed(r, _data(6, 1.2), 1.2, src=SENDER)
    assert r.rbuf.cum_ack == 8 and r.rbuf.delivered_packets == 4
    # Once it delivered data, a join (forged or stale) cannot make it skip anything.
    feed(r, MtcpNack(session_id=9, cum_ack=20, node_id=node_id(SENDER)), 1.3, src=SENDER)
    assert r.rbuf.cum_ack == 8
    # Nor can anyone but its parent.
    r2 = MtcpReceiver(cfg(MtcpParams(tree=f"{A}>{SENDER}"), local=A))
    r2.start(0.0)
    feed(r2, _data(7, 1.0), 1.0, src=SENDER)
    feed(r2, MtcpNack(session_id=9, cum_ack=6, node_id=node_id(B)), 1.1, src=B)
    assert r2.rbuf.cum_ack == 0


@pytest.mark.parametrize("fault", ["agent-kill", "receiver-crash"])
def test_a_restarted_receiver_is_brought_in_and_nobody_loses_a_byte(fault):
    """The shipped scenarios with MTCP: r2's agent killed at 6 s and restarted
    fresh at 8 s; r1 crashed silently at 6 s and rebooted at 9 s.  The
    restarted receiver joins from the current point and gets every packet from
    there on, within 3 s; the others get every packet."""
    import dataclasses
    from pathlib import Path

    from p4mcc.scenario.model import load_scenario

    path = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "faults" / f"{fault}.yaml"
    sc = load_scenario(path)
    sc = dataclasses.replace(sc, sessions=[dataclasses.replace(sc.sessions[0], protocol="mtcp", name="m")])
    f = sc.faults[0]
    back = f.at + f.duration
    run = build_run(sc, switch=choose_switch("p4", sc))
    run.sim.run(until=back + 3.0)
    victim = run.agents[f"m/{f.target}"]
    snd = run.agents[f"m/{sc.sessions[0].sender}"]
    assert victim.late_joined > 0 and victim.rbuf.delivered_packets > 0
    mark = snd.next_seq - 1  # what the sender has sent 3 s after the restart
    run.sim.run(until=back + 5.0)
    for r in sc.sessions[0].receivers:
        a = run.agents[f"m/{r}"]
        # Every packet from its stream's start up to ``mark`` delivered, in order.
        assert a.rbuf.cum_ack >= mark, r
        assert a.rbuf.delivered_packets == a.rbuf.cum_ack - max(0, a.late_joined - 1), r
    assert snd.next_seq - 1 - mark > 250  # still moving: above 1 Mb/s of a 4 Mb/s path


# An unfolded session: children that report by NACK alone ------------------------------------


def _unfolded_sender(**rules: bool) -> tuple[MtcpSender, float]:
    """A sender (default rules, ``rules`` switched) whose fold stalled twice: M2 and M3 acknowledge by NACK."""
    s = _folded_sender(**rules)
    t = s.timer_at("pkt")
    run_timers(s, t)
    s.fold_stalled_at = s.fold_reported
    _answer(s, M2, 5, t + 0.05)
    _answer(s, M3, 5, t + 0.06)
    run_timers(s, s.timer_at("rollcall"))
    assert s.unfolded and {c.nid for c in s._acking()} == {node_id(M2), node_id(M3)}
    out(s)
    return s, s.now


def _send_new(s: MtcpSender, upto: int, t: float) -> None:
    """Let the sender put packets up to ``upto`` on the wire (M2 and M3 keep up at 5)."""
    s.cwnd = s.ssthresh = 64.0
    feed(s, MtcpNack(session_id=9, cum_ack=5, node_id=node_id(M2)), t, src=M2)
    assert s.next_seq > upto
    out(s)


def test_a_nack_acknowledges_the_packets_between_its_holes():
    """A child that reports only by NACK names every hole up to its last one:
    what lies between them has arrived (a SACK), and is released once every
    child holds it.  With the cumulative ACK alone, repairs that arrived above
    a hole still open held the child's retransmission window full."""
    s, t = _unfolded_sender()
    _send_new(s, 12, t + 0.01)
    _answer(s, M3, 6, t + 0.02, missing=(7, 10))
    c = s.children[node_id(M3)]
    assert [x for x in range(6, 13) if c.sb.acked(x)] == [6, 8, 9]  # 11, 12: above the last hole
    _answer(s, M2, 12, t + 0.03)
    assert 8 not in s.buf and 9 not in s.buf and 7 in s.buf and 10 in s.buf and 11 in s.buf


def test_repairs_above_a_nacks_last_hole_leave_the_pipe_after_a_round_trip():
    """RFC 6675's pipe: a NACK sent more than a round trip after a repair went
    out shows the repair has arrived or been lost, so it no longer holds the
    retransmission window (a lost one at the tail is the packet timer's)."""
    s, t = _unfolded_sender()
    _send_new(s, 12, t + 0.01)
    c = s.children[node_id(M3)]
    c.rtt.sample(0.1)
    c.rinflight.update({11: t + 0.02, 12: t + 0.3})
    _answer(s, M3, 6, t + 0.32, missing=(7,))
    assert 11 not in c.rinflight  # sent 0.3 s before the NACK: out of the pipe
    assert 12 in c.rinflight  # sent 0.02 s before it: may still be on its way


def test_a_nack_naming_an_overdue_repair_queues_it_again_and_leaves_the_window():
    """3.6: a repair a NACK names again is presumed lost and queued once more;
    the child's retransmission window is not cut for it."""
    s, t = _unfolded_sender()
    _send_new(s, 12, t + 0.01)
    c = s.children[node_id(M3)]
    c.rtt.sample(0.1)
    c.rwnd, c.rssthresh = 40.0, 4096.0
    c.rinflight.update({7: t + 0.02, 8: t + 0.02})
    c.last_tx.update({7: t + 0.02, 8: t + 0.02})
    _answer(s, M3, 6, t + 0.5, missing=(7, 8))  # both repairs overdue: presumed lost
    assert c.rwnd == 40.0 and c.rssthresh == 4096.0
    assert c.last_tx[7] == c.last_tx[8] == t + 0.5  # sent again at once


def test_a_receiver_reporting_by_nack_alone_names_its_holes_again_once_their_repair_is_overdue():
    """Its reports ride on data, and a hole the sender's window waits for stops
    the data: it NACKs the hole again after the holdoff (twice its
    NACK-to-repair time; 0.25 s before a sample), not only at its next window
    update (0.5 s and more)."""
    r = MtcpReceiver(cfg(MtcpParams(assisted=True), local=M2))
    r.start(0.0)
    for seq in (1, 2, 4):
        feed(r, MtcpData(session_id=9, seq=seq, timestamp=ts_us(0.1), payload=payload_for(seq, 100)),
             0.1, src=SENDER)
    feed(r, MtcpWindowUpdate(session_id=9, timestamp=7, node_id=node_id(SENDER), cum_ack=3, adv_wnd=1),
         0.2, src=SENDER)
    assert r.solo
    out(r)
    run_timers(r, 0.2 + 0.24)
    assert not [m for _d, m in out(r) if isinstance(m, MtcpNack)]  # not yet overdue
    run_timers(r, 0.2 + 0.26)
    (dest, nack), = [(d, m) for d, m in out(r) if isinstance(m, MtcpNack)]
    assert dest == (SENDER, PORT) and nack.missing == (3,) and nack.cum_ack == 2
    run_timers(r, 0.2 + 0.52)
    assert [m.missing for _d, m in out(r) if isinstance(m, MtcpNack)] == [(3,)]  # and again while it stays open
    feed(r, MtcpData(session_id=9, seq=3, timestamp=ts_us(0.8), payload=payload_for(3, 100),
                     flags=Flags.RETRANSMIT), 0.8, src=SENDER)
    out(r)
    run_timers(r, 2.0)
    assert not [m for _d, m in out(r) if isinstance(m, MtcpNack) and m.missing]  # filled: nothing to name
