"""WEBRC: wave and equation based rate control (Luby & Goyal; RFC 3738).

Multi-rate and receiver driven.  The sender sends at a constant total rate
SR spread over a base channel (CN = T) and T *wave* channels (CN = 0..T-1),
each its own multicast group.  A wave channel's rate rises to a peak at the
start of its wave, decays by a factor P every TSD seconds for N time slots,
then stays quiet for Q slots.  A receiver stays on the base channel, joins the
next wave at epoch boundaries when its equation-based target rate allows, and
leaves waves as they turn quiet; the multicast RTT (MRTT) it measures from
join to first packet plays the role of TCP's RTT.  Sections cited are the
paper's (seed 000) unless marked RFC.  ``docs/protocols/webrc.md`` lists every
constant and its source.

Group layout: the base channel uses the session's group address G, wave
channel ``cn`` uses G + 1 + cn (consecutive IPv4 addresses).
"""

from __future__ import annotations

import heapq
import ipaddress
import math
import random
import statistics
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from hosts import wire
from hosts.core import Address, JoinGroup, LeaveGroup
from hosts.estimators import IntervalLossFilter, PrecisionWeightedMean, SelfAdjustingEwma, TwoStageLossFilter
from hosts.registry import SessionConfig, SessionEndpoint, params_from_dict
from hosts.tfrc import CompetitorOverflow, invert, rto, tcp_rate_webrc_pps
from hosts.wire import WEBRC_LAST_PSN, WebrcData, WireError

#: Data packet overhead before the payload (common header + WEBRC body).
DATA_HEADER = wire.COMMON_LEN + 8


