"""The sans-I/O contract every p4mcc protocol endpoint follows.

A protocol core (TFMCC sender, WEBRC receiver, MTCP sender's agent, ...) never
touches a socket, a clock or a sleep.  Its driver -- the asyncio UDP driver in
Mininet hosts, a netsim host node, or a unit test with a fake clock -- calls:

* :meth:`Endpoint.start` once, with the current time;
* :meth:`Endpoint.receive_datagram` for every UDP payload that arrives;
* :meth:`Endpoint.handle_timer` when the time :meth:`Endpoint.get_timer`
  returned has come;

* :meth:`Endpoint.close` once when the agent stops (a process exit, a
  scenario's ``leave_at``/``stop``), so the core can say goodbye (TFMCC's
  leaving report) and leave its groups;

and after each call drains :meth:`Endpoint.datagrams_to_send` (UDP payloads with
their destination) and :meth:`Endpoint.next_event` (joins and leaves the driver
must perform on the host's kernel, metric records, delivered data).  Two
queries tell a driver how to set the host up: :attr:`Endpoint.groups` (every
multicast group the endpoint sends on, when it uses more than its session's
group) and :attr:`Endpoint.unicast_on_session_port`.  Both drivers (the
asyncio one in :mod:`hosts.driver`, the simulator's :mod:`netsim.host`) call
exactly these members and nothing else.

Times are floats in seconds on the driver's clock; only the wire carries
32-bit microsecond stamps (:func:`hosts.wire.ts_us`).  This shape follows
aioquic's ``QuicConnection``: the same core runs unchanged under every driver.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
import ipaddress
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from p4mcc.hosts import wire
from p4mcc.hosts.rules import hook

Address = tuple[str, int]
"""An (IPv4 address, UDP port) pair; multicast or unicast."""


def node_id(ip: str) -> int:
    """The 32-bit id a host uses on the wire: its IPv4 address as an integer."""
    return int(ipaddress.IPv4Address(ip))


def id_to_ip(nid: int) -> str:
    """Inverse of :func:`node_id`."""
    return str(ipaddress.IPv4Address(nid))


def check_params(obj: Any, positive: Sequence[str] = (), **at_least: float) -> None:
    """A parameter dataclass's ranges: each field named in ``positive`` is > 0 and each
    ``field=low`` is >= low; the first that is not raises ValueError naming it."""
    for name in positive:
        if getattr(obj, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(obj, name)}")
    for name, low in at_least.items():
        if getattr(obj, name) < low:
            raise ValueError(f"{name} must be >= {low}, got {getattr(obj, name)}")


@dataclass(frozen=True)
class Datagram:
    """A UDP payload to send to ``dest`` (a group address for multicast)."""

    dest: Address
    data: bytes


@dataclass(frozen=True)
class Event:
    """Base of everything a core tells its driver besides datagrams."""


@dataclass(frozen=True)
class JoinGroup(Event):
    """Join ``group`` on the host's interface (the kernel then sends IGMP)."""

    group: str


@dataclass(frozen=True)
class LeaveGroup(Event):
    """Leave ``group`` (the kernel sends an IGMP leave / v3 report)."""

    group: str


@dataclass(frozen=True)
class Metric(Event):
    """One metrics record, written by drivers as a JSON line.

    ``values`` holds numbers a run summarises (rate_bps, loss_event_rate,
    rtt_s, cwnd, ...) and ``state`` a short word (slowstart, steady, ...).
    """

    time: float
    role: str
    values: dict[str, float]
    state: str = ""


@dataclass(frozen=True)
class Delivered(Event):
    """Application data delivered in order by a reliable protocol (RLA, MTCP)."""

    seq: int
    size: int


METRIC_INTERVAL = 0.1
"""Seconds between an endpoint's metric records, the same for every protocol
(so their time series line up): at its first event (datagram or timer) at
least this long after the last record, :meth:`Endpoint.metrics` is asked."""


class _Timer:
    """A named timer in an endpoint's heap, ordered by (when, order): a plain
    slotted class with its one comparison written out, as heapq calls it for
    every timer a core sets (about one per packet a sender sends)."""

    __slots__ = ("when", "order", "name", "cancelled")

    def __init__(self, when: float, order: int, name: str) -> None:
        self.when = when
        self.order = order
        self.name = name
        self.cancelled = False

    def __lt__(self, other: "_Timer") -> bool:
        when = self.when
        return when < other.when or (when == other.when and self.order < other.order)

    def __repr__(self) -> str:
        return f"_Timer(when={self.when!r}, order={self.order!r}, name={self.name!r}, cancelled={self.cancelled!r})"


class Counters:
    """Event counters declared in one place: each name in ``COUNTERS`` is an int attribute.

    A class lists what it counts in its ``COUNTERS`` (subclasses add to their
    bases'); :meth:`zero_counters` sets every one to 0 and :meth:`counts`
    reads them all, for logs, tests and reports.  Code counts an event as
    ``self.timeouts += 1`` and reads it as ``sender.timeouts``.
    """

    COUNTERS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def counter_names(cls) -> tuple[str, ...]:
        """Every counter of this class, its bases' first, each once."""
        names: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            names.update(dict.fromkeys(vars(klass).get("COUNTERS", ())))
        return tuple(names)

    def zero_counters(self) -> None:
        for name in self.counter_names():
            setattr(self, name, 0)

    def counts(self) -> dict[str, int]:
        """Each counter's value, by name."""
        return {name: getattr(self, name) for name in self.counter_names()}


