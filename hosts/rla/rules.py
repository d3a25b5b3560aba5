"""RLA's named rules (:class:`hosts.rules.Registrar`): a docstring says what the rule changes
and why in short; the reason in full (an RFC section, or ours, measured) is ``docs/protocols/rla.md#rules``.
"""

from __future__ import annotations

import math
import random
from typing import Any

from p4mcc.hosts.reliable import CutLog, ResumableStream, handover_window, reliability_bound
from p4mcc.hosts.rla.sender import RlaSender, _Receiver
from p4mcc.hosts.rla.receiver import HELLO_INTERVAL, RlaReceiver
from p4mcc.hosts.rules import Registrar, at_start, timer
from p4mcc.hosts.rtt import RttSpread, ewma
from p4mcc.hosts.stampwindow import StampEcho, StampWindow, short_queue
from p4mcc.hosts.tcp_rules import DELAYED_ACK_PACKETS, DELAYED_ACK_TIMEOUT, DUPTHRESH, LEAST_SSTHRESH, ack_at_once
from p4mcc.hosts.tfrc import tcp_rate
from p4mcc.hosts.wire import Flags, RlaData, RlaSack, RlaSackFlags, Share, Stamp

Sender = RlaSender  # the mixins' base: the hooks they override exist there
Receiver = RlaReceiver
_OURS = "ours, see docs/protocols/rla.md#rules"
rule = Registrar("rla", _OURS)
#: Seconds between the rules' housekeeping (:class:`_Housekeeping`).
TICK = 0.1


class _Housekeeping(Sender):
    """The periodic work of the rules that have some: every TICK resolve a pending loss event
    (``one_draw_per_loss``), choose the clock (``one_clock``) and drop silent receivers (the
    ``_drop_silent`` chain).  The paper's sender has no such work, so it runs no such timer."""

    @at_start
    def _first_tick(self, now: float) -> None:
        self.set_timer("tick", now + TICK)

    @timer("tick")
    def _tick(self, now: float) -> None:
        self._resolve_event(now)
        self._choose_clock()
        if self._drop_silent(now):
            self._pump(now)
        if not self.done:
            self.set_timer("tick", now + TICK)

    def _drop_silent(self, now: float) -> bool:
        """Drop receivers that stopped acknowledging; True when any was (the rules that drop fill it)."""
        return False


# Membership ------------------------------------------------------------------
@rule("leave_report", "a leaving receiver says so and the sender forgets it at once",
      "TFMCC paper 2.2 and 4.2 (a leave is normally signalled, a timeout is the backup); RFC 3550 6.6")
class LeaveReport(Sender):
    """A SACK flagged ``LEAVING`` removes its receiver at once, as TFMCC's leave report and RTCP's
    BYE do; without it the window waits on the leaver until a silence rule drops it.  Nothing else
    in that SACK is taken (a SACK naming another's id never gets here: the core refuses it)."""

    COUNTERS = ("leaves",)

    def _membership(self, m: RlaSack, now: float) -> bool:
        if not m.sflags & RlaSackFlags.LEAVING:
            return super()._membership(m, now)
        if m.rcvr_id in self.rcvrs:
            self.leaves += 1
            self._forget([m.rcvr_id])
        return True


@rule("leave_report")
class LeaveReportReceiver(Receiver):
    """The receiver's half: its last word, on leaving, is a SACK flagged ``LEAVING``."""

    def _goodbye(self, now: float) -> None:
        super()._goodbye(now)
        self._sack(0, now, hello=True, sflags=RlaSackFlags.LEAVING)


# Congestion response ---------------------------------------------------------
@rule("one_draw_per_loss", "one random draw per lost packet, not per signal")
class OneDrawPerLoss(_Housekeeping):
    """One draw per lost packet, not per signal, once the troubled receivers reported past it:
    cut with probability k / num_trouble_rcvr, k the troubled receivers that lost it (ours)."""

    COUNTERS = ("events",)
    #: A loss event awaiting its draw: (lowest lost packet, highest, opened at).
    event: tuple[int, int, float] | None = None
    #: The lost packets of the last event drawn: later signals for them are absorbed.
    drawn: tuple[int, int] = (0, 0)

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
        k = max(1, sum(1 for r in troubled if lo in r.lost_pending or lo in r.rexmit_at
                       or (r.sb.highest > lo and not r.sb.acked(lo))))
        self._draw(min(1.0, k / len(troubled)), now)

    def _cut(self, now: float) -> None:
        super()._cut(now)
        self.event = None  # a forced cut answers the open event

    def _timeout_response(self, now: float, oldest: int, cwnd_before: float) -> None:
        super()._timeout_response(now, oldest, cwnd_before)
        if self.event is not None:
            self.drawn = (self.event[0], self.event[1])
            self.event = None


@rule("one_cut_per_window", "a loss sent before the last cut does not cut again", "RFC 6582 3.2, RFC 6675 5")
class OneCutPerWindow(Sender):
    """A signal whose losses were all sent before the last cut is absorbed (one
    reduction per window, RFC 6582 3.2, RFC 6675 5); never one by timeout."""

    COUNTERS = ("absorbed_signals",)

    def _cut_already_answers(self, lost: list[int] | None, by_timeout: bool) -> bool:
        if lost and not by_timeout and max(lost) <= self.cut_seq:
            self.absorbed_signals += 1
            return True
        return super()._cut_already_answers(lost, by_timeout)


@rule("one_rtt_congestion_period", "rule 2's period is one srtt, not two")
class OneRttCongestionPeriod(Sender):
    """Rule 2's period is one srtt_i, not two, as TCP's recovery (ours)."""

    cperiod_rtts = 1.0


@rule("tcp_cut_floor", "a cut leaves at least two packets", "RFC 5681 eq. 4, 3.2")
class TcpCutFloor(Sender):
    cut_floor = LEAST_SSTHRESH