@dataclass(frozen=True)
class WebrcParams:
    """Session and receiver parameters (paper Table 1 unless noted)."""

    #: SR_b: the sender's total rate, the ceiling of every receiver.  20 Mbit/s
    #: lets a receiver take its fair share next to a TCP flow on paths up to
    #: ~30 Mbit/s (2 Mbit/s, the earlier default, capped the demo at half a
    #: TCP flow).  Waves without members are pruned at the first switch.
    session_rate_bps: float = 20_000_000.0
    base_rate_pps: float = 1.0  # BCR_P
    #: LEN_B: payload bytes per packet.  1432 makes the UDP payload 1460 B, a
    #: TCP segment's: the equation counts packets and drop-tail queues drop
    #: packets, so equal sizes make the rates equal in bytes (paper: 1024).
    packet_length: int = 1432
    p: float = 0.75  # P: rate decrease factor per TSD
    tsd: float = 10.0  # TSD: time slot duration, seconds
    quiescent_slots: int | None = None  # Q: default ceil(300 / TSD)
    epoch: float = 0.5  # EL: epoch length, seconds
    max_rate_bps: float = math.inf  # MRR_b: receiver's maximum reception rate
    initial_rtt: float = 0.5  # ARTT before the first MRTT (as TFMCC 2.4.1)
    #: ARTT's averaging fraction per MRTT sample.  The appendix asks for a
    #: small one; 0.5 is ours: in steady state a receiver joins once every
    #: 10-17 s, so at 0.25 ARTT needed about a minute to follow a queue a TCP
    #: flow built after the session had learnt ARTT alone on the link (0.060
    #: -> 0.091 s in 84 s against samples of 0.11-0.13 s).  The test of the
    #: paper's throughput with the paper's own rules sets 0.25.
    artt_alpha: float = 0.5
    #: "precision": ARTT weighs each MRTT sample by the inverse of its spread
    #: (the unknown wait of up to one packet gap for the joined channel's next
    #: packet, plus ``mrtt_noise``), so samples from sparse channels (the
    #: 1 packet/s base channel, young waves) no longer set ARTT for minutes;
    #: "appendix": the appendix's self-adjusting EWMA, every sample alike.
    artt_estimator: str = "precision"
    mrtt_noise: float = 0.005  # s: the spread of a sample from a busy channel (our choice)
    #: "own": an MRTT sample is never shorter than the receiver's own path to
    #: the sender's switch.  A join that finds the wave at a nearer switch,
    #: which already carries it for another receiver (a cycle that is taut
    #: there, paper 4.4), measures only that switch's cycle: co-located
    #: receivers then measure about RTT/n and "reception rates increase as the
    #: density of receivers increases" (abstract, 4.7).  The join's upward
    #: time is learnt from joins that went the whole way (the sample minus
    #: the first packet's one-way delay on the data's own timestamps, minus
    #: the channel's gap), and such a sample is raised to that upward time
    #: plus its packet's one-way delay.  "shared": the paper's MRTT (4.2).
    #: Measured on the demo in Mininet, where the two WEBRC receivers' join
    #: times drift apart: with "shared" ARTT 0.065-0.085 s on a 0.089 s path
    #: and the TCP flow at 0.66 of the simulator's figure; with "own"
    #: 0.086-0.105 s and 0.85 (docs/protocols/webrc.md).
    mrtt_path: str = "own"
    #: s: how long a join's measured upward time is remembered ("own").  About
    #: a dozen joins (one per slot in steady state); the second largest of them
    #: is used, so one sample whose first packet came late sets nothing.
    mrtt_path_memory: float = 120.0
    #: With ``mrtt_path`` "own": a steady-state MRTT sample shorter than the
    #: queueing delay its own first packet carried is not used: a join that
    #: went the whole way waits for a packet that crossed the bottleneck's
    #: queue after it, so its sample is at least that packet's one-way delay
    #: above the least one-way delay of the last ``buffer_evidence_epochs``
    #: (the clocks' offset cancels).  A shorter sample was answered by a
    #: switch past the queue, which ``mrtt_path`` "own" cannot correct until
    #: the receiver has joined the whole way twice.  False: every sample.
    mrtt_queue_bound: bool = True
    #: A join answered past the queue loads nothing there.  The first
    #: packet of the newest wave a decision joined came sooner after the
    #: join than that packet's own queueing delay (its one-way delay above
    #: the least of the last ``buffer_evidence_epochs``; the clocks' offset
    #: cancels), so a switch past the queue already carried the wave for a
    #: neighbour and the join added nothing at the bottleneck (paper 4.4:
    #: a receiver below its neighbours is answered nearer).  Until the next
    #: join, neither 3.3's block (its premise is that a join "would overload
    #: the path") nor a start-up loss (the receiver's own overshoot, 3.2)
    #: holds such a receiver: the losses and the flat reception are its
    #: neighbours'.  Such a loss is forgiven as a competitor's overflow is
    #: (``startup_min_window``), with the losses of the same overflow.  A
    #: host rebooted below neighbours that fill the
    #: bottleneck was back after 7.0 s, never within 15 s before; the
    #: friendliness grid's summary and the paper rows did not move
    #: (docs/protocols/webrc.md).  False: the paper's rules for every join.
    join_past_queue_free: bool = True
    loss_delta: float = 0.125  # appendix: F estimator constant (our choice: ~8 events, as TFRC)
    loss_epoch_beta: float = 0.025  # appendix: first-stage EWMA per epoch (time constant 2·TSD)
    rate_ewma: float = 0.25  # appendix: fixed fraction for ARR/TRR per epoch
    rr_lag_margin: float = 0.1  # 3.2: RR "close to" ARR in start-up
    rr_lag_min_packets: float = 20.0  # ... checked only when an epoch holds this many (our choice)
    #: Start-up ends on RR lag only when this many epochs in a row lag (a
    #: lagging epoch holds the joins meanwhile).  At 20-40 packets an epoch
    #: the 10 % margin is 2-4 packets, what an epoch's two boundaries can cut
    #: from it, and start-up ended at 0.47 Mbit/s, 5.8 s in, on one such
    #: epoch next to a TCP flow on 10 Mbit/s, 50 ms (docs/protocols/webrc.md,
    #: "Time to 80 %: start-up rules").  1: 3.2's single epoch.
    rr_lag_epochs: int = 2
    mrtt_jump_gaps: float = 2.0  # 3.2: MRTT increase counted "large" beyond this many gaps
    mrtt_jump_min: float = 0.02  # 3.2: ... and beyond this many seconds
    trr_headroom: float = 0.02  # eq. 5: tolerance on Γ·TRR for measurement noise (our choice)
    overflow_margin: float = 0.1  # 3.3: RR must be this far below its max since the join
    #: 3.1-3.2: SSR = factor · TRR when a loss is detected ("in proportion").
    #: 0.5: TCP's ssthresh, half the flight (RFC 5681 eq. 4), the threshold
    #: 3.1 likens SSR to.  0.75 (P) kept WEBRC at 4.9x four TCP flows that
    #: arrived 20 s after it on 20 Mbit/s, 200 ms, 667 packets: with an
    #: overflow every 10-20 s the floor fell by a quarter per loss event.
    ssr_factor: float = 0.5
    #: 3.1: SSR "is set below TRR when packet losses are detected", as TCP sets
    #: ssthresh at every loss: every loss event after start-up sets SSR =
    #: ``ssr_factor``·TRR again.  False: SSR is set once, at the start-up exit,
    #: and stays a floor of eq. 5's target for the rest of the session: a
    #: session that started alone at 9.5 Mbit/s on 10 Mbit/s kept a 6 Mbit/s
    #: target (and 2.6x the share of a TCP flow that arrived later).
    ssr_every_loss: bool = True
    join_timeout_min: float = 1.0  # join timeout floor, seconds (our choice)
    #: TRR in eq. 5's Γ·TRR cap.  "recent": the mean reception rate over the
    #: full epochs since the last join took effect (at most ``trr_epochs``),
    #: like TFRC's 2·X_recv cap on the rate actually received (RFC 5348 4.3).
    #: "ewma": the paper's fixed-fraction average (``rate_ewma`` per epoch),
    #: which after a join needs ~9 epochs to come within 2% of ARR and so
    #: paced joins to one per 4-5 s.
    trr_mode: str = "recent"
    trr_epochs: int = 4
    #: ARR and TRR average past epochs, while the subscribed waves' rates
    #: fall by P per TSD (the wave shape, which the receiver knows): each
    #: average lags that decay by its own delay (ARR's EWMA by some three
    #: epochs, TRR's mean of up to ``trr_epochs`` by half as many), so
    #: ARR > TRR with no loss at all, and eq. 5's join test
    #: Γ·ARR ≤ Γ·TRR failed on that difference and the noise.  The leave
    #: of a wave that turned quiet divided ARR by Γ, the slot's whole decay
    #: at once, though the subscription itself is continuous there (the
    #: quiet wave ended at BCR).  True: each epoch, before the new epoch's
    #: rate is added, both averages are first decayed by P^(EL/TSD), so each
    #: estimates the subscription's rate now, as the paper's ARR is meant to
    #: ("the receiver's estimate of the aggregate rates of the subscribed
    #: channels"), and such a leave takes only P·BCR from ARR.  On
    #: 10 Mbit/s, 50 ms, 42 packets next to a TCP flow the session reached
    #: 80 % of its share within 20 s in 9 of 14 seeds, 7 before
    #: (docs/protocols/webrc.md, "Time to 80 %: averages that follow the
    #: decay").  False: plain averages, as the appendix's, and ARR / Γ at
    #: each such leave.
    rates_follow_decay: bool = True
    #: Eq. 5 allows a join when Γ·ARR ≤ TRATE, so the reception rate sits
    #: between TRATE/Γ and TRATE, on average ~0.85·REQN.  With
    #: ``join_centred`` the test is Γ·ARR ≤ √Γ·TRATE: the rate then straddles
    #: the equation rate instead of staying below it.  False: the paper's rule.
    join_centred: bool = True
    #: Waves one start-up decision may join while Γ·ARR stays within Γ³·TRR
    #: (eq. 5 in start-up).  The paper joins one per decision, at most one per
    #: two epochs (3.2), ~1 s per wave: from the 1 packet/s base channel to a
    #: few Mbit/s took ~20 s, and competing TCP filled the queue first.
    startup_joins: int = 3
    #: After start-up ends, at the first epoch whose waves have all shown
    #: their first packet: if the subscription at the exit is at least Γ
    #: times the rate that epoch received, leave the newest waves while the
    #: subscription without the next one would still carry that rate.  With
    #: ``startup_joins`` one decision can raise the subscription by Γ³ ≈ 2.4
    #: before the first loss shows, and WEBRC's rate then falls only as the
    #: waves decay (by P per TSD): alone on a 10 Mb/s, 100 ms path with 100
    #: packets of queue the session was subscribed to 1.9x the link when
    #: start-up ended and lost 40 % of its packets for 25 s.  A loss of a
    #: competing flow's overflow ends start-up too, with every wave carried:
    #: the Γ test leaves those alone.  False: keep every wave (3.2).
    startup_shed: bool = True
    startup_shed_epochs: int = 3
    #: After a start-up exit without a loss (an MRTT jump or RR lag), the
    #: first loss interval is synthesized at the first loss, from the
    #: reception rate then (RFC 5348 6.3.1: from X_recv at the first loss
    #: event), and until then LOSSP follows the highest rate an epoch
    #: received, so that REQN never sits below what the path carried without
    #: loss.  Section 3.2 seeds LOSSP at the exit from TRR; a delay signal
    #: comes before the waves of start-up's last decision arrive, and next to
    #: a TCP flow on a deep queue (20 Mbit/s, 200 ms, 667 packets) REQN was
    #: seeded at 1.8 Mbit/s while the session then received 6 Mbit/s without
    #: loss: with losses a minute apart REQN rose only as the loss-free
    #: interval did, and the session took 0.18 of TCP.  The rate "at the
    #: first loss" is the largest of the epochs up to the first without a
    #: loss event after it, since a join's waves reach a receiver a round
    #: trip late.  A start-up exit by a loss keeps 3.2's seed from TRR:
    #: following the reception from there too took a session that had the
    #: link alone to 6-22 times four TCP flows that arrived 20 s later
    #: (docs/protocols/webrc.md, "Time to 80 %: start-up rules").  False:
    #: 3.2's seed at the exit.
    first_interval_at_loss: bool = True
    #: A start-up loss that comes while the subscription (ARR) carries
    #: fewer than this many packets per ``initial_rtt`` (10 per 0.5 s: 20
    #: packets/s) is forgiven with the further losses of the same overflow
    #: (``startup_forgive_rtts``), and start-up goes on.  As TFMCC's
    #: ``ss_min_window``: below a TCP flow's initial window (RFC 6928) the
    #: loss is not the session's own overshoot but a competitor's slow-start
    #: overflow, or the shared overflow of neighbours that already hold the
    #: waves a restarted receiver climbs back to.  On the friendliness grid
    #: 18 -> 20 of 24 cells in [0.5, 2] (the deep-queue 20 Mbit/s, 200 ms
    #: cells 12 and 15), and an agent restarted 30 s into a session came back
    #: after 9.5 s instead of never (docs/protocols/webrc.md).  The per-ARTT
    #: form of the threshold forgave the 1 % loss paper row's own first loss
    #: and overshot it; this one leaves that row alone.  Per ARTT with a
    #: queue it sped the simulator's start-up but, in Mininet, start-up's
    #: ARTT (0.017-0.03 s on a 0.08 s path: joins answered by a switch that
    #: carried the wave) forgave the session's own overshoot and the demo's
    #: WEBRC took 1.9-2.7 times TCP's share (docs/protocols/webrc.md).  0:
    #: every start-up loss ends start-up (3.2).
    startup_min_window: float = 10.0
    #: Once start-up has an ARTT and its last epoch's packets queued
    #: (``buffer_evidence_rtts``), ``startup_min_window`` counts per ARTT
    #: held within [this, ``initial_rtt``] instead of per ``initial_rtt``:
    #: 10 packets per round trip is TCP's initial window (RFC 6928) on the
    #: path itself.  The floor keeps a start-up ARTT that a nearer switch
    #: answered (0.017-0.03 s on a 0.08 s path in Mininet) from forgiving
    #: the session's own overshoot: at most 50 packets/s are forgiven.  The
    #: queue condition leaves a path with random loss and no queue (the
    #: 1 % loss paper row) to 3.2's rule.  On the 10 Mbit/s, 50 ms dumbbell
    #: a TCP flow's overflow came 4.3 s in at 28 packets/s and ended
    #: start-up there (docs/protocols/webrc.md, "Time to 80 %: start-up
    #: rules").  0: per ``initial_rtt`` always.
    startup_window_min_rtt: float = 0.2
    #: Loss-event spans after the forgiven loss during which further losses
    #: belong to the same overflow (as TFMCC's ``ss_forgive_rtts``).
    startup_forgive_rtts: float = 2.0
    #: How many overflows start-up forgives below ``startup_min_window``; 0:
    #: every one, as TFMCC's ``ss_forgive_overflows``.  Two TCP flows that
    #: slow-start into a deep queue overflow it one after the other, and a
    #: queue of twice the BDP stays full past two spans of the first: with
    #: one (the rule before), start-up ended at 6 packets/s on the second,
    #: 4 s into a 19.8 Mbit/s, 180 ms path with 541 packets of queue, and the
    #: session took 0.23 of TCP over 200 s (docs/protocols/webrc.md).  The
    #: threshold bounds what the rule can shield.
    startup_forgive_overflows: int = 0
    #: A join out of start-up is an experiment (RLM's join experiments,
    #: McCanne et al. 1996): if a loss event starts within
    #: ``join_experiment_epochs`` full epochs after the wave's first packet
    #: while the reception rate since then has not risen by half the wave
    #: (RR < (1 + (Γ−1)/2)·RR before the join), the path did not carry the
    #: wave and it is left again.  WEBRC otherwise sheds a wave only as the
    #: waves decay (P per TSD): alone on a 3 Mbit/s link each join past the
    #: link lost 6 % of the packets for 5 s.  False: the paper's joins.
    join_experiment: bool = True
    join_experiment_epochs: int = 2
    #: 3.2's RR-lag exit from start-up and 3.3's flat-RR join block both
    #: infer a filling buffer from the reception rate ("packets from the
    #: session are accumulating in buffers", "the reception rate reflects
    #: the rate at which buffers are emptying").  They apply only while the
    #: epoch's packets did queue: its smallest one-way delay (sender stamp to
    #: arrival, clock offset included) at least ``buffer_evidence_rtts``·ARTT
    #: above the smallest of the last ``buffer_evidence_epochs`` epochs.
    #: Without a queue a lagging or flat RR is the noise of 20-50 packets an
    #: epoch: alone on an idle 10 Mbit/s link start-up ended by RR lag at
    #: 0.5 Mbit/s and the block then allowed one join per 2-3 s, so the
    #: session used a fifth of the link after 30-60 s.  0: the paper's rules.
    buffer_evidence_rtts: float = 0.1
    buffer_evidence_epochs: int = 60
    #: True: 3.3's buffer-overflow rule (a flat reception rate blocks the
    #: join and resets LOSSP to the target) applies only when no loss event
    #: came since the last join took effect.  Next to TCP the rule blocks
    #: nearly every join for ~3.5 s (the waves decay by 1.4 % per epoch, so RR
    #: stays within 10 % of its maximum) and the climb was faster without it
    #: (0.33 -> 0.42 of TCP); alone on a bottleneck the session then
    #: overshoots on its own losses (2.9 -> 2.2 Mbit/s on 3 Mbit/s), so the
    #: default is False, the paper's rule (docs/protocols/webrc.md).
    overflow_lossless_only: bool = False
    #: True: §3.3 reads a flat RR as buffers draining only once the waves'
    #: decay would have shown, when the subscription has decayed by at least
    #: ``overflow_margin`` since the epoch of the maximum RR (P^(Δt/TSD) <=
    #: 1 - margin, 3.7 s with the defaults); before that a flat RR is also
    #: what a receiver that gets every packet of its waves sees.  It lets a
    #: receiver that restarts below neighbours whose waves already fill the
    #: bottleneck climb back to them (a host reboot: 16.5 s, never within
    #: 21 s with the paper's rule), but next to TCP it frees joins the rule
    #: holds (friendliness grid median 1.11 -> 1.43), so False, the paper's
    #: rule from the first epoch after a join, stays the default
    #: (docs/protocols/webrc.md, "A receiver that restarts").
    overflow_decay_evidence: bool = False
    #: LOSSP's F estimator with a young history: δ_eff = max(δ, 1/(2 + loss
    #: events since LOSSP was seeded)).  TFRC's history holds few intervals
    #: after the first loss and climbs fast; with a fixed δ = 0.125 WEBRC
    #: needed ~100 s to climb from its start-up exit to its share.  False:
    #: the appendix's fixed δ.
    loss_young_history: bool = True
    #: Eq. 6's t_RTO = max(4·ARTT, t_rto_min); 0 (default): the paper's
    #: 4·ARTT.  0.5 s as TfmccParams.t_rto_min (TCP's retransmission timer has
    #: a floor); with ``pacing_jitter`` measured mixed on the grid, so off.
    t_rto_min: float = 0.0
    #: Each packet leaves at its tick of the schedule (every 1/SR) plus an
    #: offset uniform in ±jitter/2 of a gap, so gaps lie in (1 ± jitter)/SR and
    #: the schedule and rate stay exact; 0: strictly periodic.  A periodic stream through a drop-tail
    #: queue phase-locks with its departures and sees far fewer losses than
    #: ACK-clocked TCP next to it (Floyd & Jacobson's traffic phase effects),
    #: so the equation overrates its share on short paths (as TfmccParams).
    #: Measured mixed for WEBRC (docs/protocols/webrc.md), so off by default.
    pacing_jitter: float = 0.0
    #: A loss event lasts ARTT from its first loss (footnote 4, RFC 5348
    #: 5.2).  With ``loss_event_episode`` a loss within ARTT of the event's
    #: last loss extends it (at most ``loss_event_max_rtts`` ARTTs from its
    #: first loss): one congestion episode, one event, as a TCP flow cuts once
    #: for all the losses of one overflow (RFC 6582 3.2).  False: the paper's
    #: rule, which counted one overflow of a queue shared with TCP as 2-4
    #: events and held WEBRC at 0.4 of TCP on a 20 Mb/s path.
    loss_event_episode: bool = True
    loss_event_max_rtts: float = 4.0
    #: Loss events on the sender's clock, as TCP's: a loss event is one
    #: window of data, the packets sent within one round trip of the first
    #: lost one, with the round trip as it is at the overflow, full queue
    #: included (RFC 6582 3.2).  A lost packet's send time is interpolated
    #: between its channel's packets before and after it (RFC 5348 5.2
    #: interpolates arrival times; sparse waves reveal a loss up to seconds
    #: late, and a queue stretches arrivals); it belongs to the current event
    #: when sent inside it; and the event spans the round trip now when that
    #: is longer than ARTT (at most 2·ARTT): the whole way's upward time,
    #: learnt from joins as ``mrtt_path`` "own" learns it, plus the one-way
    #: delay of the packet that revealed the loss.  By arrival and ARTT, one
    #: overflow of a deep queue counted as two events and held WEBRC at 0.4
    #: of TCP on a 15 Mb/s, 150 ms path.  False: footnote 4's rule on
    #: arrival times.
    loss_event_send_time: bool = True
    #: LOSSP's estimator.  "intervals": TFRC's weighted mean of the last 8
    #: loss intervals (RFC 5348 5.4), which follows a falling loss rate within
    #: an interval; "appendix": the paper's two-stage filter (an epoch EWMA of
    #: the loss-event fraction, then the F estimator), smooth but slow: next to
    #: TCP on 20 Mb/s it needed 100-150 s from start-up to its share.
    loss_estimator: str = "intervals"
    #: RFC 5348 5.5 history discounting in the "intervals" estimator: once
    #: the open interval is more than twice the mean, older intervals weigh
    #: less (as TFMCC's default).  An interval from an early overflow (the
    #: start-up exit's, one split event's) otherwise stays in the 8-interval
    #: history for 8 more events, minutes on a long path where TCP loses
    #: once per 30-60 s.  False: RFC 5348 5.4's mean alone.
    history_discounting: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.p < 1:
            raise ValueError("p must be in (0, 1)")
        if self.startup_min_window < 0 or self.startup_forgive_rtts < 0 or self.startup_forgive_overflows < 0:
            raise ValueError("startup_min_window, startup_forgive_rtts and startup_forgive_overflows "
                             "must not be negative")
        if self.rr_lag_epochs < 1 or self.startup_window_min_rtt < 0:
            raise ValueError("rr_lag_epochs must be at least 1 and startup_window_min_rtt not negative")
        if self.base_rate_pps <= 0 or self.tsd <= 0 or self.epoch <= 0:
            raise ValueError("base_rate_pps, tsd and epoch must be positive")
        if self.packet_length < 1 or self.packet_length + DATA_HEADER > wire.MAX_DATAGRAM:
            raise ValueError("packet_length out of range")
        if self.session_rate_pps <= self.base_rate_pps * (1 + 1 / self.p):
            raise ValueError("session_rate_bps too small for one wave above the base rate")
        if not 0 <= self.pacing_jitter < 1:
            raise ValueError("pacing_jitter must be in [0, 1)")
        if self.artt_estimator not in ("precision", "appendix"):
            raise ValueError("artt_estimator must be 'precision' or 'appendix'")
        if not self.mrtt_noise > 0:
            raise ValueError("mrtt_noise must be positive")
        if self.mrtt_path not in ("own", "shared"):
            raise ValueError("mrtt_path must be 'own' or 'shared'")
        if not self.mrtt_path_memory > 0:
            raise ValueError("mrtt_path_memory must be positive")
        if self.loss_estimator not in ("intervals", "appendix"):
            raise ValueError("loss_estimator must be 'intervals' or 'appendix'")
        if self.trr_mode not in ("recent", "ewma") or self.trr_epochs < 1:
            raise ValueError("trr_mode must be 'recent' or 'ewma' and trr_epochs >= 1")

    @property
    def session_rate_pps(self) -> float:
        return self.session_rate_bps / (8.0 * self.packet_length)

    @property
    def q(self) -> int:
        return self.quiescent_slots if self.quiescent_slots is not None else math.ceil(300 / self.tsd)

    @property
    def n(self) -> int:
        """Active wave channels N (eq. 3): the most waves whose fluid rates fit in SR.

        With the base channel at BCR·P^τ and wave j slots old at BCR·P^(j+τ-N),
        the total at a slot start is BCR·(1 + (P^-N - 1)/(1 - P)) when the
        newest wave starts at its decay curve; N is the largest value for which
        this does not exceed SR, so the newest wave starts at or above it.
        """
        ratio = self.session_rate_pps / self.base_rate_pps
        return max(1, math.floor(math.log(1 + (1 - self.p) * (ratio - 1)) / math.log(1 / self.p)))

    @property
    def t(self) -> int:
        """Number of wave channels T = N + Q."""
        return self.n + self.q

    @property
    def epoch_decay(self) -> float:
        """P^(EL/TSD): how much every wave's rate, and so a fixed
        subscription's, falls over one epoch (0.986 at the defaults)."""
        return self.p ** (self.epoch / self.tsd)

    @property
    def slot_avg(self) -> float:
        """K = (1-P)/ln(1/P): average of P^τ over a slot (0.869 for P = 0.75)."""
        return (1 - self.p) / math.log(1 / self.p)


