"""MTCP's acker election, acker clock and reliability window (pgmcc's decoupling), driven by
messages on the sans-I/O sender: child A near (20 ms RTD), child B far."""

from __future__ import annotations

import pytest
from acker_util import acker_moves, run_ahead
from mtcp_util import PaperSender, composed
from test_mtcp_heterogeneity import TREE2, A, B, ack
from win_util import cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.mtcp.constants import ACK_DELAY
from p4mcc.hosts.mtcp.rules import AckerElection
from p4mcc.hosts.reliable import RELIABILITY_FLOOR
from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate

ELECT = {"acker_election": True, "acker_clock": False, "reliability_window": False, "fold_acker": False}
CLOCK = {**ELECT, "acker_clock": True}
RELIABLE = {**CLOCK, "reliability_window": True}


def sent(s) -> list[int]:
    return [m.seq for _d, m in out(s) if isinstance(m, MtcpData) and not m.flags]


def two_paths(rules: dict, far: float = 0.2, send_buffer: int = 2888):
    """A elected acker (a loss event per 100 packets), B with no loss yet; 10 packets out."""
    s = composed(PaperSender, "default", **rules)(cfg(MtcpParams(tree=TREE2, send_buffer=send_buffer)))
    s.start(0.0)
    for c in (A, B):
        feed(s, ack(c, 0, cls=MtcpWindowUpdate), 0.0, src=c)
    first = sent(s)
    a, b = s.children[node_id(A)], s.children[node_id(B)]
    a.rtd.sample(0.02)
    b.rtd.sample(far)
    if "acker_election" in rules:
        s.events[a.nid] = (0.0, s.next_seq, 100.0)
        s._elect(0.0)
        assert s.acker == a.nid
    return s, a, b, first


def nack(node: str, cum: int, *missing: int) -> MtcpNack:
    return MtcpNack(session_id=9, cum_ack=cum, node_id=node_id(node), missing=missing)


@pytest.mark.parametrize("rules, cuts", [(ELECT, 0), ({}, 1)])
def test_a_new_loss_on_the_faster_path_does_not_cut(rules, cuts):
    s, a, b, _ = two_paths(rules)
    feed(s, ack(A, 10), 0.02, src=A)
    feed(s, nack(B, 3, 4), 0.2, src=B)
    assert s.cwnd_cuts == cuts


def test_the_ackers_new_loss_cuts():
    s, a, b, _ = two_paths(ELECT)
    feed(s, ack(B, 10), 0.2, src=B)
    feed(s, nack(A, 3, 4), 0.21, src=A)
    assert s.cwnd_cuts == 1 and s.acker == a.nid


@pytest.mark.parametrize("rules, cuts", [(ELECT, 0), ({}, 1)])
def test_a_timeout_of_what_only_another_child_lacks_does_not_cut(rules, cuts):
    s, a, b, _ = two_paths(rules)
    feed(s, ack(A, 10), 0.02, src=A)
    s.handle_timer(s.get_timer() or 5.0)
    while (t := s.get_timer()) is not None and t < 5.0 and not s.timeouts:
        s.handle_timer(t)
    assert s.timeouts > 0 and s.cwnd_cuts == cuts


@pytest.mark.parametrize("rules, frees", [(CLOCK, True), (ELECT, False)])
def test_the_ackers_ack_frees_the_window_the_far_child_still_owes(rules, frees):
    s, a, b, first = two_paths(rules)
    assert first == list(range(1, 11))
    feed(s, ack(A, 10), 0.02, src=A)
    n = len(sent(s))
    assert n >= 10 if frees else n == 0


def test_the_window_grows_on_the_ackers_acks_alone():
    s, a, b, _ = two_paths(CLOCK)
    before = s.cwnd
    feed(s, ack(B, 10), 0.01, src=B)
    assert s.cwnd == before
    feed(s, ack(A, 10), 0.02, src=A)
    assert s.cwnd > before


def _run_ahead(rules: dict, rounds: int = 40, send_buffer: int = 2888):
    """A acknowledges all it is sent every 20 ms; B (60 ms) holds only packet 1 and loses nothing."""
    s, a, b, _ = two_paths(rules, far=0.06, send_buffer=send_buffer)
    s.ssthresh = s.cwnd  # congestion avoidance: the window stays near 10
    return s, run_ahead(s, ack, A, B, lambda: b.sb.cum_ack, rounds)


