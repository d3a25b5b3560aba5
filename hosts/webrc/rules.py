"""WEBRC's named rules (:class:`hosts.rules.Registrar`), each a mixin of :class:`hosts.webrc.receiver.WebrcReceiver`.
Reasons and figures: ``docs/protocols/webrc.md#rules``."""

from __future__ import annotations

import heapq
import math
import statistics
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4mcc.hosts import wire
from p4mcc.hosts.estimators import IntervalLossFilter, PrecisionWeightedMean
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.rules import Registrar
from p4mcc.hosts.stampwindow import StampWindow, short_queue
from p4mcc.hosts.tfrc import CompetitorOverflow, outage
from p4mcc.hosts.webrc.constants import TRR_HEADROOM
from p4mcc.hosts.webrc.receiver import WebrcReceiver
from p4mcc.hosts.webrc.params import gamma
from p4mcc.hosts.wire import WebrcData

R = "webrc-receiver"
PAGE = "ours, see docs/protocols/webrc.md#rules"
rule = Registrar("webrc", PAGE, roles=(R,))

if TYPE_CHECKING:  # the mixins run on top of the core
    _Base = WebrcReceiver
else:
    _Base = object


def _add_waves(rx: WebrcReceiver, now: float, limit: Callable[[], float], most: float = math.inf) -> None:
    """Join up to ``most`` more waves in the decision just taken, while
    Γ·ARR ≤ ``limit()``; MRTT is measured on the decision's first wave only."""
    assert rx.tsi is not None and rx.arr is not None
    added = 0
    while added < most and rx.nwc < rx.N and gamma(rx.p.p, rx.nwc) * rx.arr <= limit():
        more = gamma(rx.p.p, rx.nwc)
        rx._subscribe((rx.tsi + rx.nwc) % rx.T, now)
        rx.arr *= more
        rx.nwc += 1
        rx.joins += 1
        added += 1


# -- the share (docs/stamp.md, "The share"; profile ``stamped``), registered first: outermost,
# so in start-up the share decides the joins over the rules that pace them in default


@rule("share_join", "in start-up, join the waves up to the path's fair share at once; a loss ends start-up "
      "as in default", "RCP (Dukkipati 2005): start at the link's fair share; " + PAGE)
