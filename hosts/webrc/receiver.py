"""WEBRC's receiver as the paper describes it, RFC 3738 where it is silent: the ``paper``
profile (constants' sources: ``docs/protocols/webrc.md``).  Rules in :mod:`hosts.webrc.rules`
override the methods marked ``@hook`` and call ``super()``; nothing here asks whether a rule is on."""

from __future__ import annotations

import math
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Address, JoinGroup, LeaveGroup
from p4mcc.hosts.estimators import SelfAdjustingEwma, TwoStageLossFilter
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tfrc import invert, rto, tcp_rate_webrc_pps
from p4mcc.hosts.webrc.constants import (ARTT_ALPHA, JOIN_TIMEOUT_MIN, LOSS_DELTA, LOSS_EPOCH_BETA, MRTT_JUMP_GAPS, MRTT_JUMP_MIN,
                                         OVERFLOW_MARGIN, RATE_EWMA, RR_LAG_MARGIN, RR_LAG_MIN_PACKETS,
                                         SSR_FACTOR, TRR_HEADROOM)
from p4mcc.hosts.webrc.params import WebrcParams, gamma
from p4mcc.hosts.webrc.sender import channel_group
from p4mcc.hosts.wire import WEBRC_LAST_PSN, WebrcData


class WebrcReceiver(SessionEndpoint[WebrcParams], role="webrc-receiver"):
    """A WEBRC receiver (paper 3.1-3.3, Table 2, appendix; RFC 3738 3.2)."""

    TIMERS = frozenset({"epoch", "join_timeout"})  # what on_timer handles (Endpoint.TIMERS)

    unicast_on_session_port = False  # feedback goes out only
    ARTT_ALPHA = ARTT_ALPHA

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        s = self.p
        self.N, self.T = s.n, s.t
        self.mrr = s.max_rate_bps / (8.0 * s.packet_length)  # MRR, packets/s
        self.groups = [channel_group(config.group, cn, self.T) for cn in range(self.T + 1)]
        self.tsi: int | None = None
        self.nwc = 0
        self.joined: list[int] = []  # wave channels, oldest (lowest rate) first
        self.pending: tuple[int, float, float] | None = None  # (cn, join time, gap)
        self.expect: dict[int, int] = {}  # next PSN per channel
        self.last_psn: dict[int, int] = {}
        self.last_ts: dict[int, int] = {}  # sender timestamp of each channel's latest packet
        self.artt: Any = self._new_artt()
        self.have_artt = False
        self.last_mrtt: float | None = None
        self.lossp: Any = self._new_loss_filter()
        self.arr: float | None = None  # anticipated reception rate, packets/s
        self.trr: float | None = None  # true reception rate, packets/s
        self._trr_ewma: float | None = None
        self.rr_epoch = self.lost_epoch = self.events_epoch = 0  # this epoch's packets, losses, loss events
        self.loss_event_until = -math.inf
        self.startup = True
        self.ssr = math.inf
        self.max_rr_since_join = self.last_rr = 0.0
        self.events_since_join = 0  # loss events since the last join took effect
        self.join_effect_epochs = 0  # full epochs measured since the last join took effect
        self.mrtt_samples: list[float] = []
        self.joins = self.leaves = self.join_timeouts = self.blocked_overflow = 0
        self.received = self.lost = self.loss_events = self.bytes_received = 0
        self.startup_exit: str = ""

    @hook
    def _new_artt(self) -> Any:
        """ARTT's estimator; the appendix's self-adjusting EWMA."""
        return SelfAdjustingEwma(self.ARTT_ALPHA)

    @hook
    def _artt_sample(self, mrtt: float, gap: float) -> None:
        """Feed one MRTT sample (``gap``: the joined channel's packet gap)."""
        if not self.have_artt:
            self.artt = SelfAdjustingEwma(self.ARTT_ALPHA, initial=mrtt)
            self.have_artt = True
        else:
            self.artt.update(mrtt)

    @hook
    def _new_loss_filter(self) -> Any:
        """LOSSP's estimator; the appendix's two filters (epoch EWMA, then F)."""
        return TwoStageLossFilter(LOSS_EPOCH_BETA, LOSS_DELTA)

    @property
    def artt_value(self) -> float:
        return self.artt.value if self.have_artt else self.p.initial_rtt

    def reqn(self) -> float:
        """REQN_P (eq. 6): the equation rate from ARTT and LOSSP; infinite before loss."""
        lp = self.lossp.loss_rate
        rtt = self.artt_value
        return tcp_rate_webrc_pps(rtt, lp, rto(rtt)) if lp > 0 else math.inf

    def trate(self) -> float:
        """TRATE_P (eq. 5); start-up uses Γ³·TRR and SSR = ∞ (3.2)."""
        g = gamma(self.p.p, self.nwc)
        trr = self.trr if self.trr is not None else 0.0
        exp = 3 if self.startup else 1
        return min(max(self.ssr, self.reqn()), g**exp * trr * (1 + TRR_HEADROOM), self.mrr)

    @hook
    def _join_limit(self, g: float) -> float:
        """The largest Γ·ARR a join allows: eq. 5's TRATE."""
        return self.trate()

    def in_loss_event(self, now: float) -> bool:
        return now < self.loss_event_until

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.groups[self.T]))  # base channel first
        self.pending = (self.T, now, 1.0 / self.p.base_rate_pps)
        self.set_timer("epoch", now + self.p.epoch)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, WebrcData)
        if msg is None:
            return
        if msg.cn > self.T or (msg.cn != self.T and msg.cn not in self.joined):
            self.ignored += 1  # no such channel, or a late packet of one already left
            return
        self._on_packet(msg, len(data), now)

    @hook
    def _on_packet(self, msg: WebrcData, size: int, now: float) -> None:
        self.received += 1
        self.rr_epoch += 1
        self.lossp.on_packets(1)
        self.bytes_received += size
        self._check_slot(msg.tsi % self.T, now, msg.timestamp)
        self._check_loss(msg.cn, msg.psn, now, msg.timestamp)
        self._packet_seen(msg, now)
        if self.pending is not None and self.pending[0] == msg.cn:
            self._first_packet(now, msg.timestamp)

    @hook
    def _packet_seen(self, msg: WebrcData, now: float) -> None:
        """A packet counted and checked for loss, before it may answer a join."""

    def _check_slot(self, tsi: int, now: float, ts: int) -> None:
        """Each new slot turns the oldest joined wave quiet: leave it (``ts``: the
        sender timestamp of the packet that showed the slot)."""
        if self.tsi is None:
            self.tsi = tsi
            return
        step = (tsi - self.tsi) % self.T
        if step == 0 or step > self.T // 2:
            return  # same slot, or a late packet from an older slot
        for _ in range(step):
            ending = self.tsi
            if self.joined and self.joined[0] == ending:
                self._leave(ending, now, ts)
            self.tsi = (self.tsi + 1) % self.T

    def _drop_channel(self, cn: int) -> None:
        """Leave a joined wave channel: forget its sequence state, leave its group."""
        self.joined.remove(cn)
        for per_channel in (self.expect, self.last_psn, self.last_ts):
            per_channel.pop(cn, None)
        self.emit(LeaveGroup(self.groups[cn]))
        self.leaves += 1

    def _leave(self, cn: int, now: float, ts: int) -> None:
        last = self.last_psn.get(cn)
        if last is not None and last != WEBRC_LAST_PSN:
            # The wave's end is known (PSN 65535): everything after ``last`` was lost.
            self._lost((WEBRC_LAST_PSN - last) & 0xFFFF, now, ts)
        self._drop_channel(cn)
        if self.pending is not None and self.pending[0] == cn:
            self.pending = None
            self.cancel_timer("join_timeout")
        if self.arr is not None and self.nwc > 0:
            self._arr_after_leave()
        self.nwc = max(0, self.nwc - 1)

    @hook
    def _arr_after_leave(self) -> None:
        """ARR when the oldest wave turns quiet: the slot's decay, Γ, all at once."""
        assert self.arr is not None
        self.arr /= gamma(self.p.p, self.nwc - 1)

    def _check_loss(self, cn: int, psn: int, now: float, ts: int) -> None:
        exp = self.expect.get(cn)
        self.last_psn[cn] = psn
        gap = 0 if exp is None else (psn - exp) & 0xFFFF
        if gap >= 0x8000:
            return  # old or duplicate packet: the next expected PSN stands
        self.expect[cn] = (psn + 1) & 0xFFFF
        prev_ts = self.last_ts.get(cn)
        self.last_ts[cn] = ts
        if gap:
            self._lost(gap, now, ts, None if prev_ts is None else (prev_ts, ts))

    def _lost(self, count: int, now: float, revealed_ts: int, sent: tuple[int, int] | None = None) -> None:
        """``count`` packets lost, found at ``now`` by a packet sent at
        ``revealed_ts``; ``sent``: the sender timestamps of the packets before
        and after them on their channel."""
        if count <= 0:
            return
        self.lost += count
        self.lost_epoch += count
        span = self._loss_event_span(now, revealed_ts)
        if self._same_loss_event(now, count, sent, span):
            self._loss_in_event(now, span)
        else:
            # A loss event lasts ARTT from its first loss (footnote 4).
            self.loss_event_until = now + span
            self._loss_event_begins(now, span)
            self._count_loss_event()
            self.events_epoch += 1
            self.loss_events += 1
            self.events_since_join += 1
            if not self.startup and self.trr is not None:
                self.ssr = SSR_FACTOR * self.trr  # 3.1: SSR "is set below TRR when packet losses are detected"
            if self.startup and not self._startup_loss_forgiven(now, span):
                self._exit_startup("loss")
        self.lossp.on_packets(count)

    @hook
    def _loss_event_span(self, now: float, revealed_ts: int) -> float:
        """How long a loss event lasts after its first loss: ARTT (footnote 4)."""
        return self.artt_value

    @hook
    def _same_loss_event(self, now: float, count: int, sent: tuple[int, int] | None, span: float) -> bool:
        """Whether a loss found now belongs to the current loss event."""
        return self.in_loss_event(now)

    @hook
    def _loss_in_event(self, now: float, span: float) -> None:
        """A further loss of the current event (the paper: nothing changes)."""

    @hook
    def _loss_event_begins(self, now: float, span: float) -> None:
        """A new loss event began at ``now``."""

    @hook
    def _count_loss_event(self) -> None:
        """Tell LOSSP's estimator of a new loss event."""
        self.lossp.on_event()

    @hook
    def _startup_loss_forgiven(self, now: float, span: float) -> bool:
        """Whether a start-up loss leaves start-up going (3.2: never)."""
        return False

    def _first_packet(self, now: float, sent_ts: int) -> None:
        """MRTT: join to first packet, minus at most half the channel's packet gap (4.2)."""
        assert self.pending is not None
        cn, t_join, gap = self.pending
        self.pending = None
        self.cancel_timer("join_timeout")
        raw = now - t_join
        mrtt = raw - min(gap / 2, raw / 2)
        owd = wire.seconds_since(sent_ts, now) if sent_ts else None
        mrtt = self._mrtt_sample(now, mrtt, raw, owd, gap)
        prev = self.last_mrtt
        self.last_mrtt = mrtt
        self.mrtt_samples.append(mrtt)
        self._artt_sample(mrtt, gap)
        if cn != self.T:
            self.join_effect_epochs = self.events_since_join = 0
            self.max_rr_since_join = 0.0
            self._join_answered()
        if (self.startup and prev is not None and cn != self.T
                and mrtt - prev > max(MRTT_JUMP_GAPS * gap, MRTT_JUMP_MIN)):
            self._exit_startup("mrtt")

    @hook
    def _join_answered(self) -> None:
        """A wave's join took effect (its first packet came): what counts since the last join starts
        again (the paper: the counters above)."""

    @hook
    def _mrtt_sample(self, now: float, mrtt: float, raw: float, owd: float | None, gap: float) -> float:
        """The MRTT sample of a join (``raw``: join to first packet; ``owd``:
        that packet's one-way delay on the sender's timestamp, clock offset included)."""
        return mrtt

    @hook
    def _exit_startup(self, why: str) -> None:
        """Leave start-up: SSR ∝ TRR and LOSSP solved from eq. 6 so REQN = TRR (3.2)."""
        if not self.startup:
            return
        self.startup, self.startup_exit = False, why
        trr = self.trr if self.trr else max(self.last_rr, self.p.base_rate_pps)
        self.ssr = SSR_FACTOR * trr
        self._set_lossp_for(trr, fresh=True)

    def _set_lossp_for(self, rate_pps: float, fresh: bool = False) -> None:
        rtt = self.artt_value
        t_rto = rto(rtt)
        self.lossp.set_loss_rate(invert(lambda q: tcp_rate_webrc_pps(rtt, q, t_rto), rate_pps), fresh)

    def on_timer(self, name: str, now: float) -> None:
        if name == "epoch":
            self._epoch(now)
            self.set_timer("epoch", now + self.p.epoch)
        elif name == "join_timeout":
            self._join_timeout(now)

    def _epoch(self, now: float) -> None:
        rr, irr = self.rr_epoch, self.rr_epoch + self.lost_epoch
        events = self.events_epoch
        self.rr_epoch = self.lost_epoch = self.events_epoch = 0
        rr_rate = rr / self.p.epoch
        self.last_rr = rr_rate
        self._epoch_begins(rr_rate)
        self._carry_averages()
        w = RATE_EWMA
        # ARR follows the received rate; while a join is pending its Γ step stands.
        if self.arr is None:
            self.arr = rr_rate
        elif self.pending is None or self.pending[0] == self.T:
            self.arr = (1 - w) * self.arr + w * rr_rate
        self._trr_ewma = rr_rate if self._trr_ewma is None else (1 - w) * self._trr_ewma + w * rr_rate
        self._epoch_averaged(rr_rate)
        self.trr = self._true_rate()
        if not self.startup:
            self._steady_epoch(now, rr_rate, irr, events)
        self.max_rr_since_join = max(self.max_rr_since_join, rr_rate)
        if self.pending is None:
            self.join_effect_epochs += 1
        self._epoch_judged()
        self._decide_join(now, rr_rate)

    @hook
    def _epoch_begins(self, rr_rate: float) -> None:
        """An epoch ended with ``rr_rate``, before any average moves."""

    @hook
    def _carry_averages(self) -> None:
        """ARR and TRR's averages before the epoch's rate is added (the paper: as they are)."""

    @hook
    def _epoch_averaged(self, rr_rate: float) -> None:
        """An epoch's RR, once ARR and TRR's averages have moved, before TRR is read (the paper:
        nothing more)."""

    @hook
    def _true_rate(self) -> float | None:
        """TRR, the appendix's fixed-fraction average."""
        return self._trr_ewma

    @hook
    def _steady_epoch(self, now: float, rr_rate: float, irr: int, events: int) -> None:
        """An epoch out of start-up; LOSSP's first filter takes it (appendix)."""
        self.lossp.end_epoch(irr, events)

    @hook
    def _epoch_judged(self) -> None:
        """The epoch's averages are in, before the join decision."""

    @hook
    def _decide_join(self, now: float, rr_rate: float) -> None:
        if self.tsi is None or self.pending is not None or self.in_loss_event(now) or self.nwc >= self.N:
            return  # no slot known yet, a join pending, a loss event, or every active wave joined
        assert self.arr is not None
        g = gamma(self.p.p, self.nwc)
        target = self.trate()
        if g * self.arr > self._join_limit(g):
            return
        if self.startup and self.nwc > 0:
            # 3.2: a full epoch after the last join took effect, RR must keep up with ARR.
            if self.join_effect_epochs < 2:
                return
            if self._rr_lags(rr_rate):
                self._exit_startup("rr-lag")
                return
        if not self.startup and self.nwc > 0 and self._buffers_draining(now, rr_rate):
            # 3.3: a flat reception rate means buffers drain at the bottleneck rate.
            self.blocked_overflow += 1
            self._set_lossp_for(target)
            return
        self._join(now, g)

    @hook
    def _rr_lags(self, rr_rate: float) -> bool:
        """3.2's test that RR lags ARR (packets accumulate in buffers)."""
        assert self.arr is not None
        return self.arr * self.p.epoch >= RR_LAG_MIN_PACKETS and rr_rate < (1 - RR_LAG_MARGIN) * self.arr

    @hook
    def _buffers_draining(self, now: float, rr_rate: float) -> bool:
        """3.3's test: RR not below its maximum since the join by the margin."""
        return rr_rate >= (1 - OVERFLOW_MARGIN) * self.max_rr_since_join

    @hook
    def _subscribe(self, cn: int, now: float) -> None:
        """Join wave channel ``cn``."""
        self.emit(JoinGroup(self.groups[cn]))
        self.joined.append(cn)

    @hook
    def _join(self, now: float, g: float) -> None:
        assert self.tsi is not None and self.arr is not None
        cn = (self.tsi + self.nwc) % self.T
        gap = 1.0 / max(self.arr * (g - 1), 1e-6)
        self._subscribe(cn, now)
        self.pending = (cn, now, gap)
        self.arr *= g
        self.nwc += 1
        self.joins += 1
        self.set_timer("join_timeout", now + max(JOIN_TIMEOUT_MIN, 3 * self.artt_value + 2 * gap))

    @hook
    def _join_timeout(self, now: float) -> None:
        """No packet from the joined channel in time: undo the join so it can be retried."""
        if self.pending is None or self.pending[0] == self.T:
            return
        cn, self.pending = self.pending[0], None
        self.join_timeouts += 1
        if cn in self.joined:
            # Undo it and the waves joined after it in the same decision.
            for c in reversed(self.joined[self.joined.index(cn):]):
                self._undo_join(c)

    @hook
    def _undo_join(self, cn: int) -> None:
        """Leave a wave whose join timed out (the newest joined)."""
        self.joined.remove(cn)
        self.emit(LeaveGroup(self.groups[cn]))
        if self.arr is not None and self.nwc > 0:
            self.arr /= gamma(self.p.p, self.nwc - 1)
        self.nwc -= 1

    def close(self, now: float) -> None:
        """Leave the session: every joined wave channel, then the base channel."""
        self.now = max(self.now, now)
        for cn in list(self.joined):
            self.emit(LeaveGroup(self.groups[cn]))
        self.joined.clear()
        self.nwc = 0
        self.pending = None
        self.cancel_timer("join_timeout")
        self.cancel_timer("epoch")
        self.emit(LeaveGroup(self.groups[self.T]))

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        bits = 8.0 * self.p.packet_length
        return ({"rate_bps": (self.trr or 0.0) * bits, "target_bps": min(self.trate(), 1e12 / bits) * bits,
                 "loss_event_rate": self.lossp.loss_rate, "rtt_s": self.artt_value, "nwc": self.nwc},
                "startup" if self.startup else "steady")
