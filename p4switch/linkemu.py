"""Per-port link emulation: rate, propagation delay, drop-tail queue, loss.

The machine the switch runs on may lack ``netem``, so the switch emulates its
links itself.  Each port has two independent directions:

* **egress** -- the traffic-manager queue between the ingress and egress
  pipelines (as in BMv2's ``simple_switch``), drained by a token bucket at the
  port's rate, followed by the wire: propagation delay and Bernoulli loss;
* **ingress** -- the same stages applied to packets arriving on the port
  before the ingress pipeline sees them (an emulated incoming link).

The components here are pure: they take ``now`` (seconds on the caller's
clock) as an argument and never sleep, read a clock or touch a socket, so the
unit tests drive them with a fake clock.  :class:`LinkScheduler` is the thin
real-time driver the switch process runs.

Queue metadata follow BMv2's ``simple_switch``: ``enq_qdepth`` is the number
of packets already queued when the packet is enqueued, ``deq_qdepth`` the
number left behind when it is dequeued, ``deq_timedelta`` the microseconds it
spent queued and ``enq_timestamp`` the enqueue time in microseconds since the
switch started.
"""

from __future__ import annotations

import heapq
import logging
import os
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, Mapping, Protocol, TypeVar

from p4mcc.p4switch import units

T = TypeVar("T")
LOG = logging.getLogger("p4mcc.p4switch.links")

DEFAULT_QUEUE_PACKETS = 64
"""BMv2's default egress queue depth, in packets."""


class LinkConfigError(ValueError):
    """A link parameter is out of range or cannot be parsed."""


@dataclass(frozen=True)
class LinkConfig:
    """One direction of one port's emulated link.

    ``rate_bps`` None means line rate (no shaping).  ``burst_bytes`` is the
    token bucket's depth; the default (one maximum Ethernet frame) makes the
    shaper behave like a serialising link.  ``queue_packets`` and
    ``queue_bytes`` bound the drop-tail queue (None: unbounded).
    """

    rate_bps: float | None = None
    delay_s: float = 0.0
    queue_packets: int | None = DEFAULT_QUEUE_PACKETS
    queue_bytes: int | None = None
    loss: float = 0.0
    burst_bytes: int = 1514

    def __post_init__(self) -> None:
        if self.rate_bps is not None and not self.rate_bps > 0:
            raise LinkConfigError(f"rate must be > 0 bit/s, got {self.rate_bps}")
        if not self.delay_s >= 0:
            raise LinkConfigError(f"delay must be >= 0 s, got {self.delay_s}")
        if self.queue_packets is not None and self.queue_packets < 1:
            raise LinkConfigError(f"queue limit must be >= 1 packet, got {self.queue_packets}")
        if self.queue_bytes is not None and self.queue_bytes < 1:
            raise LinkConfigError(f"queue limit must be >= 1 byte, got {self.queue_bytes}")
        if not 0.0 <= self.loss <= 1.0:
            raise LinkConfigError(f"loss must be within [0, 1], got {self.loss}")
        if self.burst_bytes < 1:
            raise LinkConfigError(f"burst must be >= 1 byte, got {self.burst_bytes}")

    @property
    def is_transparent(self) -> bool:
        """True when this direction changes nothing (no shaping, delay or loss)."""
        return self.rate_bps is None and self.delay_s == 0 and self.loss == 0


@dataclass(frozen=True)
class QueueMeta:
    """The v1model queueing metadata of one dequeued packet (BMv2 semantics)."""

    enq_timestamp_us: int
    enq_qdepth: int
    deq_qdepth: int
    deq_timedelta_us: int


@dataclass
class _Queued(Generic[T]):
    item: T
    size: int
    enq_time: float
    enq_qdepth: int


@dataclass(frozen=True)
class QueueStats:
    """Counters of one queue: what came in, left, and was dropped and why."""

    enqueued: int = 0
    dequeued: int = 0
    dropped_packets_limit: int = 0
    dropped_bytes_limit: int = 0


