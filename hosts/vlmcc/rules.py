"""VLMCC's named rules (:class:`hosts.rules.Registrar`), each saying what it changes and why (reasons,
measurements: ``docs/protocols/vlmcc.md#rules``); a rule overriding a hook of the rule it needs comes first."""

from __future__ import annotations

import math
from typing import Any

from p4mcc.hosts.core import Address, node_id
from p4mcc.hosts.rtt import RTT_STEP_FACTOR
from p4mcc.hosts.rules import Registrar, timer
from p4mcc.hosts.stampwindow import StampEcho, StampWindow, short_queue
from p4mcc.hosts.tcp_rules import DELAYED_ACK_PACKETS, DELAYED_ACK_TIMEOUT, DUPTHRESH, LEAST_SSTHRESH, MIN_RTO, ack_at_once
from p4mcc.hosts.vlmcc.constants import THRESHOLDS
from p4mcc.hosts.vlmcc.receiver import VlmccReceiver as Receiver
from p4mcc.hosts.vlmcc.sender import VlmccSender as Sender
from p4mcc.hosts.wire import Flags, VlmccAck, VlmccChallenge, VlmccData, VlmccStart


OURS = "ours, see docs/protocols/vlmcc.md#rules"
STAMPED = ("stamp_echo", "stamp_drain_verdict", "share_start", "stamp_queue")  # profile ``stamped`` only
COMPETE = ("compete",)
rule = Registrar("vlmcc", OURS)


@rule("delayed_acks", "the leader ACKs as TCP does", "RFC 5681 4.2")
class DelayedAcks(Sender):
    """The loss timer waits out the leader's ACK hold: RTT samples leave it out."""
    def loss_timeout(self) -> float:
        return super().loss_timeout() + (0.0 if self.rtt is None else DelayedAcksReceiver.ACK_DELAY)

@rule("delayed_acks")
class DelayedAcksReceiver(Receiver):
    """Every second packet, at once out of order, else ACK_DELAY after the first held."""
    ACK_EVERY = DELAYED_ACK_PACKETS
    ACK_DELAY = DELAYED_ACK_TIMEOUT

    def _ack(self, in_order: bool, now: float) -> None:
        if ack_at_once(len(self.pending_acks), not in_order, self.ACK_EVERY):
            self.cancel_timer("ack")
            super()._ack(in_order, now)
        elif self.timer_at("ack") is None:
            self.set_timer("ack", now + self.ACK_DELAY)

    @timer("ack")
    def _timer_ack(self, now: float) -> None:
        self._flush_acks(now)

@rule("loss_timer_floor", "the loss timer waits at least two RTTs", OURS)
class LossTimerFloor(Sender):
    """The timer never fires before LOSS_FLOOR_RTTS·rtt: dev decays to 0 on a clean path."""
    LOSS_FLOOR_RTTS = 2.0

    def loss_timeout(self) -> float:
        timeout = super().loss_timeout()
        return timeout if self.rtt is None else max(timeout, self.LOSS_FLOOR_RTTS * self.srtt)

@rule("three_later_acks", "three later ACKs mean lost", "RFC 5681 3.2")
class ThreeLaterAcks(Sender):
    """A packet is lost once the leader ACKed LOSS_DUPTHRESH packets sent after it."""
    LOSS_DUPTHRESH = DUPTHRESH

    def _detect_losses(self, seq: int, now: float) -> None:
        super()._detect_losses(seq, now)
        early = [s for s in self.outstanding if s <= seq - self.LOSS_DUPTHRESH]
        for s in early:
            del self.outstanding[s]
        if early:
            self._lost(len(early), now, newest=max(early))

@rule("rtt_step", "an RTT sample below half the estimate replaces it", "TFMCC paper 2.4.2; RFC 6298 2.2")
class RttStep(Sender):
    """A sample below 1/``STEP_FACTOR`` of srtt restarts the estimator from it, as a first measurement
    does (RFC 6298 2.2).  Paced by srtt (equation 3), the sender takes W samples per *estimated* round
    trip, so once a squeezed path is restored the estimate falls back at one tenth per slow sample,
    and the Vegas rule reads the excess as queue; an ACK-clocked TCP is back within a round trip.
    A rise is smoothed as the paper says: a step up would follow every queue TCP fills."""

    STEP_FACTOR = RTT_STEP_FACTOR
    COUNTERS = ("rtt_steps",)

    def _sampled(self, rtt: float) -> None:
        if self.est.srtt is not None and rtt * self.STEP_FACTOR < self.est.srtt:
            self.est.srtt, self.est.rttvar = rtt, rtt / 2
            self.rtt_steps += 1
        super()._sampled(rtt)

