"""VLMCC (Rodriguez-Perez et al.): single-rate streaming that emulates TCP Vegas to a leader.

The sender runs a simplified TCP-Vegas window toward one receiver, the
*leader*, which acknowledges every packet.  Every other receiver (a
*follower*) estimates the window a Vegas connection would have on its own
path, using the RTT variation ``drift_prev`` lets it compute without sending
anything, and *challenges* the leader when the sender's announced rate is
more than its own path could carry.  The sender decides whether to accept.
Unreliable: nothing is retransmitted.  Constants and their sources are in
``docs/protocols/vlmcc.md``; the equation numbers below are the paper's.

Sender (section 2.2): ``rtt`` and deviation EWMAs with ``g = 0.1`` (1, 2);
every ``rtt`` the Vegas rule compares ``W/base_rtt`` with the achieved rate
and moves W by one packet under ``alpha`` or over ``beta``; a packet not ACKed
within ``rtt + 4*dev`` is lost and halves W at most once per RTT; packets go
in bursts of at most two separated by ``rtt * MaxSegment / W`` (3).
Leadership loss (section 2.4): after more than a window sent with no ACK, the
sender keeps one window per RTT and grows W by one per RTT until a challenge
names a new leader.

Receivers (section 2.3): the first RTT comes from a Challenge (only id and
tstamp) answered by Start; then ``rtt += delta`` with
``delta = now - (last_arrival + drift_prev)`` (4, 5) on consecutive packets;
the Vegas window is emulated on that RTT; a challenge goes out when the
announced rate exceeds ``(W_follower + N_extra) / rtt_follower`` (6) and the
averaged gap between the two rates grows.

Beyond the paper (each a parameter or a rule only where the paper is silent;
why and measured effect in the docs): a floor on the loss timer and TCP's
three-later-ACKs loss rule; base_rtt kept across leader changes; a
competitive mode (drain probes detect a buffer-filling competitor, then
Reno's window rule, announced to followers by a data flag); volunteers and
bars after leader loss; claims a single receiver cannot make are refused.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from hosts.core import Address, JoinGroup, node_id
from hosts.registry import SessionConfig, SessionEndpoint
from hosts.rtt import SmoothedRtt, ewma, lowest
from hosts.tcp_rules import (DELAYED_ACK_PACKETS, DELAYED_ACK_TIMEOUT, DUPTHRESH, LEAST_SSTHRESH, MIN_RTO, VEGAS,
                             Vegas, ack_at_once, vegas_diff)
from hosts.wire import (
    Flags,
    VlmccAck,
    VlmccChallenge,
    VlmccData,
    VlmccStart,
    seconds_since,
    ts_diff_us,
    ts_us,
)


SILENT_ROUNDS = 4
"""Leaderless rounds without a challenge before the window backs off: a
receiver volunteers within an RTT of data naming no leader but at most once
per two of its RTTs (:meth:`VlmccReceiver._volunteer`), so a silence of four
rounds is no longer a quiet group."""


@dataclass
class VlmccParams:
    """VLMCC parameters; sources in ``docs/protocols/vlmcc.md``."""

    #: Payload bytes per data packet: 1440 fills a 1500-byte IP packet (the
    #: 32-byte VLMCC data header, UDP, IPv4), a TCP segment's size on such a
    #: path.  W counts packets and drop-tail queues drop packets, so at TCP's
    #: size equal windows carry equal bytes; with the paper's 1000 bytes
    #: (section 3, footnote 3, where TCP's segments are 1000 bytes too) VLMCC
    #: got 1000/1460 of a 1460-byte TCP flow's bytes at the same window.
    packet_size: int = 1440
    #: TCP Vegas' thresholds (:class:`hosts.tcp_rules.Vegas`).
    alpha: float = VEGAS.alpha
    beta: float = VEGAS.beta
    gamma: float = VEGAS.gamma
    g: float = 0.1
    g_dev: float = 0.1
    max_burst: int = 2
    initial_window: float = 2.0
    initial_rtt: float = 0.1
    min_rate_bps: float = 16000.0
    max_window: float = 10000.0
    n_extra: float = 4.0
    #: A follower's emulated Vegas connection starts as the sender's does, in
    #: slow start (2.2: until more than ``gamma`` packets queue on the
    #: follower's own path, or a loss), keeping up with what the sender sends
    #: it, and it challenges only once out of it.  Without it the emulation
    #: grew by one packet per RTT while the sender doubled, so any follower's
    #: window lagged behind and its challenge ended the sender's slow start:
    #: with two receivers on an idle 20 Mbit/s, 200 ms path slow start ended
    #: at 16 packets and the link took over 45 s to fill (one receiver: 255
    #: packets in 5 s).  False: the emulation is in congestion avoidance from
    #: the start.
    follower_slow_start: bool = True
    gap_gain: float = 0.1
    holdoff_rtts: float = 4.0
    #: The leader ACKs as a TCP receiver does (RFC 5681 4.2): once
    #: ``leader_ack_every`` packets are unacknowledged, at once for a packet out
    #: of order, else ``leader_ack_delay`` after the first one held.  The sender
    #: then releases packets in pairs, as a TCP sender does; ACKing every packet
    #: (``leader_ack_every: 1``, the paper) clocked out single packets that a
    #: full drop-tail queue took where it dropped TCP's second one, and the
    #: session took up to 2.5x TCP's share (docs/protocols/vlmcc.md).
    leader_ack_delay: float = DELAYED_ACK_TIMEOUT
    leader_ack_every: int = DELAYED_ACK_PACKETS
    #: Entering the competitive mode, W slow-starts until the first loss
    #: (RFC 5681 3.1: a flow new to a path), then Reno's +1 per RTT.  False:
    #: +1 per RTT at once, which a competitor found late on a long path
    #: (holding hundreds of packets) left at 0.2 of TCP for minutes.
    compete_slow_start: bool = True
    probe_interval: float = 1.0
    #: A receiver that has heard nothing of the session for this long (at
    #: least 4 of its RTTs) probes the sender again, as a joining receiver
    #: does, until a Start or data answers: a sender that restarted with no
    #: state waits for a probe before it sends, and without this its
    #: receivers, joined long before, never sent one.  0: never.
    rejoin_silence: float = 2.0
    #: Loss detection beyond the paper's timer (docs/protocols/vlmcc.md, "Deviations").
    #: A packet is lost when the leader has ACKed ``dupthresh`` packets sent after it
    #: (TCP's fast-retransmit rule; 0: the timer alone) ...
    dupthresh: int = DUPTHRESH
    #: ... and the timer ``rtt + 4*dev`` never fires before ``loss_floor_rtts * rtt``.
    loss_floor_rtts: float = 2.0
    #: Leaderless, the window grows by one per round only while some receiver
    #: is still heard: the growth is there to provoke a challenge (Section 2.4).
    #: SILENT_ROUNDS rounds in a row without any challenge halve it each round
    #: instead, as TCP backs off when no ACK comes back (RFC 5681 3.1, RFC 6298
    #: 5.5): a sender nobody hears must not speed up. False: the paper's
    #: unconditional growth (with 32 receivers behind a 1 Mb/s link it once
    #: grew to 40-60 Mb/s with nothing delivered).
    leaderless_backoff: bool = True
    #: A leader that fell silent cannot lead again for this long (doubling on repeat).
    leader_bar: float = 5.0
    #: The shortest silence (past a whole window) that counts as losing the
    #: leader: the loss timeout, never under RFC 6298 2.4's 1 s minimum RTO.
    #: A queue that fills behind the leader (TCP's slow start: 20 packets,
    #: 240 ms on a 22 ms path) outran the loss timeout, whose deviation had
    #: decayed on the quiet path, and the sender went leaderless with the
    #: leader alive; in the paper's Fig. 5 with TCP the lead then went back and
    #: forth between the branches (10 changes in 16 s, seed 1).  0: the loss
    #: timeout alone.
    leader_loss_min: float = MIN_RTO
    #: Competitive mode: every ``probe_rounds`` RTTs the sender sends half its
    #: window for two RTTs; if the queue does not drain, a buffer-filling competitor
    #: holds it, and W grows by one per RTT and halves on loss (TCP Reno's rule)
    #: instead of the Vegas rule, until ``compete_exit_probes`` probes in a row see
    #: the queue drain.  False: the paper's pure Vegas behaviour.
    compete: bool = True
    #: While competing, a loss found by the timer (fewer than ``dupthresh`` later
    #: packets ACKed: no three duplicate ACKs for TCP) is what a TCP flow sees as a
    #: retransmission timeout: W goes to 1, nothing is sent until one RTO
    #: (``max(compete_min_rto, rtt + 4*dev)``, RFC 6298 2.4's 1 s floor) after the
    #: lost packet left, doubled on each timeout in a row, then W slow-starts to
    #: half the window it had.
    #: False: a loss only halves W (the rule before).
    compete_timeouts: bool = True
    compete_min_rto: float = MIN_RTO
    #: A second competitive timeout in a row, with the leader silent since
    #: before the first (at least ``leader_loss_min``), loses the leader
    #: (Section 2.4: after a timeout the window is one packet, and it went
    #: unanswered).  False: back off again, which with a crashed leader
    #: doubled the pause up to 64 RTOs and the followers got nothing.
    timeout_loses_leader: bool = True
    #: While competing, a loss of a packet sent before the last cut of W is
    #: that cut's congestion, not a new one (TCP's recovery point, RFC 6582
    #: 3.2: one reduction per window of data).  False: at most one halving
    #: per RTT of time, the paper's rule, which cut again for the same overflow
    #: when its losses came to light over more than one RTT.
    one_cut_per_window: bool = True
    probe_rounds: int = 20
    #: Drain probes in a row that must see the queue drain before the Vegas
    #: rule comes back.  A Reno competitor's queue also empties for part of
    #: each of its cycles when the queue is below the bandwidth-delay
    #: product; with 2 (40 RTTs) the sender left in that phase and spent the
    #: rest of the cycle in Vegas mode: 0.41 and 0.42 of TCP on the grid's
    #: cells 12 and 22.  With 4 (80 RTTs) 0.66 and 0.83 (docs/protocols/vlmcc.md).
    compete_exit_probes: int = 4
    #: Out of the competitive mode, this many rounds in a row in which the
    #: Vegas rule cut W while the round's mean RTT did not fall below the
    #: streak's first are a competitor filling the queue: the competitive
    #: mode is entered as a drain probe would enter it.  0: only probes.
    compete_yield_rounds: int = 8
    #: While competing, packets leave as the leader's ACKs open the window,
    #: back to back, with no equation (3) spacing: the Reno rule is TCP's,
    #: and TCP's data leaves on its ACK clock.  Paced by equation (3), the
    #: session's packets met a full drop-tail queue less often than TCP's
    #: ACK-clocked pairs next to them: on a 1.14 Mbit/s, 168 ms dumbbell
    #: with 31 packets of queue and two TCP flows the queue dropped 0.5 % of
    #: VLMCC's packets and 2.7 % of TCP's, and VLMCC took 2.3x a TCP flow's
    #: share.  False: equation (3) in both modes.
    compete_ack_clocked: bool = True
    #: While competing, a challenge must claim less than this share of the rate.
    compete_accept_ratio: float = 0.33
    #: Queue counted as drained when the probe's smallest RTT is within this
    #: fraction of base_rtt (or within alpha packets at the current rate).
    drain_frac: float = 0.1
    #: A drain probe also allows the path's delay noise: the smallest round
    #: mean RTT seen on the leader's path above its base_rtt (the RTT
    #: samples' average excess when no queue stands), at most
    #: ``drain_frac``·base_rtt more.  Beyond the paper: base_rtt is one
    #: sample's minimum, a round's mean sits a send-path time or two above it
    #: even on an empty path (3 ms of send-path time on a 35 ms path read as
    #: a standing queue and sent VLMCC into its competitive mode alone).
    #: False: the probe against base_rtt alone.
    drain_noise: bool = True
    #: The switches' challenge-filter window (µs): read by the controller from the
    #: session's parameters (``assist_filter``'s ``window_us``); the hosts ignore it.
    filter_window_us: int = 100_000

    @property
    def ack_hold(self) -> float:
        """The longest the leader holds an ACK back (0 when it ACKs every packet).

        RTT samples leave the hold out (``tstamp_comp``), so the loss timer
        adds it: a lone packet's ACK comes up to this much after its RTT."""
        return self.leader_ack_delay if self.leader_ack_every > 1 else 0.0

    def __post_init__(self) -> None:
        if not 0 < self.packet_size <= 8000:
            raise ValueError(f"packet_size must be in 1..8000, got {self.packet_size}")
        if not 0 < self.g <= 1 or not 0 < self.g_dev <= 1 or not 0 < self.gap_gain <= 1:
            raise ValueError("gains must be in (0, 1]")
        _ = self.vegas  # a Vegas checks its own thresholds
        if self.max_burst < 1 or self.initial_window < 1 or self.initial_rtt <= 0:
            raise ValueError("max_burst and initial_window must be >= 1, initial_rtt > 0")
        if self.probe_interval <= 0:
            raise ValueError("probe_interval must be > 0")
        if self.rejoin_silence < 0:
            raise ValueError(f"rejoin_silence must be >= 0, got {self.rejoin_silence}")
        if self.dupthresh < 0 or self.loss_floor_rtts < 0 or self.probe_rounds < 3 or self.compete_exit_probes < 1:
            raise ValueError("dupthresh, loss_floor_rtts >= 0, probe_rounds >= 3, compete_exit_probes >= 1")
        if not 0 <= self.drain_frac <= 1 or self.leader_bar < 0 or not 0 < self.compete_accept_ratio <= 1:
            raise ValueError("drain_frac must be in [0, 1] and leader_bar >= 0")
        if self.leader_loss_min < 0:
            raise ValueError("leader_loss_min must be >= 0")
        if self.compete_min_rto < 0:
            raise ValueError(f"compete_min_rto must be >= 0, got {self.compete_min_rto}")
        if self.leader_ack_every < 1 or self.leader_ack_delay < 0:
            raise ValueError("leader_ack_every must be >= 1 and leader_ack_delay >= 0")
        if not 0 < self.filter_window_us < 1 << 48:
            raise ValueError(f"filter_window_us must be in 1..2**48-1, got {self.filter_window_us}")

    @property
    def vegas(self) -> Vegas:
        """The Vegas rule with this session's thresholds."""
        return Vegas(self.alpha, self.beta, self.gamma)