class ShapedQueue(Generic[T]):
    """A drop-tail FIFO drained by a token bucket.

    Tokens are bytes and accrue at ``rate_bps / 8`` per second up to
    ``burst_bytes``.  The head packet leaves when the bucket holds its size; a
    packet larger than the bucket leaves when the bucket is full and takes it
    negative, so jumbo frames still pass at the configured average rate.
    """

    def __init__(self, config: LinkConfig, epoch: float = 0.0) -> None:
        self.config = config
        self.epoch = epoch
        self._q: deque[_Queued[T]] = deque()
        self._bytes = 0
        self._tokens = float(config.burst_bytes)
        self._t_tokens = epoch
        self._enq = self._deq = self._drop_p = self._drop_b = 0

    def __len__(self) -> int:
        return len(self._q)

    @property
    def bytes_queued(self) -> int:
        return self._bytes

    @property
    def stats(self) -> QueueStats:
        return QueueStats(self._enq, self._deq, self._drop_p, self._drop_b)

    def enqueue(self, item: T, size: int, now: float) -> bool:
        """Queue ``item`` of ``size`` bytes; False when the drop-tail limit refuses it."""
        cfg = self.config
        if cfg.queue_packets is not None and len(self._q) >= cfg.queue_packets:
            self._drop_p += 1
            return False
        if cfg.queue_bytes is not None and self._bytes + size > cfg.queue_bytes:
            self._drop_b += 1
            return False
        self._q.append(_Queued(item, size, now, len(self._q)))
        self._bytes += size
        self._enq += 1
        return True

    def reconfigure(self, config: LinkConfig, now: float) -> None:
        """Take ``config`` from ``now`` on, as ``tc qdisc change`` does.

        The bucket is filled at the old rate up to ``now`` and capped by the
        new burst; queued packets stay (a smaller limit refuses arrivals
        until the queue is below it), and each leaves at the new rate.
        """
        self._refill(now)
        if self.config.rate_bps is None:
            self._t_tokens = max(self._t_tokens, now)
        self.config = config
        self._tokens = min(self._tokens, float(config.burst_bytes))

    def _refill(self, now: float) -> None:
        rate = self.config.rate_bps
        if rate is None:
            return
        if now > self._t_tokens:
            self._tokens = min(
                float(self.config.burst_bytes),
                self._tokens + (now - self._t_tokens) * rate / 8.0,
            )
            self._t_tokens = now

    def _replay(self, limit: int | None = None) -> tuple[list[float], float, float]:
        """Departure instants of the queued packets, from the bucket's own clock,
        plus the bucket's (time, tokens) after the last of them.

        Pure: it never moves the bucket, so calling it from another thread or
        late (when departures are overdue) cannot lose tokens to the burst cap.
        """
        bps = (self.config.rate_bps or 0.0) / 8.0
        burst = float(self.config.burst_bytes)
        t, tok = self._t_tokens, self._tokens
        out: list[float] = []
        for i, q in enumerate(self._q):
            if limit is not None and i >= limit:
                break
            if q.enq_time > t:
                tok = min(burst, tok + (q.enq_time - t) * bps)
                t = q.enq_time
            need = min(q.size, self.config.burst_bytes)
            if tok < need:
                t += (need - tok) / bps
                tok = float(need)
            tok -= q.size
            out.append(t)
        return out, t, tok

    def next_departure(self, now: float) -> float | None:
        """When the head packet may leave (<= now: it may leave now); None if empty."""
        if not self._q:
            return None
        if self.config.rate_bps is None:
            return now
        return self._replay(limit=1)[0][0]

    def predict(self, now: float, size: int | None = None) -> tuple[int, float]:
        """(packets queued, seconds a packet of ``size`` bytes arriving now would wait).

        A FIFO drained by a token bucket is deterministic: the wait of a new
        packet behind the current backlog is known at enqueue time.  The
        switch uses this to fill ``deq_timedelta`` when its interpreter runs
        the egress pipeline before the packet actually queues.  Without
        ``size`` the wait is until the backlog has left.
        """
        if self.config.rate_bps is None:
            return len(self._q), 0.0
        _, t, tok = self._replay()
        if now > t:
            tok = min(float(self.config.burst_bytes), tok + (now - t) * self.config.rate_bps / 8.0)
            t = now
        if size is not None:
            need = min(size, self.config.burst_bytes)
            if tok < need:
                t += (need - tok) * 8.0 / self.config.rate_bps
        return len(self._q), max(0.0, t - now)

    def dequeue(self, now: float) -> list[tuple[T, QueueMeta]]:
        """Every packet allowed to leave by ``now``, in order, with its metadata.

        Departures are stamped at the instant the bucket allowed them (not
        ``now``), so a late caller does not distort the emulated rate.
        """
        out: list[tuple[T, QueueMeta]] = []
        rate = self.config.rate_bps
        while self._q:
            head = self._q[0]
            if rate is None:
                t_dep = head.enq_time  # line rate: it left when it came
            else:
                need = min(head.size, self.config.burst_bytes)
                # Advance the bucket clock to the packet's own departure instant.
                self._refill(max(self._t_tokens, head.enq_time))
                if self._tokens < need:
                    t_dep = self._t_tokens + (need - self._tokens) * 8.0 / rate
                    if t_dep > now + 1e-12:
                        break
                    self._refill(t_dep)
                    self._tokens = max(self._tokens, need)  # rounding guard
                else:
                    t_dep = max(self._t_tokens, head.enq_time)
                self._tokens -= head.size
            self._q.popleft()
            self._bytes -= head.size
            self._deq += 1
            out.append(
                (
                    head.item,
                    QueueMeta(
                        enq_timestamp_us=int((head.enq_time - self.epoch) * 1e6),
                        enq_qdepth=head.enq_qdepth,
                        deq_qdepth=len(self._q),
                        deq_timedelta_us=max(0, int(round((t_dep - head.enq_time) * 1e6))),
                    ),
                )
            )
        if rate is not None:
            self._refill(now)
        return out