@rule("rto_holds_ssthresh", "a second timeout of a packet holds ssthresh", "RFC 5681 3.1")
class RtoHoldsSsthresh(Sender):
    rto_seq: int | None = None  # the oldest packet at the last timeout response

    def _timeout_ssthresh(self, oldest: int, cwnd_before: float) -> None:
        if oldest != self.rto_seq:
            super()._timeout_ssthresh(oldest, cwnd_before)
        self.rto_seq = oldest


# Group membership --------------------------------------------------------------
@rule("join_at_window_edge", "late joiners and restarts start at the window's edge", "RFC 3208 (PGM late join)")
class JoinAtWindowEdge(Sender):
    """A late joiner or a restarted receiver starts at the window's trailing edge (RFC 3208's
    late join), its first packet sent to it alone flagged ``SYNC``, not owed every packet."""

    COUNTERS = ("restarts", "sync_resends")  # known receivers that came back with no state; SYNCs sent again

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.joined: list[tuple[float, int, int]] = []  # (time, receiver id, first packet)
        self.sync_at: dict[int, float] = {}  # receiver id -> when its SYNC was last sent again
        self.join_at: dict[int, int] = {}  # receiver id -> its first packet, until it acknowledges it

    def _synced(self, r: _Receiver) -> bool:
        """Whether r acknowledged its first packet (a receiver from the start has nothing to wait for)."""
        return r.rid not in self.join_at

    def _forget(self, rids: list[int], since: float | None = None) -> None:
        for rid in rids:
            self.join_at.pop(rid, None)
        super()._forget(rids, since)

    def _on_sack(self, m: RlaSack, src: Any, now: float) -> None:
        super()._on_sack(m, src, now)
        # Its SACK holds the join packet, come as plain data: the SYNC was lost and no repair of that
        # packet is owed, so its stream would never start. Sent again, once per round trip.
        r = self.rcvrs.get(m.rcvr_id)
        first = self.join_at.get(m.rcvr_id)
        if r and first is not None and r.sb.acked(first) and now - self.sync_at.get(r.rid, -math.inf) >= r.srtt:
            self.sync_at[r.rid] = now
            self._send_sync(r, now)
            self.sync_resends += 1

    def _send_sync(self, r: _Receiver, now: float) -> None:
        """The joiner's first packet, to it alone, marking where its stream starts."""
        self.send(r.addr, self._data(self.join_at[r.rid], now, Flags.RETRANSMIT | Flags.SYNC))
        self.ucast_rexmits += 1

    def _admit(self, m: RlaSack, src: Any, now: float) -> _Receiver:
        r = self.rcvrs.get(m.rcvr_id)
        if self.started and self.next_seq > 1 and m.cum_ack == 0:
            if r is not None and self._synced(r) and r.sb.cum_ack > 0:
                # A cumulative ACK never goes back: a new incarnation.
                self.restarts += 1
                self._forget([r.rid])
                r = None
            if r is None:
                self._join(m.rcvr_id, src, now)
        r = super()._admit(m, src, now)
        if not self._synced(r) and m.cum_ack >= self.join_at[r.rid]:
            del self.join_at[r.rid]
        return r

    def _join(self, rid: int, src: Any, now: float) -> None:
        first = min(self.out) if self.out else self.next_seq - 1
        r = self._receiver(rid, src, first - 1)
        self.join_at.pop(rid, None)
        if first > 1:
            self.join_at[rid] = first
            self._mark_lost(r, first, -math.inf)
        self.joined.append((now, rid, first))

    def _repair_joiners(self, s: int, want: list[_Receiver], now: float) -> list[_Receiver]:
        for r in want:
            if self.join_at.get(r.rid) == s:
                self._send_sync(r, now)
        return super()._repair_joiners(s, [r for r in want if self.join_at.get(r.rid) != s], now)


@rule("join_at_window_edge")
class JoinAtWindowEdgeReceiver(Receiver):
    """The receiver's half: a ``SYNC`` packet marks where its stream starts."""

    def _note_arrival(self, msg: RlaData, now: float) -> None:
        super()._note_arrival(msg, now)
        if msg.flags & Flags.SYNC:
            for d in self.buf.rebase(msg.seq - 1):
                self.emit(d)


@rule("resume_stream", "a restarted sender resumes the stream where its receivers are")
class ResumeStream(ResumableStream, Sender):
    """A sender whose first SACK reports data was restarted mid-session (its host rebooted): it
    resumes after the lowest cumulative ACK heard before it starts, and a receiver found behind
    that is owed the packets between, up to a buffer's worth (rule 5 keeps any receiver within
    one).  The stream outlives the sender's process, as a file does; none of it is lost (ours).

    The point it resumes at is what the receivers show together, not one receiver's word: from
    the first report of data it listens ``RESUME_GATHER_S`` (a hello interval, in which every live
    receiver says hello once, and a quarter for the paths' difference) before its first packet, and
    the lowest cumulative ACK heard wins.  A forged ACK claiming data never sent, heard first, is
    outbid by the honest receivers' hellos instead of making the stream skip past them."""

    RESUME_GATHER_S = 1.25 * HELLO_INTERVAL
    _claims_since: float | None = None  # the first report of data a restarted sender heard

    def _on_sack(self, m: RlaSack, src: Any, now: float) -> None:
        if self._resume_after(m.cum_ack):
            for r in self.rcvrs.values():
                r.sb.start_after(self._resume_floor())
            if self._claims_since is None:
                self._claims_since = now
                self.set_timer("resume", now + self.RESUME_GATHER_S)
        super()._on_sack(m, src, now)

    def _ready(self) -> bool:
        since = self._claims_since
        if since is not None and self.now < since + self.RESUME_GATHER_S:
            return False  # still hearing where the receivers are
        return super()._ready()

    @timer("resume")
    def _gathered(self, now: float) -> None:
        """The gathering is over: the first packets go."""
        self._pump(now)

    def _receiver(self, rid: int, src: Any, cum_ack: int = 0) -> _Receiver:
        if rid in self.rcvrs or not self.resumed_from:
            return super()._receiver(rid, src, cum_ack)
        # A receiver behind the resumed stream: what it lacks of the crashed sender's packets is
        # repaired now, with no congestion signal; what the resumed stream sent is on its way.
        r = super()._receiver(rid, src, max(cum_ack, self._resume_floor()))
        for s in range(r.sb.cum_ack + 1, self.resumed_from):
            self._mark_lost(r, s, -math.inf)
        return r


