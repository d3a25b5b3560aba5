"""TFMCC receiver rules, one test each, with a fake clock and scripted packets."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import drain, feed, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.tfmcc import (
    RULES,
    TfmccParams,
    TfmccReceiver,
    bias,
    feedback_delay,
    feedback_time,
)
from p4mcc.hosts.tfrc import tcp_rate, tfrc_weights
from p4mcc.hosts.wire import TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags

ME = "10.0.0.2"
U32 = 0xFFFFFFFF
S = 1000
OWD = 0.1  # one-way delay sender -> receiver in these scripts (clocks in sync)


def without(*names: str) -> tuple[str, ...]:
    """The default profile less ``names``."""
    return tuple(n for n in RULES.profiles["default"] if n not in names)


def make(*, rules: tuple[str, ...] | None = None, **kw) -> TfmccReceiver:
    kw.setdefault("packet_size", S)
    params = TfmccParams(**kw)
    r = registry.get("tfmcc").receiver(
        registry.SessionConfig(1, "239.1.1.1", 5000, "10.0.0.1", ME, params, seed=3, rules=rules))
    r.start(0.0)
    drain(r)
    return r


def data(seq: int, now: float, *, clr: bool | None = False, slowstart: bool = False,
         supp: int = U32, rnd: int = 0, echo: TfmccReport | None = None,
         echo_offset: float = 0.0, owd: float = OWD, max_rtt: float = 0.5) -> TfmccData:
    return TfmccData(
        session_id=1, seq=seq, timestamp=wire.ts_us(now - owd), supp_rate=supp,
        max_rtt=int(max_rtt * 1e6), clr_id=0 if clr is None else node_id(ME) if clr else node_id("10.0.9.9"),
        echo_rcvr_id=echo.rcvr_id if echo else 0, echo_ts=echo.timestamp if echo else 0,
        echo_offset=int(echo_offset * 1e6), fb_round=rnd,
        dflags=TfmccDataFlags.SLOWSTART if slowstart else 0, payload=bytes(S - 48))


def reports(out) -> list[TfmccReport]:
    return [m for m in out.messages() if isinstance(m, TfmccReport)]


def stream(r: TfmccReceiver, seqs, t0: float, dt: float, **kw):
    """Feed packets ``seqs``, packet n sent at t0 + n·dt (a constant rate); return reports."""
    got = []
    seqs = list(seqs)
    for seq in seqs:
        t = t0 + (seq - seqs[0]) * dt
        got += reports(run_until(r, t))
        got += reports(feed(r, data(seq, t, **kw), t))
    return got


def test_rtt_starts_at_500ms_and_reports_say_it_is_not_measured() -> None:
    r = make()
    (rep,) = reports(feed(r, data(0, 0.0, clr=True), 0.0))
    assert r.rtt == 0.5 and not r.have_rtt
    assert rep.rtt == 500_000 and not rep.rflags & TfmccReportFlags.HAVE_RTT


def test_clr_reports_immediately_once_per_rtt_with_is_clr_flag() -> None:
    r = make()
    got = stream(r, range(20), 0.0, 0.1, clr=True)
    assert [round(x.timestamp / 1e6, 1) for x in got] == [0.0, 0.5, 1.0, 1.5]
    assert all(x.rflags & TfmccReportFlags.IS_CLR for x in got)


def _measured(r: TfmccReceiver, inst: float) -> None:
    """Make ``r`` (as CLR) report at t=10 and get that report echoed back."""
    (rep,) = reports(feed(r, data(100, 10.0, clr=True), 10.0))
    hold = 0.05  # the sender held the report this long before echoing it
    feed(r, data(101, 10.0 + inst + hold, clr=True, echo=rep, echo_offset=hold), 10.0 + inst + hold)


def test_first_rtt_measurement_replaces_the_initial_value() -> None:
    r = make()
    _measured(r, 0.2)
    assert r.have_rtt and r.rtt == pytest.approx(0.2, abs=1e-5)


def test_clr_smooths_rtt_with_weight_0_05() -> None:
    r = make()
    _measured(r, 0.2)
    (rep,) = reports(feed(r, data(102, 11.0, clr=True), 11.0))
    feed(r, data(103, 11.3, clr=True, echo=rep, owd=0.2), 11.3)  # inst = 0.3
    assert r.rtt == pytest.approx(0.05 * 0.3 + 0.95 * 0.2, abs=1e-4)


def _clr_measures(r: TfmccReceiver, first: float, then: float) -> None:
    """``r`` as CLR measures ``first``, then ``then`` (both echoes of its own reports)."""
    _measured(r, first)
    (rep,) = reports(feed(r, data(102, 12.5, clr=True), 12.5))
    feed(r, data(103, 12.5 + then, clr=True, echo=rep, owd=OWD + then - first), 12.5 + then)


def test_rtt_step_a_measured_rtt_below_half_the_estimate_replaces_it() -> None:
    # a squeezed link's queue drained: the CLR's estimate of 1 s against a
    # measured 0.15 s; with the paper's weight it would stay at 0.96 s
    with_step = tuple(dict.fromkeys((*RULES.profiles["default"], "rtt_step")))
    r = make(rules=with_step)
    _clr_measures(r, 1.0, 0.15)
    assert r.rtt == pytest.approx(0.15, abs=1e-4)
    r = make(rules=without("rtt_step"))
    _clr_measures(r, 1.0, 0.15)
    assert r.rtt == pytest.approx(0.05 * 0.15 + 0.95 * 1.0, abs=1e-4)


def test_rtt_step_a_measured_rtt_above_the_estimate_is_smoothed_as_the_paper_says() -> None:
    # only a fall steps: a queue filling is followed at the CLR's weight,
    # however far above the estimate the measurement is
    with_step = tuple(dict.fromkeys((*RULES.profiles["default"], "rtt_step")))
    r = make(rules=with_step)
    _clr_measures(r, 0.2, 0.9)
    assert r.rtt == pytest.approx(0.05 * 0.9 + 0.95 * 0.2, abs=1e-4)
    r = make(rules=with_step)
    _clr_measures(r, 0.2, 0.11)  # within a factor of 2: smoothed
    assert r.rtt == pytest.approx(0.05 * 0.11 + 0.95 * 0.2, abs=1e-4)


def test_other_receivers_smooth_rtt_with_weight_0_5() -> None:
    r = make()
    _measured(r, 0.2)
    # A non-CLR receiver reports from its feedback timer (slowstart, no loss).
    feed(r, data(102, 11.0, slowstart=True, rnd=1), 11.0)
    feed(r, data(103, 11.01, slowstart=True, rnd=1), 11.01)
    out = run_until(r, r.timer_at("feedback"))
    (rep,) = reports(out)
    t = rep.timestamp / 1e6
    feed(r, data(104, t + 0.3, slowstart=True, rnd=1, echo=rep, owd=0.2), t + 0.3)
    assert r.rtt == pytest.approx(0.5 * 0.3 + 0.5 * 0.2, abs=1e-4)


def test_an_echo_counts_as_one_measurement_only() -> None:
    r = make()
    (rep,) = reports(feed(r, data(100, 10.0, clr=True), 10.0))
    feed(r, data(101, 10.2, clr=True, echo=rep), 10.2)
    assert r.rtt == pytest.approx(0.2, abs=1e-5)
    # The sender echoes the same report again 0.3 s later, holding time included.
    feed(r, data(102, 10.5, clr=True, echo=rep, echo_offset=0.3), 10.5)
    assert r.rtt == pytest.approx(0.2, abs=1e-5)


def test_one_way_delay_adjusts_rtt_between_measurements() -> None:
    r = make()
    _measured(r, 0.2)
    before = r.rtt
    for i in range(200):  # the forward path grows 150 ms slower
        feed(r, data(102 + i, 11 + i * 0.01, clr=True, owd=OWD + 0.15), 11 + i * 0.01)
    # True RTT is now 0.35 s; the CLR's adjustments move ~20 RTTs' worth slowly.
    assert r.rtt > before + 0.03
    assert r.rtt <= 0.35 + 1e-6


def test_losses_within_one_rtt_form_one_loss_event() -> None:
    r = make()
    # three losses within 0.5 s (the initial RTT), each settled by three later
    # packets a quarter RTT on (reorder_window)
    seqs = [0, 1, 2, 4, 6, 8, 9, 10, 11]
    stream(r, seqs, 0.0, 0.05)
    assert len(r.history.events) == 1 and r.history.lost == 3


def test_first_loss_interval_from_the_receive_rate() -> None:
    # RFC 5348 6.3.1: the first loss initialises the history so that the
    # calculated rate is the rate received (X_recv), not half the sending rate.
    r = make()
    stream(r, [i for i in range(31)], 0.0, 0.01)  # up to the packet before the loss
    recv = r.receive_rate_bps()
    stream(r, [32, 33, 34], 0.32, 0.01)  # packet 31 lost (at the third packet past it)
    assert r.history.has_loss
    assert r.calculated_rate_bps() == pytest.approx(recv, rel=0.1)
    assert r.calculated_rate_bps() > 0.7 * r.send_rate_bps()
    # Without ``first_interval_recv_rate``: half the sending rate (paper app. B).
    paper = make(rules=without("first_interval_recv_rate"))
    stream(paper, [i for i in range(31)] + [32, 33, 34], 0.0, 0.01)
    assert paper.calculated_rate_bps() == pytest.approx(0.5 * paper.send_rate_bps(), rel=0.1)


def test_calculated_rate_is_the_equation_for_measured_p_and_rtt() -> None:
    r = make()
    stream(r, [i for i in range(400) if i % 50 != 49], 0.0, 0.01)
    p = r.loss_event_rate
    assert p > 0
    assert r.calculated_rate_bps() == pytest.approx(8 * tcp_rate(S, r.rtt, p))


def test_slowstart_report_carries_the_receive_rate() -> None:
    r = make()
    got = stream(r, range(500), 0.0, 0.01, slowstart=True)  # 800 kbit/s, no loss
    rep = got[0]
    assert rep.rflags & TfmccReportFlags.SLOWSTART and not rep.rflags & TfmccReportFlags.HAVE_LOSS
    assert rep.rate == rep.recv_rate
    assert rep.recv_rate == pytest.approx(800_000, rel=0.05)


def test_report_echoes_last_data_timestamp_and_holding_time() -> None:
    r = make()
    stream(r, range(3), 0.0, 0.01, slowstart=True)
    out = run_until(r, 5.0)
    (rep,) = reports(out)
    assert rep.echo_ts == wire.ts_us(0.02 - OWD)
    assert rep.echo_offset == pytest.approx((rep.timestamp / 1e6 - 0.02) * 1e6, abs=2)


def test_feedback_timer_bias_modified_offset() -> None:
    n = TfmccParams().fb_receivers
    assert bias(0.95) == 1.0 and bias(0.3) == 0.0
    assert bias(0.7) == pytest.approx(0.5)
    T = 2.0
    # x = 1: gamma·r'·T + (1-gamma)·T;  x = 1/N: only the offset remains.
    assert feedback_time(n, T, 0.7, 1.0) == pytest.approx(0.25 * 0.5 * 2 + 0.75 * 2)
    assert feedback_time(n, T, 0.7, 1e-4) == pytest.approx(0.25 * 0.5 * 2)
    assert feedback_time(n, T, 0.3, 1e-9) == 0.0  # never negative
    assert feedback_time(n, T, 0.3, 0.5) < feedback_time(n, T, 0.95, 0.5)


def test_feedback_delay_from_max_rtt_and_low_rate_rule() -> None:
    assert feedback_delay(S, 0.1, 10e6) == pytest.approx(0.4)
    # (c+1)·s/R with c = 4: 5 packets at 64 kbit/s take 0.625 s > max RTT.
    assert feedback_delay(S, 0.1, 64_000) == pytest.approx(4 * 5 * 8000 / 64_000)


def test_feedback_timer_within_T_of_the_round_start() -> None:
    r = make()
    stream(r, range(3), 0.0, 0.01, slowstart=True, rnd=5)
    t = r.timer_at("feedback")
    assert t is not None and 0.0 < t <= 0.02 + feedback_delay(S, 0.5, r.send_rate_bps())


def _armed_receiver() -> TfmccReceiver:
    r = make()
    stream(r, range(50), 0.0, 0.01, slowstart=True)  # receive rate 800 kbit/s
    assert r.timer_pending
    return r


def test_echoed_feedback_within_theta_cancels_the_timer() -> None:
    r = _armed_receiver()
    # Someone reported 850 kbit/s: ours (800 k) is within 10% of it -> cancel.
    feed(r, data(50, 0.5, slowstart=True, supp=850_000), 0.5)
    assert not r.timer_pending
    assert reports(run_until(r, 10.0)) == []


def test_echoed_feedback_far_above_our_rate_does_not_cancel() -> None:
    r = _armed_receiver()
    feed(r, data(50, 0.5, slowstart=True, supp=1_000_000), 0.5)
    assert r.timer_pending
    assert len(reports(run_until(r, 10.0))) == 1


def test_a_new_round_replaces_the_old_timer() -> None:
    r = _armed_receiver()
    old = r.timer_at("feedback")
    feed(r, data(50, 0.5, slowstart=True, rnd=1), 0.5)
    assert r.fb_round == 1 and r.timer_at("feedback") != old


def test_leaving_receiver_tells_the_sender() -> None:
    r = make()
    stream(r, range(3), 0.0, 0.01)
    r.close(1.0)
    out = drain(r)
    (rep,) = reports(out)
    assert rep.rflags & TfmccReportFlags.LEAVING
    assert out.leaves() == ["239.1.1.1"]
    assert reports(feed(r, data(10, 1.1, clr=True), 1.1)) == []


def test_malformed_and_foreign_datagrams_are_counted_not_raised() -> None:
    r = make()
    r.receive_datagram(b"\x00garbage", ("1.2.3.4", 1), 0.0)
    r.receive_datagram(data(0, 0.0).encode()[:30], ("1.2.3.4", 1), 0.0)
    other = TfmccData(session_id=99, seq=0, payload=b"")
    r.receive_datagram(other.encode(), ("1.2.3.4", 1), 0.0)
    assert r.malformed == 2 and r.ignored == 1 and r.packets == 0


def test_first_rtt_regroups_losses_aggregated_with_the_initial_rtt() -> None:
    r = make()
    seqs = [i for i in range(100) if i % 20 != 19]  # a loss every 0.2 s at 100 pkt/s
    stream(r, seqs, 0.0, 0.01)
    # Losses at 0.19..0.79 s: the 0.5 s RTT merges them into one event per 0.5 s (paper 2.3).
    assert len(r.history.events) == 2
    (rep,) = reports(feed(r, data(100, 1.0, clr=True), 1.0))
    feed(r, data(101, 1.1, clr=True, echo=rep), 1.1)  # RTT 0.1 s measured
    stream(r, [102, 103], 1.12, 0.01)  # the third packet past 99 settles its loss
    assert len(r.history.events) == 5  # 0.19, 0.39, 0.59, 0.79, 0.99: 0.2 s > one RTT apart


def test_loss_free_receivers_report_while_there_is_no_clr() -> None:
    # Out of slowstart a loss-free receiver stays silent while a CLR exists;
    # once the data says there is none (it left or timed out), it reports so
    # the sender can name a new CLR and keep its rounds going.
    quiet = make()
    assert stream(quiet, range(400), 0.0, 0.01, rnd=1) == []
    r = make()
    got = stream(r, range(400), 0.0, 0.01, clr=None, rnd=1)
    assert got and not got[0].rflags & TfmccReportFlags.HAVE_LOSS
    assert got[0].recv_rate > 0


def test_sequence_jump_beyond_what_the_sender_can_send_is_dropped() -> None:
    r = make()
    stream(r, range(10), 0.0, 0.01)
    feed(r, data(10 + 3_000_000_000, 0.1), 0.1)  # 3e9 packets in 10 ms
    assert r.malformed == 1 and not r.history.has_loss
    stream(r, range(10, 20), 0.1, 0.01)
    assert not r.history.has_loss  # the real packets still count as in order


def test_history_discounting_is_on_and_bounded_by_rfc5348() -> None:
    # RFC 5348 5.5: after a loss-free stretch longer than twice the average
    # interval, older intervals are discounted by DF = max(0.5, 2·avg/I_0):
    # the calculated rate climbs faster than the plain average allows (the
    # paper's 2.2 "roughly 0.3 packets per RTT"), but never faster than with
    # DF = 0.5.
    lossy = [i for i in range(200) if i % 20 != 19]  # one loss per second at 20 pkt/s

    def p_after_quiet(**kw) -> float:
        r = make(**kw)
        stream(r, lossy + list(range(200, 600)), 0.0, 0.05)  # then 400 loss-free packets
        return r.loss_event_rate

    plain, default = p_after_quiet(rules=without("history_discounting")), p_after_quiet()
    assert default < plain
    r = make()
    stream(r, lossy + list(range(200, 600)), 0.0, 0.05)
    closed = list(r.history.intervals)
    w = tfrc_weights(8)
    i0 = r.history.open_interval()
    floor_avg = (i0 + 0.5 * sum(wi * x for wi, x in zip(w[1:], closed))) / (1 + 0.5 * sum(w[1:len(closed) + 1]))
    assert default >= 1 / floor_avg - 1e-12


def test_slowstart_receive_rate_is_measured_over_the_last_rtt() -> None:
    # In slowstart the sender targets d·X_recv; a receive rate averaged over
    # four RTTs lags a rate that doubles per RTT so far that d·X_recv stays
    # near the current rate.  X_recv over the last RTT (RFC 5348: the rate
    # since the last feedback, one RTT apart) sees the doubling.
    r = make()
    stream(r, range(200), 0.0, 0.01, slowstart=True)  # 800 kbit/s for 2 s
    stream(r, range(200, 300), 2.0, 0.005, slowstart=True)  # 1.6 Mbit/s for the last RTT (0.5 s)
    assert r.receive_rate_bps() == pytest.approx(1_600_000, rel=0.05)
    old = make(rules=without("slowstart_recv_rate"))
    stream(old, range(200), 0.0, 0.01, slowstart=True)
    stream(old, range(200, 300), 2.0, 0.005, slowstart=True)
    assert old.receive_rate_bps() < 1_100_000


def test_first_loss_below_a_tcp_initial_window_does_not_end_slowstart() -> None:
    # A loss while the sender sends fewer packets per RTT than a TCP flow's
    # initial window (10, RFC 6928) is not the session's own overshoot: it is
    # forgotten with the further losses of the same overflow (within two
    # round trips of it), and slowstart goes on.  A later overflow below
    # the window is forgotten too.
    def first_two() -> TfmccReceiver:
        r = make()
        got = stream(r, [0, 1, 2, 4, 5, 6], 0.0, 0.1, slowstart=True, clr=True)  # 10 pkt/s, 5 per RTT
        assert not r.history.has_loss and r.forgiven_losses == 1
        assert not got[-1].rflags & TfmccReportFlags.HAVE_LOSS
        # 8 lost, settled 0.5 s after the first (at the third packet past it): the same overflow
        stream(r, [7, 9, 10, 11], 0.7, 0.1, slowstart=True, clr=True)
        assert not r.history.has_loss and r.forgiven_losses == 1
        stream(r, [12, 13, 14, 16, 17, 18], 1.2, 0.1, slowstart=True, clr=True)  # 1.2 s after the first
        return r

    every = first_two()
    assert not every.history.has_loss and every.forgiven_losses == 2
    # At 100 packets per second (50 per RTT) the first loss ends slowstart.
    fast = make()
    stream(fast, [0, 1, 2, 4, 5, 6], 0.0, 0.01, slowstart=True)
    assert fast.history.has_loss and fast.forgiven_losses == 0
    # Without the rule every first loss counts (paper 2.6).
    paper = make(rules=without("forgive_competitor_overflow"))
    stream(paper, [0, 1, 2, 4, 5, 6], 0.0, 0.1, slowstart=True)
    assert paper.history.has_loss


def test_a_loss_event_spans_the_round_trip_the_revealing_packet_measures() -> None:
    # The forward path grows 0.3 s slower (a queue filling): the round trip
    # the packets measure is 0.5 s at once, the smoothed RTT (weight 0.05 per
    # RTT of packets at the CLR) is still near 0.25 s.  Two losses 0.35 s
    # apart are one event when it spans the current round trip (the default),
    # two with the smoothed RTT.
    def events(rules: tuple[str, ...] | None = None) -> tuple[int, float]:
        r = make(rules=rules)
        _measured(r, 0.2)
        seqs = [s for s in range(102, 260) if s not in (180, 215)]
        stream(r, seqs, 11.0, 0.01, clr=True, owd=OWD + 0.3)
        return len(r.history.events), r.rtt

    (current, smoothed_rtt), (smoothed, _) = events(), events(without("loss_event_current_rtt"))
    assert smoothed_rtt < 0.35  # the smoothed RTT lags the 0.5 s round trip
    assert (current, smoothed) == (1, 2)


def test_a_path_that_reorders_is_not_a_lossy_one() -> None:
    # RFC 5348 5.1 and RFC 8985 6.2: at 200 packets/s every 25th packet
    # arrives 4 packets (20 ms) late, inside a quarter of the 0.2 s RTT.  The
    # default counts the first, which shows the path reorders, and no other;
    # the paper's receiver counts each as lost.
    def after_reordering(rules: tuple[str, ...] | None = None) -> TfmccReceiver:
        r = make(rules=rules)
        _measured(r, 0.2)
        order = list(range(102, 400))
        for late in range(110, 390, 25):
            i = order.index(late)
            order.insert(i + 4, order.pop(i))
        t0, dt = 11.0, 0.005
        for i, seq in enumerate(order):
            now = t0 + i * dt
            feed(r, data(seq, now, clr=True, owd=OWD + now - (t0 + (seq - 102) * dt)), now)
        return r

    held, paper = after_reordering(), after_reordering(without("reorder_window"))
    assert held.history.lost == 1
    assert paper.history.lost == len(range(110, 390, 25)) and paper.history.has_loss


def test_an_outage_restarts_the_loss_history_instead_of_counting_an_event_per_rtt() -> None:
    # A receiver with 2 % loss at 50 packets/s, RTT 0.2 s, then nothing for
    # 9 s (its port pruned, a link down) while the sender went on.  Counted
    # per RTT (paper 2.3) the 450 lost packets are ~45 loss events and the
    # calculated rate falls to a third; as an outage the history starts
    # again and the rate it reports is not limited by the outage.
    def after_outage(rules: tuple[str, ...] | None = None) -> tuple[TfmccReceiver, float]:
        r = make(rules=rules)
        _measured(r, 0.2)
        seqs = [s for s in range(101, 1101) if s % 50 != 0]
        stream(r, seqs, 10.02, 0.02, clr=True)
        before = r.calculated_rate_bps()
        stream(r, range(1551, 1560), 10.02 + 1450 * 0.02, 0.02, clr=True)
        return r, before

    r, before = after_outage()
    assert r.outages == 1 and not r.history.has_loss
    assert r.history.lost == 0  # the outage's losses are not the new history's
    paper, before_p = after_outage(without("outage_restart"))
    assert not hasattr(paper, "outages") and paper.loss_event_rate > 3 * 0.02  # was 1 event per 50 packets
    assert paper.calculated_rate_bps() < 0.5 * before_p


def test_after_an_outage_the_receive_rate_is_measured_from_the_first_packet_back() -> None:
    """X_recv spans the time since the meter's first sample: measured across
    the gap it was a fraction of the rate packets arrive at again, and a CLR
    back from its switch's restart reported that and took the session down
    (7.1 s to recover on a drawn two-branch tree; 3.1 s with the rule)."""
    def rate_after(rules: tuple[str, ...] | None = None) -> float:
        r = make(rules=rules)
        _measured(r, 0.2)
        stream(r, range(101, 601), 10.02, 0.02, clr=True)  # 50 packets/s
        now = 10.02 + 950 * 0.02 + 8 * 0.02
        stream(r, range(1051, 1060), 10.02 + 950 * 0.02, 0.02, clr=True)  # back after 9 s
        return r.recv_meter.rate_bps(now) / (8 * S)

    assert 40 <= rate_after() <= 60
    assert rate_after(without("outage_restart")) < 25  # 9 packets over the meter's whole window


def test_a_few_losses_at_a_low_rate_are_losses_not_an_outage() -> None:
    # At 2 packets/s two packets lost in a row leave 1.5 s of silence: fewer
    # than OutageRestart.OUTAGE_PACKETS (8) in a row, so they are losses (a loss event).
    r = make()
    _measured(r, 0.2)
    stream(r, [s for s in range(101, 140) if s not in (120, 121)], 10.5, 0.5, clr=True)
    assert r.outages == 0 and r.history.has_loss and r.history.lost == 2