@rule("keep_base_rtt", "base_rtt is kept per leader", OURS)
class KeepBaseRtt(Sender):
    """base_rtt per leader, the smallest on any path for a new one: learnt afresh, it has the queue in it."""
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base_by_leader: dict[int, float] = {}

    def _sampled(self, rtt: float) -> None:
        super()._sampled(rtt)
        assert self.base_rtt is not None
        self.base_by_leader[self.leader] = self.base_rtt

    def _base_rtt_for(self, rid: int) -> float | None:
        return self.base_by_leader.get(rid, min(self.base_by_leader.values(), default=None))

@rule("bounded_claims", "ids are sources; a challenge halves W at most", OURS)
class BoundedClaims(Sender):
    """Ids are sources; a challenge at most halves W and doubles rtt; an ACK's RTT is at most its age."""
    def _genuine(self, rid: int, src: Address) -> bool:
        try:
            return rid == node_id(src[0]) and super()._genuine(rid, src)
        except ValueError:
            return False

    def _adopt(self, m: VlmccChallenge) -> None:
        w, srtt = self.W, self.srtt
        super()._adopt(m)
        self.W = max(self.W, w / 2)
        if m.rtt:
            self.rtt = min(m.rtt / 1e6, 2 * srtt)

    def _ack_rtt(self, rtt: float, sent: float, now: float) -> float:
        return super()._ack_rtt(min(rtt, now - sent), sent, now)

@rule("leader_silence", "leader loss needs 1 s of silence", "RFC 6298 2.4")
class LeaderSilence(Sender):
    """Leader loss also needs a silence of the loss timeout, at least LEADER_LOSS_MIN: a new leader needs an RTT."""
    LEADER_LOSS_MIN = MIN_RTO

    def _leader_silence_limit(self) -> float:
        return max(self.loss_timeout(), self.LEADER_LOSS_MIN)

@rule("bar_silent_leaders", "a silent leader may not lead for 5 s", OURS)
class BarSilentLeaders(Sender):
    """A silent leader may not lead for LEADER_BAR s, doubled if it repeats soon."""
    LEADER_BAR = 5.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.barred: dict[int, tuple[float, float]] = {}  # rid -> (until, last bar length)

    def _leader_lost(self, now: float) -> None:
        super()._leader_lost(now)
        prev = self.barred.get(self.leader)
        length = self.LEADER_BAR if prev is None or now >= prev[0] + 4 * prev[1] else 2 * prev[1]
        self.barred[self.leader] = (now + length, length)

    def accept_challenge(self, m: VlmccChallenge, now: float) -> bool:
        bar = self.barred.get(m.rcvr_id)
        return (bar is None or now >= bar[0]) and super().accept_challenge(m, now)

@rule("volunteers", "followers volunteer when no leader is named", OURS)
class Volunteers(Sender):
    """Leaderless, the data names no leader (0), so followers volunteer."""
    def _named_leader(self) -> int:
        return 0 if self.leaderless else super()._named_leader()

@rule("volunteers")
class VolunteersReceiver(Receiver):
    """Data naming no leader: offer to lead within a random fraction of an RTT."""
    def _on_data(self, m: VlmccData, now: float) -> None:
        if m.leader_id != 0:
            self.cancel_timer("volunteer")
        elif (self.rtt_hat is not None and self.timer_at("volunteer") is None
              and now - self.last_challenge >= 2 * self.rtt_hat):
            self.set_timer("volunteer", now + self.rng.random() * self.rtt_hat)
        super()._on_data(m, now)

    @timer("volunteer")
    def _timer_volunteer(self, now: float) -> None:
        if self.leader == 0:
            self._send_challenge(now)

@rule("leaderless_backoff", "leaderless and unheard, W halves", "RFC 5681 3.1, RFC 6298 5.5")
class LeaderlessBackoff(Sender):
    """Leaderless, SILENT_ROUNDS rounds without a challenge halve W each round: nobody hears it."""
    SILENT_ROUNDS = 4

    challenges_at_round = silent_rounds = 0

    def _leader_lost(self, now: float) -> None:
        super()._leader_lost(now)
        self.challenges_at_round, self.silent_rounds = self.challenges, 0

    def _leaderless_round(self) -> None:
        self.silent_rounds = 0 if self.challenges > self.challenges_at_round else self.silent_rounds + 1
        self.challenges_at_round = self.challenges
        if self.silent_rounds < self.SILENT_ROUNDS:
            super()._leaderless_round()
        else:
            self.W = max(1.0, self.W / 2)