@rule("resume_stream")
class ResumeStreamReceiver(Receiver):
    """The receiver's half: after a data silence of ``HELLO_INTERVAL`` it says hello again, so a
    restarted sender learns it and where its stream stands."""

    last_data = -math.inf

    def _note_arrival(self, msg: RlaData, now: float) -> None:
        super()._note_arrival(msg, now)
        if self.last_data == -math.inf:
            self.set_timer("quiet", now + HELLO_INTERVAL)
        self.last_data = now

    @timer("quiet")
    def _quiet(self, now: float) -> None:
        """A hello after ``HELLO_INTERVAL`` without data; else look again that long after the last."""
        if now - self.last_data >= HELLO_INTERVAL - 1e-9:
            self._sack(0, now, hello=True)
            self.set_timer("quiet", now + HELLO_INTERVAL)
        else:
            self.set_timer("quiet", self.last_data + HELLO_INTERVAL)


@rule("drop_silent_receivers", "a receiver silent while it owes an ACK is dropped")
class DropSilentReceivers(_Housekeeping):
    """A receiver silent for max(DEAD_MIN, DEAD_RTTS * srtt_i) while it owes an ACK is dropped, else
    rules 4 and 5 wait for it for good (ours); nobody while the whole group is: that is the path."""

    DEAD_MIN = 2.0
    DEAD_RTTS = 4.0
    last_feedback = -math.inf  # when any receiver was last heard
    heard_again = -math.inf  # first word after the whole group fell silent

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dropped: list[tuple[float, int]] = []  # (time, receiver id)

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
        # A receiver that owes nothing is silent as normal.
        gone = [r.rid for r in self.rcvrs.values() if (owed := self._owed_since(r)) is not None
                and now - max(r.last_heard, owed, self.heard_again) > self.dead_after(r)]
        if not gone:
            return dropped
        if not any(r.rid not in gone and now - r.last_heard <= self.dead_after(r) / 2
                   for r in self.rcvrs.values()):
            return dropped  # all silent together: the path is down, not they
        self.dropped.extend((now, rid) for rid in gone)
        self._forget(gone, since=min(self.rcvrs[rid].last_heard for rid in gone))
        return True


@rule("undo_dead_cuts", "a dropped receiver's cuts are undone", "RFC 4015 3.1",
      requires=("drop_silent_receivers",))
