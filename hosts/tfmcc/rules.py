"""TFMCC's named rules (:class:`hosts.rules.Registrar`); a rule's constants are named apart
from every other rule's.  Reasons, figures: docs/protocols/tfmcc.md#rules."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from p4mcc.hosts.ratemeter import WindowRateMeter
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.rtt import RTT_STEP_FACTOR
from p4mcc.hosts.rules import Registrar, timer
from p4mcc.hosts.stampwindow import StampEcho, short_queue
from p4mcc.hosts.tfmcc.constants import CLR_TIMEOUT_ROUNDS, FB_B, RMAX_DECAY, SLOWSTART_D
from p4mcc.hosts.tfrc import CompetitorOverflow, LossHistory, ReorderHold, outage
from p4mcc.hosts.wire import Share, Stamp, TfmccData, TfmccReport, TfmccReportFlags

if TYPE_CHECKING:  # the mixins run on top of the cores
    from p4mcc.hosts.tfmcc.receiver import TfmccReceiver as _Rx
    from p4mcc.hosts.tfmcc.sender import TfmccSender as _Tx
else:
    _Rx = _Tx = object

OURS = "ours, see docs/protocols/tfmcc.md#rules"
R, S = "tfmcc-receiver", "tfmcc-sender"
rule = Registrar("tfmcc", OURS)

# -- the share (docs/stamp.md, "The share"; profile ``stamped``), registered first: outermost,
# so the share sets the start-up rate and the first loss interval over the rules that do in default

def _share_of(msg: TfmccReport | TfmccData) -> float | None:
    """The max-min share a stamped message carries, bit/s (None: a hop did not stamp, or no share)."""
    return Share.bps(msg.share) if Stamp.stamped(msg.stamp) and msg.share else None


@rule("share_start", "in slowstart the rate goes to the path's fair share at the CLR's report; "
      "a loss ends it as in default", "RCP (Dukkipati 2005): start at the link's fair share; " + OURS,
      roles=(S,))
class ShareStart(_Tx):
    """Sender: while in slowstart, each CLR report that carries a share (docs/stamp.md,
    "The share") sets the rate to the smallest share any receiver echoed last: slowstart
    goes to the rate the session would have under max-min fairness at once, and no
    further.  The smallest, as slowstart's target is the smallest receive rate (2.6):
    one receiver's echo, forged, raises the rate no higher than the others' allow.
    The first loss ends slowstart as in ``default`` (loss wins); a report without a
    stamp or a share leaves ``default`` to move the rate."""

    COUNTERS = ("share_moves",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.share_echoes: dict[int, float | None] = {}  # receiver id -> its last report's share, bit/s

    def _on_report(self, rep: TfmccReport, now: float) -> None:
        taken = self.reports
        super()._on_report(rep, now)
        if self.reports == taken or not self.slowstart:
            return
        if rep.rflags & TfmccReportFlags.LEAVING:
            self.share_echoes.pop(rep.rcvr_id, None)
        else:
            self.share_echoes[rep.rcvr_id] = _share_of(rep)
        echoed = list(self.share_echoes.values())
        share = None if None in echoed else min(echoed)  # type: ignore[type-var]
        if (share is None or rep.rcvr_id != self.clr
                or rep.rflags & (TfmccReportFlags.LEAVING | TfmccReportFlags.HAVE_LOSS)):
            return
        self.rate = min(max(share, self._slowstart_floor()), self.p.max_rate_bps)
        self.ss_from = self.ss_target = self.rate
        self.share_moves += 1


@rule("share_start", roles=(R,))
class ShareFirstInterval(_Rx):
    """Receiver: the first loss interval is the one whose equation rate is the
    path's fair share (the last data's), not the receive rate: after the first
    loss the session sends its share, which a loss-driven start-up beside TCP
    reaches only after many loss intervals.  Without a share: ``default``."""

    _share_now: float | None = None

    def _on_data(self, msg: TfmccData, size: int, now: float) -> None:
        self._share_now = _share_of(msg)
        super()._on_data(msg, size, now)

    def _first_interval_rate(self) -> float:
        return self._share_now if self._share_now is not None else super()._first_interval_rate()

# -- receiver rules ----------------------------------------------------------


@rule("history_discounting", "older loss intervals weigh less after a long loss-free stretch",
      "RFC 5348 5.5", roles=(R,))
class HistoryDiscounting(_Rx):
    """RFC 5348 5.5: older loss intervals weigh less after a long loss-free stretch
    (paper 2.2 counts on the ~0.3 packets per RTT climb this gives)."""

    def _new_history(self) -> LossHistory:
        history = super()._new_history()
        history.discounting = True
        return history


@rule("reorder_window", "a hole is lost after 3 later packets and, on a path seen to reorder, "
      "a reordering window", "RFC 5348 5.1, RFC 8985 6.2", roles=(R,))
class ReorderWindow(_Rx):
    """A hole in the sequence counts as lost once NDUPACK (3) later packets
    arrived (RFC 5348 5.1) and, once the path has been seen to reorder,
    RACK's reordering window passed since the first of them (RFC 8985 6.2;
    :class:`hosts.tfrc.ReorderHold`): a path that reorders is not a lossy one."""

    def _new_history(self) -> LossHistory:
        history = super()._new_history()
        history.hold = ReorderHold()
        return history


@rule("loss_event_current_rtt", "a loss event spans the packet's current round trip when longer",
      roles=(R,))
class LossEventCurrentRtt(_Rx):
    """A loss event spans the round trip the revealing packet measures when it
    exceeds the smoothed RTT, which lags a queue TCP fills (RFC 6582 3.2)."""

    def _event_span(self, rtt_now: float) -> float:
        return max(super()._event_span(rtt_now), rtt_now)

    def _remodel_reverse(self) -> float | None:
        d_rs = self.d_rs_us
        return None if d_rs is None else d_rs / 1e6


@rule("rtt_step", "a measured RTT below half the estimate replaces it", roles=(R,))
class RttStep(_Rx):
    """A real RTT measurement below 1/``STEP_FACTOR`` of the smoothed estimate
    replaces it, as the first measurement replaces the placeholder (2.4.2).  The CLR's weight
    of 0.05 per measurement, one measurement per estimated RTT, moves an estimate that is
    far above every sample by about 0.05 s per second: after a squeezed link's queue has
    drained, the CLR's rate stays at the squeeze's for several seconds, where a TCP flow's
    rate follows its round trip within one.  A rise is smoothed as the paper says: a step
    up would follow every queue TCP fills."""

    STEP_FACTOR = RTT_STEP_FACTOR

    def _smoothed_rtt(self, inst: float) -> float:
        if inst * self.STEP_FACTOR < self.rtt:
            return inst
        return super()._smoothed_rtt(inst)


class _ReceiveMeters(_Rx):
    """What the receive-rate rules share: restarting the meters (``outage_restart``) and X_recv at
    the first loss (``first_interval_recv_rate``), which ``slowstart_recv_rate`` measures its way."""

    def _restart_meters(self) -> None:
        """Measure the receive rate afresh from the next packet on."""
        self.recv_meter = WindowRateMeter(self.recv_meter.window)

    def _recv_rate_at_first_loss(self) -> float:
        """X_recv as measured when the first loss arrives."""
        return self.receive_rate_bps()


@rule("slowstart_recv_rate", "in slowstart X_recv is measured over the last RTT",
      "RFC 5348 4.3, 6.2", roles=(R,))
class SlowstartRecvRate(_ReceiveMeters):
    """In slowstart, before loss, X_recv is the rate over the last RTT
    (RFC 5348 4.3/6.2), not over four."""

    SS_WINDOW_RTTS = 1.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.ss_meter = WindowRateMeter(self.SS_WINDOW_RTTS * self.rtt)

    def receive_rate_bps(self) -> float:
        if self.sender_slowstart and not self.history.has_loss:
            return self.ss_meter.rate_bps(self.now)
        return super().receive_rate_bps()

    def _recv_rate_at_first_loss(self) -> float:
        if self.sender_slowstart:
            return self.ss_meter.rate_bps(self.now)
        return super()._recv_rate_at_first_loss()

    def _meter_packet(self, now: float, size: int) -> None:
        super()._meter_packet(now, size)
        if self.sender_slowstart:
            self.ss_meter.add(now, size)

    def _meter_windows(self) -> None:
        super()._meter_windows()
        if self.sender_slowstart:
            self.ss_meter.window = self.SS_WINDOW_RTTS * self.rtt

    def _restart_meters(self) -> None:
        super()._restart_meters()
        self.ss_meter = WindowRateMeter(self.ss_meter.window)


@rule("first_interval_recv_rate", "the first loss interval follows the receive rate, "
      "not half the sending rate", "RFC 5348 6.3.1", roles=(R,))
class FirstIntervalRecvRate(_ReceiveMeters):
    """l_0 from the rate received (RFC 5348 6.3.1), not half the sending rate
    (paper app. B), which overshoots what the path delivers."""

    def _first_interval_rate(self) -> float:
        recv = self._recv_rate_at_first_loss()
        return recv if recv > 0 else super()._first_interval_rate()


@rule("forgive_competitor_overflow", "a start-up loss below a TCP initial window "
      "does not end slowstart", roles=(R,))
class ForgiveCompetitorOverflow(_Rx):
    """In slowstart a first loss below a TCP initial window (RFC 6928) per
    initial RTT is a competitor's overflow: forgiven with its further losses."""

    FORGIVE_MIN_WINDOW = 10.0
    FORGIVE_RTTS = 2.0
    FORGIVE_OVERFLOWS = 0  # every overflow below the window

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._overflow = CompetitorOverflow(self.FORGIVE_RTTS, self.FORGIVE_OVERFLOWS)

    @property
    def forgiven_losses(self) -> int:
        """Competitors' overflows forgotten in slowstart."""
        return self._overflow.forgiven

    def _below_initial_window(self) -> bool:
        send = self.send_rate_bps()
        s = self.p
        return not math.isinf(send) and send < self.FORGIVE_MIN_WINDOW * 8.0 * s.packet_size / s.initial_rtt

    def _record_packet(self, seq: int, now: float, span: float, owd: float) -> None:
        had_loss = self.history.has_loss
        super()._record_packet(seq, now, span, owd)
        if (not had_loss and self.history.has_loss and self.sender_slowstart
                and self._overflow.forgives(now, span, self._below_initial_window())):
            self.history = self._new_history()
            self.history.on_packet(seq, now, span, owd)