def gamma(p: float, nwc: int) -> float:
    """Γ_NWC = ((1/P)^(NWC+2) - 1) / ((1/P)^(NWC+1) - 1) (eq. 4)."""
    q = 1 / p
    return (q ** (nwc + 2) - 1) / (q ** (nwc + 1) - 1)


def _field_offsets() -> dict[str, int]:
    """Byte offsets of the fields a sender changes per packet, from the wire layout."""
    out, pos = {}, 0
    for f in (*wire.COMMON_FIELDS, *WebrcData.BODY):
        out[f.name] = pos
        pos += f.bits // 8
    return out


_OFF = _field_offsets()
_U32 = struct.Struct("!I")
_U16 = struct.Struct("!H")


def encode_data(template: bytes, seq: int, ts: int, cn: int, psn: int, tsi: int) -> bytes:
    """A WebrcData datagram from a pre-encoded ``template`` (same session, payload length).

    The sender's hot path: equivalent to ``WebrcData(...).encode()`` (a test
    checks it) without re-validating every field per packet.
    """
    buf = bytearray(template)
    _U32.pack_into(buf, _OFF["seq"], seq & 0xFFFFFFFF)
    _U32.pack_into(buf, _OFF["timestamp"], ts & 0xFFFFFFFF)
    _U16.pack_into(buf, _OFF["cn"], cn)
    _U16.pack_into(buf, _OFF["psn"], psn & 0xFFFF)
    _U32.pack_into(buf, _OFF["tsi"], tsi & 0xFFFFFFFF)
    return bytes(buf)


