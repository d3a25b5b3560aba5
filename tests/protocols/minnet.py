"""A minimal in-process multicast network for behaviour tests of the cores.

The event loop is the simulator's (``netsim.engine.Simulator``); links and
multicast forwarding here are deliberately tiny: one sender behind a shared
link (rate, delay, drop-tail queue, random loss) to a router, and per-receiver
downlinks from the router.  Group membership lives at the sender's first hop
(the sender and its nearest router coincide, as in the WEBRC paper's
footnote 6), so a join takes effect one uplink delay after it is sent and a
group without members costs no bandwidth.  Feedback travels receiver ->
sender over a delay-only path.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from p4mcc.hosts.core import Endpoint, JoinGroup, LeaveGroup, Metric
from p4mcc.netsim.engine import Simulator


@dataclass
class LinkSpec:
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


@dataclass
class Host:
    ip: str
    ep: Endpoint
    down: Pipe | None = None
    up_delay: float = 0.0
    metrics: list[Metric] = field(default_factory=list)
    received: int = 0


class MiniNet:
    """Star: sender --shared--> router --down_i--> receiver i; feedback by delay."""

    def __init__(self, seed: int = 1, shared: LinkSpec | None = None) -> None:
        self.sim = Simulator(seed)
        self.rng = random.Random(seed)
        self.shared = Pipe(self.sim, shared or LinkSpec(), random.Random(seed * 7 + 1))
        self.sender: Host | None = None
        self.receivers: dict[str, Host] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.feedback = 0
        self._timer_at: dict[str, float] = {}

    # Topology -------------------------------------------------------------
    def add_sender(self, ip: str, ep: Endpoint) -> Host:
        self.sender = Host(ip, ep)
        return self.sender

    def add_receiver(self, ip: str, ep: Endpoint, down: LinkSpec | None = None,
                     up_delay: float = 0.0) -> Host:
        h = Host(ip, ep, Pipe(self.sim, down or LinkSpec(), random.Random(hash(ip) & 0xFFFF)),
                 up_delay)
        self.receivers[ip] = h
        return h

    # Driving ----------------------------------------------------------------
    def start(self, host: Host, at: float = 0.0) -> None:
        self.sim.at(at, self._start, host)

    def _start(self, host: Host) -> None:
        host.ep.start(self.sim.now)
        self._drain(host)

    def stop_receiver(self, ip: str, at: float) -> None:
        def _stop() -> None:
            h = self.receivers[ip]
            close = getattr(h.ep, "close", None)
            if close:
                close(self.sim.now)
            self._drain(h)
        self.sim.at(at, _stop)

    def _drain(self, host: Host) -> None:
        ep = host.ep
        for dg in ep.datagrams_to_send():
            if host is self.sender:
                self._multicast(dg.dest[0], dg.data)
            else:
                self.feedback += 1
                self.sim.at(self.sim.now + host.up_delay, self._to_sender, dg.data, host.ip)
        while (ev := ep.next_event()) is not None:
            if isinstance(ev, JoinGroup):
                self.sim.at(self.sim.now + host.up_delay, self.members[ev.group].add, host.ip)
            elif isinstance(ev, LeaveGroup):
                self.sim.at(self.sim.now + host.up_delay, self.members[ev.group].discard, host.ip)
            elif isinstance(ev, Metric):
                host.metrics.append(ev)
        when = ep.get_timer()
        if when is not None and self._timer_at.get(host.ip) != when:
            self._timer_at[host.ip] = when
            self.sim.at(max(when, self.sim.now), self._fire, host, when)

    def _fire(self, host: Host, when: float) -> None:
        if self._timer_at.get(host.ip) != when:
            return
        del self._timer_at[host.ip]
        host.ep.handle_timer(self.sim.now)
        self._drain(host)

    def _to_sender(self, data: bytes, src: str) -> None:
        assert self.sender is not None
        self.sender.ep.receive_datagram(data, (src, 0), self.sim.now)
        self._drain(self.sender)

    def _multicast(self, group: str, data: bytes) -> None:
        if not self.members.get(group):
            return  # pruned at the first hop
        self.shared.send(len(data), lambda: self._at_router(group, data))

    def _at_router(self, group: str, data: bytes) -> None:
        for ip in sorted(self.members.get(group, ())):
            h = self.receivers[ip]
            assert h.down is not None
            h.down.send(len(data), lambda h=h: self._deliver(h, data))

    def _deliver(self, h: Host, data: bytes) -> None:
        h.received += 1
        h.ep.receive_datagram(data, ("0.0.0.0", 0), self.sim.now)
        self._drain(h)

    def run(self, until: float) -> None:
        self.sim.run(until)
