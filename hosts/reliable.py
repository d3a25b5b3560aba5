"""Reliable-delivery pieces shared by the window-based protocols (RLA, MTCP).

Sequence numbers start at 1.  A *cumulative ACK* ``c`` says every packet
``1..c`` has arrived (``c == 0``: none yet), so the first packet is never a
special case and ``0`` fits the unsigned wire field.

* :class:`ReceiveBuffer` -- a receiver's reorder buffer: accepts packets in any
  order, hands them to the application in order (as :class:`hosts.core.Delivered`
  events), and describes what it holds as a cumulative ACK plus SACK blocks
  (RFC 2018 order: the block holding the latest arrival first) or as a bitmap.
* :class:`Scoreboard` -- a sender's (or MTCP agent's) view of one receiver:
  what it has acknowledged cumulatively or selectively, merged over reports so
  a block left out of one report is not forgotten.
* :class:`SendGate` -- when a sender may send: once its receivers are known,
  never after it is done.
* :class:`StreamParams` -- the stream and the receivers a sender waits for,
  under the same names in both protocols; ``MtcpParams`` extends it, and
  :class:`ReliableParams` (RFC 6298's timer, the initial window) for ``RlaParams``.
* :func:`payload_for` -- the deterministic application bytes of packet ``seq``,
  so a receiver can check every delivered byte without the sender storing data.

Their RTT estimator, RFC 6298's, is :class:`hosts.rtt.SmoothedRtt`.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Counters, Delivered, check_params
from p4mcc.hosts.rtt import SmoothedRtt
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tcp_rules import DUPTHRESH, INITIAL_RTO, INITIAL_WINDOW, MIN_RTO, undo_spurious_cuts


def payload_for(seq: int, size: int) -> bytes:
    """Application data of packet ``seq``: its number repeated (checkable, no storage)."""
    if size <= 0:
        return b""
    unit = seq.to_bytes(4, "big")
    return (unit * (size // 4 + 1))[:size]


@dataclass
class StreamParams:
    """The parameters RLA and MTCP share; each protocol's dataclass adds its own.

    Sources in ``docs/protocols/rla.md`` and ``docs/protocols/mtcp.md``.
    """

    #: Payload bytes per data packet: 1450 fills a 1500-byte IP packet (IPv4,
    #: UDP, p4mcc's header), the size of a TCP segment on such a path.  The
    #: windows count packets, so at TCP's size the shares match in bytes too.
    packet_size: int = wire.payload_filling_mtu(wire.RlaData)
    #: Packets in the transfer; 0: send for ever.
    total_packets: int = 0
    #: Receivers the sender hears from before it sends (:meth:`SendGate._ready`);
    #: MTCP: children of a flat, unassisted tree.
    receivers: int = 0
    #: Packets the sender keeps for receivers that still lack them, read by the
    #: ``reliability_window`` rules: the memory a slow receiver may cost.  The
    #: default, 4 MiB of full-size packets, covers 20 Mb/s over a 1 s round trip.
    send_buffer: int = 2888

    def __post_init__(self) -> None:
        if not 0 < self.packet_size <= 8000:
            raise ValueError(f"packet_size must be in 1..8000, got {self.packet_size}")
        check_params(self, total_packets=0, receivers=0, send_buffer=1)


@dataclass
class ReliableParams(StreamParams):
    """RFC 6298's timer and the initial window, which RLA reads as parameters (MTCP: constants)."""

    #: RFC 6298's retransmission timer on each receiver's RTT
    #: (:meth:`rtt_estimator`): the timeout before a sample and its floor.
    initial_rto: float = INITIAL_RTO
    min_rto: float = MIN_RTO
    #: Packets in the window when slow start begins: RFC 6928's initial window,
    #: the simulator's TCP's (the papers' time: 1, RFC 2001).  With 1 a
    #: session entered a long-RTT path ten times behind a TCP flow started
    #: with it (3.3 RTTs of doubling), lost its share in the first overflow
    #: and won it back at one packet per RTT (RLA and MTCP pages).
    initial_cwnd: float = INITIAL_WINDOW

    def __post_init__(self) -> None:
        super().__post_init__()
        check_params(self, ("min_rto", "initial_rto"), initial_cwnd=1)

    def rtt_estimator(self) -> SmoothedRtt:
        """A receiver's RTT estimator and retransmission timer under these parameters."""
        return SmoothedRtt(initial_rto=self.initial_rto, min_rto=self.min_rto)