def channel_group(base_group: str, cn: int, t: int) -> str:
    """Group address of channel ``cn`` (base channel cn = T uses the session group)."""
    if cn == t:
        return base_group
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address(base_group)) + 1 + cn))


def channel_groups(group: str, params: "WebrcParams") -> tuple[str, ...]:
    """Every group of a session: the base channel first, then waves T-1 .. 0."""
    return tuple(channel_group(group, cn, params.t) for cn in range(params.t, -1, -1))


#: The share of the sender's own link a WEBRC session may fill by default.
#: The sender transmits every channel whether or not anyone joined it (waves
#: without members are pruned at the first switch, RFC 3738 4.2's model of a
#: sender that knows nothing of its receivers), so its link carries the whole
#: session rate; at more than the link's rate its queue drops the base
#: channel and the waves alike and no receiver gets past start-up.  The rest
#: leaves room for the host's other packets (IGMP, ARP, other flows).
SENDER_LINK_SHARE = 0.9


def wire_rate_bps(params: "WebrcParams") -> float:
    """The session's rate on the sender's link: SR with every header of a frame."""
    frame = params.packet_length + DATA_HEADER + wire.FRAME_OVERHEAD
    return params.session_rate_bps * frame / params.packet_length


def fit_sender_link(given: dict[str, Any], link_bps: float) -> tuple[dict[str, Any], str | None]:
    """The default session rate cut to what the sender's link can carry.

    ``given`` are the session's parameters as written; ``link_bps`` the rate
    of the sender's link.  Returns the parameters to add (``session_rate_bps``
    when the default would need more than :data:`SENDER_LINK_SHARE` of the
    link) and a warning when a rate the session *sets* does not fit (it is
    kept: the user may mean it).  The 20 Mbit/s default suits paths up to
    about 30 Mbit/s next to TCP, but on a 10 Mbit/s sender link it left every
    receiver at the base channel.
    """
    params = params_from_dict(WebrcParams, given)
    need = wire_rate_bps(params)
    room = SENDER_LINK_SHARE * link_bps
    if need <= room:
        return {}, None
    if any(k.replace("-", "_") == "session_rate_bps" for k in given):
        return {}, (f"WEBRC's session_rate_bps {params.session_rate_bps / 1e6:g} Mbit/s needs "
                    f"{need / 1e6:.3g} Mbit/s on the sender's {link_bps / 1e6:g} Mbit/s link: "
                    "its queue will drop packets of every channel")
    rate = math.floor(params.session_rate_bps * room / need)
    try:
        params_from_dict(WebrcParams, {**given, "session_rate_bps": float(rate)})
    except ValueError as e:
        return {}, f"the sender's {link_bps / 1e6:g} Mbit/s link is too slow for WEBRC: {e}"
    return {"session_rate_bps": float(rate)}, None


# ===========================================================================
# Sender
# ===========================================================================