class Wire(Generic[T]):
    """Propagation delay with Bernoulli loss: what a cable does after the queue.

    ``send`` draws the loss; a surviving packet becomes deliverable at
    ``now + delay_s``.  Delivery order is the send order (a constant delay
    never reorders).
    """

    def __init__(self, config: LinkConfig, rng: random.Random | None = None) -> None:
        self.config = config
        self.rng = rng or random.Random()
        self._inflight: deque[tuple[float, T]] = deque()
        self.sent = 0
        self.lost = 0

    def __len__(self) -> int:
        return len(self._inflight)

    def send(self, item: T, now: float) -> bool:
        """Put ``item`` on the wire; False when the loss draw drops it.

        It arrives ``delay_s`` later, or with the packet ahead of it if a
        shorter delay set since (:meth:`reconfigure`) would let it overtake:
        a cable delivers in the order it was given.
        """
        self.sent += 1
        if self.config.loss > 0 and self.rng.random() < self.config.loss:
            self.lost += 1
            return False
        at = now + self.config.delay_s
        if self._inflight and self._inflight[-1][0] > at:
            at = self._inflight[-1][0]
        self._inflight.append((at, item))
        return True

    def reconfigure(self, config: LinkConfig) -> None:
        """Delay and loss of ``config`` for every packet sent from now on;
        those already on the wire keep their arrival instants."""
        self.config = config

    def next_arrival(self) -> float | None:
        return self._inflight[0][0] if self._inflight else None

    def receive(self, now: float) -> list[T]:
        """Everything whose propagation delay has elapsed by ``now``."""
        return [item for item, _t in self.receive_timed(now)]

    def receive_timed(self, now: float) -> list[tuple[T, float]]:
        """Like :meth:`receive`, with each item's own arrival instant.

        A caller that runs late (a busy CPU) passes the instant on instead
        of ``now``, so the next stage does not add the lateness again.
        """
        out: list[tuple[T, float]] = []
        while self._inflight and self._inflight[0][0] <= now + 1e-12:
            t, item = self._inflight.popleft()
            out.append((item, t))
        return out


class Link(Generic[T]):
    """One direction of a link: :class:`ShapedQueue` then :class:`Wire`.

    Used where no pipeline sits between queue and wire (the ingress
    direction, tests).  The egress direction of the switch uses the two
    stages separately because the egress pipeline runs between them.
    """

    def __init__(self, config: LinkConfig, epoch: float = 0.0, rng: random.Random | None = None) -> None:
        self.queue: ShapedQueue[T] = ShapedQueue(config, epoch)
        self.wire: Wire[T] = Wire(config, rng)

    def offer(self, item: T, size: int, now: float) -> bool:
        return self.queue.enqueue(item, size, now)

    @property
    def config(self) -> LinkConfig:
        return self.queue.config

    def reconfigure(self, config: LinkConfig, now: float) -> None:
        """``config`` from ``now`` on, for the queue and the wire alike."""
        self.queue.reconfigure(config, now)
        self.wire.reconfigure(config)

    def next_event(self, now: float) -> float | None:
        times = [t for t in (self.queue.next_departure(now), self.wire.next_arrival()) if t is not None]
        return min(times) if times else None

    def advance(self, now: float) -> list[T]:
        return [item for item, _t in self.advance_timed(now)]

    def advance_timed(self, now: float) -> list[tuple[T, float]]:
        """What leaves the link by ``now``, each with the instant it arrived at the far end."""
        for item, meta in self.queue.dequeue(now):
            self.wire.send(item, departure_time(meta, self.queue.epoch))
        return self.wire.receive_timed(now)


