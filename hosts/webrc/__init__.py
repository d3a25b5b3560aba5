"""WEBRC: wave and equation based rate control (Luby, Goyal et al., SIGCOMM 2002; RFC 3738).

The sender (:mod:`.sender`), the paper's receiver (:mod:`.receiver`), its constants (:mod:`.constants`), the rules and profiles
(:data:`RULES`, :mod:`.rules`).  Reference: ``docs/protocols/webrc.md``."""

from p4mcc.hosts.webrc.receiver import WebrcReceiver
from p4mcc.hosts.webrc.params import DATA_HEADER, WebrcParams, gamma
from p4mcc.hosts.webrc.rules import RULES
from p4mcc.hosts.webrc.sender import (SENDER_LINK_SHARE, WebrcSender, channel_group, channel_groups, encode_data,
                                fit_sender_link, wire_rate_bps)

__all__ = [
    "DATA_HEADER", "RULES", "SENDER_LINK_SHARE", "WebrcParams", "WebrcReceiver", "WebrcSender",
    "channel_group", "channel_groups", "encode_data", "fit_sender_link", "gamma", "wire_rate_bps",
]
