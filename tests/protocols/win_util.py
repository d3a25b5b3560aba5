"""Helpers for driving a core with a fake clock and scripted packets."""

from __future__ import annotations

from typing import Any

from p4mcc.hosts.core import Datagram, Endpoint, Event
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.wire import Message, decode

GROUP = "239.1.2.3"
PORT = 6001
SENDER = "10.0.0.1"


def cfg(params: Any, local: str = SENDER, seed: int = 7, session: int = 9) -> SessionConfig:
    return SessionConfig(session, GROUP, PORT, SENDER, local, params, seed)


def out(ep: Endpoint) -> list[tuple[tuple[str, int], Message]]:
    """Drain and decode what the core wants to send."""
    return [(d.dest, decode(d.data)) for d in ep.datagrams_to_send()]


def events(ep: Endpoint) -> list[Event]:
    evs = []
    while (e := ep.next_event()) is not None:
        evs.append(e)
    return evs


def feed(ep: Endpoint, msg: Message, now: float, src: str = "10.0.1.1") -> None:
    ep.receive_datagram(msg.encode(), (src, PORT), now)


def run_timers(ep: Endpoint, until: float) -> float:
    """Fire every timer due up to ``until`` in order; return the clock."""
    now = ep.now
    while (t := ep.get_timer()) is not None and t <= until:
        now = max(now, t)
        ep.handle_timer(now)
    return now


__all__ = ["Datagram", "GROUP", "PORT", "SENDER", "cfg", "events", "feed", "out", "run_timers"]