@rule("outage_restart", "an outage restarts the loss history instead of counting as loss", roles=(R,))
class OutageRestart(_ReceiveMeters):
    """A silence of max(1 s, 4 RTT) over 8+ lost packets is an outage, not
    congestion: the history and meters restart as a late joiner's (paper 4.2)."""

    COUNTERS = ("outages",)  # loss histories restarted

    def _before_packet(self, seq: int, now: float) -> None:
        super()._before_packet(seq, now)
        h = self.history
        if h.highest_seq is not None and outage(now - h.highest_time, self.rtt, seq - h.highest_seq - 1):
            self._restart_meters()
            self.outages += 1
            self.history = self._new_history()


# -- sender rules ------------------------------------------------------------


@rule("tfrc_initial_window", "start and slowstart floor at TFRC's initial window per R_max",
      "RFC 5348 4.2, 4.3", roles=(S,))
class TfrcInitialWindow(_Tx):
    """Start, and keep slowstart, at TFRC's initial window per R_max
    (RFC 5348 4.2, 4.3 step 4) instead of one packet (RFC 4654 3.1)."""

    def _initial_window_bytes(self) -> float:
        size = self.p.packet_size
        return min(4.0 * size, max(2.0 * size, 4380.0))

    def _slowstart_floor(self) -> float:
        return self._initial_rate(max(self.r_max, self.p.initial_rtt))


