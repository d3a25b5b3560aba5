"""TFMCC's named rules: each behaviour beyond the paper, one mixin per role it changes.

Every mixin overrides a hook of :class:`~hosts.tfmcc.receiver.TfmccReceiver`
or :class:`~hosts.tfmcc.sender.TfmccSender` and calls ``super()``; its
constants are class constants, named apart from every other rule's (a
composed class sees all of them).  Reasons are RFC sections, or ours with the
measurement on ``docs/protocols/tfmcc.md#rules``.  ``RULES`` lists them in
composition order (first = outermost) with the profiles ``paper`` (none)
and ``default`` (all of them).
"""

from __future__ import annotations

import math

from hosts.ratemeter import WindowRateMeter
from hosts.registry import SessionConfig
from hosts.rules import DEFAULT, PAPER, Rule, RuleBook
from hosts.tfmcc.core import LOSS_INTERVALS, SLOWSTART_D, feedback_delay
from hosts.tfrc import CompetitorOverflow, LossHistory
from hosts.wire import TfmccReport, TfmccReportFlags

OURS = "ours, see docs/protocols/tfmcc.md#rules"

# ===========================================================================
# Receiver rules
# ===========================================================================


class HistoryDiscounting:
    """RFC 5348 5.5: after a loss-free stretch longer than twice the average
    interval, older intervals weigh less.  Without it the equation climbs
    about 0.125 packets per RTT per RTT; paper 2.2 counts on roughly 0.3,
    TFRC's figure with discounting."""

    def _new_history(self) -> LossHistory:
        return LossHistory(LOSS_INTERVALS, discounting=True)


class LossEventCurrentRtt:
    """A loss event spans the larger of the smoothed RTT and the round trip
    the revealing packet measures (its one-way delay on the last
    measurement, 2.4.3).  Next to TCP the overflow lasts the round trip TCP
    takes to cut, at the full queue's delay, which the CLR's smoothed RTT
    (weight 0.05) lags: each overflow counted as 2-3 events where TCP cut
    once (RFC 6582 3.2)."""

    def _event_span(self, rtt_now: float) -> float:
        return max(super()._event_span(rtt_now), rtt_now)  # type: ignore[misc]

    def _remodel_reverse(self) -> float | None:
        d_rs = self.d_rs_us  # type: ignore[attr-defined]
        return None if d_rs is None else d_rs / 1e6


class SlowstartRecvRate:
    """While the sender is in slowstart and this receiver has seen no loss,
    X_recv is the rate over the last RTT (RFC 5348 4.3/6.2: the rate
    received since the last feedback), not over four."""

    SS_WINDOW_RTTS = 1.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)  # type: ignore[call-arg]
        self.ss_meter = WindowRateMeter(self.SS_WINDOW_RTTS * self.rtt)  # type: ignore[attr-defined]

    def receive_rate_bps(self) -> float:
        if self.sender_slowstart and not self.history.has_loss:  # type: ignore[attr-defined]
            return self.ss_meter.rate_bps(self.now)  # type: ignore[attr-defined]
        return super().receive_rate_bps()  # type: ignore[misc]

    def _recv_rate_at_first_loss(self) -> float:
        if self.sender_slowstart:  # type: ignore[attr-defined]
            return self.ss_meter.rate_bps(self.now)  # type: ignore[attr-defined]
        return super()._recv_rate_at_first_loss()  # type: ignore[misc]

    def _meter_packet(self, now: float, size: int) -> None:
        super()._meter_packet(now, size)  # type: ignore[misc]
        if self.sender_slowstart:  # type: ignore[attr-defined]
            self.ss_meter.add(now, size)

    def _meter_windows(self) -> None:
        super()._meter_windows()  # type: ignore[misc]
        if self.sender_slowstart:  # type: ignore[attr-defined]
            self.ss_meter.window = self.SS_WINDOW_RTTS * self.rtt  # type: ignore[attr-defined]

    def _restart_meters(self) -> None:
        super()._restart_meters()  # type: ignore[misc]
        self.ss_meter = WindowRateMeter(self.ss_meter.window)


class FirstIntervalRecvRate:
    """The interval before the first loss is the one whose equation rate is
    the rate actually received (RFC 5348 6.3.1), not half the sending rate
    (paper app. B): in slowstart the sending rate overshoots what the path
    delivers, and a loss early in slowstart found half of a few packets per
    second."""

    def _first_interval_rate(self) -> float:
        recv = self._recv_rate_at_first_loss()  # type: ignore[attr-defined]
        return recv if recv > 0 else super()._first_interval_rate()  # type: ignore[misc]


