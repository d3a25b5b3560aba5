"""TFMCC sender rules, one test each, with a fake clock and scripted reports."""

from __future__ import annotations

import pytest
from fakes import drain, feed, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.tfmcc import RULES, TfmccParams, TfmccSender
from p4mcc.hosts.tfmcc.rules import PoliceReports
from p4mcc.hosts.tfrc import loss_rate_full, tcp_rate
from p4mcc.hosts.wire import TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags

S = 1000
A, B, C = "10.0.1.1", "10.0.1.2", "10.0.1.3"
HAVE = TfmccReportFlags.HAVE_RTT | TfmccReportFlags.HAVE_LOSS


def without(*names: str) -> tuple[str, ...]:
    """The default profile less ``names``."""
    return tuple(n for n in RULES.profiles["default"] if n not in names)


#: Exact packet times, one packet per timer: the jitter and the pairs have their own tests.
EVEN = without("pacing_jitter", "pacing_pairs")


def make(*, rules: tuple[str, ...] = EVEN, **kw) -> TfmccSender:
    kw.setdefault("packet_size", S)
    s = registry.get("tfmcc").sender(
        registry.SessionConfig(1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", TfmccParams(**kw),
                               rules=rules))
    s.start(0.0)
    return s


def report(ip: str, rate: float, now: float, *, flags: int = HAVE, rtt: float = 0.1,
           p: float | None = None, recv: float = 0.0, echo_ts: int = 0, offset: float = 0.0) -> TfmccReport:
    if p is None:  # the loss event rate that gives ``rate``: a consistent report
        p = loss_rate_full(S, rtt, rate / 8) if flags & TfmccReportFlags.HAVE_LOSS else 0.0
    return TfmccReport(session_id=1, timestamp=wire.ts_us(now), rate=int(rate), rflags=flags,
                       rcvr_id=node_id(ip), recv_rate=int(recv), rtt=int(rtt * 1e6),
                       loss_rate=int(p * 0xFFFFFFFF), echo_ts=echo_ts, echo_offset=int(offset * 1e6))


def packets(out) -> list[TfmccData]:
    return [m for m in out.messages() if isinstance(m, TfmccData)]


def steady(rate: float = 800_000, ip: str = A, now: float = 1.0,
           rules: tuple[str, ...] = EVEN) -> TfmccSender:
    """A sender out of slowstart with ``ip`` as CLR at ``rate``."""
    s = make(initial_rate_bps=1e6, rules=rules)
    run_until(s, now)
    feed(s, report(ip, rate, now), now)
    assert not s.slowstart and s.rate == rate and s.clr == node_id(ip)
    run_until(s, s.get_timer())  # the next packet echoes that report
    return s


def test_starts_at_tfrc_initial_window_per_initial_rtt_and_paces() -> None:
    # RFC 5348 4.2: min(4s, max(2s, 4380 B)) per RTT; here 4000 B per 0.5 s.
    s = make()
    out = run_until(s, 0.5)
    assert s.rate == pytest.approx(8 * 4 * S / 0.5)
    times = [p.timestamp / 1e6 for p in packets(out)]
    assert times == pytest.approx([0.0, 0.125, 0.25, 0.375, 0.5])
    assert all(len(d.data) == S for d in out.datagrams)
    assert {d.dest for d in out.datagrams} == {("239.1.1.1", 5000)}
    assert make(packet_size=1460).rate == pytest.approx(8 * 4380 / 0.5)


def test_without_tfrc_initial_window_the_start_is_one_packet_per_initial_rtt() -> None:
    # RFC 4654 3.1: one packet per R_max, the 0.5 s placeholder.
    assert make(rules=without("tfrc_initial_window")).rate == pytest.approx(8 * S / 0.5)


def test_pacing_follows_the_current_rate() -> None:
    s = steady(800_000)
    out = run_until(s, 1.2)
    times = [p.timestamp / 1e6 for p in packets(out)]
    gaps = {round(b - a, 6) for a, b in zip(times, times[1:])}
    assert gaps == {0.01}


