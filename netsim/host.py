"""Host nodes: a Linux-like host with one interface driving protocol cores.

A :class:`HostNode` plays the kernel for the sans-I/O endpoints attached to
it (:class:`hosts.core.Endpoint`): it delivers UDP datagrams to the endpoint
bound to the destination port (multicast ones only for groups the host has
joined), fires their timers at the requested virtual time, turns their
``Datagram``s into Ethernet/IPv4/UDP frames, and performs their
``JoinGroup``/``LeaveGroup`` as a Linux kernel does, including the IGMP
packets:

* IGMPv3 (Linux's default, ``force_igmp_version=0``): a join sends a
  State-Change Report with a CHANGE_TO_EXCLUDE record immediately and repeats
  it robustness-1 times (robustness 2: once) after a random delay in
  [0, 1 s] (the unsolicited report interval); a leave does the same with
  CHANGE_TO_INCLUDE.  Changes pending together are merged into one report.
  Reports go to 224.0.0.22 with TTL 1, TOS 0xc0 and the Router Alert option.
* IGMPv2 (``igmp_version=2``): a join sends a v2 report to the group and
  repeats it once after a random delay in [0, 10 s]; a leave sends one v2
  Leave to 224.0.0.2.
* Queries are answered: a v3 general query with a Current-State Report
  (MODE_IS_EXCLUDE records for every joined group) after a random delay up
  to the query's maximum response time; a v2 query with v2 reports.

Group membership is reference counted over the host's endpoints, as over
sockets: only the first join and the last leave of a group reach the wire.
Sent multicast is not looped back to the sending host.
"""

from __future__ import annotations

import struct
from heapq import heappush
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from p4mcc.controller.igmp import igmpv2
from p4mcc.hosts.core import Endpoint, JoinGroup, LeaveGroup
from p4mcc.hosts.stampwindow import StampWindow, fold_stamp
from p4mcc.netsim import packets as pk

if TYPE_CHECKING:
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.link import Channel

_UDP, _TCP, _IGMP = pk.PROTO_UDP, pk.PROTO_TCP, pk.PROTO_IGMP

#: sink(host, label, event) receives every non-join/leave event of every endpoint.
EventSink = Callable[["HostNode", str, Any], None]


@dataclass
class HostCounters:
    rx_frames: int = 0
    rx_udp: int = 0
    rx_tcp: int = 0
    rx_igmp: int = 0
    rx_not_for_us: int = 0
    rx_no_listener: int = 0
    rx_malformed: int = 0
    #: UDP datagrams whose nonzero checksum was wrong, dropped before any
    #: endpoint as a kernel drops them (a bit a link flipped, ``link_corrupt``).
    rx_bad_checksum: int = 0
    tx_frames: int = 0
    tx_dropped: int = 0
    igmp_sent: int = 0


@dataclass
class _Slot:
    """One endpoint attached to a host, with its driver-side state."""

    endpoint: Endpoint
    port: int
    label: str
    running: bool = False
    timer_at: float | None = None
    token: int = 0
    groups: list[str] = field(default_factory=list)


