"""Links: rate, propagation delay, a drop-tail queue and a loss process.

A :class:`Link` is full duplex: two independent :class:`Channel`s, one per
direction, each with its own queue, loss process and counters.

A channel is exact for a FIFO drop-tail queue without scheduling one event
per queue operation: since service is in order and each packet's
serialization time is known (bits / rate), a packet's departure time is fixed
the moment it is accepted (``max(now, previous departure) + size*8/rate``), so
the channel schedules one arrival event per packet at ``departure + delay``.
The queue occupancy at any instant is the number of accepted packets that
have not finished serializing, minus the one on the wire.

Queue limits count waiting packets (and/or bytes), not the one being
serialized, like a Linux qdisc ``limit``.  A packet lost by the loss process
still occupies the queue and the wire (loss happens on the wire); it simply
never arrives.
"""

from __future__ import annotations

import random
from collections import deque
from heapq import heappush
from dataclasses import dataclass
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Protocol

from p4mcc.scenario.model import GilbertElliott

if TYPE_CHECKING:
    from p4mcc.netsim.engine import Simulator


class Receiver(Protocol):
    """Anything a channel can deliver a frame to (host or switch node)."""

    def receive(self, port: int, frame: bytes) -> None: ...


class LossModel(ABC):
    """Per-packet loss decision; subclasses keep their own random stream."""

    @abstractmethod
    def lost(self) -> bool:
        """Whether the next packet is lost."""


class NoLoss(LossModel):
    def lost(self) -> bool:
        return False


class Bernoulli(LossModel):
    """Each packet independently lost with probability ``p``."""

    def __init__(self, p: float, rng: random.Random):
        self.p = p
        self._random = rng.random

    def lost(self) -> bool:
        return self._random() < self.p


class GilbertElliottLoss(LossModel):
    """Two-state Markov (Gilbert-Elliott) loss; starts in the good state.

    Per packet: first move (good->bad with ``p_gb``, bad->good with ``p_bg``),
    then lose with the new state's loss probability.  Mean burst length in
    the bad state is ``1/p_bg`` packets.
    """

    def __init__(self, model: GilbertElliott, rng: random.Random):
        self.m = model
        self.bad = False
        self._random = rng.random

    def lost(self) -> bool:
        r = self._random
        if self.bad:
            if r() < self.m.p_bg:
                self.bad = False
        elif r() < self.m.p_gb:
            self.bad = True
        p = self.m.loss_bad if self.bad else self.m.loss_good
        return p > 0 and r() < p


def make_loss(spec: float | GilbertElliott, rng: random.Random) -> LossModel:
    if isinstance(spec, GilbertElliott):
        return GilbertElliottLoss(spec, rng)
    return Bernoulli(spec, rng) if spec > 0 else NoLoss()


@dataclass
class ChannelCounters:
    """What went through one direction of a link."""

    enqueued_packets: int = 0
    enqueued_bytes: int = 0
    queue_drops: int = 0
    queue_drop_bytes: int = 0
    loss_drops: int = 0
    delivered_packets: int = 0
    delivered_bytes: int = 0
    max_queue_packets: int = 0
    max_queue_bytes: int = 0
    down_drops: int = 0


