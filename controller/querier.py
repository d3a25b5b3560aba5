"""IGMP general queries, for switches that age memberships.

When the program's ``membership_timeout_us`` is non-zero a port stops
receiving a group that long after its last report, so someone must ask hosts
to report again: the controller, by sending an IGMPv2 general query as a
PacketOut flooded to every port (``docs/p4-program.md``, item 9).  Hosts
answer with reports that refresh their ports.  Timings follow IGMPv2's
(RFC 2236 sec. 8) in proportion, with the Robustness Variable at 3
(:data:`ROBUSTNESS`): the Group Membership Interval is 3 query intervals
plus one query response interval, the response interval 10/125 of the
query interval and the proxy refresh 100/125 of it, as IGMPv2's defaults
(125 s, 10 s, 100 s; robustness 2 gives their 260 s).  With p4mcc's 20 s
default timeout (``scenario.faults.DEFAULT_TIMEOUT``) that is a query every
6.5 s asking for reports within 0.5 s: two lost query rounds in a row still
leave the port in place.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from p4mcc.controller.igmp import checksum, igmpv2

if TYPE_CHECKING:
    from p4mcc.controller.program import ProgramNames
    from p4mcc.controller.state import SwitchState

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

#: How long the switches below a restored one keep proxying every report:
#: the re-query rounds and the last one's response time, with a round's
#: margin for a report that is late.
REJOIN_WINDOW_S = REQUERY_COUNT * REQUERY_GAP_S + REQUERY_MAX_RESP_DS / 10 + REQUERY_GAP_S


def rejoin_state(state: "SwitchState", names: "ProgramNames | None" = None) -> "SwitchState":
    """``state`` with the proxy refresh at 1 us: every report is proxied upstream.

    A switch that restarted lost the memberships its child switches' proxied
    joins had made, and a child proxies a join only when its group goes from
    empty to non-empty or its last proxied join is ``proxy_refresh_us`` old
    (16 s at p4mcc's default ageing; never with ageing off).  So after a
    restore the controller gives the switches below it (``Plan.below``) this
    configuration for :data:`REJOIN_WINDOW_S` and queries their hosts: their
    reports climb to the restarted switch as an IGMP proxy answers an
    upstream query (RFC 4605 sec. 4.1).  The program's registers cannot be
    written through P4Runtime on every target; its configuration table can.
    """
    import dataclasses

    from p4mcc.controller.program import MCC
    from p4mcc.controller.state import SwitchState

    n = names or MCC
    out = SwitchState(**{k: dict(v) for k, v in vars(state).items()})
    cfg = out.defaults.get(n.config_table)
    if cfg is not None:
        params = tuple((k, 1 if k == n.config_refresh else v) for k, v in cfg.params)
        out.defaults[n.config_table] = dataclasses.replace(cfg, params=params)
    return out


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


#: IGMP's Robustness Variable (RFC 2236 sec. 8.1): a port's membership lasts
#: this many query intervals and one response interval.  3, above IGMPv2's
#: default 2, because p4mcc scales the timers down 13-fold (a 20 s timeout
#: instead of 260 s, so that a dead receiver stops costing its port within
#: a run) and so meets 13 times as many query rounds per minute; the RFC
#: raises the variable for lossy subnets.  With 2, on the 1000-receiver
#: tree of ``bench/sim_speed.py`` (receiver links at 0.5-10 % loss, the
#: TFMCC paper's spread), four live receivers in a 60 s run lost their port
#: for ~9 s each after losing a query or report two rounds in a row; none
#: with 3.
ROBUSTNESS = 3


def timings(membership_timeout_s: float, robustness: int = ROBUSTNESS) -> tuple[float, float]:
    """(query interval, proxy refresh) in seconds for a membership timeout:
    timeout = robustness x query interval + response interval, with IGMPv2's
    proportions (response 10/125 and proxy refresh 100/125 of the interval)."""
    interval = membership_timeout_s * 125 / (robustness * 125 + 10)
    return interval, interval * 100 / 125


#: IGMPv2's Max Response Time field counts tenths of a second: no query asks
#: for a response sooner than one.
MIN_RESPONSE_DS = 1
#: The shortest query interval: longer than the shortest response time, as
#: RFC 2236 8.3 has the query interval exceed the response time.
MIN_QUERY_INTERVAL_S = MIN_RESPONSE_DS / 10


def max_response_ds(query_interval_s: float) -> int:
    """A periodic query's maximum response time, in the field's tenths of a
    second: IGMPv2's 10 s per 125 s of query interval, 0.1 s to 10 s."""
    return max(MIN_RESPONSE_DS, min(100, int(query_interval_s * 10 * 10 / 125)))