def departure_time(meta: QueueMeta, epoch: float) -> float:
    """The departure instant a :class:`QueueMeta` records, on the caller's clock."""
    return epoch + (meta.enq_timestamp_us + meta.deq_timedelta_us) / 1e6


# ---------------------------------------------------------------------------
# Configuration parsing: --port-config FILE and per-port flags.
# ---------------------------------------------------------------------------

def parse_rate(text: str | float | int) -> float:
    """``"10Mbps"``, ``"1.5m"``, ``"2e6"`` or a number -> bit/s (read by :mod:`p4switch.units`)."""
    try:
        return units.parse_rate(text)
    except ValueError as e:
        raise _config_error(e, "rate", text) from None


def parse_time(text: str | float | int) -> float:
    """``"5ms"``, ``"200us"``, ``"0.01"`` or a number (seconds) -> seconds (read by :mod:`p4switch.units`)."""
    try:
        return units.parse_time(text, what="delay")
    except ValueError as e:
        raise _config_error(e, "delay", text) from None


def _config_error(e: ValueError, what: str, text: str | float | int) -> LinkConfigError:
    """The units module's complaint, naming the link parameter it was about."""
    msg = str(e)
    return LinkConfigError(f"cannot read {what} {text!r}" if msg.startswith("cannot read") else msg)


_KEYS = {"rate": "rate_bps", "delay": "delay_s", "queue": "queue_packets", "queue_packets": "queue_packets",
         "queue_bytes": "queue_bytes", "loss": "loss", "burst": "burst_bytes", "burst_bytes": "burst_bytes"}


def link_config_from_dict(d: dict[str, Any], base: LinkConfig | None = None) -> LinkConfig:
    """Build a :class:`LinkConfig` from ``{"rate": "10Mbps", "delay": "5ms", ...}``.

    Keys: rate, delay, queue (packets), queue_bytes, loss (fraction or "1%"),
    burst (bytes).  A None or "none" value removes a limit.
    """
    kw: dict[str, Any] = {}
    for key, value in d.items():
        if key not in _KEYS:
            raise LinkConfigError(f"unknown link parameter {key!r} (known: {', '.join(sorted(_KEYS))})")
        field_name = _KEYS[key]
        none = value is None or (isinstance(value, str) and value.strip().lower() in ("none", "unlimited"))
        if field_name == "rate_bps":
            kw[field_name] = None if none else parse_rate(value)
        elif field_name == "delay_s":
            kw[field_name] = 0.0 if none else parse_time(value)
        elif field_name == "loss":
            if isinstance(value, str) and value.strip().endswith("%"):
                kw[field_name] = float(value.strip()[:-1]) / 100.0
            else:
                kw[field_name] = 0.0 if none else float(value)
        else:
            if none:
                kw[field_name] = None
            else:
                try:
                    kw[field_name] = int(value)
                except (TypeError, ValueError):
                    raise LinkConfigError(f"{key} must be an integer, got {value!r}") from None
    return replace(base or LinkConfig(), **kw)


@dataclass(frozen=True)
class PortLinks:
    """Both directions of one port's emulated link."""

    egress: LinkConfig = field(default_factory=LinkConfig)
    ingress: LinkConfig = field(default_factory=lambda: LinkConfig(queue_packets=None))


#: The two directions of a port's link, as ``--link`` and link changes name them (or ``both``).
DIRECTIONS = ("egress", "ingress")


class DirectionLink(Protocol):
    """One direction's emulated link, as :func:`change_port_links` changes it."""

    @property
    def config(self) -> LinkConfig: ...

    def reconfigure(self, config: LinkConfig, now: float) -> None: ...


