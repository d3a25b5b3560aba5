"""Test harness for the p4mcc switch program: compile once, build switches,
configure them the way docs/p4-program.md tells the controller to, build
frames with Scapy, and wire several switches into a chain.

The program runs on the built-in switch (``p4switch.interp.Switch``). While
the front end or the interpreter is not available the tests skip with a
message naming what is missing; a compile *error* in the program is a test
failure, never a skip.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.layers.inet import IPOption_Router_Alert
from scapy.packet import Raw

from p4mcc.controller.program import CPU_PORT, MCC, P4_INCLUDE, P4_SOURCE
from p4mcc.hosts import wire

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = str(P4_SOURCE)
INCLUDE = str(P4_INCLUDE)
FLOOD_MGID = 1
AGG_K = MCC.agg_k  # ports 0..AGG_K-1 are folded (include/defs.p4)

# drop_reasons indices (p4src/include/defs.p4)
DROP_PARSER_ERROR = 1
DROP_BAD_CHECKSUM = 2
DROP_TRUNCATED = 3
DROP_NOT_IPV4_OR_ARP = 4
DROP_IPV4_MISS = 5
DROP_UNKNOWN_GROUP = 6
DROP_POLICED = 7
DROP_FILTERED = 8
DROP_ABSORBED = 9
DROP_IGMP_CONSUMED = 10
DROP_IGMP_QUERY = 11


# ---------------------------------------------------------------------------
# Program and switches
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _compile() -> tuple[str, Any]:
    from p4mcc.p4switch.frontend import P4Error, compile_file

    try:
        return ("ok", compile_file(PROGRAM, include_dirs=[INCLUDE]))
    except P4Error as exc:
        return ("error", exc.format() if hasattr(exc, "format") else str(exc))


def program() -> Any:
    """The compiled program; a compile error fails the test with its message."""
    status, value = _compile()
    if status == "error":
        pytest.fail(f"p4src/mcc.p4 does not compile:\n{value}")
    return value


def new_switch() -> Any:
    """A fresh built-in switch running p4src/mcc.p4."""
    from p4mcc.p4switch.interp import Switch

    return Switch(program(), cpu_port=CPU_PORT)


def ip2int(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def mac2int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


@dataclass
class Group:
    """One multicast group as the controller configures it on one switch."""

    addr: str
    gidx: int
    mgid: int
    upstream_port: Optional[int] = None  # None: the sender's own switch


@dataclass
class Host:
    name: str
    ip: str
    mac: str


@dataclass
class SwitchSetup:
    """Desired state of one switch (what the controller would write)."""

    ports: list[int]
    hosts: dict[int, Host] = field(default_factory=dict)  # local port -> host
    routes: dict[str, int] = field(default_factory=dict)  # remote host ip -> port
    macs: dict[str, str] = field(default_factory=dict)  # remote host ip -> mac
    groups: list[Group] = field(default_factory=list)
    aggregate: dict[int, tuple[int, int]] = field(default_factory=dict)  # session -> (sidx, gidx)
    filters: dict[int, tuple[int, int]] = field(default_factory=dict)  # session -> (sidx, window_us)
    timeout_us: int = 0
    refresh_us: int = 0
    port_rates: dict[int, int] = field(default_factory=dict)  # port -> rate, 40 kb/s units
    epoch_shift: int = 2  # the share's epoch, 25.6 ms << epoch_shift, on every rated port
    stamped: tuple[int, ...] = ()  # sessions whose data packets are stamped
    port_sets: bool = False  # a PRE group per set of ports: data replicated to its members only

    def port_set_groups(self) -> list[tuple[int, list[int]]]:
        """(PRE group id, ports) of every port-set group, as controller/desired.py writes them."""
        from p4mcc.controller.desired import port_set_groups

        return [(g.group_id, [p for p, _rid in g.replicas]) for g in port_set_groups(self.ports) or []]

    def port_set_default(self) -> dict[str, int]:
        from p4mcc.controller.desired import PORT_SET_BASE

        return {"base": PORT_SET_BASE, "ports": sum(1 << p for p in self.ports)}


def configure(sw: Any, setup: SwitchSetup) -> None:
    """Writes ``setup`` into ``sw`` exactly as docs/p4-program.md prescribes."""
    from p4mcc.p4switch.runtime.tables import Lpm

    sw.set_multicast_group(FLOOD_MGID, [(p, 0) for p in setup.ports])
    sw.table_set_default(
        "MccIngress.switch_config",
        "MccIngress.set_config",
        {"flood_mgid": FLOOD_MGID, "membership_timeout_us": setup.timeout_us,
         "proxy_refresh_us": setup.refresh_us},
    )
    if setup.port_sets:
        for mgid, ports in setup.port_set_groups():
            sw.set_multicast_group(mgid, [(p, 0) for p in ports])
        sw.table_set_default("MccIngress.port_sets", "MccIngress.set_port_sets", setup.port_set_default())
    for g in setup.groups:
        sw.set_multicast_group(g.mgid, [(p, 0) for p in setup.ports])
        for n in range(4):
            sw.table_add(
                f"MccIngress.record{n}.groups",
                {"group": ip2int(g.addr)},
                f"MccIngress.record{n}.set_group",
                {"gidx": g.gidx, "mgid": g.mgid,
                 "upstream_port": g.upstream_port or 0,
                 "has_upstream": 0 if g.upstream_port is None else 1},
            )
    for port, h in setup.hosts.items():
        sw.table_add("MccIngress.ipv4_fwd", {"dst_addr": Lpm(ip2int(h.ip), 32)},
                     "MccIngress.forward", {"port": port})
        sw.table_add("MccIngress.arp_proxy", {"hdr.arp.tpa": ip2int(h.ip)},
                     "MccIngress.arp_reply", {"mac": mac2int(h.mac)})
    for ip, port in setup.routes.items():
        sw.table_add("MccIngress.ipv4_fwd", {"dst_addr": Lpm(ip2int(ip), 32)},
                     "MccIngress.forward", {"port": port})
        if ip in setup.macs:
            sw.table_add("MccIngress.arp_proxy", {"hdr.arp.tpa": ip2int(ip)},
                         "MccIngress.arp_reply", {"mac": mac2int(setup.macs[ip])})
    for session, (sidx, gidx) in setup.aggregate.items():
        sw.table_add("MccIngress.sessions", {"hdr.mcc.session_id": session},
                     "MccIngress.assist_aggregate", {"sidx": sidx, "gidx": gidx})
    for session, (sidx, window) in setup.filters.items():
        sw.table_add("MccIngress.sessions", {"hdr.mcc.session_id": session},
                     "MccIngress.assist_filter", {"sidx": sidx, "window_us": window})
    for port, units in setup.port_rates.items():
        sw.table_add("MccEgress.port_rate", {"port": port}, "MccEgress.set_port_rate",
                     {"rate_units": units, "epoch_shift": setup.epoch_shift})
    if setup.port_rates:
        for table, key, action, params in share_table_entries():
            sw.table_add(table, key, action, params)
    for session in setup.stamped:
        sw.table_add("MccEgress.stamp_sessions", {"hdr.mcc.session_id": session}, "MccEgress.stamp", {})


def share_table_entries() -> list[tuple[str, dict[str, int], str, dict[str, int]]]:
    """(table, key, action, parameters) of the share's log tables, as controller/desired.py writes them."""
    from p4mcc.controller import share

    n = MCC
    out = [(n.share_heavy_table, {n.share_heavy_key: h}, n.share_heavy_action,
            {n.share_heavy_log: log_n, n.share_heavy_log_more: log_n1})
           for h, log_n, log_n1 in share.heavy_log_entries()]
    out += [(n.share_spread_table, {n.share_spread_key: k}, n.share_spread_action, {n.share_spread_log: r})
            for k, r in share.spread_log_entries()]
    return out


