"""VLMCC's constants, with the paper's section, and the arithmetic both ends share.
VLMCC emulates TCP Vegas: where the paper is silent the cores take TCP's rule."""

from __future__ import annotations

import random

from p4mcc.hosts.tcp_rules import INITIAL_RTO, VEGAS

#: 2.2, eqs. (1) and (2): "g = g_σ² = 0.1", the gains of rtt and its deviation.
G = G_DEV = 0.1
#: 2.2: packets leave in bursts of at most two (MaxSegment), eq. (3) apart.
MAX_BURST = 2
#: 2.2: the Vegas thresholds α, β (and γ to leave slow start), named without values: TCP Vegas'.
THRESHOLDS = VEGAS
#: 2.3: gain of a follower's moving average of the gap between the announced rate and its own
#: (the paper gives none; the same as g).
GAP_GAIN = 0.1
#: The loss timeout before the first RTT sample (the paper's rtt + 4σ has no rtt yet): RFC 6298 2.1.
INITIAL_LOSS_TIMEOUT = INITIAL_RTO
#: Unanswered probes repeat after ``probe_interval`` times U[1 - J, 1 + J]: receivers that join
#: together must not stay in step (Floyd and Jacobson 1994; RFC 3550 6.3.1).
TIMER_JITTER = 0.5


def jittered(period: float, rng: random.Random) -> float:
    """``period`` spread uniformly over ``[1 - TIMER_JITTER, 1 + TIMER_JITTER]`` times itself."""
    return period * (1.0 + TIMER_JITTER * (2.0 * rng.random() - 1.0))


def rate_bps(window: float, rtt: float, size: int) -> float:
    """The rate of ``window`` packets of ``size`` bytes per ``rtt``, in bit/s."""
    return window * size * 8 / max(rtt, 1e-6)