@rule("slowstart_per_report", "each CLR report in slowstart moves the rate, at most doubling per RTT",
      "RFC 4654 3.6", roles=(S,))
class SlowstartPerReport(_Tx):
    """Each CLR report in slowstart moves the rate, at most doubling per RTT
    (RFC 4654 3.6), instead of one step per feedback round (paper 2.6)."""

    def _slowstart_tick(self, now: float) -> None:
        pass  # the rate moves at reports, not along a per-round ramp

    def _slowstart_report(self, recv: float, rtt: float | None, now: float) -> None:
        s = self.p
        r = rtt if rtt is not None else self.r_max
        target = min(SLOWSTART_D * recv, s.max_rate_bps)
        cap = self.rate * 2.0 ** min(1.0, (now - self.ss_step_at) / max(r, 1e-3))
        self.rate = min(max(min(target, cap), self._slowstart_floor()), s.max_rate_bps)
        self.ss_step_at = now
        self.ss_from = self.ss_target = self.rate


@rule("police_reports", "refuse false CLR claims and report floods", roles=(S,))
class PoliceReports(_Tx):
    """Refuse false ``IS_CLR`` claims (only the sender names the CLR, 2.2) and
    more than a burst of reports, then one per half RTT, from one receiver."""

    COUNTERS = ("refused_clr_claims", "refused_flood")
    POLICE_BURST = 4.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._buckets: dict[int, tuple[float, float]] = {}

    def _police(self, rep: TfmccReport, now: float) -> bool:
        f = rep.rflags
        if f & TfmccReportFlags.LEAVING:
            self._buckets.pop(rep.rcvr_id, None)
            return super()._police(rep, now)
        if f & TfmccReportFlags.IS_CLR and rep.rcvr_id != self.clr:
            self.refused_clr_claims += 1
            return False
        r_max = self.r_max
        rtt = rep.rtt / 1e6 if f & TfmccReportFlags.HAVE_RTT and rep.rtt else r_max
        gap = max(0.5 * min(rtt, r_max), 1e-3)
        tokens, last = self._buckets.get(rep.rcvr_id, (self.POLICE_BURST, now))
        tokens = min(self.POLICE_BURST, tokens + (now - last) / gap)
        if tokens < 1.0:
            self._buckets[rep.rcvr_id] = (tokens, now)
            self.refused_flood += 1
            return False
        self._buckets[rep.rcvr_id] = (tokens - 1.0, now)
        if len(self._buckets) > 4 * self.p.fb_receivers:
            self._buckets.clear()  # bounded memory against spoofed ids
        return super()._police(rep, now)