def test_lower_report_decreases_at_once_and_selects_the_clr() -> None:
    s = steady(800_000)
    feed(s, report(B, 300_000, 1.1), 1.1)
    assert s.rate == 300_000 and s.clr == node_id(B)
    (p,) = packets(run_until(s, s.get_timer()))
    assert p.clr_id == node_id(B) and p.dflags & TfmccDataFlags.CLR_CHANGED


def test_higher_report_from_non_clr_changes_nothing() -> None:
    s = steady(800_000)
    feed(s, report(B, 900_000, 1.1), 1.1)
    assert s.rate == 800_000 and s.clr == node_id(A)


def test_clr_rate_is_followed_at_once_without_a_clr_change() -> None:
    # Paper 2.2: the limit applies after a CLR change; the CLR's own loss
    # history already limits its increase.
    s = steady(400_000)
    feed(s, report(A, 600_000, 1.0), 1.0)
    run_until(s, s.get_timer())
    assert s.rate == 600_000


def test_increase_is_limited_after_the_clr_leaves() -> None:
    s = steady(400_000)
    feed(s, report(A, 400_000, 1.05, flags=HAVE | TfmccReportFlags.LEAVING), 1.05)
    feed(s, report(B, 2_000_000, 1.1), 1.1)  # the new CLR allows much more
    assert s.clr == node_id(B)
    r_max = s.r_max
    run_until(s, 2.1)
    slope = 8 * S / r_max**2  # bits/s per second, over about one second
    assert 400_000 + slope * 0.9 <= s.rate <= 400_000 + slope * 1.2
    assert s.rate < 2_000_000


def test_increase_is_limited_when_the_clrs_history_restarted() -> None:
    # A CLR back from an outage reports without loss (its history restarted):
    # its rate no longer limits, and the rate climbs as after a CLR change,
    # one packet per R_max per R_max (paper 2.2), not at once to the ceiling.
    s = steady(400_000)
    feed(s, report(A, 50_000, 1.05, flags=TfmccReportFlags.HAVE_RTT), 1.05)
    assert s.clr == node_id(A) and s.limited
    r_max = s.r_max
    run_until(s, 2.1)
    slope = 8 * S / r_max**2
    assert 400_000 + slope * 0.9 <= s.rate <= 400_000 + slope * 1.2


def test_clr_times_out_after_ten_silent_feedback_rounds() -> None:
    s = steady(400_000, rules=without("pacing_jitter", "pacing_pairs"))
    T = s.T()
    run_until(s, 1.0 + 9 * T)
    assert s.clr == node_id(A)
    run_until(s, 1.0 + 13 * (T + s.r_max))
    assert s.clr is None


def test_leaving_clr_is_dropped_at_once_and_the_rate_held() -> None:
    s = steady(400_000)
    feed(s, report(A, 400_000, 1.1, flags=HAVE | TfmccReportFlags.LEAVING), 1.1)
    assert s.clr is None
    out = run_until(s, 3.0)
    assert s.rate == 400_000  # no feedback, no increase (paper 2.2)
    assert packets(out)[-1].clr_id == 0  # receivers learn there is no CLR
    # A loss-free receiver's report names the new CLR; the limited increase resumes.
    feed(s, report(B, 390_000, 3.0, flags=TfmccReportFlags.HAVE_RTT, recv=390_000), 3.0)
    assert s.clr == node_id(B)
    run_until(s, 3.5)
    assert s.rate > 400_000


def test_echo_priority_new_clr_then_no_rtt_then_others_then_clr() -> None:
    s = steady(800_000)
    t = s.now
    feed(s, report("10.0.1.4", 850_000, t), t)  # other, with RTT (lowest of the three)
    feed(s, report(C, 900_000, t, flags=TfmccReportFlags.HAVE_LOSS), t)  # no RTT
    feed(s, report(B, 700_000, t, rtt=0.1), t)  # becomes the new CLR
    feed(s, report("10.0.1.5", 880_000, t, flags=TfmccReportFlags.HAVE_LOSS), t)  # no RTT, lower
    out = run_until(s, t + 0.06)
    echoed = [p.echo_rcvr_id for p in packets(out)]
    assert echoed[:5] == [node_id(x) for x in (B, "10.0.1.5", C, "10.0.1.4", B)]
    p0 = packets(out)[0]
    assert p0.echo_offset == pytest.approx((p0.timestamp / 1e6 - t) * 1e6, abs=2)


