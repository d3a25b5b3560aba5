"""The RTT estimators every protocol core uses: one smoothing rule, one RFC 6298 estimator, one minimum.

Each core's round-trip-time state is built from these three pieces, so a
rule is written once and a reader finds every estimator here:

* :func:`ewma` -- the exponentially weighted moving average
  ``new = w·sample + (1 − w)·old``.  TFMCC's receiver RTT (paper 2.4.2,
  RFC 4654 3.2: weight ``BETA_CLR``/``BETA_OTHER`` for a real measurement and a
  smaller one for the one-way-delay adjustment of 2.4.3), VLMCC's receiver
  ``rtt_hat`` (equation 4) and both halves of :class:`SmoothedRtt` use it.
* :class:`SmoothedRtt` -- RFC 6298's SRTT/RTTVAR estimator with its timeout
  ``RTO = SRTT + max(G, K·RTTVAR)`` (2.2-2.3), floored and capped (2.4, 2.5),
  with exponential back-off (5.5) that a new sample clears (5.7).  RLA and
  MTCP run it on RTTs (``min_rto`` from their parameters); MTCP also runs it
  on relative time delays, whose zero is arbitrary, with ``G = min_rto`` and
  no floor; VLMCC's sender runs it with the paper's gains (section 2.2,
  equations 1 and 2, g = 0.1 for both and the deviation measured against the
  updated mean).  It also keeps the smallest sample, Vegas' BaseRTT.
* :func:`lowest` -- the running minimum (Vegas' BaseRTT) where a core keeps
  it apart from a smoothed estimate (VLMCC per leader, MTCP per round).
* :class:`RttSpread` -- the spread R_max / R_c of TCP Hybla's compensation,
  which RLA's and MTCP's ``rtt_fair_increase`` grow a window by.

WEBRC's ARTT is a self-adjusting average of its own
(:class:`hosts.estimators.SelfAdjustingEwma`, paper appendix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from p4mcc.hosts.tcp_rules import INITIAL_RTO


def ewma(old: float | None, sample: float, weight: float) -> float:
    """``weight·sample + (1 − weight)·old``; the first sample (``old`` None or NaN) is taken as is."""
    if old is None or math.isnan(old):
        return sample
    return weight * sample + (1 - weight) * old


def lowest(old: float | None, sample: float) -> float:
    """The running minimum: ``sample`` if there was none yet, else the smaller."""
    return sample if old is None else min(old, sample)


@dataclass
class SmoothedRtt:
    """RFC 6298 estimator: srtt, rttvar, RTO with back-off, and the smallest sample.

    ``min_rto``/``max_rto`` bound the timeout.  RFC 6298 (2.4) recommends 1 s
    as the floor on the Internet (:data:`hosts.tcp_rules.MIN_RTO`, the
    window protocols' default); a core passes the floor it runs with, and
    its protocol page records it.
    ``granularity`` is the clock granularity G of 2.3 (0: an ideal clock).

    ``mean_first`` updates SRTT before measuring the deviation against it
    (VLMCC's equations 1-2); RFC 6298 2.3 measures it against the old SRTT.
    ``incremental`` writes each average as ``x += g·(s − x)``, Jacobson's
    1988 form of the same rule: the value agrees with :func:`ewma` up to the
    last bit of rounding, and MTCP's relative-delay estimator has always used
    it, so its runs reproduce exactly.
    """

    initial_rto: float = INITIAL_RTO
    min_rto: float = 0.2
    max_rto: float = 60.0
    alpha: float = 1 / 8
    beta: float = 1 / 4
    k: float = 4.0
    granularity: float = 0.0
    mean_first: bool = False
    incremental: bool = False
    srtt: float | None = None
    rttvar: float = 0.0
    backoff: int = 0
    samples: int = 0
    #: Samples are relative delays (any sign, MTCP's RTDs); otherwise a
    #: negative sample is a clock fault and is ignored.
    relative: bool = False
    #: The smallest sample so far (Vegas' BaseRTT), None before the first.
    base: float | None = None

    def sample(self, rtt: float) -> None:
        """Feed one measurement (seconds); clears the back-off (RFC 6298 5.7)."""
        if rtt < 0 and not self.relative:
            return
        if self.srtt is None:
            self.srtt = rtt
            self.rttvar = abs(rtt) / 2
        elif self.incremental:
            self.rttvar += self.beta * (abs(self.srtt - rtt) - self.rttvar)
            self.srtt += self.alpha * (rtt - self.srtt)
        elif self.mean_first:
            self.srtt = ewma(self.srtt, rtt, self.alpha)
            self.rttvar = ewma(self.rttvar, abs(self.srtt - rtt), self.beta)
        else:
            self.rttvar = ewma(self.rttvar, abs(self.srtt - rtt), self.beta)
            self.srtt = ewma(self.srtt, rtt, self.alpha)
        self.base = lowest(self.base, rtt)
        self.samples += 1
        self.backoff = 0

    @property
    def base_rto(self) -> float:
        """RTO before back-off: ``initial_rto`` until the first sample."""
        if self.srtt is None:
            return self.initial_rto
        return min(self.max_rto, max(self.min_rto, self.srtt + max(self.granularity, self.k * self.rttvar)))

    @property
    def rto(self) -> float:
        """Current timeout including back-off."""
        return min(self.max_rto, self.base_rto * (2 ** self.backoff))

    def back_off(self) -> None:
        """Double the timeout after it expired (RFC 6298 5.5), up to ``max_rto``."""
        if self.base_rto * (2 ** self.backoff) < self.max_rto:
            self.backoff += 1


#: TCP Hybla's compensation is bounded: at most this round-trip spread is
#: compensated, so a stale or wild estimate cannot make a window run away.
MAX_RTT_SPREAD = 8.0
#: Weight of the latest cut's round trip in R_c.
CUT_RTT_GAIN = 0.25
#: A sample this many times below a smoothed estimate replaces it (the rules named
#: ``rtt_step``): a squeezed path's queue, drained, is no longer in the round trip.
RTT_STEP_FACTOR = 2.0


class RttSpread:
    """R_max / R_c for TCP Hybla's compensation (Caini & Firrincieli 2004): a window acknowledged
    by every receiver is sent once per the largest round trip R_max, the TCP flow beside the
    receivers whose losses cut it once per their round trip R_c, and an AIMD window goes as the
    square root of its increase per round, so growing (R_max / R_c)^2 times faster gives TCP's
    rate at R_c.  Below ``least`` the round trips count as equal: one path's queue swing seen at
    different times, not two paths."""

    def __init__(self, least: float) -> None:
        self.least = least
        self.cut_rtt: float | None = None  # R_c

    def cut(self, rtt: float) -> None:
        """A cut answered the losses of receivers ``rtt`` away."""
        self.cut_rtt = ewma(self.cut_rtt, rtt, CUT_RTT_GAIN)

    def factor(self, largest: float | None) -> float:
        """R_max / R_c within [1, MAX_RTT_SPREAD]; 1 below ``least`` and before the first cut."""
        if largest is None or self.cut_rtt is None or self.cut_rtt <= 0:  # RTDs are relative: may be <= 0
            return 1.0
        spread = largest / self.cut_rtt
        return 1.0 if spread < self.least else min(MAX_RTT_SPREAD, spread)
