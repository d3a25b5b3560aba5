"""TFMCC's constants and feedback-timer arithmetic, read by both cores.

Sections are the paper's unless marked RFC (RFC 4654 where the paper is
silent).  Units: seconds, bytes, rates in bit/s (the wire's unit).
"""

from __future__ import annotations

import math

U32 = 0xFFFFFFFF

BETA_CLR, BETA_OTHER = 0.05, 0.5  #: 2.4.2: a real RTT sample's EWMA weight at the CLR, elsewhere.
LOSS_INTERVALS = 8  #: 2.3: m, the loss intervals averaged with weights {5,5,5,5,4,3,2,1}.
RECV_WINDOW_RTTS = 4.0  #: 2.6: the receive rate is measured over several RTTs; four.
FB_B = 4.0  #: 2.5.1/2.5.4: T = b·max RTT.
FB_GAMMA = 0.25  #: 2.5.4: the biased offset's share of T.
FB_THETA = 0.1  #: 2.5.2: a pending report is cancelled when R_fb - R_calc < θ·R_fb.
FB_C = 4  #: 2.5.3: packets that may be lost in a row without stalling feedback (2..4).
BIAS_LO, BIAS_HI = 0.5, 0.9  #: 2.5.1: r' saturates below BIAS_LO, biasing starts below BIAS_HI.
SLOWSTART_D = 2.0  #: 2.6: slowstart's target is d · R_recv^min.
CLR_TIMEOUT_ROUNDS = 10.0  #: 4.2: a CLR silent for 10 feedback delays has left.
SILENCE_ROUNDS = 10.0  #: RFC 4654 3.3: no report for this many T halves the rate per round.
RMAX_DECAY = 0.9  #: RFC 4654 3.4 (draft-01 change log): R_max decays by this factor per round.
#: The longest RTT either core takes as measured: beyond it a timestamp is
#: wrapped or forged (far beyond 2.4.1's range of initial RTTs).
MAX_RTT_S = 60.0
ECHO_NEW_CLR, ECHO_NO_RTT, ECHO_OTHER, ECHO_CLR = 0, 1, 2, 3  #: Echo priorities (2.4.2): lower goes first.


def feedback_delay(packet_size: int, max_rtt: float, send_rate_bps: float) -> float:
    """T = b·max(t_RTT^max, (c + 1)·s/R_send) (2.5.3)."""
    spacing = (FB_C + 1) * 8.0 * packet_size / max(send_rate_bps, 1e-9)
    return FB_B * max(max_rtt, spacing)


def bias(r: float) -> float:
    """r' = (max(min(r, 0.9), 0.5) - 0.5) / 0.4 (2.5.1, modified offset method)."""
    return (max(min(r, BIAS_HI), BIAS_LO) - BIAS_LO) / (BIAS_HI - BIAS_LO)


def feedback_time(receivers: int, T: float, r: float, x: float) -> float:
    """t' = γ·r'·T + (1 - γ)·T·(1 + log_N x), never negative (eq. 3, 2.5.4);
    ``x`` uniform in (0, 1], ``r`` the receiver's rate over the sending rate."""
    g = FB_GAMMA
    t = g * bias(r) * T + (1 - g) * T * (1 + math.log(x) / math.log(receivers))
    return max(t, 0.0)


def u32(x: float) -> int:
    """A rate or time as the wire's unsigned 32 bits (saturating)."""
    if math.isinf(x) or x > U32:
        return U32
    return max(0, int(x))