@rule("rejoin_takes_start", "a rejoin's Start sets the follower's RTT and slow start, after its data too",
      OURS, ("rejoin_after_silence", "follower_slow_start"))
class RejoinTakesStart(Receiver):
    """A rejoin is a fresh stream's start: its Start is taken even after the stream's first data, its RTT
    replacing the estimate carried over the silence, and the emulation slow-starts from the initial
    window with no gap average.  The fresh sender's data comes before the Starts of all but the first
    prober: the Start was ignored, and the estimate carried from before the silence (a queue the
    silence drained) read as queue on the empty path: a Vegas window half the sender's, and challenges."""
    start_owed = False

    def _rejoined(self, seq: int) -> None:
        super()._rejoined(seq)  # type: ignore[misc]
        self.slowstart, self.gap_avg = True, None
        self.W = float(self.p.initial_window)
        self.start_owed = True

    def _awaits_start(self) -> bool:
        return super()._awaits_start() or self.start_owed

    def _started(self, m: VlmccStart) -> None:
        super()._started(m)  # a Start that ends the rejoin calls _rejoined first
        self.start_owed = False

@rule("rejoin_first_packet", "after a rejoin the stream starts at the first packet heard", OURS,
      ("rejoin_after_silence",))
class RejoinFirstPacket(Receiver):
    """After a rejoin no packet is owed before the first one heard, as after the join (the core counts
    no loss before its first packet): the packets sent between a rejoin's Start and the graft of its
    multicast branch (a leaf switch restarted) never took the path.  Counted lost, they halved the
    emulated window and the follower's challenge cut the whole session's."""
    def _rejoined(self, seq: int) -> None:
        super()._rejoined(seq)  # type: ignore[misc]
        self.last_seq = 0

@rule("rejoin_after_silence", "a receiver hearing nothing probes again", OURS)
class RejoinAfterSilence(Receiver):
    """Nothing heard for REJOIN_SILENCE (at least 4 RTTs): probe again; a restarted sender waits for one."""
    REJOIN_SILENCE = 2.0

    rejoining = False
    rejoins = 0

    def _quiet_due(self) -> float | None:
        if self.last_arrival is None:
            return None
        return self.last_arrival + max(self.REJOIN_SILENCE, 4.0 * (self.rtt_hat or 0.0))

    def _arrived(self, now: float) -> None:
        super()._arrived(now)
        due = self._quiet_due()
        if self.timer_at("quiet") is None and due is not None:
            self.set_timer("quiet", due)

    @timer("quiet")
    def _timer_quiet(self, now: float) -> None:
        """The timer's own sum, not a subtraction (a rounding re-armed it for ever)."""
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
        """The stream goes on from ``seq``; the silence's packets are no losses."""
        self.rejoining = False
        self.last_seq = seq - 1
        self.last_arrival = None
        if self.rtt is not None:
            self.cancel_timer("probe")

    def _awaits_start(self) -> bool:
        return super()._awaits_start() or self.rejoining

    def _started(self, m: VlmccStart) -> None:
        if self.rejoining:
            self._rejoined(m.seq)
        super()._started(m)

    def _on_data(self, m: VlmccData, now: float) -> None:
        if self.rejoining:
            self._rejoined(m.seq)
        super()._on_data(m, now)

# The congestion stamp (docs/stamp.md; profile ``stamped``): the drain verdict overrides compete's.
rule("stamp_echo", "ACKs and challenges carry back the stamps of the data since the last", "docs/stamp.md",
     roles=(Receiver.role,))(StampEcho)


class _StampView(Sender):
    """The last round's (worst queue s, tightest spare b/s) from the leader's ACK stamps; None: one unstamped."""
    stamp_view: tuple[float | None, float | None] = (None, None)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ack_stamps = StampWindow()

    def _acked(self, m: VlmccAck, sent: float, now: float) -> None:
        self.ack_stamps.add(m.stamp)
        super()._acked(m, sent, now)

    def _round(self, now: float) -> None:
        self.stamp_view = (self.ack_stamps.queue_s(), self.ack_stamps.spare_bps())
        self.ack_stamps.reset()
        super()._round(now)

    def stamp_short(self) -> bool | None:
        """Whether the last round's stamped queue was short (None: not every ACK stamped)."""
        queue_s = self.stamp_view[0]
        return None if queue_s is None else short_queue(queue_s, self.base_rtt or self.srtt)