class HostNode:
    """A host with one interface (port 0) toward its switch."""

    IGMPV3_UNSOLICITED_INTERVAL = 1.0
    IGMPV2_UNSOLICITED_INTERVAL = 10.0
    ROBUSTNESS = 2

    def __init__(self, sim: "Simulator", name: str, ip: str, mac: str, *,
                 arp: dict[int, bytes] | None = None, igmp_version: int = 3,
                 sink: EventSink | None = None) -> None:
        if igmp_version not in (2, 3):
            raise ValueError("igmp_version must be 2 or 3")
        self.sim = sim
        self.name = name
        self.ip = ip
        self.ip_int = pk.ip_int(ip)
        self.mac = pk.mac_bytes(mac)
        #: Static ARP: unicast destination IP -> MAC (like the tutorials' host commands).
        self.arp = arp if arp is not None else {}
        self.igmp_version = igmp_version
        self.sink = sink
        self.iface: "Channel | None" = None
        self.counters = HostCounters()
        self._rng = sim.rng(f"host/{name}/igmp")
        self._udp: dict[int, list[_Slot]] = {}
        self._tcp: dict[int, Any] = {}
        #: group (int) -> number of endpoints that joined it.
        self.groups: dict[int, int] = {}
        #: group -> remaining state-change retransmissions (v3).
        self._pending: dict[int, int] = {}
        self._ifc_scheduled = False
        self._ident = 0
        #: (time, "join"|"leave", group) for results' join/leave plots.
        self.membership_log: list[tuple[float, str, str]] = []
        #: UDP payload bytes received to a multicast group, by destination port.
        self.rx_mcast_bytes: dict[int, int] = {}
        #: Congestion stamps of the p4mcc messages received to a multicast
        #: group, by destination port (read by the sampler, docs/stamp.md).
        self.rx_mcast_stamps: dict[int, StampWindow] = {}
        #: Unicast UDP datagrams received, by destination port (feedback at a sender).
        self.rx_ucast_msgs: dict[int, int] = {}
        #: UDP payload bytes sent, by source port.
        self.tx_udp_bytes: dict[int, int] = {}

    # Wiring --------------------------------------------------------------
    def attach(self, port: int, channel: "Channel") -> None:
        if port != 0:
            raise ValueError(f"host {self.name} has one interface (port 0)")
        self.iface = channel

    def add_endpoint(self, endpoint: Endpoint, port: int, *, label: str = "",
                     start_at: float = 0.0, stop_at: float | None = None) -> Endpoint:
        """Bind ``endpoint`` to UDP ``port``; start it at ``start_at``, stop at ``stop_at``.

        Stopping closes it as a process exit would: its groups are left and it
        gets no more datagrams or timers.
        """
        slot = _Slot(endpoint, port, label or f"{self.name}:{port}")
        self._udp.setdefault(port, []).append(slot)
        self.sim.at(max(start_at, self.sim.now), self._start, slot)
        if stop_at is not None:
            self.sim.at(stop_at, self.stop_endpoint, slot)
        return endpoint

    def bind_tcp(self, port: int, handler: Any) -> None:
        """``handler.on_segment(parsed)`` gets TCP segments to ``port``."""
        self._tcp[port] = handler

    # Endpoint driving ------------------------------------------------------
    def _start(self, slot: _Slot) -> None:
        slot.running = True
        slot.endpoint.start(self.sim.now)
        self._pump(slot)

    def stop_endpoint(self, slot: _Slot, *, graceful: bool = True) -> None:
        """Stop ``slot``'s endpoint as its process would end.

        Graceful (a scheduled stop, ``leave_at``, a ``receiver_leave`` fault):
        the core's :meth:`~hosts.core.Endpoint.close` runs first and what it
        sends goes out, as the asyncio driver does on exit.  Not graceful (a
        SIGKILL): no goodbye.  Either way the kernel then leaves its groups.
        """
        if not slot.running:
            return
        if graceful:
            slot.endpoint.close(self.sim.now)
            self._pump(slot)
        slot.running = False
        slot.token += 1
        for g in list(slot.groups):
            self._leave(slot, g)

    def _pump(self, slot: _Slot) -> None:
        ep = slot.endpoint
        out = ep.datagrams_to_send()
        if out:
            port = slot.port
            for d in out:
                dest = d.dest
                self.send_udp(port, dest[0], dest[1], d.data)
        ev = ep.next_event()
        while ev is not None:
            if isinstance(ev, JoinGroup):
                self._join(slot, ev.group)
            elif isinstance(ev, LeaveGroup):
                self._leave(slot, ev.group)
            elif self.sink is not None:
                self.sink(self, slot.label, ev)
            ev = ep.next_event()
        if not slot.running:
            return
        t = ep.get_timer()
        if t != slot.timer_at:
            slot.timer_at = t
            slot.token += 1
            if t is not None:
                # self.sim.at(max(t, now), self._fire, slot, slot.token), written
                # out (the same entry): after nearly every datagram and timer
                sim = self.sim
                now = sim.now
                sim._seq = seq = sim._seq + 1
                heappush(sim._heap, (t if t >= now else now, seq, self._fire, (slot, slot.token)))

    def _fire(self, slot: _Slot, token: int) -> None:
        if token != slot.token or not slot.running:
            return
        slot.timer_at = None
        slot.endpoint.handle_timer(self.sim.now)
        self._pump(slot)

    # Sending ---------------------------------------------------------------
    def send_frame(self, frame: bytes) -> None:
        if self.iface is None:
            self.counters.tx_dropped += 1
            return
        self.counters.tx_frames += 1
        if not self.iface.send(frame):
            self.counters.tx_dropped += 1

    def send_udp(self, sport: int, dst: str, dport: int, payload: bytes) -> None:
        d = pk.ip_int(dst)
        if pk.is_multicast(d):
            dmac = pk.multicast_mac(d)
        else:
            dmac = self.arp.get(d, b"\xff" * 6)
        self._ident += 1
        self.tx_udp_bytes[sport] = self.tx_udp_bytes.get(sport, 0) + len(payload)
        frame = pk.udp_frame(self.mac, dmac, self.ip_int, d, sport, dport, payload, 64, self._ident)
        c = self.counters  # send_frame, written out: every datagram an agent sends passes here
        if self.iface is None:
            c.tx_dropped += 1
            return
        c.tx_frames += 1
        if not self.iface.send(frame):
            c.tx_dropped += 1

    def next_ident(self) -> int:
        self._ident += 1
        return self._ident

    # Receiving -------------------------------------------------------------
    def receive(self, port: int, frame: bytes) -> None:
        c = self.counters
        c.rx_frames += 1
        p = pk.parse(frame)
        if p is None:
            c.rx_malformed += 1
            return
        dst = p.dst
        proto = p.proto
        if dst != self.ip_int:
            if (dst >> 28) != 0xE:  # not multicast (pk.is_multicast)
                c.rx_not_for_us += 1
                return
            if proto != _IGMP and dst not in self.groups:
                c.rx_not_for_us += 1
                return
        if proto == _UDP:
            if not p.checksum_ok:
                c.rx_bad_checksum += 1
                return
            c.rx_udp += 1
            if dst == self.ip_int:
                self.rx_ucast_msgs[p.dport] = self.rx_ucast_msgs.get(p.dport, 0) + 1
            else:
                self.rx_mcast_bytes[p.dport] = self.rx_mcast_bytes.get(p.dport, 0) + len(p.payload)
                fold_stamp(self.rx_mcast_stamps, p.dport, p.payload)
            slots = self._udp.get(p.dport)
            if not slots:
                c.rx_no_listener += 1
                return
            src = (pk.ip_str(p.src), p.sport)
            now = self.sim.now
            for slot in slots:
                if slot.running:
                    slot.endpoint.receive_datagram(p.payload, src, now)
                    self._pump(slot)
        elif proto == _TCP:
            c.rx_tcp += 1
            h = self._tcp.get(p.dport)
            if h is None:
                c.rx_no_listener += 1
            else:
                h.on_segment(p)
        elif proto == _IGMP:
            c.rx_igmp += 1
            self._igmp_in(p.payload)

    # Group membership (the kernel's IGMP host side) ------------------------
    def _join(self, slot: _Slot, group: str) -> None:
        if group in slot.groups:
            return
        slot.groups.append(group)
        g = pk.ip_int(group)
        n = self.groups.get(g, 0)
        self.groups[g] = n + 1
        if n == 0:
            self.membership_log.append((self.sim.now, "join", group))
            self._state_change(g, joined=True)

    def _leave(self, slot: _Slot, group: str) -> None:
        if group not in slot.groups:
            return
        slot.groups.remove(group)
        g = pk.ip_int(group)
        n = self.groups.get(g, 0)
        if n <= 1:
            self.groups.pop(g, None)
            self.membership_log.append((self.sim.now, "leave", group))
            self._state_change(g, joined=False)
        else:
            self.groups[g] = n - 1

    def _state_change(self, g: int, joined: bool) -> None:
        if self.igmp_version == 2:
            if joined:
                self._send_igmp(igmpv2(pk.IGMPV2_REPORT, g), g)
                self.sim.after(self._rng.uniform(0, self.IGMPV2_UNSOLICITED_INTERVAL),
                               self._v2_repeat, g)
            else:
                self._send_igmp(igmpv2(pk.IGMPV2_LEAVE, g), pk.ALL_ROUTERS)
            return
        # v3: report now (merged with other pending changes), then repeat.
        self._pending[g] = self.ROBUSTNESS
        self._send_state_changes()

    def _v2_repeat(self, g: int) -> None:
        if g in self.groups:
            self._send_igmp(igmpv2(pk.IGMPV2_REPORT, g), g)

    def _send_state_changes(self) -> None:
        records = []
        for g in sorted(self._pending):
            rt = pk.CHANGE_TO_EXCLUDE if g in self.groups else pk.CHANGE_TO_INCLUDE
            records.append((rt, g))
            self._pending[g] -= 1
        self._pending = {g: n for g, n in self._pending.items() if n > 0}
        if records:
            self._send_igmp(pk.igmpv3_report(records), pk.IGMPV3_ALL_ROUTERS)
        if self._pending and not self._ifc_scheduled:
            self._ifc_scheduled = True
            self.sim.after(self._rng.uniform(0, self.IGMPV3_UNSOLICITED_INTERVAL), self._ifc_timer)

    def _ifc_timer(self) -> None:
        self._ifc_scheduled = False
        self._send_state_changes()

    def _send_igmp(self, igmp: bytes, dst: int) -> None:
        self.counters.igmp_sent += 1
        self.send_frame(pk.igmp_frame(self.mac, self.ip_int, igmp, dst, ident=self.next_ident()))

    def _igmp_in(self, msg: bytes) -> None:
        if len(msg) < 8 or msg[0] != pk.IGMP_QUERY or pk.checksum(msg) != 0:
            return
        group = struct.unpack_from("!I", msg, 4)[0]
        code = msg[1]
        if len(msg) >= 12:  # v3 query: max resp code in 1/10 s (exponent form above 127)
            mrt = (code if code < 128 else ((code & 0x0F) | 0x10) << (((code >> 4) & 0x07) + 3)) / 10
            delay = self._rng.uniform(0, mrt or 10.0)
            self.sim.after(delay, self._answer_v3, group)
        else:
            for g in sorted(self.groups):
                if group in (0, g):
                    self.sim.after(self._rng.uniform(0, (code or 100) / 10),
                                   self._v2_repeat, g)

    def _answer_v3(self, group: int) -> None:
        gs = [g for g in sorted(self.groups) if group in (0, g) and g != pk.ALL_SYSTEMS]
        if gs:
            self._send_igmp(pk.igmpv3_report([(pk.MODE_IS_EXCLUDE, g) for g in gs]),
                            pk.IGMPV3_ALL_ROUTERS)
