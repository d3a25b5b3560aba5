"""The TFMCC sender as the paper describes it (2.2, 2.4.2, 2.5, 2.6, 4.2); see
docs/protocols/tfmcc.md.  The methods marked ``@hook`` are the ones
:mod:`hosts.tfmcc.rules` may override."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Address
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tfmcc.constants import (CLR_TIMEOUT_ROUNDS, ECHO_CLR, ECHO_NEW_CLR, ECHO_NO_RTT, ECHO_OTHER,
                              MAX_RTT_S, RMAX_DECAY, SILENCE_ROUNDS, SLOWSTART_D, U32, feedback_delay, u32)
from p4mcc.hosts.tfmcc.params import DATA_HEADER, TfmccParams
from p4mcc.hosts.tfrc import rto, tcp_rate
from p4mcc.hosts.wire import TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags


@dataclass
class _Echo:
    prio: int
    rate: float
    rcvr: int
    ts: int
    received: float


class TfmccSender(SessionEndpoint[TfmccParams], role="tfmcc-sender"):
    """The TFMCC sender: CLR tracking, rate adjustment, feedback rounds, pacing."""

    TIMERS = frozenset({"send"})  # what on_timer handles (Endpoint.TIMERS)

    COUNTERS = ("clr_drops",)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.dest: Address = (config.group, config.port)
        s = self.p
        self.r_max = s.initial_rtt
        self.rate = self._initial_rate(self.r_max)
        self.slowstart = True
        self.ss_target = self.ss_from = self.rate
        self.ss_ramp_start = self.ss_step_at = 0.0
        self.clr: int | None = None
        self.clr_rate = math.inf
        self.clr_last = self.clr_changed_at = -math.inf
        self.clr_echo: _Echo | None = None
        self.pending: dict[int, _Echo] = {}
        self.fb_round = self.seq = self.reports = self.reports_this_round = 0
        self.round_start = self.first_nonclr_at = self.round_max_rtt = 0.0
        self.round_nonclr = self.rmax_measured = self.silent_latched = False
        self.round_recv: dict[int, float] = {}
        self.supp_rate = math.inf
        self.last_report = self.last_increase = 0.0
        self.round_report_counts: list[int] = []
        self.limited = False  # one packet per RTT per RTT after a CLR change (2.2)
        self._payload = bytes(s.packet_size - DATA_HEADER)
        self.rng = random.Random((config.seed << 32) ^ 0x7F3A)
        # The next packet's pacing tick, sent as its timestamp so receivers read
        # the sending rate exactly; the last packet's; the burst's progress.
        self._tick = self._last_tick = 0.0
        self._burst_sent, self._burst_size = 0, 1

    @hook
    def _initial_window_bytes(self) -> float:
        """One packet per R_max at the start (RFC 4654 3.1)."""
        return float(self.p.packet_size)

    def _initial_rate(self, rtt: float) -> float:
        """The initial window per ``rtt``, or ``initial_rate_bps`` when set."""
        return self.p.initial_rate_bps or 8.0 * self._initial_window_bytes() / rtt

    @hook
    def _slowstart_floor(self) -> float:
        """The lowest slowstart target: the rate's floor."""
        return self.p.min_rate_bps

    def T(self) -> float:
        """The feedback delay receivers use now (2.5.3)."""
        return feedback_delay(self.p.packet_size, self.r_max, self.rate)

    def _interval(self) -> float:
        """Pacing: one packet-time at the current rate."""
        return 8.0 * self.p.packet_size / self.rate

    def on_start(self, now: float) -> None:
        self.round_start = self.last_report = self.last_increase = now
        self.ss_ramp_start = self.ss_step_at = self._tick = now
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, TfmccReport)
        if msg is not None:
            before = self.rate
            self._on_report(msg, now)
            self._after_report(before, now)

    @hook
    def _after_report(self, before: float, now: float) -> None:
        """A report changes the rate the next packet is paced at (2.2)."""

    @hook
    def _police(self, rep: TfmccReport, now: float) -> bool:
        """Whether the sender takes the report: the paper trusts every receiver."""
        return True

    @hook
    def _bound_claimed_rtt(self, claimed: float, inst: float) -> float:
        """A receiver's RTT as reported (2.4.2), whatever the sender's own sample."""
        return claimed

    @hook
    def _claimed_rate(self, rate: float, eq: float) -> float:
        """The report's rate as the receiver computed it (2.2)."""
        return rate

    @hook
    def _unechoed_rtt(self, rep: TfmccReport, claimed: float | None) -> float | None:
        """A report's RTT when it echoes nothing: as claimed, or none (2.4.2)."""
        return claimed

    @hook
    def _echo_sample(self, rep: TfmccReport, now: float) -> float | None:
        """The sender's own RTT sample from the report's echo (2.4.4), if any."""
        if not rep.echo_ts:
            return None
        x = (wire.ts_diff_us(wire.ts_us(now), rep.echo_ts) - rep.echo_offset) / 1e6
        return x if 0 < x < MAX_RTT_S else None

    def _checked_rtt(self, rep: TfmccReport, now: float) -> tuple[float | None, bool]:
        """The report's RTT, and whether the sender measured it (2.4.4); a
        claimed RTT is bounded by the hooks above."""
        inst = self._echo_sample(rep, now)
        claimed = rep.rtt / 1e6 if rep.rflags & TfmccReportFlags.HAVE_RTT else None
        if inst is None:
            return self._unechoed_rtt(rep, claimed), False
        if claimed is not None:
            return self._bound_claimed_rtt(claimed, inst), False
        return inst, True

    @staticmethod
    def _impossible(rep: TfmccReport) -> bool:
        """A report the paper's receiver cannot send (2.1, 2.4): an RTT flagged
        but zero or beyond :data:`MAX_RTT_S`, or loss flagged with p = 0."""
        f = rep.rflags
        if f & TfmccReportFlags.HAVE_RTT and not 0 < rep.rtt <= MAX_RTT_S * 1e6:
            return True
        return bool(f & TfmccReportFlags.HAVE_LOSS) and rep.loss_rate == 0

    @hook
    def _on_report(self, rep: TfmccReport, now: float) -> None:
        s = self.p
        if self._impossible(rep):
            self.malformed += 1  # dropped like any datagram that does not decode
            return
        if not self._police(rep, now):
            return
        self.reports += 1
        self.last_report = now
        self.silent_latched = False
        f = rep.rflags
        have_loss = bool(f & TfmccReportFlags.HAVE_LOSS)
        is_clr = rep.rcvr_id == self.clr
        rate = float(rep.rate)
        rtt, sender_side = self._checked_rtt(rep, now)
        if rtt is not None and have_loss and rep.loss_rate:
            # With a sender-side RTT the rate is recomputed from the report's p (2.4.4).
            eq = 8.0 * tcp_rate(s.packet_size, rtt, rep.loss_rate / U32, rto(rtt))
            rate = eq if sender_side else self._claimed_rate(rate, eq)
        if rtt is not None:
            self.round_max_rtt = max(self.round_max_rtt, rtt)
            if not self.rmax_measured or rtt > self.r_max:
                self.r_max = rtt  # the first sample; then grows at once, shrinks per round (RFC 4654 3.2)
                self.rmax_measured = True
        if f & TfmccReportFlags.LEAVING:
            self.pending.pop(rep.rcvr_id, None)
            if is_clr:
                self._drop_clr()
            return
        if is_clr:
            self.clr_last = now  # the CLR is alive, with or without loss
        else:
            self.reports_this_round += 1
            if not self.round_nonclr:
                self.first_nonclr_at = now
            self.round_nonclr = True
            # The rate as the receiver computed it: receivers compare it with theirs.
            self.supp_rate = min(self.supp_rate, float(rep.rate))

        echo = _Echo(ECHO_OTHER if rtt is not None and f & TfmccReportFlags.HAVE_RTT else ECHO_NO_RTT,
                     rate, rep.rcvr_id, rep.timestamp, now)

        if not have_loss:
            if self.slowstart:
                # Slowstart (2.6): the lowest reporter is the CLR (RFC 4654 3.6).
                recv = float(rep.recv_rate or rep.rate)
                self.round_recv[rep.rcvr_id] = recv
                if is_clr or self.clr is None or rate < self.clr_rate:
                    self._set_clr(echo, rate, now)
                    self._slowstart_report(recv, rtt, now)
            elif self.clr is None:
                # No CLR and nobody has loss: the lowest loss-free reporter
                # becomes CLR without a limit, so feedback keeps coming (2.2, 4.2).
                self._set_clr(echo, math.inf, now)
                self.limited = True
                self.last_increase = now
            elif is_clr:
                if not math.isinf(self.clr_rate):
                    self.limited = True
                self.clr_rate = math.inf
            self._queue_echo(echo)
            return
        if self.slowstart:
            self.slowstart = self.limited = False  # first loss anywhere ends slowstart (2.6)
            self.last_increase = now
            self._set_clr(echo, rate, now)
        elif not is_clr and (self.clr is None or rate < self.clr_rate):
            # No CLR, or one whose rate sets no limit: a loss report names the CLR.
            self._set_clr(echo, rate, now)
            self.last_increase = now
        if rep.rcvr_id == self.clr or rate < self.rate:
            self._set_clr(echo, rate, now)  # the CLR's new rate, or a lower one's report
        if rate < self.rate:
            self.rate = max(rate, s.min_rate_bps)  # immediate decrease (2.2)
            self.last_increase = now
        self._queue_echo(echo)

    @hook
    def _slowstart_report(self, recv: float, rtt: float | None, now: float) -> None:
        """A slowstart report from the CLR: the paper moves the target per round (2.6)."""

    def _set_clr(self, echo: _Echo, rate: float, now: float) -> None:
        """Make the reporter the CLR; a new CLR's report is echoed first (2.4.2)."""
        if echo.rcvr != self.clr:
            echo.prio = ECHO_NEW_CLR
            self.clr_changed_at = now
        self.clr, self.clr_rate, self.clr_last = echo.rcvr, rate, now

    def _drop_clr(self) -> None:
        """The CLR left or timed out (4.2): keep the rate, then the increase
        after a CLR change (2.2)."""
        self.clr, self.clr_rate, self.clr_echo = None, math.inf, None
        self.last_increase, self.limited = self.now, True
        self.clr_drops += 1
        # Receivers learn of it from the next packets: the halving's clock restarts.
        self.last_report, self.silent_latched = max(self.last_report, self.now), False

    def _queue_echo(self, echo: _Echo) -> None:
        """The CLR's report is kept for every packet; others, and a new CLR's first, wait (2.4.2)."""
        if echo.rcvr == self.clr and echo.prio != ECHO_NEW_CLR:
            echo.prio = ECHO_CLR
            self.clr_echo = echo
            self.pending.pop(echo.rcvr, None)
            return
        if echo.rcvr == self.clr:
            self.clr_echo = echo
        self.pending[echo.rcvr] = echo

    def next_echo(self) -> _Echo | None:
        """Which report the next data packet echoes (2.4.2 priority order; ties to
        the lowest rate; with nothing pending the CLR's last report again)."""
        if self.pending:
            best = min(self.pending.values(), key=lambda e: (e.prio, e.rate))
            del self.pending[best.rcvr]
            return best
        return self.clr_echo

    def _increase(self, now: float) -> None:
        """Increase toward the CLR's rate: at once, or after a CLR change at most
        one packet per R_max per R_max (2.2; RFC 4654 3.3)."""
        dt = max(0.0, now - self.last_increase)
        self.last_increase = now
        if self.clr is None:
            return  # no increase without feedback (2.2)
        ceiling = min(self.clr_rate, self.p.max_rate_bps)
        if self.rate >= ceiling:
            self.limited = False
            return
        if self.limited:
            step = 8.0 * self.p.packet_size / (self.r_max * self.r_max) * dt
            self.rate = min(ceiling, self.rate + step)
            if self.rate >= ceiling:
                self.limited = False
        else:
            self.rate = ceiling

    @hook
    def _slowstart_tick(self, now: float) -> None:
        """Move toward d·R_recv^min over one R_max (2.6)."""
        frac = min(1.0, (now - self.ss_ramp_start) / self.r_max)
        self.rate = self.ss_from + (self.ss_target - self.ss_from) * frac
        self.rate = min(max(self.rate, self.p.min_rate_bps), self.p.max_rate_bps)

    @hook
    def _clr_timeout(self) -> float:
        """How long the CLR may be silent: 10 feedback delays (4.2)."""
        return CLR_TIMEOUT_ROUNDS * self.T()

    def _clr_timed_out(self, now: float) -> bool:
        """Whether a CLR is named and silent past :meth:`_clr_timeout`; checked at round ends (4.2)."""
        return self.clr is not None and now - self.clr_last > self._clr_timeout()

    def _silent(self, now: float) -> bool:
        """No report for ``SILENCE_ROUNDS`` feedback delays; latched until a
        report (T grows as the rate halves)."""
        if not self.silent_latched and now - self.last_report > SILENCE_ROUNDS * self.T():
            self.silent_latched = True
        return self.silent_latched

    def on_timer(self, name: str, now: float) -> None:
        if name == "send":
            self._send_data(now)

    def _check_round(self, now: float) -> None:
        """End the round T after it began if non-CLR feedback came, else at the
        first such report and at most at 2T (RFC 4654 3.4); checked per packet."""
        L = self.T()
        elapsed = now - self.round_start
        if elapsed >= 2 * L or (elapsed >= L and self.round_nonclr):
            # Feedback that came after T also suppresses in the next round.
            late = self.round_nonclr and self.first_nonclr_at >= self.round_start + L
            carry = self.supp_rate
            self._end_round(now)
            if late:
                self.supp_rate = carry

    @hook
    def _end_round(self, now: float) -> None:
        s = self.p
        self.round_report_counts.append(self.reports_this_round)
        self.reports_this_round = 0
        # R_max decays unless the round showed a larger RTT; none keeps it.
        if self.round_max_rtt > 0:
            self.r_max = max(self.round_max_rtt, self.r_max * RMAX_DECAY, 1e-3)
        self.round_max_rtt = 0.0
        if self.slowstart and self.round_recv:
            self.ss_from = self.rate
            self.ss_target = min(max(SLOWSTART_D * min(self.round_recv.values()), self._slowstart_floor()),
                                 s.max_rate_bps)
            self.ss_ramp_start = now
        self.round_recv = {}
        if self._clr_timed_out(now):
            self._drop_clr()
        if self._silent(now):
            self.rate = max(self.rate / 2, s.min_rate_bps)  # halve after long silence
            self.ss_from = self.ss_target = self.rate
        self.fb_round = (self.fb_round + 1) & 0xFFFF
        self.round_start = now
        self.round_nonclr = False
        self.supp_rate = math.inf

    @hook
    def _send_data(self, now: float) -> None:
        if self._silent(now):
            self.last_increase = now  # only halving (at round ends) while nobody answers
        elif self.slowstart:
            self._slowstart_tick(now)
        else:
            self._increase(now)
        self._check_round(now)
        echo = self.next_echo()
        dflags = TfmccDataFlags.SLOWSTART if self.slowstart else 0
        if now - self.clr_changed_at < self.r_max:
            dflags |= TfmccDataFlags.CLR_CHANGED
        msg = TfmccData(
            session_id=self.cfg.session_id, seq=self.seq & U32, timestamp=wire.ts_us(self._tick),
            supp_rate=u32(self.supp_rate), max_rtt=u32(self.r_max * 1e6), clr_id=self.clr or 0,
            echo_rcvr_id=echo.rcvr if echo else 0, echo_ts=echo.ts if echo else 0,
            echo_offset=u32((now - echo.received) * 1e6) if echo else 0,
            fb_round=self.fb_round, dflags=dflags, payload=self._payload)
        self.seq += 1
        self.send(self.dest, msg.encode())
        gap = self._interval()
        self._last_tick = self._tick
        self._tick = max(self._tick + gap, now - 0.5 * gap)
        self._burst_sent += 1
        if self._burst_sent < self._burst_size:
            self.set_timer("send", now)  # the rest of the burst, back to back
            return
        # The next burst leaves at the mean of its packets' ticks.
        self._burst_sent = 0
        self._burst_size = self._next_burst_size()
        offset = self._pacing_offset(gap)
        centre = 0.5 * (self._burst_size - 1) * gap
        self.set_timer("send", max(now, self._tick + centre + offset))

    @hook
    def _next_burst_size(self) -> int:
        """Packets that leave together: one, evenly paced (2.2's rate)."""
        return 1

    @hook
    def _pacing_offset(self, gap: float) -> float:
        """How far the next departure lies from its tick: nowhere."""
        return 0.0

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return ({"rate_bps": self.rate, "max_rtt_s": self.r_max, "clr": float(self.clr or 0),
                 "reports": self.reports, "fb_round": self.fb_round},
                "slowstart" if self.slowstart else "steady")
