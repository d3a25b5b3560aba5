"""MTCP's named rules (:class:`hosts.rules.Registrar`); reasons in ``docs/protocols/mtcp.md#rules``.
``recovery_hold`` wraps ``reno_window``; ``nack_holdoff`` and ``nack_rack`` wrap ``nack_dupthresh``,
and ``rack_reordering`` wraps ``nack_rack``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp.agent import _Child
from p4mcc.hosts.mtcp.constants import ACK_DELAY, DEAD_PROBES, FOLD_ID, INITIAL_SSTHRESH, NO_CWND, RTO_INITIAL
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.reliable import (MAX_SEQ, CutLog, ResumableStream, Scoreboard, handover_window,
                                  reliability_bound)
from p4mcc.hosts.rtt import RttSpread, ewma
from p4mcc.hosts.rules import Registrar, at_start, timer
from p4mcc.hosts.stampwindow import StampEcho, short_queue
from p4mcc.hosts.tcp_rules import (DELAYED_ACK_PACKETS, DUPTHRESH, INITIAL_WINDOW, LEAST_SSTHRESH,
                                   REORDER_WINDOW_RTTS, ReorderWindow, ack_at_once)
from p4mcc.hosts.tfrc import tcp_rate
from p4mcc.hosts.wire import (MAX_NACK_SEQS, Flags, MtcpAck, MtcpNack, MtcpWindowUpdate, Share, Stamp, seconds_since,
                             ts_us)

if TYPE_CHECKING:  # the mixins run on top of the cores
    from p4mcc.hosts.mtcp.receiver import MtcpReceiver as _Rx
    from p4mcc.hosts.mtcp.sender import MtcpSender as _Base
else:
    _Base = _Rx = object

SENDER, RECEIVER = "mtcp-sender", "mtcp-receiver"
_OURS = "ours, see docs/protocols/mtcp.md#rules"
#: A mixin serves both roles unless it names one: an agent is a receiver that also sends.
rule = Registrar("mtcp", _OURS, roles=(SENDER, RECEIVER))


# The acker's clock (pgmcc) -------------------------------------------------------------
@rule("fold_acker", "behind a folding switch a member is the acker: named by a probe, its own ACKs pass the fold",
      "pgmcc (Rizzo, SIGCOMM 2000); " + _OURS, roles=(SENDER,), requires=("acker_clock",))
class FoldAcker(_Base):
    """A switch's fold speaks for every member with the lowest cumulative ACK, so the acker's clock
    would be the slowest member's.  Members known from their NACKs (each NACK echoes the last
    original's send time: an RTD sample, and a loss event per new hole) are acker candidates too.
    A member that becomes the acker is told by a probe flagged ACKER (``adv_wnd`` 1), and one that
    stops being it by another (``adv_wnd`` 0); the acker sends its ACKs twice, one folded, one
    flagged ACKER that the switches pass on (aggregation.p4).  That copy alone clocks the window; it releases
    nothing, as a member's NACK does not.  The acker's holes hold the window, so they are repaired
    to it at once rather than at the fold's pace, and it is not silent while a repair to it is on
    its way (ours)."""

    COUNTERS = ("acker_copies",)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        #: What the acker's copies acknowledged, apart from its record: a fold the acker's ACK
        #: triggered reaches the sender first and moves the record (repairs go by it), and the
        #: copy must still find its packets new to clock the window.
        self.clocked = Scoreboard()
        self.clocked_for: int | None = None

    def _candidates(self) -> list[_Child]:
        # Not the fold: its ACK is the slowest member's, and with no member to clock the window the
        # core's clock (every child's) is the one to fall back on, not the fold's cumulative ACK alone.
        members = [c for c in self.children.values() if c.nack_only and c.rtd.srtt is not None]
        return [c for c in super()._candidates() if not c.aggregated] + members

    def _nack_heard(self, c: _Child, msg: Any, now: float) -> None:
        if c.nack_only and msg.flags & Flags.ACKER:
            c.rtd.sample(seconds_since(msg.timestamp, now))
        super()._nack_heard(c, msg, now)

    def _acker_ack(self, msg: Any, src: Any, now: float) -> None:
        c = self.children.get(msg.node_id)
        if c is None or c is not self.clock_child() or not c.nack_only:
            super()._acker_ack(msg, src, now)
            return
        self.acker_copies += 1
        self._heard(c, now)
        if msg.echo_ts:
            c.rtd.sample(seconds_since(msg.echo_ts, now))
        c.min_cwnd, c.max_twnd = msg.min_cwnd, msg.max_twnd
        if self.clocked_for != c.nid:
            self._clock_from(c)
        self._repairs_held(c, c.sb.update_bitmap(msg.cum_ack, msg.sack_bitmap, limit=self._ack_limit()), now)
        self._grow(self.clocked.update_bitmap(msg.cum_ack, msg.sack_bitmap, limit=self._ack_limit()), now)
        self._arm_packet_timer()

    def _repaired_with_the_fold(self, c: _Child) -> bool:
        # the acker's holes hold the window: repaired at once, to it, on its own round trip
        return c is not self.clock_child() and super()._repaired_with_the_fold(c)

    def acker_silent(self, c: _Child, now: float) -> bool:
        """A member acker waiting for a repair says nothing until the repair reaches it: it is
        silent only once the bound has passed since the last repair sent to it, too."""
        if not super().acker_silent(c, now):
            return False
        if not c.nack_only:
            return True
        owed = min((s for s in self.buf if not c.sb.acked(s)), default=None)
        repaired = c.last_tx.get(owed, -math.inf) if owed is not None else -math.inf
        return now - repaired > self.quiet_bound(c)

    def _clock_from(self, c: _Child) -> None:
        """A new acker clocks from what it held when it became one."""
        self.clocked, self.clocked_for = Scoreboard(), c.nid
        self.clocked.update(c.sb.cum_ack)

    def _acker_changed(self, old: _Child | None, now: float) -> None:
        super()._acker_changed(old, now)
        new = self.clock_child()
        if old is not None and old.nack_only and old is not new and self.children.get(old.nid) is old:
            self._tell(old, False, now)  # its copies would only load the reverse path
        if new is not None and new.nack_only:
            self._clock_from(new)
            self._tell(new, True, now)  # it answers with its copy

    def _tell(self, c: _Child, acker: bool, now: float) -> None:
        """A probe flagged ACKER to member ``c``: it is the acker (``adv_wnd`` 1) or no longer (0).
        Told at once, not by the data: the window its stale record closes may hold every original."""
        self.send(c.addr, MtcpWindowUpdate(session_id=self.cfg.session_id, timestamp=ts_us(now) or 1,
                                           node_id=self.nid, flags=Flags.ACKER, adv_wnd=int(acker)).encode())

    def _suspect(self, c: _Child, now: float) -> None:
        acker = self.clock_child()
        if c.aggregated and acker is not None and acker.nack_only:
            # a packet timed out at the fold: the acker's if it lacks the oldest one held
            oldest = min(self.buf, default=None)
            if oldest is not None and not acker.sb.acked(oldest):
                self.acker_lacks = True
        super()._suspect(c, now)


@rule("fold_acker", roles=(RECEIVER,))
class FoldAckerReport(_Rx):
    """The member the sender's probe names the acker sends each ACK twice, the second flagged ACKER,
    until a probe releases it; every member's NACK echoes the last original's send time and says
    so with the same flag."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.named_acker = False

    def _on_probe(self, msg: MtcpWindowUpdate, src: Any, now: float) -> None:
        if not msg.flags & Flags.ACKER:
            super()._on_probe(msg, src, now)
        elif src[0] == self.parent[0] == self.cfg.sender and msg.node_id == node_id(src[0]):
            self.named_acker = bool(msg.adv_wnd)
            if self.named_acker:  # the sender's new acker: its copy answers at once
                self._copy(now, msg.timestamp)

    def _report(self, cls: Any, now: float, echo: int) -> None:
        super()._report(cls, now, echo)
        if cls is MtcpAck and self.named_acker:
            self._copy(now, echo)

    def _copy(self, now: float, echo: int) -> None:
        """The acker's own copy of its ACK, flagged ACKER: no switch folds it."""
        ack = self._summary_report(MtcpAck, now, echo)
        self.send(self.parent, dataclasses.replace(ack, flags=ack.flags | Flags.ACKER).encode())

    def _nack_stamp(self, now: float, echo: int) -> tuple[int, int]:
        stamp = 0 if echo else self._data_echo(now)
        return (stamp, Flags.ACKER) if stamp else super()._nack_stamp(now, echo)


