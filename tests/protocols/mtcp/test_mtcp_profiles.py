"""MTCP's profiles: the paper core runs on its own, and each named rule changes
what it exists for (with and without it, on a small in-memory case).

Rules whose with/without test lives beside the mechanism it changes:
``abc`` (test_mtcp_rules.py::test_slow_start_grows_at_most_two_packets_per_report),
``recovery_hold`` (::test_reno_window_does_not_grow_on_the_flight_a_nack_cut_answered),
``nack_dupthresh`` (::test_a_new_hole_is_nacked_once_three_packets_above_it_arrived),
``shared_loss_multicast`` (test_mtcp_rules.py),
``delayed_ack``, ``nack_rack`` (test_mtcp_acks.py),
``fold_roll_call`` (test_mtcp_faults.py).
"""

from __future__ import annotations

import pytest
from mtcp_util import PaperReceiver, PaperSender, composed
from win_util import PORT, SENDER, cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import RULES, MtcpParams
from p4mcc.hosts.mtcp.constants import ACK_DELAY
from p4mcc.hosts.mtcp.rules import TimerJitter
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us

A, B = "10.0.1.1", "10.0.1.2"
TREE2 = f"{A}>{SENDER},{B}>{SENDER}"


def _report(node: str, cum: int, cls=MtcpAck):
    return cls(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=256, node_id=node_id(node))


def _started(cls: type):
    s = cls(cfg(MtcpParams(tree=TREE2)))
    s.start(0.0)
    for c in (A, B):
        feed(s, _report(c, 0, MtcpWindowUpdate), 0.0, src=c)
    return s


def _data(seq: int, t: float) -> MtcpData:
    return MtcpData(session_id=9, seq=seq, timestamp=ts_us(t), payload=payload_for(seq, 100))


def test_the_default_profile_is_every_rule_but_the_stamps_and_the_ackers_and_the_paper_none():
    stamp_rules = {"stamp_echo", "stamp_climb", "share_window"}
    acker_rules = {"acker_election", "acker_clock", "reliability_window", "fold_acker"}
    assert RULES.resolve("paper") == ()
    assert set(RULES.resolve("default")) == set(RULES.names()) - stamp_rules - acker_rules
    assert set(RULES.resolve("stamped")) == set(RULES.resolve("default")) | stamp_rules
    assert RULES.compose(PaperSender, ()) is PaperSender


def test_the_paper_profile_runs_a_session_in_the_simulator():
    """``SessionConfig(rules=())`` through the registry: every receiver gets every byte."""
    from p4mcc.netsim.run import run_scenario
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict({
        "name": "mtcp-paper", "duration": 20.0, "seed": 1,
        "topology": {"generate": {"kind": "dumbbell", "receivers": 3, "rate": "4Mbps", "delay": "10ms",
                                  "queue": 30, "tcp_pairs": 0}},
        "sessions": [{"name": "m", "protocol": "mtcp", "sender": "snd1", "receivers": ["r*"],
                      "params": {"total_packets": 600, "packet_size": 1000}}],
    })
    from mtcp_util import profile_factory

    run = run_scenario(sc, None, agent_factory=profile_factory("paper", switch_assists=False))
    agents = {label: a for label, a in run.agents.items()}
    snd = next(a for label, a in agents.items() if label.endswith("/snd1"))
    assert type(snd) is PaperSender and snd.cfg.rules == ()
    assert snd.done
    rcv = [a for a in agents.values() if isinstance(a, PaperReceiver)]
    assert len(rcv) == 3 and all(r.rbuf.cum_ack == 600 for r in rcv)


def test_registry_builds_the_paper_core_for_an_empty_rule_list():
    from p4mcc.hosts import registry

    cfg_ = SessionConfig(9, "239.1.2.3", PORT, SENDER, A, MtcpParams(tree=TREE2), rules=())
    assert type(registry.get("mtcp").receiver(cfg_)) is PaperReceiver
    default = registry.get("mtcp").receiver(SessionConfig(9, "239.1.2.3", PORT, SENDER, A, MtcpParams(tree=TREE2)))
    assert isinstance(default, TimerJitter) and isinstance(default, PaperReceiver)


@pytest.mark.parametrize("on", [True, False])
def test_timer_jitter_spreads_the_ack_delays_of_receivers_that_get_a_packet_together(on):
    waits = []
    for i in range(20):
        r = composed(PaperReceiver, timer_jitter=on, delayed_ack=False)(
            cfg(MtcpParams(receivers=1), local=f"10.0.7.{i + 1}"))
        r.start(0.0)
        r.receive_datagram(_data(1, 0.29).encode(), (SENDER, PORT), 0.3)
        waits.append(r.timer_at("ack") - 0.3)
    if on:
        assert all(ACK_DELAY * 0.5 - 1e-9 <= w <= ACK_DELAY * 1.5 + 1e-9 for w in waits)
        assert max(waits) - min(waits) > 0.6 * ACK_DELAY
    else:
        assert waits == pytest.approx([ACK_DELAY] * 20)


@pytest.mark.parametrize("on", [True, False])
def test_initial_window_sends_ten_packets_once_every_child_said_hello(on):
    s = _started(composed(PaperSender, initial_window=on))
    sent = [m.seq for _d, m in out(s) if isinstance(m, MtcpData)]
    assert sent == (list(range(1, 11)) if on else [1])


@pytest.mark.parametrize("on", [True, False])
def test_reno_window_halves_on_the_first_nack_of_a_new_loss(on):
    """The paper (2): an independent loss repaired on its first NACK leaves cwnd alone."""
    s = _started(composed(PaperSender, reno_window=on, recovery_hold=on))
    s.cwnd = s.ssthresh = 10.0
    out(s)
    feed(s, _report(A, 1), 0.05, src=A)
    feed(s, _report(B, 1), 0.05, src=B)
    out(s)
    s.children[node_id(A)].rtt.sample(0.01)
    cw = s.cwnd
    feed(s, MtcpNack(session_id=9, cum_ack=1, node_id=node_id(A), missing=(3,)), 0.1, src=A)
    assert s.cwnd == (pytest.approx(cw / 2) if on else cw)
    assert s.cwnd_cuts == (1 if on else 0)


@pytest.mark.parametrize("on", [True, False])
def test_nack_holdoff_keeps_a_receiver_behind_a_fold_from_nacking_with_every_ack(on):
    r = composed(PaperReceiver, nack_holdoff=on)(cfg(MtcpParams(assisted=True), local=A))
    r.start(0.0)
    out(r)
    for seq in (1, 3, 4, 5):  # hole 2, three packets above it: NACKed
        r.receive_datagram(_data(seq, 0.3).encode(), (SENDER, PORT), 0.3)
    run_timers(r, 0.35)
    first = [m.missing for _d, m in out(r) if isinstance(m, MtcpNack)]
    assert set(first) == {(2,)} and (len(first) == 1 or not on)  # without: one with every ACK
    for seq in (6, 7):  # more data well within the repair's holdoff (0.25 s)
        r.receive_datagram(_data(seq, 0.36).encode(), (SENDER, PORT), 0.36)
    run_timers(r, 0.4)
    again = [m.missing for _d, m in out(r) if isinstance(m, MtcpNack)]
    assert (again == []) if on else (again and set(again) == {(2,)})
