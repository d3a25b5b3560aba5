"""A tiny in-process network for behaviour tests of the window-based cores.

It drives :class:`hosts.core.Endpoint` objects over real Ethernet/IPv4/UDP
frames on the simulator's clock (:class:`netsim.engine.Simulator`) and links
(:class:`netsim.link.Link`: rate, delay, drop-tail queue, Bernoulli loss).
Routers forward unicast along shortest paths and multicast along the shortest
path tree toward hosts that joined the group (joins take effect at once, as
data-plane join state does).  ``fold`` lets a router stand in for a switch that
folds MTCP summaries, until the simulator's P4 switch node runs the program.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import networkx as nx

from p4mcc.hosts.core import Delivered, Endpoint, JoinGroup, LeaveGroup, Metric
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.link import Link
from p4mcc.netsim.packets import ip_int, ip_str, is_multicast, parse, udp_frame

_MAC = b"\x02\x00\x00\x00\x00\x01"


class Host:
    """A host node running one endpoint."""

    def __init__(self, net: "TinyNet", name: str, ip: str) -> None:
        self.net, self.name, self.ip = net, name, ip
        self.ep: Endpoint | None = None
        self.port_link: Link | None = None
        self.delivered: list[Delivered] = []
        self.metrics: list[Metric] = []
        self.rx: list[tuple[float, bytes]] = []
        self._timer = None
        self.groups: set[str] = set()

    def attach(self, ep: Endpoint, at: float = 0.0) -> None:
        self.ep = ep
        self.net.sim.at(at, self._start)

    def _start(self) -> None:
        assert self.ep is not None
        self.ep.start(self.net.sim.now)
        self._flush()

    def receive(self, port: int, frame: bytes) -> None:
        p = parse(frame)
        if p is None or self.ep is None:
            return
        dst = ip_str(p.dst)
        if is_multicast(p.dst) and dst not in self.groups:
            return
        self.rx.append((self.net.sim.now, p.payload))
        self.ep.receive_datagram(p.payload, (ip_str(p.src), p.sport), self.net.sim.now)
        self._flush()

    def _on_timer(self) -> None:
        self._timer = None
        assert self.ep is not None
        self.ep.handle_timer(self.net.sim.now)
        self._flush()

    def _flush(self) -> None:
        ep = self.ep
        assert ep is not None
        for d in ep.datagrams_to_send():
            self.send_udp(d.dest[0], d.dest[1], d.data)
        while (ev := ep.next_event()) is not None:
            if isinstance(ev, JoinGroup):
                self.groups.add(ev.group)
                self.net.join(ev.group, self.name)
            elif isinstance(ev, LeaveGroup):
                self.groups.discard(ev.group)
                self.net.leave(ev.group, self.name)
            elif isinstance(ev, Delivered):
                self.delivered.append(ev)
            elif isinstance(ev, Metric):
                self.metrics.append(ev)
        when = ep.get_timer()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if when is not None:
            self._timer = self.net.sim.at_cancellable(max(when, self.net.sim.now), self._on_timer)

    def send_udp(self, dst: str, dport: int, payload: bytes) -> None:
        frame = udp_frame(_MAC, _MAC, ip_int(self.ip), ip_int(dst), 5000, dport, payload)
        assert self.port_link is not None
        ch = self.port_link.ab if self.port_link.a is self else self.port_link.ba
        ch.send(frame)


class Router:
    """Forwards by shortest path (unicast) and along the group's tree (multicast)."""

    def __init__(self, net: "TinyNet", name: str) -> None:
        self.net, self.name = net, name
        self.ports: dict[int, tuple[Link, str]] = {}  # port -> (link, neighbour)
        #: Optional fold hook for feedback: fold(router, in_port, payload) -> payloads to
        #: forward instead (None: forward unchanged).
        self.fold: Callable[["Router", int, bytes, str], list[bytes] | None] | None = None

    def receive(self, port: int, frame: bytes) -> None:
        p = parse(frame)
        if p is None:
            return
        dst = ip_str(p.dst)
        if is_multicast(p.dst):
            for q, (_link, nb) in self.ports.items():
                if q != port and self.net.mcast_toward(self.name, nb, dst):
                    self._out(q, frame)
            return
        if self.fold is not None:
            repl = self.fold(self, port, p.payload, ip_str(p.src))
            if repl is not None:
                for payload in repl:
                    f = udp_frame(_MAC, _MAC, p.src, p.dst, p.sport, p.dport, payload)
                    self._route(dst, f)
                return
        self._route(dst, frame)

    def _route(self, dst: str, frame: bytes) -> None:
        nh = self.net.next_hop(self.name, self.net.host_by_ip[dst])
        for q, (_link, nb) in self.ports.items():
            if nb == nh:
                self._out(q, frame)
                return

    def _out(self, port: int, frame: bytes) -> None:
        link, _nb = self.ports[port]
        ch = link.ab if link.a is self else link.ba
        ch.send(frame)


