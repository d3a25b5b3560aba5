"""A reliable session whose sender's host reboots: ``resume_stream`` (RLA and MTCP).

The restarted sender has no state; its receivers hold the stream up to their
cumulative ACKs.  With the rule the sender learns where they are and resumes
the stream after the lowest of them, so every receiver gets every byte once
and the session is back within the fault bench's 5 s.  Without it the fresh
sender waits for hellos nobody sends (RLA) or for a fold that never changes
(MTCP), and the session never comes back.  Scripted cores first, then the
shipped ``sender-crash`` scenario end to end in the simulator on the P4 switch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from mtcp_util import PaperSender, composed
from rla_util import receiver_class, rules, sender_class
from win_util import GROUP, PORT, cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import FOLD_ID, MtcpParams
from p4mcc.hosts.mtcp.constants import RTO_INITIAL
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.rla import RlaParams
from p4mcc.hosts.rla.receiver import HELLO_INTERVAL
from p4mcc.hosts.rla.rules import ResumeStream
from p4mcc.hosts.wire import Flags, MtcpData, MtcpNack, MtcpWindowUpdate, RlaData, RlaSack, ts_us

SCENARIO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults" / "sender-crash.yaml"
R1, R2 = "10.0.1.1", "10.0.1.2"
RECOVERY_BOUND_S = 5.0  # the fault bench's bound (bench/faults.py BOUND_S)
DRAIN_S = 4.0  # what was sent this long before the end must have arrived


def _rla_sack(rcvr: str, cum: int, echo: int = 0) -> RlaSack:
    return RlaSack(session_id=9, cum_ack=cum, adv_buf=256, rcvr_id=node_id(rcvr), echo_ts=echo)


def _rla_sender(without: tuple[str, ...] = ()):
    s = sender_class(rules(without))(cfg(RlaParams(receivers=1, initial_cwnd=4)))
    s.start(0.0)
    return s


def _data_seqs(msgs) -> list[int]:
    return [m.seq for _d, m in msgs if isinstance(m, (RlaData, MtcpData)) and not m.flags & Flags.RETRANSMIT]


# RLA: the sender's half ---------------------------------------------------------------------------

def test_a_restarted_rla_sender_resumes_after_the_receivers_cumulative_ack():
    s = _rla_sender()
    feed(s, _rla_sack(R1, 500), 0.1, src=R1)  # a hello of a receiver that holds 1..500
    assert _data_seqs(out(s)) == []  # it hears the other receivers' hellos first
    run_timers(s, 0.1 + ResumeStream.RESUME_GATHER_S)
    assert _data_seqs(out(s)) == [501, 502, 503, 504]
    assert s.resumed_from == 501


def test_without_the_rule_a_restarted_rla_sender_starts_its_stream_again():
    s = _rla_sender(without=("resume_stream",))
    feed(s, _rla_sack(R1, 500), 0.1, src=R1)
    assert _data_seqs(out(s)) == [1, 2, 3, 4]


def test_a_receiver_heard_behind_the_resumed_stream_is_repaired_what_it_lacks():
    s = _rla_sender()
    feed(s, _rla_sack(R1, 500), 0.1, src=R1)
    run_timers(s, 0.1 + ResumeStream.RESUME_GATHER_S)
    out(s)
    t = 0.2 + ResumeStream.RESUME_GATHER_S  # heard only once the resumed stream runs
    feed(s, _rla_sack(R2, 497), t, src=R2)  # it lacks 498..500, sent by the sender that crashed
    assert s.rcvrs[node_id(R2)].lost_pending | s.rcvrs[node_id(R2)].rexmit_at.keys() == {498, 499, 500}
    assert s.congestion_signals == 0  # a restart is not congestion
    assert {498, 499, 500} <= s.rexmit_queue  # queued for repair (rule 5's window sends them)
    assert not s.rcvrs[node_id(R1)].lost_pending  # the receiver it resumed after owes nothing


# RLA: the receiver's half -------------------------------------------------------------------------

def _rla_receiver(names):
    r = receiver_class(names)(cfg(RlaParams(), local=R1))
    r.start(0.0)
    out(r)
    for seq in (1, 2, 3):
        feed(r, RlaData(session_id=9, seq=seq, timestamp=ts_us(0.1), payload=payload_for(seq, 100)), 0.1)
    out(r)
    return r


def _hellos(r) -> list[RlaSack]:
    return [m for _d, m in out(r) if isinstance(m, RlaSack) and m.echo_ts == 0]


def test_an_rla_receiver_says_hello_again_after_a_data_silence():
    r = _rla_receiver(rules())
    run_timers(r, 0.1 + HELLO_INTERVAL - 0.01)
    assert _hellos(r) == []  # not while data is recent
    run_timers(r, 0.1 + HELLO_INTERVAL)
    hello = _hellos(r)
    assert len(hello) == 1 and hello[0].cum_ack == 3  # where its stream stands
    run_timers(r, 0.1 + 3 * HELLO_INTERVAL)
    assert len(_hellos(r)) == 2  # one per interval while the silence lasts


def test_without_the_rule_an_rla_receiver_with_data_stays_silent():
    r = _rla_receiver(rules(("resume_stream",)))
    run_timers(r, 0.1 + 3 * HELLO_INTERVAL)
    assert _hellos(r) == []


# MTCP: a sender behind a folding switch -----------------------------------------------------------

def _mtcp_sender(**switches: bool):
    s = composed(PaperSender, "default", **switches)(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    return s


def test_a_restarted_mtcp_sender_that_hears_no_fold_calls_the_roll_and_resumes():
    s = _mtcp_sender()
    run_timers(s, RTO_INITIAL)
    calls = [m for d, m in out(s) if isinstance(m, MtcpWindowUpdate) and d == (GROUP, PORT)]
    assert len(calls) == 1 and calls[0].cum_ack >= 1  # a roll call: members answer by NACK
    feed(s, MtcpNack(session_id=9, cum_ack=300, node_id=node_id(R1)), RTO_INITIAL + 0.05, src=R1)
    seqs = _data_seqs(out(s))
    assert seqs and seqs[0] == 301 and s.children[FOLD_ID].sb.cum_ack == 300


def test_without_the_rule_a_restarted_mtcp_sender_behind_a_fold_waits_for_ever():
    s = _mtcp_sender(resume_stream=False)
    run_timers(s, 10 * RTO_INITIAL)
    assert out(s) == [] and not s.started


def test_a_fresh_mtcp_sender_heard_at_once_sends_as_without_the_rule():
    """A fold heard before the first timer: the rule adds nothing to a session from its start."""
    sent = []
    for switch in (True, False):
        s = _mtcp_sender(resume_stream=switch)
        feed(s, MtcpWindowUpdate(session_id=9, cum_ack=0, min_cwnd=0xFFFFFFFF, adv_wnd=256,
                                 node_id=node_id(R1), flags=Flags.AGGREGATED), 0.01, src=R1)
        msgs = out(s)
        run_timers(s, 3 * RTO_INITIAL)
        sent.append([(d, type(m).__name__, m.seq) for d, m in msgs + out(s)])
        assert getattr(s, "resumed_from", 0) == 0
    assert sent[0] == sent[1] and 1 in [seq for _d, kind, seq in sent[0] if kind == "MtcpData"]


# End to end: the shipped sender-crash scenario ----------------------------------------------------

def _run_crash(proto: str, resume: bool):
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import recovery_times, with_protocol, with_rules
    from p4mcc.scenario.model import load_scenario

    sc = with_rules(with_protocol(load_scenario(SCENARIO), proto), "default", {"resume_stream": resume})
    sc = dataclasses.replace(sc, duration=20.0)
    run = build_run(sc, switch=choose_switch("p4", sc))
    s = sc.sessions[0]
    label = f"{s.name}/{s.sender}"
    sent: dict[str, int] = {}
    run.sim.at(sc.duration - DRAIN_S, lambda: sent.setdefault("seq", run.agents[label].next_seq - 1))
    run.sim.run(until=sc.duration)
    f = sc.faults[0]
    times = list(recovery_times(run.recorder.samples, sc, f, f.at).values())
    return sc, run, sent["seq"], times


@pytest.mark.parametrize("proto", ["rla", "mtcp"])
def test_after_a_sender_crash_every_receiver_gets_every_byte_once_within_the_bound(proto):
    sc, run, cut, times = _run_crash(proto, resume=True)
    s = sc.sessions[0]
    snd = run.agents[f"{s.name}/{s.sender}"]
    assert snd.resumed_from > 1  # the sender that runs at the end is the restarted one
    for r in s.receivers:
        buf = run.agents[f"{s.name}/{r}"].buf if proto == "rla" else run.agents[f"{s.name}/{r}"].rbuf
        assert buf.cum_ack >= cut > snd.resumed_from
        assert buf.delivered_packets == buf.cum_ack  # 1..cum_ack, each once: nothing skipped or repeated
    assert times and all(t is not None and t <= RECOVERY_BOUND_S for t in times), times


@pytest.mark.parametrize("proto", ["rla", "mtcp"])
def test_without_the_rule_a_sender_crash_ends_the_session(proto):
    _sc, _run, _cut, times = _run_crash(proto, resume=False)
    assert times and any(t is None for t in times), times


# A claim far into the stream costs no work per packet --------------------------------------------

FAR = 10**6  # a resume point a million packets in


@pytest.fixture
def listed(monkeypatch):
    """The most packets any scoreboard update lists at once."""
    from p4mcc.hosts.reliable import Scoreboard

    spans = [0]
    update = Scoreboard.update

    def counting(self, cum_ack, blocks=(), limit=None):
        spans.append(min(cum_ack, limit if limit is not None else cum_ack) - self.cum_ack)
        return update(self, cum_ack, blocks, limit)

    monkeypatch.setattr(Scoreboard, "update", counting)
    return spans


def test_an_rla_receiver_first_heard_in_a_far_resumed_stream_owes_at_most_a_buffer(listed):
    s = _rla_sender()
    feed(s, _rla_sack(R1, FAR), 0.1, src=R1)
    out(s)
    feed(s, _rla_sack(R2, 0), 0.2, src=R2)  # a fresh receiver: a hostile or a rebooted one
    assert s.rcvrs[node_id(R2)].sb.cum_ack >= FAR - s.p.rcv_buffer  # not owed the million before
    assert len(s.out) <= s.p.rcv_buffer + 8
    assert max(listed) <= s.p.rcv_buffer + 8


def test_an_mtcp_child_first_heard_in_a_far_resumed_stream_starts_at_its_report(listed):
    s = composed(PaperSender, "default")(cfg(MtcpParams(tree=f"{R1}>10.0.0.1,{R2}>10.0.0.1")))
    s.start(0.0)
    for node, cum, t in ((R1, FAR, 0.1), (R2, FAR - 5, 0.2)):
        feed(s, MtcpWindowUpdate(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, adv_wnd=256,
                                 node_id=node_id(node)), t, src=node)
    assert s.resumed_from == FAR - 4  # after the lowest report before the start
    assert [s.children[node_id(n)].sb.cum_ack for n in (R1, R2)] == [FAR, FAR - 5]
    assert max(listed) <= s.p.rcv_buffer
