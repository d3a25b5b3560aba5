"""VLMCC: Vegas-like single-rate multicast toward a leader receiver; see ``docs/protocols/vlmcc.md``."""

from hosts.vlmcc.params import VlmccParams
from hosts.vlmcc.receiver import VlmccReceiver
from hosts.vlmcc.rules import RULES
from hosts.vlmcc.sender import VlmccSender

__all__ = ["RULES", "VlmccParams", "VlmccReceiver", "VlmccSender"]