class Channel:
    """One direction of a link, delivering to ``(dst, dst_port)``."""

    def __init__(self, sim: "Simulator", name: str, dst: Receiver, dst_port: int, *,
                 rate_bps: float, delay_s: float, loss: LossModel,
                 queue_packets: int | None, queue_bytes: int | None) -> None:
        if rate_bps <= 0:
            raise ValueError(f"{name}: rate must be positive")
        if delay_s < 0:  # send schedules arrivals straight into the heap, past Simulator.at's check
            raise ValueError(f"{name}: delay must be non-negative")
        self.sim = sim
        self.name = name
        self.dst = dst
        self.dst_port = dst_port
        self.rate_bps = rate_bps
        self.delay_s = delay_s
        self.loss = loss
        self._lossy = not isinstance(loss, NoLoss)
        self.queue_packets = queue_packets
        self.queue_bytes = queue_bytes
        self._sec_per_byte = 8.0 / rate_bps
        #: (departure time, size) of accepted packets not yet fully serialized.
        self._inflight: deque[tuple[float, int]] = deque()
        self._inflight_bytes = 0
        self.counters = ChannelCounters()
        #: When not None, (time, waiting packets, waiting bytes) at every enqueue/drop.
        self.queue_trace: list[tuple[float, int, int]] | None = None
        #: Optional taps called as tap(time, channel, frame, event) with event in
        #: {"enqueue", "drop", "lost"}; for tests and pcaps.
        self.taps: list = []

    #: Upper bound of a uniform random wait before a frame may start on the
    #: wire: the sending host's processing time (``Scenario.tcp_jitter``,
    #: set on a host's interface only); 0: none.  Frames keep their order.
    jitter_s = 0.0
    _jitter_rng: random.Random | None = None

    def set_jitter(self, jitter_s: float, rng: random.Random) -> None:
        """Delay each frame by a uniform random time in ``[0, jitter_s]`` before it may start.

        A simulator's clock is exact, so ACK-clocked and paced flows meeting
        at a drop-tail queue lock into fixed phases, and one of them loses
        every overflow while the other loses none (Floyd and Jacobson, *On
        traffic phase effects in packet-switched gateways*, 1992; their
        remedy is this random processing time at the sources).  Real hosts
        have it from their schedulers and NICs.
        """
        if jitter_s < 0:
            raise ValueError(f"{self.name}: jitter must be non-negative")
        self.jitter_s = jitter_s
        self._jitter_rng = rng

    #: When not None, a set the channel adds ``watch_key`` to whenever it
    #: accepts a frame: a P4 node's record of which of its ports' queues may
    #: be busy (``P4SwitchNode._fill_queue_table``).
    watch: "set[int] | None" = None
    watch_key = 0

    #: False while the link is down (a fault): frames offered or in flight are lost.
    up = True
    _epoch = 0

    def set_up(self, up: bool) -> None:
        """Take the direction down (queue and frames in flight lost) or bring it back."""
        if not up and self.up:
            self._epoch += 1
            self._inflight.clear()
            self._inflight_bytes = 0
        self.up = up

    def set_rate(self, rate_bps: float) -> None:
        """Change the serialization rate from now on (queued packets keep their times)."""
        self.rate_bps = rate_bps
        self._sec_per_byte = 8.0 / rate_bps

    def set_loss(self, loss: LossModel) -> None:
        """Replace this direction's loss process (e.g. loss on data, not on ACKs)."""
        self.loss = loss
        self._lossy = not isinstance(loss, NoLoss)

    def _advance(self, now: float) -> None:
        q = self._inflight
        while q and q[0][0] <= now:
            self._inflight_bytes -= q.popleft()[1]

    def backlog(self, now: float | None = None) -> tuple[int, int]:
        """(waiting packets, waiting bytes) excluding the packet on the wire."""
        self._advance(self.sim.now if now is None else now)
        q = self._inflight
        if not q:
            return 0, 0
        return len(q) - 1, self._inflight_bytes - q[0][1]

    def queue_meta(self, now: float) -> tuple[int, float]:
        """(packets waiting, seconds a frame offered now waits before it starts on the wire).

        The wait is what BMv2 reports as ``deq_timedelta`` for a frame its
        traffic manager queues now: the time until the frames ahead of it
        (and the one being sent) have left, excluding the frame's own
        serialization.  Exact for a FIFO drained at ``rate_bps`` without
        jitter (switch ports have none).
        """
        q = self._inflight
        while q and q[0][0] <= now:  # _advance, inline: a P4 node asks once per replica
            self._inflight_bytes -= q.popleft()[1]
        if not q:
            return 0, 0.0
        return len(q) - 1, max(0.0, q[-1][0] - now)

    def send(self, frame: bytes) -> bool:
        """Offer a frame; False if the queue dropped it."""
        sim = self.sim
        now = sim.now
        size = len(frame)
        if not self.up:
            self.counters.down_drops += 1
            return False
        q = self._inflight
        inflight_bytes = self._inflight_bytes
        while q and q[0][0] <= now:
            inflight_bytes -= q.popleft()[1]
        self._inflight_bytes = inflight_bytes
        c = self.counters
        if q:
            waiting = len(q) - 1
            waiting_bytes = inflight_bytes - q[0][1]
            if (self.queue_packets is not None and waiting >= self.queue_packets) or (
                self.queue_bytes is not None and waiting_bytes + size > self.queue_bytes
            ):
                c.queue_drops += 1
                c.queue_drop_bytes += size
                if self.queue_trace is not None:
                    self.queue_trace.append((now, waiting, waiting_bytes))
                if self.taps:
                    for tap in self.taps:
                        tap(now, self, frame, "drop")
                return False
            start = q[-1][0]
            waiting += 1
            waiting_bytes += size
            if waiting > c.max_queue_packets:
                c.max_queue_packets = waiting
            if waiting_bytes > c.max_queue_bytes:
                c.max_queue_bytes = waiting_bytes
        else:
            start = now
            waiting = waiting_bytes = 0
        if self.jitter_s:
            start = max(start, now + self._jitter_rng.random() * self.jitter_s)  # type: ignore[union-attr]
        departure = start + size * self._sec_per_byte
        q.append((departure, size))
        self._inflight_bytes = inflight_bytes + size
        if self.watch is not None:
            self.watch.add(self.watch_key)
        c.enqueued_packets += 1
        c.enqueued_bytes += size
        if self.queue_trace is not None:
            self.queue_trace.append((now, waiting, waiting_bytes))
        if self._lossy and self.loss.lost():
            c.loss_drops += 1
            if self.taps:
                for tap in self.taps:
                    tap(now, self, frame, "lost")
            return True
        if self.taps:
            for tap in self.taps:
                tap(now, self, frame, "enqueue")
        # sim.at(departure + self.delay_s, self._arrive, frame, self._epoch),
        # written out (the same entry, the same order): once per frame sent
        sim._seq = seq = sim._seq + 1
        heappush(sim._heap, (departure + self.delay_s, seq, self._arrive, (frame, self._epoch)))
        return True

    def _arrive(self, frame: bytes, epoch: int = 0) -> None:
        c = self.counters
        if epoch != self._epoch:
            c.down_drops += 1
            return
        c.delivered_packets += 1
        c.delivered_bytes += len(frame)
        self.dst.receive(self.dst_port, frame)


class Link:
    """A full-duplex link between ``(a, a_port)`` and ``(b, b_port)``."""

    def __init__(self, sim: "Simulator", name: str, a: Receiver, a_port: int, b: Receiver, b_port: int,
                 *, rate_bps: float, delay_s: float, loss: float | GilbertElliott = 0.0,
                 queue_packets: int | None = 1000, queue_bytes: int | None = None) -> None:
        self.name = name
        self.a, self.a_port, self.b, self.b_port = a, a_port, b, b_port
        self.ab = Channel(sim, f"{name}:a->b", b, b_port, rate_bps=rate_bps, delay_s=delay_s,
                          loss=make_loss(loss, sim.rng(f"link/{name}/ab")),
                          queue_packets=queue_packets, queue_bytes=queue_bytes)
        self.ba = Channel(sim, f"{name}:b->a", a, a_port, rate_bps=rate_bps, delay_s=delay_s,
                          loss=make_loss(loss, sim.rng(f"link/{name}/ba")),
                          queue_packets=queue_packets, queue_bytes=queue_bytes)