def change_port_links(links: Mapping[str, DirectionLink | None], start: PortLinks, direction: str,
                      settings: dict[str, Any] | None, now: float,
                      add: Callable[[str, LinkConfig], None], wake: Callable[[str, float], None]) -> None:
    """Change the directions of one port's running link that ``direction`` names, from ``now`` on.

    ``links`` holds each direction's link by name, None where that direction
    started transparent and so has none yet: ``add(direction, config)`` builds
    it.  ``settings`` (``--link`` keys) change what they name and keep the rest
    of the current values; None puts a direction back to ``start``.  Each
    changed direction is woken (``wake(direction, now)``), as its next
    departure may have moved.  The switch and the link process beside BMv2
    both change their links here, so a change means the same on either target.
    """
    if direction not in (*DIRECTIONS, "both"):
        raise LinkConfigError(f"direction must be egress, ingress or both, got {direction!r}")
    for what in DIRECTIONS:
        if direction not in (what, "both"):
            continue
        initial: LinkConfig = getattr(start, what)
        link = links.get(what)
        new = initial if settings is None else \
            link_config_from_dict(settings, initial if link is None else link.config)
        if link is None:
            add(what, new)
        else:
            link.reconfigure(new, now)
        wake(what, now)


def parse_port_flag(text: str) -> tuple[int, str, dict[str, str]]:
    """Parse a per-port flag value ``PORT[:DIR]:key=value,key=value``.

    DIR is ``egress`` (default), ``ingress`` or ``both``.  Example:
    ``2:egress:rate=10Mbps,delay=5ms,queue=100,loss=0.01``.
    """
    parts = text.split(":")
    if len(parts) == 2:
        port_s, direction, kv = parts[0], "egress", parts[1]
    elif len(parts) == 3:
        port_s, direction, kv = parts
    else:
        raise LinkConfigError(f"expected PORT[:DIR]:key=value,... got {text!r}")
    try:
        port = int(port_s)
    except ValueError:
        raise LinkConfigError(f"port must be an integer in {text!r}") from None
    if direction not in ("egress", "ingress", "both"):
        raise LinkConfigError(f"direction must be egress, ingress or both, got {direction!r}")
    items: dict[str, str] = {}
    for pair in kv.split(","):
        if not pair.strip():
            continue
        if "=" not in pair:
            raise LinkConfigError(f"expected key=value, got {pair!r} in {text!r}")
        k, v = pair.split("=", 1)
        items[k.strip()] = v.strip()
    return port, direction, items


@dataclass(frozen=True)
class PortConfig:
    """Link settings of every port: explicit per-port entries over a default."""

    default: PortLinks = field(default_factory=PortLinks)
    ports: dict[int, PortLinks] = field(default_factory=dict)

    def for_port(self, port: int) -> PortLinks:
        return self.ports.get(port, self.default)

    def with_settings(self, port: int, direction: str, settings: dict[str, Any]) -> "PortConfig":
        cur = self.ports.get(port, self.default)
        eg, ig = cur.egress, cur.ingress
        if direction in ("egress", "both"):
            eg = link_config_from_dict(settings, eg)
        if direction in ("ingress", "both"):
            ig = link_config_from_dict(settings, ig)
        return PortConfig(self.default, {**self.ports, port: PortLinks(eg, ig)})

    def with_flag(self, text: str) -> "PortConfig":
        """Apply one ``PORT[:DIR]:key=value,...`` flag (see :func:`parse_port_flag`)."""
        port, direction, settings = parse_port_flag(text)
        return self.with_settings(port, direction, settings)


def load_port_config(data: Any) -> PortConfig:
    """Read a port-config document (parsed YAML/JSON).

    Shape::

        default: {egress: {queue: 64}}      # optional, for ports not listed
        ports:
          1: {egress: {rate: 10Mbps, delay: 5ms, queue: 100}, ingress: {loss: 0.01}}
          2: {rate: 1Mbps}                  # shorthand: egress only

    A listed port starts from the default and overrides what it names.
    """
    if not isinstance(data, dict):
        raise LinkConfigError("port config must be a mapping with a 'ports' key")
    unknown = set(data) - {"ports", "default"}
    if unknown:
        raise LinkConfigError(f"unknown top-level key(s) in port config: {', '.join(sorted(map(str, unknown)))}")
    cfg = PortConfig()
    cfg = _apply_spec(cfg, None, data.get("default") or {}, "default")
    ports = data.get("ports") or {}
    if not isinstance(ports, dict):
        raise LinkConfigError("'ports' must map port numbers to settings")
    for key, spec in ports.items():
        try:
            port = int(key)
        except (TypeError, ValueError):
            raise LinkConfigError(f"port {key!r} is not an integer") from None
        cfg = _apply_spec(cfg, port, spec, f"port {port}")
    return cfg