@rule("stamp_drain_verdict", "a drain probe's verdict is the stamped queue's length", OURS,
      ("stamp_echo", "compete"))
class StampDrainVerdict(_StampView):
    """A drain (or exit) probe drained if its round's stamped queue was short: not a competitor's queue."""
    def queue_drained(self) -> bool:
        short = self.stamp_short()
        return super().queue_drained() if short is None else short


@rule("compete_slow_start", "entering competition slow-starts", "RFC 5681 3.1", COMPETE)
class CompeteSlowStart(Sender):
    """A probe's entry slow-starts to the first loss: +1 per RTT was too slow on long paths."""
    def _entry_ssthresh(self) -> float:
        return self.p.max_window

@rule("compete", "drain probes find a competitor; Reno's rule then", OURS)
class Compete(Sender):
    """Every PROBE_ROUNDS RTTs half a window for two RTTs; a queue outliving it is a competitor's: Reno's
    rule (flagged) until COMPETE_EXIT_PROBES probes in a row drain.  Vegas gets a fraction of TCP's share."""
    PROBE_ROUNDS = 20
    COMPETE_EXIT_PROBES = 4
    DRAIN_FRAC = 0.1
    #: While competing, a challenge must claim less than this share of the rate.
    COMPETE_ACCEPT_RATIO = 0.33

    competing = False
    rounds = 0  # rounds since the last drain probe
    probe_phase = 0  # 1, 2: the two half-window rounds of a drain probe
    drained_probes = compete_entries = 0
    compete_ssthresh = 0.0  # slow start toward it (RFC 5681 3.1)

    def queue_drained(self) -> bool:
        """The round's mean RTT (not its smallest: a bursty competitor's queue empties briefly) is near base_rtt."""
        if self.base_rtt is None or not self.round_rtt_n:
            return False
        slack = max(self.DRAIN_FRAC * self.base_rtt, THRESHOLDS.alpha * self.srtt / max(self.W, 1.0))
        return self.round_rtt_sum / self.round_rtt_n - self.base_rtt <= slack

    def _adjust_window(self) -> None:
        if self.probe_phase == 1:
            self.probe_phase = 2  # the half window's effect shows from this round on
        elif self.probe_phase == 2:
            self.probe_phase = 0
            self._probe_result(self.queue_drained())
        elif self.competing and self.W < self.compete_ssthresh:
            self.W = min(self.p.max_window, self.compete_ssthresh, 2 * self.W)
        elif self.competing:
            self.W = min(self.p.max_window, self.W + 1)  # Reno's additive increase
        else:
            super()._adjust_window()
        if not self.slowstart and self.probe_phase == 0:
            self.rounds += 1
            if self.rounds >= self.PROBE_ROUNDS:
                self.rounds, self.probe_phase = 0, 1

    def _probe_result(self, drained: bool) -> None:
        if not self.competing:
            if not drained:
                self._enter_competing(self._entry_ssthresh())
            return
        self.drained_probes = self.drained_probes + 1 if drained else 0
        if self.drained_probes >= self.COMPETE_EXIT_PROBES:
            self.competing = False  # the competitor left: Vegas again

    def _entry_ssthresh(self) -> float:
        return 0.0

    def _enter_competing(self, ssthresh: float) -> None:
        self.competing = True
        self.compete_entries += 1
        self.compete_ssthresh, self.drained_probes = ssthresh, 0

    def _halve(self, now: float) -> None:
        super()._halve(now)
        if self.competing:
            self.compete_ssthresh = self.W  # fast recovery ends slow start (RFC 5681 3.2)

    def _window_limit(self) -> int:
        return max(1, int(self.W / 2)) if self.probe_phase else super()._window_limit()

    def _slower(self, new_rate: float) -> bool:
        if self.competing:  # Reno's sawtooth swings by a halving and a follower's emulation lags
            return new_rate < self.COMPETE_ACCEPT_RATIO * self.rate_bps
        return super()._slower(new_rate)

    def _data_flags(self) -> int:
        return super()._data_flags() | (Flags.COMPETING if self.competing else 0)

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        values, state = super().metrics(now)  # type: ignore[misc]
        values["competing"] = int(self.competing)
        return values, "competing" if state == "steady" and self.competing else state