@rule("check_claims", "bound a report's RTT and rate by the sender's own RTT sample", roles=(S,))
class CheckClaims(_Tx):
    """Bound a claimed RTT by the sender's own sample (2.4.4) and a claimed rate
    by the equation of its own p: no receiver stretches R_max or the rate."""

    COUNTERS = ("refused_rates",)
    CLAIM_FACTOR = 4.0

    def _bound_claimed_rtt(self, claimed: float, inst: float) -> float:
        return min(super()._bound_claimed_rtt(claimed, inst), self.CLAIM_FACTOR * inst + 0.01)

    def _claimed_rate(self, rate: float, eq: float) -> float:
        if rate < eq / self.CLAIM_FACTOR:
            self.refused_rates += 1
            return eq
        return super()._claimed_rate(rate, eq)


@rule("send_sooner", "a report that raises a floor rate acts at once", "RFC 5348 4.6", roles=(S,))
class SendSooner(_Tx):
    """A report that raises the rate while the next packet is more than R_max
    away acts at once (RFC 5348 4.6: s/X at the current X)."""

    def _after_report(self, before: float, now: float) -> None:
        super()._after_report(before, now)
        pending = self.timer_at("send")
        if pending is None or pending - now <= self.r_max:
            return
        if not self.slowstart and not self._silent(now):
            self._increase(now)
        if self.rate > before and not self._burst_sent:
            tick = self._last_tick + self._interval()
            if tick < pending:
                self._tick = max(tick, now)
                self.set_timer("send", self._tick)


@rule("pacing_jitter", "departures jitter within a packet-time of their ticks", roles=(S,))
class PacingJitter(_Tx):
    """Departures jitter within ±0.475 packet-times of their ticks: a periodic
    flow phase-locks with a drop-tail queue (Floyd & Jacobson)."""

    PACING_JITTER = 0.95

    def _pacing_offset(self, gap: float) -> float:
        return self.PACING_JITTER * (self.rng.random() - 0.5) * gap


@rule("pacing_pairs", "packets leave in back-to-back pairs from 6 packets per R_max", roles=(S,))
class PacingPairs(_Tx):
    """Back-to-back pairs, as TCP's data behind delayed ACKs (RFC 5681 4.2),
    from 6 packets per R_max; the rate is unchanged."""

    PAIR_SIZE = 2
    PAIR_MIN_WINDOW = 6.0

    def _next_burst_size(self) -> int:
        per_rtt = self.rate * self.r_max / (8.0 * self.p.packet_size)
        return self.PAIR_SIZE if per_rtt >= self.PAIR_MIN_WINDOW else super()._next_burst_size()


@rule("unechoed_claims", "a report without an echo gets no RTT beyond the sender's own samples",
      requires=("check_claims",), roles=(S,))