class ShareJoin(_Base):
    """In start-up, when every packet of the last epoch was stamped and carried a
    share (docs/stamp.md, "The share"), a decision joins as many waves as keep
    Γ·ARR within the share, and joins nothing past it: a receiver (a late or
    rebooted one too) reaches its fair share in one decision, not one wave a
    second.  When start-up ends, LOSSP is solved so that the equation rate is
    the share, not TRR (TFMCC's first loss interval from it), and from then on
    joins up to the share need not wait for TRR (eq. 5's Γ·TRR term) while the
    equation rate allows them.  A loss event, a
    pending join or a missing share leave ``default`` to decide, so loss still
    ends start-up and cuts the rate from there."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._share_window = StampWindow()
        #: the last full epoch's share, bit/s (None: not every packet carried one)
        self.share_bps: float | None = None

    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        super()._packet_seen(msg, now)
        self._share_window.add(msg.stamp, msg.share)

    def _epoch_begins(self, rr_rate: float) -> None:
        super()._epoch_begins(rr_rate)
        self.share_bps = self._share_window.share_bps()
        self._share_window.reset()

    def _decide_join(self, now: float, rr_rate: float) -> None:
        if self.share_bps is None or not self.startup or self.arr is None or self.in_loss_event(now):
            super()._decide_join(now, rr_rate)
            return
        if self.tsi is None or self.pending is not None or self.nwc >= self.N:
            return
        limit = min(self.share_bps / (8.0 * self.p.packet_length), self.mrr)
        if gamma(self.p.p, self.nwc) * self.arr > limit:
            return  # at the share: start-up holds until a loss ends it
        self._join(now, gamma(self.p.p, self.nwc))
        _add_waves(self, now, lambda: limit)

    def _join_limit(self, g: float) -> float:
        """Out of start-up, up to the share joins need not wait for TRR to follow
        (eq. 5's Γ·TRR term); the equation rate (REQN, from the loss history) and
        MRR still bound them: loss wins."""
        limit = super()._join_limit(g)
        if self.startup or self.share_bps is None:
            return limit
        share = self.share_bps / (8.0 * self.p.packet_length)
        return max(limit, min(share, max(self.ssr, self.reqn()), self.mrr))

    def _exit_startup(self, why: str) -> None:
        was = self.startup
        super()._exit_startup(why)
        if was and self.share_bps is not None:
            # 3.2 solves LOSSP so that REQN is TRR; with a share, so that it is the share
            # (TFMCC's first loss interval from it): the start-up's losses beside a full queue
            # would otherwise set an equation rate far below it.
            self._set_lossp_for(self.share_bps / (8.0 * self.p.packet_length), fresh=True)


class _OneWayDelays(_Base):
    """One-way delays on the sender's timestamps: the least of the last
    ``QUEUE_EPOCHS`` epochs is the path without a queue; an epoch "queued"
    when its mean is ``QUEUE_RTTS``·ARTT above it."""

    QUEUE_RTTS = 0.1
    QUEUE_EPOCHS = 60

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._owd_epoch = math.inf  # smallest one-way delay this epoch
        self._owd_sum, self._owd_count = 0.0, 0
        self._owd_minima: deque[float] = deque(maxlen=self.QUEUE_EPOCHS)
        self._queue_now = True  # the last epoch's packets queued

    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        if msg.timestamp:
            owd = wire.seconds_since(msg.timestamp, now)
            self._owd_epoch = min(self._owd_epoch, owd)
            self._owd_sum += owd
            self._owd_count += 1
        super()._packet_seen(msg, now)

    def _epoch_judged(self) -> None:
        super()._epoch_judged()
        least, self._owd_epoch = self._owd_epoch, math.inf
        total, count, self._owd_sum, self._owd_count = self._owd_sum, self._owd_count, 0.0, 0
        if not count:
            self._queue_now = True  # nothing measured: the paper's rule
            return
        self._owd_minima.append(least)
        self._queue_now = total / count - self._least_owd() >= self.QUEUE_RTTS * self.artt_value

    def _least_owd(self) -> float:
        return min(self._owd_epoch, min(self._owd_minima, default=math.inf))

    def _sooner_than_its_queue(self, took: float, owd: float) -> bool:
        """Whether a join answered ``took`` s after it was sent, by a packet of
        one-way delay ``owd``, came sooner than that packet's queueing delay:
        a switch past the queue answered it (paper 4.4)."""
        return bool(self._owd_minima) and took < owd - self._least_owd()


class _UpwardTimes(_Base):
    """A join's upward time (join to first packet less that packet's one-way
    delay), remembered for ``UPWARD_MEMORY`` s from steady-state joins."""

    UPWARD_MEMORY = 120.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        #: (time, upward time + wait + clock offset, channel gap), oldest first
        self._upward: deque[tuple[float, float, float]] = deque()

    def _mrtt_sample(self, now: float, mrtt: float, raw: float, owd: float | None, gap: float) -> float:
        if owd is not None:
            if not self.startup:
                self._upward.append((now, raw - owd, gap))
            self._forget_upward(now)
        return super()._mrtt_sample(now, mrtt, raw, owd, gap)

    def _forget_upward(self, now: float) -> None:
        while self._upward and self._upward[0][0] < now - self.UPWARD_MEMORY:
            self._upward.popleft()

    def _whole_way(self) -> tuple[float, float] | None:
        """(floor, upward time) of the joins that went the whole way, or None
        before two samples: the floor is the second largest up + wait - gap
        (one late packet cannot lift it), the upward time the lower median of
        up + wait - gap/2 at or above it."""
        if len(self._upward) < 2:
            return None
        floor = heapq.nlargest(2, (u - g for _, u, g in self._upward))[1]
        return floor, statistics.median_low(u - g / 2 for _, u, g in self._upward if u >= floor)


class _ForgivesOverflow(_Base):
    """A start-up loss that cannot be the session's own overshoot is forgiven
    with the further losses of its overflow (``FORGIVE_RTTS`` spans; at most
    ``FORGIVE_OVERFLOWS`` overflows, 0: every one)."""

    FORGIVE_RTTS = 2.0
    FORGIVE_OVERFLOWS = 0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._overflow = CompetitorOverflow(self.FORGIVE_RTTS, self.FORGIVE_OVERFLOWS)

    def _startup_loss_forgiven(self, now: float, span: float) -> bool:
        return self._overflow.forgives(now, span, self._not_its_own())

    def _not_its_own(self) -> bool:
        """Whether a start-up loss now cannot be the session's own overshoot."""
        return False

    @property
    def startup_forgiven(self) -> int:
        return self._overflow.forgiven