@rule("reliability_window", "what the slowest child lacks is bounded by the rate times the longest round trip",
      "pgmcc (Rizzo, SIGCOMM 2000); " + _OURS, roles=(SENDER,), requires=("acker_clock",))
class ReliabilityWindow(_Base):
    """Under the acker's clock, new data waits while the oldest packet the sender buffers (one some
    child lacks) is more than RELIABILITY_WINDOW_RTTS x rate x the largest smoothed RTD behind, never
    more than ``send_buffer``
    (the advertised window keeps the receivers' buffers); it grows as the RTD spread (ours)."""

    RELIABILITY_WINDOW_RTTS = 4.0

    def reliability_window(self) -> int:
        acker = self.clock_child()
        rtts = [c.rtd.srtt for c in self._acking() if c.rtd.srtt is not None]
        if acker is None or acker.rtd.srtt is None or not rtts:
            return self.p.send_buffer
        return reliability_bound(self.cwnd, max(rtts), acker.rtd.srtt, self.RELIABILITY_WINDOW_RTTS,
                                 self.p.send_buffer)

    def current_window(self) -> int:
        # The memory bound: what the sender buffers (a packet a removed child was owed is no longer
        # held, and waiting for it would stop the data whose arrival makes that child NACK its hole).
        oldest = min(self.buf, default=self.next_seq) - 1
        return min(super().current_window(), oldest + self.reliability_window() - (self.next_seq - 1))


@rule("acker_clock", "the window is clocked by the acker's ACKs and sent once per its round trip",
      "pgmcc (Rizzo, SIGCOMM 2000); " + _OURS, roles=(SENDER,), requires=("acker_election",))
class AckerClock(_Base):
    """Once ``acker_election`` has an acker, the window is ``cwnd`` less what the acker lacks, and
    grows on the acker's ACKs alone (pgmcc's acker clock; ours): the rate is the window over the
    acker's round trip, not the longest one, and a slow child costs buffer, not rate.  A new acker
    takes the old rate at its round trip, at most its equation's window (no burst exceeds it)."""

    COUNTERS = ("acker_handovers",)
    by_acker = False  # growth now comes from the acker's ACK

    def current_window(self) -> int:
        c = self.clock_child()
        if c is None:
            return super().current_window()
        lacks = sum(1 for s in self.buf if not c.sb.acked(s))
        lowest = min((x.sb.cum_ack for x in self._acking()), default=0)
        adv = self.summary()[2]  # the advertised room, as the paper's window
        own = int(min(self.cwnd, c.min_cwnd)) - max(lacks, c.max_twnd)
        return min(own, lowest + adv - (self.next_seq - 1))

    def paced_rtd(self) -> float | None:
        """The acker's smoothed RTD, once it clocks the window."""
        c = self.clock_child()
        return c.rtd.srtt if c is not None and c.rtd.srtt is not None else super().paced_rtd()

    def _acknowledged(self, c: _Child, newly: list[int], now: float) -> None:
        super()._acknowledged(c, newly, now)
        if c is self.clock_child():
            self._grow(newly, now)

    def _grow(self, newly: list[int], now: float) -> None:
        """The acker holds ``newly``: the window grows by them, as TCP's on a sender's ACKs."""
        self.by_acker = True
        try:
            for s in newly:
                if self.cwnd < self.ssthresh:
                    self._slow_start(now)
                else:
                    self._avoid_congestion(s)
        finally:
            self.by_acker = False

    def _slow_start(self, now: float) -> None:
        if self.by_acker or self.clock_child() is None:
            super()._slow_start(now)

    def _avoid_congestion(self, s: int) -> None:
        if self.by_acker or self.clock_child() is None:
            super()._avoid_congestion(s)

    def _acker_changed(self, old: _Child | None, now: float) -> None:
        super()._acker_changed(old, now)
        new = self.clock_child()
        if new is None or old is None or new.rtd.srtt is None or old.rtd.srtt is None:
            return
        eq = self.equation_rate(new) * new.rtd.srtt / self.p.packet_size
        self.cwnd = handover_window(self.cwnd, old.rtd.srtt, new.rtd.srtt, eq, 1.0)
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd)
        self.acker_handovers += 1


@rule("acker_election", "only the child with the lowest TCP-equation rate cuts the window (pgmcc's acker)",
      "pgmcc (Rizzo, SIGCOMM 2000); RFC 4654's CLR; " + _OURS, roles=(SENDER,))
