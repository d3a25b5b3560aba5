"""IGMP general queries, for switches that age memberships.

When the program's ``membership_timeout_us`` is non-zero a port stops
receiving a group that long after its last report, so someone must ask hosts
to report again: the controller, by sending an IGMPv2 general query as a
PacketOut flooded to every port (``docs/p4-program.md``, item 9).  Hosts
answer with reports that refresh their ports.  Timings follow IGMPv2's
defaults (RFC 2236 sec. 8) in proportion: query interval 125 s and query
response interval 10 s for a 260 s membership timeout (the Group Membership
Interval, robustness 2 x 125 s + 10 s), proxy refresh 100 s.  With p4mcc's
20 s default timeout (``scenario.faults.DEFAULT_TIMEOUT``) that is a query
every 9.6 s asking for reports within 0.7 s: one lost query or report still
leaves the port in place, as the robustness variable intends.
"""

from __future__ import annotations

import struct

from controller.igmp import checksum, igmpv2

QUERY_MAC = bytes.fromhex("01005e000001")  # 224.0.0.1, all systems
QUERIER_MAC = bytes.fromhex("020000000001")  # locally administered
ALL_SYSTEMS = bytes([224, 0, 0, 1])
IGMP_QUERY = 0x11

REQUERY_COUNT = 2
REQUERY_GAP_S = 1.0
REQUERY_MAX_RESP_DS = 10
"""After restoring a restarted switch the controller sends that many general
queries, that far apart, each asking for reports within 1 s: membership
lived in the switch's registers, so the hosts must report again (a second
query covers a lost report, as IGMP's robustness variable does)."""


def general_query(max_resp_ds: int = 100, source: bytes = bytes(4)) -> bytes:
    """An Ethernet frame carrying an IGMPv2 general query.

    ``max_resp_ds`` is the maximum response time in tenths of a second (10 s
    by default, as IGMPv2).  The source address 0.0.0.0 is the snooping
    querier's convention (a switch has no address on the hosts' subnet); the
    IPv4 header carries the Router Alert option and TTL 1 as RFC 2236 asks.
    """
    igmp = igmpv2(IGMP_QUERY, 0, max_resp_ds)
    options = bytes([0x94, 0x04, 0x00, 0x00])  # Router Alert
    total = 24 + len(igmp)
    ip = struct.pack("!BBHHHBBH4s4s", 0x46, 0xC0, total, 0, 0, 1, 2, 0, source, ALL_SYSTEMS) + options
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return QUERY_MAC + QUERIER_MAC + b"\x08\x00" + ip + igmp


def timings(membership_timeout_s: float) -> tuple[float, float]:
    """(query interval, proxy refresh) in seconds for a membership timeout."""
    return membership_timeout_s * 125 / 260, membership_timeout_s * 100 / 260


def max_response_ds(query_interval_s: float) -> int:
    """A periodic query's maximum response time, in the field's tenths of a
    second: IGMPv2's 10 s per 125 s of query interval, 0.1 s to 10 s."""
    return max(1, min(100, int(query_interval_s * 10 * 10 / 125)))