@rule("precision_artt", "ARTT weighs each MRTT sample by the inverse of its spread")
class PrecisionArtt(_Base):
    """ARTT weighs each MRTT sample by 1/(gap²/12 + ``MRTT_NOISE``²), so a
    sparse channel's sample (a wait of up to one gap) does not set it for minutes."""

    MRTT_NOISE = 0.005

    def _new_artt(self) -> Any:
        return PrecisionWeightedMean(self.ARTT_ALPHA)

    def _artt_sample(self, mrtt: float, gap: float) -> None:
        self.artt.update(mrtt, gap * gap / 12.0 + self.MRTT_NOISE ** 2)
        self.have_artt = True


@rule("artt_follows", "ARTT's averaging fraction is 0.5, not the appendix's 0.25")
class ArttFollows(_Base):
    """ARTT's averaging fraction is 0.5: at one join per 10-17 s, 0.25 took
    a minute to follow a queue TCP built."""

    ARTT_ALPHA = 0.5


@rule("own_path_mrtt", "an MRTT sample answered by a nearer switch is raised to the receiver's own path")
class OwnPath(_UpwardTimes):
    """An MRTT sample below the whole way's upward time was answered by a
    nearer switch (paper 4.4): it is raised to that time plus its packet's
    one-way delay."""

    mrtt_raised = 0

    def _mrtt_sample(self, now: float, mrtt: float, raw: float, owd: float | None, gap: float) -> float:
        mrtt = super()._mrtt_sample(now, mrtt, raw, owd, gap)
        way = self._whole_way() if owd is not None else None
        if way is None or owd is None or raw - owd >= way[0]:
            return mrtt  # unknown, or the join went the whole way: the paper's sample
        if way[1] + owd > mrtt:
            self.mrtt_raised += 1
            return way[1] + owd
        return mrtt


class _NewestWave(_Base):
    """The newest wave of the last join decision, until its first packet
    says how soon it came: ``took`` s after the join, ``owd`` s after it was sent."""

    _probe: tuple[int, float] | None = None  # (wave, join time)

    def _subscribe(self, cn: int, now: float) -> None:
        super()._subscribe(cn, now)
        self._probe = (cn, now)
        self._newest_joined()

    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        super()._packet_seen(msg, now)
        if self._probe is not None and self._probe[0] == msg.cn:
            t_join, self._probe = self._probe[1], None
            if msg.timestamp:
                self._newest_answered(now - t_join, wire.seconds_since(msg.timestamp, now))

    def _join_timeout(self, now: float) -> None:
        if self.pending is not None and self.pending[0] != self.T:
            self._probe = None
        super()._join_timeout(now)

    def _newest_joined(self) -> None:
        """A wave became the decision's newest."""

    def _newest_answered(self, took: float, owd: float) -> None:
        """The newest wave's first packet came."""


@rule("join_past_queue_free", "a join answered past the queue neither blocks (3.3) nor ends start-up")
class PastQueueFree(_ForgivesOverflow, _OneWayDelays, _NewestWave):
    """When a decision's newest wave came sooner than its packet's queueing
    delay (a nearer switch carried it, paper 4.4), it loaded nothing there:
    until the next join neither 3.3's block nor a start-up loss holds."""

    last_join_past_queue = False
    joins_past_queue = 0

    def _newest_joined(self) -> None:
        super()._newest_joined()
        self.last_join_past_queue = False

    def _newest_answered(self, took: float, owd: float) -> None:
        super()._newest_answered(took, owd)
        self.last_join_past_queue = self._sooner_than_its_queue(took, owd)
        self.joins_past_queue += self.last_join_past_queue

    def _buffers_draining(self, now: float, rr_rate: float) -> bool:
        return super()._buffers_draining(now, rr_rate) and not self.last_join_past_queue

    def _not_its_own(self) -> bool:
        return super()._not_its_own() or self.last_join_past_queue


class _RecentRates(_Base):
    """The RR of the last RECENT_EPOCHS full epochs since the last join took effect, for the rules
    that read it (``trr_recent``, ``join_experiment``, ``startup_carried``; ``rates_follow_decay``
    decays it with the averages); the paper keeps no such record."""

    RECENT_EPOCHS = 4

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rr_recent: deque[float] = deque(maxlen=self.RECENT_EPOCHS)

    def _join_answered(self) -> None:
        super()._join_answered()
        self._rr_recent.clear()

    def _epoch_averaged(self, rr_rate: float) -> None:
        super()._epoch_averaged(rr_rate)
        if self.pending is None and self.join_effect_epochs >= 1:
            self._rr_recent.append(rr_rate)  # a full epoch after the last join took effect