class AckerElection(_Base):
    """Each of the sender's children (a receiver, an agent's subtree, a switch's fold: the tree's
    aggregated feedback) has a TCP rate by RFC 5348 3.1 at its smoothed RTD and its loss events' rate
    (a new hole it NACKs, one per RTD); the lowest is the acker, replaced below ACKER_SWITCH of its
    rate, judged before each event.  Only the acker's NACKs and timeouts of what it lacks cut; an
    acker owing data and silent for ACKER_QUIET_RTTS RTDs, or removed, is passed over (ours)."""

    COUNTERS = ("acker_switches", "silent_ackers", "spared_cuts")
    ACKER_SWITCH = 0.75
    ACKER_QUIET_RTTS = 3.0
    #: A loss event's interval in packets sent: EWMA gain (RLA's ``INTERVAL_GAIN``).
    EVENT_GAIN = 0.25

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.acker: int | None = None
        self.events: dict[int, tuple[float, int, float]] = {}  # child -> (last event time, next_seq then, EWMA)
        self.acker_lacks = False  # a timed-out packet the acker lacks (this timer round)
        self.acker_holes: set[int] = set()  # holes the acker has NACKed (above its cumulative ACK)

    def clock_child(self) -> _Child | None:
        return self.children.get(self.acker) if self.acker is not None else None

    def _candidates(self) -> list[_Child]:
        """The children that may be the acker: those whose ACKs reach the sender."""
        return self._acking()

    def equation_rate(self, c: _Child) -> float:
        """c's TCP rate (bytes/s); infinite before its first loss event."""
        ev = self.events.get(c.nid)
        if ev is None or ev[2] <= 0 or c.rtd.srtt is None:
            return math.inf
        interval = max(ev[2], float(self.next_seq - ev[1]))  # the open interval counts too
        return tcp_rate(self.p.packet_size, c.rtd.srtt, 1.0 / max(interval, 1.0))

    def quiet_bound(self, c: _Child) -> float:
        """How long c may say nothing while it owes: ACKER_QUIET_RTTS of its RTDs (at least its RTD
        and four deviations) and an ACK delay."""
        assert c.rtd.srtt is not None
        return max(self.ACKER_QUIET_RTTS * c.rtd.srtt, c.rtd.srtt + 4 * c.rtd.rttvar) + ACK_DELAY

    def acker_silent(self, c: _Child, now: float) -> bool:
        """c owes a packet and has said nothing for its quiet bound."""
        if c.rtd.srtt is None:
            return False
        bound = self.quiet_bound(c)
        if now - c.last_heard <= bound:
            return False
        owed = min((s for s in self.buf if not c.sb.acked(s)), default=None)
        return owed is not None and now - max(c.last_heard, now - seconds_since(self.buf[owed].sender_ts, now)) > bound

    def _elect(self, now: float) -> None:
        old = self.clock_child()
        talking = [c for c in self._candidates() if not self.acker_silent(c, now)]
        rates = {c.nid: self.equation_rate(c) for c in talking}
        # The lowest rate; with none known, the longest RTD.
        best = min(rates, key=lambda n: (rates[n], -(self.children[n].rtd.srtt or 0.0)), default=None)
        held = rates.get(self.acker, math.inf) if old is not None and old in talking else math.inf
        if best is not None and rates[best] < self.ACKER_SWITCH * held:
            self.acker = best
        elif old is not None and old not in talking:
            self.acker = best  # passed over for the lowest rate that talks (None: every child clocks)
        if self.clock_child() is not old:
            self.acker_switches += 1
            self.silent_ackers += old is not None and old not in talking
            self._acker_changed(old, now)

    def _acker_changed(self, old: _Child | None, now: float) -> None:
        """Hook: the acker changed from ``old`` (``acker_clock`` hands the window over)."""

    def _loss_event(self, c: _Child, now: float) -> None:
        last, seq, avg = self.events.get(c.nid, (-math.inf, 0, 0.0))
        if c.rtd.srtt is not None and now - last <= c.rtd.srtt:
            return  # the same congestion period
        interval = float(max(1, self.next_seq - seq))
        self.events[c.nid] = (now, self.next_seq, interval if avg <= 0 else avg + self.EVENT_GAIN * (interval - avg))

    def _nack_is_congestion(self, c: _Child, s: int) -> bool:
        new_hole = c.nacks[s] == 1 and c.rexmits.get(s, 0) == 0
        cut = super()._nack_is_congestion(c, s)
        if new_hole:
            self._elect(self.now)  # on what was known before: an event does not elect its own child
            self._loss_event(c, self.now)
        if cut and self.acker is not None and c.nid != self.acker:
            self.spared_cuts += 1
            return False
        return cut

    def _on_nack(self, msg: Any, src: Any, now: float) -> None:
        """The acker's NACK of a new hole cuts even when another child's NACK of it came first: that
        one was spared, and its shared repair made the acker's report look like a repair's (ours)."""
        c = self.children.get(msg.node_id)
        fresh = []
        if c is not None and msg.node_id == self.acker:
            self.acker_holes = {h for h in self.acker_holes if h > c.sb.cum_ack}
            fresh = [h for h in msg.missing if h > self.recover and h not in self.acker_holes and not c.sb.acked(h)]
            self.acker_holes.update(fresh)
        cuts = self.cwnd_cuts
        super()._on_nack(msg, src, now)
        if fresh and self.cwnd_cuts == cuts and max(fresh) > self.recover:
            self._congestion(now, timeout=False)

    def _suspect(self, c: _Child, now: float) -> None:
        if c.nid == self.acker:
            self.acker_lacks = True
        super()._suspect(c, now)

    def _on_packet_timer(self, now: float) -> None:
        self.acker_lacks = False
        super()._on_packet_timer(now)
        self.acker_lacks = False

    def _congestion(self, now: float, timeout: bool) -> None:
        if timeout and self.acker is not None and not self.acker_lacks and self.acker in self.children:
            self.spared_cuts += 1  # only children that are not the acker lack what timed out
            return
        super()._congestion(now, timeout)

    def _acknowledged(self, c: _Child, newly: list[int], now: float) -> None:
        # every report from a child ends here: one from another child may show the acker silent
        super()._acknowledged(c, newly, now)
        acker = self.clock_child()
        if self.acker is not None and (acker is None or (c is not acker and self.acker_silent(acker, now))):
            self._elect(now)

    def _remove_child(self, c: _Child, now: float) -> None:
        super()._remove_child(c, now)
        self.events.pop(c.nid, None)
        if c.nid == self.acker:
            self._elect(now)


@rule("rtt_fair_increase",
      "congestion avoidance grows (R_max/R_c)^2 times faster, R_c the round trip of the receivers that cut",
      "TCP Hybla (Caini & Firrincieli 2004); " + _OURS, roles=(SENDER,), requires=("reno_window",))
class RttFairIncrease(_Base):
    """In congestion avoidance the window grows (R_max / R_c)^2 times faster (:class:`RttSpread`),
    R_max the RTD the window is sent once per (the largest smoothed RTD; the acker's under
    ``acker_clock``), R_c that of the receivers whose NACKs cut."""

    RTD_GAIN = 0.125  # RFC 6298's alpha, per receiver
    MIN_SPREAD = 1.5  # below it the spread is one path's queue seen at different times, not two paths

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.node_rtd: dict[int, float] = {}  # receiver -> smoothed RTD (a fold's triggering member included)
        self.spread = RttSpread(self.MIN_SPREAD)
        self.cutter: int | None = None

    def _heard_report(self, msg: Any, now: float) -> None:
        if msg.echo_ts and isinstance(msg, MtcpAck):
            rtd = seconds_since(msg.echo_ts, now)
            self.node_rtd[msg.node_id] = ewma(self.node_rtd.get(msg.node_id), rtd, self.RTD_GAIN)
        super()._heard_report(msg, now)

    def _nack_is_congestion(self, c: _Child, s: int) -> bool:
        cut = super()._nack_is_congestion(c, s)
        if cut:
            self.cutter = c.nid
        return cut

    def _congestion(self, now: float, timeout: bool) -> None:
        super()._congestion(now, timeout)
        rtd = self.node_rtd.get(self.cutter) if self.cutter is not None and not timeout else None
        if rtd is not None:
            self.spread.cut(rtd)
        self.cutter = None

    def _remove_child(self, c: _Child, now: float) -> None:
        self.node_rtd.pop(c.nid, None)
        super()._remove_child(c, now)

    def rtt_spread(self) -> float:
        """R_max is the round trip the window is sent once per: the longest RTD heard, or under
        ``acker_clock`` the acker's, whose NACKs alone cut, so the spread is 1 there and the
        compensation stands aside (behind a fold no acker is elected: the fold's clock is the
        slowest member's)."""
        paced = self.paced_rtd()
        return self.spread.factor(paced if paced is not None else max(self.node_rtd.values(), default=None))

    def _avoid_congestion(self, s: int) -> None:
        window = self.cwnd
        super()._avoid_congestion(s)
        if self.cwnd > window:
            self.cwnd += (self.rtt_spread() ** 2 - 1.0) / window


@rule("stamp_climb", "behind a short stamped queue, congestion avoidance adds half the spare rate per round trip",
      "RFC 4782 3.1; " + _OURS, roles=(SENDER,))