class UndoDeadCuts(Sender):
    """The cuts since a dropped receiver was last heard were its silence, not
    congestion: undone as RFC 4015 3.1 undoes spurious ones."""

    COUNTERS = ("undone_cuts",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cuts = CutLog()

    def _cut(self, now: float) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        super()._cut(now)

    def _timeout_response(self, now: float, oldest: int, cwnd_before: float) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        super()._timeout_response(now, oldest, cwnd_before)

    def _forget(self, rids: list[int], since: float | None = None) -> None:
        super()._forget(rids, since)
        if since is not None:
            self.cwnd, self.ssthresh, n = self.cuts.undo_since(since, self.cwnd, self.ssthresh, self._pipe(),
                                                               self.p.initial_cwnd)
            self.undone_cuts += n


# Repairs -----------------------------------------------------------------------
@rule("one_repair_per_loss", "one multicast repair per lost packet")
class OneRepairPerLoss(Sender):
    """A repair waits until every receiver has the packet or is known to miss it, and a loss
    reported after a multicast repair waits for it (footnote 8's "hears from all"; ours)."""

    def _heard_all(self, s: int) -> bool:
        return all(r.sb.acked(s) or s in r.lost_pending or s in r.rexmit_at for r in self.rcvrs.values())

    def _awaits_repair(self, r: _Receiver, s: int, now: float) -> bool:
        o = self.out.get(s)
        if o is not None and now - o.mcast_at < r.srtt + DELAYED_ACK_TIMEOUT:
            r.rexmit_at[s] = o.mcast_at  # its RTO covers that repair's loss
            return True
        return super()._awaits_repair(r, s, now)


@rule("detect_lost_repairs", "a lost repair is found by a later packet", "RFC 8985 6.2")
class DetectLostRepairs(Sender):
    """A repair still missing when a packet sent srtt_i/4 after it arrived is
    lost and sent again (RFC 8985 6.2); it is no congestion signal."""

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


# Feedback ---------------------------------------------------------------------
@rule("spread_hellos", "receivers' hellos are spread in time")
class SpreadHellos(Receiver):
    """Hellos spread in time: receivers started together sent theirs in step (ours)."""

    HELLO_SPREAD = 0.1

    def _first_hello(self, now: float) -> None:
        self.set_timer("hello", now + self.rng.uniform(0, self.HELLO_SPREAD))

    def _hello_factor(self) -> float:
        return self.rng.uniform(0.5, 1.5)


@rule("spread_acks", "a large group's SACKs are spread over the data gap", requires=("thin_acks",))
class SpreadAcks(Sender):
    """From SPREAD_MIN_RECEIVERS receivers data is marked ``SPREAD_ACKS``: the
    SACKs one packet triggers must not fill the reverse queue at once (ours)."""

    #: Groups of at least this many receivers spread their SACKs (and send pairs).
    SPREAD_MIN_RECEIVERS = 8

    def _data_flags(self, flags: int) -> int:
        flags = super()._data_flags(flags)
        if len(self.rcvrs) >= self.SPREAD_MIN_RECEIVERS:
            flags |= Flags.SPREAD_ACKS
        return flags


@rule("thin_acks", "receivers delay their SACKs as TCP's ACKs", "RFC 5681 4.2")
class ThinAcks(Sender):
    def _data_flags(self, flags: int) -> int:
        return super()._data_flags(flags) | Flags.THIN_ACKS


@rule("thin_acks")
class ThinAcksReceiver(Receiver):
    """Delayed SACKs (RFC 5681 4.2, RFC 1122 4.2.3.2): every ``ACK_EVERY``
    packets or ``ACK_DELAY``; at once for a hole the sender can call lost, a
    filled hole or a SYNC.  The echo is the first packet's (RFC 7323 3.4)."""

    ACK_EVERY = DELAYED_ACK_PACKETS
    ACK_DELAY = DELAYED_ACK_TIMEOUT
    pending_echo: int | None = None  # send time of the first packet not yet acknowledged
    pending_since = 0.0
    told_lost = 0  # holes up to here were reported as detectable already

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Its own stream, so the hellos do not depend on this rule; packets since
        # the last SACK from a random offset, so receivers acknowledge different ones.
        self.ack_rng = random.Random(f"rla-ack-{self.cfg.seed}-{self.rid}")
        self.unacked = self.ack_rng.randrange(self.ACK_EVERY)

    @timer("ack")
    def _delayed_ack(self, now: float) -> None:
        """The ACK delay is over: the pending SACK goes (none pending: nothing to do)."""
        if self.pending_echo is not None:
            self._sack(self.pending_echo, now)

    def _acknowledge(self, msg: RlaData, now: float, new: bool, filled: bool) -> None:
        if self.pending_echo is None:
            self.pending_echo = msg.timestamp
            self.pending_since = now
        self.unacked += 1
        if not msg.flags & Flags.THIN_ACKS:
            self._sack(self.pending_echo, now)  # unmarked: the paper's SACK per packet
            return
        # A duplicate (a repair for another receiver, most likely) is no hurry.
        urgent = bool(msg.flags & Flags.SYNC) or (new and filled)
        if new and not filled:
            hole = self.buf.first_hole_above(self.told_lost)
            if hole is not None and hole + DUPTHRESH <= self.buf.highest:
                urgent = True  # rule 1 now lets the sender call this hole lost
                self.told_lost = self.buf.highest - DUPTHRESH
        when = self._sack_when(msg, now, ack_at_once(self.unacked, urgent, self.ACK_EVERY))
        t = self.timer_at("ack")
        if when <= now:
            self._sack(self.pending_echo, now)
        elif t is None or when < t:
            self.set_timer("ack", when)

    def _sack_when(self, msg: RlaData, now: float, at_once: bool) -> float:
        """When the SACK leaves: now, or ``ACK_DELAY`` after the first packet it acknowledges."""
        return now if at_once else self.pending_since + self.ACK_DELAY

    def _sack(self, echo_ts: int, now: float, hello: bool = False, sflags: int = 0) -> None:
        if not hello:  # a hello acknowledges no data: the count stays
            self.unacked = 0
            self.pending_echo = None
            self.cancel_timer("ack")
        super()._sack(echo_ts, now, hello, sflags)


@rule("spread_acks")
class SpreadAcksReceiver(ThinAcksReceiver):
    """A SACK of marked data waits its receiver's phase of the data gap, at most
    SERVICE_TIMES of the bottleneck's service time (the shortest spacing lately)."""

    #: A receiver's phase is drawn from [0, ACK_SPREAD).
    ACK_SPREAD = 1.0
    #: At most this many service times: some 30 SACKs pass the reverse queue in them.
    SERVICE_TIMES = 2.0
    #: Data packets per block of the running minimum spacing (this block and the last).
    SERVICE_BLOCK = 64
    #: The least service time believed (s): a late socket reader sees packets µs apart.
    SERVICE_FLOOR = 0.0005
    gap: float | None = None  # smoothed interval between data packets
    last_data_at: float | None = None
    _gap_min = _gap_min_before = math.inf
    _gaps_in_block = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.phase = self.ack_rng.uniform(0, self.ACK_SPREAD)

    def _note_arrival(self, msg: RlaData, now: float) -> None:
        super()._note_arrival(msg, now)
        if self.last_data_at is not None:
            g = now - self.last_data_at
            self.gap = g if self.gap is None else self.gap + (g - self.gap) / 8
            self._gap_min = min(self._gap_min, g)
            self._gaps_in_block += 1
            if self._gaps_in_block >= self.SERVICE_BLOCK:
                self._gap_min_before, self._gap_min, self._gaps_in_block = self._gap_min, math.inf, 0
        self.last_data_at = now

    def _sack_when(self, msg: RlaData, now: float, at_once: bool) -> float:
        if not msg.flags & Flags.SPREAD_ACKS:
            return super()._sack_when(msg, now, at_once)
        hold = self.ACK_DELAY / 2
        span = hold if self.gap is None else min(self.gap, hold)
        service = min(self._gap_min, self._gap_min_before)
        if service < math.inf:
            span = min(span, self.SERVICE_TIMES * max(service, self.SERVICE_FLOOR))
        return (now if at_once else self.pending_since + hold) + self.phase * span


@rule("spread_pairs", "behind spread SACKs data leaves in pairs", "RFC 5681 4.2; RFC 8985 7.2",
      requires=("spread_acks",))
class SpreadPairs(Sender):
    """While SACKs are spread, a lone freed packet waits for the next ACK, so data
    leaves in pairs as behind TCP's delayed ACKs (RFC 5681 4.2); not with < 2 out.
    It waits at most :data:`PAIR_WAIT_RTTS` of the largest srtt after the last SACK: a
    flight whose SACKs have not come by then was lost (RACK-TLP's probe timeout, RFC
    8985 7.2), so no ACK is coming, and the packet leaves as the probe whose SACK shows
    the losses, rather than wait for the retransmission timer and its backoff."""

    PAIR_WAIT_RTTS = 2.0

    def _new_data_limit(self, pipe: int) -> int:
        limit = super()._new_data_limit(pipe)
        if self._data_flags(0) & Flags.SPREAD_ACKS and pipe >= 2 and int(self.cwnd) - pipe == 1 and self.rcvrs:
            last_sack = max(r.last_heard for r in self.rcvrs.values())
            due = last_sack + self.PAIR_WAIT_RTTS * self.largest_srtt
            if self.now < due:
                self.set_timer("pair", due)
                return 0
        return limit

    @timer("pair")
    def _pair_due(self, now: float) -> None:
        """No SACK came for the probe timeout: the held packet leaves (``_pump`` sends it)."""
        self._pump(now)


# The acker's clock (pgmcc) -----------------------------------------------------------
@rule("acker_clock", "the window is clocked by the acker's SACKs and sent once per its round trip",
      "pgmcc (Rizzo, SIGCOMM 2000); " + _OURS, requires=("worst_path_listening",))
class AckerClock(_Housekeeping):
    """Once ``worst_path_listening`` has an acker, the window counts what the acker has not
    acknowledged and grows on its SACKs alone (pgmcc's acker clock, Rizzo 2000; ours), so the rate
    is the window over the acker's round trip, not over the longest one; a slow receiver costs
    buffer, not rate.  A new acker takes a window worth the old rate at its round trip, at most its
    equation's; an acker silent for ACKER_SILENCE_RTTS round trips while it owes data is passed over."""

    COUNTERS = ("acker_handovers", "silent_ackers")
    #: An acker owing data and silent this many of its round trips (plus a delayed ACK) is passed over.
    ACKER_SILENCE_RTTS = 3.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handovers: list[tuple[float, int | None, float]] = []  # (time, new acker, its window)
        #: Receivers admitted mid-stream, not yet measured -> [the last packet sent before their
        #: admission, 0 once they hold it; signals counted since]. Until they hold it their losses
        #: are of the backlog's repairs (a receiver back from an outage), and the first signal after
        #: closes an interval begun at admission or catch-up, not at a signal (censored, RFC 5348
        #: 6.3.1): the second is the first measured one.
        self.unmeasured: dict[int, list[int]] = {}
        self.repairs_out = 0  # repairs in flight to receivers other than the acker, as of this pump

    def equation_rate(self, r: _Receiver) -> float:
        """An unmeasured receiver reads as before its first signal."""
        return math.inf if r.rid in self.unmeasured else super().equation_rate(r)  # type: ignore[misc]

    def _receiver(self, rid: int, src: Any, cum_ack: int = 0) -> _Receiver:
        known = rid in self.rcvrs
        r = super()._receiver(rid, src, cum_ack)  # type: ignore[misc]
        if not known and self.packets_sent > 0:
            behind = r.sb.cum_ack < self.next_seq - 1
            self.unmeasured[rid] = [self.next_seq - 1 if behind else 0, 0]
        return r

    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        before = r.cperiod_start
        super()._congestion(r, now, lost, by_timeout)  # type: ignore[misc]
        m = self.unmeasured.get(r.rid)
        if m is not None and not m[0] and r.cperiod_start != before:  # a signal rule 2 counted
            m[1] += 1
            if m[1] >= 2:
                del self.unmeasured[r.rid]

    def clock_receiver(self) -> _Receiver | None:
        """The receiver whose SACKs clock the window (None: every receiver's, the paper's)."""
        acker = getattr(self, "acker", None)
        return self.rcvrs.get(acker) if acker is not None else None

    def paced_srtt(self) -> float:
        """The acker's round trip, once it clocks the window."""
        r = self.clock_receiver()
        return r.srtt if r is not None else super().paced_srtt()  # type: ignore[misc]

    def acker_silent(self, r: _Receiver, now: float) -> bool:
        """r owes data and has said nothing for ACKER_SILENCE_RTTS of its round trips."""
        owed = self._owed_since(r)
        if owed is None:
            return False
        bound = max(self.ACKER_SILENCE_RTTS * r.srtt, r.srtt + 4 * r.rtt.rttvar) + DELAYED_ACK_TIMEOUT
        return now - max(r.last_heard, owed) > bound

    def _choose_acker(self) -> None:
        old = getattr(self, "acker", None)
        super()._choose_acker()  # type: ignore[misc]
        cur, before = self.clock_receiver(), self.rcvrs.get(old) if old is not None else None
        if (cur is not None and before is not None and cur is not before and self.acker_silent(cur, self.now)
                and not self.acker_silent(before, self.now)):
            self.acker = old  # type: ignore[attr-defined]  # a silent receiver's old rate elects nobody
        self._pass_over_silent(old)

    def _pass_over_silent(self, old: int | None) -> None:
        """A silent acker gives the clock to the lowest equation rate among the others that talk."""
        now = self.now
        cur = self.clock_receiver()
        if cur is not None and self.acker_silent(cur, now):
            self.silent_ackers += 1
            talking = [r for r in self.rcvrs.values() if r is not cur and not self.acker_silent(r, now)]
            best = min(talking, key=lambda r: (self.equation_rate(r), -r.srtt), default=None)  # type: ignore[attr-defined]
            self.acker = best.rid if best is not None else None  # type: ignore[attr-defined]
        if getattr(self, "acker", None) != old:
            self._hand_over(self.rcvrs.get(old) if old is not None else None, now)

    def _hand_over(self, old: _Receiver | None, now: float) -> None:
        """The old rate at the new acker's round trip, at most its equation's window: the pipe is now
        what the new acker lacks, so no burst exceeds this window."""
        new = self.clock_receiver()
        if new is None or old is None or old.rtt.srtt is None or new.rtt.srtt is None:
            self.handovers.append((now, getattr(self, "acker", None), self.cwnd))
            return
        eq = self.equation_rate(new) * new.srtt / self.p.packet_size  # type: ignore[attr-defined]
        self.cwnd = handover_window(self.cwnd, old.srtt, new.srtt, eq, self.cut_floor)
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd)
        self.acker_handovers += 1
        self.handovers.append((now, new.rid, self.cwnd))

    def _choose_clock(self) -> None:
        """The group changed (or the periodic choice): a forgotten acker's clock goes to the lowest
        equation rate among those that talk, and a forgotten receiver is no longer unmeasured."""
        super()._choose_clock()
        for rid in [x for x in self.unmeasured if x not in self.rcvrs]:
            del self.unmeasured[rid]
        old = getattr(self, "acker", None)
        if old is not None and old not in self.rcvrs:
            self.acker = None  # type: ignore[attr-defined]
            self._pass_over_silent(None)
            self._choose_acker()

    def _drop_silent(self, now: float) -> bool:
        self._pass_over_silent(getattr(self, "acker", None))
        return super()._drop_silent(now)

    def _take_acks(self, r: _Receiver, newly: list[int], now: float) -> None:
        super()._take_acks(r, newly, now)
        m = self.unmeasured.get(r.rid)
        if m is not None and m[0] and r.sb.cum_ack >= m[0]:
            m[0] = 0  # caught up: its signals are measured afresh from here (ours)
            r.interval_avg, r.last_signal_pkts = None, self.packets_sent
        if r is not self.clock_receiver():
            return
        if self.recover is not None and r.sb.cum_ack >= self.recover:
            self.recover = None  # fast recovery ends when the acker has the window
        for _ in newly:
            self._grow(now)

    def _acked_by_all(self, s: int, now: float) -> None:
        if self.clock_receiver() is None:
            super()._acked_by_all(s, now)

    def _pipe(self) -> int:
        r = self.clock_receiver()
        if r is None:
            return super()._pipe()
        # Counted here, where each pump starts: repairs in flight to the other receivers.
        self.repairs_out = sum(1 for x in self.rcvrs.values() if x is not r
                               for q in x.rexmit_at if q not in x.lost_pending and not x.sb.acked(q))
        return sum(1 for s in self.out if not r.sb.acked(s) and s not in r.lost_pending)

    def _retransmit(self, s: int, now: float) -> bool:
        """A repair the acker does not lack is outside its pipe: at most a window of them is in flight
        (RFC 6675 4's pipe counts retransmissions), so a receiver back from an outage is repaired at the
        window's pace and every SACK of its does not send another window."""
        r = self.clock_receiver()
        if r is None or (s in r.lost_pending and not r.sb.acked(s)):
            return super()._retransmit(s, now)  # type: ignore[misc]
        if self.repairs_out >= int(self.cwnd):
            return False
        sent = super()._retransmit(s, now)  # type: ignore[misc]
        self.repairs_out += sent
        return sent

    def _clocked_elsewhere(self, rid: int, now: float) -> bool:
        """Each SACK first judges the clock again: one from another receiver while the acker owes
        data and is silent passes the acker over.  Then the pipe is the acker's: any SACK may send
        what it frees."""
        if rid != getattr(self, "acker", None):
            self._pass_over_silent(getattr(self, "acker", None))
        if self.clock_receiver() is not None:
            return False
        return super()._clocked_elsewhere(rid, now)