@rule("rates_follow_decay", "ARR and TRR follow the waves' decay each epoch; a quiet wave takes P·BCR from ARR")
class RatesFollowDecay(_RecentRates):
    """ARR and TRR's averages are decayed by P^(EL/TSD) each epoch, the
    waves' known decay, so eq. 5 no longer fails on their lag; a quiet wave
    takes P·BCR from ARR instead of dividing it by Γ."""

    def _carry_averages(self) -> None:
        super()._carry_averages()
        d = self.p.p ** (self.p.epoch / self.p.tsd)  # a fixed subscription's fall over one epoch
        if self.arr is not None:
            self.arr *= d
        if self._trr_ewma is not None:
            self._trr_ewma *= d
        for i, rate in enumerate(self._rr_recent):
            self._rr_recent[i] = rate * d

    def _arr_after_leave(self) -> None:
        # The quiet wave ended at BCR and the base channel steps back from P·BCR to BCR.
        assert self.arr is not None
        self.arr = max(self.arr - self.p.p * self.p.base_rate_pps, self.p.base_rate_pps)


@rule("trr_recent", "TRR is the mean RR since the last join took effect", "RFC 5348 4.3 (X_recv cap)")
class TrrRecent(_RecentRates):
    """TRR in eq. 5's Γ·TRR cap is the mean RR over the full epochs since the
    last join (RFC 5348 4.3's X_recv cap); the EWMA paced joins to one per 4-5 s."""

    def _true_rate(self) -> float | None:
        if self._rr_recent:
            return sum(self._rr_recent) / len(self._rr_recent)
        return super()._true_rate()


@rule("join_centred", "out of start-up, joins straddle the equation rate (√Γ)")
class JoinCentred(_Base):
    """Out of start-up a join is allowed while Γ·ARR ≤ √Γ·max(SSR, REQN), so
    the reception straddles the equation rate instead of sitting below it."""

    def _join_limit(self, g: float) -> float:
        if self.startup:
            return super()._join_limit(g)
        trr = self.trr if self.trr is not None else 0.0
        return min(max(self.ssr, self.reqn()) * math.sqrt(g), g * trr * (1 + TRR_HEADROOM), self.mrr)


@rule("join_experiment", "a steady-state join that a loss answers without more reception is left again",
      "RLM's join experiments (McCanne et al. 1996); " + PAGE)
class JoinExperiment(_RecentRates):
    """A steady-state join is an experiment (RLM): a loss event within
    ``EPOCHS`` full epochs, without half the wave's rate more, leaves it."""

    EPOCHS = 2
    _experiment: tuple[int, float, float] | None = None  # (wave, RR before its join, Γ) while on trial
    experiments_failed = 0

    def _join(self, now: float, g: float) -> None:
        assert self.tsi is not None
        cn, rr_before, steady = (self.tsi + self.nwc) % self.T, self.last_rr, not self.startup
        super()._join(now, g)
        if steady:
            self._experiment = (cn, rr_before, g)

    def _epoch_judged(self) -> None:
        super()._epoch_judged()
        if self._experiment is None or self.pending is not None or not self._rr_recent:
            return
        cn, rr_before, g = self._experiment
        received = sum(self._rr_recent) / len(self._rr_recent)
        if self.events_since_join and received < (1 + (g - 1) / 2) * rr_before:
            self._experiment = None
            if self.joined and self.joined[-1] == cn and self.nwc > 1:
                self._drop_channel(cn)
                self.experiments_failed += 1
                self.nwc -= 1
                if self.arr is not None:
                    self.arr /= gamma(self.p.p, self.nwc)
        elif self.join_effect_epochs >= self.EPOCHS:
            self._experiment = None


@rule("startup_joins", "a start-up decision joins up to three waves")
class StartupJoins(_Base):
    """A start-up decision joins up to ``STARTUP_JOINS`` waves while
    Γ·ARR ≤ TRATE (3.2 joins one, about 1 s per wave)."""

    STARTUP_JOINS = 3

    def _join(self, now: float, g: float) -> None:
        super()._join(now, g)
        if self.startup:
            _add_waves(self, now, self.trate, self.STARTUP_JOINS - 1)