class StampClimb(_Base):
    """While the echoed stamp shows a short queue, congestion avoidance adds ``SPARE_SHARE`` of the
    tightest port's spare rate per round trip (Quick-Start's approved rate, RFC 4782 3.1, as
    WEBRC's ``stamp_join``); an unstamped echo or a long queue leaves ``default``'s growth."""

    SPARE_SHARE = 0.5

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.stamp = Stamp.NOT_STAMPED  # what the last ACK's echo says (docs/stamp.md)

    def _heard_report(self, msg: Any, now: float) -> None:
        if isinstance(msg, MtcpAck):
            self.stamp = msg.stamp
        super()._heard_report(msg, now)

    def _spare_packets(self) -> float:
        """Packets per round trip (the largest RTD) the stamp says are spare behind a short queue
        (0: none, or no stamp)."""
        spare, queue = Stamp.spare_bps(self.stamp), Stamp.queue_delay_s(self.stamp)
        rtt = max((c.rtd.srtt for c in self._acking() if c.rtd.srtt is not None), default=None)
        if not spare or rtt is None or not short_queue(queue, rtt):
            return 0.0
        return self.SPARE_SHARE * spare * rtt / (8.0 * self.p.packet_size)

    def _avoid_congestion(self, s: int) -> None:
        window = self.cwnd
        super()._avoid_congestion(s)
        extra = self._spare_packets()
        if self.cwnd > window and extra > 0:
            self.cwnd += extra / window


rule("stamp_echo", "a receiver's ACK carries back the stamps of the data since its last one",
     "docs/stamp.md", roles=(RECEIVER,))(StampEcho)


@rule("share_window", "before the first cut the window starts at the path's fair share and slow start ends there; "
      "loss cuts as in default", "RCP (Dukkipati 2005): start at the link's fair share; " + _OURS,
      roles=(SENDER,), requires=("stamp_echo",))
class ShareWindow(_Base):
    """While no cut has happened yet (ssthresh still its initial value) and every acking child's last
    ACK echoes a stamped share (docs/stamp.md, "The share"; a fold carries the smallest), the window is
    raised to the share's window over the largest RTD and ssthresh set to it: the session starts at its
    max-min share and leaves slow start there.  The first loss cuts as ``default`` (loss wins); a child
    without a share leaves ``default``."""

    COUNTERS = ("share_starts",)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.share_echoes: dict[int, int] = {}  # child node id -> its last ACK's share code (0: none)

    def _heard_report(self, msg: Any, now: float) -> None:
        if isinstance(msg, MtcpAck):
            self.share_echoes[msg.node_id] = msg.share if Stamp.stamped(msg.stamp) else Share.NONE
        super()._heard_report(msg, now)

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        super()._on_feedback(msg, src, now)
        codes = [self.share_echoes.get(c.nid, Share.NONE) for c in self._acking()]
        rtt = max((c.rtd.srtt for c in self._acking() if c.rtd.srtt is not None), default=None)
        if (not codes or Share.NONE in codes or rtt is None or self.ssthresh != INITIAL_SSTHRESH
                or self.cwnd >= self.ssthresh):
            return
        window = Share.bps(min(codes)) * rtt / (8.0 * self.p.packet_size)  # type: ignore[operator]
        self.ssthresh = max(float(LEAST_SSTHRESH), window)
        self.cwnd = max(self.cwnd, window)
        self.share_starts += 1


@rule("resume_stream", "a restarted sender resumes the stream where its receivers are", roles=(SENDER,),
      requires=("fold_roll_call",))
class ResumeStream(ResumableStream, _Base):
    """A sender whose first reports show data was restarted mid-session (its host rebooted): it
    resumes after the lowest cumulative ACK heard before it starts; a receiver behind NACKs the
    packets between, which the stream still holds.  Unfolded children are heard by their window
    updates (3.9); a fold goes up again only at its switch's refresh, so a sender that hears
    nothing calls the roll, and the first answer stands in for the fold until the fold moves (ours).

    No one report's claim counts beyond what the receivers show together.  Unfolded, the first
    report of data calls the roll, and the sender gathers the answers for ``RESUME_GATHER_S``
    before its first packet: the lowest claim wins, and once most nodes heard stand within a
    receive buffer of one another, a claim outside it is forgotten with its node (the sender
    kept every receiver within a buffer of the lowest, so it is false).  Heard later, a report
    below the resumed start by more than a buffer proves the claim it resumed after was never
    sent: the stream is wound back to that report (each node id may wind it back once: an id is
    its address, so one host once).  Heard once sending, a switch's fold past the stream sent shows
    that every member below holds more than this sender sent: it began below its receivers (a
    member that joined while it was down held its first fold at 0), and the stream moves on to
    after the fold (ours)."""

    #: From the first report of data, how long a restarted sender gathers its members' answers
    #: to a roll call before its first packet: RFC 6298's wait for an answer with no RTT known.
    RESUME_GATHER_S = RTO_INITIAL

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.rewound_by: set[int] = set()
        self.rewinds = 0
        self.wound_forward = 0
        self.claims: dict[int, int] = {}  # node id -> the cumulative ACK it reported before the start
        self._claims_since: float | None = None  # the first report of data a restarted sender heard

    @at_start
    def _arm_resume(self, now: float) -> None:
        """The first roll call goes out if nothing is heard within the initial RTO."""
        self.set_timer("resume", now + RTO_INITIAL)

    def _rewind(self, nid: int, cum_ack: int) -> None:
        """Wind a resumed stream back to ``cum_ack`` if the report proves its start a false claim."""
        if (not self.started or not self.resumed_from or not 0 < cum_ack < self._resume_floor()
                or nid in self.rewound_by):
            return
        self.rewound_by.add(nid)
        self.rewinds += 1
        self._restart_stream(cum_ack)
        for c in self.children.values():
            if c.sb.highest > cum_ack:  # what it claimed past the new start was never sent
                self._restart_record(c, min(c.sb.cum_ack, cum_ack))
        self.metric({"rewound_to": self.next_seq}, "tree-repair")

    def _fold_ahead(self, msg: Any) -> bool:
        """A switch's fold past what this sender sent: the tree's lowest point, beyond the stream.
        A stream wound back on proof stays there (the fold may be older than the proof)."""
        return (self.started and self.assisted and bool(msg.flags & Flags.AGGREGATED) and not self.rewinds
                and self.next_seq - 1 < msg.cum_ack < MAX_SEQ)

    def _wind_forward(self, msg: Any) -> None:
        """Move the stream on to after a fold every member below holds (``_fold_ahead``)."""
        if not self._fold_ahead(msg):
            return
        self.wound_forward += 1
        self._restart_stream(msg.cum_ack)
        for c in self.children.values():
            self._restart_record(c, msg.cum_ack)
        self.metric({"wound_to": self.next_seq}, "tree-repair")

    def _restart_stream(self, cum_ack: int) -> None:
        """The stream goes on after ``cum_ack``: nothing sent before is held or timed any more."""
        self.next_seq = self.resumed_from = cum_ack + 1
        self.buf.clear()
        self._timers_heap.clear()
        self.cancel_timer("pkt")
        self.twnd, self.highest_buffered, self.round_end = 0, cum_ack, 0

    def _claims_unsent(self, cum_ack: int, folded: bool) -> bool:
        # a fold past the stream is no one receiver's claim: the stream moves on to it
        return super()._claims_unsent(cum_ack, folded) and not (folded and self.assisted and not self.rewinds)

    def _started(self, now: float) -> None:
        super()._started(now)
        self.cancel_timer("resume")

    @timer("resume")
    def _on_resume_timer(self, now: float) -> None:
        """Nothing heard yet: call the roll again; the gathering over: send."""
        if not self.started and not any(c.heard for c in self.children.values()):
            self._roll_call(now)
            self.set_timer("resume", now + RTO_INITIAL)
        elif not self.started:
            self._pump(now)  # the gathering is over

    def _resume(self, cum_ack: int) -> bool:
        if not self._resume_after(cum_ack):
            return False
        for c in self.children.values():
            c.sb.start_after(self._resume_floor())
        if self._claims_since is None and not self.assisted:
            # the first report of data: call every member and gather their answers first (a
            # switch's fold already keeps the lowest of the claims below it)
            self._claims_since = self.now
            self._roll_call(self.now)
            self.set_timer("resume", self.now + self.RESUME_GATHER_S)
        return True

    def _ready(self) -> bool:
        since = self._claims_since
        if since is not None and self.now < since + self.RESUME_GATHER_S:
            return False  # still hearing where the receivers are
        return super()._ready()

    def _child(self, nid: int, addr: Any, now: float | None = None) -> _Child:
        new = nid not in self.children
        c = super()._child(nid, addr, now)
        if new and self.resumed_from:  # a child first heard in a resumed stream lists nothing below it
            c.sb.start_after(self._resume_floor())
        return c

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        self._rewind(msg.node_id, msg.cum_ack)
        self._wind_forward(msg)
        self._resume(msg.cum_ack)
        super()._on_feedback(msg, src, now)
        if not self.started and not msg.flags & Flags.AGGREGATED and msg.cum_ack > 0:
            self.claims[msg.node_id] = msg.cum_ack
            self._outvoted(now)

    def _outvoted(self, now: float) -> None:
        """Before the first packet: once most nodes heard report within a receive buffer of one
        another, a claim outside that buffer is false (the sender kept every receiver within a
        buffer of the lowest), so its node is forgotten and is not waited for."""
        ranked = sorted(self.claims.values())
        best = max(range(len(ranked)), key=lambda i: sum(1 for c in ranked[i:] if c <= ranked[i] + self.p.rcv_buffer))
        lo = ranked[best]
        if 2 * sum(1 for c in ranked if lo <= c <= lo + self.p.rcv_buffer) <= len(ranked):
            return  # no majority yet
        for nid, claim in list(self.claims.items()):
            if not lo <= claim <= lo + self.p.rcv_buffer:
                del self.claims[nid]
                c = self.children.get(nid)
                if c is not None:
                    self.forged += 1
                    self._remove_child(c, now)

    def _on_nack(self, msg: Any, src: Any, now: float) -> None:
        self._rewind(msg.node_id, msg.cum_ack)
        resumed = self._resume(msg.cum_ack)  # a roll call's answer: the lowest claim wins
        answered = self.assisted and resumed
        super()._on_nack(msg, src, now)
        if not self.started and msg.cum_ack > 0:
            self.claims[msg.node_id] = msg.cum_ack
            self._outvoted(now)
        if answered:  # a roll call's answer: the fold it stands in for holds what the stream resumes after
            fold = self._child(FOLD_ID, self.group)
            fold.sb.start_after(self.next_seq - 1)
            fold.aggregated = fold.heard = True
            fold.min_cwnd, fold.max_twnd, fold.adv_wnd = NO_CWND, 0, self.p.rcv_buffer
            self._recount()


