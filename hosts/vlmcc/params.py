"""What a user of VLMCC sets; every other number is a constant of the core or of a rule."""

from __future__ import annotations

from dataclasses import dataclass

from p4mcc.hosts import wire
from p4mcc.hosts.core import check_params


@dataclass
class VlmccParams:
    """VLMCC session parameters; ``docs/protocols/vlmcc.md`` gives each one's source."""

    #: Payload bytes per data packet: 1438 fills a 1500-byte IP packet (IPv4,
    #: UDP, p4mcc's header), a TCP segment's size on such a path (the paper's
    #: section 3 uses 1000).
    packet_size: int = wire.payload_filling_mtu(wire.VlmccData)
    #: W before the first round (packets): TCP Vegas' initial window.
    initial_window: float = 2.0
    #: The sender's RTT before the first ACK (s): it paces only the first packets.
    initial_rtt: float = 0.1
    #: The ceiling on W (packets).
    max_window: float = 10000.0
    #: Section 2.3: a challenge claiming less than this rate is refused (bit/s).
    min_rate_bps: float = 16000.0
    #: Section 2.3, eq. (6): N_extra, a follower's slack before it challenges (packets).
    n_extra: float = 4.0
    #: Section 2.3: "a few RTTs" after a leader change in which no challenge is taken.
    holdoff_rtts: float = 4.0
    #: Mean interval between a joining receiver's unanswered probes (s).
    probe_interval: float = 1.0
    #: The switches' challenge-filter window (µs), read by the controller; the hosts ignore it.
    filter_window_us: int = 100_000

    def __post_init__(self) -> None:
        if not 0 < self.packet_size <= 8000:
            raise ValueError(f"packet_size must be in 1..8000, got {self.packet_size}")
        check_params(self, ("initial_rtt", "probe_interval"), initial_window=1, max_window=1,
                     min_rate_bps=0, n_extra=0, holdoff_rtts=0)
        if not 0 < self.filter_window_us < 1 << 48:
            raise ValueError(f"filter_window_us must be in 1..2**48-1, got {self.filter_window_us}")