class ForgiveCompetitorOverflow:
    """A first loss while the sender sends fewer than a TCP initial window
    (10 packets, RFC 6928) per initial RTT is a competitor's slow-start
    overflow, not this session's overshoot: it is forgotten with the further
    losses within two loss-event spans of it, and slowstart goes on (paper
    2.6 ends slowstart at any first loss).  A TCP flow's overflow ended
    TFMCC's slowstart at ~0.1 Mbit/s on 200 ms, deep-queue paths."""

    FORGIVE_MIN_WINDOW = 10.0
    FORGIVE_RTTS = 2.0
    FORGIVE_OVERFLOWS = 0  # every overflow that starts below the window

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)  # type: ignore[call-arg]
        self._overflow = CompetitorOverflow(self.FORGIVE_RTTS, self.FORGIVE_OVERFLOWS)

    @property
    def forgiven_losses(self) -> int:
        """Competitors' overflows forgotten in slowstart."""
        return self._overflow.forgiven

    def _below_initial_window(self) -> bool:
        send = self.send_rate_bps()  # type: ignore[attr-defined]
        s = self.p  # type: ignore[attr-defined]
        return not math.isinf(send) and send < self.FORGIVE_MIN_WINDOW * 8.0 * s.packet_size / s.initial_rtt

    def _record_packet(self, seq: int, now: float, span: float, owd: float) -> None:
        had_loss = self.history.has_loss  # type: ignore[attr-defined]
        super()._record_packet(seq, now, span, owd)  # type: ignore[misc]
        if (not had_loss and self.history.has_loss and self.sender_slowstart  # type: ignore[attr-defined]
                and self._overflow.forgives(now, span, self._below_initial_window())):
            self.history = self._new_history()  # type: ignore[attr-defined]
            self.history.on_packet(seq, now, span, owd)


class OutageRestart:
    """A silence of at least 1 s (and four RTTs, RFC 5348 4.4's no-feedback
    interval) across 8 or more lost packets in a row is an outage of this
    receiver's path, not congestion: the loss history and the receive rate
    restart as a late joiner's do (paper 4.2).  Counted by the one-RTT rule
    a 9 s outage is 300 loss events on a 30 ms path, and the returning
    receiver held 1000 receivers at the minimum rate.  1 s is RFC 6298's
    RTO floor; 8 is twice the c packets of paper 2.5.3."""

    OUTAGE_S = 1.0
    OUTAGE_PACKETS = 8

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)  # type: ignore[call-arg]
        #: outages survived: loss histories restarted
        self.outages = 0

    def _before_packet(self, seq: int, now: float) -> None:
        super()._before_packet(seq, now)  # type: ignore[misc]
        h = self.history  # type: ignore[attr-defined]
        if h.highest_seq is None or seq - h.highest_seq - 1 < self.OUTAGE_PACKETS:
            return
        if now - h.highest_time > max(self.OUTAGE_S, 4.0 * self.rtt):  # type: ignore[attr-defined]
            self._restart_meters()  # type: ignore[attr-defined]
            self.outages += 1
            self.history = self._new_history()  # type: ignore[attr-defined]


class RetimeFeedback:
    """A pending feedback timer stays at the same fraction of the current T.
    T follows the sending rate (2.5.3) and the sender ends rounds by the
    current T (RFC 4654 3.4): in slowstart a receiver that drew its timer
    from the old rate's T reported one old T after the round start, the
    round overran to twice its length and slowstart took twice as long."""

    def _retime(self, now: float) -> None:
        send = self.send_rate_bps()  # type: ignore[attr-defined]
        if math.isinf(send):
            return
        T = feedback_delay(self.p.packet_size, self.max_rtt, send)  # type: ignore[attr-defined]
        when = max(now, self._fb_start + self._fb_frac * T)  # type: ignore[attr-defined]
        old = self.timer_at("feedback")  # type: ignore[attr-defined]
        # Moves below 1% of T are jitter in the rate estimate, not a new rate.
        if old is None or abs(old - when) > 0.01 * T:
            self.set_timer("feedback", when)  # type: ignore[attr-defined]


# ===========================================================================
# Sender rules
# ===========================================================================


class TfrcInitialWindow:
    """The first packets and slowstart's floor are TFRC's initial window per
    R_max, min(4s, max(2s, 4380 B)) (RFC 5348 4.2, 4.3 step 4), not one
    packet (RFC 4654 3.1), whose 10 s first feedback round delayed
    slowstart.  R_max is taken at least at the initial RTT, so a short R_max
    measured later does not turn the floor into a jump past doubling."""

    def _initial_window_bytes(self) -> float:
        size = self.p.packet_size  # type: ignore[attr-defined]
        return min(4.0 * size, max(2.0 * size, 4380.0))

    def _slowstart_floor(self) -> float:
        return self._initial_rate(max(self.r_max, self.p.initial_rtt))  # type: ignore[attr-defined]