class WebrcSender(SessionEndpoint[WebrcParams], role="webrc-sender"):
    """Sends SR packets/s over the base and wave channels with the fluid wave shape.

    Discrete scheduling: every 1/SR seconds one packet leaves; each channel
    accumulates credit at its fluid rate and the channel with the most
    credit sends.  The fluid rates always sum to SR, so the total is exact.
    Each wave has a packet budget fixed when it starts (its fluid integral,
    rounded), PSNs are numbered so the last packet of the wave is 65535, and
    any budget left when the wave ends is sent at once.
    """

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        s = self.p
        self.N, self.T, self.Q = s.n, s.t, s.q
        self.sr = s.session_rate_pps
        self.groups = [channel_group(config.group, cn, self.T) for cn in range(self.T + 1)]
        self.t0 = 0.0
        self.slot = 0
        self.credit: dict[int, float] = {}
        self.budget: dict[int, int] = {}
        self.psn: dict[int, int] = {}
        self.base_psn = 0
        self.seq = 0
        self._coef: list[tuple[int, float]] = []
        self._newest = 0
        self.sent_per_channel = [0] * (self.T + 1)
        self._template = WebrcData(session_id=config.session_id, payload=bytes(s.packet_length)).encode()
        self.rng = random.Random((config.seed << 32) ^ 0x3EB7)
        #: The schedule's own clock: ticks every 1/SR; each packet leaves at its
        #: tick plus a random offset (``pacing_jitter``), so the wave schedule
        #: and the rate stay exact.
        self._tick = 0.0

    # Fluid model -------------------------------------------------------------
    def wave_slot_packets(self, age: int) -> float:
        """Fluid packets a wave sends in its slot ``age`` (0 = newest)."""
        s = self.p
        k = s.slot_avg
        if age >= 1:
            return s.base_rate_pps * s.p ** (age - self.N) * k * s.tsd
        others = sum(s.base_rate_pps * s.p ** (j - self.N) * k for j in range(1, self.N))
        return (self.sr - s.base_rate_pps * k - others) * s.tsd

    def rates(self, t: float) -> dict[int, float]:
        """Fluid rate (packets/s) of every channel at time ``t``: {cn: rate}."""
        s = self.p
        rel = (t - self.t0) / s.tsd
        k = math.floor(rel)
        tau = rel - k
        base = s.base_rate_pps * s.p**tau
        out = {self.T: base}
        rest = self.sr - base
        for j in range(1, self.N):
            cn = (k + self.N - 1 - j) % self.T
            r = s.base_rate_pps * s.p ** (j + tau - self.N)
            out[cn] = r
            rest -= r
        out[(k + self.N - 1) % self.T] = rest  # the newest wave takes the remainder
        return out

    def age_of(self, cn: int, slot: int) -> int | None:
        """Slots since channel ``cn``'s current wave began, or None when quiescent."""
        d = (cn - slot) % self.T
        return self.N - 1 - d if d < self.N else None

    def _slot_coefficients(self) -> None:
        """Per-slot constants of the fluid model: rate = coef · P^τ (τ: slot fraction)."""
        s = self.p
        k = self.slot
        coef = [(self.T, s.base_rate_pps)]
        for j in range(1, self.N):
            coef.append(((k + self.N - 1 - j) % self.T, s.base_rate_pps * s.p ** (j - self.N)))
        self._coef = coef
        self._newest = (k + self.N - 1) % self.T

    def _start_wave(self, cn: int, age: int) -> None:
        count = max(1, round(sum(self.wave_slot_packets(a) for a in range(age, self.N))))
        self.budget[cn] = count
        self.psn[cn] = (WEBRC_LAST_PSN + 1 - count) & 0xFFFF
        self.credit[cn] = 0.0

    # Endpoint hooks ------------------------------------------------------------
    def on_start(self, now: float) -> None:
        self.t0 = now
        self.slot = 0
        self._slot_coefficients()
        self.credit[self.T] = 0.0
        for cn in range(self.T):
            age = self.age_of(cn, 0)
            if age is not None:
                self._start_wave(cn, age)
        self._tick = now
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        # WEBRC has no feedback: anything arriving is counted and dropped,
        # what does not decode as malformed.
        try:
            wire.decode(data)
        except WireError:
            self.malformed += 1
            return
        self.ignored += 1

    def on_timer(self, name: str, now: float) -> None:
        if name != "send":
            return
        sent_at, now = now, self._tick  # the schedule runs on the tick's time
        slot = math.floor((now - self.t0) / self.p.tsd + 1e-12)
        while self.slot < slot:
            self._slot_boundary(now)
        dt = 1.0 / self.sr
        s = self.p
        tau = (now - self.t0) / s.tsd - self.slot
        pt = s.p**tau
        credit, budget = self.credit, self.budget
        # Fluid rates: coefficient · P^τ, the newest wave takes the remainder of SR.
        rest = self.sr
        for cn, coef in self._coef:
            r = coef * pt
            rest -= r
            if cn in credit:
                credit[cn] += r * dt
        if self._newest in credit:
            credit[self._newest] += rest * dt
        ending = self.slot % self.T  # the oldest wave ends with this slot
        best, best_key = self.T, credit[self.T]
        for c, cr in credit.items():
            if c == self.T or budget.get(c, 0) <= 0:
                continue
            key = cr + (self._end_deficit(now) if c == ending else 0.0)
            if key > best_key or (key == best_key and c < best):
                best, best_key = c, key
        cn = best
        if self.budget.get(ending, 0) > 0:
            slot_end = self.t0 + (self.slot + 1) * self.p.tsd
            ticks_left = math.floor((slot_end - now) * self.sr - 1e-9) + 1
            if self.budget[ending] >= ticks_left:
                cn = ending  # the wave must finish (PSN 65535) inside its slot
        self.credit[cn] -= 1.0
        self._send(cn, sent_at)
        self._tick = now + dt
        j = s.pacing_jitter
        offset = j * (self.rng.random() - 0.5) * dt if j else 0.0
        self.set_timer("send", max(sent_at, self._tick + offset))

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return {"rate_bps": self.p.session_rate_bps, "tsi": self.slot % self.T, "packets": self.seq}, "steady"

    def _end_deficit(self, now: float) -> float:
        """Packets the ending wave still owes beyond what its fluid rate will earn.

        Counted as extra credit, so a wave sends its whole budget (its last
        packet carrying PSN 65535) before its slot ends.
        """
        s = self.p
        tau = ((now - self.t0) / s.tsd) % 1.0
        # ∫ from τ to 1 of BCR·P^(u-1) du, in packets.
        fluid = s.base_rate_pps * s.tsd * (s.p ** (tau - 1) - 1) / math.log(1 / s.p)
        return max(0.0, self.budget[self.slot % self.T] - self.credit[self.slot % self.T] - fluid)

    def _slot_boundary(self, now: float) -> None:
        ending = self.slot % self.T  # the oldest wave ends with this slot
        while self.budget.get(ending, 0) > 0:
            self._send(ending, now, tsi=self.slot % self.T)  # flush the wave's last packets
        self.budget.pop(ending, None)
        self.credit.pop(ending, None)
        self.psn.pop(ending, None)
        self.slot += 1
        self._slot_coefficients()
        self._start_wave(self._newest, 0)

    def _send(self, cn: int, now: float, tsi: int | None = None) -> None:
        if cn == self.T:
            psn = self.base_psn
            self.base_psn = (self.base_psn + 1) & 0xFFFF
        else:
            psn = self.psn[cn]
            self.psn[cn] = (psn + 1) & 0xFFFF
            self.budget[cn] -= 1
        data = encode_data(self._template, self.seq, wire.ts_us(now), cn, psn,
                           (self.slot % self.T) if tsi is None else tsi)
        self.seq += 1
        self.sent_per_channel[cn] += 1
        self.send((self.groups[cn], self.cfg.port), data)


# ===========================================================================
# Receiver
# ===========================================================================