def _next_round(s: TfmccSender) -> TfmccData:
    """Run to the first packet of the next feedback round."""
    rnd = s.fb_round
    while True:
        for p in packets(run_until(s, s.get_timer())):
            if p.fb_round != rnd:
                return p


def test_suppression_rate_echoes_lowest_non_clr_report_of_the_round() -> None:
    s = steady(800_000)
    first = _next_round(s)
    assert first.supp_rate == 0xFFFFFFFF  # reset at the round's start
    t = s.now
    feed(s, report(A, 500_000, t), t)  # the CLR's reports do not suppress
    (p,) = packets(run_until(s, s.get_timer()))
    assert p.supp_rate == 0xFFFFFFFF
    feed(s, report(B, 900_000, t), t)
    feed(s, report(C, 950_000, t), t)
    (p,) = packets(run_until(s, s.get_timer()))
    assert p.supp_rate == 900_000
    feed(s, report(B, 950_000, t), t)  # reports at 950 k keep the lowest
    assert _next_round(s).supp_rate == 0xFFFFFFFF


def test_max_rtt_rises_at_once_and_decays_per_round() -> None:
    # Unechoed 0.8 s claims: the core's R_max, without the bound on claims it cannot check.
    s = steady(800_000, rules=tuple(n for n in EVEN if n != "unechoed_claims"))
    feed(s, report(B, 900_000, 1.1, rtt=0.8), 1.1)
    (p,) = packets(run_until(s, s.get_timer()))
    assert p.max_rtt == 800_000
    rounds = len(s.round_report_counts)
    while len(s.round_report_counts) < rounds + 3:  # this round, then two more
        run_until(s, s.get_timer())
        feed(s, report(A, 800_000, s.now, rtt=0.1), s.now)  # the CLR keeps reporting 0.1 s
    assert s.r_max == pytest.approx(0.8 * 0.9 * 0.9, rel=1e-6)


def test_sender_side_rtt_adjusts_reports_without_rtt() -> None:
    s = steady(800_000)
    out = run_until(s, 1.2)
    last = packets(out)[-1]
    sent = last.timestamp / 1e6
    # Receiver B has no RTT; it echoes our packet, held 20 ms, answering at 1.45.
    rep = report(B, 100_000, 1.45, flags=TfmccReportFlags.HAVE_LOSS, rtt=0.5, p=0.02,
                 echo_ts=last.timestamp, offset=0.02)
    feed(s, rep, 1.45)
    inst = 1.45 - sent - 0.02
    assert s.rate == pytest.approx(8 * tcp_rate(S, inst, 0.02), rel=1e-3)


def test_slowstart_targets_twice_the_minimum_receive_rate() -> None:
    s = make()
    ss = TfmccReportFlags.SLOWSTART | TfmccReportFlags.HAVE_RTT
    run_until(s, 1.0)
    feed(s, report(A, 100_000, 1.0, flags=ss, recv=100_000), 1.0)
    feed(s, report(B, 60_000, 1.0, flags=ss, recv=60_000), 1.0)
    assert s.slowstart and s.clr == node_id(B)
    while len(s.round_report_counts) < 1:
        run_until(s, s.get_timer())
    run_until(s, s.now + s.r_max + 0.5)
    assert s.rate == pytest.approx(120_000)


def test_slowstart_report_of_nothing_received_keeps_the_initial_rate() -> None:
    # RFC 5348 4.3 step 4: in slow-start X = max(min(2X, 2X_recv), W_init/R).
    # A loss-free report of 0 received is no loss; it must not take the
    # session to the 1-packet-per-64-s floor, where it stayed for 90 s on a
    # 1 Mbit/s, 20 ms dumbbell.
    s = make()
    start = s.rate
    run_until(s, 1.0)
    ss = TfmccReportFlags.SLOWSTART | TfmccReportFlags.HAVE_RTT
    feed(s, report(A, 0, 1.0, flags=ss, recv=0, rtt=0.5), 1.0)
    assert s.slowstart and s.rate == pytest.approx(start)
    # A short R_max does not lift the floor above the starting rate.
    feed(s, report(B, 0, 1.1, flags=ss, recv=0, rtt=0.05), 1.1)
    assert s.rate == pytest.approx(start)