@rule("reliability_window", "what the slowest receiver lacks is bounded by the rate times the longest round trip",
      "pgmcc (Rizzo, SIGCOMM 2000); " + _OURS, requires=("acker_clock",))
class ReliabilityWindow(Sender):
    """Under the acker's clock, new data waits while the oldest packet some receiver lacks is more
    than RELIABILITY_RTTS x rate x the largest srtt behind (a round for the data, one for its repair),
    and never more than ``send_buffer`` (rule 5 keeps the receivers' buffers); the bound grows as
    the ratio of the longest round trip to the acker's (ours)."""

    RELIABILITY_RTTS = 2.0

    def reliability_window(self) -> int:
        """Packets the slowest receiver may lack: the rate times RELIABILITY_RTTS largest srtts."""
        clock = self.clock_receiver()  # type: ignore[attr-defined]
        if clock is None:
            return self.p.send_buffer
        return reliability_bound(self.cwnd, self.largest_srtt, clock.srtt, self.RELIABILITY_RTTS, self.p.send_buffer)

    def _new_data_limit(self, pipe: int) -> int:
        return min(super()._new_data_limit(pipe), self.min_last_ack + self.reliability_window())


@rule("one_clock", "a large group's window is sent on one receiver's SACKs")
class OneClock(_Housekeeping):
    """From CLOCK_MIN_RECEIVERS receivers the window is sent on the SACKs of one,
    the largest srtt's (section 3.1: "similar to the TCP senders"; ours); any
    SACK sends while that clock is silent or slow."""

    CLOCK_MIN_RECEIVERS = 8
    #: Receivers behind one queue differ by a few per cent: a clock following
    #: them would be the latest of n again.
    CLOCK_SWITCH = 1.25
    #: A freed packet waits at most 1/16 of a round trip for the clock.
    CLOCK_LAG = 16
    clock: int | None = None  # the receiver whose SACKs send; None: every SACK

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.last_sack: dict[int, float] = {}  # receiver id -> when its last SACK came
        self.sack_gap: dict[int, float] = {}  # receiver id -> the smoothed gap between its SACKs

    def _admit(self, m: RlaSack, src: Any, now: float) -> _Receiver:
        r = super()._admit(m, src, now)
        if r.rid in self.last_sack:
            self.sack_gap[r.rid] = ewma(self.sack_gap.get(r.rid), now - self.last_sack[r.rid], 1 / 8)
        self.last_sack[r.rid] = now
        return r

    def _forget(self, rids: list[int], since: float | None = None) -> None:
        for rid in rids:  # a receiver admitted again starts with no SACK seen
            self.last_sack.pop(rid, None)
            self.sack_gap.pop(rid, None)
        super()._forget(rids, since)

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
        if clock.sb.highest >= self.next_seq - 1:
            return False  # it holds all that was sent: no SACK of its own is coming
        gap = self.sack_gap.get(clock.rid)
        if gap is None or gap > clock.srtt / self.CLOCK_LAG:
            return False  # waiting for its next SACK would stretch the round trip
        return now - clock.last_heard <= DELAYED_ACK_TIMEOUT