@rule("startup_carried_clock", "in start-up, a wave that comes carried brings the next joins at once, not at "
      "the next epoch", "RFC 5681 3.1 (slow start: growth clocked by acknowledgements); paper 4.4; " + PAGE)
class StartupCarriedClock(_Base):
    """In start-up, the first packet of a wave of the latest joins that left the
    sender before its join (a switch on the path already held it, paper 4.4)
    is the evidence ``startup_carried`` waits an epoch for: the next joins
    follow at once, up to §3.2's start-up target over the reception now
    (Γ·ARR ≤ Γ³·ARR, max(SSR, REQN), MRR), and each of their carried answers
    brings the next, as acknowledgements clock slow start.  Any wave of the
    latest joins counts (waves are held oldest first: a switch holding one
    holds the older ones), so sparse waves, whose next packet is rarely sent
    before the join, do not hide the evidence of a denser one.  A loss event,
    the end of start-up or joins whose answers all came the whole way stop the
    chain; each step overshoots at most as one start-up decision does."""

    clocked_joins = 0  # steps taken on a carried answer
    clocked_undone = 0  # waves of a step left because they came the whole way

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._latest: dict[int, float] = {}  # the latest joins' unanswered waves -> join time
        self._latest_at = -math.inf
        self._latest_clocked = False  # the latest joins were a step of this rule

    def _subscribe(self, cn: int, now: float) -> None:
        super()._subscribe(cn, now)
        if now != self._latest_at:
            self._latest_at, self._latest_clocked = now, False
            self._latest.clear()
        self._latest[cn] = now

    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        super()._packet_seen(msg, now)
        t_join = self._latest.pop(msg.cn, None)
        if t_join is None or not msg.timestamp:
            return  # not one of the latest joins
        owd = wire.seconds_since(msg.timestamp, now)
        if now - t_join >= owd:
            # it came the whole way; a step's wave dense enough (a packet each owd or more
            # often) that a switch holding it would have answered with an earlier packet is
            # past what the neighbours hold: leave it and the newer ones of its step
            if self._latest_clocked and msg.cn in self.joined and self._wave_gap(msg.cn) < owd:
                self._undo_step_from(msg.cn)
            return
        self._latest.clear()  # one step per set of joins
        if (not self.startup or self.arr is None or self.tsi is None or self.in_loss_event(now)
                or self.nwc >= self.N):
            return
        limit = min(max(self.ssr, self.reqn()), gamma(self.p.p, self.nwc) ** 3 * self.arr, self.mrr)
        if gamma(self.p.p, self.nwc) * self.arr > limit:
            return
        # the latest joins took effect: what counts since a join (3.2's full epoch, TRR) starts again
        self.join_effect_epochs = self.events_since_join = 0
        self.max_rr_since_join = 0.0
        self._join_answered()
        self.clocked_joins += 1
        _add_waves(self, now, lambda: limit)
        self._latest_clocked = True

    def _wave_gap(self, cn: int) -> float:
        """The packet gap of joined wave ``cn`` at its share of ARR (its Γ step, as the core's join)."""
        assert self.arr is not None
        k = self.joined.index(cn)
        share = self.arr * (1 - 1 / gamma(self.p.p, k)) / math.prod(gamma(self.p.p, i) for i in range(k + 1, self.nwc))
        return 1.0 / max(share, 1e-6)

    def _undo_step_from(self, cn: int) -> None:
        self._latest.clear()
        for c in reversed(self.joined[self.joined.index(cn):]):
            self._drop_channel(c)
            self.nwc -= 1
            self.clocked_undone += 1
            if self.arr is not None:
                self.arr /= gamma(self.p.p, self.nwc)


@rule("startup_carried", "in start-up, waves a nearer switch already carried are joined at every epoch",
      "paper 4.4; " + PAGE)
