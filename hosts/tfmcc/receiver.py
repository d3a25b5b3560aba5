"""The TFMCC receiver as the paper describes it (2.1-2.6, appendices A-B); see
docs/protocols/tfmcc.md.  :mod:`hosts.tfmcc.rules` may change the methods marked
``@hook``."""

from __future__ import annotations

import math
import random
from collections import deque
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Address, JoinGroup, LeaveGroup, node_id
from p4mcc.hosts.ratemeter import WindowRateMeter
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.rtt import ewma
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tfmcc.constants import (BETA_CLR, BETA_OTHER, FB_THETA, LOSS_INTERVALS, MAX_RTT_S, RECV_WINDOW_RTTS, U32,
                              feedback_delay, feedback_time, u32)
from p4mcc.hosts.tfmcc.params import TfmccParams
from p4mcc.hosts.tfrc import LossHistory, loss_rate_full, rto, tcp_rate
from p4mcc.hosts.wire import TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags


class TfmccReceiver(SessionEndpoint[TfmccParams], role="tfmcc-receiver"):
    """A TFMCC receiver: loss history, RTT, calculated rate and feedback timers."""

    TIMERS = frozenset({"feedback"})  # what on_timer handles (Endpoint.TIMERS)

    unicast_on_session_port = False  # feedback goes out only

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = node_id(config.local)
        self.sender_addr: Address = (config.sender, config.port)
        self.rng = random.Random((config.seed << 32) ^ self.me)
        s = self.p
        self.history = self._new_history()
        self.rtt = s.initial_rtt
        self.have_rtt = self._first_interval_synthetic = False
        self.recv_meter = WindowRateMeter(max(RECV_WINDOW_RTTS * self.rtt, 0.5))
        # Sender-rate estimate from (seq, sender timestamp, size) of recent packets.
        self._recent: deque[tuple[int, int, int]] = deque(maxlen=4)
        self.d_rs_us: int | None = None  # d_{R->S} from the last real measurement (2.4.3)
        self._measured_echo = 0
        self._calc_key: tuple[float, int, float] | None = None
        self._calc = self.last_data_arrival = 0.0
        self.last_data_ts: int | None = None  # echoed in reports (2.4.4)
        self.fb_round: int | None = None
        self.x_fbr = self.supp_rate = math.inf  # x_fbr: calculated rate at the round's start
        self.timer_pending = self._armed = self.is_clr = self.left = False
        self.sender_clr = -1  # the CLR the data packets name; 0: none
        self.last_clr_report = -math.inf
        self.sender_slowstart = True
        self.max_rtt = s.initial_rtt
        self.reports_sent = self.suppressed = self.packets = 0

    # -- measurements -------------------------------------------------------
    @property
    def loss_event_rate(self) -> float:
        return self.history.loss_event_rate()

    def send_rate_bps(self) -> float:
        """The sender's rate from sequence numbers and sender timestamps: exact
        despite losses (the gap counts them; the clock is the sender's)."""
        if len(self._recent) < 2:
            return math.inf
        seq0, ts0, _ = self._recent[0]
        seq1, ts1, size = self._recent[-1]
        dt = wire.ts_diff_us(ts1, ts0) / 1e6
        if dt <= 0 or seq1 <= seq0:
            return math.inf
        return 8.0 * size * (seq1 - seq0) / dt

    @hook
    def _new_history(self) -> LossHistory:
        """An empty loss history (2.3): m intervals, the one-RTT loss event."""
        return LossHistory(LOSS_INTERVALS)

    @hook
    def receive_rate_bps(self) -> float:
        """R_recv, measured over several RTTs (2.6)."""
        return self.recv_meter.rate_bps(self.now)

    def calculated_rate_bps(self) -> float:
        """The TCP-friendly rate toward this receiver (2.1), the receive rate
        before loss; computed once per instant (it moves only with packets)."""
        key = (self.now, self.packets, self.rtt)
        if self._calc_key != key:
            p = self.loss_event_rate
            rate = 8.0 * tcp_rate(self.p.packet_size, self.rtt, p, rto(self.rtt)) if p > 0 else self.receive_rate_bps()
            self._calc_key, self._calc = key, rate
        return self._calc

    # -- Endpoint hooks -----------------------------------------------------
    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        if self.left:
            return
        msg = self.decode_session(data, self.cfg.session_id, TfmccData)
        if msg is not None:
            self._on_data(msg, len(data), now)

    def _implausible(self, msg: TfmccData) -> bool:
        """A sequence jump beyond what ``max_rate_bps`` allows since the last
        packet (margin 1000): corrupted or forged, it would count billions of
        losses and leave every later packet "old"."""
        if not self._recent:
            return False
        seq0, ts0, _ = self._recent[-1]
        jump = msg.seq - seq0
        if jump <= 1000:
            return False
        dt = wire.ts_diff_us(msg.timestamp, ts0) / 1e6
        return jump > 1000 + 2.0 * max(dt, 0.0) * self.p.max_rate_bps / (8.0 * self.p.packet_size)

    @hook
    def _on_data(self, msg: TfmccData, size: int, now: float) -> None:
        s = self.p
        if self._implausible(msg):
            self.malformed += 1
            return
        self.packets += 1
        self._before_packet(msg.seq, now)
        self._recent.append((msg.seq, msg.timestamp, size))
        now_us = wire.ts_us(now)
        self.max_rtt = msg.max_rtt / 1e6 if msg.max_rtt else self.max_rtt
        self.sender_slowstart = bool(msg.dflags & TfmccDataFlags.SLOWSTART)
        self._meter_packet(now, size)
        self.is_clr = msg.clr_id == self.me
        self.sender_clr = msg.clr_id

        # RTT: one real measurement per echo of our report (2.4.2), else the
        # one-way-delay adjustment with the real weight spread over an RTT (2.4.3).
        rtt_now = 0.0  # the round trip this packet measures, if it measures one
        d_sr = wire.ts_diff_us(now_us, msg.timestamp)  # one-way delay, clock offset included
        if msg.echo_rcvr_id == self.me and msg.echo_ts and msg.echo_ts != self._measured_echo:
            self._measured_echo = msg.echo_ts
            inst_us = wire.ts_diff_us(now_us, msg.echo_ts) - msg.echo_offset
            if 0 < inst_us < MAX_RTT_S * 1e6:
                rtt_now = inst_us / 1e6
                self.d_rs_us = inst_us - d_sr
                self._rtt_sample(rtt_now)
        elif self.have_rtt and self.d_rs_us is not None:
            inst_us = self.d_rs_us + d_sr
            if inst_us > 0:
                rtt_now = inst_us / 1e6
                per_rtt = max(1.0, self.send_rate_bps() * self.rtt / (8.0 * s.packet_size))
                beta = self._beta() / (per_rtt if not math.isinf(per_rtt) else 1.0)
                self.rtt = beta * inst_us / 1e6 + (1 - beta) * self.rtt
        self._meter_windows()

        # Loss history (2.3) with the first interval from appendix B.
        span = self._event_span(rtt_now)
        had_loss = self.history.has_loss
        owd = d_sr / 1e6  # this packet's one-way delay, kept with the losses it reveals
        self._record_packet(msg.seq, now, span, owd)
        if not had_loss and self.history.has_loss:
            self._init_first_interval()
        self.last_data_ts = msg.timestamp
        self.last_data_arrival = now

        # Feedback (2.5): new round, suppression, CLR's immediate feedback.
        if self.fb_round != msg.fb_round:
            # A new feedback round replaces the old timer with a biased one (2.5.1).
            self.fb_round = msg.fb_round
            self.cancel_timer("feedback")
            self.timer_pending = self._armed = False
        self._arm(now)
        self.supp_rate = msg.supp_rate if msg.supp_rate != U32 else math.inf
        if self.timer_pending:
            suppressed = self._suppressed_by(self.supp_rate)
            if suppressed or not self._wants_to_report(self.calculated_rate_bps()):
                self.cancel_timer("feedback")  # suppressed, or the sender already went below our rate
                self.timer_pending = False
                self.suppressed += suppressed
        if self.is_clr and now - self.last_clr_report >= self.rtt:
            self._send_report(now)

    # -- hooks the rules change -------------------------------------------------
    @hook
    def _before_packet(self, seq: int, now: float) -> None:
        """Called for every data packet before anything is measured from it."""

    @hook
    def _meter_packet(self, now: float, size: int) -> None:
        """Count the packet into the receive-rate meter."""
        self.recv_meter.add(now, size)

    @hook
    def _meter_windows(self) -> None:
        """The receive rate spans several RTTs (2.6), at least 0.5 s."""
        self.recv_meter.window = max(RECV_WINDOW_RTTS * self.rtt, 0.5)

    @hook
    def _event_span(self, rtt_now: float) -> float:
        """A loss event lasts the smoothed RTT from its first loss (2.3);
        ``rtt_now`` is the round trip this packet measures (0: none)."""
        return self.rtt

    @hook
    def _record_packet(self, seq: int, now: float, span: float, owd: float) -> None:
        """Enter the packet into the loss history (2.3)."""
        self.history.on_packet(seq, now, span, owd)

    @hook
    def _remodel_reverse(self) -> float | None:
        """The receiver-to-sender delay for remodelling (app. A); None: the RTT alone."""
        return None

    @hook
    def _first_interval_rate(self) -> float:
        """The rate whose equation loss rate is l_0: half the sending rate (app. B)."""
        send = self.send_rate_bps()
        return send / 2 if not math.isinf(send) else 8.0 * self.p.packet_size / self.rtt

    # -- RTT and loss history ------------------------------------------------------
    def _beta(self) -> float:
        return BETA_CLR if self.is_clr else BETA_OTHER

    def _rtt_sample(self, inst: float) -> None:
        if not self.have_rtt:
            old = self.rtt
            self.rtt = inst
            self.have_rtt = True
            if self._first_interval_synthetic:
                # l'_0 = l_0 · (t_RTT / t_initial)^2 (appendix B).
                self.history.scale_first_interval((inst / old) ** 2)
            # Losses grouped with the initial RTT are regrouped with the real one (app. A).
            self.history.remodel(inst, self._remodel_reverse())
        else:
            self.rtt = self._smoothed_rtt(inst)

    @hook
    def _smoothed_rtt(self, inst: float) -> float:
        """The RTT estimate after a real measurement ``inst``: the EWMA with
        the CLR's or the other receivers' weight (2.4.2)."""
        return ewma(self.rtt, inst, self._beta())

    def _init_first_interval(self) -> None:
        """l_0 = 1/p, p the full equation's inverse at the hook's rate (app. B;
        the simplified one exceeds p = 1 at an early first loss's low rates)."""
        rate_bytes = max(self._first_interval_rate() / 8.0, 1e-9)
        p = loss_rate_full(self.p.packet_size, self.rtt, rate_bytes, rto(self.rtt))
        self.history.set_first_interval(1.0 / p)
        self._first_interval_synthetic = True

    # -- feedback (2.5) -----------------------------------------------------------
    def _wants_to_report(self, x_calc: float) -> bool:
        """Report when below the sending rate; always in the sender's slowstart
        (2.6) and while the data names no CLR (RFC 4654 3.3)."""
        if self.sender_slowstart or self.sender_clr == 0:
            return True
        return self.history.has_loss and x_calc < self.send_rate_bps()

    @hook
    def _arm(self, now: float) -> None:
        """Decide once per round whether to report, as soon as the rates are known."""
        if self._armed or self.is_clr:
            return  # the CLR reports once per RTT without suppression
        x_calc, send = self.calculated_rate_bps(), self.send_rate_bps()
        if x_calc <= 0 or math.isinf(send):
            return  # not enough packets yet to know either rate: try again
        self._armed = True
        if not self._wants_to_report(x_calc):
            return
        self.x_fbr = x_calc
        T = self._feedback_delay(send)
        x = 1.0 - self.rng.random()  # uniform in (0, 1]
        t = feedback_time(self.p.fb_receivers, T, x_calc / send, x)
        self.set_timer("feedback", now + t)
        self.timer_pending = True

    @hook
    def _feedback_delay(self, send: float) -> float:
        """T for this round's timer, from the data's max RTT and the sending rate (2.5.3)."""
        return feedback_delay(self.p.packet_size, self.max_rtt, send)

    def _suppressed_by(self, supp: float) -> bool:
        """Cancel when R_fb - R_calc < θ·R_fb (2.5.2), R_calc the larger of
        X_fbr (RFC 4654 3.4) and the rate now; in slowstart a receiver with
        loss is only suppressed by loss reports, which end slowstart (2.6)."""
        if math.isinf(supp):
            return False
        if self.history.has_loss and self.sender_slowstart:
            return False
        x = max(self.x_fbr, self.calculated_rate_bps())
        return supp - x < FB_THETA * supp

    def on_timer(self, name: str, now: float) -> None:
        if name == "feedback" and self.timer_pending and not self.left:
            self.timer_pending = False
            self._send_report(now)

    def _send_report(self, now: float, leaving: bool = False) -> None:
        flags = TfmccReportFlags.HAVE_LOSS if self.history.has_loss else TfmccReportFlags.SLOWSTART
        if self.have_rtt:
            flags |= TfmccReportFlags.HAVE_RTT
        if self.is_clr:
            flags |= TfmccReportFlags.IS_CLR
        if leaving:
            flags |= TfmccReportFlags.LEAVING
        offset = int((now - self.last_data_arrival) * 1e6) if self.last_data_ts else 0
        rep = TfmccReport(
            session_id=self.cfg.session_id, seq=self.reports_sent & U32, timestamp=wire.ts_us(now),
            rate=u32(self.calculated_rate_bps()), fb_round=(self.fb_round or 0) & 0xFFFF, rflags=flags,
            rcvr_id=self.me, recv_rate=u32(self.receive_rate_bps()), rtt=u32(self.rtt * 1e6),
            loss_rate=u32(self.loss_event_rate * U32), echo_ts=self.last_data_ts or 0,
            echo_offset=u32(offset), stamp=self._echo_stamp())
        self.send(self.sender_addr, rep.encode())
        self.reports_sent += 1
        if self.is_clr:
            self.last_clr_report = now

    def close(self, now: float) -> None:
        """Leave, telling the sender (a leaving CLR is replaced at once, 4.2)."""
        if self.left:
            return
        self.now = max(self.now, now)
        self._send_report(now, leaving=True)
        self.left = True
        self.cancel_timer("feedback")
        self.emit(LeaveGroup(self.cfg.group))

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        recv = self.recv_meter.peek_bps(self.now)  # a read that changes no measurement
        calc = self.calculated_rate_bps() if self.loss_event_rate > 0 else recv
        return ({"rate_bps": recv, "calc_rate_bps": min(calc, 1e12), "loss_event_rate": self.loss_event_rate,
                 "rtt_s": self.rtt, "reports": self.reports_sent},
                "clr" if self.is_clr else ("have_rtt" if self.have_rtt else "no_rtt"))
