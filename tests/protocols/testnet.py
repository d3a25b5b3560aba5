"""The in-process networks of the protocol tests, on the simulator's clock.

Both run :class:`hosts.core.Endpoint` objects on
:class:`netsim.engine.Simulator`, through one host model (:class:`Node`): the
endpoint starts, its datagrams go out, its events (joins, leaves, deliveries,
metrics) are kept or acted on, and its one timer is armed again after every
step.  They differ in what carries a datagram, and so in what they cost:

* :class:`TinyNet` -- real Ethernet/IPv4/UDP frames over
  :class:`netsim.link.Link` (rate, delay, drop-tail queue, Bernoulli loss)
  between hosts and routers of any shape.  Routers forward unicast along
  shortest paths and multicast along the shortest-path tree toward the hosts
  that joined (a join takes effect at once, as data-plane join state does).
  ``fold`` lets a router stand in for a switch that folds MTCP summaries.
* :class:`StarNet` -- datagrams, no frames: one sender behind a shared pipe
  to a router, one downlink pipe per receiver, feedback to the sender over a
  delay-only path.  Membership lives at the sender's first hop (the sender
  and its nearest router coincide, as in the WEBRC paper's footnote 6), so a
  join takes effect one uplink delay after it is sent and a group without
  members costs no bandwidth.  Without frames or routing a thousand
  receivers run within seconds.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from abc import ABC, abstractmethod
from typing import Callable

import networkx as nx

from p4mcc.hosts.core import Delivered, Endpoint, JoinGroup, LeaveGroup, Metric
from p4mcc.netsim.engine import Handle, Simulator
from p4mcc.netsim.link import Link
from p4mcc.netsim.packets import ip_int, ip_str, is_multicast, parse, udp_frame

_MAC = b"\x02\x00\x00\x00\x00\x01"


class Node(ABC):
    """A host running one endpoint: what either network does with the endpoint's output.

    A network's host says where a datagram goes (:meth:`emit`) and what a join
    or a leave does (:meth:`joined`, :meth:`left`); deliveries and metrics are
    kept here for the tests to read.
    """

    def __init__(self, sim: Simulator, ip: str, ep: Endpoint | None = None) -> None:
        self.sim, self.ip, self.ep = sim, ip, ep
        self.delivered: list[Delivered] = []
        self.metrics: list[Metric] = []
        self._timer: Handle | None = None

    @abstractmethod
    def emit(self, dest: tuple[str, int], data: bytes) -> None:
        """Each network says what this does."""

    @abstractmethod
    def joined(self, group: str) -> None:
        """Each network says what this does."""

    @abstractmethod
    def left(self, group: str) -> None:
        """Each network says what this does."""

    def _start(self) -> None:
        assert self.ep is not None
        self.ep.start(self.sim.now)
        self._flush()

    def _on_timer(self) -> None:
        self._timer = None
        assert self.ep is not None
        self.ep.handle_timer(self.sim.now)
        self._flush()

    def _flush(self) -> None:
        ep = self.ep
        assert ep is not None
        for d in ep.datagrams_to_send():
            self.emit(d.dest, d.data)
        while (ev := ep.next_event()) is not None:
            if isinstance(ev, JoinGroup):
                self.joined(ev.group)
            elif isinstance(ev, LeaveGroup):
                self.left(ev.group)
            elif isinstance(ev, Delivered):
                self.delivered.append(ev)
            elif isinstance(ev, Metric):
                self.metrics.append(ev)
        when = ep.get_timer()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if when is not None:
            self._timer = self.sim.at_cancellable(max(when, self.sim.now), self._on_timer)


# ---- frames: TinyNet ----------------------------------------------------------

class Host(Node):
    """A host node of a :class:`TinyNet`, on one link."""

    def __init__(self, net: "TinyNet", name: str, ip: str) -> None:
        super().__init__(net.sim, ip)
        self.net, self.name = net, name
        self.port_link: Link | None = None
        self.rx: list[tuple[float, bytes]] = []
        self.groups: set[str] = set()

    def attach(self, ep: Endpoint, at: float = 0.0) -> None:
        self.ep = ep
        self.net.sim.at(at, self._start)

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

    def emit(self, dest: tuple[str, int], data: bytes) -> None:
        self.send_udp(dest[0], dest[1], data)

    def joined(self, group: str) -> None:
        self.groups.add(group)
        self.net.join(group, self.name)

    def left(self, group: str) -> None:
        self.groups.discard(group)
        self.net.leave(group, self.name)

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


# ---- datagrams: StarNet -------------------------------------------------------

@dataclass
class LinkSpec:
    """One pipe of a :class:`StarNet`."""

    rate_bps: float = 1e9
    delay: float = 0.0
    queue: int = 1000  # packets waiting (not counting the one on the wire)
    loss: float = 0.0


class Pipe:
    """One direction of a link: drop-tail FIFO with exact departure times."""

    def __init__(self, sim: Simulator, spec: LinkSpec, rng: random.Random) -> None:
        self.sim, self.spec, self.rng = sim, spec, rng
        self.busy_until = 0.0
        self.departures: list[float] = []
        self.sent = self.dropped = self.lost = 0

    def send(self, size: int, deliver: Callable[[], None]) -> None:
        now = self.sim.now
        self.departures = [d for d in self.departures if d > now]
        if len(self.departures) > self.spec.queue:
            self.dropped += 1
            return
        start = max(now, self.busy_until)
        self.busy_until = start + size * 8.0 / self.spec.rate_bps
        self.departures.append(self.busy_until)
        self.sent += 1
        if self.spec.loss and self.rng.random() < self.spec.loss:
            self.lost += 1
            return
        self.sim.at(self.busy_until + self.spec.delay, deliver)


class StarHost(Node):
    """The sender or a receiver of a :class:`StarNet`."""

    def __init__(self, net: "StarNet", ip: str, ep: Endpoint, down: Pipe | None = None,
                 up_delay: float = 0.0) -> None:
        super().__init__(net.sim, ip, ep)
        self.net, self.down, self.up_delay = net, down, up_delay
        self.received = 0

    def emit(self, dest: tuple[str, int], data: bytes) -> None:
        if self is self.net.sender:
            self.net._multicast(dest[0], data)
        else:
            self.net.feedback += 1
            self.sim.at(self.sim.now + self.up_delay, self.net._to_sender, data, self.ip)

    def joined(self, group: str) -> None:
        self.sim.at(self.sim.now + self.up_delay, self.net.members[group].add, self.ip)

    def left(self, group: str) -> None:
        self.sim.at(self.sim.now + self.up_delay, self.net.members[group].discard, self.ip)


class StarNet:
    """Star: sender --shared--> router --down_i--> receiver i; feedback by delay."""

    def __init__(self, seed: int = 1, shared: LinkSpec | None = None) -> None:
        self.sim = Simulator(seed)
        self.rng = random.Random(seed)
        self.shared = Pipe(self.sim, shared or LinkSpec(), random.Random(seed * 7 + 1))
        self.sender: StarHost | None = None
        self.receivers: dict[str, StarHost] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.feedback = 0

    def add_sender(self, ip: str, ep: Endpoint) -> StarHost:
        self.sender = StarHost(self, ip, ep)
        return self.sender

    def add_receiver(self, ip: str, ep: Endpoint, down: LinkSpec | None = None,
                     up_delay: float = 0.0) -> StarHost:
        h = StarHost(self, ip, ep, Pipe(self.sim, down or LinkSpec(), random.Random(hash(ip) & 0xFFFF)),
                     up_delay)
        self.receivers[ip] = h
        return h

    def start(self, host: StarHost, at: float = 0.0) -> None:
        self.sim.at(at, host._start)

    def stop_receiver(self, ip: str, at: float) -> None:
        def _stop() -> None:
            h = self.receivers[ip]
            close = getattr(h.ep, "close", None)
            if close:
                close(self.sim.now)
            h._flush()
        self.sim.at(at, _stop)

    def _to_sender(self, data: bytes, src: str) -> None:
        assert self.sender is not None and self.sender.ep is not None
        self.sender.ep.receive_datagram(data, (src, 0), self.sim.now)
        self.sender._flush()

    def _multicast(self, group: str, data: bytes) -> None:
        if not self.members.get(group):
            return  # pruned at the first hop
        self.shared.send(len(data), lambda: self._at_router(group, data))

    def _at_router(self, group: str, data: bytes) -> None:
        for ip in sorted(self.members.get(group, ())):
            h = self.receivers[ip]
            assert h.down is not None
            h.down.send(len(data), lambda h=h: self._deliver(h, data))

    def _deliver(self, h: StarHost, data: bytes) -> None:
        assert h.ep is not None
        h.received += 1
        h.ep.receive_datagram(data, ("0.0.0.0", 0), self.sim.now)
        h._flush()

    def run(self, until: float) -> None:
        self.sim.run(until)


# ---- endpoints for cross traffic ------------------------------------------------

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
