"""Fake-clock helpers: drive a core by hand and collect what it does; loopback ports for the UDP driver tests."""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass, field

from p4mcc.hosts import wire
from p4mcc.hosts.core import Datagram, Endpoint, Event, JoinGroup, LeaveGroup, Metric

LO = "127.0.0.1"


@dataclass
class Out:
    datagrams: list[Datagram] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def messages(self) -> list[wire.Message]:
        return [wire.decode(d.data) for d in self.datagrams]

    def joins(self) -> list[str]:
        return [e.group for e in self.events if isinstance(e, JoinGroup)]

    def leaves(self) -> list[str]:
        return [e.group for e in self.events if isinstance(e, LeaveGroup)]

    def metrics(self) -> list[Metric]:
        return [e for e in self.events if isinstance(e, Metric)]


def drain(ep: Endpoint) -> Out:
    out = Out(ep.datagrams_to_send())
    while (ev := ep.next_event()) is not None:
        out.events.append(ev)
    return out


def run_until(ep: Endpoint, until: float) -> Out:
    """Fire the core's timers in order up to ``until``; collect everything."""
    out = drain(ep)
    while (t := ep.get_timer()) is not None and t <= until:
        ep.handle_timer(t)
        more = drain(ep)
        out.datagrams += more.datagrams
        out.events += more.events
    return out


def feed(ep: Endpoint, msg: wire.Message, now: float, src: tuple[str, int] = ("10.0.0.1", 5000)) -> Out:
    ep.receive_datagram(msg.encode(), src, now)
    return drain(ep)


def free_port() -> int:
    """A free port below the ephemeral range (feedback sockets take ephemeral ones)."""
    rng = random.Random()
    while True:
        port = rng.randint(20000, 30000)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((LO, port))
            except OSError:
                continue
            return port


def webrc_receiver(params: object, names: tuple[str, ...], group: str = "239.2.0.0") -> object:
    """A started WEBRC receiver of ``group`` with the rules ``names``, its start-up output drained."""
    from p4mcc.hosts import registry
    from p4mcc.hosts.webrc import RULES, WebrcReceiver

    cls = RULES.compose(WebrcReceiver, names)
    r = cls(registry.SessionConfig(1, group, 7000, "10.0.0.1", "10.0.0.2", params, rules=names))
    r.start(0.0)
    drain(r)
    return r
