"""TFMCC: TCP-friendly multicast congestion control (Widmer & Handley; RFC 4654).

The paper's algorithm, the user's parameters (:mod:`.params`) and the named rules
with the profiles (:mod:`.rules`); ``docs/protocols/tfmcc.md`` is its reference page."""

from p4mcc.hosts.tfmcc.constants import bias, feedback_delay, feedback_time
from p4mcc.hosts.tfmcc.params import DATA_HEADER, TfmccParams
from p4mcc.hosts.tfmcc.receiver import TfmccReceiver
from p4mcc.hosts.tfmcc.rules import RULES
from p4mcc.hosts.tfmcc.sender import TfmccSender

__all__ = ["DATA_HEADER", "RULES", "TfmccParams", "TfmccReceiver", "TfmccSender",
           "bias", "feedback_delay", "feedback_time"]
