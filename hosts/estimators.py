"""Estimators the cores share: WEBRC's self-adjusting filters.

RTT estimators (the EWMA, RFC 6298, the running minimum) live in :mod:`hosts.rtt`;
TCP Vegas' Diff and thresholds in :mod:`hosts.tcp_rules`.

WEBRC's self-adjusting estimators (WEBRC paper, appendix):

Two filters whose averaging fraction adapts to the data instead of being fixed:

* :class:`SelfAdjustingEwma` estimates the mean of a positive measurement
  (WEBRC uses it for the average multicast RTT, ARTT).  The fraction
  ``c = alpha * a**2 / v`` shrinks when the measurements vary a lot relative
  to their mean, so noisy MRTT samples (many receivers below one bottleneck)
  are averaged over more samples without knowing that number in advance.
* :class:`InverseLossEstimator` estimates 1/p for a {0, 1} event stream: its
  expected value settles at (1 - delta*p)/p.  It also accepts fractional
  inputs in [0, 1], which is how WEBRC's two-stage loss filter feeds it an
  epoch-smoothed loss-event fraction (:class:`TwoStageLossFilter`).
* :class:`SqrtInverseLossEstimator` is the appendix's variant estimating
  sqrt(1/p) directly.

Beyond the appendix, :class:`PrecisionWeightedMean` averages measurements
whose spread is known one by one (WEBRC's MRTT samples, each blurred by the
wait for its channel's next packet).
"""

from __future__ import annotations

from collections import deque

from p4mcc.hosts.tfrc import average_loss_interval, tfrc_weights


class SelfAdjustingEwma:
    """a_i = (1-c)·a_{i-1} + c·m_i, v_i = (1-c)·v_{i-1} + c·m_i², c = α·a²/v.

    Starts at a_0 = v_0 = 1 as the appendix says, unless ``initial`` is given
    (then a_0 = initial and v_0 = initial², the first sample's fraction is α).
    """

    def __init__(self, alpha: float, initial: float | None = None) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.a = 1.0 if initial is None else float(initial)
        self.v = 1.0 if initial is None else float(initial) ** 2
        self.samples = 0

    @property
    def fraction(self) -> float:
        """The averaging fraction the next sample will get."""
        return self.alpha * self.a * self.a / self.v if self.v > 0 else self.alpha

    def update(self, m: float) -> float:
        c = self.fraction
        self.a = (1 - c) * self.a + c * m
        self.v = (1 - c) * self.v + c * m * m
        self.samples += 1
        return self.a

    @property
    def value(self) -> float:
        return self.a


class PrecisionWeightedMean:
    """An exponentially forgetting mean in which each sample weighs 1/variance.

    ``N <- lam·N + m/var``, ``D <- lam·D + 1/var``, mean ``N/D``, ``lam = 1 - alpha``.
    With equal variances this is an EWMA whose fraction falls from 1 (the
    first sample) to ``alpha``.  A sample far less precise than the others
    barely moves the mean; a precise one after imprecise ones takes over at
    once.  That is what WEBRC's MRTT samples need: the first packet after a
    join comes after the multicast RTT plus a wait of up to one packet gap of
    the channel, so a sample from the 1 packet/s base channel spreads over a
    second while one from a busy wave is exact to a few milliseconds.
    """

    def __init__(self, alpha: float) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.num = 0.0
        self.den = 0.0

    def update(self, m: float, variance: float) -> float:
        if variance <= 0:
            raise ValueError("a sample's variance must be positive")
        lam = 1.0 - self.alpha
        self.num = lam * self.num + m / variance
        self.den = lam * self.den + 1.0 / variance
        return self.value

    @property
    def value(self) -> float:
        return self.num / self.den if self.den > 0 else 0.0


class InverseLossEstimator:
    """F_i = F_{i-1} + δ if m_i = 0, else (1-δ)·(F_{i-1} + δ); E[F] -> (1-δp)/p.

    For fractional m (expected loss events per packet) the update is
    F_i = (1 - δ·m)·(F_{i-1} + δ), which matches both cases at m = 0 and 1.
    :attr:`loss_rate` is 1/(F + δ), whose expectation is p.
    """

    def __init__(self, delta: float, initial: float = 0.0) -> None:
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.delta = delta
        self.f = initial

    def update(self, m: float, count: int = 1, delta: float | None = None) -> float:
        """Apply ``count`` packets, each with loss-event indicator (or fraction) ``m``.

        ``delta`` overrides δ for these packets (a shorter memory while the
        history is young, :class:`TwoStageLossFilter`).
        """
        if not 0 <= m <= 1:
            raise ValueError(f"measurement must be in [0, 1], got {m}")
        d = self.delta if delta is None else delta
        k = 1 - d * m
        if count <= 0:
            return self.f
        if m == 0:
            self.f += d * count
        else:
            # Closed form of ``count`` steps of F <- k(F + d): fixed point F* = k·d/(1-k).
            fixed = k * d / (1 - k)
            self.f = fixed + (self.f - fixed) * k**count
        return self.f

    def set_loss_rate(self, p: float) -> None:
        """Reset so that :attr:`loss_rate` equals ``p`` (WEBRC start-up exit)."""
        self.f = max(0.0, 1.0 / p - self.delta)

    @property
    def loss_rate(self) -> float:
        return 1.0 / (self.f + self.delta)


