"""RLA's named rules: each behaviour beyond the paper, as a mixin of the core it changes.

Each class overrides a hook of :class:`hosts.rla.core.RlaSender` or
:class:`hosts.rla.receiver.RlaReceiver` and calls ``super()``; its docstring
says what it changes and why.  Reasons are an RFC section the TCP flows
beside RLA follow, or ours, measured: ``docs/protocols/rla.md#rules``.
:data:`RULES` lists them in composition order (first listed: outermost).
"""

from __future__ import annotations

import math
import random
from typing import Any

from hosts.reliable import CutLog
from hosts.rla.core import RlaSender, _Receiver
from hosts.rla.receiver import RlaReceiver
from hosts.rules import DEFAULT, PAPER, Rule, RuleBook
from hosts.rtt import ewma
from hosts.tcp_rules import DELAYED_ACK_PACKETS, DELAYED_ACK_TIMEOUT, DUPTHRESH, LEAST_SSTHRESH, ack_at_once
from hosts.wire import Flags, RlaData, RlaSack

_S = "rla-sender"
_R = "rla-receiver"
#: Hooks named by the mixins below exist on these cores.
Sender = RlaSender
Receiver = RlaReceiver


# Congestion response ---------------------------------------------------------
class OneDrawPerLoss(Sender):
    """One random draw per lost packet instead of one per receiver's signal.

    The signals of receivers that lost the same packets are one loss event;
    once every troubled receiver reported past its first packet (or after the
    largest srtt) the sender cuts with probability k / num_trouble_rcvr, k
    the troubled receivers that lost it: the paper's expected number of cuts,
    but one cut for a packet lost behind a shared bottleneck, where the
    paper's k draws cut 0 times in (1-1/n)^n and twice or more in 26 %.
    A timeout response answers the event open at the time.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: A loss event awaiting its draw: (lowest lost packet, highest, opened at).
        self.event: tuple[int, int, float] | None = None
        #: The lost packets of the last event drawn: later signals for them are absorbed.
        self.drawn: tuple[int, int] = (0, 0)
        self.events = 0

    def _randomized_cut(self, r: _Receiver, now: float, lost: list[int] | None) -> None:
        if not lost:
            super()._randomized_cut(r, now, lost)
            return
        lo, hi = min(lost), max(lost)
        ev = self.event
        if ev is not None and lo <= ev[1] and hi >= ev[0]:
            self.event = (min(lo, ev[0]), max(hi, ev[1]), ev[2])
            return  # the same lost packets: one event, drawn once
        if lo <= self.drawn[1] and hi >= self.drawn[0]:
            return  # packets whose event was drawn already
        self._resolve_event(now, force=True)
        self.event = (lo, hi, now)
        self.events += 1
        self._resolve_event(now)

    def _lost_at(self, r: _Receiver, s: int) -> bool:
        return s in r.lost_pending or s in r.rexmit_at or (r.sb.highest > s and not r.sb.acked(s))

    def _resolve_event(self, now: float, force: bool = False) -> None:
        """Draw for the open event once every troubled receiver reported past it."""
        super()._resolve_event(now, force)
        ev = self.event
        if ev is None:
            return
        lo, _hi, opened = ev
        troubled = [r for r in self.rcvrs.values() if self._troubled(r)]
        if not troubled:
            self.event = None
            return
        heard = all(r.sb.highest >= lo for r in troubled)
        if not (force or heard or now - opened >= max(r.srtt for r in troubled)):
            return
        self.event = None
        self.drawn = (lo, ev[1])
        k = max(1, sum(1 for r in troubled if self._lost_at(r, lo)))
        if self.rng.random() > min(1.0, k / len(troubled)):
            self.ignored_signals += 1
            return
        self.random_cuts += 1
        self._cut(now)

    def _cut(self, now: float) -> None:
        super()._cut(now)
        self.event = None  # a forced cut answers the open event

    def _timeout_response(self, now: float, oldest: int, cwnd_before: float) -> None:
        super()._timeout_response(now, oldest, cwnd_before)
        if self.event is not None:
            self.drawn = (self.event[0], self.event[1])
            self.event = None


class OneCutPerWindow(Sender):
    """A signal whose lost packets were all sent before the last cut is absorbed.

    TCP's one reduction per window of data (RFC 6582 3.2, RFC 6675 5: the
    ``recover`` point).  Rule 2's time period alone let a second loss of the
    same overflow, found later at a small window, halve the window again.
    A loss found by timeout is never absorbed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.absorbed_signals = 0

    def _cut_already_answers(self, lost: list[int] | None, by_timeout: bool) -> bool:
        if lost and not by_timeout and max(lost) <= self.cut_seq:
            self.absorbed_signals += 1
            return True
        return super()._cut_already_answers(lost, by_timeout)