class SlowstartPerReport:
    """Every slowstart report of the CLR moves the rate to min(d·R_recv,
    2^(Δt/RTT)·rate): the lowest reporter is CLR in slowstart too and
    reports every RTT (RFC 4654 3.6; NORM applies each report), where the
    paper's 2.6 steps once per feedback round (round 0 alone lasts ~10 s at
    the initial 16 kbit/s)."""

    def _slowstart_tick(self, now: float) -> None:
        pass  # the rate moves at reports, not along a per-round ramp

    def _slowstart_report(self, recv: float, rtt: float | None, now: float) -> None:
        s = self.p  # type: ignore[attr-defined]
        r = rtt if rtt is not None else self.r_max  # type: ignore[attr-defined]
        target = min(SLOWSTART_D * recv, s.max_rate_bps)
        cap = self.rate * 2.0 ** min(1.0, (now - self.ss_step_at) / max(r, 1e-3))  # type: ignore[attr-defined]
        self.rate = min(max(min(target, cap), self._slowstart_floor()), s.max_rate_bps)  # type: ignore[attr-defined]
        self.ss_step_at = now
        self.ss_from = self.ss_target = self.rate


class PoliceReports:
    """Refuse what one receiver cannot legitimately send: an ``IS_CLR``
    claim from a receiver that is not the CLR (only the sender names it,
    paper 2.2), and more than a burst of 4 reports faster than one per half
    RTT (the CLR reports once per RTT, others once per round).  Leave
    reports always pass.  Ours: a misbehaving receiver must not take the
    session down (docs/faults.md)."""

    COUNTERS = ("refused_clr_claims", "refused_flood")
    POLICE_BURST = 4.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)  # type: ignore[call-arg]
        self._buckets: dict[int, tuple[float, float]] = {}

    def _police(self, rep: TfmccReport, now: float) -> bool:
        f = rep.rflags
        if f & TfmccReportFlags.LEAVING:
            self._buckets.pop(rep.rcvr_id, None)
            return super()._police(rep, now)  # type: ignore[misc]
        if f & TfmccReportFlags.IS_CLR and rep.rcvr_id != self.clr:  # type: ignore[attr-defined]
            self.refused_clr_claims += 1
            return False
        r_max = self.r_max  # type: ignore[attr-defined]
        rtt = rep.rtt / 1e6 if f & TfmccReportFlags.HAVE_RTT and rep.rtt else r_max
        gap = max(0.5 * min(rtt, r_max), 1e-3)
        tokens, last = self._buckets.get(rep.rcvr_id, (self.POLICE_BURST, now))
        tokens = min(self.POLICE_BURST, tokens + (now - last) / gap)
        if tokens < 1.0:
            self._buckets[rep.rcvr_id] = (tokens, now)
            self.refused_flood += 1
            return False
        self._buckets[rep.rcvr_id] = (tokens - 1.0, now)
        if len(self._buckets) > 4 * self.p.fb_receivers:  # type: ignore[attr-defined]
            self._buckets.clear()  # bounded memory against spoofed ids
        return super()._police(rep, now)  # type: ignore[misc]


class CheckClaims:
    """A receiver's claimed RTT may exceed the sender's own sample of it
    (2.4.4) by at most 4x (+10 ms), and its rate may lie at most 4x below
    the equation rate of its own p and that RTT: a receiver cannot lower
    the session's rate, or inflate R_max and every round, with figures its
    path does not have.  Ours (docs/faults.md)."""

    COUNTERS = ("refused_rates",)
    CLAIM_FACTOR = 4.0

    def _bound_claimed_rtt(self, claimed: float, inst: float) -> float:
        return min(super()._bound_claimed_rtt(claimed, inst), self.CLAIM_FACTOR * inst + 0.01)  # type: ignore[misc]

    def _claimed_rate(self, rate: float, eq: float) -> float:
        if rate < eq / self.CLAIM_FACTOR:
            self.refused_rates += 1
            return eq
        return super()._claimed_rate(rate, eq)  # type: ignore[misc]


class SendSooner:
    """A report that raises the rate while the next packet is more than
    R_max away acts at once and brings that packet forward to one
    packet-time at the new rate (TFRC paces by s/X at the current X, RFC
    5348 4.6): at the 1-packet-per-64-s floor a report otherwise waited up
    to 64 s to act."""

    def _after_report(self, before: float, now: float) -> None:
        super()._after_report(before, now)  # type: ignore[misc]
        pending = self.timer_at("send")  # type: ignore[attr-defined]
        if pending is None or pending - now <= self.r_max:  # type: ignore[attr-defined]
            return
        if not self.slowstart and not self._silent(now):  # type: ignore[attr-defined]
            self._increase(now)  # type: ignore[attr-defined]
        if self.rate > before and not self._burst_sent:  # type: ignore[attr-defined]
            tick = self._last_tick + self._interval()  # type: ignore[attr-defined]
            if tick < pending:
                self._tick = max(tick, now)
                self.set_timer("send", self._tick)  # type: ignore[attr-defined]


