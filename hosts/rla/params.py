"""What a user of RLA sets: the stream, the group, the receive buffer and the paper's two knobs.

The stream (``packet_size``, ``total_packets``), the ``receivers`` the
sender waits for, RFC 6298's timer (``initial_rto``, ``min_rto``) and the
initial window are :class:`hosts.reliable.ReliableParams`, shared with MTCP.
Every other number is a constant of the core (``hosts.rla.core``, with the
paper's section) or of the rule that uses it (``hosts.rla.rules``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.reliable import ReliableParams

#: Rule 6's constant, "recommended to be set to 20" (section 3.3).
ETA = 20.0
#: Section 5: "rexmit thresh is set to 0" (every repair multicast).
REXMIT_THRESH = 0
#: Rule 5's receive buffer, in packets: 4 MiB of 1452-byte packets, the
#: simulator's TCP receive window.  The paper leaves it open; it must cover
#: the path's bandwidth-delay product (333 packets at 20 Mb/s, 200 ms).
RCV_BUFFER = 2888


@dataclass
class RlaParams(ReliableParams):
    """RLA's parameters; ``docs/protocols/rla.md`` gives each one's source."""

    eta: float = ETA
    """Rule 6: a receiver is troubled when its congestion probability
    exceeds ``1 / (eta * min_congestion_interval)``."""
    rexmit_thresh: int = REXMIT_THRESH
    """A repair is multicast when more receivers than this miss the packet,
    unicast otherwise (section 3.3, footnote 8)."""
    rcv_buffer: int = RCV_BUFFER
    """Each receiver's buffer in packets (rule 5's advertised buffer); the
    initial ssthresh is this largest advertised window (RFC 5681 3.1)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eta <= 0:
            raise ValueError(f"eta must be > 0, got {self.eta}")
        if self.rexmit_thresh < 0:
            raise ValueError(f"rexmit_thresh must be >= 0, got {self.rexmit_thresh}")
        if self.rcv_buffer < 1:
            raise ValueError(f"rcv_buffer must be >= 1, got {self.rcv_buffer}")
