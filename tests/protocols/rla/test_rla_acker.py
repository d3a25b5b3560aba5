"""RLA's acker clock and reliability window (pgmcc's decoupling), driven on the core with a fake clock."""

from __future__ import annotations

import math

import pytest
from acker_util import acker_moves, run_ahead
from rla_util import DEFAULT_RULES
from test_rla_rules import R, sack
from test_rla_rules import sender as make_sender
from win_util import feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.reliable import RELIABILITY_FLOOR
from p4mcc.hosts.rla.rules import AckerClock
from p4mcc.hosts.tcp_rules import DELAYED_ACK_TIMEOUT
from p4mcc.hosts.wire import Flags, RlaData

BASE = tuple(n for n in DEFAULT_RULES if n not in ("acker_clock", "reliability_window"))
NO_CLOCK = BASE
CLOCK = (*BASE, "acker_clock")
RELIABLE = (*BASE, "acker_clock", "reliability_window")


def sent(s) -> list[int]:
    return [m.seq for _d, m in out(s) if isinstance(m, RlaData)]


def two_paths(names, near_rtt=0.020, far_rtt=0.200, cwnd=10, **kw):
    """A near receiver elected acker (a signal per 100 packets) and a far one with no signal yet."""
    s = make_sender(n=2, names=names, initial_cwnd=cwnd, ssthresh=2, **kw)
    first = sent(s)
    near, far = (s.rcvrs[node_id(x)] for x in R[:2])
    near.rtt.sample(near_rtt)
    far.rtt.sample(far_rtt)
    near.interval_avg = 100.0
    near.last_signal_pkts = s.packets_sent
    s._choose_acker()
    assert s.acker == near.rid
    return s, near, far, first


@pytest.mark.parametrize("names, more", [(CLOCK, 10), (NO_CLOCK, 0)])
def test_the_ackers_sack_frees_the_window_the_far_receiver_still_owes(names, more):
    # pgmcc's clock: what the acker has is out of the pipe. The paper's window waits for the
    # far receiver, so it is sent once per the longest round trip.
    s, near, far, first = two_paths(names)
    assert first == list(range(1, 11))
    feed(s, sack(R[0], 10), 0.02, src=R[0])
    s._pump(0.02)
    assert len(sent(s)) == more


def test_the_window_grows_on_the_ackers_acknowledgements_alone():
    s, near, far, _ = two_paths(CLOCK)
    before = s.cwnd
    feed(s, sack(R[1], 10), 0.01, src=R[1])  # the far receiver alone: no growth
    assert s.cwnd == before
    feed(s, sack(R[0], 10), 0.02, src=R[0])
    assert s.cwnd > before


def _run_ahead(names, rounds=40, **kw):
    """The near acker acknowledges all it is sent every 20 ms; the far receiver (60 ms) stays
    behind, holding only the first packet (a slow path that never loses: never the acker)."""
    s, near, far, _ = two_paths(names, far_rtt=0.060, **kw)
    return s, run_ahead(s, lambda who, seq: sack(who, seq, adv=4096), R[0], R[1], lambda: s.min_last_ack,
                        rounds, after=s._pump)


def test_what_the_slowest_receiver_lacks_is_bounded_by_twice_the_rate_times_its_round_trip():
    s, worst = _run_ahead(RELIABLE)
    bound = s.reliability_window()
    assert bound == pytest.approx(max(RELIABILITY_FLOOR, 2 * s.cwnd * 0.060 / 0.020), abs=1)
    assert worst <= bound
    _s, unbounded = _run_ahead(CLOCK)  # without the rule: the receivers' buffers alone
    assert unbounded > 2 * bound


def test_the_send_buffer_bounds_the_reliability_window():
    s, worst = _run_ahead(RELIABLE, send_buffer=25)
    assert worst <= 25 and s.reliability_window() == 25


def test_a_new_acker_takes_the_old_rate_at_its_round_trip_and_sends_no_larger_burst():
    # The far receiver (200 ms) held the clock at a window of 50; the limiting branch moves to the
    # near one (20 ms), which holds everything sent. Its window is 50 x 20/200 = 5, and its next
    # SACK sends at most those 5, not the 50 the old window would let out at once.
    s, near, far, _ = two_paths(CLOCK, cwnd=50)
    s.acker = far.rid
    feed(s, sack(R[0], 50), 0.02, src=R[0])
    out(s)
    far.interval_avg, far.last_signal_pkts = 1e6, s.packets_sent
    near.interval_avg, near.last_signal_pkts = 100.0, s.packets_sent
    s._choose_acker()
    assert s.acker == near.rid and s.acker_handovers == 1
    assert s.cwnd == pytest.approx(50 * 0.020 / 0.200)
    feed(s, sack(R[0], 50), 0.03, src=R[0])
    s._pump(0.03)
    assert 0 < len(sent(s)) <= int(s.cwnd)


def _third_receiver(behind: bool):
    """Near (20 ms) is the acker, far (40 ms) as slow; a third receiver is first heard at 1 s holding
    nothing (``behind``) or all that was sent; with the last packet sent then, and a helper that
    keeps near and far talking."""
    s, near, far, _ = two_paths(CLOCK, far_rtt=0.040, cwnd=40)
    s.packets_sent += 2000
    far.interval_avg, far.last_signal_pkts = 400.0, s.packets_sent
    near.last_signal_pkts = s.packets_sent

    def talk(t: float) -> None:  # nobody is passed over for silence
        for who in R[:2]:
            feed(s, sack(who, 10), t, src=who)

    talk(0.99)
    upto = s.next_seq - 1
    feed(s, sack(R[2], 0 if behind else upto), 1.0, src=R[2])
    third = s.rcvrs[node_id(R[2])]
    third.rtt.sample(0.030)
    return s, near, third, talk, upto