class SendGate:
    """A reliable sender's start and end, asked first by every send pump (RLA, MTCP).

    The sender sends nothing before :meth:`_ready` says its receivers are
    known (the first data must not outrun the window they advertise) and
    nothing once ``done``.  :meth:`_started` runs once, at the first pump
    that finds it ready.
    """

    started: bool = False
    done: bool = False

    def _ready(self) -> bool:
        return True

    @hook
    def _started(self, now: float) -> None:
        """Sending begins at ``now``."""

    def _may_send(self, now: float) -> bool:
        if self.done:
            return False
        if not self.started:
            if not self._ready():
                return False
            self.started = True
            self._started(now)
        return True


class ResumableStream:
    """The sender's half of RLA's and MTCP's ``resume_stream`` rule: a sender restarted
    mid-session learns from its receivers' first reports where the stream stands."""

    next_seq: int
    started: bool
    p: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Set before the core's __init__, which already meets the configured receivers.
        self.resumed_from = 0  # the first packet of the resumed stream (0: a stream from its start)
        super().__init__(*args, **kwargs)

    def _resume_after(self, cum_ack: int) -> bool:
        """Before the first packet, a report of data moves the stream's start after it (the lowest wins)."""
        if self.started or not 0 < cum_ack < MAX_SEQ or (self.resumed_from and cum_ack >= self.next_seq - 1):
            return False
        self.next_seq = self.resumed_from = cum_ack + 1
        return True

    def _resume_floor(self) -> int:
        """What every receiver of a resumed stream holds: the receive window keeps the group within
        a buffer, so a scoreboard starts here and lists no packet below it."""
        return max(0, self.resumed_from - 1 - self.p.rcv_buffer)


@dataclass
class CutLog:
    """The window before each recent cut, so that cuts found spurious (a silent
    receiver's timeouts, not congestion) can be undone by RFC 4015's response
    (``tcp_rules.undo_spurious_cuts``).  RLA's and MTCP's senders keep one."""

    #: (time, cwnd, ssthresh) before each cut, the newest ``KEEP``.
    cuts: list[tuple[float, float, float]] = field(default_factory=list)
    KEEP = 16

    def record(self, now: float, cwnd: float, ssthresh: float) -> None:
        self.cuts.append((now, cwnd, ssthresh))
        del self.cuts[:-self.KEEP]

    def undo_since(self, since: float, cwnd: float, ssthresh: float, flight: float,
                   initial_window: float, slow_start: bool = True) -> tuple[float, float, int]:
        """(cwnd, ssthresh, cuts undone) once the cuts from ``since`` on are
        found spurious; they leave the log.  ``slow_start`` false: the window
        before them comes back at once (MTCP's former rule)."""
        undo = [x for x in self.cuts if x[0] >= since]
        if not undo:
            return cwnd, ssthresh, 0
        self.cuts = [x for x in self.cuts if x[0] < since]
        _t, old_cwnd, old_ssthresh = undo[0]
        if not slow_start:
            return old_cwnd, old_ssthresh, len(undo)
        cwnd, ssthresh = undo_spurious_cuts(cwnd, ssthresh, (old_cwnd, old_ssthresh), flight, initial_window)
        return cwnd, ssthresh, len(undo)


def blocks_from_set(seqs: set[int] | frozenset[int]) -> list[tuple[int, int]]:
    """Sorted half-open ranges ``[start, end)`` covering ``seqs``."""
    out: list[tuple[int, int]] = []
    for s in sorted(seqs):
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], s + 1)
        else:
            out.append((s, s + 1))
    return out