def outputs(sw: Any, port: int, frame: bytes, now: float = 0.0) -> list[tuple[int, bytes]]:
    """(egress port, bytes) of everything the switch emits, sorted by port."""
    return sorted((o.port, bytes(o.data)) for o in sw.process(port, frame, now))


def counter(sw: Any, name: str, index: int) -> int:
    """Packet count of counter ``name`` at ``index``."""
    return sw.counter_read(name, index)[0]


# ---------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------

SENDER = Host("hs", "10.0.0.100", "00:00:00:00:00:64")
MCAST_MAC = "01:00:5e:00:00:00"


def mcast_mac(group: str) -> str:
    low = ip2int(group) & 0x7FFFFF
    return "01:00:5e:%02x:%02x:%02x" % (low >> 16, (low >> 8) & 0xFF, low & 0xFF)


def udp_frame(src: Host, dst_ip: str, payload: bytes, dst_mac: Optional[str] = None,
              sport: int = 5001, dport: int = 5001) -> bytes:
    """Ethernet/IPv4/UDP frame with a correct UDP checksum (as hosts send)."""
    if dst_mac is None:
        dst_mac = mcast_mac(dst_ip) if ip2int(dst_ip) >> 28 == 0xE else "00:00:00:00:00:fe"
    pkt = (Ether(src=src.mac, dst=dst_mac) / IP(src=src.ip, dst=dst_ip, ttl=64, id=1)
           / UDP(sport=sport, dport=dport) / Raw(payload))
    return bytes(pkt)


