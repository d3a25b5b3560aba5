"""VLMCC: Vegas-like single-rate multicast toward a leader receiver; see ``docs/protocols/vlmcc.md``."""

from p4mcc.hosts.vlmcc.params import VlmccParams
from p4mcc.hosts.vlmcc.receiver import VlmccReceiver
from p4mcc.hosts.vlmcc.rules import RULES
from p4mcc.hosts.vlmcc.sender import VlmccSender

__all__ = ["RULES", "VlmccParams", "VlmccReceiver", "VlmccSender"]