@rule("timer_jitter", "periodic timers jittered by +-50 %, first hello within half a period",
      "Floyd & Jacobson 1994; RFC 3550 6.3.1")
class TimerJitter(_Rx):
    """Periodic waits spread over ``1 +- JITTER`` of their period: receivers behind one
    bottleneck otherwise report in the same microsecond into a short reverse queue."""

    JITTER = 0.5

    def _jitter(self, period: float) -> float:
        return period * (1.0 + self.JITTER * (2.0 * self.rng.random() - 1.0))

    def _first_hello(self) -> float:
        return self.rng.uniform(0.0, 0.5 * self.wupdate_period)


@rule("initial_window", "slow start begins at 10 packets, not 1", "RFC 6928")
class InitialWindow:
    initial_window = INITIAL_WINDOW


@rule("abc", "slow start grows at most 2 packets per report", "RFC 3465 (L = 2)")
class Abc(_Base):
    LIMIT = 2
    ss_event = -1.0  # the report (its time) slow start's growth is counted for
    ss_grown = 0

    def _slow_start(self, now: float) -> None:
        if now != self.ss_event:
            self.ss_event, self.ss_grown = now, 0
        if self.ss_grown < self.LIMIT:
            super()._slow_start(now)
            self.ss_grown += 1


@rule("recovery_hold", "no growth on the flight a NACK cut answered",
      "RFC 5681 3.2, RFC 6582 3.2", requires=("reno_window",))
class RecoveryHold(_Base):
    """No growth on the packets out at a NACK cut (TCP's fast recovery); a timeout or an undo holds none."""

    hold_until = 0

    def _avoid_congestion(self, s: int) -> None:
        if s > self.hold_until:
            super()._avoid_congestion(s)

    def _congestion(self, now: float, timeout: bool) -> None:
        super()._congestion(now, timeout)
        self.hold_until = 0 if timeout else self.recover

    def _undo_cuts(self, since: float) -> int:
        undone = super()._undo_cuts(since)
        if undone:
            self.hold_until = 0
        return undone


@rule("reno_window", "loss-driven AIMD: the first NACK of a new loss halves cwnd",
      "RFC 5681 3.2; " + _OURS, slot="avoidance")
class RenoWindow(_Base):
    """Reno's AIMD instead of Vegas: beside TCP on a drop-tail queue Vegas gets a small fraction."""

    def _avoid_congestion(self, s: int) -> None:
        self.cwnd += 1.0 / self.cwnd

    def _vegas_round(self, now: float) -> None:
        return None

    def _nack_is_congestion(self, c: _Child, s: int) -> bool:
        if c.nacks[s] == 1 and c.rexmits.get(s, 0) == 0:
            return s > self.recover
        return super()._nack_is_congestion(c, s)


@rule("delayed_ack", "a leaf ACKs every second packet and out-of-order ones at once",
      "RFC 5681 4.2", roles=(RECEIVER,))
class DelayedAck(_Rx):
    """A leaf ACKs as TCP's receiver does; an SA still waits the ACK delay to fold its children in."""

    def _ack_at_once(self, in_order: bool) -> bool:
        return not self.is_agent and ack_at_once(self.unacked, not in_order, DELAYED_ACK_PACKETS)


@rule("fold_roll_call", "a stalled fold calls its members to answer by NACK; one a silent member holds is dropped",
      roles=(SENDER,))
