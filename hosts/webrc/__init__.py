"""WEBRC: wave and equation based rate control (Luby, Goyal et al., SIGCOMM 2002; RFC 3738).

The sender (:mod:`.sender`) sends waves on many groups; receivers (:mod:`.core`,
the paper) join and leave them by their equation rate; :data:`RULES` (:mod:`.rules`)
holds the rules and profiles.  Reference: ``docs/protocols/webrc.md``.
"""

from hosts.webrc.core import WebrcReceiver
from hosts.webrc.params import DATA_HEADER, WebrcParams, gamma
from hosts.webrc.rules import RULES
from hosts.webrc.sender import (SENDER_LINK_SHARE, WebrcSender, channel_group, channel_groups, encode_data,
                                fit_sender_link, wire_rate_bps)

__all__ = [
    "DATA_HEADER", "RULES", "SENDER_LINK_SHARE", "WebrcParams", "WebrcReceiver", "WebrcSender",
    "channel_group", "channel_groups", "encode_data", "fit_sender_link", "gamma", "wire_rate_bps",
]