def _apply_spec(cfg: PortConfig, port: int | None, spec: Any, where: str) -> PortConfig:
    if not isinstance(spec, dict):
        raise LinkConfigError(f"{where}: settings must be a mapping")
    if set(spec) & {"egress", "ingress"}:
        extra = set(spec) - {"egress", "ingress"}
        if extra:
            raise LinkConfigError(f"{where}: mix of direction keys and {', '.join(sorted(extra))}")
        pieces = [(d, spec[d] or {}) for d in ("egress", "ingress") if d in spec]
    else:
        pieces = [("egress", spec)]
    for direction, settings in pieces:
        if not isinstance(settings, dict):
            raise LinkConfigError(f"{where}: {direction} settings must be a mapping")
        try:
            if port is None:
                d = cfg.default
                eg = link_config_from_dict(settings, d.egress) if direction == "egress" else d.egress
                ig = link_config_from_dict(settings, d.ingress) if direction == "ingress" else d.ingress
                cfg = PortConfig(PortLinks(eg, ig), cfg.ports)
            else:
                cfg = cfg.with_settings(port, direction, settings)
        except LinkConfigError as e:
            raise LinkConfigError(f"{where}: {e}") from None
    return cfg


# ---------------------------------------------------------------------------
# Real-time driver.
# ---------------------------------------------------------------------------

RT_PRIORITY_ENV = "P4MCC_RT_PRIORITY"
#: SCHED_FIFO priority of the threads that time links (1-99; 0 turns it off).
#: Low on purpose: above every ordinary process, below the kernel's own
#: real-time threads.
DEFAULT_RT_PRIORITY = 10


def realtime_thread() -> str | None:
    """Run the calling thread under ``SCHED_FIFO`` so a busy CPU cannot delay it.

    A link's delay is a timer in this process: under the default scheduler
    a thread that wakes on time may still wait a few milliseconds for a CPU
    that ordinary processes hold (measured: 2 ms more ping RTT over a 20 ms
    path with both cores busy).  A real-time thread preempts them.  These
    threads sleep between frames, so they take only the CPU the traffic
    needs; the kernel's real-time throttling (95 % by default) bounds the
    rest.  Returns None when granted, otherwise why not (no privilege, or
    ``P4MCC_RT_PRIORITY=0``).
    """
    try:
        prio = int(os.environ.get(RT_PRIORITY_ENV, DEFAULT_RT_PRIORITY))
    except ValueError:
        return f"{RT_PRIORITY_ENV} is not an integer"
    if prio <= 0:
        return f"turned off ({RT_PRIORITY_ENV}={prio})"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(min(prio, 99)))
    except (OSError, AttributeError) as e:  # no CAP_SYS_NICE, or not Linux
        return str(e) or type(e).__name__
    return None


#: Lateness of a departure beyond which it counts as late: 10 % of the
#: link's delay, never below this floor (a frame's trip through the
#: interpreter alone takes a few hundred microseconds).
LATE_FLOOR_S = 0.001
LATE_FRACTION = 0.10
#: A report period is flagged when more than this share of its departures,
#: and at least LATE_MIN of them, were late (one late frame is not a drift).
LATE_SHARE = 0.05
LATE_MIN = 5


@dataclass
class _Lateness:
    tolerance_s: float
    count: int = 0
    late: int = 0
    worst_s: float = 0.0
    total_s: float = 0.0