class WebrcReceiver(SessionEndpoint[WebrcParams], role="webrc-receiver"):
    """A WEBRC receiver (paper 3.1-3.3, Table 2; RFC 3738 3.2)."""

    unicast_on_session_port = False  # feedback goes out only

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        s = self.p
        self.N, self.T = s.n, s.t
        self.groups = [channel_group(config.group, cn, self.T) for cn in range(self.T + 1)]
        self.tsi: int | None = None
        self.nwc = 0
        self.joined: list[int] = []  # wave channels, oldest (lowest rate) first
        self.pending: tuple[int, float, float] | None = None  # (cn, join time, gap)
        self.expect: dict[int, int] = {}  # next PSN per channel
        self.last_psn: dict[int, int] = {}
        self.last_ts: dict[int, int] = {}  # sender timestamp of each channel's latest packet
        #: the current loss event on the sender's clock (``loss_event_send_time``):
        #: (first lost packet's send time, end and cap in µs after it), or None
        self._event_sent: tuple[int, int, int] | None = None
        self.artt: SelfAdjustingEwma | PrecisionWeightedMean = (
            PrecisionWeightedMean(s.artt_alpha) if s.artt_estimator == "precision"
            else SelfAdjustingEwma(s.artt_alpha))
        self.have_artt = False
        self.last_mrtt: float | None = None
        self.lossp: TwoStageLossFilter | IntervalLossFilter = (
            IntervalLossFilter(discounting=s.history_discounting) if s.loss_estimator == "intervals"
            else TwoStageLossFilter(s.loss_epoch_beta, s.loss_delta, s.loss_young_history))
        self.arr: float | None = None  # anticipated reception rate, packets/s
        self.trr: float | None = None  # true reception rate, packets/s
        self._trr_ewma: float | None = None
        self._rr_recent: deque[float] = deque(maxlen=s.trr_epochs)
        self.rr_epoch = 0  # packets received this epoch
        self.lost_epoch = 0  # packets detected lost this epoch
        self.events_epoch = 0
        self.loss_event_until = -math.inf
        self.loss_event_cap = -math.inf  # the latest end of the current loss event
        self.startup = True
        self.ssr = math.inf
        self.max_rr_since_join = 0.0
        self.max_rr_at = 0.0  # end of the epoch that set max_rr_since_join
        self.events_since_join = 0  # loss events since the last join took effect
        self.last_rr = 0.0
        self.join_effect_epochs = 0  # full epochs measured since the last join took effect
        self.mrtt_samples: list[float] = []
        #: (time, join's upward time + wait + clock offset, channel gap) of
        #: steady-state samples, oldest first (``mrtt_path`` "own", ``_own_path``).
        self._upward: deque[tuple[float, float, float]] = deque()
        self.mrtt_raised = 0  # samples raised to the receiver's own path
        self.mrtt_unused = 0  # samples shorter than their own packet's queueing delay
        self.joins = self.leaves = self.join_timeouts = 0
        self.received = self.lost = self.loss_events = 0
        self.bytes_received = 0
        self.startup_exit: str = ""
        #: A competitor's overflow forgiven in start-up (``startup_min_window``).
        self._overflow = CompetitorOverflow(s.startup_forgive_rtts, s.startup_forgive_overflows)
        #: ``first_interval_at_loss`` after a loss-free exit: "before-loss"
        #: until the first loss event, "at-loss" until an epoch without one,
        #: then None (LOSSP counts intervals from there).
        self._first_interval: Literal["before-loss", "at-loss"] | None = None
        self.blocked_overflow = 0
        self.shed = 0  # waves left after start-up (``startup_shed``)
        self._queue_now = True  # the last epoch's packets queued (``buffer_evidence_rtts``)
        self._shed_from: float | None = None  # subscription at the start-up exit, until checked
        self._shed_rr: list[float] = []  # RR of the epochs since, while they are watched
        #: (wave, RR before its join, Γ) while a steady-state join is on trial (``join_experiment``)
        self._experiment: tuple[int, float, float] | None = None
        self._owd_epoch = math.inf  # smallest one-way delay this epoch
        self._owd_sum, self._owd_count = 0.0, 0  # for the epoch's mean one-way delay
        self._owd_minima: deque[float] = deque(maxlen=s.buffer_evidence_epochs)
        self.experiments_failed = 0
        #: (wave, join time) of the newest wave of the last join decision,
        #: until its first packet says whether a switch past the queue answered.
        self._probe: tuple[int, float] | None = None
        self.last_join_past_queue = False  # the last decision's joins loaded nothing (``join_past_queue_free``)
        self.joins_past_queue = 0
        self._rr_lagged = 0  # epochs in a row whose RR lagged ARR in start-up

    # Derived quantities ------------------------------------------------------
    @property
    def artt_value(self) -> float:
        return self.artt.value if self.have_artt else self.p.initial_rtt

    def reqn(self) -> float:
        """REQN_P (eq. 6): the equation rate from ARTT and LOSSP; infinite before loss."""
        lp = self.lossp.loss_rate
        rtt = self.artt_value
        return tcp_rate_webrc_pps(rtt, lp, rto(rtt, self.p.t_rto_min)) if lp > 0 else math.inf

    def trate(self) -> float:
        """TRATE_P (eq. 5); start-up uses Γ³·TRR and SSR = ∞ (3.2)."""
        g = gamma(self.p.p, self.nwc)
        trr = self.trr if self.trr is not None else 0.0
        exp = 3 if self.startup else 1
        mrr = self.p.max_rate_bps / (8.0 * self.p.packet_length)
        return min(max(self.ssr, self.reqn()), g**exp * trr * (1 + self.p.trr_headroom), mrr)

    def _join_limit(self, g: float) -> float:
        """The largest Γ·ARR a join allows: eq. 5's TRATE, with the equation
        part raised by √Γ in ``join_centred`` mode (out of start-up)."""
        s = self.p
        if not s.join_centred or self.startup:
            return self.trate()
        trr = self.trr if self.trr is not None else 0.0
        mrr = s.max_rate_bps / (8.0 * s.packet_length)
        return min(max(self.ssr, self.reqn()) * math.sqrt(g), g * trr * (1 + s.trr_headroom), mrr)

    def _loss_event_span(self, now: float, revealed_ts: int) -> float:
        """How long a loss event lasts after a loss: ARTT, or with
        ``loss_event_send_time`` the round trip now when it is longer (at most
        2·ARTT): the whole way's upward time (``_whole_way``) plus the one-way
        delay of the packet that revealed the loss (sender timestamp
        ``revealed_ts``), which carries the queue it crossed (the clocks'
        offset cancels in the sum)."""
        artt = self.artt_value
        if not self.p.loss_event_send_time:
            return artt
        self._forget_upward(now)
        way = self._whole_way()
        if way is None:
            return artt
        return min(2 * artt, max(artt, way[1] + wire.seconds_since(revealed_ts, now)))

    @staticmethod
    def _first_lost_sent(sent: tuple[int, int], count: int) -> int:
        """The send time of the first of ``count`` packets lost between two
        packets of one channel sent at ``sent``, interpolated (RFC 5348 5.2)."""
        prev, cur = sent
        return (prev + wire.ts_diff_us(cur, prev) // (count + 1)) & 0xFFFFFFFF

    def _extend_sent_event(self, lost_sent: int, span: float) -> bool:
        """Whether a packet lost at send time ``lost_sent`` belongs to the
        current event on the sender's clock (sent within it, or less than a
        span before its first loss: found later on a sparser channel); if so
        and ``loss_event_episode``, the event is extended to a span past it,
        up to its cap."""
        assert self._event_sent is not None
        first, end, cap = self._event_sent
        at = wire.ts_diff_us(lost_sent, first)
        if not -int(span * 1e6) <= at <= end:
            return False  # sent after the event, or a span before it: its own event
        if self.p.loss_event_episode:
            self._event_sent = (first, min(cap, max(end, max(0, at) + int(span * 1e6))), cap)
        return True

    def in_loss_event(self, now: float) -> bool:
        return now < self.loss_event_until

    # Endpoint hooks ------------------------------------------------------------
    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.groups[self.T]))  # base channel first
        self.pending = (self.T, now, 1.0 / self.p.base_rate_pps)
        self.set_timer("epoch", now + self.p.epoch)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, WebrcData)
        if msg is None:
            return
        if msg.cn > self.T:
            self.ignored += 1
            return
        if msg.cn != self.T and msg.cn not in self.joined:
            self.ignored += 1  # late packet of a channel already left
            return
        self._on_packet(msg, len(data), now)

    def _on_packet(self, msg: WebrcData, size: int, now: float) -> None:
        self.received += 1
        self.rr_epoch += 1
        self.lossp.on_packets(1)
        self.bytes_received += size
        self._check_slot(msg.tsi % self.T, now, msg.timestamp)
        self._check_loss(msg.cn, msg.psn, now, msg.timestamp)
        if msg.timestamp:
            owd = wire.seconds_since(msg.timestamp, now)
            self._owd_epoch = min(self._owd_epoch, owd)
            self._owd_sum += owd
            self._owd_count += 1
        if self._probe is not None and self._probe[0] == msg.cn:
            self._probe_answered(now, msg.timestamp)
        if self.pending is not None and self.pending[0] == msg.cn:
            self._first_packet(now, msg.timestamp)

    def _check_slot(self, tsi: int, now: float, ts: int) -> None:
        """TSI tracking: each new slot turns the oldest joined wave quiescent -> leave.

        ``ts``: the sender timestamp of the packet that showed the slot."""
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
        self.expect.pop(cn, None)
        self.last_psn.pop(cn, None)
        self.last_ts.pop(cn, None)
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
            if self.p.rates_follow_decay:
                # The decay is already carried epoch by epoch; the wave that
                # turned quiet ended at BCR and the base channel steps back
                # from P·BCR to BCR, so the subscription falls by P·BCR only.
                self.arr = max(self.arr - self.p.p * self.p.base_rate_pps, self.p.base_rate_pps)
            else:
                self.arr /= gamma(self.p.p, self.nwc - 1)  # the slot's decay, all at once
        self.nwc = max(0, self.nwc - 1)

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
        lost_sent = (self._first_lost_sent(sent, count)
                     if self.p.loss_event_send_time and sent is not None else None)
        if lost_sent is not None and self._event_sent is not None:
            same = self._extend_sent_event(lost_sent, span)
        else:
            same = self.in_loss_event(now)
        if same:
            if self.in_loss_event(now) and self.p.loss_event_episode:
                self.loss_event_until = min(now + span, self.loss_event_cap)
        else:
            # A loss event lasts ARTT from its first loss (footnote 4); on
            # the sender's clock, the round trip now (``loss_event_send_time``).
            self.loss_event_until = now + span
            self.loss_event_cap = now + self.p.loss_event_max_rtts * span
            span_us = int(span * 1e6)
            self._event_sent = (None if lost_sent is None
                                else (lost_sent, span_us, int(self.p.loss_event_max_rtts * span_us)))
            if self._first_interval is not None:
                # RFC 5348 6.3.1: the first interval is X_recv's, and it starts
                # now; the events up to an epoch without one are the first's.
                self._first_interval = "at-loss"
                self._set_lossp_for(max(self.last_rr, self.trr or 0.0), fresh=True)
            else:
                self.lossp.on_event()
            self.events_epoch += 1
            self.loss_events += 1
            self.events_since_join += 1
            if not self.startup and self.p.ssr_every_loss and self.trr is not None:
                self.ssr = self.p.ssr_factor * self.trr  # 3.1: SSR set below TRR at a loss
            if self.startup and not self._overflow.forgives(
                    now, span, self._below_initial_window() or self._loads_nothing()):
                self._exit_startup("loss")
        self.lossp.on_packets(count)

    def _loads_nothing(self) -> bool:
        """The last join decision was answered past the queue (``join_past_queue_free``)."""
        return self.p.join_past_queue_free and self.last_join_past_queue

    def _below_initial_window(self) -> bool:
        """The subscription (ARR) carries fewer than ``startup_min_window``
        packets per round trip: a start-up loss now is a competitor's.  The
        round trip is ``initial_rtt``, or ARTT within
        [``startup_window_min_rtt``, ``initial_rtt``] once measured while a
        queue stands."""
        s = self.p
        if s.startup_min_window <= 0:
            return False
        rtt = s.initial_rtt
        if s.startup_window_min_rtt > 0 and self._queue_now:  # ARTT is initial_rtt until measured
            rtt = max(min(self.artt_value, rtt), s.startup_window_min_rtt)
        return (self.arr or 0.0) < s.startup_min_window / rtt

    @property
    def startup_forgiven(self) -> int:
        """Overflows forgiven in start-up (``startup_forgive_overflows``)."""
        return self._overflow.forgiven

    def _first_packet(self, now: float, sent_ts: int) -> None:
        """MRTT: join to first packet, minus at most half the channel's packet gap (4.2)."""
        assert self.pending is not None
        cn, t_join, gap = self.pending
        self.pending = None
        self.cancel_timer("join_timeout")
        raw = now - t_join
        mrtt = raw - min(gap / 2, raw / 2)
        owd = wire.seconds_since(sent_ts, now) if sent_ts else None
        if owd is not None and (self.p.mrtt_path == "own" or self.p.loss_event_send_time):
            if not self.startup:
                self._upward.append((now, raw - owd, gap))
            self._forget_upward(now)
            if self.p.mrtt_path == "own":
                mrtt = self._own_path(mrtt, raw - owd, owd)
        prev = self.last_mrtt
        self.last_mrtt = mrtt
        self.mrtt_samples.append(mrtt)
        if self._past_the_queue(max(raw, mrtt), owd):
            self.mrtt_unused += 1
        elif isinstance(self.artt, PrecisionWeightedMean):
            # The wait for the channel's next packet is uniform in [0, gap]
            # (variance gap²/12), on top of a floor for the path's own jitter.
            self.artt.update(mrtt, gap * gap / 12.0 + self.p.mrtt_noise ** 2)
            self.have_artt = True
        elif not self.have_artt:
            self.artt = SelfAdjustingEwma(self.p.artt_alpha, initial=mrtt)
            self.have_artt = True
        else:
            self.artt.update(mrtt)
        if cn != self.T:
            self.join_effect_epochs = 0
            self.max_rr_since_join = 0.0
            self.events_since_join = 0
            self._rr_recent.clear()
        if (self.startup and prev is not None and cn != self.T
                and mrtt - prev > max(self.p.mrtt_jump_gaps * gap, self.p.mrtt_jump_min)):
            self._exit_startup("mrtt")

    def _past_the_queue(self, sample: float, owd: float | None) -> bool:
        """``mrtt_queue_bound``: whether a steady-state sample (the raw join
        to first packet, or the own-path figure that replaced it) is shorter
        than the queueing delay of its first packet, whose one-way delay is
        ``owd``: that delay above the least of the remembered epochs.  So it
        was answered past the queue."""
        if not self.p.mrtt_queue_bound or self.p.mrtt_path != "own" or self.startup or owd is None:
            return False
        return self._sooner_than_its_queue(sample, owd)

    def _sooner_than_its_queue(self, took: float, owd: float) -> bool:
        """Whether a join answered ``took`` seconds after it was sent by a
        packet of one-way delay ``owd`` was answered past the queue: sooner
        than that packet's own queueing delay (above the least one-way delay
        remembered; the clocks' offset cancels)."""
        return bool(self._owd_minima) and took < owd - self._least_owd()

    def _probe_answered(self, now: float, sent_ts: int) -> None:
        """The newest joined wave's first packet (``join_past_queue_free``):
        the join was answered past the queue if that packet's queueing delay
        is longer than the join took."""
        assert self._probe is not None
        t_join = self._probe[1]
        self._probe = None
        if sent_ts:
            self.last_join_past_queue = self._sooner_than_its_queue(now - t_join, wire.seconds_since(sent_ts, now))
            self.joins_past_queue += self.last_join_past_queue

    def _least_owd(self) -> float:
        """The least one-way delay of this epoch and the remembered ones: the
        path without a queue (plus the clocks' offset), which both the
        buffer evidence and the queue bound measure queueing delay from."""
        return min(self._owd_epoch, min(self._owd_minima, default=math.inf))

    def _own_path(self, mrtt: float, upward: float, owd: float) -> float:
        """The sample, or this receiver's own path when a nearer switch answered the join.

        A sample is up + wait + down: the join's travel to the first switch
        that carries the wave, the wait there for the wave's next packet (0 to
        one gap) and that packet's travel down.  The packet's one-way delay on
        the sender's timestamp is down plus the clocks' offset, so ``raw -
        owd`` = up + wait (plus the offset, which adding ``owd`` back
        cancels).  Over the remembered steady-state samples, the second largest
        up + wait - gap is at most the whole way's upward time (one late first
        packet cannot lift it).  A sample below it was answered by a nearer
        switch that already carried the wave for a neighbour (paper 4.4): it
        is replaced by the lower median of up + wait - gap/2 over the samples
        that went the whole way, plus this packet's own one-way delay, which
        keeps the queue the packet crossed.  Samples that went the whole way
        are the paper's, unchanged.  Start-up samples (sparse waves joined in
        bursts, waits far beyond the gap estimate) are not remembered.
        """
        way = self._whole_way()
        if way is None:
            return mrtt
        floor, whole_way = way
        if upward >= floor:
            return mrtt  # the join went the whole way: the paper's sample
        if whole_way + owd > mrtt:
            self.mrtt_raised += 1
            return whole_way + owd
        return mrtt

    def _forget_upward(self, now: float) -> None:
        while self._upward and self._upward[0][0] < now - self.p.mrtt_path_memory:
            self._upward.popleft()

    def _whole_way(self) -> tuple[float, float] | None:
        """(floor, upward time) of the joins that went the whole way (``_own_path``),
        or None before two steady-state samples: the floor is the second largest
        up + wait - gap remembered, the upward time the lower median of
        up + wait - gap/2 over the samples at or above it (clock offset included)."""
        if len(self._upward) < 2:
            return None
        floor = heapq.nlargest(2, (u - g for _, u, g in self._upward))[1]
        return floor, statistics.median_low(u - g / 2 for _, u, g in self._upward if u >= floor)

    def _exit_startup(self, why: str) -> None:
        """Leave start-up: SSR ∝ TRR and LOSSP solved from eq. 6 so REQN = TRR (3.2)."""
        if not self.startup:
            return
        self.startup = False
        self.startup_exit = why
        trr = self.trr if self.trr else max(self.last_rr, self.p.base_rate_pps)
        self.ssr = self.p.ssr_factor * trr
        self._set_lossp_for(trr, fresh=True)
        if self.p.first_interval_at_loss and why != "loss":
            self._first_interval = "before-loss"
        if self.p.startup_shed:
            self._shed_from = self.arr

    def _shed_unsupported(self, rr_rate: float) -> None:
        """``startup_shed``: leave the newest waves while the subscription at
        the start-up exit, less them, would still carry ``rr_rate``.  Leaving
        down to the nearest step (above rr/√Γ) lost less alone on a link
        but took 15 Mbit/s, 150 ms next to TCP from 0.59 to 0.40.  (The
        epoch's intended rate, received + lost, would measure the subscription
        better than ARR, but next to TCP the overflow that ends start-up
        drops many of the session's packets too, and counting them shed
        carried waves: 0.59 -> 0.40 of TCP on 15 Mbit/s, 150 ms.)"""
        sub, self._shed_from = self._shed_from, None
        if sub is None or self.nwc <= 1 or sub < gamma(self.p.p, self.nwc - 1) * rr_rate:
            return
        while self.nwc > 1 and self.arr is not None and sub / gamma(self.p.p, self.nwc - 1) >= rr_rate:
            g = gamma(self.p.p, self.nwc - 1)
            cn = self.joined[-1]
            self._drop_channel(cn)
            self.shed += 1
            sub /= g
            self.arr /= g
            self.nwc -= 1

    def _follow_reception(self, now: float, rr_rate: float, events: int) -> None:
        """``first_interval_at_loss``: until the first interval is measured,
        LOSSP is set so that REQN is at least the rate this epoch received;
        after the first loss, the first epoch without a loss event ends it."""
        if rr_rate > self.reqn():
            self._set_lossp_for(rr_rate, fresh=True)
        if self._first_interval == "at-loss" and not events and not self.in_loss_event(now):
            self._first_interval = None

    def _set_lossp_for(self, rate_pps: float, fresh: bool = False) -> None:
        rtt = self.artt_value
        t_rto = rto(rtt, self.p.t_rto_min)
        self.lossp.set_loss_rate(invert(lambda q: tcp_rate_webrc_pps(rtt, q, t_rto), rate_pps), fresh)

    # Epochs ---------------------------------------------------------------------
    def on_timer(self, name: str, now: float) -> None:
        if name == "epoch":
            self._epoch(now)
            self.set_timer("epoch", now + self.p.epoch)
        elif name == "join_timeout":
            self._join_timeout(now)

    def _epoch(self, now: float) -> None:
        s = self.p
        rr, irr = self.rr_epoch, self.rr_epoch + self.lost_epoch
        events = self.events_epoch
        self.rr_epoch = self.lost_epoch = self.events_epoch = 0
        rr_rate = rr / s.epoch
        self.last_rr = rr_rate
        w = s.rate_ewma
        if self._shed_from is not None and self.pending is None:
            self._shed_rr.append(rr_rate)
            if len(self._shed_rr) >= s.startup_shed_epochs:
                self._shed_unsupported(max(self._shed_rr))
        if s.rates_follow_decay:
            self._decay_averages()
        # ARR follows the received rate; while a join is pending its Γ step stands.
        if self.arr is None:
            self.arr = rr_rate
        elif self.pending is None or self.pending[0] == self.T:
            self.arr = (1 - w) * self.arr + w * rr_rate
        self._trr_ewma = rr_rate if self._trr_ewma is None else (1 - w) * self._trr_ewma + w * rr_rate
        if self.pending is None and self.join_effect_epochs >= 1:
            self._rr_recent.append(rr_rate)  # a full epoch after the last join took effect
        if s.trr_mode == "recent" and self._rr_recent:
            self.trr = sum(self._rr_recent) / len(self._rr_recent)
        else:
            self.trr = self._trr_ewma
        if not self.startup:
            self.lossp.end_epoch(irr, events)
            if self._first_interval is not None:
                self._follow_reception(now, rr_rate, events)
        if rr_rate > self.max_rr_since_join:
            self.max_rr_since_join, self.max_rr_at = rr_rate, now
        self._queue_now = self._queueing()
        if self.pending is None:
            self.join_effect_epochs += 1
        if self._experiment is not None and self.pending is None and self._rr_recent:
            self._judge_experiment()
        self._decide_join(now, rr_rate)

    def _decay_averages(self) -> None:
        """``rates_follow_decay``: carry ARR and TRR's averages one epoch
        forward along the waves' decay (``WebrcParams.epoch_decay``)."""
        d = self.p.epoch_decay
        if self.arr is not None:
            self.arr *= d
        if self._trr_ewma is not None:
            self._trr_ewma *= d
        for i, rate in enumerate(self._rr_recent):
            self._rr_recent[i] = rate * d

    def _decide_join(self, now: float, rr_rate: float) -> None:
        s = self.p
        if self.tsi is None or self.pending is not None or self.in_loss_event(now):
            return
        if self.nwc >= self.N:
            return  # every active wave is joined
        assert self.arr is not None
        g = gamma(s.p, self.nwc)
        target = self.trate()
        if g * self.arr > self._join_limit(g):
            return
        if self.startup and self.nwc > 0:
            # 3.2: a full epoch after the last join took effect, RR must keep up with ARR.
            if self.join_effect_epochs < 2:
                return
            if (self.arr * s.epoch >= s.rr_lag_min_packets and rr_rate < (1 - s.rr_lag_margin) * self.arr
                    and (not s.buffer_evidence_rtts or self._queue_now)):
                # A lag in one epoch may be its boundaries' noise: hold the
                # joins, and leave start-up if the next epoch lags too.
                self._rr_lagged += 1
                if self._rr_lagged >= s.rr_lag_epochs:
                    self._exit_startup("rr-lag")
                return
            self._rr_lagged = 0
        if (not self.startup and self.nwc > 0
                and rr_rate >= (1 - s.overflow_margin) * self.max_rr_since_join
                and (not s.overflow_decay_evidence
                     or s.p ** ((now - self.max_rr_at) / s.tsd) <= 1 - s.overflow_margin)
                and not (s.overflow_lossless_only and self.events_since_join)
                and (not s.buffer_evidence_rtts or self._queue_now)
                and not self._loads_nothing()):
            # 3.3: a flat reception rate means buffers drain at the bottleneck rate.
            self.blocked_overflow += 1
            self._set_lossp_for(target)
            return
        self._join(now, g)
        extra = 1
        while (self.startup and extra < s.startup_joins and self.nwc < self.N
               and gamma(s.p, self.nwc) * self.arr <= self.trate()):
            self._join_more()
            extra += 1

    def _queueing(self) -> bool:
        """Whether this epoch's packets waited in a queue (``buffer_evidence_rtts``)."""
        least, self._owd_epoch = self._owd_epoch, math.inf
        total, count, self._owd_sum, self._owd_count = self._owd_sum, self._owd_count, 0.0, 0
        if not count:
            return True  # nothing measured: the paper's rule
        self._owd_minima.append(least)
        return total / count - self._least_owd() >= self.p.buffer_evidence_rtts * self.artt_value

    def _judge_experiment(self) -> None:
        """``join_experiment``: leave the wave on trial if a loss event came
        since it took effect and the reception did not rise by half of it."""
        assert self._experiment is not None
        cn, rr_before, g = self._experiment
        received = sum(self._rr_recent) / len(self._rr_recent)
        if self.events_since_join and received < (1 + (g - 1) / 2) * rr_before:
            self._experiment = None
            if self.joined and self.joined[-1] == cn and self.nwc > 1:
                self._drop_channel(cn)
                self.experiments_failed += 1
                self.nwc -= 1
                if self.arr is not None:
                    self.arr /= gamma(self.p.p, self.nwc)
        elif self.join_effect_epochs >= self.p.join_experiment_epochs:
            self._experiment = None

    def _join(self, now: float, g: float) -> None:
        assert self.tsi is not None and self.arr is not None
        cn = (self.tsi + self.nwc) % self.T
        gap = 1.0 / max(self.arr * (g - 1), 1e-6)
        self.emit(JoinGroup(self.groups[cn]))
        self.joined.append(cn)
        self.pending = (cn, now, gap)
        self._probe, self.last_join_past_queue = (cn, now), False
        if self.p.join_experiment and not self.startup:
            self._experiment = (cn, self.last_rr, g)
        self.arr *= g
        self.nwc += 1
        self.joins += 1
        self.set_timer("join_timeout", now + max(self.p.join_timeout_min, 3 * self.artt_value + 2 * gap))

    def _join_more(self) -> None:
        """A further wave in the same start-up decision; the MRTT is measured
        on the first one only (it is the one ``pending``)."""
        assert self.tsi is not None and self.arr is not None
        g = gamma(self.p.p, self.nwc)
        cn = (self.tsi + self.nwc) % self.T
        self.emit(JoinGroup(self.groups[cn]))
        self.joined.append(cn)
        assert self._probe is not None
        self._probe = (cn, self._probe[1])
        self.arr *= g
        self.nwc += 1
        self.joins += 1

    def _join_timeout(self, now: float) -> None:
        """No packet from the joined channel in time: undo the join so it can be retried."""
        if self.pending is None or self.pending[0] == self.T:
            return
        cn = self.pending[0]
        self.pending = self._probe = None
        self.join_timeouts += 1
        if cn in self.joined:
            # Undo it and the waves joined after it in the same decision.
            for c in reversed(self.joined[self.joined.index(cn):]):
                self.joined.remove(c)
                self.emit(LeaveGroup(self.groups[c]))
                if self.arr is not None and self.nwc > 0:
                    self.arr /= gamma(self.p.p, self.nwc - 1)
                    if self._shed_from is not None:  # the undone waves were the newest
                        self._shed_from /= gamma(self.p.p, self.nwc - 1)
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
        return (
            {
                "rate_bps": (self.trr or 0.0) * bits,
                "target_bps": min(self.trate(), 1e12 / bits) * bits,
                "loss_event_rate": self.lossp.loss_rate,
                "rtt_s": self.artt_value,
                "nwc": self.nwc,
            },
            "startup" if self.startup else "steady",
        )
