"""WEBRC: wave and equation based rate control (Luby, Goyal et al., SIGCOMM 2002; RFC 3738).

Multi-rate and receiver driven: the sender (:mod:`.sender`) sends waves on
many groups; each receiver (:mod:`.core`, the paper's algorithm) joins and
leaves them by its equation-based target rate.  :data:`RULES` holds the
behaviours beyond the paper (:mod:`.rules`) and the ``paper`` and
``default`` profiles; ``docs/protocols/webrc.md`` is the reference.
"""

from hosts.webrc.core import WebrcReceiver
from hosts.webrc.params import DATA_HEADER, WebrcParams, gamma
from hosts.webrc.rules import RULES
from hosts.webrc.sender import (
    SENDER_LINK_SHARE,
    WebrcSender,
    channel_group,
    channel_groups,
    encode_data,
    fit_sender_link,
    wire_rate_bps,
)

__all__ = [
    "DATA_HEADER", "RULES", "SENDER_LINK_SHARE", "WebrcParams", "WebrcReceiver", "WebrcSender",
    "channel_group", "channel_groups", "encode_data", "fit_sender_link", "gamma", "wire_rate_bps",
]