class TimingWatch:
    """How late the link emulation puts frames on the wire, per link direction.

    Every departure is stamped with the instant the emulated link releases
    it (queue, rate and delay); the switch notes how much later it really
    sent it.  ``report(now)`` returns one line per link whose departures in
    the last period were late beyond tolerance (more than :data:`LATE_SHARE`
    of them, and at least :data:`LATE_MIN`, later than max(:data:`LATE_FLOOR_S`,
    10 % of the link's delay)):
    the warnings a run collects (``link_timing`` events).
    """

    def __init__(self, period_s: float = 5.0) -> None:
        self.period_s = period_s
        self._cur: dict[str, _Lateness] = {}
        self.total: dict[str, _Lateness] = {}
        self._next: float | None = None

    def add_link(self, name: str, delay_s: float) -> None:
        tol = max(LATE_FLOOR_S, LATE_FRACTION * delay_s)
        self._cur[name] = _Lateness(tol)
        self.total[name] = _Lateness(tol)

    def note(self, name: str, lateness_s: float) -> None:
        for acc in (self._cur.get(name), self.total.get(name)):
            if acc is None:
                continue
            acc.count += 1
            acc.total_s += lateness_s
            acc.worst_s = max(acc.worst_s, lateness_s)
            if lateness_s > acc.tolerance_s:
                acc.late += 1

    def report(self, now: float) -> list[str]:
        """Warning lines for the period that ended (empty when it has not ended or all is well)."""
        if self._next is None:
            self._next = now + self.period_s
        if now < self._next:
            return []
        self._next = now + self.period_s
        lines = [self.describe(name, acc) for name, acc in sorted(self._cur.items())
                 if acc.late >= LATE_MIN and acc.late > LATE_SHARE * acc.count]
        for name, acc in self._cur.items():
            self._cur[name] = _Lateness(acc.tolerance_s)
        return lines

    @staticmethod
    def describe(name: str, acc: _Lateness) -> str:
        return (f"link {name}: {acc.late} of {acc.count} frames later than {acc.tolerance_s * 1e3:.2f} ms "
                f"(mean {acc.total_s / max(1, acc.count) * 1e3:.3f} ms, worst {acc.worst_s * 1e3:.2f} ms)")



class LinkScheduler:
    """Runs timed callbacks on a monotonic clock in one thread.

    The switch registers a callback per port direction; each callback returns
    the next time it wants to run (or None).  ``wake()`` reschedules a
    callback immediately, e.g. after a packet was enqueued.  Callbacks run in
    the scheduler thread holding :attr:`lock`, so the emulation components
    need no other lock; work that takes other locks (running the pipeline on
    frames an ingress link released) goes in ``after``, which runs outside
    it, so the lock order stays device lock -> scheduler lock everywhere.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 after: Callable[[], None] | None = None) -> None:
        self.clock = clock
        self.after = after  # run by the thread after each round, outside the lock
        self.lock = threading.RLock()
        self._cv = threading.Condition(self.lock)
        self._heap: list[tuple[float, int, str]] = []
        self._callbacks: dict[str, Callable[[float], float | None]] = {}
        self._due: dict[str, float] = {}
        self._seq = 0
        self._stop = False
        self._thread: threading.Thread | None = None
        self.errors = 0
        #: Why the thread runs without real-time priority (None: it has it).
        self.realtime_error: str | None = None

    def register(self, name: str, callback: Callable[[float], float | None]) -> None:
        with self.lock:
            self._callbacks[name] = callback

    def wake(self, name: str, when: float | None = None) -> None:
        """Run ``name`` at ``when`` (default: now) unless it is due earlier."""
        with self.lock:
            self._schedule_locked(name, self.clock() if when is None else when)

    def _schedule_locked(self, name: str, when: float) -> None:
        due = self._due.get(name)
        if due is not None and due <= when:
            return
        self._due[name] = when
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, name))
        self._cv.notify()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="p4switch-links", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self.lock:
            self._stop = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def run_due(self, now: float) -> float | None:
        """Run every callback due by ``now``; return the next due time (None: idle).

        The scheduler thread calls this; tests call it with a fake clock.
        """
        with self.lock:
            while self._heap:
                when, _, name = self._heap[0]
                if self._due.get(name) != when:
                    heapq.heappop(self._heap)  # superseded entry
                    continue
                if when > now:
                    return when
                heapq.heappop(self._heap)
                del self._due[name]
                try:
                    nxt = self._callbacks[name](max(now, when))
                except Exception:  # a failing port must not stop every other port's link
                    self.errors += 1
                    LOG.exception("link emulation callback %s failed", name)
                    nxt = None
                if nxt is not None:
                    self._schedule_locked(name, nxt)
            return None

    def _peek(self) -> float | None:
        while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def _run(self) -> None:
        self.realtime_error = realtime_thread()
        if self.realtime_error is not None:
            LOG.warning("link timing: the link scheduler runs without real-time priority (%s); "
                        "link delays may stretch while the CPU is busy", self.realtime_error)
        while True:
            with self.lock:
                if self._stop:
                    return
                self.run_due(self.clock())
            if self.after is not None:
                self.after()
            with self.lock:
                if self._stop:
                    return
                nxt = self._peek()
                if nxt is None:
                    self._cv.wait()
                else:
                    delay = nxt - self.clock()
                    if delay > 0:
                        self._cv.wait(timeout=delay)
