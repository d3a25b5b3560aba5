"""MTCP (Rhee, Balaguru, Rouskas): reliable multicast over a tree of sender's agents.

The paper's algorithm is the core (:mod:`.core`, :mod:`.sender`,
:mod:`.receiver`); everything beyond it is a named rule in :mod:`.rules`,
composed by :data:`RULES` (profiles ``paper`` and ``default``).  The
registry builds ``MtcpSender``/``MtcpReceiver`` with the session's rules;
constructing them directly runs the paper.  Reference: ``docs/protocols/mtcp.md``.
"""

from hosts.mtcp.core import FOLD_ID, NO_CWND
from hosts.mtcp.params import MtcpParams
from hosts.mtcp.receiver import MtcpReceiver
from hosts.mtcp.rules import RULES
from hosts.mtcp.sender import MtcpSender

__all__ = ["FOLD_ID", "NO_CWND", "RULES", "MtcpParams", "MtcpReceiver", "MtcpSender"]