#: Periodic feedback timers fire after ``period * uniform(1 - J, 1 + J)``: receivers
#: that start together must not stay in step (Floyd and Jacobson, "The
#: Synchronization of Periodic Routing Messages", 1994, advise J >= 0.5; RTCP,
#: RFC 3550 section 6.3.1, uses the same [0.5, 1.5] spread).
TIMER_JITTER = 0.5


def jittered(period: float, rng: random.Random) -> float:
    """``period`` spread uniformly over ``[1 - TIMER_JITTER, 1 + TIMER_JITTER]`` times itself."""
    return period * (1.0 + TIMER_JITTER * (2.0 * rng.random() - 1.0))


#: Loss timeout before the first RTT sample: RFC 6298's initial RTO (2.1).  With
#: ``initial_rtt`` instead, a sender joining a path whose queue is already full
#: called every packet lost before its ACK could arrive and never measured an RTT.
INITIAL_LOSS_TIMEOUT = 1.0


def _rate_bps(window: float, rtt: float, size: int) -> float:
    return window * size * 8 / max(rtt, 1e-6)


class VlmccSender(SessionEndpoint[VlmccParams], role="vlmcc-sender"):
    """The sender: Vegas toward the leader, challenge arbitration, leadership recovery."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.group: Address = (config.group, config.port)
        self.W = float(self.p.initial_window)
        #: Equations (1) and (2): rtt and its deviation, g = g_sigma = 0.1.
        self.est = SmoothedRtt(alpha=self.p.g, beta=self.p.g_dev, mean_first=True)
        self.base_rtt: float | None = None
        #: Smallest RTT measured on each leader's path, and on any path.
        self.base_by_leader: dict[int, float] = {}
        self.min_rtt_any: float | None = None
        self.slowstart = True
        self.competing = False
        self.round_rtt_sum, self.round_rtt_n = 0.0, 0
        #: Smallest mean RTT of a round on the current leader's path (``drain_noise``).
        self.min_round_mean: float | None = None
        self.rounds = 0  # Vegas/competitive rounds since the last drain probe
        self.probe_phase = 0  # 1, 2: the two half-window rounds of a drain probe
        self.drained_probes = 0
        #: Vegas cuts in a row whose rounds kept the queue (``compete_yield_rounds``)
        #: and the mean RTT of the streak's first round.
        self._yield_rounds = 0
        self._yield_rtt: float | None = None
        self.leader = 0
        self.leader_addr: str | None = None
        self.leader_since = -math.inf
        self.leaderless = False
        self.challenges_at_round = 0  # ``challenges`` at the last leaderless round
        self.silent_rounds = 0  # leaderless rounds in a row without a challenge
        self.barred: dict[int, tuple[float, float]] = {}  # rid -> (until, last bar length)
        self.next_seq = 1
        self.outstanding: dict[int, float] = {}
        self.late: dict[int, float] = {}  # declared lost: send times kept for RTT samples
        self.sent_since_ack = 0
        self.last_send: float | None = None
        self.burst = 0
        self.next_tx = 0.0
        self.last_halve = -math.inf
        #: The next sequence number when W was last cut: losses below it belong to that cut.
        self.cut_seq = 0
        self.last_ack = -math.inf
        #: The last ACK the leader sent, whatever it acknowledged (``last_ack``
        #: also moves past a competitive timeout's pause).
        self.last_leader_ack = -math.inf
        self.acks_in_round = 0
        # Counters.
        self.losses = 0
        self.absorbed_losses = 0  # losses of packets sent before the last cut (one_cut_per_window)
        self.halvings = 0
        self.leader_changes = 0
        self.leader_losses = 0
        self.challenges = 0
        self.rejected = 0
        self.refused = 0  # feedback whose receiver id is not its source address
        self.compete_entries = 0
        # The competitive mode's timeouts (compete_timeouts): no data before
        # ``paused_until``; ``backoff`` doubles per timeout in a row; slow start
        # toward ``compete_ssthresh`` afterwards.
        self.paused_until = -math.inf
        self.backoff = 1
        self.compete_ssthresh = 0.0
        self.compete_timeouts = 0
        self.leader_log: list[tuple[float, int]] = []

    @property
    def rtt(self) -> float | None:
        return self.est.srtt

    @rtt.setter
    def rtt(self, value: float | None) -> None:
        self.est.srtt = value

    @property
    def dev(self) -> float:
        return self.est.rttvar

    @dev.setter
    def dev(self, value: float) -> None:
        self.est.rttvar = value

    @property
    def srtt(self) -> float:
        return self.rtt if self.rtt is not None else self.p.initial_rtt

    @property
    def rate_bps(self) -> float:
        """The rate announced in every data packet: W / rtt."""
        return _rate_bps(self.W, self.srtt, self.p.packet_size)

    def loss_timeout(self) -> float:
        """Section 2.2: no ACK within ``rtt + 4 * dev`` means lost (TCP's RTO rule).

        Never shorter than ``loss_floor_rtts * rtt`` (a deviation): on a clean
        path the deviation decays to 0 and the bare rule called every packet
        a little late than average lost.
        """
        if self.rtt is None:
            return INITIAL_LOSS_TIMEOUT
        return max(self.srtt + 4 * self.dev, self.p.loss_floor_rtts * self.srtt) + self.p.ack_hold

    def _leader_silence_limit(self) -> float:
        """How long the leader may stay silent (past a window) before it counts as lost."""
        return max(self.loss_timeout(), self.p.leader_loss_min)

    def pacing_delay(self) -> float:
        """Equation (3): ``rtt * MaxSegment / W`` between bursts."""
        return self.srtt / max(self.W, 1.0)

    # Endpoint hooks ------------------------------------------------------------
    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if msg is None:
            return
        if isinstance(msg, (VlmccAck, VlmccChallenge)) and not self._genuine(msg.rcvr_id, src):
            self.refused += 1
            return
        if isinstance(msg, VlmccAck):
            self._on_ack(msg, src, now)
        elif isinstance(msg, VlmccChallenge):
            self._on_challenge(msg, src, now)
        self._pump(now)

    @staticmethod
    def _genuine(rid: int, src: Address) -> bool:
        """A receiver speaks only for itself: its id is its source address (ids are IPv4)."""
        try:
            return rid == node_id(src[0])
        except ValueError:
            return False

    def on_timer(self, name: str, now: float) -> None:
        if name == "tx":
            self._pump(now)
        elif name == "loss":
            self._check_losses(now)
            self._pump(now)
        elif name == "round":
            self._round(now)
            self._pump(now)

    # Leader feedback -------------------------------------------------------------
    def _on_ack(self, m: VlmccAck, src: Address, now: float) -> None:
        if m.rcvr_id != self.leader or self.leader == 0:
            return
        self.last_leader_ack = now  # any ACK, late ones too: the leader is alive
        sent = self.outstanding.pop(m.seq, None)
        if sent is None:
            # Declared lost already: the RTT sample still counts (a late ACK is
            # the best evidence that the path got longer).
            sent = self.late.pop(m.seq, None)
        self.sent_since_ack = 0
        self.last_ack = now
        if self.leaderless:
            self.leaderless = False  # the leader was only quiet: it leads on
        if sent is None:
            return
        if sent >= self.paused_until:
            self.backoff = 1  # new data got through: the backoff ends (RFC 6298 5.7's spirit)
        rtt = seconds_since(m.tstamp_comp, now)
        if rtt < 0:
            return
        # The leader cannot make the path look longer than the ACK really took.
        rtt = min(rtt, now - sent)
        self.acks_in_round += 1
        self.est.sample(rtt)
        self.base_rtt = lowest(self.base_rtt, rtt)
        self.base_by_leader[self.leader] = self.base_rtt
        self.min_rtt_any = lowest(self.min_rtt_any, rtt)
        self.round_rtt_sum += rtt
        self.round_rtt_n += 1
        if self.p.dupthresh:
            # Three later packets ACKed: the earlier ones are lost (TCP's rule).
            early = [s for s in self.outstanding if s <= m.seq - self.p.dupthresh]
            if early:
                for s in early:
                    del self.outstanding[s]
                self._lost(len(early), now, newest=max(early))
        if self.timer_at("round") is None:
            self.set_timer("round", now + self.srtt)

    def vegas_diff(self) -> float | None:
        """Extra packets queued (:func:`hosts.tcp_rules.vegas_diff`)."""
        if self.base_rtt is None or self.rtt is None or self.rtt <= 0:
            return None
        return vegas_diff(self.W / self.rtt, self.rtt, self.base_rtt)

    def queue_drained(self) -> bool:
        """The round's mean RTT is near base_rtt: no queue is left standing.

        The mean, not the smallest: a bursty competitor's queue empties for a
        moment every round trip (between its ACK-clocked bursts), and one
        paced packet falling in such a gap made the smallest RTT say "drained"
        while the competitor held most of the queue.
        """
        if self.base_rtt is None or not self.round_rtt_n:
            return False
        slack = max(self.p.drain_frac * self.base_rtt, self.p.alpha * self.srtt / max(self.W, 1.0))
        return self.round_rtt_sum / self.round_rtt_n - self.base_rtt <= slack + self.delay_noise()

    def delay_noise(self) -> float:
        """The path's delay noise a drain probe allows (``drain_noise``): the
        smallest round mean's excess over base_rtt, capped at drain_frac·base_rtt."""
        if not self.p.drain_noise or self.base_rtt is None or self.min_round_mean is None:
            return 0.0
        return min(max(0.0, self.min_round_mean - self.base_rtt), self.p.drain_frac * self.base_rtt)

    def _round(self, now: float) -> None:
        """Once per RTT: the Vegas (or competitive) adjustment, or leadership-loss probing."""
        if self.leaderless:
            if self.challenges > self.challenges_at_round:
                self.silent_rounds = 0
            else:
                self.silent_rounds += 1
            self.challenges_at_round = self.challenges
            if self.silent_rounds < SILENT_ROUNDS or not self.p.leaderless_backoff:
                self.W = min(self.p.max_window, self.W + 1)  # provoke a challenge
            else:
                self.W = max(1.0, self.W / 2)  # nobody heard for rounds on end: back off
        elif self.acks_in_round:
            if self.probe_phase == 1:
                self.probe_phase = 2  # the half window's effect shows from this round on
            elif self.probe_phase == 2:
                self.probe_phase = 0
                self._probe_result(self.queue_drained())
            elif self.competing:
                if self.W < self.compete_ssthresh:  # slow start after a timeout
                    self.W = min(self.p.max_window, self.compete_ssthresh, 2 * self.W)
                else:
                    self.W = min(self.p.max_window, self.W + 1)  # Reno's additive increase
            else:
                w_before = self.W
                self._vegas()
                self._yield_check(self.W < w_before)
            if self.p.compete and not self.slowstart and self.probe_phase == 0:
                self.rounds += 1
                if self.rounds >= self.p.probe_rounds:
                    self.rounds = 0
                    self.probe_phase = 1
        self.acks_in_round = 0
        if self.round_rtt_n >= 2 and not self.leaderless:
            mean = self.round_rtt_sum / self.round_rtt_n
            if self.min_round_mean is None or mean < self.min_round_mean:
                self.min_round_mean = mean
        self.round_rtt_sum, self.round_rtt_n = 0.0, 0
        if self.leader:
            self.set_timer("round", now + self.srtt)

    def _yield_check(self, cut: bool) -> None:
        """A queue that does not shrink while the Vegas rule keeps cutting W is
        not ours: after ``compete_yield_rounds`` such rounds, compete."""
        n = self.p.compete_yield_rounds
        if not self.p.compete or n <= 0 or not self.round_rtt_n:
            return
        mean = self.round_rtt_sum / self.round_rtt_n
        if not cut:
            self._yield_rounds, self._yield_rtt = 0, None
            return
        if self._yield_rtt is None or mean < self._yield_rtt:
            self._yield_rounds, self._yield_rtt = 1, mean
            return
        self._yield_rounds += 1
        if self._yield_rounds >= n:
            self._yield_rounds, self._yield_rtt = 0, None
            self.rounds = 0
            # W is still near its share (the streak began at once): Reno's
            # +1 per RTT from here, no slow start (with one, cell 12 of the
            # friendliness grid used 0.84 of its link).
            self._enter_competing(slow_start=False)

    def _probe_result(self, drained: bool) -> None:
        """A drain probe ended: a queue that outlived our half window is someone else's."""
        if not self.competing:
            if not drained:
                self._enter_competing(slow_start=self.p.compete_slow_start)
            return
        self.drained_probes = self.drained_probes + 1 if drained else 0
        if self.drained_probes >= self.p.compete_exit_probes:
            self.competing = False  # the competitor left: Vegas again

    def _enter_competing(self, slow_start: bool) -> None:
        """Switch to the competitive (Reno) rule; ``slow_start``: W doubles per
        RTT until the first loss (``compete_slow_start``)."""
        self.competing = True
        self.compete_entries += 1
        self.compete_ssthresh = self.p.max_window if slow_start else 0.0
        self.drained_probes = 0

    def _vegas(self) -> None:
        diff = self.vegas_diff()
        if diff is None:
            return
        vegas = self.p.vegas
        if self.slowstart:
            if vegas.leaves_slow_start(diff):
                self.slowstart = False
            else:
                self.W = min(self.p.max_window, self.W * 2)
        if not self.slowstart:
            step = vegas.step(diff)
            if step > 0:
                self.W = min(self.p.max_window, self.W + 1)
            elif step < 0:
                self.W = max(1.0, self.W - 1)

    def _check_losses(self, now: float) -> None:
        limit = self.loss_timeout()
        lost = [s for s, t in self.outstanding.items() if t + limit <= now]
        for s in lost:
            self.late[s] = self.outstanding.pop(s)
        while len(self.late) > max(64, 2 * int(self.W)):
            del self.late[next(iter(self.late))]
        if lost:
            self._lost(len(lost), now, since=min(self.late[s] for s in lost), newest=max(lost))
        self._arm_loss()

    def _lost(self, n: int, now: float, since: float | None = None, newest: int | None = None) -> None:
        """Packets lost on the leader's path: halve W at most once per RTT.

        ``since``: found by the loss timer (no ``dupthresh`` later packets were
        ACKed), the send time of the oldest; while competing that is TCP's
        retransmission timeout (:meth:`_timeout`).  ``newest``: the highest
        lost sequence number; while competing, losses of packets sent before
        the last cut are that cut's congestion (TCP's recovery point, RFC 6582
        3.2: one window reduction per window of data), not a new one.
        """
        if self.leaderless:
            return
        self.losses += n
        if (self.competing and self.p.one_cut_per_window and newest is not None
                and newest < self.cut_seq):
            self.absorbed_losses += n
            return
        if since is not None and self.competing and self.p.compete_timeouts:
            self._timeout(now, since)
            return
        if now - self.last_halve >= self.srtt:  # at most once per RTT
            self.W = max(1.0, self.W / 2)
            if self.competing:
                self.compete_ssthresh = self.W  # fast recovery ends slow start (RFC 5681 3.2)
            self.slowstart = False
            self.last_halve = now
            self.cut_seq = self.next_seq
            self.halvings += 1

    def _timeout(self, now: float, since: float) -> None:
        """A competitive-mode loss TCP could not have fast-retransmitted: its RTO.

        TCP needs three duplicate ACKs; a loss with too few later packets
        ACKed (small windows) waits for the retransmission timer: cwnd goes
        to 1, ssthresh to half the flight, and nothing new goes out until an
        RTO of at least 1 s (RFC 6298 2.4) after the lost packet was sent,
        doubled while timeouts follow each other (5.5).  On a path of a few
        packets per RTT that is most of what a TCP flow does; a rate-paced
        window that only halved kept three times TCP's share there.
        """
        if now < self.paused_until:
            return
        if (self.backoff > 1 and self.p.timeout_loses_leader
                and now - self.last_leader_ack > self._leader_silence_limit()):
            # Section 2.4 on the window after a timeout: it is one packet,
            # and that packet went unanswered too -- a whole window without
            # an ACK from a leader silent since before the first timeout.
            # Backing off again would only lengthen the wait (up to 64 RTOs)
            # for a leader that may be gone while its followers listen.
            self.backoff = 1
            self._leader_lost(now)
            return
        self.compete_timeouts += 1
        self.halvings += 1
        self.last_halve = now
        self.cut_seq = self.next_seq
        self.compete_ssthresh = max(LEAST_SSTHRESH, self.W / 2)
        self.W = 1.0
        self.slowstart = False
        rto = max(self.p.compete_min_rto, self.srtt + 4 * self.dev)
        self.paused_until = max(now, since + rto * self.backoff)
        self.backoff = min(self.backoff * 2, 64)
        self.outstanding.clear()  # the flight is given up, as TCP's after an RTO
        self.sent_since_ack = 0
        self.last_ack = self.paused_until  # the pause is not the leader's silence
        self.next_tx = max(self.next_tx, self.paused_until)

    def _arm_loss(self) -> None:
        if self.outstanding:
            first = min(self.outstanding.values())
            self.set_timer("loss", first + self.loss_timeout())
        else:
            self.cancel_timer("loss")

    # Challenges ------------------------------------------------------------------
    def _on_challenge(self, m: VlmccChallenge, src: Address, now: float) -> None:
        self.challenges += 1
        if m.win_size == 0:
            # An RTT probe from a joining receiver; the first one leads.
            if self.leader == 0:
                self._set_leader(m.rcvr_id, src, now)
            self.send(src, VlmccStart(
                session_id=self.cfg.session_id, seq=self.next_seq, timestamp=ts_us(now),
                leader=self.leader, rate=min(int(self.rate_bps), 0xFFFFFFFF),
                win_size=max(1, int(self.W)), tstamp_comp=m.timestamp).encode())
            return
        if m.rcvr_id == self.leader and not self.leaderless:
            return
        if not self.accept_challenge(m, now):
            self.rejected += 1
            return
        self._set_leader(m.rcvr_id, src, now)
        # The challenger's window, but never below half of the current one:
        # a challenge cuts at most as much as a loss does (rogue receivers).
        self.W = max(1.0, float(m.win_size), self.W / 2)
        self.slowstart = False
        if m.rtt:
            self.rtt = min(m.rtt / 1e6, 2 * self.srtt)
        self.base_rtt = self.base_by_leader.get(m.rcvr_id, self.min_rtt_any)
        self.min_round_mean = None  # the new leader's path: its noise is learnt afresh
        self.outstanding.clear()  # packets sent before the change count as ACKed
        self.sent_since_ack = 0
        self._arm_loss()

    def accept_challenge(self, m: VlmccChallenge, now: float) -> bool:
        """Section 2.3's policy: settle a few RTTs after a change; keep a minimum rate.

        Beyond the paper: a receiver barred after falling silent as leader is refused.
        """
        bar = self.barred.get(m.rcvr_id)
        if bar is not None and now < bar[0]:
            return False
        if self.leaderless or self.leader == 0:
            return True
        if now - self.leader_since < self.p.holdoff_rtts * self.srtt:
            return False
        rtt = m.rtt / 1e6 if m.rtt else self.srtt
        new_rate = _rate_bps(m.win_size, rtt, self.p.packet_size)
        if new_rate < self.p.min_rate_bps:
            return False
        if self.competing:
            # Reno-like windows on one path swing by a halving (the sawtooth), and
            # a follower's emulation lags the sender's: only a clearly slower path
            # takes the lead.
            return new_rate < self.p.compete_accept_ratio * self.rate_bps
        return new_rate < self.rate_bps

    def _set_leader(self, rid: int, src: Address, now: float) -> None:
        if rid != self.leader:
            self.leader_changes += 1
            self.leader_log.append((now, rid))
        self.leader = rid
        self.leader_addr = src[0]
        self.leader_since = now
        self.last_ack = now  # the new leader's silence counts from now
        self.last_leader_ack = now
        self.leaderless = False
        self.acks_in_round = 0
        self.round_rtt_sum, self.round_rtt_n = 0.0, 0
        self.set_timer("round", now + self.srtt)

    def _leader_lost(self, now: float) -> None:
        """Section 2.4: a whole window without a single ACK -- the leader is gone."""
        self.leaderless = True
        self.challenges_at_round = self.challenges
        self.silent_rounds = 0
        self.leader_losses += 1
        self.outstanding.clear()
        prev = self.barred.get(self.leader)
        # Doubling for a receiver that falls silent again soon after its last bar.
        length = self.p.leader_bar if prev is None or now >= prev[0] + 4 * prev[1] else 2 * prev[1]
        self.barred[self.leader] = (now + length, length)

    # Sending ---------------------------------------------------------------------
    def _pump(self, now: float) -> None:
        if self.leader == 0:
            return
        if now < self.next_tx:
            self.set_timer("tx", self.next_tx)
            return
        sent = 0
        # Leaderless, one packet per pacing interval keeps exactly one window per RTT.
        burst = 1 if self.leaderless else self.p.max_burst
        clocked = self.competing and not self.leaderless and self.p.compete_ack_clocked
        if clocked:
            burst += 1  # an ACK of two packets and Reno's growth: up to three at once, as TCP's
        while sent < burst and self._window_open(now):
            self._send(now)
            sent += 1
        if clocked and not (sent == burst and self._window_open(now)):
            self.next_tx = now  # the next ACK releases what the window allows
        elif sent:
            # More open than an ACK's worth (a probe's half window ending):
            # the rest leaves at equation (3)'s spacing, not in one burst.
            self.next_tx = now + self.pacing_delay()
            self.set_timer("tx", self.next_tx)
        elif self.leaderless:
            self.set_timer("tx", now + self.pacing_delay())

    def _window_open(self, now: float) -> bool:
        if (not self.leaderless and self.sent_since_ack > self.W
                and now - self.last_ack > self._leader_silence_limit()):
            # More than a window and a loss timeout (at least leader_loss_min)
            # without an ACK (the paper counts the window only; a new leader
            # one RTT away needs the time).
            self._leader_lost(now)
        if self.leaderless:
            # Keep one window per RTT: pacing alone spaces the packets.
            return True
        limit = max(1, int(self.W / 2)) if self.probe_phase else int(self.W)
        return len(self.outstanding) < limit

    def _send(self, now: float) -> None:
        s = self.next_seq
        self.next_seq += 1
        drift = 0 if self.last_send is None else int(round((now - self.last_send) * 1e6))
        self.last_send = now
        # Leaderless, the data names no leader: every follower may volunteer.
        self.send(self.group, VlmccData(
            session_id=self.cfg.session_id, seq=s, timestamp=ts_us(now),
            flags=Flags.COMPETING if self.competing else 0,
            leader_id=0 if self.leaderless else self.leader, drift_prev=min(drift, 0x7FFFFFFF),
            rate=min(int(self.rate_bps), 0xFFFFFFFF), payload=bytes(self.p.packet_size)).encode())
        self.sent_since_ack += 1
        if not self.leaderless:
            self.outstanding[s] = now
            if self.timer_at("loss") is None:
                self._arm_loss()

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return (
            {
                "cwnd": self.W,
                "rate_bps": self.rate_bps,
                "rtt_s": self.srtt,
                "leader": self.leader,
                "leader_changes": self.leader_changes,
                "losses": self.losses,
                "packets_sent": self.next_seq - 1,
                "competing": int(self.competing),
            },
            "leaderless" if self.leaderless else "slowstart" if self.slowstart
            else "competing" if self.competing else "steady",
        )


class VlmccReceiver(SessionEndpoint[VlmccParams], role="vlmcc-receiver"):
    """A receiver: the leader ACKs every packet; a follower watches and may challenge."""

    #: Data packets received, packets lost (sequence gaps), challenges and ACKs sent.
    COUNTERS = ("received", "lost", "challenges_sent", "acks_sent")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = node_id(config.local)
        # Per-receiver stream from the session seed: reproducible, not in step.
        self.rng = random.Random((config.seed << 32) ^ self.me)
        self.sender: Address = (config.sender, config.port)
        self.rtt: float | None = None  # raw estimate, updated by equation (4)
        self.rtt_hat: float | None = None
        self.base_rtt: float | None = None
        self.W = float(self.p.initial_window)
        #: the emulated connection's slow start (``follower_slow_start``)
        self.slowstart = self.p.follower_slow_start
        self.leader = 0
        self.last_seq = 0
        self.last_arrival: float | None = None
        self.last_tstamp = 0
        self.sender_rate = 0.0  # packets per second, announced
        self.gap_avg: float | None = None
        self.last_adjust = -math.inf
        self.last_halve = -math.inf
        self.last_challenge = -math.inf
        self.competing = False  # the sender says it runs its competitive rule
        self.pending_acks: list[tuple[int, int, float]] = []
        #: Probing again after a silence (``rejoin_silence``): the next Start
        #: or data packet starts the stream afresh.
        self.rejoining = False
        self.rejoins = 0

    @property
    def is_leader(self) -> bool:
        return self.leader == self.me

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        self._probe(now)

    def _probe(self, now: float) -> None:
        """A Challenge with only id and tstamp: the sender answers with Start."""
        self.send(self.sender, VlmccChallenge(
            session_id=self.cfg.session_id, timestamp=ts_us(now), rcvr_id=self.me).encode())
        # Unanswered probes repeat with jitter: receivers that joined together
        # would otherwise probe in step for ever (and meet in the same filter window).
        self.set_timer("probe", now + jittered(self.p.probe_interval, self.rng))

    def on_timer(self, name: str, now: float) -> None:
        if name == "probe" and (self.rtt is None or self.rejoining):
            self._probe(now)
        elif name == "quiet":
            self._check_quiet(now)
        elif name == "ack":
            self._flush_acks(now)
        elif name == "volunteer" and self.leader == 0:
            self._send_challenge(now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, VlmccStart, VlmccData)
        if isinstance(msg, VlmccStart):
            self._on_start_msg(msg, now)
        elif msg is not None:
            self._on_data(msg, now)

    def _quiet_limit(self) -> float:
        return max(self.p.rejoin_silence, 4.0 * (self.rtt_hat or 0.0))

    def _quiet_due(self) -> float | None:
        """When the silence since the last packet reaches the quiet limit."""
        if self.p.rejoin_silence <= 0 or self.last_arrival is None:
            return None
        return self.last_arrival + self._quiet_limit()

    def _arm_quiet(self) -> None:
        """Per data packet: once armed, the timer re-arms itself (``_check_quiet``)."""
        if self.timer_at("quiet") is None:
            due = self._quiet_due()
            if due is not None:
                self.set_timer("quiet", due)

    def _check_quiet(self, now: float) -> None:
        """Nothing from the session for the quiet limit: probe as a joining receiver.

        The check and the timer use the same sum (``_quiet_due``): comparing
        ``now - last_arrival`` with the limit instead disagreed with it by a
        rounding, and a timer re-armed at ``now`` fired again for ever."""
        due = self._quiet_due()
        if due is None or self.rejoining:
            return
        if now < due:
            self.set_timer("quiet", due)
            return
        self.rejoining = True
        self.rejoins += 1
        self._probe(now)

    def _rejoined(self, seq: int) -> None:
        """The session speaks again: its stream goes on from ``seq`` (a restarted
        sender's from 1), and the silence's missing packets are no losses."""
        self.rejoining = False
        self.last_seq = seq - 1
        self.last_arrival = None  # no delay change across the gap
        if self.rtt is not None:
            self.cancel_timer("probe")

    def _on_start_msg(self, m: VlmccStart, now: float) -> None:
        rtt = seconds_since(m.tstamp_comp, now)
        if rtt < 0 or (self.rtt is not None and not self.rejoining):
            return
        if self.rejoining:
            self._rejoined(m.seq)
        self.rtt = self.rtt_hat = self.base_rtt = rtt
        self.leader = m.leader
        self.W = max(1.0, float(m.win_size))
        self.slowstart = self.p.follower_slow_start  # a connection starting on this path
        self.cancel_timer("probe")

    def _on_data(self, m: VlmccData, now: float) -> None:
        self.received += 1
        if self.rejoining:
            self._rejoined(m.seq)
        self.leader = m.leader_id
        if m.leader_id == 0:
            self._volunteer(now)
        else:
            self.cancel_timer("volunteer")
        if m.leader_id == self.me:
            self.pending_acks.append((m.seq, m.timestamp, now))
            in_order = m.seq == self.last_seq + 1 or not self.last_seq
            if (ack_at_once(len(self.pending_acks), not in_order, self.p.leader_ack_every)
                    or self.p.leader_ack_delay <= 0):
                self.cancel_timer("ack")
                self._flush_acks(now)
            elif self.timer_at("ack") is None:
                self.set_timer("ack", now + self.p.leader_ack_delay)
        if m.seq <= self.last_seq:
            return  # reordered or duplicated: too late to say anything about the path
        if m.seq > self.last_seq + 1 and self.last_seq:
            self.lost += m.seq - self.last_seq - 1
            self._follower_loss(now)
        if self.rtt is not None and self.last_arrival is not None:
            # Equations (4) and (5): the RTT changes as the one-way delay does.
            # drift_prev spaces this packet from the one sent just before it;
            # after a loss that one never arrived, and the tstamp difference
            # gives the spacing from the last packet that did (otherwise the
            # delay fall that follows a drop would be missed for good).
            if m.seq == self.last_seq + 1:
                spacing = m.drift_prev / 1e6
            else:
                spacing = ts_diff_us(m.timestamp, self.last_tstamp) / 1e6
            delta = now - (self.last_arrival + spacing)
            self.rtt = max(1e-6, self.rtt + delta)
            assert self.rtt_hat is not None and self.base_rtt is not None
            self.rtt_hat = ewma(self.rtt_hat, self.rtt, self.p.g)
            self.base_rtt = lowest(self.base_rtt, self.rtt)
        self.competing = bool(m.flags & Flags.COMPETING)
        self.last_seq = m.seq
        self.last_arrival = now
        self.last_tstamp = m.timestamp
        self._arm_quiet()
        self.sender_rate = m.rate / (8 * max(1, self.p.packet_size))
        if self.rtt_hat is not None:
            self._follower_window(now)
            if not self.is_leader:
                self._maybe_challenge(now)

    def _flush_acks(self, now: float) -> None:
        """The leader ACKs every packet; tstamp_comp adds the time it held the packet."""
        for seq, ts, arrived in self.pending_acks:
            hold = int(round((now - arrived) * 1e6))
            self.acks_sent += 1
            self.send(self.sender, VlmccAck(
                session_id=self.cfg.session_id, seq=seq, timestamp=ts_us(now), rcvr_id=self.me,
                tstamp_comp=(ts + hold) & 0xFFFFFFFF).encode())
        self.pending_acks.clear()

    # Follower emulation ------------------------------------------------------------
    def vegas_diff(self) -> float | None:
        if self.rtt_hat is None or self.base_rtt is None or self.rtt_hat <= 0:
            return None
        return vegas_diff(self.W / self.rtt_hat, self.rtt_hat, self.base_rtt)

    def _follower_window(self, now: float) -> None:
        """The Vegas rule once per RTT on the follower's own RTT estimate."""
        assert self.rtt_hat is not None
        if now - self.last_adjust < self.rtt_hat:
            return
        self.last_adjust = now
        # An emulated connection cannot open beyond what the sender actually
        # sends it (plus the slack the challenge test allows).
        cap = self.sender_rate * self.rtt_hat + self.p.n_extra + 1
        if self.competing:
            self.slowstart = False
            self.W += 1  # the sender's competitive rule, emulated on this path
        else:
            diff = self.vegas_diff()
            if diff is not None:
                if self.slowstart and not self.p.vegas.leaves_slow_start(diff):
                    # The sender's slow start (2.2), on this path's queue:
                    # while this path shows none, the emulation keeps up with
                    # what the sender sends it, as a connection doubling on
                    # an uncongested path would.
                    self.W = cap
                else:
                    self.slowstart = False
                    self.W = max(1.0, self.W + self.p.vegas.step(diff))
        self.W = max(1.0, min(self.W, cap))

    def _follower_loss(self, now: float) -> None:
        self.slowstart = False
        if self.rtt_hat is not None and now - self.last_halve >= self.rtt_hat:
            self.W = max(1.0, self.W / 2)
            self.last_halve = now

    def own_rate(self) -> float:
        """Packets per second a Vegas connection on this path would get."""
        assert self.rtt_hat is not None
        return self.W / self.rtt_hat

    def _maybe_challenge(self, now: float) -> None:
        """Equation (6) and a growing gap: ask to become the leader (once the
        emulated connection is out of slow start: until then its window is no
        measure of this path)."""
        assert self.rtt_hat is not None
        if self.slowstart:
            return
        gap = self.sender_rate - self.own_rate()
        prev = self.gap_avg
        self.gap_avg = gap if prev is None else (1 - self.p.gap_gain) * prev + self.p.gap_gain * gap
        if prev is None or self.gap_avg <= prev:
            return
        if self.sender_rate <= (self.W + self.p.n_extra) / self.rtt_hat:
            return
        if now - self.last_challenge < self.rtt_hat:
            return
        self._send_challenge(now)

    def _volunteer(self, now: float) -> None:
        """Beyond the paper (section 2.4 waits for a challenge): data naming no
        leader means the sender lost its leader, so offer to lead after a random
        fraction of an RTT (receivers that heard the same packet do not answer
        in step; the sender takes the first and the filter drops the rest)."""
        if self.rtt_hat is None or self.timer_at("volunteer") is not None:
            return
        if now - self.last_challenge < 2 * self.rtt_hat:
            return
        self.set_timer("volunteer", now + self.rng.random() * self.rtt_hat)

    def _send_challenge(self, now: float) -> None:
        if self.rtt_hat is None:
            return
        self.last_challenge = now
        self.challenges_sent += 1
        self.send(self.sender, VlmccChallenge(
            session_id=self.cfg.session_id, timestamp=ts_us(now),
            rate=min(int(_rate_bps(self.W, self.rtt_hat, self.p.packet_size)), 0xFFFFFFFF),
            rcvr_id=self.me, rtt=min(int(self.rtt_hat * 1e6), 0xFFFFFFFF),
            win_size=max(1, int(self.W))).encode())
