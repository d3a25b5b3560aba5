"""The parameters a user of TFMCC sets; everything else is a paper constant
(:mod:`hosts.tfmcc.constants`) or a named rule's (:mod:`hosts.tfmcc.rules`)."""

from __future__ import annotations

from dataclasses import dataclass

from p4mcc.hosts import wire
from p4mcc.hosts.core import check_params

#: Data packet overhead before the payload (common header + TFMCC data body).
DATA_HEADER = wire.COMMON_LEN + 28


@dataclass(frozen=True)
class TfmccParams:
    """TFMCC session parameters (docs/protocols/tfmcc.md#user-parameters)."""

    #: s, the whole UDP payload: a TCP segment's, so equal packet rates are
    #: equal byte rates (the equation and drop-tail queues count packets).
    packet_size: int = 1460
    initial_rtt: float = 0.5  #: Receivers' RTT and the sender's R_max until measured (2.4.1).
    fb_receivers: int = 10000  #: N, the receiver count the feedback timers are sized for (2.5.1).
    max_rate_bps: float = 100e6  #: The application's ceiling on the sending rate, bit/s.
    initial_rate_bps: float | None = None  #: The first packets' rate; None: the initial window.

    def __post_init__(self) -> None:
        if self.packet_size < DATA_HEADER + 1 or self.packet_size > wire.MAX_DATAGRAM:
            raise ValueError(f"packet_size must be in [{DATA_HEADER + 1}, {wire.MAX_DATAGRAM}]")
        check_params(self, ("initial_rtt", "max_rate_bps"), fb_receivers=2)
        if self.initial_rate_bps is not None and self.initial_rate_bps <= 0:
            raise ValueError("initial_rate_bps must be positive (or None)")

    @property
    def min_rate_bps(self) -> float:
        """Floor of the sending rate: one packet per 64 s (RFC 5348 4.3's t_mbi)."""
        return 8.0 * self.packet_size / 64.0