class FoldRollCall(_Base):
    """A switch's fold is the lowest of its members' summaries, so a member that falls silent
    (a crash with no membership ageing to drop its port) holds it, and every packet, for good.
    When a packet times out at the fold, or a fold falls below what the last call's answers
    showed, the sender calls the roll: a window update to the group with ``cum_ack`` set, which
    every member answers by NACK (no switch folds a NACK).  If every member that answered holds
    the packet the fold lacks, the first call moves the fold on to the lowest answer (its last
    message may just have been lost); a fold still frozen at the second call is a silent
    member's: the session is *unfolded*, the members that answered become children that
    acknowledge by NACK (``solo_children``), timed by roll calls rather than probes (ours)."""

    COUNTERS = ("unfolds",)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.unfolded = False
        self.rollcall_at: float | None = None  # when the call out went (None: no call out)
        self.rollcall_ts = 0  # the call's timestamp, which answers echo
        self.rollcall_fold: int | None = None  # the fold's cum_ack when the call went out
        self.rollcall_heard: dict[int, int] = {}  # answers: node id -> cumulative ACK
        self.fold_reported = 0  # highest cum_ack a fold carried
        self.fold_moved_at = 0.0  # when it last rose
        self.fold_stalled_at: int | None = None  # fold_reported when a call last found it stalled
        #: Children that acknowledge by NACK since the unfold, by node id (a child removed and
        #: heard again is a new record, and reports as it then does).
        self.solo_children: dict[int, _Child] = {}

    # When to call --------------------------------------------------------------------------
    def _suspect(self, c: _Child, now: float) -> None:
        if c.aggregated or self._is_solo(c):
            self._roll_call(now)  # neither is probed: the call asks them
        super()._suspect(c, now)

    def _fold_refused(self, msg: Any, now: float) -> bool:
        if self.unfolded:  # a fold from a member that missed the call: call again
            if msg.node_id not in self.departed:
                self._roll_call(now)
            return True
        if msg.cum_ack > self.fold_reported:
            self.fold_reported, self.fold_moved_at, self.fold_stalled_at = msg.cum_ack, now, None
        return super()._fold_refused(msg, now)

    def _fold_heard(self, fold: _Child, cum_ack: int, now: float) -> None:
        if cum_ack < fold.sb.cum_ack:  # below a call's answers: a member is behind
            self._roll_call(now)
        super()._fold_heard(fold, cum_ack, now)

    # The call and its answers ----------------------------------------------------------------
    def _rollcall_wait(self) -> float:
        """How long a call's answers may take: the fold's (or NACK-acknowledging children's) probe wait."""
        kids = [c for c in self.children.values()
                if (c.aggregated or self._is_solo(c)) and c.rtt.srtt is not None]
        return max((self._answer_timeout(c) for c in kids), default=RTO_INITIAL)

    def _roll_call(self, now: float) -> None:
        """Ask every member to answer by NACK; one call out at a time.  ``adv_wnd`` 1: unfolded,
        report by NACK from now on."""
        if self.rollcall_at is not None or self.done:
            return
        fold = self.children.get(FOLD_ID)
        self.rollcall_fold = fold.sb.cum_ack if fold is not None else None
        self.rollcall_at, self.rollcall_heard, self.rollcall_ts = now, {}, ts_us(now) or 1
        waiting = min(self.buf, default=self.next_seq)
        self.send(self.group, MtcpWindowUpdate(session_id=self.cfg.session_id, timestamp=self.rollcall_ts,
                                               node_id=self.nid, cum_ack=max(1, waiting),
                                               adv_wnd=int(self.unfolded)).encode())
        self.set_timer("rollcall", now + self._rollcall_wait())

    def _nack_heard(self, c: _Child, msg: Any, now: float) -> None:
        if self.unfolded and c.nack_only:
            self._solo(c, now)  # the session is unfolded: a member's NACK makes it a child
        if self.rollcall_at is not None:
            self.rollcall_heard[msg.node_id] = msg.cum_ack
            if msg.timestamp == self.rollcall_ts:
                self._rollcall_answer(c, now)
        super()._nack_heard(c, msg, now)

    def _rollcall_answer(self, c: _Child, now: float) -> None:
        """An answer is an RTT sample (the fold's, for a member behind it); the others' wait shrinks."""
        target = self.children.get(FOLD_ID) if c.nack_only else c
        if self.rollcall_at is None or target is None:
            return
        target.rtt.sample(now - self.rollcall_at)
        close = self.rollcall_at + self._rollcall_wait()
        if close < (self.timer_at("rollcall") or float("inf")):
            self.set_timer("rollcall", max(now, close))

    @timer("rollcall")
    def _rollcall_closes(self, now: float) -> None:
        """The roll call's wait is over: act on the answers, then send what the window allows."""
        self._on_rollcall_timer(now)
        self._pump(now)

    def _on_rollcall_timer(self, now: float) -> None:
        """The answers are in: unfold a stalled fold, or time out silent NACK-acknowledging children."""
        at, heard = self.rollcall_at, self.rollcall_heard
        self.rollcall_at, self.rollcall_heard = None, {}
        if at is None:
            return
        fold = self.children.get(FOLD_ID)
        if fold is not None and not self.unfolded:
            stuck = fold.sb.cum_ack
            heard = {n: cum for n, cum in heard.items() if n in self.children and self.children[n].nack_only}
            # Every member that answered holds the packet the fold still lacks, and it has not moved since.
            if (heard and self.fold_moved_at < at and stuck == self.rollcall_fold
                    and all(cum > stuck for cum in heard.values()) and stuck + 1 in self.buf):
                if self.fold_stalled_at == self.fold_reported:
                    self._unfold(fold, heard, now)  # frozen across two calls: a silent member holds it
                else:
                    # The first time the fold's last message may just have been lost: take the answers.
                    self.fold_stalled_at = self.fold_reported
                    self._undo_cuts(self.fold_moved_at)
                    low = min(heard.values())
                    for x in [x for x in fold.rinflight if x <= low]:
                        del fold.rinflight[x]  # not an RTT sample: the answers came from the call
                    self._acknowledged(fold, fold.sb.update(low, limit=self._ack_limit()), now)
            return
        again = False
        for c in [c for c in self.children.values() if self._is_solo(c)]:
            silent = c.last_heard < at
            if not self._gone(c, silent, now) and silent:
                again = True
        if again:
            self._roll_call(now)
        self._arm_packet_timer()

    # Unfolded --------------------------------------------------------------------------------
    def _unfold(self, fold: _Child, heard: dict[int, int], now: float) -> None:
        """Drop the fold: the members that answered become children acknowledging by NACK."""
        del self.children[FOLD_ID]
        self.unfolded = True
        self.unfolds += 1
        for nid in heard:
            c = self.children.get(nid)
            if c is not None and c.nack_only:
                self._solo(c, now)
        # Cuts since the fold stalled were the silent member's, not congestion (RFC 4015).
        self._undo_cuts(self.fold_moved_at)
        self._recount(now)
        self.metric({"unfolded": 1, "children": len(self._acking())}, "tree-repair")
        self._roll_call(now)  # tells the members to report by NACK from now on

    def _solo(self, c: _Child, now: float) -> None:
        """Unfolded, a member known from its NACKs becomes a child that acknowledges by NACK."""
        c.nack_only, c.heard, c.last_heard = False, True, now
        c.min_cwnd, c.max_twnd, c.adv_wnd = NO_CWND, 0, self.p.rcv_buffer  # a leaf's summary
        self.solo_children[c.nid] = c
        self._recount()

    def _is_solo(self, c: _Child) -> bool:
        return self.solo_children.get(c.nid) is c

    def _probed(self, c: _Child) -> bool:
        if self._is_solo(c):
            return False  # timed by roll calls
        if self.unfolded:  # no fold any more: the sender probes its other children itself
            return not (c.aggregated or c.nack_only)
        return super()._probed(c)

    def _reports_by_nack(self, c: _Child) -> bool:
        return self._is_solo(c) or super()._reports_by_nack(c)