# Feedback a receiver cannot abuse -------------------------------------------------
@rule("stalled_receivers", "a receiver that acknowledges nothing new is dropped", "RFC 9293 3.10.7.4; ours")
class StalledReceivers(_Housekeeping):
    """A receiver that talks but acknowledges nothing new for max(STALL_MIN, STALL_RTTS * srtt_i)
    while it owes a packet and the rest move is dropped; its SACKs are refused until one acknowledges
    a packet sent after the drop (only an ACK of new data moves the window, RFC 9293 3.10.7.4; ours)."""

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
        """From r's srtt at its last new ACK: an echo in a SACK of nothing new
        is no sample (RFC 7323 4.3), else a liar stretches the time."""
        rtt = self.progress_rtt.get(r.rid)
        if rtt is None:
            rtt = max(self.progress_rtt.values(), default=r.srtt)
        return max(self.STALL_MIN, self.STALL_RTTS * rtt)

    def _drop_silent(self, now: float) -> bool:
        dropped = super()._drop_silent(now)
        # Since when each receiver owes a packet without acknowledging anything new (None: owes none).
        since = {r.rid: None if (owed := self._owed_since(r)) is None else max(self.progress_at.get(r.rid, now), owed)
                 for r in self.rcvrs.values()}
        # Only a receiver still talking: a silent one is drop_silent_receivers' to judge.
        gone = [r.rid for r in self.rcvrs.values()
                if since[r.rid] is not None and now - since[r.rid] > self.stall_after(r)  # type: ignore[operator]
                and now - r.last_heard <= self.stall_after(r)]
        if not gone:
            return dropped
        if not any(r.rid not in gone and (since[r.rid] is None or now - since[r.rid] <= self.stall_after(r) / 2)
                   for r in self.rcvrs.values()):
            return dropped  # the whole group waits: the path, not one receiver
        first = min(since[rid] for rid in gone)  # type: ignore[type-var]
        for rid in gone:
            self.held_out[rid] = self.next_seq
            self.progress_at.pop(rid, None)
            self.progress_rtt.pop(rid, None)
        self.stalled_drops += len(gone)
        self._forget(gone, since=first)  # type: ignore[arg-type]
        return True


