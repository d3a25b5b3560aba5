"""The TCP throughput equation and the loss-interval history against published values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4mcc.hosts.tcp_rules import REORDER_MULT_MAX, REORDER_PERSIST, REORDER_WINDOW_RTTS
from p4mcc.hosts.tfrc import (
    HOLD_MAX,
    NDUPACK,
    LossHistory,
    ReorderHold,
    loss_events_per_rtt,
    loss_rate_full,
    loss_rate_simple,
    tcp_rate,
    tcp_rate_simple,
    tcp_rate_webrc_pps,
    tfrc_weights,
)


def test_webrc_paper_value_60_1_packets_per_second() -> None:
    # WEBRC 5.1.1: p = 0.0089 and t_RTT = 0.2 s in eq. (1) give 60.1 packets/s,
    # i.e. 492 kbit/s with 1024-byte packets.
    pps = tcp_rate_webrc_pps(0.2, 0.0089)
    assert pps == pytest.approx(60.1, abs=0.05)
    assert pps * 1024 * 8 / 1000 == pytest.approx(492, abs=1)


def test_full_equation_with_rto_4rtt_equals_webrc_form() -> None:
    # WEBRC eq. 1 is the full equation with t_RTO = 4 t_RTT and b = 1.
    for p in (1e-4, 0.01, 0.05, 0.2):
        assert tcp_rate(1.0, 0.1, p) == pytest.approx(tcp_rate_webrc_pps(0.1, p), rel=1e-12)


def test_tfmcc_paper_fair_rate_10_percent_loss_50ms() -> None:
    # TFMCC section 3: 10% loss and 50 ms RTT give a fair rate "around 300 KBit/s"
    # (1000-byte packets).
    kbps = tcp_rate(1000, 0.05, 0.10) * 8 / 1000
    assert 270 <= kbps <= 330


def test_explicit_rto_changes_the_rate() -> None:
    assert tcp_rate(1000, 0.1, 0.05, t_rto=1.0) < tcp_rate(1000, 0.1, 0.05)


def test_simplified_forms_and_inverses() -> None:
    # Mathis: T = sqrt(3/2) s / (R sqrt(p)); the full form is lower (timeouts).
    assert tcp_rate_simple(1000, 0.1, 0.01) == pytest.approx(math.sqrt(1.5) * 1000 / (0.1 * 0.1))
    assert tcp_rate(1000, 0.1, 0.01) < tcp_rate_simple(1000, 0.1, 0.01)
    assert loss_rate_simple(1000, 0.1, tcp_rate_simple(1000, 0.1, 0.02)) == pytest.approx(0.02)
    assert loss_rate_full(1000, 0.1, tcp_rate(1000, 0.1, 0.03)) == pytest.approx(0.03, rel=1e-6)


def test_no_loss_means_no_limit() -> None:
    assert math.isinf(tcp_rate(1000, 0.1, 0.0))
    with pytest.raises(ValueError):
        tcp_rate(1000, 0.0, 0.1)
    with pytest.raises(ValueError):
        tcp_rate(1000, 0.1, 1.5)


def test_loss_events_per_rtt_is_bounded() -> None:
    # TFMCC appendix A: a TCP flow sees well under one loss event per RTT at any p,
    # so per-RTT aggregation with a too-high RTT can only matter briefly.
    peak = max(loss_events_per_rtt(10 ** (-k / 50)) for k in range(0, 250))
    assert 0.1 < peak < 0.2


def test_weights_match_the_paper() -> None:
    assert [w * 5 for w in tfrc_weights(8)] == pytest.approx([5, 5, 5, 5, 4, 3, 2, 1])
    with pytest.raises(ValueError):
        tfrc_weights(7)


def _history_with_intervals(intervals: list[int], open_len: int, n: int = 8, **kw) -> LossHistory:
    """One lost packet every ``intervals[i]`` packets (oldest first), then ``open_len``."""
    h = LossHistory(n, **kw)
    lost: set[int] = set()
    seq = 0
    for gap in intervals:
        seq += gap
        lost.add(seq)
    total = seq + open_len
    for s in range(total):
        if s not in lost:
            h.on_packet(s, s * 1.0, rtt=0.01)  # 1 s apart: every loss its own event
    return h


def test_loss_interval_average_uses_weights() -> None:
    h = _history_with_intervals([100, 100, 100, 100, 100, 100, 100, 100, 100], open_len=1)
    assert h.average_interval() == pytest.approx(100)
    assert h.loss_event_rate() == pytest.approx(0.01)


def test_open_interval_counts_only_when_it_lowers_p() -> None:
    # A long loss-free stretch raises l_avg(k) above l_avg(k-1): p falls.
    short = _history_with_intervals([50] * 9, open_len=10)
    long = _history_with_intervals([50] * 9, open_len=400)
    assert short.loss_event_rate() == pytest.approx(1 / 50)
    assert long.loss_event_rate() < 1 / 50
    w = tfrc_weights(8)
    expect = (w[0] * 400 + sum(w[i] * 50 for i in range(1, 8))) / sum(w)
    assert long.average_interval() == pytest.approx(expect, rel=0.02)


def test_losses_within_one_rtt_are_one_event() -> None:
    h = LossHistory()
    h.on_packet(0, 0.0, rtt=0.5)
    assert h.on_packet(2, 0.10, rtt=0.5)  # seq 1 lost: new event
    assert not h.on_packet(4, 0.20, rtt=0.5)  # seq 3 lost 0.2 s later: same event
    assert h.on_packet(6, 1.00, rtt=0.5)  # seq 5 lost > RTT later: a new event
    assert len(h.events) == 2
    assert h.lost == 3


def test_history_discounting_lowers_p_after_a_long_quiet_stretch() -> None:
    plain = _history_with_intervals([20] * 9, open_len=200)
    disc = _history_with_intervals([20] * 9, open_len=200, discounting=True)
    assert disc.loss_event_rate() < plain.loss_event_rate()


def test_first_interval_can_be_set_and_rescaled() -> None:
    h = LossHistory()
    h.on_packet(0, 0.0, 0.1)
    h.on_packet(2, 0.1, 0.1)
    h.set_first_interval(400)
    h.on_packet(3, 0.2, 0.1)
    assert h.loss_event_rate() == pytest.approx(1 / 400)
    h.scale_first_interval(0.25)
    assert h.loss_event_rate() == pytest.approx(1 / 100)


def test_remodel_regroups_losses_with_the_measured_rtt() -> None:
    # Appendix A: losses 0.1 s apart are one event at the initial 0.5 s RTT,
    # five events once the RTT is known to be 50 ms.
    h = LossHistory()
    seq = 0
    for k in range(5):
        for _ in range(9):
            h.on_packet(seq, k * 0.1 + seq * 1e-4, rtt=0.5)
            seq += 1
        seq += 1  # one loss each 0.1 s
    h.on_packet(seq, 0.6, rtt=0.5)
    assert len(h.events) == 1
    h.set_first_interval(1000)
    h.remodel(0.05)
    assert len(h.events) == 5
    assert list(h.intervals) == [10.0, 10.0, 10.0, 10.0, 1000.0]


def test_remodel_spans_each_loss_by_the_round_trip_of_its_own_time() -> None:
    # The same five losses 0.1 s apart (0.05-0.5 s), revealed while a queue
    # held the one-way delay at 0.5 s; the first RTT measurement (50 ms)
    # comes after the queue drained, with a reverse delay of 0.02 s.  The
    # round trip at the losses' time was 0.02 + 0.5 = 0.52 s: one event, as
    # the live rule would have counted with that round trip, not five.
    def history(owd: float | None) -> LossHistory:
        h = LossHistory()
        seq = 0
        for k in range(5):
            for _ in range(9):
                h.on_packet(seq, k * 0.1 + seq * 1e-4, rtt=0.5, owd=owd)
                seq += 1
            seq += 1
        h.on_packet(seq, 0.6, rtt=0.5, owd=owd)
        return h

    h = history(0.5)
    h.remodel(0.05, reverse=0.02)
    assert len(h.events) == 1
    h.remodel(0.05)  # no reverse delay known: the measured RTT alone (appendix A)
    assert len(h.events) == 5
    h = history(None)  # no one-way delays kept: the same
    h.remodel(0.05, reverse=0.02)
    assert len(h.events) == 5


def test_a_huge_sequence_gap_costs_one_step_per_rtt_of_the_gap() -> None:
    # 2^31 lost packets over 2 s with a 0.1 s RTT: about 20 loss events,
    # found without visiting every lost packet.
    import time

    h = LossHistory()
    h.on_packet(0, 0.0, 0.1)
    t = time.perf_counter()
    h.on_packet(2**31, 2.0, 0.1)
    assert time.perf_counter() - t < 0.5
    assert h.lost == 2**31 - 1
    assert 19 <= len(h.intervals) + 1 <= 21 or len(h.events) == h.n + 1
    assert len(h.losses) == h.losses.maxlen


def test_one_gap_opens_an_event_per_rtt_and_regrouping_keeps_the_count() -> None:
    # 999 packets lost in one gap over 1 s at RTT 0.1 s: one event per RTT of
    # the gap (RFC 5348 5.2), visited without walking every lost packet.
    h = LossHistory(n=16)
    h.on_packet(0, 0.0, 0.1)
    h.on_packet(1000, 1.0, 0.1)
    assert len(h.events) == 10
    h.remodel(0.1)  # regrouping with the same RTT keeps the count (TFMCC appendix A)
    assert len(h.events) == 10


# -- the reordering hold (RFC 5348 5.1, RFC 8985 6.2) -------------------------

RTT = 0.1
GAP = 0.002  # 500 packets/s


def _arrive(h: LossHistory, order: list[int], t0: float = 0.0, dt: float = GAP) -> float:
    t = t0
    for seq in order:
        h.on_packet(seq, t, RTT)
        t += dt
    return t


def _reordering_seen() -> LossHistory:
    """A held history whose path has been seen to reorder: 1 arrived after 2."""
    h = LossHistory(hold_reordered=True)
    _arrive(h, [0, 2, 1])
    assert h.hold is not None and h.hold.reordering_seen and h.lost == 0
    return h


def test_before_reordering_is_seen_a_hole_is_lost_at_the_third_later_packet() -> None:
    # RFC 5348 5.1 (NDUPACK = 3) and RFC 8985 6.2 (no window before reordering is seen)
    h = LossHistory(hold_reordered=True)
    _arrive(h, [0, 1, 2, 4, 5], dt=0.0)
    assert h.lost == 0 and h.highest_seq == 2
    h.on_packet(6, 0.0, RTT)
    assert h.lost == 1 and h.highest_seq == 6 and h.has_loss


def test_the_first_reordering_costs_one_loss_and_later_ones_none() -> None:
    # 3 arrives 5 packets (10 ms) late: lost at the third packet past it, and
    # its arrival shows the path reorders; 80 arrives as late, inside RTT/4 = 25 ms
    # and more than an RTT on (without the hold, a second loss event).
    order = [0, 1, 2, 4, 5, 6, 7, 8, 3, *range(9, 80), 81, 82, 83, 84, 85, 80, *range(86, 120)]
    held = LossHistory(hold_reordered=True)
    _arrive(held, order)
    assert held.hold is not None and held.hold.reordering_seen
    assert (held.lost, len(held.events), held.highest_seq) == (1, 1, 119)
    plain = LossHistory()  # the paper's receiver: a gap is a loss at once
    _arrive(plain, order)
    assert (plain.lost, len(plain.events)) == (2, 2)


def test_a_hole_is_lost_after_ndupack_packets_and_a_quarter_rtt() -> None:
    h = _reordering_seen()
    t0 = 3 * GAP
    window_packets = int(REORDER_WINDOW_RTTS * RTT / GAP)
    assert window_packets > NDUPACK
    _arrive(h, [3, 4, 6, *range(7, 7 + window_packets)], t0=t0)  # 6 arrives at t0 + 2·GAP
    assert h.lost == 0 and h.highest_seq == 4
    due = t0 + 2 * GAP + REORDER_WINDOW_RTTS * RTT  # a quarter RTT after 6 arrived
    h.on_packet(7 + window_packets, due - 1e-6, RTT)
    assert h.lost == 0
    h.on_packet(8 + window_packets, due, RTT)  # 5 is lost
    assert h.lost == 1 and h.highest_seq == 8 + window_packets
    # the loss is placed between its neighbours' arrivals, as without the hold
    assert t0 + GAP < h.events[-1].time < t0 + 2 * GAP


def test_a_hole_waits_for_ndupack_packets_however_long_it_waits() -> None:
    h = _reordering_seen()
    _arrive(h, [3, 4, 6, 7], t0=1.0, dt=1.0)  # 6 and 7 are seconds past the hole
    assert h.lost == 0
    h.on_packet(8, 10.0, RTT)  # the third packet past it
    assert h.lost == 1


def test_a_packet_that_comes_after_its_hole_was_lost_shows_reordering() -> None:
    h = LossHistory(hold_reordered=True)
    t = _arrive(h, [0, 1, 2, *range(4, 30)])
    assert h.lost == 1 and h.hold is not None and not h.hold.reordering_seen
    h.on_packet(29, t, RTT)  # a duplicate is not reordering
    assert not h.hold.reordering_seen
    h.on_packet(3, t, RTT)
    assert h.lost == 1 and h.highest_seq == 29 and h.hold.reordering_seen


def test_the_window_widens_while_losses_turn_out_to_be_reordering() -> None:
    # RFC 8985 6.2: on a 40 ms path that holds a frame 16 ms (8 packets), a
    # quarter RTT (10 ms) is too short; each late arrival of a packet counted
    # lost widens the window by a quarter RTT, once per round trip, until the
    # frames held fit.  The first two count (window 0, then 10 ms), none after.
    rtt, order = 0.04, []
    for base in range(0, 1000, 50):  # one held frame every 100 ms
        run = list(range(base, base + 50))
        order += run[:1] + run[2:10] + run[1:2] + run[10:]
    h = LossHistory(hold_reordered=True)
    t = 0.0
    for seq in order:
        h.on_packet(seq, t, rtt)
        t += GAP
    assert h.lost == 2 and h.hold is not None and h.hold.mult == 2


def test_the_widened_window_falls_back_after_sixteen_loss_events() -> None:
    hold = ReorderHold()
    hold.late(0.0, RTT)  # the first: reordering seen
    for k in range(1, 2 * REORDER_MULT_MAX):
        hold.late(k * RTT, RTT)
        hold.late(k * RTT + RTT / 2, RTT)  # at most once per round trip
    assert hold.mult == REORDER_MULT_MAX  # at most the RTT
    for _ in range(REORDER_PERSIST - 1):
        hold.loss_event()
    assert hold.mult == REORDER_MULT_MAX
    hold.loss_event()
    assert hold.mult == 1 and hold.reordering_seen


def test_a_hold_keeps_at_most_hold_max_packets() -> None:
    # A long RTT's window at a high rate: the hold gives the hole up at
    # HOLD_MAX packets rather than keep every packet of the window.
    h = _reordering_seen()
    held = []
    for k, seq in enumerate(range(4, 4 + HOLD_MAX + 10)):  # 3 never arrives
        h.on_packet(seq, 1.0 + k * 1e-5, 60.0)
        assert h.hold is not None
        held.append(len(h.hold.held))
    assert max(held) == HOLD_MAX - 1 and h.lost == 1


@given(st.lists(st.integers(0, 60), min_size=1, max_size=120))
def test_holding_never_counts_more_losses_and_agrees_once_every_hole_is_settled(order) -> None:
    held, plain = LossHistory(hold_reordered=True), LossHistory()
    t = _arrive(held, order)
    _arrive(plain, order)
    assert held.lost <= plain.lost
    top = max(order)
    # NDUPACK packets past everything, a window later: every open hole is settled
    _arrive(held, list(range(top + 1, top + 1 + NDUPACK)), t0=t + RTT)
    _arrive(plain, list(range(top + 1, top + 1 + NDUPACK)), t0=t + RTT)
    assert held.highest_seq == plain.highest_seq == top + NDUPACK
    assert held.hold is not None and held.hold.held == []
    if order == sorted(set(order), key=order.index) and order == sorted(order):
        assert held.lost == plain.lost  # nothing reordered: the same losses