@rule("fold_roll_call", roles=(RECEIVER,))
class FoldRollCallAnswer(_Rx):
    """A member answers the sender's roll call by NACK at once; once the call says the session is
    unfolded (``adv_wnd`` 1) it reports by NACK only (``solo``), naming its holes again once their
    repair is overdue, as its reports ride on data that a hole stops."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.solo = False  # reports by NACK only (which no switch folds) since the unfolding call
        self.last_nack_at = float("-inf")

    def _on_probe(self, msg: MtcpWindowUpdate, src: Any, now: float) -> None:
        if not msg.cum_ack or msg.flags & Flags.AGGREGATED:
            super()._on_probe(msg, src, now)  # a probe (a folding switch may rewrite one)
            return
        # A roll call (cum_ack set, not a fold): the sender's own children answer by NACK.
        if src[0] != self.parent[0] or src[0] != self.cfg.sender or msg.node_id != node_id(src[0]):
            return
        self.solo = self.solo or bool(msg.adv_wnd)
        self._nack(self.rbuf.missing(MAX_NACK_SEQS), now, echo=msg.timestamp)

    def _report(self, cls: Any, now: float, echo: int) -> None:
        if self.solo:
            self._nack(self.rbuf.missing(MAX_NACK_SEQS), now)  # solo, every report is a NACK
        else:
            super()._report(cls, now, echo)

    def _nack_due(self, missing: list[int], now: float) -> list[int]:
        return [] if self.solo else super()._nack_due(missing, now)  # solo, its reports name them

    def _nack(self, missing: list[int], now: float, echo: int = 0) -> None:
        self.last_nack_at = now
        if self.solo and missing and self.timer_at("nack") is None:  # re-armed by _solo_renack
            self.set_timer("nack", now + self._holdoff())
        super()._nack(missing, now, echo)

    def _on_nack_timer(self, now: float) -> None:
        if self.solo:
            self._solo_renack(now)
        else:
            super()._on_nack_timer(now)

    def _solo_renack(self, now: float) -> None:
        """Solo, holes are NACKed again once overdue."""
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        if not missing:
            return
        due = self.last_nack_at + self._holdoff()
        if now >= due - 1e-9:
            self._nack(missing, now)
        else:
            self.set_timer("nack", due)


@rule("nack_holdoff", "behind a fold, a hole is NACKed again only once its repair is overdue",
      roles=(RECEIVER,))
class NackHoldoff(_Rx):
    """Assisted, a hole is NACKed again only once its repair is overdue: a NACK per ACK per
    receiver behind a fold crowded the fold's ACKs out of the reverse queue."""

    def _nack_due(self, missing: list[int], now: float) -> list[int]:
        missing = super()._nack_due(missing, now)
        if not missing or not self.assisted:
            return missing
        wait = self._holdoff()
        return missing if any(s not in self.nacked or now - self.nacked[s][0] >= wait for s in missing) else []


@rule("rack_reordering", "once the path has reordered, three later packets no longer make a hole a loss",
      "RFC 8985 6.2", roles=(RECEIVER,), requires=("nack_rack",))
class RackReordering(_Rx):
    """RACK's reading once reordering is seen (RFC 8985 6.2): three later packets make a hole
    a loss only on a path not seen to reorder; after an original packet arrived below one
    already here, a hole is NACKed only once ``nack_rack``'s window passed, widened by each
    original that fills a hole already NACKed (:class:`hosts.tcp_rules.ReorderWindow`, its
    round trip the NACK-to-repair time).  A path that reorders is not a lossy one: NACKing
    each reordered packet answered every hit frame as a loss."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.reo = ReorderWindow()

    def _ripe(self, s: int, now: float) -> bool:
        if not self.reo.reordering_seen:
            return super()._ripe(s, now)
        return s in self.nacked or now - self.hole_at.get(s, now) >= self._reo_wnd()

    def _reo_wnd(self) -> float:
        return self.reo.mult * super()._reo_wnd()

    def _arrived(self, seq: int, now: float, repair: bool) -> None:
        if seq in self.nacked:
            if repair:
                self.reo.loss_event()  # a NACKed hole its repair filled: a real loss
            else:  # the NACK was spurious
                self.reo.late(now, ACK_DELAY if self.nack_rtt is None else self.nack_rtt)
        elif not repair and seq < self.rbuf.highest:
            self.reo.reordering_seen = True
        super()._arrived(seq, now, repair)


@rule("nack_rack", "a hole is NACKed a reordering window after a later packet arrived",
      "RFC 8985", roles=(RECEIVER,), requires=("nack_dupthresh",))
class NackRack(_Rx):
    """RACK (RFC 8985): with windows of a few packets no hole has three above it."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.hole_at: dict[int, float] = {}  # hole -> when a packet above it first arrived

    def _reo_wnd(self) -> float:
        return ACK_DELAY if self.nack_rtt is None else REORDER_WINDOW_RTTS * self.nack_rtt

    def _ripe(self, s: int, now: float) -> bool:
        return super()._ripe(s, now) or now - self.hole_at.get(s, now) >= self._reo_wnd()  # type: ignore[misc]

    def _arrived(self, seq: int, now: float, repair: bool) -> None:
        super()._arrived(seq, now, repair)
        self.hole_at.pop(seq, None)
        if seq > self.rbuf.cum_ack:
            fresh = [s for s in self.rbuf.missing(MAX_NACK_SEQS) if s not in self.hole_at]
            for s in fresh:
                self.hole_at[s] = now
            if fresh and self.timer_at("nack") is None:
                self.set_timer("nack", now + self._reo_wnd() + 1e-9)

    def _on_nack_timer(self, now: float) -> None:
        """NACK what is ripe (in place of the core's, which does only that), then arm the timer
        again for the holes still inside their reordering window (solo, ``fold_roll_call``
        composes above and takes the timer)."""
        self.hole_at = {s: t for s, t in self.hole_at.items() if not self.rbuf.has(s)}
        missing = self._nack_what_is_due(now)
        wait = [self.hole_at[s] for s in missing if s in self.hole_at and s not in self.nacked]
        if wait:
            reo = self._reo_wnd()
            at = min(wait) + reo + 1e-9
            self.set_timer("nack", at if at > now else now + reo)


@rule("nack_dupthresh", "a new hole is NACKed once 3 later packets arrived",
      "RFC 5681 3.2", roles=(RECEIVER,))
class NackDupthresh(_Rx):
    THRESH = DUPTHRESH

    def _ripe(self, s: int, now: float) -> bool:
        return s in self.nacked or self.rbuf.received_above(s) >= self.THRESH

    def _nack_due(self, missing: list[int], now: float) -> list[int]:
        ripe = [s for s in missing if self._ripe(s, now)]
        if not ripe:
            return []
        return super()._nack_due(missing[:missing.index(ripe[-1]) + 1], now)


@rule("shared_loss_multicast", "the sender repairs a loss several children share by multicast, once",
      roles=(SENDER,))
class SharedLossMulticast(_Base):
    """A loss shared at a bottleneck is repaired once by multicast, not once per child across it."""

    def _also_lacking(self, c: _Child, s: int, now: float) -> list[_Child]:
        if c.aggregated or c.sb.highest <= s:
            return []
        # The others that hold packets above s but not s, and had no repair of it within their round trip.
        return [x for x in self._acking()
                if x is not c and not x.aggregated and not x.sb.acked(s) and x.sb.highest > s
                and now - x.last_tx.get(s, -math.inf) >= (RTO_INITIAL if x.rtt.srtt is None else x.rtt.srtt)]


@rule("stalled_children", "a child that acknowledges nothing new is removed",
      "RFC 9293 3.10.7.4; " + _OURS)