def nack_blocks(cum_ack: int, missing: tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    """What a NACK says was received: the half-open ranges between its holes.

    A NACK (MTCP's, or a ``ReceiveBuffer.missing`` list) names every hole
    above ``cum_ack`` up to its last one, lowest first, so each packet below
    the last hole that it does not name has arrived: the NACK is a SACK of
    those ranges.  Above the last hole it says nothing (the list may have
    been cut at its length limit).
    """
    out: list[tuple[int, int]] = []
    start = cum_ack + 1
    for hole in sorted(set(missing)):
        if hole > start:
            out.append((start, hole))
        start = max(start, hole + 1)
    return out


def ack_from_one_more(buffer: dict[int, Any], seq: int, receivers: int) -> bool:
    """Count one more receiver's acknowledgement of ``seq`` in a sender's buffer.

    A reliable multicast sender keeps each packet until every receiver has
    acknowledged it (RLA and MTCP both do).  Returns True, with the packet
    dropped from ``buffer``, when this acknowledgement was the last one
    needed; False when more are needed or the packet is no longer held.
    """
    entry = buffer.get(seq)
    if entry is None:
        return False
    entry.acks += 1
    if entry.acks < receivers:
        return False
    del buffer[seq]
    return True


#: The highest packet number a receiver accepts: its SACK blocks end one past
#: a packet, in 32 bits, so 2^32 - 1 has no end to name.  Data above it is
#: malformed (a corrupted or forged header), dropped and counted.
MAX_SEQ = 0xFFFFFFFE


class ReceiveBuffer(Counters):
    """A receiver's reorder buffer with in-order delivery.

    ``capacity`` is the number of out-of-order packets it can hold; what is
    left is the advertised buffer (flow control).  Packets that do not fit are
    dropped and counted (the sender will retransmit them), never delivered out
    of order.
    """

    #: Packets and bytes delivered in order; arrivals already held or
    #: delivered (``duplicates``); arrivals that did not fit (``overflow``).
    COUNTERS = ("delivered_packets", "delivered_bytes", "duplicates", "overflow")

    def __init__(self, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.cum_ack = 0
        self._held: dict[int, int] = {}  # seq -> size, all > cum_ack
        self._sorted: list[int] = []
        self.last_arrival: int | None = None
        self.zero_counters()

    @property
    def free(self) -> int:
        """Buffers still available (the advertised window, in packets)."""
        return self.capacity - len(self._held)

    @property
    def highest(self) -> int:
        """Highest sequence number received so far (``cum_ack`` if none above it)."""
        return self._sorted[-1] if self._sorted else self.cum_ack

    def has(self, seq: int) -> bool:
        return seq <= self.cum_ack or seq in self._held

    def add(self, seq: int, size: int) -> tuple[bool, list[Delivered]]:
        """Accept packet ``seq``; return (new?, the packets now deliverable in order)."""
        if seq < 1:
            raise ValueError(f"sequence numbers start at 1, got {seq}")
        if self.has(seq):
            self.duplicates += 1
            return False, []
        if seq != self.cum_ack + 1 and len(self._held) >= self.capacity:
            self.overflow += 1
            return False, []
        self.last_arrival = seq
        self._held[seq] = size
        bisect.insort(self._sorted, seq)
        return True, self._in_order()

    def rebase(self, cum_ack: int) -> list[Delivered]:
        """Start the stream after ``cum_ack`` (a receiver that joined a session
        mid-way): what is held at or below it is dropped, what now follows it
        in order is delivered.  Only before anything was delivered."""
        if self.delivered_packets or cum_ack <= self.cum_ack:
            return []
        self.cum_ack = cum_ack
        for s in [s for s in self._sorted if s <= cum_ack]:
            del self._held[s]
        self._sorted = [s for s in self._sorted if s > cum_ack]
        return self._in_order()

    def _in_order(self) -> list[Delivered]:
        """Deliver what now follows the cumulative ACK without a gap."""
        out: list[Delivered] = []
        while self.cum_ack + 1 in self._held:
            self.cum_ack += 1
            sz = self._held.pop(self.cum_ack)
            self._sorted.pop(0)
            self.delivered_packets += 1
            self.delivered_bytes += sz
            out.append(Delivered(self.cum_ack, sz))
        return out

    def start_at(self, seq: int) -> list[Delivered]:
        """A late joiner's stream begins at ``seq``: nothing below it is owed.

        Only for a buffer that has delivered nothing yet (a receiver that
        joins a running session); packets held below ``seq`` are dropped and
        those from ``seq`` on that are now in order are returned.
        """
        return self.rebase(seq - 1)

    def first_hole_above(self, seq: int) -> int | None:
        """The lowest packet above ``seq`` that is missing below the highest held, if any.

        A receiver that thins its acknowledgements (RLA) uses it to tell a hole
        the sender has not heard of from one it reported already.
        """
        s = max(seq, self.cum_ack) + 1
        i = bisect.bisect_left(self._sorted, s)
        while i < len(self._sorted) and self._sorted[i] == s:
            s += 1
            i += 1
        return s if s < self.highest else None

    def received_above(self, seq: int) -> int:
        """How many packets above ``seq`` are held (TCP would have sent that many duplicate ACKs)."""
        return len(self._sorted) - bisect.bisect_right(self._sorted, seq)

    def missing(self, limit: int = 64) -> list[int]:
        """Holes below the highest packet received, lowest first (for NACKs)."""
        out: list[int] = []
        s = self.cum_ack + 1
        for h in self._sorted:
            while s < h and len(out) < limit:
                out.append(s)
                s += 1
            s = h + 1
            if len(out) >= limit:
                break
        return out

    def sack_blocks(self, limit: int = 16) -> tuple[tuple[int, int], ...]:
        """Half-open blocks above ``cum_ack``; the one holding the latest arrival first."""
        blocks = blocks_from_set(set(self._held))
        if self.last_arrival is not None:
            for i, (a, b) in enumerate(blocks):
                if a <= self.last_arrival < b:
                    blocks.insert(0, blocks.pop(i))
                    break
        return tuple(blocks[:limit])

    def sack_bitmap(self, bits: int = 32) -> int:
        """Bit i (LSB first) set when packet ``cum_ack + 1 + i`` is held."""
        base = self.cum_ack + 1
        out = 0
        for s in self._sorted:
            i = s - base
            if i >= bits:
                break
            out |= 1 << i
        return out


class Scoreboard:
    """What one receiver has acknowledged, merged across its reports.

    Reports may arrive reordered; the cumulative ACK only moves forward and
    selectively acknowledged packets are remembered until the cumulative ACK
    passes them.
    """

    def __init__(self) -> None:
        self.cum_ack = 0
        self.sacked: set[int] = set()
        self.highest = 0  # highest packet known received

    def update(self, cum_ack: int, blocks: tuple[tuple[int, int], ...] | list[tuple[int, int]] = (),
               limit: int | None = None) -> list[int]:
        """Merge one report; return packets newly known to be received (sorted).

        ``limit`` is the highest packet the caller can know of (a sender: the
        last one it sent): a report claiming more is clipped to it, so a
        corrupt or hostile report cannot make the caller walk 2**32 numbers.
        """
        if limit is not None:
            cum_ack = min(cum_ack, limit)
            blocks = [(a, min(b, limit + 1)) for a, b in blocks if a <= limit]
        new: list[int] = []
        if cum_ack > self.cum_ack:
            for s in range(self.cum_ack + 1, cum_ack + 1):
                if s not in self.sacked:
                    new.append(s)
            self.sacked = {s for s in self.sacked if s > cum_ack}
            self.cum_ack = cum_ack
        for start, end in blocks:
            if end <= start:
                continue
            for s in range(max(start, self.cum_ack + 1), end):
                if s not in self.sacked:
                    self.sacked.add(s)
                    new.append(s)
        if new:
            self.highest = max(self.highest, max(new))
        self._fold_contiguous()
        new.sort()
        return new

    def start_after(self, cum_ack: int) -> None:
        """Everything up to ``cum_ack`` is held: as ``update(cum_ack)`` on a fresh record,
        without listing the packets, so a stream that starts late costs nothing per packet."""
        if cum_ack > self.cum_ack:
            self.cum_ack = cum_ack
            self.sacked = {s for s in self.sacked if s > cum_ack}
        self._fold_contiguous()

    def _fold_contiguous(self) -> None:
        """Fold SACKed packets contiguous with the cumulative ACK into it."""
        self.highest = max(self.highest, self.cum_ack)
        while self.cum_ack + 1 in self.sacked:
            self.cum_ack += 1
            self.sacked.discard(self.cum_ack)

    def update_bitmap(self, cum_ack: int, bitmap: int, bits: int = 32, limit: int | None = None) -> list[int]:
        """Merge an MTCP-style report: bit i set = packet ``cum_ack + 1 + i`` received."""
        blocks = [(cum_ack + 1 + i, cum_ack + 2 + i) for i in range(bits) if bitmap >> i & 1]
        return self.update(cum_ack, blocks, limit)

    def acked(self, seq: int) -> bool:
        return seq <= self.cum_ack or seq in self.sacked

    def lost(self, dupthresh: int = DUPTHRESH) -> list[int]:
        """Packets deemed lost: unacknowledged with one at least ``dupthresh`` higher SACKed.

        This is RLA's rule 1 (and TCP SACK's): reordering of fewer than
        ``dupthresh`` packets is tolerated.
        """
        limit = self.highest - dupthresh
        return [s for s in range(self.cum_ack + 1, limit + 1) if s not in self.sacked]


def handover_window(cwnd: float, old_rtt: float, new_rtt: float, eq_window: float, floor: float) -> float:
    """The window a new acker takes (pgmcc's acker change, RLA's and MTCP's ``acker_clock``): the old
    rate at the new acker's round trip, at most the window its TCP equation allows, at least ``floor``.
    The pipe is then what the new acker lacks, so no burst exceeds this window."""
    return max(floor, min(cwnd * new_rtt / old_rtt, eq_window))


#: The least reliability window (packets): a small window's repairs, lost behind a full queue, need
#: new data flowing after them for the receiver to report its holes again.
RELIABILITY_FLOOR = 64


def reliability_bound(cwnd: float, longest_rtt: float, acker_rtt: float, rtts: float, send_buffer: int) -> int:
    """Packets the slowest receiver may lack under an acker's clock (``reliability_window``): the rate,
    ``cwnd`` per acker round trip, over ``rtts`` longest round trips, at least ``RELIABILITY_FLOOR`` and
    at most ``send_buffer``.  It grows linearly with the ratio of the longest round trip to the acker's."""
    spread = max(1.0, longest_rtt / acker_rtt) if acker_rtt > 0 else 1.0
    return max(1, min(send_buffer, max(RELIABILITY_FLOOR, math.ceil(rtts * cwnd * spread))))