def test_slowstart_round_target_keeps_the_initial_rate() -> None:
    # The paper's per-round slowstart (without ``slowstart_per_report``) sets
    # its target at the round's end from the least receive rate: the same floor.
    s = make(rules=without("slowstart_per_report"))
    start = s.rate
    run_until(s, 1.0)
    ss = TfmccReportFlags.SLOWSTART | TfmccReportFlags.HAVE_RTT
    feed(s, report(A, 0, 1.0, flags=ss, recv=0, rtt=0.5), 1.0)
    while len(s.round_report_counts) < 1:
        run_until(s, s.get_timer())
    run_until(s, s.now + s.r_max + 0.5)
    assert s.slowstart and s.ss_target == pytest.approx(start) and s.rate == pytest.approx(start)


def test_a_report_that_raises_the_rate_brings_the_next_packet_forward() -> None:
    # At the floor the next packet is a minute away; the CLR's next report
    # lifts the rate, and the packet leaves one packet-time at the new rate
    # after the last one, not at the old schedule (RFC 5348 4.6: s/X at the
    # current X).
    s = steady(800_000)
    t = s.now
    feed(s, report(A, 100, t), t)  # the CLR collapses: the floor, s/64 s
    assert s.rate == pytest.approx(s.p.min_rate_bps)
    sent = packets(run_until(s, s.get_timer()))[-1].timestamp / 1e6
    assert s.timer_at("send") > sent + 60.0
    feed(s, report(A, 200_000, sent + 0.5), sent + 0.5)
    assert s.rate == pytest.approx(200_000)
    assert s.timer_at("send") <= sent + 0.5 + 8.0 * S / 200_000 + 1e-9


def test_without_send_sooner_a_raising_report_waits_for_the_floors_packet() -> None:
    s = steady(800_000, rules=without("send_sooner"))
    t = s.now
    feed(s, report(A, 100, t), t)
    sent = packets(run_until(s, s.get_timer()))[-1].timestamp / 1e6
    feed(s, report(A, 200_000, sent + 0.5), sent + 0.5)
    assert s.get_timer() > sent + 60.0  # the next packet keeps the old schedule


def test_first_loss_report_ends_slowstart() -> None:
    s = make(initial_rate_bps=100_000)
    run_until(s, 1.0)
    assert s.slowstart
    feed(s, report(A, 50_000, 1.0), 1.0)
    assert not s.slowstart and s.rate == 50_000 and s.clr == node_id(A)
    (p,) = packets(run_until(s, s.get_timer()))
    assert not p.dflags & TfmccDataFlags.SLOWSTART


def test_rate_halves_after_a_long_silence() -> None:
    s = steady(800_000)
    T = s.T()
    run_until(s, 1.0 + 9 * T)
    assert s.rate >= 800_000
    run_until(s, 1.0 + 40 * (T + s.r_max))
    assert s.rate < 400_000


def test_malformed_feedback_is_counted() -> None:
    s = make()
    s.receive_datagram(b"\xff" * 40, ("1.1.1.1", 9), 0.1)
    s.receive_datagram(report(A, 1, 0.1).encode()[:-3], ("1.1.1.1", 9), 0.1)
    assert s.malformed == 2 and s.reports == 0
    drain(s)


SS = TfmccReportFlags.SLOWSTART | TfmccReportFlags.HAVE_RTT


def test_slowstart_follows_each_clr_report_doubling_at_most_per_rtt() -> None:
    # RFC 4654 3.6: the lowest reporter is CLR in slowstart and reports every
    # RTT; each report moves the rate to d·R_recv, at most doubling per RTT.
    s = make()
    start = s.rate
    t = 1.0
    run_until(s, t)
    feed(s, report(A, 5e6, t, flags=SS, recv=5e6, rtt=0.1), t)
    assert s.rate == pytest.approx(2 * start)  # a long gap: one doubling
    for _ in range(3):
        t += 0.05  # half an RTT later: at most √2
        run_until(s, t)
        before = s.rate
        feed(s, report(A, 5e6, t, flags=SS, recv=5e6, rtt=0.1), t)
        assert s.rate == pytest.approx(before * 2**0.5, rel=1e-6)
    feed(s, report(A, 100e3, t, flags=SS, recv=100e3, rtt=0.1), t)
    assert s.rate == pytest.approx(200e3)  # and never above d · R_recv