class StalledChildren(_Base):
    """A child that answers probes but acknowledges nothing new while its siblings move is
    removed; its reports are refused until one covers a packet sent after the removal."""

    STALL_MIN = 2.0
    STALL_RTTS = 4.0

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.progress_at: dict[int, float] = {}  # when each child last acknowledged new data
        self.held_out: dict[int, int] = {}  # removed stalled child -> first packet after the removal

    def _refused(self, nid: int, top: int) -> bool:
        after = self.held_out.get(nid)
        if after is not None and top >= after:
            del self.held_out[nid]  # it covers a packet sent after its removal: heard again
        return nid in self.held_out

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        folded = bool(msg.flags & Flags.AGGREGATED)
        if not folded and self._refused(msg.node_id, msg.cum_ack + msg.sack_bitmap.bit_length()):
            return
        super()._on_feedback(msg, src, now)
        c = self.children.get(msg.node_id)
        if not folded and c is not None:
            self._check_stall(c, now)

    def _on_nack(self, msg: Any, src: Any, now: float) -> None:
        if not self._refused(msg.node_id, msg.cum_ack):
            super()._on_nack(msg, src, now)

    def _acknowledged(self, c: _Child, newly: list[int], now: float) -> None:
        if newly or c.nid not in self.progress_at:
            self.progress_at[c.nid] = now
        super()._acknowledged(c, newly, now)

    def _stall_after(self, c: _Child) -> float:
        return max(self.STALL_MIN, self.STALL_RTTS * (c.rtt.srtt or 0.0))

    def _stalled_since(self, c: _Child, now: float) -> float | None:
        owed = next((s for s in sorted(self.buf) if not c.sb.acked(s)), None)
        if owed is None:
            return None
        return max(self.progress_at.get(c.nid, now), now - seconds_since(self.buf[owed].sender_ts, now))

    def _check_stall(self, c: _Child, now: float) -> None:
        since = self._stalled_since(c, now)
        if since is None or now - since <= self._stall_after(c):
            return
        moving = [x for x in self._acking() if x is not c
                  and ((t := self._stalled_since(x, now)) is None or now - t <= self._stall_after(x) / 2)]
        if not moving:
            return  # the whole group waits: the path, not one child
        self.held_out[c.nid] = self._next_point()
        self.progress_at.pop(c.nid, None)
        c.last_heard = since  # the cuts since it stalled are undone with it
        self._remove_child(c, now)


@rule("remove_dead_children", "a child silent through 3 probes (or roll calls) is removed as dead")
class RemoveDeadChildren(_Base):
    """A child that answers none of ``DEAD_PROBES`` probes in a row (a member reporting by NACK:
    roll calls) is removed: packets only it lacked are released and its children adopted; a
    later report makes it a child again.  The paper probes but names no death rule, and one
    dead child holds every packet, and so the window, for good (ours)."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.missed: dict[int, int] = {}  # child -> probes (or roll calls) in a row it did not answer

    def _gone(self, c: _Child, silent: bool, now: float) -> bool:
        if super()._gone(c, silent, now):
            return True
        if not silent:
            self.missed[c.nid] = 0
            return False
        self.missed[c.nid] = self.missed.get(c.nid, 0) + 1
        if self.missed[c.nid] < DEAD_PROBES:
            return False
        self._remove_child(c, now)
        return True

    def _remove_child(self, c: _Child, now: float) -> None:
        self.missed.pop(c.nid, None)  # a child again later starts with none missed
        super()._remove_child(c, now)


@rule("join_at_window_edge", "a child reporting nothing mid-session starts at the oldest packet still buffered",
      "RFC 3208 (PGM late join); " + _OURS)
class JoinAtWindowEdge(_Base):
    """A child reporting ``cum_ack`` 0 in a running session (a late joiner, a restarted receiver)
    starts at the oldest packet its agent still buffers, told so by a join (a NACK from its parent
    naming the start), not owed the whole stream, which no agent holds.  A receiver takes a join
    only before it delivered anything; a child whose report then falls below its start kept its
    own stream and is served from its report (the packets between come from the stream)."""

    COUNTERS = ("late_joins", "refused_joins")
    late_joined = 0  # (a receiver) where our stream began, if we joined a running session

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.late_start: dict[int, int] = {}  # child -> the first packet of the stream it was started at

    def _late_join(self, c: _Child, cum_ack: int, now: float) -> bool:
        if super()._late_join(c, cum_ack, now):
            return True
        if cum_ack != 0 or c.aggregated:
            return False
        start = max(min(self.buf) if self.buf else self._next_point(), c.sb.cum_ack + 1)
        if start <= 1:
            return False  # the session is at its first packet: nothing to skip
        self._restart_record(c, start - 1)
        self.late_start[c.nid] = start
        self.late_joins += 1
        self.send(c.addr, MtcpNack(session_id=self.cfg.session_id, timestamp=ts_us(now) or 1,
                                   cum_ack=start - 1, node_id=self.nid).encode())
        self.metric({"late_join": c.nid, "start": start}, "tree-repair")
        return True

    def _join_refused(self, c: _Child, cum_ack: int) -> bool:
        """Data reached the child before its join did, so it kept its own stream (``_on_join``):
        its report is the truth, and the packets between are served from the stream."""
        if super()._join_refused(c, cum_ack):
            return True
        start = self.late_start.get(c.nid, 0)
        if not start or not 0 < cum_ack < start - 1:
            return False
        del self.late_start[c.nid]
        self._restart_record(c, cum_ack)
        self.refused_joins += 1
        return True

    def _remove_child(self, c: _Child, now: float) -> None:
        self.late_start.pop(c.nid, None)  # a child again later is a new record
        super()._remove_child(c, now)

    def _on_join(self, msg: MtcpNack, now: float) -> None:
        """The receiver's half: taken only before anything was delivered."""
        super()._on_join(msg, now)  # type: ignore[misc]
        if self.rbuf.delivered_packets or msg.cum_ack == 0:  # type: ignore[attr-defined]
            return
        for d in self.rbuf.start_at(msg.cum_ack + 1):  # type: ignore[attr-defined]
            self.emit(d)  # type: ignore[attr-defined]
        self.late_joined = msg.cum_ack + 1
        self.metric({"start": msg.cum_ack + 1}, "late-join")
        self._ack_soon(now)  # type: ignore[attr-defined]


@rule("undo_dead_cuts", "the cuts since a removed or silent member was last heard are undone", "RFC 4015 3.1")
class UndoDeadCuts(_Base):
    """The cuts since a member removed as dead (or a fold held by a silent member) was last heard
    were its silence, not congestion: undone as RFC 4015 3.1 undoes spurious ones.  Registered
    after ``recovery_hold``, which reads what was undone."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.cuts = CutLog()  # the window before each recent cut

    def _congestion(self, now: float, timeout: bool) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        super()._congestion(now, timeout)

    def _undo_cuts(self, since: float) -> int:
        undone = super()._undo_cuts(since)
        self.cwnd, self.ssthresh, n = self.cuts.undo_since(since, self.cwnd, self.ssthresh, self.twnd,
                                                           self.initial_window)
        return undone + n


#: Profile ``default``: the paper plus the rules that earned their place, listed by name;
#: a rule registered above but not listed here is off until it is measured and listed.
DEFAULT = (
    "rtt_fair_increase",
    "resume_stream",
    "timer_jitter",
    "initial_window",
    "abc",
    "recovery_hold",
    "reno_window",
    "delayed_ack",
    "fold_roll_call",
    "nack_holdoff",
    "rack_reordering",
    "nack_rack",
    "nack_dupthresh",
    "shared_loss_multicast",
    "stalled_children",
    "remove_dead_children",
    "join_at_window_edge",
    "undo_dead_cuts",
)
RULES = rule.book(default=DEFAULT, stamped=("stamp_climb", "stamp_echo", "share_window"))
