"""The acker tests' shared run (RLA's and MTCP's pgmcc decoupling, tests/protocols/{rla,mtcp}/test_*_acker.py).

A near acker acknowledges all it is sent and a far child holds only the
first packet: a slow path that never loses, so never the acker.  How far
the sender runs ahead of the far child is what the reliability window bounds.
"""

from __future__ import annotations

from typing import Any, Callable

from win_util import feed, out

from p4mcc.hosts.wire import Message


def run_ahead(s: Any, ack: Callable[[str, int], Message], near: str, far: str, behind: Callable[[], int],
              rounds: int = 40, period: float = 0.02, after: Callable[[float], None] | None = None) -> int:
    """Every ``period`` the near acker acknowledges up to the last packet sent and the far
    child packet 1 (``ack(who, seq)``; ``after(now)`` once both are in); the most the far
    child lacked (``s.next_seq - 1 - behind()``) over ``rounds``."""
    worst, t = 0, 0.0
    for _ in range(rounds):
        t += period
        feed(s, ack(near, s.next_seq - 1), t, src=near)
        feed(s, ack(far, 1), t, src=far)
        if after is not None:
            after(t)
        out(s)
        worst = max(worst, s.next_seq - 1 - behind())
    return worst


def acker_moves(s: Any, ack: Callable[[str, int], Message], near: str, far: str, moved: Callable[[], bool],
                crash_at: float = 0.1, period: float = 0.01, until: float = 1.0,
                after: Callable[[float], None] | None = None) -> float | None:
    """The near acker acknowledges packet 10 at ``crash_at`` and falls silent; every ``period``
    the far child acknowledges up to the last packet sent.  The instant ``moved()`` (the acker
    is the far child), None when not by ``until``."""
    feed(s, ack(near, 10), crash_at, src=near)
    t = crash_at
    while t < until:
        t += period
        feed(s, ack(far, s.next_seq - 1), t, src=far)
        if after is not None:
            after(t)
        out(s)
        if moved():
            return t
    return None