class TinyNet:
    """Build hosts, routers and links; run on a :class:`Simulator`."""

    def __init__(self, seed: int = 1) -> None:
        self.sim = Simulator(seed)
        self.g = nx.Graph()
        self.hosts: dict[str, Host] = {}
        self.routers: dict[str, Router] = {}
        self.host_by_ip: dict[str, str] = {}
        self.links: dict[tuple[str, str], Link] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self._paths: dict[str, dict[str, list[str]]] = {}

    def host(self, name: str, ip: str) -> Host:
        h = Host(self, name, ip)
        self.hosts[name] = h
        self.host_by_ip[ip] = name
        self.g.add_node(name)
        return h

    def router(self, name: str) -> Router:
        r = Router(self, name)
        self.routers[name] = r
        self.g.add_node(name)
        return r

    def node(self, name: str) -> Host | Router:
        return self.hosts.get(name) or self.routers[name]

    def link(self, a: str, b: str, rate_bps: float = 100e6, delay_s: float = 0.001,
             loss: float = 0.0, queue: int = 100) -> Link:
        na, nb = self.node(a), self.node(b)
        pa = len(na.ports) + 1 if isinstance(na, Router) else 1
        pb = len(nb.ports) + 1 if isinstance(nb, Router) else 1
        link = Link(self.sim, f"{a}-{b}", na, pa, nb, pb, rate_bps=rate_bps, delay_s=delay_s,
                    loss=loss, queue_packets=queue)
        for node, port, other in ((na, pa, b), (nb, pb, a)):
            if isinstance(node, Router):
                node.ports[port] = (link, other)
            else:
                node.port_link = link
        self.g.add_edge(a, b)
        self.links[(a, b)] = link
        self._paths.clear()
        return link

    def channel(self, a: str, b: str):
        """The channel carrying frames from ``a`` to ``b``."""
        if (a, b) in self.links:
            return self.links[(a, b)].ab
        return self.links[(b, a)].ba

    def _path(self, src: str, dst: str) -> list[str]:
        if src not in self._paths:
            self._paths[src] = nx.single_source_shortest_path(self.g, src)
        return self._paths[src][dst]

    def next_hop(self, at: str, dst_host: str) -> str:
        return self._path(at, dst_host)[1]

    def join(self, group: str, host: str) -> None:
        self.members[group].add(host)

    def leave(self, group: str, host: str) -> None:
        self.members[group].discard(host)

    def mcast_toward(self, at: str, neighbour: str, group: str) -> bool:
        for m in self.members.get(group, ()):
            if m != at and self._path(at, m)[1] == neighbour:
                return True
        return False

    def run(self, until: float) -> None:
        self.sim.run(until)


class CbrSource(Endpoint):
    """Cross traffic: constant-bit-rate UDP from ``start`` to ``stop``."""

    role = "cbr"

    def __init__(self, dest: tuple[str, int], rate_bps: float, size: int = 1000,
                 start: float = 0.0, stop: float = 1e9) -> None:
        super().__init__()
        self.dest, self.size, self.start_t, self.stop_t = dest, size, start, stop
        self.gap = size * 8 / rate_bps

    def on_start(self, now: float) -> None:
        self.set_timer("tx", max(now, self.start_t))

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        pass

    def on_timer(self, name: str, now: float) -> None:
        if now >= self.stop_t:
            return
        self.send(self.dest, bytes(self.size))
        self.set_timer("tx", now + self.gap)


class Sink(Endpoint):
    """Receives and drops."""

    role = "sink"

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        pass