# Rules that read the congestion stamp (docs/stamp.md; profile ``stamped``) ----------
class _StampView(Sender):
    """The group's path as the receivers' last echoes say: worst queue code,
    tightest spare code; ``None`` unless every receiver's echo is stamped."""

    #: Spare below this share of the session's own rate is none: a port's rate
    #: window and the stamp's scale leave a few per cent of a full link "spare".
    SPARE_FLOOR = 0.125

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.echoes: dict[int, int] = {}  # receiver id -> its last SACK's stamp byte

    def _note_echo(self, m: RlaSack) -> None:
        self.echoes[m.rcvr_id] = m.stamp
        super()._note_echo(m)

    def short_queue_spare(self) -> float | None:
        """The tightest spare rate (bit/s) while every path's queue is short; None otherwise."""
        path = StampWindow()  # the receivers' echoes as one window: stamped only if every one is
        for rid in self.rcvrs:
            path.add(self.echoes.get(rid, Stamp.NOT_STAMPED))
        if not short_queue(path.queue_s(), self.largest_srtt):
            return None
        spare = path.spare_bps() or 0.0
        own = self.cwnd * 8.0 * self.p.packet_size / self.paced_srtt()
        return spare if spare >= self.SPARE_FLOOR * own else 0.0


@rule("stamp_climb", "under a short stamped queue, take half the spare rate per round",
      requires=("stamp_echo",))
class StampClimb(_StampView):
    """While every path's queue is short and rate is spare, the window takes SPARE_SHARE of the
    tightest spare rate for one round trip of the window (``paced_srtt``), once per CLIMB_RTTS largest
    srtts (RFC 4782's Quick-Start rate, RCP's minimum along the path; ours); TCP's full queue or an
    unstamped path never climbs."""

    COUNTERS = ("stamp_climbs",)
    SPARE_SHARE = 0.5
    #: Round trips between climbs: the last one shows in the echoes a round trip later.
    CLIMB_RTTS = 2.0
    climbed_at = -math.inf

    def _sack_window(self, now: float) -> None:
        super()._sack_window(now)
        spare = self.short_queue_spare()
        if spare and not self.in_recovery and now - self.climbed_at >= self.CLIMB_RTTS * self.largest_srtt:
            self.cwnd += self.SPARE_SHARE * spare * self.paced_srtt() / (8.0 * self.p.packet_size)
            self.climbed_at = now
            self.stamp_climbs += 1


@rule("stamp_hold", "under a short stamped queue with nothing spare, the window holds",
      requires=("stamp_echo",))
class StampHold(_StampView):
    """While every path's queue is short and nothing is spare, rule 4 does not grow the window: the
    link is full, growth only builds a queue (ABC's brake; ours); a long queue grows as default."""

    COUNTERS = ("stamp_holds",)

    def _grow(self, now: float) -> None:
        if self.short_queue_spare() == 0.0:
            self.stamp_holds += 1
            return
        super()._grow(now)


@rule("share_window", "before the first cut the window starts at the path's fair share and slow start "
      "ends there; loss cuts as in default", "RCP (Dukkipati 2005): start at the link's fair share; ours",
      requires=("stamp_echo",))
