"""MTCP's named rules (:class:`hosts.rules.Registrar`); reasons in ``docs/protocols/mtcp.md#rules``.
``recovery_hold`` wraps ``reno_window``; ``nack_holdoff`` and ``nack_rack`` wrap ``nack_dupthresh``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from p4mcc.hosts.mtcp.core import ACK_DELAY, FOLD_ID, INITIAL_SSTHRESH, NO_CWND, RTO_INITIAL, _Child
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.reliable import ResumableStream
from p4mcc.hosts.rtt import RttSpread, ewma
from p4mcc.hosts.rules import Registrar
from p4mcc.hosts.stampwindow import StampEcho, short_queue
from p4mcc.hosts.tcp_rules import (DELAYED_ACK_PACKETS, DUPTHRESH, INITIAL_WINDOW, LEAST_SSTHRESH, REORDER_WINDOW_RTTS,
                                   ack_at_once)
from p4mcc.hosts.wire import MAX_NACK_SEQS, Flags, MtcpAck, Share, Stamp, seconds_since

if TYPE_CHECKING:  # the mixins run on top of the cores
    from p4mcc.hosts.mtcp.receiver import MtcpReceiver as _Rx
    from p4mcc.hosts.mtcp.sender import MtcpSender as _Base
else:
    _Base = _Rx = object

SENDER, RECEIVER = "mtcp-sender", "mtcp-receiver"
_OURS = "ours, see docs/protocols/mtcp.md#rules"
#: A mixin serves both roles unless it names one: an agent is a receiver that also sends.
rule = Registrar("mtcp", _OURS, roles=(SENDER, RECEIVER))


@rule("rtt_fair_increase",
      "congestion avoidance grows (R_max/R_c)^2 times faster, R_c the round trip of the receivers that cut",
      "TCP Hybla (Caini & Firrincieli 2004); " + _OURS, roles=(SENDER,), requires=("reno_window",))
class RttFairIncrease(_Base):
    """In congestion avoidance the window grows (R_max / R_c)^2 times faster (:class:`RttSpread`),
    R_max the largest smoothed RTD, R_c that of the receivers whose NACKs cut."""

    RTD_GAIN = 0.125  # RFC 6298's alpha, per receiver
    MIN_SPREAD = 1.5  # below it the spread is one path's queue seen at different times, not two paths

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.node_rtd: dict[int, float] = {}  # receiver -> smoothed RTD (a fold's triggering member included)
        self.spread = RttSpread(self.MIN_SPREAD)
        self.cutter: int | None = None

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        if msg.echo_ts and isinstance(msg, MtcpAck):
            rtd = seconds_since(msg.echo_ts, now)
            self.node_rtd[msg.node_id] = ewma(self.node_rtd.get(msg.node_id), rtd, self.RTD_GAIN)
        super()._on_feedback(msg, src, now)

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
        return self.spread.factor(max(self.node_rtd.values(), default=None))

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

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        if isinstance(msg, MtcpAck):
            self.stamp = msg.stamp
        super()._on_feedback(msg, src, now)

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

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        if isinstance(msg, MtcpAck):
            self.share_echoes[msg.node_id] = msg.share if Stamp.stamped(msg.stamp) else Share.NONE
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


@rule("resume_stream", "a restarted sender resumes the stream where its receivers are", roles=(SENDER,))
class ResumeStream(ResumableStream, _Base):
    """A sender whose first reports show data was restarted mid-session (its host rebooted): it
    resumes after the lowest cumulative ACK heard before it starts; a receiver behind NACKs the
    packets between, which the stream still holds.  Unfolded children are heard by their window
    updates (3.9); a fold repeats nothing it sent before, so a sender that hears nothing calls the
    roll, and the first answer stands in for the fold until the fold moves (ours)."""

    def on_start(self, now: float) -> None:
        super().on_start(now)
        self.set_timer("resume", now + RTO_INITIAL)

    def _started(self, now: float) -> None:
        super()._started(now)
        self.cancel_timer("resume")

    def on_timer(self, name: str, now: float) -> None:
        if name != "resume":
            super().on_timer(name, now)
        elif not self.started and not any(c.heard for c in self.children.values()):
            self._roll_call(now)
            self.set_timer("resume", now + RTO_INITIAL)

    def _resume(self, cum_ack: int) -> bool:
        if not self._resume_after(cum_ack):
            return False
        for c in self.children.values():
            c.sb.start_after(self._resume_floor())
        return True

    def _child(self, nid: int, addr: Any, now: float | None = None) -> _Child:
        new = nid not in self.children
        c = super()._child(nid, addr, now)
        if new and self.resumed_from:  # a child first heard in a resumed stream lists nothing below it
            c.sb.start_after(self._resume_floor())
        return c

    def _on_feedback(self, msg: Any, src: Any, now: float) -> None:
        self._resume(msg.cum_ack)
        super()._on_feedback(msg, src, now)

    def _on_nack(self, msg: Any, src: Any, now: float) -> None:
        answered = self.assisted and self._resume(msg.cum_ack)
        super()._on_nack(msg, src, now)
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
      "RFC 5681 3.2; " + _OURS)
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

    def _arrived(self, seq: int, now: float) -> None:
        super()._arrived(seq, now)
        self.hole_at.pop(seq, None)
        if seq > self.rbuf.cum_ack:
            fresh = [s for s in self.rbuf.missing(MAX_NACK_SEQS) if s not in self.hole_at]
            for s in fresh:
                self.hole_at[s] = now
            if fresh and self.timer_at("nack") is None:
                self.set_timer("nack", now + self._reo_wnd() + 1e-9)

    def on_timer(self, name: str, now: float) -> None:
        if name != "nack" or self.solo:
            super().on_timer(name, now)
            return
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


#: ``default``: every rule but those that read the stamp, which make up ``stamped`` with it.
RULES = rule.book(stamped=("stamp_climb", "stamp_echo", "share_window"))