def test_what_the_slowest_child_lacks_is_bounded_by_four_times_the_rate_times_its_round_trip():
    s, worst = _run_ahead(RELIABLE)
    bound = s.reliability_window()
    assert bound == pytest.approx(max(RELIABILITY_FLOOR, 4 * s.cwnd * 0.06 / 0.02), abs=1)
    assert worst <= bound
    _s, unbounded = _run_ahead(CLOCK)
    assert unbounded > 2 * bound


def test_the_send_buffer_bounds_the_reliability_window():
    s, worst = _run_ahead(RELIABLE, send_buffer=25)
    assert worst <= 25 and s.reliability_window() == 25


def test_a_new_acker_takes_the_old_rate_at_its_round_trip_and_sends_no_larger_burst():
    # B (200 ms) held the clock at 50 packets; the limiting branch moves to A (20 ms), which holds
    # all that was sent: its window is 50 x 20/200 = 5 and its next ACK sends at most those.
    s, a, b, _ = two_paths(CLOCK)
    s.acker, s.cwnd = b.nid, 50.0
    feed(s, ack(A, s.next_seq - 1), 0.02, src=A)
    out(s)
    s.events[b.nid] = (0.0, s.next_seq, 1e6)
    s.events[a.nid] = (0.0, s.next_seq, 100.0)
    s._elect(0.03)
    assert s.acker == a.nid and s.acker_handovers == 1
    assert s.cwnd == pytest.approx(5.0)
    feed(s, ack(A, s.next_seq - 1), 0.04, src=A)
    assert 0 < len(sent(s)) <= int(s.cwnd)


def _after_crash(rules: dict):
    """A stops at 0.1 s; B (40 ms) acknowledges all every 10 ms."""
    s, a, b, _ = two_paths(rules, far=0.04)
    s.events[b.nid] = (0.0, s.next_seq, 400.0)
    return s, a, acker_moves(s, ack, A, B, lambda: s.acker == b.nid)


def test_a_crashed_acker_hands_the_clock_over_within_a_few_round_trips():
    s, a, moved = _after_crash(CLOCK)
    assert moved is not None and s.silent_ackers == 1
    assert moved - 0.1 <= AckerElection.ACKER_QUIET_RTTS * a.rtd.srtt + 4 * a.rtd.rttvar + ACK_DELAY + 0.03


def test_a_removed_acker_gives_the_clock_to_the_next_lowest_rate():
    s, a, b, _ = two_paths(CLOCK)
    s.events[b.nid] = (0.0, s.next_seq, 400.0)
    s._remove_child(a, 0.3)
    assert s.acker == b.nid
    feed(s, ack(B, s.next_seq - 1), 0.35, src=B)
    assert len(sent(s)) <= int(s.cwnd)


def test_a_tcp_flow_on_another_branch_moves_the_clock_within_a_few_round_trips():
    # B's branch (40 ms), lossless so far, gets a TCP flow: a new hole NACKed once per round trip,
    # 20 packets apart; the clock moves to it within four of them.
    s, a, b, _ = two_paths(ELECT, far=0.04)
    s.next_seq += 2000
    t, rounds, hole = 1.0, 0, 0
    while s.acker != b.nid and rounds < 20:
        rounds += 1
        t += 0.041
        s.next_seq += 20
        hole = s.next_seq - 5
        b.nacks[hole] = 1
        s.now = a.last_heard = b.last_heard = t  # both talk; only B's branch loses
        s._nack_is_congestion(b, hole)
    assert s.acker == b.nid and rounds <= 4, rounds


@pytest.mark.parametrize("after", [True, False])
def test_the_ackers_nack_of_a_hole_another_child_reported_first_still_cuts(after):
    # Behind one bottleneck both lose packet 4; B's NACK comes first (spared, and its shared repair
    # reaches A too), so A's own NACK looks like a report of a repair. It still cuts, once.
    s, a, b, _ = two_paths(ELECT)
    for node in (A, B):  # both hold 5..10, not 4
        feed(s, MtcpAck(session_id=9, cum_ack=3, sack_bitmap=0b1111110, min_cwnd=0xFFFFFFFF, max_twnd=0,
                        adv_wnd=4096, node_id=node_id(node)), 0.02, src=node)
    feed(s, nack(B, 3, 4), 0.03, src=B)
    assert s.cwnd_cuts == 0 and s.spared_cuts == 1
    if after:
        feed(s, nack(A, 3, 4), 0.031, src=A)
        assert s.cwnd_cuts == 1
        feed(s, nack(A, 3, 4), 0.2, src=A)  # the same hole again: no second cut
        assert s.cwnd_cuts == 1
