"""TFMCC: TCP-friendly multicast congestion control (Widmer & Handley; RFC 4654).

Single-rate and equation based.  Every receiver measures its loss event rate
and RTT and computes the TCP-friendly rate toward itself; biased exponential
feedback timers let the lowest of those rates reach the sender without a
feedback implosion; the sender follows the *current limiting receiver*
(CLR).  Sections cited below are the paper's (seed 001) unless marked RFC.

Units inside the cores: seconds, bytes, and rates in **bits per second** (the
wire's unit).  ``docs/protocols/tfmcc.md`` lists every constant and its source.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from hosts import wire
from hosts.core import Address, node_id
from hosts.ratemeter import WindowRateMeter
from hosts.registry import SessionConfig, SessionEndpoint
from hosts.rtt import ewma
from hosts.tfrc import CompetitorOverflow, LossHistory, loss_rate_full, rto, tcp_rate
from hosts.wire import TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags

U32 = 0xFFFFFFFF
#: Data packet overhead before the payload (common header + TFMCC data body).
DATA_HEADER = wire.COMMON_LEN + 28


@dataclass(frozen=True)
class TfmccParams:
    """TFMCC session parameters (defaults from the paper / RFC 4654)."""

    #: s: whole UDP payload in bytes.  1460, a TCP segment's payload on a
    #: 1500-byte MTU: drop-tail queues drop per packet and the equation is
    #: per packet, so at TCP's packet size the rates match in bytes too
    #: (with 1000 B, TFMCC got 1000/1460 of a TCP flow's bytes).
    packet_size: int = 1460
    initial_rtt: float = 0.5  # 2.4.1: receivers' RTT before a measurement
    beta_clr: float = 0.05  # 2.4.2: RTT EWMA weight at the CLR
    beta_other: float = 0.5  # 2.4.2: RTT EWMA weight at other receivers
    owd_beta_scale: float = 1.0  # 2.4.3: one-way-delay weight, per RTT of packets, relative to beta
    loss_intervals: int = 8  # 2.3: m, weights {5,5,5,5,4,3,2,1}
    #: RFC 5348 5.5 history discounting: after a loss-free stretch longer
    #: than twice the average interval, the older intervals weigh less.
    #: Without it the equation climbs ~0.125 packets per RTT per RTT; the
    #: paper's 2.2 counts on "roughly 0.3 packets per RTT", TFRC's figure
    #: with discounting.  On: after TCP's slow-start overflow ends slowstart
    #: low, TFMCC reaches its share sooner (docs/protocols/tfmcc.md).
    history_discounting: bool = True
    #: A loss event lasts one RTT from its first loss (paper 2.3, RFC 5348
    #: 5.2).  With ``loss_event_episode`` a loss within one RTT of the
    #: event's last loss extends it, up to ``loss_event_max_rtts`` RTTs from
    #: its first: next to TCP on a drop-tail queue one overflow lasts several
    #: RTTs, and TCP cuts once for the losses of one window (RFC 6582 3.2)
    #: where the one-RTT rule counts it as several events.  Off by default:
    #: it lifted the 20 Mbit/s, 20 ms, 17-packet cells from 0.44-0.55 to
    #: 0.62-0.65 of TCP, but on 1 Mbit/s, 10-packet queues, where TCP's
    #: windows are a few packets and it recovers by timeouts, it let TFMCC
    #: push TCP into RTO back-off far more often (docs/protocols/tfmcc.md).
    loss_event_episode: bool = False
    loss_event_max_rtts: float = 4.0
    #: The round trip a loss event spans from its first loss (paper 2.3, RFC
    #: 5348 5.2).  "current": the larger of the smoothed RTT and the round
    #: trip the packet that revealed the loss measures (its one-way delay
    #: applied to the last measurement, 2.4.3, or the measurement it
    #: carries); "smoothed": the smoothed RTT.  When a TCP flow fills the
    #: queue, the overflow lasts the round trip TCP takes to detect its loss
    #: and cut, once per window (RFC 6582 3.2), at the full queue's delay,
    #: which the smoothed RTT (weight 0.05 per RTT at the CLR) lags: each
    #: overflow counted as 2-3 events where TCP cut once (docs/protocols/tfmcc.md).
    loss_event_rtt: str = "current"
    fb_receivers: int = 10000  # 2.5.1: N
    fb_b: float = 4.0  # 2.5.1/2.5.4: T = b·max RTT
    fb_gamma: float = 0.25  # 2.5.4: offset fraction of T
    fb_theta: float = 0.1  # 2.5.2: cancellation threshold
    fb_c: int = 4  # 2.5.3: packets that may be lost in a row (2..4)
    bias_lo: float = 0.5  # 2.5.1: r' saturates below this
    bias_hi: float = 0.9  # 2.5.1: r' biasing starts below this
    slowstart_d: float = 2.0  # 2.6: target = d · min receive rate
    #: "clr": every CLR report moves the slowstart target, at most doubling per
    #: RTT (RFC 4654 3.6: the lowest reporter is CLR in slowstart too and
    #: reports every RTT; NORM applies each such report).  "round": the
    #: paper's 2.6 reading, one target step per feedback round.
    slowstart_mode: str = "clr"
    #: "clr_change": the one-packet-per-RTT increase limit applies only after
    #: the CLR changed to a higher rate or left (paper 2.2); otherwise the
    #: CLR's rate is followed at once.  "always": every increase is limited
    #: (RFC 4654 3.3).
    increase_limit: str = "clr_change"
    #: t_RTO in the equation = max(4·RTT, t_rto_min).  0: the paper's and
    #: RFC 5348 4.3's 4·RTT.  A TCP flow's retransmission timer has a floor
    #: (1 s in RFC 6298, 0.2 s in Linux), so on short paths at the loss rates
    #: of a shallow queue 4·RTT credits TCP with recoveries it does not make
    #: (RFC 5348 4.3 allows a more accurate t_RTO).  Off by default: 0.5 s
    #: moved the friendliness grid little (docs/protocols/tfmcc.md) and kept
    #: TFMCC from climbing back after a 1 s link outage (bench/faults.py
    #: link-flap: never, against 2.0 s without it).
    t_rto_min: float = 0.0
    police_burst: float = 4.0  # reports one receiver may send back to back (then one per RTT/2)
    rtt_check_factor: float = 4.0  # a claimed RTT may exceed the sender's own sample by this factor
    clr_timeout_rounds: float = 10.0  # 4.2: CLR silent for 10 feedback delays
    silence_rounds: float = 10.0  # no report at all for this many rounds -> halve
    rmax_decay: float = 0.9  # RFC 4654 (draft-01 change log): R_max decay per round
    max_rate_bps: float = 100e6  # application's ceiling
    #: None: TFRC's initial window per initial RTT, min(4s, max(2s, 4380 B))
    #: (RFC 5348 4.2), instead of one packet per R_max (RFC 4654 3.1), whose
    #: 10 s first feedback round delayed slowstart.
    initial_rate_bps: float | None = None
    recv_window_rtts: float = 4.0  # receive rate measured over this many RTTs
    #: While the sender is in slowstart and this receiver has seen no loss,
    #: X_recv is measured over this many RTTs instead (RFC 5348 4.3/6.2: the
    #: rate received since the last feedback, one RTT apart).  0: the
    #: ordinary ``recv_window_rtts`` window.
    ss_recv_window_rtts: float = 1.0
    #: Each data packet leaves at its pacing tick (one packet-time apart at the
    #: current rate) plus an offset uniform in ±jitter/2 packet-times, never
    #: before the previous packet; the rate is unchanged.  0: strictly
    #: periodic pacing.  A periodic flow through a
    #: drop-tail queue phase-locks with the queue's departures and finds a free
    #: slot nearly every time, while ACK-clocked TCP arrives just after the slot
    #: is taken (Floyd & Jacobson's traffic phase effects): TFMCC then measures
    #: a loss event rate far below TCP's and computes a rate several times
    #: TCP's.  Random gaps make its arrivals sample the queue as TCP's do.
    pacing_jitter: float = 0.95
    #: A first loss that comes while the sender is in slowstart and sends
    #: fewer than this many packets per ``initial_rtt`` (0.5 s) is
    #: forgotten with the further losses of the same overflow
    #: (``ss_forgive_rtts``), and slowstart goes on.  10 is a TCP flow's
    #: initial window (RFC 6928), sent in its first RTT without feedback: a loss below
    #: it is not the session's own overshoot but a competitor's (a TCP flow's
    #: slow-start overflow ended TFMCC's slowstart at ~0.1 Mbit/s on 200 ms,
    #: deep-queue paths; docs/protocols/tfmcc.md).  0: every first loss ends
    #: slowstart (paper 2.6).
    ss_min_window: float = 10.0
    #: Round trips (the loss event's span, ``loss_event_rtt``) after the
    #: forgiven first loss during which further losses belong to the same
    #: competitor's overflow and are forgotten with it.  A TCP flow's
    #: slow-start overshoot fills the queue until its cut takes effect, a
    #: round trip and a reordering window (RFC 8985) after its first loss,
    #: then the queue drains: on a 5 Mbit/s, 300 ms path a second loss 0.63 s
    #: after the first (one 0.60 s RTT and a little) ended slowstart at
    #: 0.14 Mbit/s.  The RLA paper groups a receiver's losses within 2·srtt
    #: into one congestion signal (its rule 2).  0: only the first loss.
    ss_forgive_rtts: float = 2.0
    #: How many such overflows slowstart forgives; 0: every one that starts
    #: while the sender is below ``ss_min_window``.  A TCP flow's slow-start
    #: overshoot into a queue of twice the BDP keeps it full for several
    #: round trips after its cut (its halved window still fills the pipe):
    #: on a 20 Mbit/s, 200 ms, 667-packet path a loss 0.35 s after the
    #: forgiven overflow's two spans ended slowstart at 0.07 Mbit/s, and
    #: TFMCC was at 0.11-0.44 of TCP after 100 s.  The threshold bounds what
    #: the rule shields: an overflow that meets the sender above 10 packets
    #: per 0.5 s (20 packets/s) still ends slowstart.  1: only the first
    #: overflow (the rule before).
    ss_forgive_overflows: int = 0
    #: A silence of at least this long (and at least four smoothed RTTs,
    #: RFC 5348 4.4's no-feedback interval) in which ``outage_packets`` or
    #: more packets in a row were lost is an outage of this receiver's path
    #: (its port pruned after lost IGMP reports, a link down, a restarted
    #: receiver), not congestion: the receiver restarts its loss history as
    #: a receiver that joins late does (paper 4.2).  Counted by the one-RTT
    #: rule, the losses of a 9 s outage are 300 loss events on a 30 ms path:
    #: p near 0.6 and a 3 kbit/s report that made the returning receiver the
    #: CLR and held 1000 receivers at the minimum rate (docs/protocols/tfmcc.md).
    #: 1 s is TCP's own least silence before it declares a timeout (RFC 6298
    #: 2.4's RTO floor).  0: every lost packet is counted (paper 2.3).
    outage_s: float = 1.0
    #: Lost packets in a row an outage needs besides its duration, so that at
    #: a few packets per second one or two losses stay losses: twice the c
    #: packets in a row that the paper's feedback timing allows to be lost
    #: (2.5.3, c <= 4).
    outage_packets: int = 8
    #: Packets leave in pairs, back to back, at the mean of their two pacing
    #: ticks (plus the jitter offset), as a TCP sender's data leaves behind
    #: delayed ACKs (RFC 5681 4.2: an ACK for every second segment frees two);
    #: the rate is unchanged.  Paced single packets meet a fraction of the
    #: drop-tail overflows that TCP's pairs meet, so TFMCC measured a loss
    #: event rate far below TCP's on shallow queues and took up to 4x its
    #: share (docs/protocols/tfmcc.md).  1: every packet alone.
    pacing_burst: int = 2
    #: Bursts only while the rate carries at least this many packets per
    #: R_max: a TCP flow with a window of a few segments sends much of it one
    #: segment per ACK (timeouts, recovery, the delayed-ACK timer), and pairs
    #: from 4 packets cut TFMCC to 0.74 of TCP among 15 TCP flows (the
    #: paper's Fig. 9 set-up; 0.92 from 6).
    pacing_burst_min_window: float = 6.0

    def __post_init__(self) -> None:
        if self.packet_size < DATA_HEADER + 1 or self.packet_size > wire.MAX_DATAGRAM:
            raise ValueError(f"packet_size must be in [{DATA_HEADER + 1}, {wire.MAX_DATAGRAM}]")
        if not 0 < self.fb_gamma < 1:
            raise ValueError("fb_gamma must be in (0, 1)")
        if not 0 <= self.fb_theta <= 1:
            raise ValueError("fb_theta must be in [0, 1]")
        if not 0 < self.bias_lo < self.bias_hi <= 1:
            raise ValueError("need 0 < bias_lo < bias_hi <= 1")
        if self.initial_rtt <= 0 or self.fb_receivers < 2:
            raise ValueError("initial_rtt must be positive and fb_receivers >= 2")
        if self.slowstart_mode not in ("clr", "round"):
            raise ValueError("slowstart_mode must be 'clr' or 'round'")
        if self.increase_limit not in ("clr_change", "always"):
            raise ValueError("increase_limit must be 'clr_change' or 'always'")
        if self.loss_event_rtt not in ("current", "smoothed"):
            raise ValueError("loss_event_rtt must be 'current' or 'smoothed'")
        if self.loss_event_max_rtts < 1:
            raise ValueError("loss_event_max_rtts must be at least 1")
        if not 0 <= self.pacing_jitter < 2:
            raise ValueError("pacing_jitter must be in [0, 2)")
        if (self.ss_recv_window_rtts < 0 or self.ss_min_window < 0 or self.ss_forgive_rtts < 0
                or self.ss_forgive_overflows < 0):
            raise ValueError("ss_recv_window_rtts, ss_min_window, ss_forgive_rtts and "
                             "ss_forgive_overflows must not be negative")
        if not 1 <= self.pacing_burst <= 16:
            raise ValueError("pacing_burst must be in [1, 16]")
        if self.pacing_burst_min_window < 0:
            raise ValueError("pacing_burst_min_window must not be negative")
        if self.outage_s < 0 or self.outage_packets < 1:
            raise ValueError("outage_s must not be negative and outage_packets must be at least 1")

    @property
    def min_rate_bps(self) -> float:
        """Floor of the sending rate: one packet per 64 s (RFC 5348 4.3's t_mbi)."""
        return 8.0 * self.packet_size / 64.0


def feedback_delay(p: TfmccParams, max_rtt: float, send_rate_bps: float) -> float:
    """T = b·max(t_RTT^max, (c + 1)·s/R_send) (2.5.3)."""
    spacing = (p.fb_c + 1) * 8.0 * p.packet_size / max(send_rate_bps, 1e-9)
    return p.fb_b * max(max_rtt, spacing)


def bias(p: TfmccParams, r: float) -> float:
    """r' = (max(min(r, 0.9), 0.5) - 0.5) / 0.4 (2.5.1, modified offset method)."""
    return (max(min(r, p.bias_hi), p.bias_lo) - p.bias_lo) / (p.bias_hi - p.bias_lo)


def feedback_time(p: TfmccParams, T: float, r: float, x: float) -> float:
    """t' = γ·r'·T + (1 - γ)·T·(1 + log_N x), never negative (eq. 3, 2.5.4).

    ``x`` is uniform in (0, 1]; ``r`` the ratio of the receiver's rate to the
    sending rate (low ratio -> early feedback).
    """
    g = p.fb_gamma
    t = g * bias(p, r) * T + (1 - g) * T * (1 + math.log(x) / math.log(p.fb_receivers))
    return max(t, 0.0)


def _u32(x: float) -> int:
    if math.isinf(x) or x > U32:
        return U32
    return max(0, int(x))


# ===========================================================================
# Receiver
# ===========================================================================


class TfmccReceiver(SessionEndpoint[TfmccParams], role="tfmcc-receiver"):
    """A TFMCC receiver: loss history, RTT, calculated rate and feedback timers."""

    unicast_on_session_port = False  # feedback goes out only

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = node_id(config.local)
        self.sender_addr: Address = (config.sender, config.port)
        self.rng = random.Random((config.seed << 32) ^ self.me)
        s = self.p
        self.history = self._new_history()
        self.rtt = s.initial_rtt
        self.have_rtt = False
        self._first_interval_synthetic = False
        self.recv_meter = WindowRateMeter(max(s.recv_window_rtts * self.rtt, 0.5))
        self.ss_meter = WindowRateMeter(max(s.ss_recv_window_rtts, 1e-3) * self.rtt)
        # Sender-rate estimate from (seq, sender timestamp, size) of recent packets.
        self._recent: deque[tuple[int, int, int]] = deque(maxlen=4)
        # One-way delay state (2.4.3): d_{R->S} from the last real measurement.
        self.d_rs_us: int | None = None
        self._measured_echo = 0
        self._calc_key: tuple[float, int, float] | None = None
        self._calc = 0.0
        # Echo state for sender-side RTT (2.4.4).
        self.last_data_ts: int | None = None
        self.last_data_arrival = 0.0
        # Feedback round state.
        self.fb_round: int | None = None
        self.x_fbr = math.inf  # calculated rate at the start of the round
        self.timer_pending = False
        self._armed = False
        self._fb_start = 0.0
        self._fb_frac = 0.0  # the pending timer's delay as a fraction of T
        self.is_clr = False
        self.sender_clr = -1  # the CLR the data packets name; 0: none
        self.last_clr_report = -math.inf
        self.sender_slowstart = True
        self.max_rtt = s.initial_rtt
        self.supp_rate = math.inf
        self.reports_sent = 0
        self.suppressed = 0
        self.packets = 0
        #: outages survived (``outage_s``): loss histories restarted
        self.outages = 0
        self.left = False
        #: A competitor's overflow forgiven in slowstart (``ss_min_window``).
        self._overflow = CompetitorOverflow(s.ss_forgive_rtts, s.ss_forgive_overflows)

    # -- measurements -------------------------------------------------------
    @property
    def loss_event_rate(self) -> float:
        return self.history.loss_event_rate()

    def send_rate_bps(self) -> float:
        """The sender's current rate, from sequence numbers and sender timestamps.

        Exact despite losses: the sequence gap counts lost packets too, and the
        timestamps are the sender's own clock.
        """
        if len(self._recent) < 2:
            return math.inf
        seq0, ts0, _ = self._recent[0]
        seq1, ts1, size = self._recent[-1]
        dt = wire.ts_diff_us(ts1, ts0) / 1e6
        if dt <= 0 or seq1 <= seq0:
            return math.inf
        return 8.0 * size * (seq1 - seq0) / dt

    def _new_history(self) -> LossHistory:
        s = self.p
        return LossHistory(s.loss_intervals, s.history_discounting,
                           s.loss_event_max_rtts if s.loss_event_episode else None)

    def _slowstart_meter_on(self) -> bool:
        """``ss_meter`` measures X_recv (``ss_recv_window_rtts``): while the
        sender is in slowstart, the only time it is fed and read."""
        return self.p.ss_recv_window_rtts > 0 and self.sender_slowstart

    def receive_rate_bps(self) -> float:
        if self._slowstart_meter_on() and not self.history.has_loss:
            return self.ss_meter.rate_bps(self.now)
        return self.recv_meter.rate_bps(self.now)

    def calculated_rate_bps(self) -> float:
        """The TCP-friendly rate toward this receiver (2.1); the receive rate before loss.

        Computed at most once per instant: the history and RTT change only
        when a packet arrives.
        """
        key = (self.now, self.packets, self.rtt)
        if self._calc_key == key:
            return self._calc
        self._calc_key, self._calc = key, self._calculated_rate()
        return self._calc

    def _calculated_rate(self) -> float:
        p = self.loss_event_rate
        if p > 0:
            return 8.0 * tcp_rate(self.p.packet_size, self.rtt, p, rto(self.rtt, self.p.t_rto_min))
        return self.receive_rate_bps()

    # -- Endpoint hooks -----------------------------------------------------
    def on_start(self, now: float) -> None:
        self.emit_join()

    def emit_join(self) -> None:
        from hosts.core import JoinGroup

        self.emit(JoinGroup(self.cfg.group))

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        if self.left:
            return
        msg = self.decode_session(data, self.cfg.session_id, TfmccData)
        if msg is not None:
            self._on_data(msg, len(data), now)

    def _implausible(self, msg: TfmccData) -> bool:
        """A sequence jump the sender cannot have made since the last packet.

        The sender paces at most ``max_rate_bps``; a jump of more packets
        than that allows in the time between the two timestamps (with a
        margin of 1000) is a corrupted or forged packet.  Taken at face value
        it would count billions of losses and leave every later packet
        "old".
        """
        if not self._recent:
            return False
        seq0, ts0, _ = self._recent[-1]
        jump = msg.seq - seq0
        if jump <= 1000:
            return False
        dt = wire.ts_diff_us(msg.timestamp, ts0) / 1e6
        return jump > 1000 + 2.0 * max(dt, 0.0) * self.p.max_rate_bps / (8.0 * self.p.packet_size)

    def _on_data(self, msg: TfmccData, size: int, now: float) -> None:
        s = self.p
        if self._implausible(msg):
            self.malformed += 1
            return
        self.packets += 1
        outage = self._outage_ends(msg.seq, now)
        if outage:
            # What arrived before the outage says nothing of the path now: the
            # receive rate is measured from this packet on, as a late joiner's
            # is (the meters' rate spans the time since their first sample).
            # Measured across the gap, X_recv was a fraction of the rate and
            # a CLR back from its switch's restart took the session down to it.
            self.recv_meter = WindowRateMeter(self.recv_meter.window)
            self.ss_meter = WindowRateMeter(self.ss_meter.window)
        self.recv_meter.add(now, size)
        self._recent.append((msg.seq, msg.timestamp, size))
        now_us = wire.ts_us(now)
        self.max_rtt = msg.max_rtt / 1e6 if msg.max_rtt else self.max_rtt
        self.sender_slowstart = bool(msg.dflags & TfmccDataFlags.SLOWSTART)
        slowstart_meter = self._slowstart_meter_on()
        if slowstart_meter:
            self.ss_meter.add(now, size)
        self.is_clr = msg.clr_id == self.me
        self.sender_clr = msg.clr_id

        # RTT: real measurement from an echo of our report (2.4.2).
        rtt_now = 0.0  # the round trip this packet measures, if it measures one
        d_sr = wire.ts_diff_us(now_us, msg.timestamp)  # one-way delay, clock offset included
        if msg.echo_rcvr_id == self.me and msg.echo_ts and msg.echo_ts != self._measured_echo:
            # Each report gives one measurement; the sender may echo it again.
            self._measured_echo = msg.echo_ts
            inst_us = wire.ts_diff_us(now_us, msg.echo_ts) - msg.echo_offset
            if 0 < inst_us < 60_000_000:
                rtt_now = inst_us / 1e6
                self.d_rs_us = inst_us - d_sr
                self._rtt_sample(rtt_now)
        elif self.have_rtt and self.d_rs_us is not None:
            # One-way-delay adjustment between measurements (2.4.3).
            inst_us = self.d_rs_us + d_sr
            if inst_us > 0:
                rtt_now = inst_us / 1e6
                # Per-packet weight: the real-measurement weight spread over the
                # packets of one RTT, scaled down further (2.4.3).
                per_rtt = max(1.0, self.send_rate_bps() * self.rtt / (8.0 * s.packet_size))
                beta = self._beta() * s.owd_beta_scale / (per_rtt if not math.isinf(per_rtt) else 1.0)
                self.rtt = beta * inst_us / 1e6 + (1 - beta) * self.rtt
        self.recv_meter.window = max(s.recv_window_rtts * self.rtt, 0.5)
        if slowstart_meter:
            self.ss_meter.window = max(s.ss_recv_window_rtts, 1e-3) * self.rtt

        # Loss history (2.3) with the first interval from appendix B.
        span = max(self.rtt, rtt_now) if s.loss_event_rtt == "current" else self.rtt
        if outage:
            self.outages += 1
            self.history = self._new_history()
        had_loss = self.history.has_loss
        owd = d_sr / 1e6  # this packet's one-way delay, kept with the losses it reveals
        self.history.on_packet(msg.seq, now, span, owd)
        if (not had_loss and self.history.has_loss and self.sender_slowstart
                and self._overflow.forgives(now, span, self._below_initial_window())):
            self.history = self._new_history()
            self.history.on_packet(msg.seq, now, span, owd)
        if not had_loss and self.history.has_loss:
            self._init_first_interval()

        self.last_data_ts = msg.timestamp
        self.last_data_arrival = now

        # Feedback (2.5): new round, suppression, CLR's immediate feedback.
        if self.fb_round != msg.fb_round:
            self._new_round(msg.fb_round, now)
        else:
            self._arm(now)
        self.supp_rate = msg.supp_rate if msg.supp_rate != U32 else math.inf
        if self.timer_pending and self._suppressed_by(self.supp_rate):
            self.cancel_timer("feedback")
            self.timer_pending = False
            self.suppressed += 1
        elif self.timer_pending and not self._wants_to_report(
            self.calculated_rate_bps()
        ):
            # The sender already went below our rate: nothing left to say this round.
            self.cancel_timer("feedback")
            self.timer_pending = False
        elif self.timer_pending:
            self._retime(now)
        if self.is_clr and now - self.last_clr_report >= self.rtt:
            self._send_report(now)

    def _outage_ends(self, seq: int, now: float) -> bool:
        """Packet ``seq`` ends an outage (``outage_s``): nothing arrived for
        that long, four RTTs at least, while ``outage_packets`` or more were sent."""
        s, h = self.p, self.history
        if s.outage_s <= 0 or h.highest_seq is None or seq - h.highest_seq - 1 < s.outage_packets:
            return False
        return now - h.highest_time > max(s.outage_s, 4.0 * self.rtt)

    def _beta(self) -> float:
        return self.p.beta_clr if self.is_clr else self.p.beta_other

    def _rtt_sample(self, inst: float) -> None:
        if not self.have_rtt:
            old = self.rtt
            self.rtt = inst
            self.have_rtt = True
            if self._first_interval_synthetic:
                # l'_0 = l_0 · (t_RTT / t_initial)^2 (appendix B).
                self.history.scale_first_interval((inst / old) ** 2)
            # Losses grouped with the initial RTT are regrouped with the real one
            # (app. A), each at the round trip of its own time (2.4.3).
            reverse = None if self.d_rs_us is None else self.d_rs_us / 1e6
            self.history.remodel(inst, reverse if self.p.loss_event_rtt == "current" else None)
        else:
            self.rtt = ewma(self.rtt, inst, self._beta())

    @property
    def forgiven_losses(self) -> int:
        """Competitors' overflows forgotten in slowstart."""
        return self._overflow.forgiven

    def _below_initial_window(self) -> bool:
        """The sender sends fewer than ``ss_min_window`` packets per
        ``initial_rtt``: a first loss now is a competitor's (documented
        deviation from paper 2.6)."""
        w = self.p.ss_min_window
        send = self.send_rate_bps()
        return w > 0 and not math.isinf(send) and send < w * 8.0 * self.p.packet_size / self.p.initial_rtt

    def _init_first_interval(self) -> None:
        """l_0 = 1/p with p the loss event rate whose equation rate is X_recv.

        RFC 5348 6.3.1: the interval before the first loss is the one that
        would give the rate actually received (over the last RTT in slowstart,
        ``ss_recv_window_rtts``, else over ``recv_window_rtts``), not half the sending rate (paper app.
        B): in slowstart the sending rate overshoots what the path delivers,
        and a loss early in slowstart found half of a few packets per second.
        """
        if self._slowstart_meter_on():
            recv = self.ss_meter.rate_bps(self.now)  # X_recv as slowstart measured it
        else:
            recv = self.receive_rate_bps()
        send = self.send_rate_bps()
        if recv <= 0:
            recv = send / 2 if not math.isinf(send) else 8.0 * self.p.packet_size / self.rtt
        rate_bytes = max(recv / 8.0, 1e-9)
        # The full equation's inverse: the simplified one exceeds p = 1 at the
        # low rates of an early first loss (a few packets per RTT).
        p = loss_rate_full(self.p.packet_size, self.rtt, rate_bytes, rto(self.rtt, self.p.t_rto_min))
        self.history.set_first_interval(1.0 / p)
        self._first_interval_synthetic = True

    def _wants_to_report(self, x_calc: float) -> bool:
        """Report when below the sending rate; during the sender's slowstart always
        (loss-free receivers give their receive rate, and the first loss must reach
        the sender to end slowstart, 2.6)."""
        if self.sender_slowstart or self.sender_clr == 0:
            # No CLR (it left or timed out): every receiver may report, loss or
            # not, so the sender names a new one and its rounds keep going
            # (RFC 4654 3.3/4.x: feedback must not stop with the CLR).
            return True
        return self.history.has_loss and x_calc < self.send_rate_bps()

    def _ratio(self, x_calc: float) -> float:
        send = self.send_rate_bps()
        if math.isinf(send) or send <= 0:
            return 1.0
        return x_calc / send

    def _new_round(self, rnd: int, now: float) -> None:
        """A data packet announced feedback round ``rnd``: set a biased timer (2.5.1)."""
        self.fb_round = rnd
        self.cancel_timer("feedback")
        self.timer_pending = False
        self._armed = False
        self._arm(now)

    def _arm(self, now: float) -> None:
        """Decide once per round whether to report, as soon as the rates are known."""
        if self._armed or self.is_clr:
            return  # the CLR reports once per RTT without suppression
        x_calc = self.calculated_rate_bps()
        if x_calc <= 0 or math.isinf(self.send_rate_bps()):
            return  # not enough packets yet to know either rate: try again
        self._armed = True
        if not self._wants_to_report(x_calc):
            return
        self.x_fbr = x_calc
        T = feedback_delay(self.p, self.max_rtt, self.send_rate_bps())
        x = 1.0 - self.rng.random()  # uniform in (0, 1]
        t = feedback_time(self.p, T, self._ratio(x_calc), x)
        # The draw is kept as a fraction of T: T follows the sending rate
        # (2.5.3) and the sender ends rounds by the current T, so the timer
        # is rescaled when the rate changes inside the round (_retime).
        self._fb_start, self._fb_frac = now, t / T
        self.set_timer("feedback", now + t)
        self.timer_pending = True

    def _retime(self, now: float) -> None:
        """Keep a pending feedback timer at the same fraction of the current T.

        T = b·max(R_max, (c+1)·s/R_send) (2.5.3) depends on the sending rate.
        In slowstart the sender raises its rate right after a round begins,
        when a receiver has just drawn its timer from the old rate's T; the
        sender ends the round by the new, shorter T (RFC 4654 3.4).  Without
        rescaling, a receiver at a low rate reports one old T after the round
        start, the round overruns to twice its length and slowstart, which
        raises the target once per round (2.6), takes twice as long.
        """
        send = self.send_rate_bps()
        if math.isinf(send):
            return
        T = feedback_delay(self.p, self.max_rtt, send)
        when = max(now, self._fb_start + self._fb_frac * T)
        old = self.timer_at("feedback")
        # Moves below 1% of T are jitter in the rate estimate, not a new rate.
        if old is None or abs(old - when) > 0.01 * T:
            self.set_timer("feedback", when)

    def _suppressed_by(self, supp: float) -> bool:
        """Cancel when R_fb - R_calc < θ·R_fb (2.5.2).

        During the sender's slowstart a receiver that has seen loss is only
        suppressed by reports that also saw loss (2.6); the sender leaves
        slowstart on the first such report, so while the slowstart flag is set
        the echoed rate came from loss-free reports.
        """
        if math.isinf(supp):
            return False
        if self.history.has_loss and self.sender_slowstart:
            return False
        # Compare with the rate at the round's start (X_fbr, RFC 4654 draft-01),
        # or the current rate when it has risen since: falling rates must not
        # unsuppress everyone, and rising ones (slowstart) must not either.
        x = max(self.x_fbr, self.calculated_rate_bps())
        return supp - x < self.p.fb_theta * supp

    def on_timer(self, name: str, now: float) -> None:
        if name == "feedback" and self.timer_pending and not self.left:
            self.timer_pending = False
            self._send_report(now)

    def _send_report(self, now: float, leaving: bool = False) -> None:
        flags = 0
        if self.have_rtt:
            flags |= TfmccReportFlags.HAVE_RTT
        if self.history.has_loss:
            flags |= TfmccReportFlags.HAVE_LOSS
        else:
            flags |= TfmccReportFlags.SLOWSTART
        if self.is_clr:
            flags |= TfmccReportFlags.IS_CLR
        if leaving:
            flags |= TfmccReportFlags.LEAVING
        echo_ts = self.last_data_ts or 0
        offset = int((now - self.last_data_arrival) * 1e6) if self.last_data_ts else 0
        rep = TfmccReport(
            session_id=self.cfg.session_id,
            seq=self.reports_sent & U32,
            timestamp=wire.ts_us(now),
            rate=_u32(self.calculated_rate_bps()),
            fb_round=(self.fb_round or 0) & 0xFFFF,
            rflags=flags,
            rcvr_id=self.me,
            recv_rate=_u32(self.receive_rate_bps()),
            rtt=_u32(self.rtt * 1e6),
            loss_rate=_u32(self.loss_event_rate * U32),
            echo_ts=echo_ts,
            echo_offset=_u32(offset),
        )
        self.send(self.sender_addr, rep.encode())
        self.reports_sent += 1
        if self.is_clr:
            self.last_clr_report = now

    def close(self, now: float) -> None:
        """Leave the session: tell the sender (so a leaving CLR is replaced at once)."""
        from hosts.core import LeaveGroup

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
        return (
            {
                "rate_bps": recv,
                "calc_rate_bps": min(calc, 1e12),
                "loss_event_rate": self.loss_event_rate,
                "rtt_s": self.rtt,
                "reports": self.reports_sent,
            },
            "clr" if self.is_clr else ("have_rtt" if self.have_rtt else "no_rtt"),
        )


# ===========================================================================
# Sender
# ===========================================================================

#: Echo priorities (2.4.2): lower value goes first.
ECHO_NEW_CLR, ECHO_NO_RTT, ECHO_OTHER, ECHO_CLR = 0, 1, 2, 3


@dataclass
class _Echo:
    prio: int
    rate: float
    rcvr: int
    ts: int
    received: float


class TfmccSender(SessionEndpoint[TfmccParams], role="tfmcc-sender"):
    """The TFMCC sender: CLR tracking, rate adjustment, feedback rounds, pacing."""

    #: CLRs dropped, and reports refused by the policing rules of :meth:`_police`
    #: (:class:`hosts.core.Counters`).
    COUNTERS = ("clr_drops", "refused_clr_claims", "refused_flood", "refused_rates")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.dest: Address = (config.group, config.port)
        s = self.p
        self.r_max = s.initial_rtt
        #: Sending rate in bit/s; starts at TFRC's initial window per R_max (RFC 5348 4.2).
        self.rate = self._initial_rate(self.r_max)
        self.slowstart = True
        self.ss_target = self.rate
        self.ss_from = self.rate
        self.ss_ramp_start = 0.0
        self.clr: int | None = None
        self.clr_rate = math.inf
        self.clr_last = -math.inf
        self.clr_changed_at = -math.inf
        self.clr_echo: _Echo | None = None
        self.pending: dict[int, _Echo] = {}
        self.fb_round = 0
        self.round_start = 0.0
        self.round_nonclr = False
        self.first_nonclr_at = 0.0
        self.round_recv: dict[int, float] = {}
        self.round_max_rtt = 0.0
        self.supp_rate = math.inf
        self.last_report = 0.0
        self.last_increase = 0.0
        self.seq = 0
        self.reports = 0
        self.reports_this_round = 0
        #: Non-CLR reports per finished round (for scaling figures).
        self.round_report_counts: list[int] = []
        self.rmax_measured = False
        self.silent_latched = False
        #: Increase limited to one packet per RTT (after a CLR change or leave).
        self.limited = False
        self.ss_step_at = 0.0
        self._buckets: dict[int, tuple[float, float]] = {}
        self._payload = bytes(s.packet_size - DATA_HEADER)
        self.rng = random.Random((config.seed << 32) ^ 0x7F3A)
        #: The pacing schedule's time of the next packet; it leaves at this
        #: tick plus a random offset (``pacing_jitter``) and carries the tick
        #: as its timestamp, so receivers still read the sending rate exactly.
        self._tick = 0.0
        self._last_tick = 0.0  # the pacing tick of the last packet sent
        #: Packets of the current burst already sent, and its size
        #: (``pacing_burst``; 1 until the rate carries a window's worth).
        self._burst_sent = 0
        self._burst_size = 1

    # -- helpers ------------------------------------------------------------
    def _initial_rate(self, rtt: float) -> float:
        """TFRC's initial window per ``rtt``, min(4s, max(2s, 4380 B)) (RFC
        5348 4.2), or ``initial_rate_bps``."""
        s = self.p
        if s.initial_rate_bps:
            return s.initial_rate_bps
        w_init = min(4.0 * s.packet_size, max(2.0 * s.packet_size, 4380.0))
        return 8.0 * w_init / rtt

    def _slowstart_floor(self) -> float:
        """Slowstart never goes below the initial window per R_max (RFC 5348
        4.3 step 4: X = max(min(2X, 2X_recv), W_init/R)): a report of little
        or nothing received is no loss, and only a loss ends slowstart (2.6).
        R_max is taken at least at the 0.5 s placeholder the session started
        with, so that a short R_max measured later does not turn the floor
        into a jump past the per-RTT doubling."""
        return self._initial_rate(max(self.r_max, self.p.initial_rtt))

    def T(self) -> float:
        """The feedback delay receivers use now (2.5.3), from R_max and the rate."""
        return feedback_delay(self.p, self.r_max, self.rate)

    def _interval(self) -> float:
        """Pacing: one packet-time at the current rate."""
        return 8.0 * self.p.packet_size / self.rate

    def on_start(self, now: float) -> None:
        self.round_start = now
        self.last_report = now
        self.last_increase = now
        self.ss_ramp_start = now
        self.ss_step_at = now
        self._tick = now
        self.set_timer("send", now)

    # -- reports ------------------------------------------------------------
    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, TfmccReport)
        if msg is not None:
            before = self.rate
            self._on_report(msg, now)
            pending = self.timer_at("send")
            if pending is not None and pending - now > self.r_max:
                # The next packet is more than a round trip away (the
                # 1-packet-per-64-s floor): act on the report now.
                if not self.slowstart and not self._silent(now):
                    self._increase(now)
                if self.rate > before:
                    self._send_sooner(now, pending)

    def _send_sooner(self, now: float, pending: float) -> None:
        """Bring the next packet forward to one packet-time at the raised rate.

        The pacing timer was set at the old rate's gap, and the rate moves
        only when a packet is sent (``_increase``): at the 1-packet-per-64-s
        floor (after silence, or a CLR whose first few packets gave p near
        0.4) a report that lifts the rate would otherwise wait up to 64 s to
        act.  TFRC spaces packets by s/X at the current X (RFC 5348 4.6).
        Only called when the next packet is more than R_max away, so the
        pacing of a sender at ordinary rates is untouched.
        """
        if self._burst_sent:
            return  # inside a burst (its packets leave back to back anyway)
        tick = self._last_tick + self._interval()
        if tick < pending:
            self._tick = max(tick, now)
            self.set_timer("send", self._tick)

    def _police(self, rep: TfmccReport, now: float) -> bool:
        """Refuse what one receiver cannot legitimately send (documented in tfmcc.md).

        * an ``IS_CLR`` claim from a receiver that is not the CLR: only the
          sender names the CLR (paper 2.2), the flag merely lets switch
          filters pass the CLR's reports;
        * more than a burst of ``police_burst`` reports faster than one per
          half RTT from one receiver: the CLR reports once per RTT, others once
          per feedback round (paper 2.2, 2.5), so a faster stream is a flood.
        Leave reports always pass.
        """
        f = rep.rflags
        if f & TfmccReportFlags.LEAVING:
            return True
        if f & TfmccReportFlags.IS_CLR and rep.rcvr_id != self.clr:
            self.refused_clr_claims += 1
            return False
        rtt = rep.rtt / 1e6 if f & TfmccReportFlags.HAVE_RTT and rep.rtt else self.r_max
        gap = max(0.5 * min(rtt, self.r_max), 1e-3)
        tokens, last = self._buckets.get(rep.rcvr_id, (self.p.police_burst, now))
        tokens = min(self.p.police_burst, tokens + (now - last) / gap)
        if tokens < 1.0:
            self._buckets[rep.rcvr_id] = (tokens, now)
            self.refused_flood += 1
            return False
        self._buckets[rep.rcvr_id] = (tokens - 1.0, now)
        if len(self._buckets) > 4 * self.p.fb_receivers:
            self._buckets.clear()  # bounded memory against spoofed ids
        return True

    def _checked_rtt(self, rep: TfmccReport, now: float) -> tuple[float | None, bool]:
        """The report's RTT, cross-checked with the sender's own measurement.

        Returns (RTT, measured at the sender).  The echoed timestamp gives the
        sender's own RTT sample (2.4.4).  A receiver's smoothed RTT may lie
        above one sample, but not by more than ``rtt_check_factor``: a claimed
        RTT beyond that is replaced by the bound, so a receiver cannot lower
        its rate, or inflate R_max and every feedback round, with an RTT its
        path does not have.
        """
        f = rep.rflags
        inst: float | None = None
        if rep.echo_ts:
            x = (wire.ts_diff_us(wire.ts_us(now), rep.echo_ts) - rep.echo_offset) / 1e6
            if 0 < x < 60.0:
                inst = x
        if f & TfmccReportFlags.HAVE_RTT and rep.rtt:
            rtt = rep.rtt / 1e6
            if inst is not None:
                rtt = min(rtt, self.p.rtt_check_factor * inst + 0.01)
            return rtt, False
        return inst, inst is not None

    def _on_report(self, rep: TfmccReport, now: float) -> None:
        s = self.p
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
            # The rate must follow from the report's own p and (checked) RTT;
            # with a sender-side RTT the rate is recomputed with it (2.4.4).
            eq = 8.0 * tcp_rate(s.packet_size, rtt, rep.loss_rate / U32, rto(rtt, s.t_rto_min))
            if sender_side:
                rate = eq
            elif rate < eq / s.rtt_check_factor:
                self.refused_rates += 1
                rate = eq
        if rtt is not None:
            self.round_max_rtt = max(self.round_max_rtt, rtt)
            if not self.rmax_measured:
                # The first real RTT replaces the 0.5 s placeholder (RFC 4654
                # 3.2: R_max is the largest RTT reported); decaying by 0.9 per
                # round from the placeholder took ~20 rounds.
                self.r_max = rtt
                self.rmax_measured = True
            elif rtt > self.r_max:
                self.r_max = rtt  # max RTT grows at once, shrinks per round

        if f & TfmccReportFlags.LEAVING:
            self.pending.pop(rep.rcvr_id, None)
            self._buckets.pop(rep.rcvr_id, None)
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
            # Echo the rate as the receiver computed it: receivers compare it
            # with their own computation (a sender-side RTT must not unsuppress).
            self.supp_rate = min(self.supp_rate, float(rep.rate))

        echo = _Echo(ECHO_OTHER if rtt is not None and f & TfmccReportFlags.HAVE_RTT else ECHO_NO_RTT,
                     rate, rep.rcvr_id, rep.timestamp, now)

        if self.slowstart and not have_loss:
            # Slowstart (2.6): reports carry receive rates; the lowest reporter
            # is the CLR (RFC 4654 3.6) and the target is d · R_recv^min.
            recv = float(rep.recv_rate or rep.rate)
            self.round_recv[rep.rcvr_id] = recv
            if is_clr or self.clr is None or rate < self.clr_rate:
                if not is_clr:
                    echo.prio = ECHO_NEW_CLR
                self._set_clr(rep.rcvr_id, rate, now)
                if s.slowstart_mode == "clr":
                    self._slowstart_report(recv, rtt, now)
            self._queue_echo(echo, is_clr)
            return

        if have_loss and self.slowstart:
            self.slowstart = False  # first loss anywhere ends slowstart (2.6)
            self.last_increase = now
            self.limited = False
            if not is_clr:
                echo.prio = ECHO_NEW_CLR
                self._set_clr(rep.rcvr_id, rate, now)
                is_clr = True
        elif have_loss and not is_clr and (self.clr is None or rate < self.clr_rate):
            # No limiting receiver, or one without loss whose rate sets no
            # limit: a report with loss names the new CLR.
            echo.prio = ECHO_NEW_CLR
            self._set_clr(rep.rcvr_id, rate, now)
            is_clr = True
            self.last_increase = now
        if not have_loss:
            if self.clr is None and not self.slowstart:
                # The CLR left or timed out and nobody has loss: the lowest
                # loss-free reporter becomes CLR, so feedback keeps coming
                # every RTT; its rate sets no equation limit, the increase
                # stays at one packet per RTT (paper 2.2, 4.2).
                echo.prio = ECHO_NEW_CLR
                self._set_clr(rep.rcvr_id, math.inf, now)
                self.limited = True
                self.last_increase = now
            elif is_clr and not self.slowstart:
                if not math.isinf(self.clr_rate):
                    # The CLR's history restarted (an outage, ``outage_s``):
                    # its rate no longer limits, and the increase is the one
                    # after a CLR change, a packet per R_max per R_max (2.2).
                    self.limited = True
                self.clr_rate = math.inf
            self._queue_echo(echo, is_clr)
            return

        if is_clr:
            self.clr_rate = rate
            self.clr_last = now
            if rate < self.rate:
                self.rate = max(rate, s.min_rate_bps)  # immediate decrease (2.2)
                self.last_increase = now
        elif rate < self.rate:
            echo.prio = ECHO_NEW_CLR
            self._set_clr(rep.rcvr_id, rate, now)
            self.rate = max(rate, s.min_rate_bps)
            self.last_increase = now
        # A new CLR's first report is echoed first (2.4.2), not as the CLR's.
        self._queue_echo(echo, is_clr and echo.prio != ECHO_NEW_CLR)

    def _slowstart_report(self, recv: float, rtt: float | None, now: float) -> None:
        """One CLR report in slowstart: rate = min(d · R_recv, 2^(Δt/RTT) · rate).

        RFC 4654 3.6 names the lowest reporter CLR in slowstart too, and the
        CLR reports once per RTT; applying each report (as NORM does), capped
        at doubling per RTT, replaces the paper's one step per feedback round
        (round 0 alone lasts ~10 s at the initial 16 kbit/s).
        """
        s = self.p
        r = rtt if rtt is not None else self.r_max
        target = min(s.slowstart_d * recv, s.max_rate_bps)
        cap = self.rate * 2.0 ** min(1.0, (now - self.ss_step_at) / max(r, 1e-3))
        self.rate = min(max(min(target, cap), self._slowstart_floor()), s.max_rate_bps)
        self.ss_step_at = now
        self.ss_from = self.ss_target = self.rate

    def _set_clr(self, rcvr: int, rate: float, now: float) -> None:
        if rcvr != self.clr:
            self.clr_changed_at = now
        self.clr = rcvr
        self.clr_rate = rate
        self.clr_last = now

    def _drop_clr(self) -> None:
        """The CLR left or timed out (paper 4.2): keep the rate, increase only
        by one packet per RTT until a new CLR's rate is reached (paper 2.2)."""
        self.clr = None
        self.clr_rate = math.inf
        self.clr_echo = None
        self.last_increase = self.now
        self.limited = True
        self.clr_drops += 1
        # The receivers learn from the next packets that there is no CLR and
        # then report: their silence until now proves nothing, so the
        # no-feedback halving restarts its clock (it used to fire together
        # with the CLR timeout and halve the rate the CLR had allowed).
        self.last_report = max(self.last_report, self.now)
        self.silent_latched = False

    def _queue_echo(self, echo: _Echo, is_clr: bool) -> None:
        if is_clr or echo.rcvr == self.clr and echo.prio != ECHO_NEW_CLR:
            echo.prio = ECHO_CLR
            self.clr_echo = echo
            self.pending.pop(echo.rcvr, None)
            return
        if echo.rcvr == self.clr:
            self.clr_echo = echo
        self.pending[echo.rcvr] = echo

    def next_echo(self) -> _Echo | None:
        """Which report the next data packet echoes (2.4.2 priority order).

        New CLR, then receivers without an RTT, then other non-CLR receivers,
        then the CLR; ties go to the lowest reported rate.  With nothing
        pending the CLR's last report is echoed again.
        """
        if self.pending:
            best = min(self.pending.values(), key=lambda e: (e.prio, e.rate))
            del self.pending[best.rcvr]
            return best
        return self.clr_echo

    # -- rate control ---------------------------------------------------------
    def _increase(self, now: float) -> None:
        """Increase toward the CLR's rate.

        After the CLR changed to a higher rate or left, at most one packet per
        R_max per R_max (paper 2.2; RFC 4654 3.3: 8s/R_max bit/s every R_max)
        until the new CLR's rate is reached; otherwise the CLR's own rate is
        followed at once, its loss history limiting the increase to about 0.3
        packets per RTT (paper 2.2).  ``increase_limit="always"`` limits
        every increase (RFC 4654 3.3).
        """
        dt = max(0.0, now - self.last_increase)
        self.last_increase = now
        if self.clr is None:
            # No CLR: hold the rate until a report names one ("we cannot
            # afford to increase the transmission rate in the absence of
            # feedback", paper 2.2); every receiver may report meanwhile.
            return
        ceiling = min(self.clr_rate, self.p.max_rate_bps)
        if self.rate >= ceiling:
            self.limited = False
            return
        if self.limited or self.p.increase_limit == "always":
            step = 8.0 * self.p.packet_size / (self.r_max * self.r_max) * dt
            self.rate = min(ceiling, self.rate + step)
            if self.rate >= ceiling:
                self.limited = False
        else:
            self.rate = ceiling

    def _slowstart_step(self, now: float) -> None:
        """Move toward d·R_recv^min over one R_max (2.6)."""
        frac = min(1.0, (now - self.ss_ramp_start) / self.r_max)
        self.rate = self.ss_from + (self.ss_target - self.ss_from) * frac
        self.rate = min(max(self.rate, self.p.min_rate_bps), self.p.max_rate_bps)

    def _silent(self, now: float) -> bool:
        """No report for ``silence_rounds`` feedback delays; latched until the
        next report (T grows as the rate halves and must not end the silence)."""
        if not self.silent_latched and now - self.last_report > self.p.silence_rounds * self.T():
            self.silent_latched = True
        return self.silent_latched

    def on_timer(self, name: str, now: float) -> None:
        if name == "send":
            self._send_data(now)

    def round_length(self) -> float:
        """T (RFC 4654 3.4: the round ends after T if non-CLR feedback came).

        Reports that arrive later still suppress in the next round.
        """
        return self.T()

    def _check_round(self, now: float) -> None:
        """End the feedback round when due (RFC 4654 draft-01 3.4).

        A round ends one round length after it began if non-CLR feedback
        arrived; otherwise at the first non-CLR report, but no later than two
        round lengths.  Checked at every data packet, so a round length that
        shrinks as the rate grows takes effect at once.
        """
        L = self.round_length()
        elapsed = now - self.round_start
        if elapsed >= 2 * L or (elapsed >= L and self.round_nonclr):
            # Feedback that only came after the round's normal length also
            # suppresses in the next round (the receivers sent it for this one).
            late = self.round_nonclr and self.first_nonclr_at >= self.round_start + L
            carry = self.supp_rate
            self._end_round(now)
            if late:
                # The late round's only report also suppresses in the next round.
                self.supp_rate = carry

    def _end_round(self, now: float) -> None:
        s = self.p
        self.round_report_counts.append(self.reports_this_round)
        self.reports_this_round = 0
        # Max RTT: decays unless reports in the round showed a larger one; a
        # round without any RTT evidence keeps it (silence proves nothing).
        if self.round_max_rtt > 0:
            self.r_max = max(self.round_max_rtt, self.r_max * s.rmax_decay, 1e-3)
        self.round_max_rtt = 0.0
        if self.slowstart and self.round_recv:
            # Latest receive rate of each reporting receiver; the minimum sets the target.
            self.ss_from = self.rate
            self.ss_target = min(max(s.slowstart_d * min(self.round_recv.values()), self._slowstart_floor()),
                                 s.max_rate_bps)
            self.ss_ramp_start = now
        self.round_recv = {}
        T = self.T()
        if self.clr is not None and now - self.clr_last > s.clr_timeout_rounds * T:
            self._drop_clr()
        if self._silent(now):
            self.rate = max(self.rate / 2, s.min_rate_bps)  # halve after long silence
            self.ss_from = self.ss_target = self.rate
        self.fb_round = (self.fb_round + 1) & 0xFFFF
        self.round_start = now
        self.round_nonclr = False
        self.supp_rate = math.inf


    def _send_data(self, now: float) -> None:
        s = self.p
        if self._silent(now):
            self.last_increase = now  # only halving (at round ends) while nobody answers
        elif self.slowstart:
            if self.p.slowstart_mode == "round":
                self._slowstart_step(now)
        else:
            self._increase(now)
        self._check_round(now)
        echo = self.next_echo()
        dflags = 0
        if self.slowstart:
            dflags |= TfmccDataFlags.SLOWSTART
        if now - self.clr_changed_at < self.r_max:
            dflags |= TfmccDataFlags.CLR_CHANGED
        msg = TfmccData(
            session_id=self.cfg.session_id,
            seq=self.seq & U32,
            timestamp=wire.ts_us(self._tick),
            supp_rate=_u32(self.supp_rate),
            max_rtt=_u32(self.r_max * 1e6),
            clr_id=self.clr or 0,
            echo_rcvr_id=echo.rcvr if echo else 0,
            echo_ts=echo.ts if echo else 0,
            echo_offset=_u32((now - echo.received) * 1e6) if echo else 0,
            fb_round=self.fb_round,
            dflags=dflags,
            payload=self._payload,
        )
        self.seq += 1
        self.send(self.dest, msg.encode())
        # Pacing: the next tick one packet-time later at the current rate; the
        # packet leaves within ±jitter/2 packet-times of it.
        gap = self._interval()
        self._last_tick = self._tick
        self._tick = max(self._tick + gap, now - 0.5 * gap)
        self._burst_sent += 1
        if self._burst_sent < self._burst_size:
            self.set_timer("send", now)  # the rest of the burst, back to back
            return
        # The next burst: its size from the rate now, its departure the mean
        # of its packets' ticks.
        self._burst_sent = 0
        self._burst_size = self._next_burst_size()
        j = s.pacing_jitter
        offset = j * (self.rng.random() - 0.5) * gap if j else 0.0
        centre = 0.5 * (self._burst_size - 1) * gap
        self.set_timer("send", max(now, self._tick + centre + offset))

    def _next_burst_size(self) -> int:
        """``pacing_burst`` while a window of R_max holds at least
        ``pacing_burst_min_window`` packets at the current rate, else 1."""
        s = self.p
        per_rtt = self.rate * self.r_max / (8.0 * s.packet_size)
        return s.pacing_burst if per_rtt >= s.pacing_burst_min_window else 1

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return (
            {
                "rate_bps": self.rate,
                "max_rtt_s": self.r_max,
                "clr": float(self.clr or 0),
                "reports": self.reports,
                "fb_round": self.fb_round,
            },
            "slowstart" if self.slowstart else "steady",
        )

    def stats(self) -> dict[str, Any]:
        """A snapshot for logs and tests."""
        return {"rate_bps": self.rate, "clr": self.clr, "reports": self.reports,
                "slowstart": self.slowstart, "r_max": self.r_max}