class SqrtInverseLossEstimator:
    """G_i = G + δ'/G if m = 0, else (1-δ')(G + δ'/G); estimates sqrt(1/p)."""

    def __init__(self, delta: float, initial: float = 1.0) -> None:
        self.delta = delta / 2
        self.g = max(initial, 1e-9)

    def update(self, m: int) -> float:
        step = self.g + self.delta / self.g
        self.g = step if m == 0 else (1 - self.delta) * step
        return self.g

    @property
    def loss_rate(self) -> float:
        return 1.0 / (self.g * self.g)


class TwoStageLossFilter:
    """WEBRC's LOSSP: an epoch EWMA of the loss-event fraction, then the F estimator.

    Loss events in WEBRC bunch up just after joins; the first stage (a plain
    EWMA with fixed fraction ``beta`` applied once per epoch) spreads them over
    a few time slots; the second stage applies :class:`InverseLossEstimator`
    to every packet of the epoch with that smoothed fraction.
    """

    def __init__(self, beta: float, delta: float, young: bool = False) -> None:
        if not 0 < beta <= 1:
            raise ValueError(f"beta must be in (0, 1], got {beta}")
        self.beta = beta
        self.smoothed = 0.0
        self.inverse = InverseLossEstimator(delta)
        self.initialised = False
        #: Young history: δ_eff = max(δ, 1/(2 + loss events since the estimate
        #: was set)), so a fresh estimate moves as fast as TFRC's loss
        #: history does with its first few intervals (RFC 5348 5.4 averages
        #: over the intervals there are), and settles to ~1/δ events of memory.
        self.young = young
        self.evidence = 0.0

    def end_epoch(self, packets: int, events: int) -> None:
        """Feed one epoch: ``packets`` intended (received + lost), ``events`` loss events."""
        if packets <= 0:
            return
        frac = min(1.0, events / packets)
        self.smoothed = (1 - self.beta) * self.smoothed + self.beta * frac
        d = max(self.inverse.delta, 1.0 / (2.0 + self.evidence)) if self.young else None
        self.inverse.update(self.smoothed, packets, d)
        self.evidence += events

    def on_packets(self, count: int) -> None:
        """Nothing to do: this filter counts per epoch (:meth:`end_epoch`)."""

    def on_event(self) -> None:
        """Nothing to do: this filter counts per epoch (:meth:`end_epoch`)."""

    def set_loss_rate(self, p: float, fresh: bool = True) -> None:
        """Set the estimate to ``p`` (WEBRC's start-up exit and 3.3 reset).

        ``fresh`` starts a young history (start-up exit); the 3.3 reset keeps
        the evidence gathered so far.

        Only the second stage, the F estimator that LOSSP is read from, is
        set.  The first stage is a smoother of *measured* per-epoch loss-event
        fractions; writing ``p`` into it as well would count the synthetic
        value as 1/β epochs of measurements (20 s at β = 0.025) and hold
        LOSSP near ``p`` that long whatever the receiver then observes.  Set
        this way, the estimate leaves ``p`` at the pace of the evidence: each
        loss-free packet adds δ to 1/LOSSP, as the appendix's estimator does.
        """
        p = min(max(p, 1e-9), 1.0)
        self.inverse.set_loss_rate(p)
        self.initialised = True
        if fresh:
            self.evidence = 0.0

    @property
    def loss_rate(self) -> float:
        return self.inverse.loss_rate if self.initialised else 0.0


class IntervalLossFilter:
    """LOSSP as TFRC measures it: 1 / the weighted mean of the last 8 loss intervals.

    RFC 5348 5.4: an interval is the packets from the start of one loss event
    to the start of the next; the mean weights the newest four fully, and the
    open interval counts once it would raise the mean.  A loss-free stretch
    therefore lowers LOSSP within one interval, where the appendix's
    two-stage filter (:class:`TwoStageLossFilter`) takes tens of seconds to
    follow: WEBRC with it climbed from its start-up exit to its share next to
    TCP in 100-150 s on a 20 Mb/s path (docs/protocols/webrc.md).

    Same interface as :class:`TwoStageLossFilter`: the receiver feeds both
    every packet (:meth:`on_packets`), every loss event's start
    (:meth:`on_event`) and every epoch (:meth:`end_epoch`); each filter
    counts what it averages.  The mean is
    :func:`hosts.tfrc.average_loss_interval`, TFMCC's.
    """

    def __init__(self, n: int = 8, discounting: bool = False) -> None:
        self.weights = tfrc_weights(n)
        self.discounting = discounting  # RFC 5348 5.5 history discounting
        self.intervals: deque[float] = deque(maxlen=n)  # newest first
        self.open = 0.0
        self.initialised = False

    def on_packets(self, count: int) -> None:
        """Packets received or lost, in sequence order (the open interval grows)."""
        self.open += count

    def on_event(self) -> None:
        """A loss event starts: the open interval closes."""
        if self.initialised:
            self.intervals.appendleft(max(self.open, 1.0))
        self.open = 0.0

    def end_epoch(self, packets: int, events: int) -> None:
        """Nothing to do: intervals are counted packet by packet."""

    def set_loss_rate(self, p: float, fresh: bool = True) -> None:
        """Set LOSSP to ``p``: one synthetic interval of 1/p packets (RFC 5348 6.3.1).

        ``fresh`` (start-up exit) drops the measured intervals; otherwise (3.3's
        reset) the history is replaced by the one synthetic interval as well,
        since TFRC's mean has no other way to equal ``p``.
        """
        p = min(max(p, 1e-9), 1.0)
        self.intervals.clear()
        self.intervals.append(1.0 / p)
        self.open = 0.0
        self.initialised = True

    @property
    def loss_rate(self) -> float:
        if not self.initialised or not self.intervals:
            return 0.0
        return 1.0 / average_loss_interval(self.weights, list(self.intervals), self.open, self.discounting)
