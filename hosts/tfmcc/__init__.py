"""TFMCC: TCP-friendly multicast congestion control (Widmer & Handley; RFC 4654).

The paper's algorithm, the user's parameters (:mod:`.params`) and the named rules
with the profiles (:mod:`.rules`); ``docs/protocols/tfmcc.md`` is its reference page."""

from hosts.tfmcc.core import bias, feedback_delay, feedback_time
from hosts.tfmcc.params import DATA_HEADER, TfmccParams
from hosts.tfmcc.receiver import TfmccReceiver
from hosts.tfmcc.rules import RULES
from hosts.tfmcc.sender import TfmccSender

__all__ = ["DATA_HEADER", "RULES", "TfmccParams", "TfmccReceiver", "TfmccSender",
           "bias", "feedback_delay", "feedback_time"]