class Endpoint(Counters, ABC):
    """Base class giving protocol cores the driver-facing calls and plumbing.

    Subclasses implement :meth:`on_start`, :meth:`on_datagram` and
    :meth:`on_timer`, and use :meth:`send`, :meth:`set_timer`,
    :meth:`cancel_timer` and :meth:`emit` to act.  Named timers: setting a
    timer that exists replaces it, so a core never holds stale callbacks.
    """

    role = "endpoint"

    #: Every multicast group this endpoint sends on when it uses several
    #: (WEBRC's channels, base channel last); empty: only the session's group.
    #: Drivers use it to learn each group's source.
    groups: Sequence[str] = ()

    #: Whether a receiver's feedback socket binds the session port (an MTCP
    #: child's ACKs to its agent arrive there).  A core that never receives
    #: unicast says False and takes an ephemeral port, leaving the session
    #: port to a sender on the same host (loopback runs).
    unicast_on_session_port: bool = True

    #: ``malformed``: datagrams that failed to decode (counted, never raised);
    #: ``ignored``: well-formed datagrams of another session, or of a kind this
    #: core does not take.  Each core adds its own events (:class:`Counters`).
    COUNTERS = ("malformed", "ignored")

    #: The timer names :meth:`on_timer` handles.  A rule may not own one of
    #: them (hosts/rules.py): it wraps the hook the core calls instead.  A
    #: composed class lists its rules' timers here too.
    TIMERS: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self._out: deque[Datagram] = deque()
        self._events: deque[Event] = deque()
        self._heap: list[_Timer] = []
        self._timers: dict[str, _Timer] = {}
        self._order = 0
        self.now = 0.0
        self.zero_counters()
        self._last_metric = -math.inf

    # Driver-facing API ----------------------------------------------------
    def start(self, now: float) -> None:
        """Begin operation at time ``now``."""
        self.now = now
        self.on_start(now)

    def receive_datagram(self, data: bytes, src: Address, now: float) -> None:
        """Feed one received UDP payload from ``src``."""
        self.now = max(self.now, now)
        self.on_datagram(data, src, now)
        self._maybe_metric(now)

    def handle_timer(self, now: float) -> None:
        """Fire every timer due at or before ``now``."""
        if now > self.now:
            self.now = now
        heap, timers = self._heap, self._timers
        while heap and heap[0].when <= now:
            t = heapq.heappop(heap)
            if t.cancelled:
                continue
            name = t.name
            if timers.get(name) is t:
                del timers[name]
            self.on_timer(name, now)
        self._maybe_metric(now)

    def _maybe_metric(self, now: float) -> None:
        """The one metric path: a record every :data:`METRIC_INTERVAL` at most."""
        if now - self._last_metric < METRIC_INTERVAL:
            return
        record = self.metrics(now)
        if record is not None:
            self._last_metric = now
            self.metric(*record)

    def close(self, now: float) -> None:
        """Stop at ``now``: the core's own goodbye (a leave report) and its leaves.

        Called once by every driver before it drops the endpoint; the default
        only moves the clock.  Cores that announce a departure override it.
        """
        self.now = max(self.now, now)

    def get_timer(self) -> float | None:
        """When the driver must next call :meth:`handle_timer` (None: no timer)."""
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].when if self._heap else None

    def datagrams_to_send(self) -> list[Datagram]:
        """Take every datagram queued since the last call."""
        out = list(self._out)
        self._out.clear()
        return out

    def next_event(self) -> Event | None:
        """Take the oldest pending event, or None."""
        return self._events.popleft() if self._events else None

    # Core-facing helpers --------------------------------------------------
    @hook
    def send(self, dest: Address, data: bytes) -> None:
        self._out.append(Datagram(dest, data))

    def emit(self, event: Event) -> None:
        self._events.append(event)

    def set_timer(self, name: str, when: float) -> None:
        timers = self._timers
        old = timers.pop(name, None)  # cancel_timer(name), written out: the per-packet path
        if old is not None:
            old.cancelled = True
        self._order = order = self._order + 1
        t = _Timer(when, order, name)
        timers[name] = t
        heapq.heappush(self._heap, t)

    def cancel_timer(self, name: str) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancelled = True

    def timer_at(self, name: str) -> float | None:
        t = self._timers.get(name)
        return t.when if t else None

    # Subclass hooks ---------------------------------------------------------
    def on_start(self, now: float) -> None:  # pragma: no cover - default no-op
        pass

    @abstractmethod
    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        """Handle one received UDP payload (every core must)."""

    def on_timer(self, name: str, now: float) -> None:  # pragma: no cover - default
        pass

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        """This endpoint's periodic record: (values, state), or None for none now.

        Values a run summarises: ``rate_bps``, ``rtt_s``, ``loss_event_rate``
        (or ``loss_rate``), ``cwnd``...  One-off records (a tree repair, the
        end of a transfer) go through :meth:`metric` directly.
        """
        return None

    @hook
    def decode_session(self, data: bytes, session_id: int, *kinds: type) -> Any:
        """The message in ``data`` if it belongs to ``session_id`` (and is one of ``kinds``), else None.

        Malformed datagrams are counted in :attr:`malformed` (never raised):
        a core must survive whatever arrives on its port.  With ``kinds``,
        messages of another session or kind are counted in :attr:`ignored`.
        """
        try:
            msg = wire.decode(data)
        except wire.WireError:
            self.malformed += 1
            return None
        if not kinds:
            return msg if msg.session_id == session_id else None
        if not isinstance(msg, kinds) or msg.session_id != session_id:
            self.ignored += 1
            return None
        return msg

    def metric(self, values: dict[str, Any], state: str = "") -> None:
        self.emit(Metric(self.now, self.role, {k: float(v) for k, v in values.items()}, state))