class UnechoedClaims(_Tx):
    """A report that echoes no timestamp gets no more RTT than the sender measured
    itself (4x its largest own sample + 10 ms; before any, ``initial_rtt``), so
    ``check_claims`` holds its rate against its p there too."""

    COUNTERS = ("capped_unechoed",)
    UNECHOED_FACTOR = 4.0
    UNECHOED_SLACK_S = 0.01
    own_rtt_hi = 0.0  # the largest own RTT sample, decaying as R_max does

    def _echo_sample(self, rep: TfmccReport, now: float) -> float | None:
        x = super()._echo_sample(rep, now)
        if x is not None and x > self.own_rtt_hi:
            self.own_rtt_hi = x
        return x

    def _end_round(self, now: float) -> None:
        super()._end_round(now)
        self.own_rtt_hi *= RMAX_DECAY

    def _unechoed_rtt(self, rep: TfmccReport, claimed: float | None) -> float | None:
        rtt = super()._unechoed_rtt(rep, claimed)
        own = self.own_rtt_hi
        if rtt is None:
            has_loss = rep.rflags & TfmccReportFlags.HAVE_LOSS
            return (own or self.r_max) if has_loss else None
        cap = self.UNECHOED_FACTOR * own + self.UNECHOED_SLACK_S if own else self.p.initial_rtt
        if rtt > cap:
            self.capped_unechoed += 1
            return cap
        return rtt


@rule("release_silent_clr", "a CLR that leaves packets unanswered for 10 feedback delays at R_max "
      "is released then, whatever rate it set", roles=(S,))
class ReleaseSilentClr(_Tx):
    """The CLR answers a packet within an RTT (2.4.2), so its silence is
    measured in R_max from the first packet it left unanswered: 10 feedback
    delays of b·R_max (4.2's timeout without T's packet-spacing term), on a
    timer of its own.  The paper's T grows as the rate falls and its check
    waits for a round's end (up to 2T), so a CLR that claimed maximum loss and
    went quiet held its 8 kbit/s for minutes (T is 29 s there).  A CLR with
    no packet to answer is never silent, so a sparse honest one stays; the
    release goes out with a packet at once, in a new round, so every receiver
    decides afresh whether to report."""

    COUNTERS = ("silent_clr_releases",)
    _unanswered_since: float | None = None  # the first packet since the CLR's last report

    def _clr_timeout(self) -> float:
        return CLR_TIMEOUT_ROUNDS * FB_B * self.r_max

    def _on_report(self, rep: TfmccReport, now: float) -> None:
        super()._on_report(rep, now)
        if self.clr_last == now:  # the CLR spoke (or a new one was named)
            self._unanswered_since = None
            self.cancel_timer("clr_silence")

    def _send_data(self, now: float) -> None:
        if self.clr is not None and self._unanswered_since is None:
            self._unanswered_since = now
            self.set_timer("clr_silence", now + self._clr_timeout())
        super()._send_data(now)

    @timer("clr_silence")
    def _clr_silent(self, now: float) -> None:
        """No report from the CLR within its timeout since the first packet it left unanswered."""
        since = self._unanswered_since
        if self.clr is None or since is None:
            return
        deadline = since + self._clr_timeout()  # R_max may have moved since the timer was set
        if now < deadline:
            self.set_timer("clr_silence", deadline)
            return
        self.silent_clr_releases += 1
        self._unanswered_since = None
        self._drop_clr()
        self._end_round(now)
        if self.timer_at("send") is not None and not self._burst_sent:
            self.set_timer("send", now)  # the news goes out now, not a packet-time later


@rule("release_silent_clr", roles=(R,))
class ReleaseSilentClrReceiver(_Rx):
    """Receiver: while the data names no CLR, the report waits a feedback
    delay of b·max RTT (2.5.3 without the packet-spacing term), so the rate a
    released CLR left behind meets its successor's report within RTTs."""

    def _feedback_delay(self, send: float) -> float:
        if self.sender_clr == 0 and not self.sender_slowstart:
            return FB_B * self.max_rtt
        return super()._feedback_delay(send)


# -- rules that read the congestion stamp (docs/stamp.md; profile ``stamped``) --




@rule("stamp_spare", "under a short stamped queue, slowstart and the limited increase take half the "
      "spare rate at once; no spare holds slowstart", "RFC 4782 3.1 (Quick-Start); ABC's brake; " + OURS,
      roles=(S,))
