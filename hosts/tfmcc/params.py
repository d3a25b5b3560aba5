"""The parameters a user of TFMCC sets: packet size, rate ceiling, start-up.

Everything else is the paper's constant (:mod:`hosts.tfmcc.core`) or a named
rule's (:mod:`hosts.tfmcc.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts import wire

#: Data packet overhead before the payload (common header + TFMCC data body).
DATA_HEADER = wire.COMMON_LEN + 28


@dataclass(frozen=True)
class TfmccParams:
    """TFMCC session parameters."""

    #: s: whole UDP payload in bytes.  1460, a TCP segment's payload on a
    #: 1500-byte MTU: the equation is per packet and drop-tail queues drop
    #: per packet, so at TCP's packet size the rates match in bytes too.
    packet_size: int = 1460
    #: The receivers' RTT before their first measurement, and the sender's
    #: R_max until a report brings one (paper 2.4.1: 500 ms suits most networks).
    initial_rtt: float = 0.5
    #: N, the upper bound on the number of receivers the feedback timers
    #: are sized for (paper 2.5.1).
    fb_receivers: int = 10000
    #: The application's ceiling on the sending rate, bit/s.
    max_rate_bps: float = 100e6
    #: The rate of the first packets, bit/s; None: the initial window per
    #: ``initial_rtt`` (one packet, RFC 4654 3.1, or TFRC's initial window
    #: with the ``tfrc_initial_window`` rule).
    initial_rate_bps: float | None = None

    def __post_init__(self) -> None:
        if self.packet_size < DATA_HEADER + 1 or self.packet_size > wire.MAX_DATAGRAM:
            raise ValueError(f"packet_size must be in [{DATA_HEADER + 1}, {wire.MAX_DATAGRAM}]")
        if self.initial_rtt <= 0 or self.fb_receivers < 2:
            raise ValueError("initial_rtt must be positive and fb_receivers >= 2")
        if self.max_rate_bps <= 0:
            raise ValueError("max_rate_bps must be positive")
        if self.initial_rate_bps is not None and self.initial_rate_bps <= 0:
            raise ValueError("initial_rate_bps must be positive (or None)")

    @property
    def min_rate_bps(self) -> float:
        """Floor of the sending rate: one packet per 64 s (RFC 5348 4.3's t_mbi)."""
        return 8.0 * self.packet_size / 64.0
