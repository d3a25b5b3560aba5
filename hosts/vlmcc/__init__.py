"""VLMCC: Vegas-like single-rate multicast streaming toward a leader receiver.

The package is the paper's algorithm (:mod:`.sender`, :mod:`.receiver`,
constants in :mod:`.core`), the user's parameters (:mod:`.params`) and the
named rules beyond the paper with the ``paper`` and ``default`` profiles
(:mod:`.rules`); ``docs/protocols/vlmcc.md`` is its reference page.
"""

from hosts.vlmcc.params import VlmccParams
from hosts.vlmcc.receiver import VlmccReceiver
from hosts.vlmcc.rules import RULES
from hosts.vlmcc.sender import VlmccSender

__all__ = ["RULES", "VlmccParams", "VlmccReceiver", "VlmccSender"]
