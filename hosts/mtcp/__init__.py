"""MTCP (Rhee, Balaguru, Rouskas): reliable multicast over a tree of sender's agents.

The classes built directly run the paper; the registry composes the session's
:data:`RULES` onto them.  Reference: ``docs/protocols/mtcp.md``.
"""

from hosts.mtcp.core import FOLD_ID, NO_CWND
from hosts.mtcp.params import MtcpParams
from hosts.mtcp.receiver import MtcpReceiver
from hosts.mtcp.rules import RULES
from hosts.mtcp.sender import MtcpSender

__all__ = ["FOLD_ID", "NO_CWND", "RULES", "MtcpParams", "MtcpReceiver", "MtcpSender"]