def data_frame(group: str, seq: int = 1, session: int = 7) -> bytes:
    """A p4mcc data packet from the sender to ``group``."""
    msg = wire.TfmccData(session_id=session, seq=seq, payload=b"x" * 32)
    return udp_frame(SENDER, group, msg.encode())


def inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def igmp_bytes(igmp_type: int, group_or_count: int, records: Iterable[tuple[int, str]] = (),
               max_resp: int = 0) -> bytes:
    """An IGMP message with a correct checksum; ``records`` (type, group) for v3."""
    body = b"".join(struct.pack("!BBHI", rtype, 0, 0, ip2int(g)) for rtype, g in records)
    head = struct.pack("!BBHI", igmp_type, max_resp, 0, group_or_count)
    csum = inet_checksum(head + body)
    return struct.pack("!BBHI", igmp_type, max_resp, csum, group_or_count) + body


def _igmp_frame(host: Host, dst_ip: str, igmp: bytes) -> bytes:
    pkt = (Ether(src=host.mac, dst=mcast_mac(dst_ip))
           / IP(src=host.ip, dst=dst_ip, ttl=1, tos=0xC0, id=0, proto=2,
                options=[IPOption_Router_Alert()])
           / Raw(igmp))
    return bytes(pkt)


def igmpv2_report(host: Host, group: str) -> bytes:
    return _igmp_frame(host, group, igmp_bytes(0x16, ip2int(group)))


def igmpv2_leave(host: Host, group: str) -> bytes:
    return _igmp_frame(host, "224.0.0.2", igmp_bytes(0x17, ip2int(group)))


JOIN = 4  # CHANGE_TO_EXCLUDE_MODE({}), what Linux sends on join
LEAVE = 3  # CHANGE_TO_INCLUDE_MODE({}), what Linux sends on leave
IS_EX = 2  # MODE_IS_EXCLUDE({}), what Linux answers a query with
ALLOW = 5  # ALLOW_NEW_SOURCES({}): no change


def igmpv3_report(host: Host, records: list[tuple[int, str]]) -> bytes:
    return _igmp_frame(host, "224.0.0.22", igmp_bytes(0x22, len(records), records))


def general_query() -> bytes:
    pkt = (Ether(src="00:00:00:00:00:fe", dst=mcast_mac("224.0.0.1"))
           / IP(src="10.0.0.254", dst="224.0.0.1", ttl=1, proto=2,
                options=[IPOption_Router_Alert()])
           / Raw(igmp_bytes(0x11, 0, max_resp=100)))
    return bytes(pkt)


def packet_out(egress_port: int, flood: int, frame: bytes) -> bytes:
    """The packet_out header (egress_port:9, flood:1, pad:6) + frame."""
    return struct.pack("!H", (egress_port << 7) | (flood << 6)) + frame


def parse_packet_in(data: bytes) -> tuple[int, int, bytes]:
    """(ingress_port, reason, frame) of a packet_in (ingress_port:9, reason:8, pad:7)."""
    word = int.from_bytes(data[:3], "big")
    return word >> 15, (word >> 7) & 0xFF, data[3:]


def ipv4_header_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 0x0F) * 4
    return inet_checksum(frame[14:14 + ihl]) == 0


def igmp_checksum_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 0x0F) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    return inet_checksum(frame[14 + ihl:14 + total]) == 0


def rewrite_udp_payload(frame: bytes, payload: bytes) -> bytes:
    """Expected frame after a switch rewrote the UDP payload (same length):
    IPv4 header unchanged (checksum still valid), the UDP checksum
    recomputed here in full by Scapy (the switch updates it incrementally),
    0 (none sent) staying 0."""
    pkt = Ether(frame)
    had_checksum = pkt[UDP].chksum != 0
    pkt[UDP].remove_payload()  # Raw, or p4mcc layers when hosts.scapy_layers is loaded
    pkt[UDP].add_payload(Raw(payload))
    pkt[UDP].chksum = None if had_checksum else 0
    return bytes(pkt)


def udp_checksum_ok(frame: bytes) -> bool:
    """Scapy's own verdict on the frame's UDP checksum (0: none, accepted)."""
    pkt = Ether(frame)
    sent = pkt[UDP].chksum
    if sent == 0:
        return True
    del pkt[UDP].chksum
    return Ether(bytes(pkt))[UDP].chksum == sent


def stamped(frame: bytes, stamp: int, share: int | None = None) -> bytes:
    """Expected frame after a switch wrote ``stamp`` (and ``share``, unless None)
    into its p4mcc header: the UDP checksum stays valid (recomputed here in
    full; the switch updates it incrementally), 0 (none) stays 0."""
    pkt = Ether(frame)
    payload = bytearray(bytes(pkt[UDP].payload))
    payload[3] = stamp
    if share is not None:
        payload[SHARE_AT] = share
    had_checksum = pkt[UDP].chksum != 0
    pkt[UDP].remove_payload()
    pkt[UDP].add_payload(Raw(bytes(payload)))
    pkt[UDP].chksum = None if had_checksum else 0
    return bytes(pkt)


