"""TCP throughput equation and the TFRC loss-interval history.

Both equation-based protocols (TFMCC, WEBRC) rest on a model of long-term TCP
throughput as a function of the loss event rate ``p`` and the round-trip time.
This module holds the equation in its full form and its simplified forms, their
inverses, and the loss-interval history TFRC (RFC 5348 section 5) and TFMCC
(paper section 2.3) use to turn packet losses into ``p``.

Units: packet size ``s`` in bytes, times in seconds, rates in **bytes per
second** unless a name says otherwise (``_pps`` packets per second).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass

from p4mcc.hosts.tcp_rules import DUPTHRESH, ReorderWindow

#: ``c`` of the simplified equation T = c·s / (R·sqrt(p)): sqrt(3/2) (TFMCC
#: paper appendix B, Mathis et al.).
SQRT_3_2 = math.sqrt(1.5)


def tcp_rate(s: float, rtt: float, p: float, t_rto: float | None = None, b: float = 1.0) -> float:
    """Full TCP throughput equation (Padhye et al.; TFMCC eq. 1, RFC 5348 sec. 3.1).

    X = s / (R·sqrt(2bp/3) + t_RTO·3·sqrt(3bp/8)·p·(1 + 32p²)), with
    t_RTO = 4·R unless given and b packets acknowledged per ACK.  Returns
    bytes/s; ``p == 0`` gives infinity (no loss: the equation sets no limit).
    """
    if rtt <= 0:
        raise ValueError(f"rtt must be positive, got {rtt}")
    if not 0 <= p <= 1:
        raise ValueError(f"loss event rate must be in [0, 1], got {p}")
    if p == 0:
        return math.inf
    rto = 4.0 * rtt if t_rto is None else t_rto
    denom = rtt * math.sqrt(2 * b * p / 3) + rto * 3 * math.sqrt(3 * b * p / 8) * p * (1 + 32 * p * p)
    return s / denom


def rto(rtt: float, floor: float = 0.0) -> float:
    """t_RTO for the equation: 4·R (RFC 5348 4.3), at least ``floor``.

    RFC 5348 4.3 allows a more accurate t_RTO than 4·R; a TCP flow's RTO
    has RFC 6298's 1 s floor, so at loss rates where TCP times out, 4·R of a
    short path credits it with recoveries it does not make.
    """
    return max(4.0 * rtt, floor)


def tcp_rate_webrc_pps(rtt: float, p: float, t_rto: float | None = None) -> float:
    """WEBRC's form of the equation (WEBRC eq. 1 and eq. 6), packets/s.

    R = sqrt(3/2) / (t_RTT·sqrt(p)·(1 + 9p(1 + 32p²))): the full equation with
    t_RTO = 4·t_RTT and min(1, 27p/8) pessimistically taken as 27p/8.  A
    larger ``t_rto`` scales the 9p term by t_RTO / (4·t_RTT).
    """
    if rtt <= 0:
        raise ValueError(f"rtt must be positive, got {rtt}")
    if p <= 0:
        return math.inf
    k = 1.0 if t_rto is None else t_rto / (4.0 * rtt)
    return SQRT_3_2 / (rtt * math.sqrt(p) * (1 + 9 * k * p * (1 + 32 * p * p)))


def tcp_rate_simple(s: float, rtt: float, p: float, c: float = SQRT_3_2) -> float:
    """Simplified equation T = c·s / (R·sqrt(p)) (TFMCC eq. 4, WEBRC eq. 2), bytes/s."""
    if rtt <= 0:
        raise ValueError(f"rtt must be positive, got {rtt}")
    if p <= 0:
        return math.inf
    return c * s / (rtt * math.sqrt(p))


def loss_rate_simple(s: float, rtt: float, rate: float, c: float = SQRT_3_2) -> float:
    """Inverse of :func:`tcp_rate_simple`: p = (c·s / (T·R))², capped at 1."""
    if rate <= 0:
        return 1.0
    return min(1.0, (c * s / (rate * rtt)) ** 2)


def invert(f, target: float, lo: float = 1e-12, hi: float = 1.0) -> float:
    """The ``p`` in [lo, hi] with ``f(p) == target`` for decreasing ``f`` (bisection).

    Used to solve the full equation (or WEBRC's eq. 6) for the loss event rate
    that gives a known rate; returns ``lo`` or ``hi`` when the target lies
    outside the range.
    """
    if f(lo) <= target:
        return lo
    if f(hi) >= target:
        return hi
    for _ in range(200):
        mid = math.sqrt(lo * hi)  # geometric: p spans many decades
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return math.sqrt(lo * hi)


def loss_rate_full(s: float, rtt: float, rate: float, t_rto: float | None = None) -> float:
    """Inverse of :func:`tcp_rate`: the loss event rate that yields ``rate`` bytes/s."""
    return invert(lambda p: tcp_rate(s, rtt, p, t_rto), rate)


def loss_events_per_rtt(p: float) -> float:
    """Loss events per RTT a TCP flow sees at loss event rate p (TFMCC appendix A).

    Rate in packets per RTT times p; its maximum, about 0.13, bounds how long
    loss aggregation with a too-high initial RTT can matter.
    """
    if p <= 0:
        return 0.0
    return p * tcp_rate(1.0, 1.0, p)


# ---------------------------------------------------------------------------
# Loss-interval history
# ---------------------------------------------------------------------------


def tfrc_weights(n: int = 8) -> tuple[float, ...]:
    """Loss-interval weights (RFC 5348 sec. 5.4): 1 for the newest n/2, then falling.

    For n = 8: 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 -- the paper's {5,5,5,5,4,3,2,1}/5.
    """
    if n < 2 or n % 2:
        raise ValueError(f"number of loss intervals must be even and >= 2, got {n}")
    half = n // 2
    return tuple(1.0 if i < half else 1.0 - (i - (half - 1)) / (half + 1) for i in range(n))


def _weighted_mean(weights: tuple[float, ...], values: list[float]) -> float:
    w = weights[: len(values)]
    return sum(wi * v for wi, v in zip(w, values)) / sum(w)


def average_loss_interval(weights: tuple[float, ...], closed: list[float], open_interval: float,
                          discounting: bool = False) -> float:
    """RFC 5348 5.4: max(l_avg(k), l_avg(k-1)) over ``closed`` (newest first, not empty).

    ``l_avg(k-1)`` weighs the closed intervals alone, ``l_avg(k)`` the open
    one in front of them, so a loss-free stretch raises the average as soon
    as it is longer than the intervals before it.  ``discounting``: RFC 5348
    5.5, older intervals weigh less once the open one exceeds twice the
    average.  TFMCC's :class:`LossHistory` and WEBRC's
    :class:`hosts.estimators.IntervalLossFilter` both average this way.
    """
    n = len(weights)
    avg_closed = _weighted_mean(weights, closed[:n])
    with_open = [open_interval, *closed][:n]
    if discounting and avg_closed > 0 and open_interval > 2 * avg_closed:
        # RFC 5348 5.5: a long loss-free stretch discounts older intervals.
        df = max(0.5, 2 * avg_closed / open_interval)
        w = weights[: len(with_open)]
        wd = [w[0]] + [wi * df for wi in w[1:]]
        avg_open = sum(wi * v for wi, v in zip(wd, with_open)) / sum(wd)
    else:
        avg_open = _weighted_mean(weights, with_open)
    return max(avg_open, avg_closed)


@dataclass
class LossEvent:
    """A loss event: first lost sequence number and its (interpolated) time."""

    seq: int
    time: float


#: RFC 5348 5.1: a packet is lost once NDUPACK packets after it have arrived,
#: TCP's dupthresh.
NDUPACK = DUPTHRESH
#: Packets a hold keeps at most; past that the oldest hole counts as lost.
HOLD_MAX = 4096


class ReorderHold(ReorderWindow):
    """Packets past a hole, held until the hole fills or counts as lost.

    RFC 5348 5.1 declares a packet lost after NDUPACK later arrivals; at a few
    hundred packets per second that is a few milliseconds, less than a path
    that reorders holds a frame.  Once the path has been seen to reorder (a
    packet arrived below one already here), a hole also waits RACK's
    reordering window from the first packet past it (:class:`ReorderWindow`,
    widened by each packet that arrives after its hole was counted lost), as
    a TCP sender using RACK does.  A hole that fills is no loss; one that
    does not is lost at the time its neighbours arrived, as without the hold.
    """

    __slots__ = ("held", "_first_arrival")

    def __init__(self) -> None:
        super().__init__()
        #: (seq, arrival, rtt, owd) past the lowest hole, by sequence number.
        self.held: list[tuple[int, float, float, float | None]] = []
        self._first_arrival = math.inf  # the earliest arrival among the held packets

    def offer(self, seq: int, now: float, rtt: float, owd: float | None,
              highest: int) -> list[tuple[int, float, float, float | None]]:
        """Packet ``seq`` arrived above ``highest``, the history's highest;
        returns the packets the history takes now, in sequence order, each
        with the loss-event span ``rtt`` of this arrival."""
        i = bisect.bisect_left(self.held, (seq,))
        if i == len(self.held) or self.held[i][0] != seq:  # a duplicate of a held packet is dropped
            self.held.insert(i, (seq, now, rtt, owd))
            self.reordering_seen |= i < len(self.held) - 1
            self._first_arrival = min(self._first_arrival, now)
        window = self.window(rtt)
        out: list[tuple[int, float, float, float | None]] = []
        while self.held:
            first = self.held[0][0]
            if first != highest + 1:
                waited = now - self._first_arrival
                if len(self.held) < HOLD_MAX and (len(self.held) < NDUPACK or waited < window):
                    break
            # the hole below ``first`` filled, or counts as lost: release the run from it
            run = 1
            while run < len(self.held) and self.held[run][0] == first + run:
                run += 1
            # each loss spans the round trip known now, as a loss seen at once would after
            # the RTT measured meanwhile regrouped it (LossHistory.remodel)
            out.extend((q, t, rtt, d) for q, t, _, d in self.held[:run])
            del self.held[:run]
            self._first_arrival = min((h[1] for h in self.held), default=math.inf)
            highest = out[-1][0]
        return out


class LossHistory:
    """Aggregates losses into loss events and keeps the loss intervals.

    The driver of this class reports every arriving data packet with
    :meth:`on_packet` (sequence numbers may jump; the gap is the loss).  A
    loss starts a new loss event when it lies more than one RTT after the
    start of the current event (TFMCC 2.3, RFC 5348 5.2).  A loss interval is
    the number of packets from the start of one loss event to the start of the
    next; the newest, still open, interval runs to the highest sequence
    number seen.

    ``p = 1 / max(l_avg(k), l_avg(k-1))`` where ``l_avg(k)`` includes the open
    interval and ``l_avg(k-1)`` only closed ones (TFMCC 2.3).  With
    ``discounting`` the RFC 5348 5.5 history discounting is applied to
    ``l_avg(k)`` when the open interval is more than twice the average.
    """

    def __init__(self, n: int = 8, discounting: bool = False, hold_reordered: bool = False) -> None:
        self.weights = tfrc_weights(n)
        self.n = n
        self.discounting = discounting
        #: Packets past a hole, held until it fills or counts as lost
        #: (:class:`ReorderHold`); None: a gap is lost at once (the paper's rule).
        self.hold = ReorderHold() if hold_reordered else None
        #: Closed intervals, newest first (at most n kept).
        self.intervals: deque[float] = deque(maxlen=n)
        self.events: deque[LossEvent] = deque(maxlen=n + 1)
        self.highest_seq: int | None = None
        self.highest_time = 0.0
        self.packets = 0
        self.lost = 0
        #: Recent lost packets (seq, interpolated time, the one-way delay of
        #: the packet that revealed them or None), for :meth:`remodel`.
        self.losses: deque[tuple[int, float, float | None]] = deque(maxlen=4096)
        self._synthetic_first: float | None = None

    @property
    def has_loss(self) -> bool:
        return bool(self.events)

    def open_interval(self) -> float:
        """Packets since the start of the newest loss event (I_0)."""
        if not self.events or self.highest_seq is None:
            return 0.0
        return float(self.highest_seq - self.events[-1].seq + 1)

    def on_packet(self, seq: int, now: float, rtt: float, owd: float | None = None) -> bool:
        """Record packet ``seq`` arriving at ``now``; True if a new loss event began.

        ``rtt``: the round trip a loss event spans; ``owd``: this packet's
        one-way delay (sender clock to arrival, offset included), kept with
        the losses it reveals so that :meth:`remodel` can span each event by
        the round trip of its own time.
        """
        self.packets += 1
        if self.hold is None or self.highest_seq is None:
            return self._admit(seq, now, rtt, owd)
        if seq <= self.highest_seq:
            if self._was_lost(seq):
                self.hold.late(now, rtt)
            return False
        if not self.hold.held and seq == self.highest_seq + 1:
            return self._admit(seq, now, rtt, owd)  # in order, no hole open: nothing to hold
        new_event = False
        for args in self.hold.offer(seq, now, rtt, owd, self.highest_seq):
            if self._admit(*args):
                new_event = True
                self.hold.loss_event()
        return new_event

    def _was_lost(self, seq: int) -> bool:
        """Whether ``seq`` is among the remembered losses (kept in sequence order)."""
        i = bisect.bisect_left(self.losses, seq, key=lambda loss: loss[0])
        return i < len(self.losses) and self.losses[i][0] == seq

    def _admit(self, seq: int, now: float, rtt: float, owd: float | None) -> bool:
        """Enter ``seq`` into the history: a gap below it is lost now."""
        if self.highest_seq is None:
            self.highest_seq, self.highest_time = seq, now
            return False
        if seq <= self.highest_seq:  # reordered or duplicate: already counted as lost
            return False
        new_event = False
        gap = seq - self.highest_seq - 1
        if gap > 0:
            self.lost += gap
            t0, span, hs = self.highest_time, now - self.highest_time, self.highest_seq

            def when(k: int) -> float:
                # Interpolate the loss time between the neighbours that arrived.
                return t0 + span * k / (gap + 1)

            # Only event starts are visited (one per RTT of the gap), so the
            # work is bounded by the gap's duration, not its packet count.
            k = 1
            while k <= gap:
                t = when(k)
                if self._starts_event(t, self.events[-1].time if self.events else None, rtt):
                    self._start_event(hs + k, t)
                    new_event = True
                if span <= 0:
                    break  # all losses at one instant: one event
                # The first lost packet more than one RTT after the current event's first loss.
                nxt = math.floor((self.events[-1].time + rtt - t0) * (gap + 1) / span) + 1
                k = max(k + 1, nxt)
            assert self.losses.maxlen is not None
            for k in range(max(1, gap - self.losses.maxlen + 1), gap + 1):
                self.losses.append((hs + k, when(k), owd))
        self.highest_seq, self.highest_time = seq, now
        return new_event

    @staticmethod
    def _starts_event(t: float, event_start: float | None, rtt: float) -> bool:
        """Whether a loss at ``t`` opens a new event, the current one begun at
        ``event_start`` (None: none yet): RFC 5348 5.2, TFMCC 2.3."""
        return event_start is None or t - event_start > rtt

    def _start_event(self, seq: int, t: float) -> None:
        if self.events:
            self.intervals.appendleft(float(seq - self.events[-1].seq))
        self.events.append(LossEvent(seq, t))

    def set_first_interval(self, length: float) -> None:
        """Replace the (unknown) interval before the first loss event (TFMCC appendix B).

        The packets received before the first loss say little about the loss
        rate; the caller derives a synthetic first interval from the receive
        rate at the first loss instead.
        """
        length = max(1.0, length)
        self._synthetic_first = length
        if len(self.intervals) == 0:
            self.intervals.appendleft(length)
        else:
            self.intervals[-1] = length

    def scale_first_interval(self, factor: float) -> None:
        """Rescale the synthetic first interval (after the first real RTT measurement)."""
        if self._synthetic_first is not None and self.intervals and len(self.events) <= self.n:
            self._synthetic_first = max(1.0, self._synthetic_first * factor)
            self.intervals[-1] = self._synthetic_first

    def remodel(self, rtt: float, reverse: float | None = None) -> None:
        """Re-aggregate the remembered losses into loss events with a new RTT.

        TFMCC appendix A: losses aggregated with the (high) initial RTT must be
        regrouped once a real RTT is known, or the rate comes out too high.
        The synthetic first interval (appendix B) stays the oldest interval
        while it is still within the history.  ``reverse``: the measurement's
        receiver-to-sender delay (RTT less the one-way delay, TFMCC 2.4.3); a
        loss then spans the larger of ``rtt`` and the round trip at its own
        time, ``reverse`` plus its revealing packet's one-way delay, as the
        live rule does (a queue that has drained since the losses does not
        split the events they made).
        """
        if not self.losses:
            return
        events: list[LossEvent] = []
        for seq, t, owd in self.losses:
            span = rtt if reverse is None or owd is None else max(rtt, reverse + owd)
            if self._starts_event(t, events[-1].time if events else None, span):
                events.append(LossEvent(seq, t))
        closed = [float(b.seq - a.seq) for a, b in zip(events, events[1:])]
        if self._synthetic_first is not None and len(events) <= self.n:
            closed.insert(0, self._synthetic_first)
        self.events = deque(events[-(self.n + 1):], maxlen=self.n + 1)
        self.intervals = deque(reversed(closed[-self.n:]), maxlen=self.n)

    def average_interval(self) -> float:
        """max(l_avg(k), l_avg(k-1)); 0 before the first loss event."""
        if not self.intervals:
            return 0.0
        return average_loss_interval(self.weights, list(self.intervals), self.open_interval(),
                                     self.discounting)

    def loss_event_rate(self) -> float:
        """p = 1 / max(l_avg(k), l_avg(k-1)); 0 before any loss event."""
        avg = self.average_interval()
        return 1.0 / avg if avg > 0 else 0.0


#: An outage, not congestion: a silence of at least OUTAGE_S and OUTAGE_RTTS
#: round trips that ends OUTAGE_PACKETS or more packets later (a crashed switch,
#: a rerouted path); TFMCC's ``outage_restart``, WEBRC's ``outage_not_loss``.
OUTAGE_S, OUTAGE_RTTS, OUTAGE_PACKETS = 1.0, 4.0, 8


def outage(silence_s: float, rtt: float, missing: int) -> bool:
    """Whether ``silence_s`` without a packet, then ``missing`` packets lost, is an outage."""
    return missing >= OUTAGE_PACKETS and silence_s > max(OUTAGE_S, OUTAGE_RTTS * rtt)


class CompetitorOverflow:
    """The start-up rule TFMCC and WEBRC share: a competitor's overflow, forgiven.

    A start-up loss that comes while the session sends less than a TCP
    flow's initial window (RFC 6928) per RTT is not the session's own
    overshoot but a competitor's overflow (or, for a restarted WEBRC
    receiver, the shared overflow of neighbours that already hold the
    waves, or a join of one that its own switch answered past the queue:
    ``join_past_queue_free``).  It is forgiven with the further losses of
    the same overflow:
    those within ``rtts`` loss-event spans of it, because a TCP flow's
    slow-start overshoot fills the queue until its cut takes effect, a round
    trip and a reordering window (RFC 8985) after its first loss.  At most
    ``limit`` overflows are forgiven (0: every one that starts below the
    window).  TFMCC's ``forgive_competitor_overflow`` rule, WEBRC's ``startup_min_window``/
    ``startup_forgive_rtts`` (one overflow).
    """

    __slots__ = ("rtts", "limit", "forgiven", "until")

    def __init__(self, rtts: float, limit: int = 1) -> None:
        self.rtts = rtts
        self.limit = limit
        self.forgiven = 0  # overflows forgiven
        self.until = -math.inf  # a loss up to then belongs to a forgiven overflow

    def forgives(self, now: float, span: float, not_its_own: bool) -> bool:
        """Whether a start-up loss at ``now`` is forgiven; ``span`` is the
        loss event's round trip, ``not_its_own`` whether the loss cannot be
        the session's own overshoot now (it sends less than a TCP initial
        window per RTT, or its last join loaded nothing at the queue)."""
        if now <= self.until:
            return True
        if (self.limit and self.forgiven >= self.limit) or not not_its_own:
            return False
        self.forgiven += 1
        self.until = now + self.rtts * span
        return True