class ShareWindow(_StampView):
    """While no cut has happened yet (ssthresh still the receive buffer) and every receiver's last
    SACK echoes a stamped share (docs/stamp.md, "The share"), the window is raised to the share's
    window over the round trip it is sent once per (``paced_srtt``) and ssthresh set to it: the
    session starts at its max-min share and
    leaves slow start there.  The first loss cuts as ``default`` (loss wins) and ``default`` runs
    from then on; a receiver without a share leaves ``default`` from the start."""

    COUNTERS = ("share_starts",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.share_echoes: dict[int, int] = {}  # receiver id -> its last SACK's share code

    def share_bps(self) -> float | None:
        """The smallest share the receivers echo (None: one echoes none, or its stamp is missing)."""
        codes = []
        for rid in self.rcvrs:
            code = self.share_echoes.get(rid, Share.NONE)
            if code == Share.NONE or not Stamp.stamped(self.echoes.get(rid, Stamp.NOT_STAMPED)):
                return None
            codes.append(code)
        return Share.bps(min(codes)) if codes else None

    def _note_echo(self, m: RlaSack) -> None:
        self.share_echoes[m.rcvr_id] = m.share
        super()._note_echo(m)

    def _sack_window(self, now: float) -> None:
        super()._sack_window(now)
        share = self.share_bps()
        if share is None or self.in_recovery or self.ssthresh < self.p.rcv_buffer or self.cwnd >= self.ssthresh:
            return
        window = share * self.paced_srtt() / (8.0 * self.p.packet_size)
        self.ssthresh = max(float(LEAST_SSTHRESH), min(window, float(self.p.rcv_buffer) - 1))
        self.cwnd = max(self.cwnd, min(window, self.ssthresh))
        self.share_starts += 1


rule("stamp_echo", "SACKs carry back the data's congestion stamps", "docs/stamp.md")(_StampView)
rule("stamp_echo", roles=(Receiver.role,))(StampEcho)



# Fairness across round trips ------------------------------------------------------
@rule("rtt_fair_increase",
      "the window grows (R_max/R_c)^2 per round: TCP's rate at the troubled receivers' round trip")
class RttFairIncrease(Sender):
    """In congestion avoidance the window grows (R_max / R_c)^2 times faster (:class:`RttSpread`),
    R_max the round trip the window is sent once per (the largest srtt; the acker's under
    ``acker_clock``), R_c that of the receivers whose signals cut."""

    #: Below this spread the round trips count as equal: a queue's swing in one
    #: receiver's srtt is no spread of the tree (dumbbells keep the paper's increase).
    MIN_SPREAD = 1.25

    signal_srtt: float | None = None  # the srtt of the receiver that signalled last

    def __init__(self, config: Any, rng: Any = None) -> None:
        super().__init__(config, rng)
        self.spread = RttSpread(self.MIN_SPREAD)

    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        if r.rtt.srtt is not None:
            self.signal_srtt = r.rtt.srtt
        super()._congestion(r, now, lost, by_timeout)

    def _cut(self, now: float) -> None:
        super()._cut(now)
        if self.signal_srtt is not None:
            self.spread.cut(self.signal_srtt)

    def rtt_spread(self) -> float:
        """R_max is the round trip the window is sent once per: under ``acker_clock`` the acker's,
        whose signals alone cut, so the spread is 1 there and the compensation stands aside."""
        return self.spread.factor(self.paced_srtt() if self.rcvrs else None)

    def _grow(self, now: float) -> None:
        window = self.cwnd
        avoiding = not self.in_recovery and window >= self.ssthresh
        super()._grow(now)
        if avoiding:
            self.cwnd += (self.rtt_spread() ** 2 - 1.0) / window


@rule("worst_path_listening", "only the receiver with the lowest TCP-equation rate is troubled (pgmcc's acker)")
class WorstPathListening(Sender):
    """Rule 6's troubled set is the acker alone: the receiver whose TCP rate (RFC 5348 3.1 at its srtt
    and signal rate) is lowest, replaced once another's is below SWITCH times its (pgmcc's acker, Rizzo
    2000). Random listening answers the mean of n paths' loss rates, the acker the limiting path's.
    It is chosen at most once per loss event: behind one queue every receiver reports the same loss,
    and a choice at each report would hand the acker to the first reporter before its own report,
    so no report of that loss would be drawn for."""

    COUNTERS = ("acker_switches",)
    #: Hysteresis: receivers behind one queue differ by sampling noise, not by path (ours).
    SWITCH = 0.75

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acker: int | None = None
        #: The highest sequence sent when a signal last chose the acker (0: none yet).
        self.chosen_through = 0

    def equation_rate(self, r: _Receiver) -> float:
        """r's TCP rate in bytes/s; infinite before its first signal."""
        iv = self._effective_interval(r)
        return math.inf if iv is None else tcp_rate(self.p.packet_size, r.srtt, 1.0 / max(iv, 1.0))

    def _choose_acker(self) -> None:
        rates = {rid: self.equation_rate(r) for rid, r in self.rcvrs.items()}
        best = min(rates, key=rates.__getitem__, default=None)
        held = rates[self.acker] if self.acker in rates else math.inf
        if best is not None and rates[best] < self.SWITCH * held:
            self.acker, self.acker_switches = best, self.acker_switches + 1

    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        if not lost or min(lost) > self.chosen_through:
            # on what was known before this signal: a signal does not elect its sender; and once
            # per loss event: the other receivers' signals of a packet sent before that choice
            # are judged by it, so no signal of one loss elects the receiver that reported it first
            self._choose_acker()
            self.chosen_through = self.next_seq - 1
        super()._congestion(r, now, lost, by_timeout)

    def _troubled(self, r: _Receiver) -> bool:
        return super()._troubled(r) if self.acker not in self.rcvrs else r.rid == self.acker


#: ``stamped``: default plus the rules that read the stamp; ``default`` every other rule.
#: Profile ``default``: the paper plus the rules that earned their place, listed by name;
#: a rule registered above but not listed here is off until it is measured and listed.
DEFAULT = (
    "leave_report",
    "one_draw_per_loss",
    "one_cut_per_window",
    "one_rtt_congestion_period",
    "tcp_cut_floor",
    "rto_holds_ssthresh",
    "join_at_window_edge",
    "resume_stream",
    "drop_silent_receivers",
    "undo_dead_cuts",
    "one_repair_per_loss",
    "detect_lost_repairs",
    "spread_hellos",
    "spread_acks",
    "thin_acks",
    "spread_pairs",
    "one_clock",
    "stalled_receivers",
    "worst_path_listening",
    "acker_clock",
    "reliability_window",
)
RULES = rule.book(default=DEFAULT, stamped=("stamp_climb", "stamp_hold", "stamp_echo", "share_window"))
