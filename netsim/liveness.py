"""The liveness check: every session that can deliver does, at least once per :data:`IDLE_LIMIT_S`.

A session whose sender has data and whose receivers are reachable must
deliver something to each receiver in every 5 s window.  A receiver that
goes longer without delivery is a *stall*: the run records one ``stall``
event per episode in ``events.csv`` (node: the receiver; detail: the
session and when it last delivered) and the count in ``summary.json``
(``stalls``, per session).

*Delivered* is in-order data for a reliable protocol (its receiver keeps a
``rbuf``; repairs of packets it holds are not progress, so a sender that
only retransmits stalls) and any session payload reaching the receiver's
host for the others.  The idle clock starts again, instead of counting,
whenever the window cannot be asked to deliver:

* the receiver is not in the session (before its join, after its leave) or
  its agent is not running (crashed);
* the sender has no data (stopped, or its finite stream done) or the
  receiver already holds the whole stream;
* a link is down anywhere, or a fault instance is in progress (from its
  start to its end): the bound is longer only while a link is down, and a
  fault's recovery gets the same 5 s once it is over.

The check looks at every metrics interval, from the run's sampler tick, so
it adds no event of its own (a run's event count, which the recorded
summaries hold, is the same with it); a stall is reported at most one
interval late.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Longest time (s) a live session may go without delivering to a receiver.
IDLE_LIMIT_S = 5.0


@dataclass
class _Clock:
    since: float  # last delivery, or the last moment the receiver was excused
    mark: Any = None  # (agent id, progress) at the last look
    stalled: bool = False  # this episode is already reported


@dataclass
class LivenessWatch:
    """Looks at every session's receivers when the sampler asks (:meth:`check`) and reports stalls."""

    run: Any
    scenario: Any
    limit: float = IDLE_LIMIT_S
    clocks: dict[tuple[str, str], _Clock] = field(default_factory=dict)
    stalls: dict[str, int] = field(default_factory=dict)

    def install(self) -> None:
        self.stalls = {s.name: 0 for s in self.scenario.sessions}
        self._faults = [(t, t + (f.duration or 0.0)) for f in self.scenario.faults
                        for t in f.times(self.scenario.duration)]
        self._channels = [ch for l in self.run.net.links.values() for ch in (l.ab, l.ba)]

    # what excuses a receiver -------------------------------------------------------
    def _network_excused(self, now: float) -> bool:
        if any(lo <= now <= hi + 1e-9 for lo, hi in self._faults):
            return True
        return any(not ch.up for ch in self._channels)

    def _sender_has_data(self, s: Any, now: float) -> bool:
        stop = s.stop if s.stop is not None else self.scenario.duration
        if not s.start <= now <= stop:
            return False
        sender = self.run.agents.get(f"{s.name}/{s.sender}")
        return sender is not None and not getattr(sender, "done", False) and self._running(s.sender, s.port)

    def _running(self, host: str, port: int) -> bool:
        return any(sl.running for sl in self.run.net.hosts[host]._udp.get(port, []))

    def _progress(self, s: Any, r: str) -> tuple[Any, bool]:
        """What the receiver has delivered so far, and whether it holds the whole stream."""
        agent = self.run.agents.get(f"{s.name}/{r}")
        rbuf = getattr(agent, "rbuf", None)
        if rbuf is not None:
            total = getattr(getattr(agent, "p", None), "total_packets", 0) or 0
            return (id(agent), rbuf.cum_ack), bool(total) and rbuf.cum_ack >= total
        return self.run.net.hosts[r].rx_mcast_bytes.get(s.port, 0), False

    # the check ------------------------------------------------------------------------
    def check(self, now: float) -> None:
        """Look at every receiver now (the run's sampler calls this each metrics interval)."""
        net_excused = self._network_excused(now)
        for s in self.scenario.sessions:
            has_data = self._sender_has_data(s, now)
            stop = s.stop if s.stop is not None else self.scenario.duration
            for r in s.receivers:
                key = (s.name, r)
                mark, complete = self._progress(s, r)
                c = self.clocks.get(key)
                if c is None:
                    c = self.clocks[key] = _Clock(now, mark)
                joined = s.join_at.get(r, s.start) <= now <= s.leave_at.get(r, stop)
                if (mark != c.mark or net_excused or not has_data or complete or not joined
                        or not self._running(r, s.port)):
                    c.since, c.mark, c.stalled = now, mark, False
                elif now - c.since > self.limit + 1e-9 and not c.stalled:
                    c.stalled = True
                    self.stalls[s.name] += 1
                    self.run.recorder.event(now, r, "stall",
                                            f"{s.name}: nothing delivered since {c.since:.2f} s")


def install(run: Any, scenario: Any, limit: float = IDLE_LIMIT_S) -> LivenessWatch:
    """Start the check on a built run (``netsim.run.build_run`` calls it)."""
    watch = LivenessWatch(run, scenario, limit)
    watch.install()
    return watch


def count_stalls(events: list[tuple[float, str, str, str]]) -> int:
    """The ``stall`` events among a recorder's events (what the benches count)."""
    return sum(1 for e in events if e[2] == "stall")
