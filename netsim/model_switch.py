"""A reference *model* switch: IGMP snooping L3 multicast plus unicast routes.

This is a Python model for engine tests, speed comparisons and runs before
the P4 program is available -- it is NOT the P4 program and gives no evidence
about it.  It behaves like the program's "assistance off" service:

* unicast IPv4: exact host routes (destination IP -> port), filled by the
  network builder from shortest paths; frames forwarded unchanged (no TTL
  decrement, no MAC rewrite);
* IGMP snooping: v2/v3 reports and leaves received on a port add/remove that
  port for the group (a CHANGE_TO_INCLUDE/MODE_IS_INCLUDE record with no
  sources is a leave);
* join propagation: when a group's membership goes from empty to non-empty
  the report is forwarded on the port toward the group's source (set per
  group by the builder); when it becomes empty, the leave is;
* multicast data to a group is replicated to every member port except the
  one it came in on;
* membership ageing, as the P4 program ages it (``igmp.p4``, ``egress.p4``)
  with the scenario's timeout (the controller options the P4 nodes get,
  ``scenario.control.scenario_options``, set by ``netsim.switches``): a
  port stops receiving a group once its last report is older than the
  timeout, and a report into a group whose newest report is that old
  starts the group afresh (its join goes upstream again).
  Times are whole microseconds, as the program's, so both kinds of switch
  prune the same packet.  Without it a receiver whose reports were all lost
  on a lossy link kept its data in the model and lost it behind P4 nodes,
  and the two runs of one seed parted.

Counters record what it did; malformed frames are counted and dropped.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4mcc.netsim import packets as pk

if TYPE_CHECKING:
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.link import Channel


@dataclass
class SwitchCounters:
    rx: int = 0
    tx: int = 0
    igmp: int = 0
    joins_forwarded: int = 0
    leaves_forwarded: int = 0
    unknown_unicast: int = 0
    no_members: int = 0
    #: replicas not sent to a member port whose last report is older than the timeout
    aged_out: int = 0
    malformed: int = 0


class ModelSwitch:
    """See the module docstring.  Ports are small integers (1..n)."""

    is_model = True
    #: A group's first upstream join is sent again this many seconds later
    #: (RFC 3376 8.11's Unsolicited Report Interval; RFC 4605 proxies repeat
    #: their reports), and a member's later report goes upstream once the
    #: last join sent is at least this old: a join lost on a full upstream
    #: queue no longer leaves the group cut off until the next query.
    JOIN_REFRESH = 1.0

    def __init__(self, sim: "Simulator", name: str) -> None:
        self.sim = sim
        self.name = name
        self.ports: dict[int, "Channel"] = {}
        #: destination IPv4 (int) -> egress port
        self.routes: dict[int, int] = {}
        #: group (int) -> port toward the group's source (None: this switch is the source's)
        self.upstream: dict[int, int] = {}
        #: group (int) -> member port -> its last report (µs of simulated time)
        self.members: dict[int, dict[int, int]] = {}
        #: group (int) -> the group's newest report (µs)
        self.last_report: dict[int, int] = {}
        #: µs a port keeps a group after its last report (0: never ages); the
        #: P4 program's ``membership_timeout_us``
        self.membership_timeout_us = 0
        #: group (int) -> when this switch last sent a join for it upstream
        self.joined_upstream_at: dict[int, float] = {}
        self.counters = SwitchCounters()

    def attach(self, port: int, channel: "Channel") -> None:
        self.ports[port] = channel

    def _out(self, port: int, frame: bytes) -> None:
        ch = self.ports.get(port)
        if ch is not None:
            self.counters.tx += 1
            ch.send(frame)

    def receive(self, port: int, frame: bytes) -> None:
        c = self.counters
        c.rx += 1
        if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
            c.malformed += 1
            return
        dst = int.from_bytes(frame[30:34], "big")
        proto = frame[23]
        if proto == pk.PROTO_IGMP:
            self._igmp(port, frame)
            return
        if (dst >> 28) == 0xE:
            members = self.members.get(dst)
            if not members:
                c.no_members += 1
                return
            timeout = self.membership_timeout_us
            now_us = round(self.sim.now * 1e6) if timeout else 0
            for p in sorted(members):
                if p == port:
                    continue
                if timeout and now_us - members[p] > timeout:
                    c.aged_out += 1  # egress.p4's prune of a stale port
                    continue
                self._out(p, frame)
            return
        out = self.routes.get(dst)
        if out is None:
            c.unknown_unicast += 1
            return
        self._out(out, frame)

    # IGMP snooping ---------------------------------------------------------
    def _repeat_join(self, g: int, up: int, frame: bytes) -> None:
        """The robustness repeat of a group's first upstream join, if it still has members."""
        if self.members.get(g) and self.upstream.get(g) == up:
            self.counters.joins_forwarded += 1
            self.joined_upstream_at[g] = self.sim.now
            self._out(up, frame)

    def _igmp(self, port: int, frame: bytes) -> None:
        c = self.counters
        c.igmp += 1
        ihl = (frame[14] & 0x0F) * 4
        msg = frame[14 + ihl:]
        if len(msg) < 8 or pk.checksum(msg) != 0:
            c.malformed += 1
            return
        t = msg[0]
        changes: list[tuple[int, bool]] = []
        if t == pk.IGMPV2_REPORT:
            changes.append((struct.unpack_from("!I", msg, 4)[0], True))
        elif t == pk.IGMPV2_LEAVE:
            changes.append((struct.unpack_from("!I", msg, 4)[0], False))
        elif t == pk.IGMPV3_REPORT:
            n = struct.unpack_from("!H", msg, 6)[0]
            off = 8
            for _ in range(n):
                if off + 8 > len(msg):
                    c.malformed += 1
                    return
                rt, aux, nsrc, g = struct.unpack_from("!BBHI", msg, off)
                off += 8 + 4 * nsrc + 4 * aux
                if rt in (pk.MODE_IS_EXCLUDE, pk.CHANGE_TO_EXCLUDE):
                    changes.append((g, True))
                elif rt in (pk.MODE_IS_INCLUDE, pk.CHANGE_TO_INCLUDE) and nsrc == 0:
                    changes.append((g, False))
        else:
            return  # queries and others: nothing to snoop
        forward = False
        now_us = round(self.sim.now * 1e6)
        timeout = self.membership_timeout_us
        for g, join in changes:
            m = self.members.setdefault(g, {})
            if m and timeout and now_us - self.last_report.get(g, now_us) > timeout:
                m.clear()  # every port is stale: the group starts afresh
            before = bool(m)
            if join:
                m[port] = now_us
                self.last_report[g] = now_us
            else:
                m.pop(port, None)
            if self.upstream.get(g) in (None, port):
                continue
            # A join goes up when the group gains its first member, and again
            # with a later report once the last one sent is older than
            # JOIN_REFRESH (as the P4 program's proxy refresh does): a first
            # join lost on a full upstream queue is then repaired by the
            # hosts' repeated reports instead of never.
            stale = self.sim.now - self.joined_upstream_at.get(g, -math.inf) >= self.JOIN_REFRESH
            if before != bool(m) or (join and stale):
                forward = True
                if join:
                    c.joins_forwarded += 1
                    self.joined_upstream_at[g] = self.sim.now
                    if not before:  # RFC 4605 / RFC 3376 robustness: say it once more
                        self.sim.after(self.JOIN_REFRESH, self._repeat_join, g, self.upstream[g], frame)
                else:
                    c.leaves_forwarded += 1
                    self.joined_upstream_at.pop(g, None)
        if forward:
            ups = {self.upstream[g] for g, _ in changes if self.upstream.get(g) not in (None, port)}
            for up in sorted(ups):
                self._out(up, frame)
