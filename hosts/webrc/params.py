"""WEBRC's user parameters (the paper's Table 1 and a receiver's start) and Γ;
every other constant belongs to :mod:`hosts.webrc.constants` or to its rule."""

from __future__ import annotations

import math
from dataclasses import dataclass

from p4mcc.hosts import wire
from p4mcc.hosts.core import check_params

#: Data packet overhead before the payload (common header + WEBRC body).
DATA_HEADER = wire.COMMON_LEN + 8


@dataclass(frozen=True)
class WebrcParams:
    """Session and receiver parameters (paper Table 1 unless noted)."""

    #: SR_b: total rate, every receiver's ceiling (a fair share next to TCP up to ~30 Mbit/s paths).
    session_rate_bps: float = 20_000_000.0
    #: BCR_P: the base channel's rate, packets/s.
    base_rate_pps: float = 1.0
    #: LEN_B: payload bytes; UDP's payload is then a TCP segment's 1460 B (paper: 1024).
    packet_length: int = 1460 - DATA_HEADER
    #: P: a wave's rate decrease factor per TSD.
    p: float = 0.75
    #: TSD: time slot duration, seconds.
    tsd: float = 10.0
    #: Q: quiet slots of a wave; None: ceil(300 / TSD), the paper's 300 s.
    quiescent_slots: int | None = None
    #: EL: epoch length, seconds.
    epoch: float = 0.5
    #: MRR_b: the receiver's maximum reception rate.
    max_rate_bps: float = math.inf
    #: ARTT before the first MRTT, seconds (as TFMCC's initial RTT, RFC 4654 4.2).
    initial_rtt: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.p < 1:
            raise ValueError("p must be in (0, 1)")
        check_params(self, ("base_rate_pps", "tsd", "epoch", "initial_rtt"))
        if self.packet_length < 1 or self.packet_length + DATA_HEADER > wire.MAX_DATAGRAM:
            raise ValueError("packet_length out of range")
        if self.session_rate_pps <= self.base_rate_pps * (1 + 1 / self.p):
            raise ValueError("session_rate_bps too small for one wave above the base rate")

    @property
    def session_rate_pps(self) -> float:
        return self.session_rate_bps / (8.0 * self.packet_length)

    @property
    def q(self) -> int:
        return self.quiescent_slots if self.quiescent_slots is not None else math.ceil(300 / self.tsd)

    @property
    def n(self) -> int:
        """Active wave channels N (eq. 3): the largest N with BCR·(1 + (P^-N - 1)/(1 - P)) ≤ SR."""
        ratio = self.session_rate_pps / self.base_rate_pps
        return max(1, math.floor(math.log(1 + (1 - self.p) * (ratio - 1)) / math.log(1 / self.p)))

    @property
    def t(self) -> int:
        """Number of wave channels T = N + Q."""
        return self.n + self.q

    @property
    def slot_avg(self) -> float:
        """K = (1-P)/ln(1/P): average of P^τ over a slot (0.869 for P = 0.75)."""
        return (1 - self.p) / math.log(1 / self.p)


def gamma(p: float, nwc: int) -> float:
    """Γ_NWC = ((1/P)^(NWC+2) - 1) / ((1/P)^(NWC+1) - 1) (eq. 4)."""
    q = 1 / p
    return (q ** (nwc + 2) - 1) / (q ** (nwc + 1) - 1)