def _signal(s, r, t: float, packets: int = 3) -> None:
    s.packets_sent += packets
    s._congestion(r, t, lost=[s.next_seq - 1])
    s._choose_acker()


def test_a_receiver_first_heard_mid_stream_is_not_elected_by_its_first_signal():
    # Its first interval closed at its admission, not at a signal (censored, RFC 5348 6.3.1): it
    # measures nothing. A second signal closes a real interval, and it is judged by that.
    s, near, joined, talk, _ = _third_receiver(behind=False)
    _signal(s, joined, 1.0, packets=0)
    assert joined.interval_avg == 1.0 and s.acker == near.rid and s.acker_handovers == 0
    assert s.equation_rate(joined) == math.inf
    talk(1.06)
    _signal(s, joined, 1.06)
    assert s.acker == joined.rid


def test_a_receiver_back_from_an_outage_is_not_elected_while_it_repairs_its_backlog():
    # Back from an outage, it lacks all that was sent: its losses until it holds them are of the backlog's
    # repairs, not of the stream. Electing it would put the window on the clock of a receiver
    # still repairing. Once it has caught up its signals are measured afresh.
    s, near, back, talk, upto = _third_receiver(behind=True)
    _signal(s, back, 1.0, packets=0)
    talk(1.06)
    _signal(s, back, 1.06)
    assert s.acker == near.rid and s.acker_handovers == 0
    talk(1.1)
    feed(s, sack(R[2], upto), 1.1, src=R[2])
    assert back.interval_avg is None
    _signal(s, back, 1.16)  # a censored first interval again
    talk(1.22)
    _signal(s, back, 1.22)
    assert s.acker == back.rid


def test_repairs_to_a_receiver_back_from_an_outage_take_the_window_and_leave_at_its_pace():
    # The acker holds all 30 packets; the far receiver, back from an outage, lacks them all. Every
    # SACK of its may pump, but its repairs are in flight until it acknowledges them (RFC 6675's pipe
    # counts retransmissions): one window of them, not one window per SACK.
    s, near, far, _ = two_paths(CLOCK, cwnd=10, total_packets=30)
    for t, cum in ((0.02, 10), (0.04, 20), (0.06, 30)):
        feed(s, sack(R[0], cum), t, src=R[0])
    out(s)
    for seq in range(1, 31):
        far.lost_pending.add(seq)
        far.lost_since[seq] = 0.0
        s.rexmit_queue.add(seq)
    repairs = []
    for t in (0.30, 0.31, 0.32):
        s._pump(t)
        repairs += [m.seq for _d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.RETRANSMIT]
    assert repairs == list(range(1, int(s.cwnd) + 1)) and int(s.cwnd) < 30


def _clock_moves_after_silence(names):
    """The near acker crashes at 0.1 s; the far receiver keeps acknowledging every 10 ms."""
    s, near, far, _ = two_paths(names, far_rtt=0.040)
    far.interval_avg, far.last_signal_pkts = 400.0, s.packets_sent
    return s, near, acker_moves(s, sack, R[0], R[1], lambda: s.acker == far.rid, after=s._pump)


def test_a_crashed_acker_hands_the_clock_over_within_a_few_round_trips():
    s, near, moved = _clock_moves_after_silence(CLOCK)
    assert moved is not None and s.silent_ackers >= 1
    # Silent for three of its round trips and a delayed ACK, seen at the next SACK (10 ms).
    assert moved - 0.1 <= AckerClock.ACKER_SILENCE_RTTS * near.srtt + DELAYED_ACK_TIMEOUT + 0.02
    assert moved - 0.1 <= 4 * near.srtt + DELAYED_ACK_TIMEOUT + 0.02


def test_a_crashed_acker_keeps_the_clock_without_the_rule():
    # worst_path_listening alone keeps the silent acker until drop_silent_receivers (2 s).
    _s, _near, moved = _clock_moves_after_silence((*BASE,))
    assert moved is None


def test_an_acker_that_leaves_gives_the_clock_to_the_next_lowest_rate():
    s, near, far, _ = two_paths(CLOCK)
    far.interval_avg, far.last_signal_pkts = 400.0, s.packets_sent
    feed(s, sack(R[1], 10), 0.2, src=R[1])
    out(s)
    s._forget([near.rid], since=0.2)
    assert s.acker == far.rid
    feed(s, sack(R[1], 10), 0.25, src=R[1])
    s._pump(0.25)
    assert len(sent(s)) <= int(s.cwnd)


def test_a_tcp_flow_on_another_branch_moves_the_clock_within_a_few_round_trips():
    # The acker's branch (20 ms) loses one packet in 100; a TCP flow starts on the far branch
    # (40 ms), whose receiver then signals once a round trip, a window of 20 packets apart.
    s, near, far, _ = two_paths(CLOCK, far_rtt=0.040, cwnd=20)
    s.packets_sent += 2000  # the far branch had no loss for a long while
    t, rounds = 1.0, 0
    while s.acker != far.rid and rounds < 20:
        rounds += 1
        t += far.srtt
        s.packets_sent += 20
        s._congestion(far, t, lost=None)
    assert s.acker == far.rid and rounds <= 4, rounds