class StartupCarried(_RecentRates, _NewestWave):
    """In start-up, a newest wave that came before any packet sent after the join
    could have (a nearer switch carried it, paper 4.4) brings the next decision one
    epoch after it took effect, not two: up to ``STARTUP_JOINS`` waves under Γ³·ARR."""

    STARTUP_JOINS = 3
    carried = False  # the last decision's newest wave came from a nearer switch
    _early = False  # the last decision came before a full epoch of its predecessor's RR
    early_decisions = 0

    def _newest_joined(self) -> None:
        super()._newest_joined()
        self.carried = False

    def _newest_answered(self, took: float, owd: float) -> None:
        super()._newest_answered(took, owd)
        self.carried = took < owd

    def _true_rate(self) -> float | None:
        # trr_recent's mean of full epochs is still empty: TRR is at least the last epoch's RR
        trr, self._early = super()._true_rate(), self._early and not self._rr_recent
        return max(trr or 0.0, self.last_rr) if self._early else trr

    def _decide_join(self, now: float, rr_rate: float) -> None:
        if (not (self.startup and self.join_effect_epochs >= 1 and self.carried) or self.arr is None
                or self.tsi is None or self.pending is not None or self.in_loss_event(now) or self.nwc >= self.N):
            super()._decide_join(now, rr_rate)
            return
        g = gamma(self.p.p, self.nwc)
        limit = min(max(self.ssr, self.reqn()), g ** 3 * self.arr * (1 + TRR_HEADROOM), self.mrr)
        if g * self.arr > limit:
            super()._decide_join(now, rr_rate)
            return
        before, self._early = self.nwc, True
        self.early_decisions += 1
        self._join(now, g)
        _add_waves(self, now, lambda: limit, self.STARTUP_JOINS - (self.nwc - before))


@rule("startup_shed", "after start-up, leave the newest waves the path does not carry")
class StartupShed(_Base):
    """``SHED_EPOCHS`` epochs after start-up, if the subscription at the exit
    is at least Γ times the best RR since, the newest waves are left while
    the rest would still carry it."""

    SHED_EPOCHS = 3
    shed = 0
    _shed_from: float | None = None  # subscription at the start-up exit, until checked
    _shed_rr: list[float]  # RR of the epochs since the exit

    def _exit_startup(self, why: str) -> None:
        was = self.startup
        super()._exit_startup(why)
        if was:
            self._shed_from, self._shed_rr = self.arr, []

    def _epoch_begins(self, rr_rate: float) -> None:
        super()._epoch_begins(rr_rate)
        if self._shed_from is not None and self.pending is None:
            self._shed_rr.append(rr_rate)
            if len(self._shed_rr) >= self.SHED_EPOCHS:
                self._shed_unsupported(max(self._shed_rr))

    def _shed_unsupported(self, rr_rate: float) -> None:
        sub, self._shed_from = self._shed_from, None
        if sub is None or self.nwc <= 1 or sub < gamma(self.p.p, self.nwc - 1) * rr_rate:
            return
        while self.nwc > 1 and self.arr is not None and sub / gamma(self.p.p, self.nwc - 1) >= rr_rate:
            g = gamma(self.p.p, self.nwc - 1)
            self._drop_channel(self.joined[-1])
            self.shed += 1
            sub /= g
            self.arr /= g
            self.nwc -= 1

    def _undo_join(self, cn: int) -> None:
        if self._shed_from is not None and self.arr is not None and self.nwc > 0:
            self._shed_from /= gamma(self.p.p, self.nwc - 1)  # the undone waves were the newest
        super()._undo_join(cn)


@rule("startup_min_window", "a start-up loss below TCP's initial window per round trip is forgiven",
      "RFC 6928 initial window; " + PAGE)
class StartupMinWindow(_ForgivesOverflow, _OneWayDelays):
    """A start-up loss while ARR carries fewer than ``MIN_WINDOW`` packets per
    round trip (RFC 6928's initial window) is a competitor's overflow.  The
    round trip: ``initial_rtt``, or ARTT within [``WINDOW_MIN_RTT``, it] while a queue stands."""

    MIN_WINDOW = 10.0
    WINDOW_MIN_RTT = 0.2

    def _not_its_own(self) -> bool:
        rtt = self.p.initial_rtt
        if self._queue_now:  # ARTT is initial_rtt until measured
            rtt = max(min(self.artt_value, rtt), self.WINDOW_MIN_RTT)
        return (self.arr or 0.0) < self.MIN_WINDOW / rtt or super()._not_its_own()


@rule("first_interval_at_loss", "after a loss-free start-up exit, the first loss interval is set at the first loss",
      "RFC 5348 6.3.1")