class OneRttCongestionPeriod(Sender):
    """Rule 2's congestion period is one srtt_i, not two: TCP's recovery, which
    RLA is measured against, absorbs the losses of one round trip (ours)."""

    cperiod_rtts = 1.0


class TcpCutFloor(Sender):
    """A cut leaves at least two packets, TCP's floor (RFC 5681 eq. 4 and 3.2):
    with one, fast recovery could repair only when the one packet in flight
    was acknowledged, and its loss meant a timeout."""

    cut_floor = LEAST_SSTHRESH


class RtoMarksAll(Sender):
    """A timeout marks everything the receiver has not acknowledged lost (RFC
    5681 3.1, RFC 6675 5.1), not only what is older than one RTO: after an
    outage the rest of the window stayed in the pipe and nothing was resent."""

    def _timeout_losses(self, pending: list[int], expired: list[int]) -> list[int]:
        return pending


class RtoHoldsSsthresh(Sender):
    """A second timeout of the same oldest packet holds ssthresh (RFC 5681 3.1:
    "the value of ssthresh is held constant"); halving again after an outage
    longer than one RTO left ssthresh at 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rto_seq: int | None = None  # the oldest packet at the last timeout response

    def _timeout_ssthresh(self, oldest: int, cwnd_before: float) -> None:
        if oldest != self.rto_seq:
            super()._timeout_ssthresh(oldest, cwnd_before)
        self.rto_seq = oldest


# Group membership --------------------------------------------------------------
class JoinAtWindowEdge(Sender):
    """A receiver first heard after data started takes the stream from the
    trailing edge of the transmit window (PGM's late join, RFC 3208); a known
    receiver that says hello again (its agent restarted) is admitted anew.

    The paper's group is fixed: a receiver heard mid-stream is owed every
    packet from 1, repaired while rule 5 holds everyone's window.  Unless the
    edge is packet 1, its first packet goes to it alone flagged ``SYNC``,
    which tells its buffer where its stream starts.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.joined: list[tuple[float, int, int]] = []  # (time, receiver id, first packet)
        self.restarts = 0  # known receivers that came back with no state

    def _admit(self, m: RlaSack, src: Any, now: float) -> _Receiver:
        r = self.rcvrs.get(m.rcvr_id)
        if self.started and self.next_seq > 1 and m.cum_ack == 0:
            if r is not None and r.synced and r.sb.cum_ack > 0:
                # A cumulative ACK never goes back: a new incarnation.
                self.restarts += 1
                self._forget([r.rid])
                r = None
            if r is None:
                self._join(m.rcvr_id, src, now)
        r = super()._admit(m, src, now)
        if not r.synced and m.cum_ack >= r.join:
            r.synced = True
        return r

    def _join(self, rid: int, src: Any, now: float) -> _Receiver:
        first = min(self.out) if self.out else self.next_seq - 1
        r = self._receiver(rid, src, first - 1)
        r.join = first
        if first > 1:
            r.synced = False
            self._mark_lost(r, first, -math.inf)
        self.joined.append((now, rid, first))
        return r

    def _repair_joiners(self, s: int, want: list[_Receiver], now: float) -> list[_Receiver]:
        for r in want:
            if not r.synced and s == r.join:
                self.send(r.addr, self._data(s, now, Flags.RETRANSMIT | Flags.SYNC))
                self.ucast_rexmits += 1
        return super()._repair_joiners(s, [r for r in want if r.synced or s != r.join], now)


class JoinAtWindowEdgeReceiver(Receiver):
    """The receiver's half: a ``SYNC`` packet marks where its stream starts
    (only before anything was delivered: ``ReceiveBuffer.rebase``)."""

    def _stream_start(self, msg: RlaData) -> None:
        super()._stream_start(msg)
        if msg.flags & Flags.SYNC:
            for d in self.buf.rebase(msg.seq - 1):
                self.emit(d)


class DropSilentReceivers(Sender):
    """A receiver silent for max(DEAD_MIN, DEAD_RTTS * srtt_i) while it owes an
    ACK is dropped from the group; if it speaks again it is re-admitted.

    Rule 5 and rule 4 wait for every receiver, so one crashed or departed
    receiver stalled the session for good (ours).  Nobody is dropped while
    the whole group is silent (the path is down), and silence counts only
    from when the group is heard again after such an outage.
    """

    DEAD_MIN = 2.0
    DEAD_RTTS = 4.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dropped: list[tuple[float, int]] = []  # (time, receiver id)
        self.last_feedback = -math.inf  # when any receiver was last heard
        self.heard_again = -math.inf  # first word after the whole group fell silent

    def _admit(self, m: RlaSack, src: Any, now: float) -> _Receiver:
        r = super()._admit(m, src, now)
        if now - self.last_feedback >= self.DEAD_MIN / 2:
            self.heard_again = now
        self.last_feedback = now
        return r

    def dead_after(self, r: _Receiver) -> float:
        return max(self.DEAD_MIN, self.DEAD_RTTS * r.srtt)

    def _drop_silent(self, now: float) -> bool:
        dropped = super()._drop_silent(now)
        gone = []
        for r in self.rcvrs.values():
            owed = next((o.first_sent for s, o in self.out.items() if not r.sb.acked(s)), None)
            if owed is None:
                continue  # owes nothing: silence is normal
            if now - max(r.last_heard, owed, self.heard_again) > self.dead_after(r):
                gone.append(r.rid)
        if not gone:
            return dropped
        heard = [r for r in self.rcvrs.values() if r.rid not in gone
                 and now - r.last_heard <= self.dead_after(r) / 2]
        if not heard:
            return dropped  # all silent together: the path is down, not they
        self.dropped.extend((now, rid) for rid in gone)
        since = min(self.rcvrs[rid].last_heard for rid in gone)
        self._forget(gone)
        self._dropped_since(since)
        return True


class UndoDeadCuts(Sender):
    """The cuts made since a dropped receiver was last heard are undone by RFC
    4015's response (``tcp_rules.undo_spurious_cuts``): they were its silence
    (timeouts of what only it lacked), not congestion."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cuts = CutLog()
        self.undone_cuts = 0

    def _cut(self, now: float) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        super()._cut(now)

    def _timeout_response(self, now: float, oldest: int, cwnd_before: float) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        super()._timeout_response(now, oldest, cwnd_before)

    def _dropped_since(self, since: float) -> None:
        super()._dropped_since(since)
        self.cwnd, self.ssthresh, n = self.cuts.undo_since(since, self.cwnd, self.ssthresh, self._pipe(),
                                                           self.p.initial_cwnd)
        self.undone_cuts += n


# Repairs -----------------------------------------------------------------------
class OneRepairPerLoss(Sender):
    """One multicast repair per lost packet: a repair waits until every
    receiver acknowledged the packet or is known to miss it (footnote 8's
    "hears from all"), and a report overtaken by a multicast repair waits for
    that repair.  Waiting for a report at or above the packet sent the group
    a copy per receiver whose report came after the first repair (ours)."""

    def _heard_all(self, s: int) -> bool:
        return all(r.sb.acked(s) or s in r.lost_pending or s in r.rexmit_at for r in self.rcvrs.values())

    def _awaits_repair(self, r: _Receiver, s: int, now: float) -> bool:
        o = self.out.get(s)
        if o is not None and now - o.mcast_at < r.srtt + DELAYED_ACK_TIMEOUT:
            r.rexmit_at[s] = o.mcast_at  # its RTO covers that repair's loss
            return True
        return super()._awaits_repair(r, s, now)


class DetectLostRepairs(Sender):
    """A repair is lost for a receiver that acknowledges a packet sent more
    than srtt_i/4 after it while still missing it (RFC 8985 6.2, RACK's
    time-based rule): it is repaired again at once instead of after an RTO.
    Only packets sent once date a delivery; it is no new congestion signal."""

    COUNTERS = ("lost_repairs",)

    def _take_acks(self, r: _Receiver, newly: list[int], now: float) -> None:
        delivered_sent = -math.inf
        if r.rexmit_at:
            delivered_sent = max((o.first_sent for s in newly if (o := self.out.get(s)) is not None
                                  and o.last_sent == o.first_sent), default=-math.inf)
        super()._take_acks(r, newly, now)
        if r.rexmit_at:
            reo = r.srtt / 4
            for s, at in list(r.rexmit_at.items()):
                if at + reo < delivered_sent and s in self.out and not r.sb.acked(s):
                    self.lost_repairs += 1
                    self._mark_lost(r, s, now)


class TailLossProbe(Sender):
    """RFC 8985 7 (TLP, which the TCP flows beside RLA run): with data out, no
    recovery and no repair waiting, 2 * max srtt_i (plus the receivers'
    delayed-ACK time with one packet out) without progress sends one probe,
    the next new packet or the last one again.  What a receiver that
    acknowledges the probe still misses of packets sent srtt_i/4 before it is
    lost (RFC 8985 6.2): a small window's tail loss costs no timeout."""

    COUNTERS = ("tail_loss_probes",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The probe out: its packet and the send time a delivery of it dates.
        self.probe: tuple[int, float] | None = None
        self._progress = False  # something new sent or acknowledged since the PTO was set
        #: When the probe is due; the one "pto" timer follows it when it fires.
        self._pto_deadline: float | None = None

    def on_timer(self, name: str, now: float) -> None:
        if name != "pto":
            super().on_timer(name, now)
            return
        due = self._pto_deadline
        if due is not None and now < due:
            self.set_timer("pto", due)  # progress moved it since the timer was set
        elif due is not None:
            self._pto_deadline = None
            self._on_probe_timeout(now)
            self._pump(now)

    def _detect_losses(self, r: _Receiver, newly: list[int]) -> list[int]:
        losses = super()._detect_losses(r, newly)
        if newly:
            self._progress = True
        if self.probe is not None and self.probe[0] in newly:
            sent = self.probe[1] - r.srtt / 4
            late = [s for s, o in self.out.items() if o.last_sent < sent and not r.sb.acked(s)
                    and s not in r.lost_pending and s not in r.rexmit_at]
            losses = sorted(set(losses).union(late))
        if self.probe is not None and self.probe[0] not in self.out:
            self.probe = None  # every receiver has it: the tail is over
        return losses

    def _send_new(self, now: float) -> None:
        super()._send_new(now)
        self._progress = True

    def _on_timeout(self, now: float) -> None:
        self.probe = None
        super()._on_timeout(now)

    def _finish(self, now: float) -> None:
        super()._finish(now)
        self.cancel_timer("pto")

    def _arm_timers(self, now: float) -> None:
        super()._arm_timers(now)
        if self._progress or self._pto_deadline is None:
            self._progress = False  # RFC 8985 7.2: restarted on new data sent or acknowledged
            self._arm_pto(now)

    def _arm_pto(self, now: float) -> None:
        self._pto_deadline = None
        if (self.probe is not None or self.recover is not None
                or not self.out or not self.rcvrs or self.rexmit_queue):
            return
        pto = 2 * self.largest_srtt
        if len(self.out) == 1:
            pto += DELAYED_ACK_TIMEOUT  # RFC 8985 7.2's WCDelAckT
        rto = self.timer_at("rto")
        if rto is not None and now + pto >= rto:
            return
        self._pto_deadline = now + pto
        pending = self.timer_at("pto")
        if pending is None or self._pto_deadline < pending:
            self.set_timer("pto", self._pto_deadline)

    def _on_probe_timeout(self, now: float) -> None:
        """RFC 8985 7.3: the next new packet, else the last one again, whatever the window."""
        if self.probe is not None or self.recover is not None or not self.out or self.done:
            return
        if self.next_seq <= self._upper_bound() and not (
                self.p.total_packets and self.next_seq > self.p.total_packets):
            seq = self.next_seq
            self._send_new(now)
            self.probe = (seq, now)
        else:
            seq = max(self.out)
            for r in self.rcvrs.values():
                if not r.sb.acked(seq):
                    self._mark_lost(r, seq, now)
            self._retransmit(seq, now)
            self.probe = (seq, self.out[seq].first_sent)  # which copy arrives is unknown
        self.tail_loss_probes += 1


# Feedback ---------------------------------------------------------------------
class SpreadHellos(Receiver):
    """The first hello waits up to HELLO_SPREAD s, the next ones a random factor
    in [0.5, 1.5] of the interval: 32 receivers started together sent their
    hellos in step and the sender heard the same 11 every second (ours)."""

    HELLO_SPREAD = 0.1

    def _first_hello(self, now: float) -> None:
        self.set_timer("hello", now + self.rng.uniform(0, self.HELLO_SPREAD))

    def _hello_factor(self) -> float:
        return self.rng.uniform(0.5, 1.5)


class ThinAcks(Sender):
    """The sender marks its data ``THIN_ACKS``: receivers delay their SACKs as
    TCP receivers delay their ACKs (RFC 5681 4.2), the TCP flows RLA shares a
    path with included.  A SACK per packet from n receivers is n packets per
    data packet into the reverse path, in one burst."""

    def _data_flags(self, flags: int) -> int:
        return super()._data_flags(flags) | Flags.THIN_ACKS


class ThinAcksReceiver(Receiver):
    """Delayed SACKs (RFC 5681 4.2, RFC 1122 4.2.3.2): one for every
    ``ACK_EVERY`` packets or ``ACK_DELAY`` after the first unacknowledged one;
    at once for a hole the sender can now call lost, a packet that fills a
    hole, and a SYNC.  The echo is the first packet acknowledged (RFC 7323 3.4)."""

    ACK_EVERY = DELAYED_ACK_PACKETS
    ACK_DELAY = DELAYED_ACK_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A separate stream, so the hello schedule does not depend on this rule.
        self.ack_rng = random.Random(f"rla-ack-{self.cfg.seed}-{self.rid}")
        #: Packets received since the last SACK, from a random offset so a group's
        #: receivers acknowledge different packets.
        self.unacked = self.ack_rng.randrange(self.ACK_EVERY)
        self.pending_echo: int | None = None  # send time of the first packet not yet acknowledged
        self.pending_since = 0.0
        self.told_lost = 0  # holes up to here were reported as detectable already

    def on_timer(self, name: str, now: float) -> None:
        if name == "ack" and self.pending_echo is not None:
            self._sack(self.pending_echo, now)
        else:
            super().on_timer(name, now)

    def _acknowledge(self, msg: RlaData, now: float, new: bool, filled: bool) -> None:
        if self.pending_echo is None:
            self.pending_echo = msg.timestamp
            self.pending_since = now
        self.unacked += 1
        if not msg.flags & Flags.THIN_ACKS:
            self._sack(self.pending_echo, now)  # unmarked: the paper's SACK per packet
            return
        urgent = bool(msg.flags & Flags.SYNC)
        if not new:
            pass  # a duplicate (a repair for another receiver, most likely): no hurry
        elif filled:
            urgent = True
        else:
            hole = self.buf.first_hole_above(self.told_lost)
            if hole is not None and hole + DUPTHRESH <= self.buf.highest:
                urgent = True  # rule 1 now lets the sender call this hole lost
                self.told_lost = self.buf.highest - DUPTHRESH
        hold = self._sack_hold(msg)
        due = now if ack_at_once(self.unacked, urgent, self.ACK_EVERY) else self.pending_since + hold
        when = self._spread(msg, due, hold)
        t = self.timer_at("ack")
        if when <= now:
            self._sack(self.pending_echo, now)
        elif t is None or when < t:
            self.set_timer("ack", when)

    def _sack_hold(self, msg: RlaData) -> float:
        """The longest a SACK waits after the first packet it acknowledges."""
        return self.ACK_DELAY

    def _spread(self, msg: RlaData, due: float, hold: float) -> float:
        """When a SACK due at ``due`` leaves."""
        return due

    def _sack(self, echo_ts: int, now: float, hello: bool = False) -> None:
        if not hello:  # a hello acknowledges no data: the count stays
            self.unacked = 0
            self.pending_echo = None
            self.cancel_timer("ack")
        super()._sack(echo_ts, now, hello)


class SpreadAcks(Sender):
    """From SPREAD_MIN_RECEIVERS receivers the sender marks its data
    ``SPREAD_ACKS``: without the spread, the SACKs one packet triggers at 32
    receivers filled a 10-packet reverse queue (RLA/TCP 0.01-0.05).  A small
    group's SACKs leave unspread, as TCP's delayed ACKs (ours)."""

    #: Groups of at least this many receivers spread their SACKs (and send pairs).
    SPREAD_MIN_RECEIVERS = 8

    def _data_flags(self, flags: int) -> int:
        flags = super()._data_flags(flags)
        if len(self.rcvrs) >= self.SPREAD_MIN_RECEIVERS:
            flags |= Flags.SPREAD_ACKS
        return flags


class SpreadAcksReceiver(ThinAcksReceiver):
    """Each receiver holds every SACK of marked data for its own fixed phase
    of the data gap, at most SERVICE_TIMES of the bottleneck's service times
    (the shortest data spacing lately), so the SACKs of n receivers reach the
    reverse queue one by one.  The hold is at most half of ``ACK_DELAY``."""

    #: A receiver's phase is drawn from [0, ACK_SPREAD).
    ACK_SPREAD = 1.0
    #: The spread lasts at most this many service times: some 30 SACKs, the
    #: group's answers to one pair, pass the reverse queue in that time.
    SERVICE_TIMES = 2.0
    #: Data packets per block of the running minimum spacing (this block and the last).
    SERVICE_BLOCK = 64
    #: The least service time believed (s): a host that reads its socket late
    #: sees packets microseconds apart whatever the path (1 ms spread, HZ=1000).
    SERVICE_FLOOR = 0.0005

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.phase = self.ack_rng.uniform(0, self.ACK_SPREAD)
        self.gap: float | None = None  # smoothed interval between data packets
        self.last_data_at: float | None = None
        self._gap_min = self._gap_min_before = math.inf
        self._gaps_in_block = 0

    def _note_arrival(self, now: float) -> None:
        super()._note_arrival(now)
        if self.last_data_at is not None:
            g = now - self.last_data_at
            self.gap = g if self.gap is None else self.gap + (g - self.gap) / 8
            self._gap_min = min(self._gap_min, g)
            self._gaps_in_block += 1
            if self._gaps_in_block >= self.SERVICE_BLOCK:
                self._gap_min_before, self._gap_min, self._gaps_in_block = self._gap_min, math.inf, 0
        self.last_data_at = now

    def _sack_hold(self, msg: RlaData) -> float:
        return self.ACK_DELAY / 2 if msg.flags & Flags.SPREAD_ACKS else super()._sack_hold(msg)

    def _spread(self, msg: RlaData, due: float, hold: float) -> float:
        if not msg.flags & Flags.SPREAD_ACKS:
            return super()._spread(msg, due, hold)
        span = hold if self.gap is None else min(self.gap, hold)
        service = min(self._gap_min, self._gap_min_before)
        if service < math.inf:
            span = min(span, self.SERVICE_TIMES * max(service, self.SERVICE_FLOOR))
        return due + self.phase * span


class SpreadPairs(Sender):
    """While SACKs are spread, a lone packet the window frees waits for the
    next acknowledgement, so data leaves in pairs as a TCP sender's behind
    delayed ACKs (RFC 5681 4.2); single packets passed the drop-tail
    overflows TCP's pairs lose.  Not with fewer than two in flight: an
    acknowledgement is then not sure to come."""

    SPREAD_MIN_RECEIVERS = SpreadAcks.SPREAD_MIN_RECEIVERS  # spread_acks's, which comes first

    def _new_data_limit(self, pipe: int) -> int:
        limit = super()._new_data_limit(pipe)
        if len(self.rcvrs) >= self.SPREAD_MIN_RECEIVERS and pipe >= 2 and int(self.cwnd) - pipe == 1:
            return 0
        return limit


class OneClock(Sender):
    """From CLOCK_MIN_RECEIVERS receivers the window is sent on one receiver's
    SACKs, as a TCP sender's on its receiver's ACKs (the paper's section 3.1:
    send "in a fashion similar to the TCP senders").  A window freed by the
    last of n SACKs leaves at the latest of n arrival times, a stream so
    smooth it missed the overflows TCP met (RLA/TCP 2.52 with 27 receivers).

    The clock is the receiver with the largest srtt, kept until another's
    exceeds it by CLOCK_SWITCH; any SACK sends while the clock is silent for
    the delayed-ACK time or its SACKs come fewer than CLOCK_LAG times per srtt.
    """

    CLOCK_MIN_RECEIVERS = 8
    #: Receivers behind one queue differ by a few per cent; a clock that
    #: followed them would be the latest of n again.
    CLOCK_SWITCH = 1.25
    #: A freed packet waits at most 1/16 of a round trip for the clock.
    CLOCK_LAG = 16

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock: int | None = None  # the receiver whose SACKs send; None: every SACK

    def _admit(self, m: RlaSack, src: Any, now: float) -> _Receiver:
        r = super()._admit(m, src, now)
        if r.last_sack is not None:
            r.sack_gap = ewma(r.sack_gap, now - r.last_sack, 1 / 8)
        r.last_sack = now
        return r

    def _choose_clock(self) -> None:
        super()._choose_clock()
        if len(self.rcvrs) < self.CLOCK_MIN_RECEIVERS:
            self.clock = None
            return
        timed = [r for r in self.rcvrs.values() if r.rtt.srtt is not None]
        if not timed:
            return
        slowest = max(timed, key=lambda r: r.srtt)
        current = self.rcvrs.get(self.clock) if self.clock is not None else None
        if current is None or slowest.srtt > self.CLOCK_SWITCH * current.srtt:
            self.clock = slowest.rid

    def _clocked_elsewhere(self, rid: int, now: float) -> bool:
        if self.clock is None:
            self._choose_clock()
        if self.clock is None or rid == self.clock:
            return super()._clocked_elsewhere(rid, now)
        clock = self.rcvrs[self.clock]
        if clock.sack_gap is None or clock.sack_gap > clock.srtt / self.CLOCK_LAG:
            return False  # waiting for its next SACK would stretch the round trip
        return now - clock.last_heard <= DELAYED_ACK_TIMEOUT


# Feedback a receiver cannot abuse -------------------------------------------------
class StalledReceivers(Sender):
    """A receiver that keeps talking but acknowledges nothing new for
    max(STALL_MIN, STALL_RTTS * srtt_i) while it owes a packet, as the rest of
    the group moves, is dropped as a silent one is; its SACKs are then refused
    until one acknowledges a packet sent after the drop (it receives again).

    The paper's rules 4 and 5 wait for every receiver: one SACK stream with
    a cumulative ACK that never moves and a buffer of one packet held a
    4 Mbit/s session at zero for as long as it was sent, and after (its
    partners, owed nothing, fell silent and ``drop_silent_receivers`` took
    the group for a path that is down).  A SACK that acknowledges nothing is
    no ACK (RFC 9293 3.10.7.4: only an ACK of new data moves the window);
    the time is ``drop_silent_receivers``'s (ours).
    """

    COUNTERS = ("stalled_drops", "refused_sacks")
    STALL_MIN = 2.0
    STALL_RTTS = 4.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.progress_at: dict[int, float] = {}  # when each receiver last acknowledged new data
        self.held_out: dict[int, int] = {}  # dropped stalled receiver -> first packet sent after
        self.progress_rtt: dict[int, float] = {}  # each receiver's srtt when it last acknowledged new data

    def _on_sack(self, m: RlaSack, src: Any, now: float) -> None:
        after = self.held_out.get(m.rcvr_id)
        if after is not None:
            top = max([m.cum_ack] + [e - 1 for _s, e in m.blocks])
            if top < after:
                self.refused_sacks += 1
                return
            del self.held_out[m.rcvr_id]
        super()._on_sack(m, src, now)

    def _take_acks(self, r: _Receiver, newly: list[int], now: float) -> None:
        if newly or r.rid not in self.progress_at:
            self.progress_at[r.rid] = now
        if newly and r.rtt.srtt is not None:
            self.progress_rtt[r.rid] = r.srtt
        super()._take_acks(r, newly, now)

    def stall_after(self, r: _Receiver) -> float:
        """The stall time, from the srtt r had when it last acknowledged new
        data: an echo in a SACK of nothing new is no sample (RFC 7323 4.3), and
        a stale one would stretch the time as long as the liar likes."""
        rtt = self.progress_rtt.get(r.rid)
        if rtt is None:
            rtt = max(self.progress_rtt.values(), default=r.srtt)
        return max(self.STALL_MIN, self.STALL_RTTS * rtt)

    def _stalled_since(self, r: _Receiver, now: float) -> float | None:
        """Since when r owes a packet without acknowledging anything new; None: it does not."""
        owed = next((o.first_sent for s, o in self.out.items() if not r.sb.acked(s)), None)
        if owed is None:
            return None
        return max(self.progress_at.get(r.rid, now), owed)

    def _drop_silent(self, now: float) -> bool:
        dropped = super()._drop_silent(now)
        since = {r.rid: self._stalled_since(r, now) for r in self.rcvrs.values()}
        # Only a receiver still talking: a silent one is drop_silent_receivers' to judge.
        gone = [r.rid for r in self.rcvrs.values()
                if since[r.rid] is not None and now - since[r.rid] > self.stall_after(r)  # type: ignore[operator]
                and now - r.last_heard <= self.stall_after(r)]
        if not gone:
            return dropped
        moving = [r for r in self.rcvrs.values() if r.rid not in gone
                  and (since[r.rid] is None or now - since[r.rid] <= self.stall_after(r) / 2)]
        if not moving:
            return dropped  # the whole group waits: the path, not one receiver
        first = min(since[rid] for rid in gone)  # type: ignore[type-var]
        for rid in gone:
            self.held_out[rid] = self.next_seq
            self.progress_at.pop(rid, None)
            self.progress_rtt.pop(rid, None)
        self.stalled_drops += len(gone)
        self._forget(gone)
        self._dropped_since(first)  # type: ignore[arg-type]
        return True
class RttFairIncrease(Sender):
    """The window grows (R_max / R_c)^2 times faster in congestion avoidance,
    R_max the group's largest srtt and R_c the srtt of the receivers whose
    signals cut the window (a moving average over cuts), R_max / R_c at most
    MAX_SPREAD.

    The paper proves RLA fair for receivers with equal round trips: the window
    is acknowledged by every receiver, so it is sent once per R_max, while the
    TCP flow beside the troubled receiver sends its own once per R_c.  With
    the same loss rate behind a shared queue, both windows settle at the same
    size and the session takes R_c / R_max of the TCP flow (0.37-0.43 on a
    tree whose other branch had 2.7 times the round trip).  An AIMD window's
    size goes as the square root of its increase per round, so (R_max/R_c)^2
    per round of R_max gives a window R_max/R_c times TCP's: TCP's rate at
    the troubled receiver's round trip (the compensation of TCP Hybla,
    RFC-less but standard for RTT fairness; ours here, measured on the tree
    design): the session's rate then grows by 1/R_c^2 packets per second
    per second, as the TCP flow's does.  Equal round trips leave the paper's increase unchanged.
    """

    #: At most this spread is compensated (64 times the increase per round,
    #: which is then TCP's growth in packets per second per second at R_c):
    #: a stale or wild srtt cannot make the window run away.
    MAX_SPREAD = 8.0
    #: Weight of the latest cut's round trip in R_c.
    CUT_RTT_GAIN = 0.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.signal_srtt: float | None = None  # the srtt of the receiver that signalled last
        self.cut_srtt: float | None = None  # R_c

    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        if r.rtt.srtt is not None:
            self.signal_srtt = r.rtt.srtt
        super()._congestion(r, now, lost, by_timeout)

    def _cut(self, now: float) -> None:
        super()._cut(now)
        if self.signal_srtt is not None:
            self.cut_srtt = ewma(self.cut_srtt, self.signal_srtt, self.CUT_RTT_GAIN)

    def rtt_spread(self) -> float:
        """R_max / R_c, between 1 and MAX_SPREAD (1 before the first cut)."""
        if self.cut_srtt is None or not self.rcvrs:
            return 1.0
        return min(self.MAX_SPREAD, max(1.0, self.largest_srtt / self.cut_srtt))

    def _acked_by_all(self, s: int, now: float) -> None:
        window = self.cwnd
        avoiding = not self.in_recovery and window >= self.ssthresh
        super()._acked_by_all(s, now)
        if avoiding:
            self.cwnd += (self.rtt_spread() ** 2 - 1.0) / window


def _rule(name: str, cls: type, summary: str, reason: str, receiver: type | None = None,
          requires: tuple[str, ...] = ()) -> Rule:
    mixins = {_S: cls} if issubclass(cls, Sender) else {_R: cls}
    if receiver is not None:
        mixins[_R] = receiver
    return Rule(name, summary, reason, mixins, requires)


_OURS = "ours, see docs/protocols/rla.md#rules"
_RULES = (
    _rule("one_draw_per_loss", OneDrawPerLoss, "one random draw per lost packet, not per signal", _OURS),
    _rule("one_cut_per_window", OneCutPerWindow, "a loss sent before the last cut does not cut again",
          "RFC 6582 3.2, RFC 6675 5"),
    _rule("one_rtt_congestion_period", OneRttCongestionPeriod, "rule 2's period is one srtt, not two", _OURS),
    _rule("tcp_cut_floor", TcpCutFloor, "a cut leaves at least two packets", "RFC 5681 eq. 4, 3.2"),
    _rule("rto_marks_all", RtoMarksAll, "a timeout marks every unacknowledged packet lost",
          "RFC 5681 3.1, RFC 6675 5.1"),
    _rule("rto_holds_ssthresh", RtoHoldsSsthresh, "a second timeout of a packet holds ssthresh",
          "RFC 5681 3.1"),
    _rule("join_at_window_edge", JoinAtWindowEdge, "late joiners and restarts start at the window's edge",
          "RFC 3208 (PGM late join)", receiver=JoinAtWindowEdgeReceiver),
    _rule("drop_silent_receivers", DropSilentReceivers, "a receiver silent while it owes an ACK is dropped",
          _OURS),
    _rule("undo_dead_cuts", UndoDeadCuts, "a dropped receiver's cuts are undone", "RFC 4015 3.1",
          requires=("drop_silent_receivers",)),
    _rule("one_repair_per_loss", OneRepairPerLoss, "one multicast repair per lost packet", _OURS),
    _rule("detect_lost_repairs", DetectLostRepairs, "a lost repair is found by a later packet",
          "RFC 8985 6.2"),
    _rule("tail_loss_probe", TailLossProbe, "a tail loss is found by a probe, not the timeout", "RFC 8985 7"),
    _rule("spread_hellos", SpreadHellos, "receivers' hellos are spread in time", _OURS),
    _rule("spread_acks", SpreadAcks, "a large group's SACKs are spread over the data gap", _OURS,
          receiver=SpreadAcksReceiver, requires=("thin_acks",)),
    _rule("thin_acks", ThinAcks, "receivers delay their SACKs as TCP's ACKs", "RFC 5681 4.2",
          receiver=ThinAcksReceiver),
    _rule("spread_pairs", SpreadPairs, "behind spread SACKs data leaves in pairs", "RFC 5681 4.2",
          requires=("spread_acks",)),
    _rule("one_clock", OneClock, "a large group's window is sent on one receiver's SACKs", _OURS),
    _rule("stalled_receivers", StalledReceivers, "a receiver that acknowledges nothing new is dropped",
          "RFC 9293 3.10.7.4; ours"),
    _rule("rtt_fair_increase", RttFairIncrease,
          "the window grows (R_max/R_c)^2 per round: TCP's rate at the troubled receivers' round trip", _OURS),
)
#: ``paper``: the published algorithm; ``default``: every rule but those of
#: ``_NOT_DEFAULT`` (each earns its place on the friendliness grid or is an
#: RFC's; the ablation measures it).
#: Rules outside ``default``: ``rtt_fair_increase`` brings the tree design's
#: limiting branch into the TFRC bound, but its place in ``default`` waits for
#: the dumbbell grid's targets measured with it on draws off the grid.
_NOT_DEFAULT = ("rtt_fair_increase",)
RULES = RuleBook("rla", rules=_RULES, profiles={
    PAPER: (), DEFAULT: tuple(r.name for r in _RULES if r.name not in _NOT_DEFAULT)})