#: Offset of the share byte in a p4mcc message (hosts/wire.py's COMMON_FIELDS).
SHARE_AT = sum(f.bits for f in wire.COMMON_FIELDS[:[f.name for f in wire.COMMON_FIELDS].index("share")]) // 8


def idle_share(rate_units: int) -> int:
    """The share code a port of ``rate_units`` (40 kb/s) writes while its last epoch was idle:
    the whole port (share.p4 at its first packet)."""
    return wire.Share.code_for(rate_units * wire.Stamp.RATE_UNIT_BPS)


def udp_payload(frame: bytes) -> bytes:
    return bytes(Ether(frame)[UDP].payload)


# ---------------------------------------------------------------------------
# Chains of switches
# ---------------------------------------------------------------------------


@dataclass
class Delivery:
    node: str  # host name, or "cpu:<switch>"
    data: bytes


class Net:
    """Switches joined by links, hosts on access ports; a frame injected at a
    host's port is carried hop by hop until it reaches hosts (or is dropped).
    ``trace`` records every (switch, egress port, bytes) transmission."""

    def __init__(self) -> None:
        self.switches: dict[str, Any] = {}
        self.links: dict[tuple[str, int], tuple[str, int]] = {}
        self.hosts: dict[tuple[str, int], str] = {}
        self.trace: list[tuple[str, int, bytes]] = []

    def add_switch(self, name: str, setup: SwitchSetup) -> Any:
        sw = new_switch()
        configure(sw, setup)
        self.switches[name] = sw
        return sw

    def link(self, a: str, pa: int, b: str, pb: int) -> None:
        self.links[(a, pa)] = (b, pb)
        self.links[(b, pb)] = (a, pa)

    def attach(self, host: str, sw: str, port: int) -> None:
        self.hosts[(sw, port)] = host

    def send(self, sw: str, port: int, frame: bytes, now: float = 0.0) -> list[Delivery]:
        out: list[Delivery] = []
        queue = deque([(sw, port, frame)])
        hops = 0
        while queue:
            name, in_port, data = queue.popleft()
            hops += 1
            assert hops < 1000, "forwarding loop"
            for o in self.switches[name].process(in_port, data, now):
                self.trace.append((name, o.port, bytes(o.data)))
                if o.port == CPU_PORT:
                    out.append(Delivery(f"cpu:{name}", bytes(o.data)))
                elif (name, o.port) in self.links:
                    peer, peer_port = self.links[(name, o.port)]
                    queue.append((peer, peer_port, bytes(o.data)))
                elif (name, o.port) in self.hosts:
                    out.append(Delivery(self.hosts[(name, o.port)], bytes(o.data)))
        return out

    def sent_on(self, sw: str, port: int) -> list[bytes]:
        return [d for s, p, d in self.trace if s == sw and p == port]


def receivers(deliveries: list[Delivery]) -> list[str]:
    return sorted(d.node for d in deliveries)


def two_folding_levels(group: str, session: int) -> tuple[Net, Host, Host, Host]:
    """sender - S1 (rA on 1) -(2:1)- S2 (rB on 3, rC on 4), both switches folding
    ``session``'s feedback, every receiver joined to ``group``: (net, rA, rB, rC)."""
    ra = Host("rA", "10.0.0.11", "00:00:00:00:00:0b")
    rb = Host("rB", "10.0.0.12", "00:00:00:00:00:0c")
    rc = Host("rC", "10.0.0.13", "00:00:00:00:00:0d")
    net = Net()
    net.add_switch("s1", SwitchSetup(
        ports=[1, 2, 4], hosts={1: ra, 4: SENDER},
        routes={rb.ip: 2, rc.ip: 2}, groups=[Group(group, 0, 10)], aggregate={session: (0, 0)}))
    net.add_switch("s2", SwitchSetup(
        ports=[1, 3, 4], hosts={3: rb, 4: rc}, routes={SENDER.ip: 1, ra.ip: 1},
        groups=[Group(group, 0, 10, upstream_port=1)], aggregate={session: (0, 0)}))
    net.link("s1", 2, "s2", 1)
    net.attach("hs", "s1", 4)
    for name, sw, port in (("rA", "s1", 1), ("rB", "s2", 3), ("rC", "s2", 4)):
        net.attach(name, sw, port)
    net.send("s1", 1, igmpv2_report(ra, group))
    net.send("s2", 3, igmpv2_report(rb, group))
    net.send("s2", 4, igmpv2_report(rc, group))
    return net, ra, rb, rc