class FirstIntervalAtLoss(_Base):
    """After a loss-free start-up exit the first loss interval is set at the
    first loss from the reception then (RFC 5348 6.3.1); until then LOSSP
    follows the best epoch, so REQN never sits below what the path carried."""

    #: "before-loss" until the first loss event, "at-loss" until an epoch without one.
    _first_interval: str | None = None

    def _exit_startup(self, why: str) -> None:
        was = self.startup
        super()._exit_startup(why)
        if was and why != "loss":
            self._first_interval = "before-loss"

    def _count_loss_event(self) -> None:
        if self._first_interval is None:
            super()._count_loss_event()
            return
        self._first_interval = "at-loss"  # the events up to an epoch without one are the first's
        self._set_lossp_for(max(self.last_rr, self.trr or 0.0), fresh=True)

    def _steady_epoch(self, now: float, rr_rate: float, irr: int, events: int) -> None:
        super()._steady_epoch(now, rr_rate, irr, events)
        if self._first_interval is None:
            return
        if rr_rate > self.reqn():
            self._set_lossp_for(rr_rate, fresh=True)
        if self._first_interval == "at-loss" and not events and not self.in_loss_event(now):
            self._first_interval = None


@rule("loss_event_episode", "losses within one span of the event's last loss extend it (at most 4 spans)",
      "RFC 6582 3.2")
class LossEventEpisode(_Base):
    """A loss within one span of the event's last loss extends the event, up
    to ``MAX_SPANS`` spans: one overflow, one event (RFC 6582 3.2)."""

    MAX_SPANS = 4.0
    loss_event_cap = -math.inf  # the latest end of the current loss event
    _event_sent: tuple[int, int, int] | None = None
    _sent_at: int | None = None

    def _loss_event_begins(self, now: float, span: float) -> None:
        super()._loss_event_begins(now, span)
        self.loss_event_cap = now + self.MAX_SPANS * span

    def _loss_in_event(self, now: float, span: float) -> None:
        super()._loss_in_event(now, span)
        if self._sent_at is not None and self._event_sent is not None:
            first, end, cap = self._event_sent
            self._event_sent = (first, min(cap, max(end, max(0, self._sent_at) + int(span * 1e6))), cap)
        if self.in_loss_event(now):
            self.loss_event_until = min(now + span, self.loss_event_cap)


@rule("loss_event_send_time", "loss events on the sender's clock, spanning the round trip now",
      "RFC 5348 5.2; RFC 6582 3.2")
