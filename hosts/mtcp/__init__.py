"""MTCP (Rhee, Balaguru, Rouskas): reliable multicast over a tree of sender's agents.

The classes built directly run the paper; the registry composes the session's
:data:`RULES` onto them.  Reference: ``docs/protocols/mtcp.md``.
"""

from p4mcc.hosts.mtcp.constants import FOLD_ID, NO_CWND
from p4mcc.hosts.mtcp.params import MtcpParams
from p4mcc.hosts.mtcp.receiver import MtcpReceiver
from p4mcc.hosts.mtcp.rules import RULES
from p4mcc.hosts.mtcp.sender import MtcpSender

__all__ = ["FOLD_ID", "NO_CWND", "RULES", "MtcpParams", "MtcpReceiver", "MtcpSender"]
