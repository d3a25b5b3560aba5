"""An endpoint fires its timers by time, and timers due at the same time in the order they were set."""

from __future__ import annotations

from typing import Any

from p4mcc.hosts.core import Address, Endpoint


class Recorder(Endpoint):
    """Sets the timers it is told to and records which fire, in order."""

    TIMERS = frozenset({"a", "b", "c", "d"})

    def __init__(self) -> None:
        super().__init__()
        self.fired: list[tuple[str, float]] = []

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        pass

    def on_timer(self, name: str, now: float) -> None:
        self.fired.append((name, now))


def test_due_timers_fire_by_time_then_by_the_order_they_were_set() -> None:
    ep: Any = Recorder()
    ep.start(0.0)
    ep.set_timer("c", 2.0)
    ep.set_timer("a", 1.0)
    ep.set_timer("d", 1.0)  # same time as "a", set after it
    ep.set_timer("b", 0.5)
    ep.set_timer("b", 1.0)  # replaced: now due with "a" and "d", set last
    assert ep.get_timer() == 1.0
    ep.handle_timer(1.0)
    assert [n for n, _ in ep.fired] == ["a", "d", "b"]
    assert ep.timer_at("c") == 2.0 and ep.timer_at("b") is None
    ep.cancel_timer("c")
    assert ep.get_timer() is None