class StampSpare(_Tx):
    """Sender: under a short queue in the CLR's echoed stamp, slowstart and the increase
    after a CLR change (2.2) add a share of the spare rate at once (Quick-Start, RFC 4782);
    a long queue brakes once (ABC's brake).  Without a stamp, or under a queue braking
    does not drain: ``default``.  Details: docs/protocols/tfmcc.md#rules."""

    COUNTERS = ("stamp_raises", "stamp_brakes")
    STAMP_SHARE = 0.25
    #: The spare code lags the rate by up to two 25.6 ms windows (docs/stamp.md).
    STAMP_LAG_S = 0.1
    #: The brake, and how long (R_max, at least seconds) a braked queue has to drain
    #: by a code: halving a queue at a tenth of the rate takes five times its delay.
    STAMP_BRAKE, STAMP_DRAIN_RMAX, STAMP_DRAIN_S = 0.9, 4.0, 0.3
    _stamp_at = _brake_at = -1.0
    _brake_q = 0  # the queue code at the brake; 0: none; -1: not the session's queue

    def _on_report(self, rep: TfmccReport, now: float) -> None:
        before, taken = self.rate, self.reports
        super()._on_report(rep, now)
        queue, spare = Stamp.queue_delay_s(rep.stamp), Stamp.spare_bps(rep.stamp)
        if (self.reports == taken or rep.rcvr_id != self.clr
                or queue is None or spare is None or rep.rflags & TfmccReportFlags.LEAVING):
            return
        r_max, q = self.r_max, Stamp.queue_code(rep.stamp)
        short = short_queue(queue, r_max)
        due = now - self._stamp_at >= max(r_max, self.STAMP_LAG_S)
        if short:
            self._brake_q = 0
        elif 0 < self._brake_q <= q and now - self._brake_at > max(self.STAMP_DRAIN_RMAX * r_max, self.STAMP_DRAIN_S):
            self._brake_q = -1  # braking did not drain it
        if self.slowstart and self._brake_q >= 0:
            recv = float(rep.recv_rate or rep.rate)
            if short and spare > 0 and due:
                self.rate = max(before, min(recv + self.STAMP_SHARE * spare, self.p.max_rate_bps))
                self.stamp_raises += 1
            elif not short and due and self._brake_q == 0:
                self.rate = max(min(before, self.STAMP_BRAKE * recv), self._slowstart_floor())
                self.stamp_brakes += 1
                self._brake_q, self._brake_at = q, now
            else:
                self.rate = min(self.rate, before)
                if 0 < q < self._brake_q:
                    self._brake_q, self._brake_at = q, now  # draining: the queue is the session's
            self._stamp_at = now if due else self._stamp_at
            self.ss_from = self.ss_target = self.rate
        elif short and due and self.limited and spare > 0:
            ceiling = min(self.clr_rate, self.p.max_rate_bps)
            self.rate = max(self.rate, min(ceiling, self.rate + self.STAMP_SHARE * spare))
            self.stamp_raises += 1
            self._stamp_at = now



@rule("stamp_spare", roles=(R,))
class StampSpareReceiver(StampEcho, _Rx):
    """Receiver: reports echo the data's stamps; in slowstart, spare rate under a
    short queue is news the sender acts on: the report goes at once."""

    _stamp_now = 0  # the last data packet's stamp

    def _on_data(self, msg: TfmccData, size: int, now: float) -> None:
        self._stamp_now = msg.stamp
        super()._on_data(msg, size, now)

    def _arm(self, now: float) -> None:
        super()._arm(now)
        queue, spare = Stamp.queue_delay_s(self._stamp_now), Stamp.spare_bps(self._stamp_now)
        if self.timer_pending and self.sender_slowstart and spare and short_queue(queue, self.rtt):
            self.set_timer("feedback", now)


#: Profile ``default``: the paper plus the rules that earned their place, listed by name;
#: a rule registered above but not listed here is off until it is measured and listed.
DEFAULT = (
    "history_discounting",
    "reorder_window",
    "loss_event_current_rtt",
    "slowstart_recv_rate",
    "first_interval_recv_rate",
    "forgive_competitor_overflow",
    "outage_restart",
    "tfrc_initial_window",
    "slowstart_per_report",
    "police_reports",
    "check_claims",
    "send_sooner",
    "pacing_jitter",
    "pacing_pairs",
    "unechoed_claims",
    "release_silent_clr",
)
RULES = rule.book(default=DEFAULT, stamped=("share_start", "stamp_spare"))