@rule("compete")
class CompeteReceiver(Receiver):
    """Flagged COMPETING, a follower emulates Reno's +1 per RTT, not Vegas."""
    def _emulate(self, cap: float) -> None:
        if self.last_flags & Flags.COMPETING:
            self.slowstart = False
            self.W += 1
        else:
            super()._emulate(cap)

@rule("compete_ack_clocked", "competing, packets leave on the ACK clock", "RFC 5681 4.2; ours", COMPETE)
class CompeteAckClocked(Sender):
    """Competing, up to three packets leave as ACKs open the window: paced, they met fewer full queues than TCP's."""
    def _clocked(self) -> bool:
        return self.competing and not self.leaderless

    def _burst(self) -> int:
        return super()._burst() + (1 if self._clocked() else 0)

    def _after_burst(self, now: float, sent: int, burst: int) -> None:
        if self._clocked() and not (sent == burst and self._window_open(now)):
            self.next_tx = now  # the next ACK releases what the window allows
        else:
            super()._after_burst(now, sent, burst)

@rule("one_cut_per_window", "competing, one cut per window of data", "RFC 6582 3.2", COMPETE)
class OneCutPerWindow(Sender):
    """Competing, a loss of a packet sent before W's last cut is that cut's congestion."""
    absorbed_losses = 0

    def _loss_response(self, n: int, now: float, since: float | None, newest: int | None) -> None:
        if self.competing and newest is not None and newest < self.cut_seq:
            self.absorbed_losses += n
        else:
            super()._loss_response(n, now, since, newest)

@rule("timeout_loses_leader", "two timeouts in a row lose a silent leader", "paper 2.4", ("compete_timeouts",))
class TimeoutLosesLeader(Sender):
    """A second timeout in a row, the leader silent since before the first, loses it (2.4): not a backoff."""
    last_leader_ack = -math.inf

    def _on_ack(self, m: VlmccAck, src: Address, now: float) -> None:
        if m.rcvr_id == self.leader and self.leader != 0:
            self.last_leader_ack = now  # late ACKs too: the leader is alive
        super()._on_ack(m, src, now)

    def _set_leader(self, rid: int, src: Address, now: float) -> None:
        super()._set_leader(rid, src, now)
        self.last_leader_ack = now

    def _timeout(self, now: float, since: float) -> None:
        if (now >= self.paused_until and self.backoff > 1
                and now - self.last_leader_ack > self._leader_silence_limit()):
            self.backoff = 1
            self._leader_lost(now)
        else:
            super()._timeout(now, since)

@rule("compete_timeouts", "competing, a timer loss is TCP's RTO", "RFC 6298 2.4, 5.5; RFC 5681 3.1", COMPETE)
class CompeteTimeouts(Sender):
    """Competing, a timer loss is TCP's RTO: W = 1, a pause of max(COMPETE_MIN_RTO, rtt + 4·dev) doubled
    per timeout in a row, then slow start to half."""
    COMPETE_MIN_RTO = MIN_RTO

    paused_until = -math.inf
    backoff = 1
    compete_timeouts = 0

    def _acked(self, m: VlmccAck, sent: float, now: float) -> None:
        if sent >= self.paused_until:
            self.backoff = 1  # new data got through: the backoff ends
        super()._acked(m, sent, now)

    def _loss_response(self, n: int, now: float, since: float | None, newest: int | None) -> None:
        if since is not None and self.competing:
            self._timeout(now, since)
        else:
            super()._loss_response(n, now, since, newest)

    def _timeout(self, now: float, since: float) -> None:
        if now < self.paused_until:
            return
        self.compete_timeouts += 1
        ssthresh = max(LEAST_SSTHRESH, self.W / 2)
        self._halve(now)  # counted, timed and marked as a cut
        self.compete_ssthresh, self.W = ssthresh, 1.0
        rto = max(self.COMPETE_MIN_RTO, self.srtt + 4 * self.dev)
        self.paused_until = max(now, since + rto * self.backoff)
        self.backoff = min(self.backoff * 2, 64)
        self.outstanding.clear()  # the flight is given up, as TCP's after an RTO
        self.sent_since_ack = 0
        self.last_ack = self.paused_until  # the pause is not the leader's silence
        self.next_tx = max(self.next_tx, self.paused_until)