class LossEventSendTime(_UpwardTimes):
    """Loss events on the sender's clock (RFC 5348 5.2): a loss belongs to the event
    it was sent in; the event spans the round trip now, within [ARTT, 2·ARTT]."""

    _event_sent: tuple[int, int, int] | None = None  # (first lost packet's send time, end, cap µs after)
    _lost_sent: int | None = None
    _sent_at: int | None = None  # the last loss's offset into the event, µs

    def _loss_event_span(self, now: float, revealed_ts: int) -> float:
        artt = super()._loss_event_span(now, revealed_ts)
        self._forget_upward(now)
        way = self._whole_way()
        if way is None:
            return artt
        return min(2 * artt, max(artt, way[1] + wire.seconds_since(revealed_ts, now)))

    def _same_loss_event(self, now: float, count: int, sent: tuple[int, int] | None, span: float) -> bool:
        self._sent_at = None
        self._lost_sent = None
        if sent is not None:
            prev, cur = sent
            self._lost_sent = (prev + wire.ts_diff_us(cur, prev) // (count + 1)) & 0xFFFFFFFF
        if self._lost_sent is None or self._event_sent is None:
            return super()._same_loss_event(now, count, sent, span)
        first, end, _cap = self._event_sent
        at = wire.ts_diff_us(self._lost_sent, first)
        if not -int(span * 1e6) <= at <= end:
            return False  # sent after the event, or a span before it: its own event
        self._sent_at = at
        return True

    def _loss_event_begins(self, now: float, span: float) -> None:
        super()._loss_event_begins(now, span)
        span_us = int(span * 1e6)
        self._event_sent = (None if self._lost_sent is None
                            else (self._lost_sent, span_us, int(LossEventEpisode.MAX_SPANS * span_us)))


@rule("history_discounting", "older loss intervals weigh less after a long loss-free stretch", "RFC 5348 5.5",
      requires=("interval_loss",))
class HistoryDiscounting(_Base):
    """RFC 5348 5.5: older loss intervals weigh less after a long loss-free
    stretch; as in TFMCC, the rule switches it on in the estimator it wraps."""

    def _new_loss_filter(self) -> Any:
        lossp = super()._new_loss_filter()
        lossp.discounting = True
        return lossp


@rule("interval_loss", "LOSSP is TFRC's mean of the last 8 loss intervals", "RFC 5348 5.4")
class IntervalLoss(_Base):
    """LOSSP is TFRC's mean of the last 8 loss intervals (RFC 5348 5.4); the
    appendix's filter needed 100-150 s from start-up to the share."""

    def _new_loss_filter(self) -> Any:
        return IntervalLossFilter()


@rule("outage_not_loss", "a silence of max(1 s, 4 ARTT) ending 8+ packets later is an outage, not loss",
      "RFC 5348 5.2; " + PAGE)
class OutageNotLoss(_Base):
    """A long silence that ends with many packets missing is an outage, not
    congestion: sequence state restarts and the gap is no loss."""

    _last_heard: float | None = None
    outages = 0

    def _on_packet(self, msg: WebrcData, size: int, now: float) -> None:
        last, self._last_heard = self._last_heard, now
        exp = self.expect.get(msg.cn)
        missing = 0 if exp is None else (msg.psn - exp) & 0xFFFF  # 0x8000 and above: an old packet
        if last is not None and missing < 0x8000 and outage(now - last, self.artt_value, missing):
            self.outages += 1
            self.expect.clear()  # every channel's numbering restarts: no gap is a loss
            self.last_psn.clear()  # nor a wave's end counted from before the outage
            self.last_ts.clear()
        super()._on_packet(msg, size, now)


@rule("stamp_join",
      "under a short stamped queue, join toward half the spare rate each epoch; hold when none is spare",
      "RFC 4782 3.1 (Quick-Start); RCP; ABC's brake; " + PAGE)
class StampJoin(_Base):
    """Under a short queue in a fully stamped epoch: no join while nothing is spare
    (ABC's brake); in start-up, as many waves as ARR + a share of the spare rate holds
    (Quick-Start, RFC 4782 3.1).  Otherwise ``default`` decides: a queue TCP fills never speeds it up."""

    SPARE_SHARE = 0.5  # of the tightest port's spare rate (its lower bound), per epoch

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self._stamps = StampWindow()
        #: the last full epoch's stamps: (every packet stamped, worst queue s, spare bit/s)
        self.stamp_view: tuple[bool, float | None, float | None] = (False, None, None)

    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        super()._packet_seen(msg, now)
        self._stamps.add(msg.stamp)

    def _epoch_begins(self, rr_rate: float) -> None:
        super()._epoch_begins(rr_rate)
        w = self._stamps
        self.stamp_view = (w.stamped, w.queue_s(), w.spare_bps())
        w.reset()

    def _decide_join(self, now: float, rr_rate: float) -> None:
        if not short_queue(self.stamp_view[1], self.artt_value) or self.arr is None:  # None: not stamped
            super()._decide_join(now, rr_rate)
            return
        spare_pps = (self.stamp_view[2] or 0.0) / (8.0 * self.p.packet_length)
        if spare_pps <= 0:
            return  # the path is full and its queue short: a join only builds one
        if not self.startup:
            super()._decide_join(now, rr_rate)  # out of start-up the equation and Γ·TRR decide
            return
        if self.tsi is None or self.pending is not None or self.in_loss_event(now) or self.nwc >= self.N:
            return
        limit = min(max(self.ssr, self.reqn()), self.mrr, self.arr + self.SPARE_SHARE * spare_pps)
        if gamma(self.p.p, self.nwc) * self.arr > limit:
            return
        self._join(now, gamma(self.p.p, self.nwc))
        _add_waves(self, now, lambda: limit)


#: ``stamped`` = ``default`` + the rules that read the stamp.
#: Profile ``default``: the paper plus the rules that earned their place, listed by name;
#: a rule registered above but not listed here is off until it is measured and listed.
DEFAULT = (
    "precision_artt",
    "artt_follows",
    "own_path_mrtt",
    "join_past_queue_free",
    "rates_follow_decay",
    "trr_recent",
    "join_centred",
    "join_experiment",
    "startup_joins",
    "startup_carried_clock",
    "startup_carried",
    "startup_shed",
    "startup_min_window",
    "first_interval_at_loss",
    "loss_event_episode",
    "loss_event_send_time",
    "history_discounting",
    "interval_loss",
    "outage_not_loss",
)
#: ``share_join`` is in no profile: beside a TCP flow it left WEBRC at 0.34 of TCP where
#: ``default`` holds 2.40 (docs/assistance.md); a session switches it on by name.
RULES = rule.book(default=DEFAULT, stamped=("stamp_join",))
