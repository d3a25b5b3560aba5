"""What a user of RLA sets (docs/protocols/rla.md#parameters gives each one's source).

The stream, ``receivers``, RFC 6298's timer and the initial window are
:class:`hosts.reliable.ReliableParams`, shared with MTCP.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4mcc.hosts.core import check_params
from p4mcc.hosts.reliable import ReliableParams

#: Rule 6's constant, "recommended to be set to 20" (section 3.3).
ETA = 20.0
#: Section 5: "rexmit thresh is set to 0" (every repair multicast).
REXMIT_THRESH = 0
#: Rule 5's receive buffer in packets (open in the paper): 4 MiB of full-size
#: packets, the simulator's TCP window; it covers 20 Mb/s at 200 ms.
RCV_BUFFER = 2888


@dataclass
class RlaParams(ReliableParams):
    """RLA's parameters; ``docs/protocols/rla.md`` gives each one's source."""

    eta: float = ETA
    """Rule 6: troubled above a congestion probability of ``1 / (eta * min_congestion_interval)``."""
    rexmit_thresh: int = REXMIT_THRESH
    """A repair is multicast when more receivers than this miss it (footnote 8)."""
    rcv_buffer: int = RCV_BUFFER
    """Each receiver's buffer in packets (rule 5); also the initial ssthresh (RFC 5681 3.1)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_params(self, ("eta",), rexmit_thresh=0, rcv_buffer=1)
