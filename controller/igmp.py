"""IGMP messages and the Internet checksum, encoded once for p4mcc.

The controller's querier (:mod:`controller.querier`) and the simulator's
hosts and packets (:mod:`netsim.packets`) build the same IGMPv2 messages
(RFC 2236 sec. 2: type, max response time in tenths of a second, checksum,
group) protected by the same checksum (RFC 1071); this is the one encoder.
"""

from __future__ import annotations

import struct

_IGMPV2 = struct.Struct("!BBH4s")


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def igmpv2(msg_type: int, group: int, max_resp: int = 0) -> bytes:
    """IGMPv2 report (0x16), leave (0x17) or query (0x11; group 0: a general query)."""
    msg = _IGMPV2.pack(msg_type, max_resp, 0, group.to_bytes(4, "big"))
    c = checksum(msg)
    return msg[:2] + c.to_bytes(2, "big") + msg[4:]