# After compete's receiver: a competing follower emulates Reno, in slow start or not.
@rule("follower_slow_start", "a follower's emulation slow-starts", "paper 2.2 (reading); ours")
class FollowerSlowStart(Receiver):
    """The emulation slow-starts as the sender's (2.2): until its path queues > γ or loses, no challenge."""
    slowstart = True

    def _started(self, m: VlmccStart) -> None:
        super()._started(m)
        self.slowstart = True

    def _emulate(self, cap: float) -> None:
        diff = self.vegas_diff()
        if diff is not None and self.slowstart and not THRESHOLDS.leaves_slow_start(diff):
            self.W = cap
            return
        if diff is not None:
            self.slowstart = False
        super()._emulate(cap)

    def _follower_loss(self, now: float) -> None:
        self.slowstart = False
        super()._follower_loss(now)

    def _maybe_challenge(self, now: float) -> None:
        if not self.slowstart:
            super()._maybe_challenge(now)


@rule("share_start", "slow start's window goes to the path's fair share and slow start ends there; "
      "loss halves as in default", "RCP (Dukkipati 2005): start at the link's fair share; " + OURS, ("stamp_echo",))
class ShareStart(Sender):
    """In slow start, a round whose every leader ACK echoed a stamped share (docs/stamp.md,
    "The share") sets W to the share's window over srtt and ends slow start: the session
    starts at its max-min share instead of doubling toward the first queue a competitor
    keeps full.  Losses halve W as ``default`` (loss wins); a round with an ACK
    without a share leaves ``default``'s slow start."""

    COUNTERS = ("share_starts",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._share_acks = StampWindow()
        #: the last round's share, bit/s (None: an ACK without one)
        self.share_bps: float | None = None

    def _acked(self, m: VlmccAck, sent: float, now: float) -> None:
        self._share_acks.add(m.stamp, m.share)
        super()._acked(m, sent, now)

    def _round(self, now: float) -> None:
        self.share_bps = self._share_acks.share_bps()
        self._share_acks.reset()
        super()._round(now)

    def _adjust_window(self) -> None:
        if not self.slowstart or self.share_bps is None:
            super()._adjust_window()
            return
        self.W = min(self.p.max_window, max(1.0, self.share_bps * self.srtt / (8.0 * self.p.packet_size)))
        self.slowstart = False
        self.share_starts += 1


# Innermost: runs only in the rounds where the default runs the Vegas rule.
@rule("stamp_queue", "no Vegas growth over a stamped queue of more than β packets; cuts it outlives enter competition",
      OURS, ("stamp_echo", "compete"))
class StampQueue(_StampView):
    """A stamped queue of more than β packets at the session's own rate holds W in the Vegas rule's rounds;
    STAMP_YIELD_ROUNDS cuts under a long one that did not fall, ≤ STAMP_NO_SPARE spare, enter competition."""
    STAMP_YIELD_ROUNDS = 4
    STAMP_NO_SPARE = 80_000.0  # spare code 1: a full port's measurement noise

    _stamp_streak = 0
    _streak_queue = math.inf

    def _adjust_window(self) -> None:
        w = self.W
        super()._adjust_window()
        queue_s, spare = self.stamp_view
        if queue_s is None:
            self._stamp_streak, self._streak_queue = 0, math.inf
            return
        if self.W > w and queue_s * w / self.srtt > THRESHOLDS.beta:  # at least that many queued
            self.W = w
        if self.stamp_short() or not self.W < w:
            self._stamp_streak, self._streak_queue = 0, math.inf
        elif spare is None or spare <= self.STAMP_NO_SPARE:
            self._stamp_streak = self._stamp_streak + 1 if queue_s >= self._streak_queue else 1
            self._streak_queue = min(self._streak_queue, queue_s)
        if self._stamp_streak >= self.STAMP_YIELD_ROUNDS:
            self._stamp_streak, self._streak_queue, self.rounds = 0, math.inf, 0
            self._enter_competing(self._entry_ssthresh())


#: Profile ``default``: the paper plus the rules that earned their place, listed by name;
#: a rule registered above but not listed here is off until it is measured and listed.
DEFAULT = (
    "delayed_acks",
    "loss_timer_floor",
    "three_later_acks",
    "rtt_step",
    "keep_base_rtt",
    "bounded_claims",
    "leader_silence",
    "bar_silent_leaders",
    "volunteers",
    "leaderless_backoff",
    "rejoin_takes_start",
    "rejoin_first_packet",
    "rejoin_after_silence",
    "compete_slow_start",
    "compete",
    "compete_ack_clocked",
    "one_cut_per_window",
    "timeout_loses_leader",
    "compete_timeouts",
    "follower_slow_start",
)
RULES = rule.book(default=DEFAULT, stamped=STAMPED)