class PacingJitter:
    """Each departure lies uniformly within ±0.475 packet-times of its tick,
    never before the previous one; the rate is unchanged.  A periodic flow
    phase-locks with a drop-tail queue's departures and finds a free slot
    almost every time while ACK-clocked TCP arrives just after it is taken
    (Floyd & Jacobson's phase effects): TFMCC measured a loss event rate
    far below TCP's and took several times its share."""

    PACING_JITTER = 0.95

    def _pacing_offset(self, gap: float) -> float:
        return self.PACING_JITTER * (self.rng.random() - 0.5) * gap  # type: ignore[attr-defined]


class PacingPairs:
    """Packets leave in pairs, back to back, at the mean of their two ticks,
    as TCP's data leaves behind delayed ACKs (RFC 5681 4.2); the rate is
    unchanged.  Paced single packets meet a fraction of the drop-tail
    overflows TCP's pairs meet: TFMCC took up to 4x its share on shallow
    queues.  Pairs only from 6 packets per R_max: a TCP flow with a window
    of a few segments sends most of it one per ACK (pairs from 4 packets
    cut TFMCC to 0.74 of TCP among 15 TCP flows)."""

    PAIR_SIZE = 2
    PAIR_MIN_WINDOW = 6.0

    def _next_burst_size(self) -> int:
        per_rtt = self.rate * self.r_max / (8.0 * self.p.packet_size)  # type: ignore[attr-defined]
        return self.PAIR_SIZE if per_rtt >= self.PAIR_MIN_WINDOW else super()._next_burst_size()  # type: ignore[misc]


R, S = "tfmcc-receiver", "tfmcc-sender"

RULES = RuleBook(
    "tfmcc",
    rules=(
        Rule("history_discounting", "older loss intervals weigh less after a long loss-free stretch",
             "RFC 5348 5.5", {R: HistoryDiscounting}),
        Rule("loss_event_current_rtt", "a loss event spans the packet's current round trip when longer",
             OURS, {R: LossEventCurrentRtt}),
        Rule("slowstart_recv_rate", "in slowstart X_recv is measured over the last RTT",
             "RFC 5348 4.3, 6.2", {R: SlowstartRecvRate}),
        Rule("first_interval_recv_rate", "the first loss interval follows the receive rate, "
             "not half the sending rate", "RFC 5348 6.3.1", {R: FirstIntervalRecvRate}),
        Rule("forgive_competitor_overflow", "a start-up loss below a TCP initial window "
             "does not end slowstart", OURS, {R: ForgiveCompetitorOverflow}),
        Rule("outage_restart", "an outage restarts the loss history instead of counting as loss",
             OURS, {R: OutageRestart}),
        Rule("retime_feedback", "a pending feedback timer follows T as the rate changes",
             OURS, {R: RetimeFeedback}),
        Rule("tfrc_initial_window", "start and slowstart floor at TFRC's initial window per R_max",
             "RFC 5348 4.2, 4.3", {S: TfrcInitialWindow}),
        Rule("slowstart_per_report", "each CLR report in slowstart moves the rate, at most doubling per RTT",
             "RFC 4654 3.6", {S: SlowstartPerReport}),
        Rule("police_reports", "refuse false CLR claims and report floods",
             OURS, {S: PoliceReports}),
        Rule("check_claims", "bound a report's RTT and rate by the sender's own RTT sample",
             OURS, {S: CheckClaims}),
        Rule("send_sooner", "a report that raises a floor rate acts at once",
             "RFC 5348 4.6", {S: SendSooner}),
        Rule("pacing_jitter", "departures jitter within a packet-time of their ticks",
             OURS, {S: PacingJitter}),
        Rule("pacing_pairs", "packets leave in back-to-back pairs from 6 packets per R_max",
             OURS, {S: PacingPairs}),
    ),
    profiles={
        PAPER: (),
        DEFAULT: (
            "history_discounting", "loss_event_current_rtt", "slowstart_recv_rate",
            "first_interval_recv_rate", "forgive_competitor_overflow", "outage_restart",
            "retime_feedback", "tfrc_initial_window", "slowstart_per_report", "police_reports",
            "check_claims", "send_sooner", "pacing_jitter", "pacing_pairs",
        ),
    },
)