def test_slowstart_without_per_report_steps_waits_for_the_round_end() -> None:
    s = make(rules=without("slowstart_per_report"))
    start = s.rate
    run_until(s, 1.0)
    feed(s, report(A, 5e6, 1.0, flags=SS, recv=5e6, rtt=0.1), 1.0)
    run_until(s, 1.2)
    assert s.rate == start


def test_first_measured_rtt_replaces_the_initial_max_rtt() -> None:
    s = make()
    assert s.r_max == 0.5
    run_until(s, 0.5)
    feed(s, report(A, 1e6, 0.5, flags=SS, recv=1e6, rtt=0.04), 0.5)
    assert s.r_max == pytest.approx(0.04)
    feed(s, report(B, 1e6, 0.5, flags=SS, recv=1e6, rtt=0.08), 0.5)
    assert s.r_max == pytest.approx(0.08)  # larger ones still count at once


def test_round_ends_after_T_when_non_clr_feedback_came() -> None:
    s = steady(800_000)
    first = _next_round(s)
    start = first.timestamp / 1e6
    feed(s, report(B, 900_000, s.now), s.now)  # non-CLR feedback in this round
    T = s.T()
    p = _next_round(s)
    assert p.timestamp / 1e6 - start == pytest.approx(T, abs=0.011)


def test_clr_claim_from_a_non_clr_is_refused() -> None:
    s = steady(800_000)
    rep = report(B, 8_000, s.now, flags=HAVE | TfmccReportFlags.IS_CLR)
    feed(s, rep, s.now)
    assert s.rate == 800_000 and s.clr == node_id(A) and s.refused_clr_claims == 1


def test_a_report_flood_from_one_receiver_is_policed() -> None:
    s = steady(800_000)
    t = s.now
    for i in range(100):  # 100 reports within 10 ms, RTT 0.1 s
        feed(s, report(B, 900_000, t + i * 1e-4), t + i * 1e-4)
    assert s.refused_flood >= 90
    assert s.reports - 1 <= PoliceReports.POLICE_BURST + 1  # the burst, then one per RTT/2


def test_without_police_reports_a_flood_and_a_false_clr_claim_are_taken() -> None:
    s = steady(800_000, rules=without("police_reports"))
    t = s.now
    for i in range(100):
        feed(s, report(B, 900_000, t + i * 1e-4), t + i * 1e-4)
    assert s.reports == 101 and not hasattr(s, "refused_flood")
    feed(s, report(B, 8_000, s.now, flags=HAVE | TfmccReportFlags.IS_CLR), s.now)
    assert s.rate == 8_000 and s.clr == node_id(B)


def test_a_claimed_rtt_far_above_the_senders_own_sample_is_capped() -> None:
    s = steady(800_000)
    out = run_until(s, 1.2)
    last = packets(out)[-1]
    sent = last.timestamp / 1e6
    # B claims a 30 s RTT (so its rate would be tiny); the echo says 0.05 s.
    rep = report(B, 8_000, sent + 0.05, rtt=30.0, p=0.01, echo_ts=last.timestamp)
    feed(s, rep, sent + 0.05)
    assert s.refused_rates == 1
    assert s.rate > 400_000  # the rate follows from p at the sender's RTT bound
    assert s.r_max < 1.0  # and the claim does not stretch the feedback rounds


def test_without_check_claims_a_claimed_rtt_sets_the_rate_and_r_max() -> None:
    s = steady(800_000, rules=without("check_claims"))
    last = packets(run_until(s, 1.2))[-1]
    sent = last.timestamp / 1e6
    rep = report(B, 8_000, sent + 0.05, rtt=30.0, p=0.01, echo_ts=last.timestamp)
    feed(s, rep, sent + 0.05)
    assert s.rate == 8_000 and s.r_max == pytest.approx(30.0)
