"""RLA -- the Random Listening Algorithm (Wang and Schwartz), as a sans-I/O core.

A reliable, window-based multicast sender with TCP SACK-like receivers.  The
sender keeps one TCP-like congestion window for the whole group and listens to
each receiver's congestion signals *at random*: a signal from one of ``n``
troubled receivers halves the window with probability ``1/n``, so on average
the sender reacts as if it listened to one representative receiver.  The
numbered rules below are those of the paper's section 3.3; every constant and
its source is in ``docs/protocols/rla.md``.

1. *Loss detection*: a packet is lost for receiver i when a packet at least
   three higher has been SACKed by i, or when its retransmission timer expires.
2. *Congestion detection*: a loss starts a congestion period for receiver i
   when the previous one started more than ``2 * srtt_i`` ago; other losses
   inside the period are ignored.
3. *Window adjustment on congestion*: update the troubled-receiver count; a
   signal from a receiver that is not troubled is ignored; if the last cut is
   older than ``2 * awnd * srtt_i`` cut (forced cut), otherwise cut with
   probability ``pthresh = 1 / num_trouble_rcvr`` (randomized cut).
4. *Window adjustment on ACKs*: a packet ACKed by every receiver grows cwnd by
   one (slow start) or ``1/cwnd`` (congestion avoidance).
5. *Window bounds*: no packet beyond a receiver's cumulative ACK plus its
   advertised buffer is sent (the paper's ``min_last_ack`` plus buffer).
6. *Troubled receivers*: receiver i is troubled when its congestion probability
   exceeds ``1 / (eta * min_congestion_interval)``, ``eta = 20``.

Retransmissions are multicast when more than ``rexmit_thresh`` receivers miss
the packet and unicast otherwise; fast recovery keeps the window from growing
until every packet outstanding at a cut is ACKed by all receivers.

Beyond the paper (each a parameter; why and measured effect in the docs):
one random draw per lost packet instead of one per signal
(``one_draw_per_loss``), a congestion period of one ``srtt_i``
(``cperiod_rtts``), RFC 6298's 1 s RTO floor, receivers that stop
acknowledging are dropped from the group (``dead_min``, ``dead_rtts``), a
timeout marks everything unacknowledged lost (``rto_marks_all``), a
receiver that joins or restarts mid-session takes the stream from the
transmit window's trailing edge (``late_join_history``), receivers thin
and spread their SACKs as TCP receivers delay their ACKs
(``thin_min_receivers``, ``ack_every``, ``ack_delay``, ``ack_spread``), a
lost packet is repaired to the group once, not once per receiver that
reports it (``one_repair_per_loss``), a lost repair is found by a later
packet, not by a timeout (``detect_lost_repairs``), a lost tail by a
probe (``tail_loss_probe``), and a large group's window is sent on one
receiver's SACKs, as a TCP sender's on its receiver's ACKs
(``clock_min_receivers``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from hosts.core import Address, JoinGroup, node_id
from hosts.registry import SessionConfig, SessionEndpoint
from hosts.reliable import (MAX_SEQ, CutLog, ReceiveBuffer, ReliableParams, Scoreboard, SendGate,
                            ack_from_one_more, payload_for)
from hosts.rtt import SmoothedRtt, ewma
from hosts.tcp_rules import DELAYED_ACK_PACKETS, DELAYED_ACK_TIMEOUT, DUPTHRESH, LEAST_SSTHRESH, ack_at_once
from hosts.wire import MAX_SACK_BLOCKS, Flags, RlaData, RlaSack, seconds_since, ts_us

#: Data packets per block of a receiver's running minimum of their spacing
#: (the minimum is over this block and the last one): long enough to hold
#: several of the sender's pairs, short enough to follow a path that changes.
SERVICE_BLOCK = 64
#: The least service time a receiver believes (s): a host that reads its
#: socket late sees packets microseconds apart whatever the path, and a
#: spread of nothing would send the group's SACKs in step.  With the default
#: two service times the spread is then at least 1 ms, a Linux host's timer
#: tick (HZ=1000).  0.5 ms is 1500 bytes at 24 Mbit/s, faster than every
#: path of the friendliness grid, so the floor never binds there.
SERVICE_FLOOR = 0.0005
#: How much larger another receiver's srtt must be before it becomes the
#: window's clock (``clock_min_receivers``): receivers behind one queue
#: differ by their SACKs' holds and send paths, a few per cent, and a clock
#: that moved with them would be the latest of n again.
CLOCK_SWITCH = 1.25
#: The clock's SACKs must come at least this many times per srtt: what a
#: SACK from another receiver frees waits up to one interval of the clock's
#: SACKs, so the window's round trip grows by at most 1/16 and its rate
#: falls by at most 6 %.  Unbounded, the wait took RLA's 1 Mbit/s cells
#: with 32 receivers from 0.57-1.39 of TCP to 0.16-0.20: a pair there is
#: 24 ms and a lone packet's SACK waits 40 ms (docs/protocols/rla.md).
CLOCK_LAG = 16


@dataclass
class RlaParams(ReliableParams):
    """RLA parameters; sources in ``docs/protocols/rla.md``.

    The stream (``packet_size``, ``total_packets``), the ``receivers`` whose
    hello the sender waits for and RFC 6298's timer (``initial_rto``,
    ``min_rto``) are :class:`hosts.reliable.ReliableParams`, shared with MTCP.
    """

    eta: float = 20.0
    rexmit_thresh: int = 0
    dupthresh: int = DUPTHRESH
    initial_ssthresh: float = 2888.0
    """RFC 5681 3.1: the initial ssthresh "SHOULD be set arbitrarily high
    (e.g., to the size of the largest possible advertised window)": the
    receive buffer.  64 ended slow start far below a 20 Mb/s, 200 ms path's
    window, which congestion avoidance then took most of a minute to reach."""
    rcv_buffer: int = 2888
    """Receive buffer (rule 5's advertised buffer), in packets: 4 MiB of
    1452-byte packets, the simulator's TCP receive window (scenario.model's
    ``rwnd``).  256 capped the window below the bandwidth-delay product of
    a 20 Mb/s, 200 ms path (333 packets)."""
    interval_gain: float = 0.25
    awnd_gain: float = 1 / 32
    cperiod_rtts: float = 1.0
    """Rule 2's congestion period, in the receiver's smoothed RTTs."""
    dead_min: float = 2.0
    dead_rtts: float = 4.0
    """A receiver silent for max(dead_min, dead_rtts * srtt_i) while it owes
    an ACK is dropped from the group (crash or leave; docs/protocols/rla.md)."""
    undo_dead_cuts: bool = True
    """Cuts since a dropped receiver was last heard were its silence (timeouts
    of what only it lacked), not congestion: RFC 4015's response undoes them
    (``hosts.tcp_rules.undo_spurious_cuts``: ssthresh back, cwnd to the pipe
    plus an initial window, slow start for the rest).  False: they stand, and
    the survivors climbed back from a quarter of the window at one packet
    per RTT."""
    one_draw_per_loss: bool = True
    """One random draw per lost packet instead of one per receiver's signal:
    the signals of receivers that lost the same packet (a shared
    bottleneck) are one event, cut with probability (receivers that lost
    it) / num_trouble_rcvr. False: the paper's draw of 1/num_trouble_rcvr
    for every signal."""
    one_cut_per_window: bool = True
    """One cut per window of data (TCP's rule, RFC 6582 3.2 / RFC 6675 5): a
    signal whose lost packets were all sent before the last cut belongs to
    the congestion that cut answered.  False: the paper's time period
    alone."""
    rto_marks_all: bool = True
    """An RTO marks every packet the receiver has not acknowledged lost (TCP's
    go-back after a timeout, RFC 5681 3.1).  False: only the packets older
    than one RTO (the former rule, which stalled after a link outage;
    docs/protocols/rla.md)."""
    rto_holds_ssthresh: bool = True
    """A timeout of a packet the retransmission timer resent already holds
    ssthresh (RFC 5681 3.1); only the first timeout of a packet halves the
    window into it.  False: every timeout halves it (the former rule: after
    an outage of more than one RTO, ssthresh 2; docs/protocols/rla.md)."""
    late_join_history: bool = False
    """A receiver that joins after data started (or comes back with no state,
    its agent restarted) takes the stream from the sender's current packet,
    which is unicast to it with ``Flags.SYNC``.  True: it is owed every
    packet from 1 (the former rule: the whole history is repaired while the
    window waits for it)."""
    one_repair_per_loss: bool = True
    """One multicast repair per lost packet: a repair waits until every
    receiver has acknowledged the packet or is known to miss it (footnote
    8's "hears from all the receivers"), and a receiver whose loss report
    was overtaken by a multicast repair waits for that repair.  False: the
    former rule (wait until every receiver reported a packet at or above
    it), which sent the group a copy for each receiver whose report came
    after the first repair."""
    detect_lost_repairs: bool = True
    """A repair is lost for a receiver that acknowledges a packet sent more
    than a quarter of its srtt after the repair while still missing the
    repaired one (RFC 8985's time-based rule, 6.2, with its reordering
    window of min_RTT/4): it is repaired again at once.  False: a lost
    repair waits for the retransmission timeout (at least ``min_rto``)."""
    hello_interval: float = 1.0
    hello_spread: float = 0.1
    """Receivers' hellos are spread: the first comes after a random wait of up
    to ``hello_spread`` seconds, the next ones after ``hello_interval``
    times a random factor in [0.5, 1.5].  0: all in step (the former rule:
    32 receivers that start together send 32 hellos at once, every second,
    into the same reverse queue, which kept the same ones out for ever)."""
    thin_min_receivers: int = 0
    """The sender marks its data ``Flags.THIN_ACKS`` while the group has at
    least this many receivers; then receivers thin and spread their SACKs
    (below).  0, the default: every group, as every TCP receiver delays its
    ACKs (RFC 5681 4.2), the TCP flows RLA shares a path with included.
    8 (a SACK per packet in smaller groups, whose SACKs cost the reverse
    path little) gave a friendliness-grid median of 1.29x TCP's share, 0
    gives 1.22x (docs/protocols/rla.md).  A huge number: never (the
    paper's SACK per packet)."""
    ack_every: int = DELAYED_ACK_PACKETS
    ack_delay: float = DELAYED_ACK_TIMEOUT
    """Thinned SACKs, as a TCP receiver delays its ACKs (RFC 5681 4.2, RFC
    1122 4.2.3.2; :mod:`hosts.tcp_rules`): a regular SACK for every
    ``ack_every`` packets, or ``ack_delay`` s after the first one it has not
    acknowledged; at once when a hole becomes detectable as lost
    (``dupthresh`` packets above it), when a packet fills a hole and for a
    SYNC.  A duplicate waits like any packet: it is most often a multicast
    repair for another receiver, and n immediate answers to it were the
    burst this avoids.  ``ack_every`` 1: the paper's SACK for every packet."""
    ack_spread: float = 1.0
    """Each receiver of a group marked ``SPREAD_ACKS`` holds every SACK it
    owes for its own fixed fraction (a random phase in [0, ``ack_spread``))
    of the smoothed gap between data packets, so the SACKs a multicast
    packet triggers at n receivers reach the reverse path spread over that
    gap, not as one burst.  0: at once."""
    spread_service_times: float = 2.0
    """The spread lasts at most this many of the bottleneck's service times
    for one data packet, measured as the shortest interval between two data
    packets lately (the sender's pairs leave back to back and the bottleneck
    spaces them by its service time).  Two data packets' worth of the path's
    time carries some 30 SACKs, the group's answers to one pair, so the
    reverse queue still gets them one by one; the data gap alone, on a path
    where RLA's share is a few tens of packets per second, stretched every
    acknowledged-by-all round trip by up to ``ack_delay``/2 (20 ms on a 22
    ms path), and RLA's window grew per round trip of that clock
    (docs/protocols/rla.md, "Small windows").  0: the gap alone."""
    spread_min_receivers: int = 8
    """The sender marks its data ``Flags.SPREAD_ACKS`` while the group has at
    least this many receivers.  A large group needs the spread: at 1 Mb/s a
    burst of 16 SACKs fills a 10-packet reverse queue (32 receivers, RLA/TCP
    0.01-0.05 without it).  A small one is better without: spread SACKs
    clock RLA's packets out one at a time, where TCP's delayed ACKs clock
    out pairs, and single packets pass the drop-tail overflows pairs lose
    (two receivers, 20 Mb/s, 20 ms: RLA lost 0.06 % of its packets, TCP
    0.35 %; RLA/TCP 1.74, 0.87 without the spread; docs/protocols/rla.md).
    0: every group (the rule before), a huge number: never."""
    spread_pairs: bool = True
    """While SACKs are spread (``spread_min_receivers``), a lone packet the
    window frees waits for the next acknowledgement, so data leaves in pairs
    as a TCP sender's does behind delayed ACKs (RFC 5681 4.2: an ACK for
    every second segment).  Spread SACKs free the window one packet at a
    time, and single packets pass drop-tail overflows that TCP's pairs lose:
    on the grid's large-group cells (3 seeds, 100 s) RLA took 2.2-2.8x TCP
    in six of twelve, 2.2-3.4x in three with pairs.  A packet still leaves
    alone when fewer than two are in flight: an acknowledgement is then not
    sure to come (a lone packet's SACK waits ``ack_delay``, and a lost one's
    never comes), and with the window at two or three packets the held
    packet waited for the retransmission timeout whenever the packet in
    flight was lost (docs/protocols/rla.md, "Small windows").  False: one
    packet per freed slot."""
    clock_min_receivers: int = 8
    """While the group has at least this many receivers, the window is
    clocked by one receiver's SACKs, as a TCP sender's by its receiver's
    ACKs: a SACK from another receiver frees window but sends nothing, and
    what it freed leaves on the clock receiver's next SACK.  The clock is
    the receiver with the largest srtt when chosen (behind the path's
    bottleneck queue, whose SACKs mostly free the window anyway), kept until
    another's srtt exceeds it by ``CLOCK_SWITCH`` or it is dropped.  Any
    SACK sends while the clock is silent for ``ack_delay`` (the longest a
    SACK is held) or its SACKs come fewer than ``CLOCK_LAG`` times per srtt.
    The paper's section 3.1 has RLA send packets "in a fashion similar to
    the TCP senders" so that all meet drop-tail overflows alike; a window
    freed by the last of n receivers' SACKs leaves at the latest of n
    arrival times, a smoother stream than one receiver's, which the
    overflows behind a shared drop-tail queue missed: with 27 receivers
    beside one TCP flow (16.6 Mb/s, 130 ms, 116 packets) RLA was hit in 3 of
    10 overflows where TCP was hit in all, RLA/TCP 2.52 over nine seeds
    (docs/protocols/rla.md, "One clock").  0: every group; a huge number:
    never (the paper's window, sent as it frees)."""
    cut_floor: float = LEAST_SSTHRESH
    """The least window a cut leaves (``cwnd = max(cut_floor, cwnd/2)``):
    TCP's, RFC 5681 eq. (4) (ssthresh = max(FlightSize/2, 2*SMSS), and
    cwnd = ssthresh when fast recovery ends), which the TCP flows beside RLA
    keep.  With 1 a window of two or three fell to one, fast recovery could
    then send a repair only when the one packet in flight was acknowledged,
    and when that packet was lost too the sender waited for the
    retransmission timeout: on a 5 Mbit/s, 22 ms, 10-packet dumbbell with
    four TCP flows (11 receivers) 20 timeouts in 60 s.  1: the paper's
    halving with no floor but the packet."""
    tail_loss_probe: bool = True
    """RFC 8985 7 (TLP, Linux's default, which the TCP flows beside RLA
    run): with data out, not in fast recovery and no repair waiting, two of
    the group's largest srtt (plus ``ack_delay`` with one packet out: its
    SACK waits that long) without an acknowledgement of anything new sends
    one probe, the next new packet (the last one again when there is none),
    whatever the window.  A receiver that acknowledges the probe and still
    misses a packet sent more than a quarter of its srtt before it lost that
    packet (RACK's rule, RFC 8985 6.2, which the probe exists to trigger): a
    congestion signal as rule 1's, answered by a cut and a repair.  At
    windows of one or two packets a lost packet has no three later ones to
    reveal it, and it waited for the retransmission timeout (at least
    ``min_rto``, 1 s) and a window of one.  False: the timeout."""
    tick_interval: float = 0.1  # congestion events resolved, silent receivers dropped

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eta <= 0:
            raise ValueError(f"eta must be > 0, got {self.eta}")
        if self.rexmit_thresh < 0:
            raise ValueError("rexmit_thresh must be >= 0")
        if self.dupthresh < 1 or self.rcv_buffer < 1:
            raise ValueError("dupthresh and rcv_buffer must be >= 1")
        if not 0 < self.interval_gain <= 1 or not 0 < self.awnd_gain <= 1:
            raise ValueError("gains must be in (0, 1]")
        if self.dead_min <= 0 or self.dead_rtts <= 0:
            raise ValueError("dead_min and dead_rtts must be > 0")
        if self.ack_every < 1 or self.ack_delay <= 0 or not 0 <= self.ack_spread <= 1:
            raise ValueError("ack_every must be >= 1, ack_delay > 0, ack_spread in [0, 1]")
        if min(self.thin_min_receivers, self.spread_min_receivers, self.clock_min_receivers) < 0:
            raise ValueError("thin_min_receivers, spread_min_receivers and clock_min_receivers must be >= 0")
        if self.spread_service_times < 0:
            raise ValueError("spread_service_times must be >= 0")
        if self.cut_floor < 1:
            raise ValueError(f"cut_floor must be >= 1 packet, got {self.cut_floor}")


@dataclass
class _Receiver:
    """The sender's state for one receiver."""

    rid: int
    addr: Address
    sb: Scoreboard = field(default_factory=Scoreboard)
    rtt: SmoothedRtt = field(default_factory=SmoothedRtt)
    adv_buf: int = 0
    cperiod_start: float = -math.inf
    signals: int = 0
    last_signal_pkts: int = 0
    interval_avg: float | None = None
    lost_pending: set[int] = field(default_factory=set)  # lost, not yet resent
    lost_since: dict[int, float] = field(default_factory=dict)
    rexmit_at: dict[int, float] = field(default_factory=dict)  # resent, awaiting ACK
    last_heard: float = 0.0
    #: its last SACK (``last_heard`` also counts the record's creation)
    last_sack: float | None = None
    sack_gap: float | None = None  # smoothed interval between its SACKs (gain 1/8)
    join: int = 1  # the first packet it is owed
    synced: bool = True  # False until it acknowledged ``join`` (its SYNC may be lost)

    @property
    def srtt(self) -> float:
        return self.rtt.srtt if self.rtt.srtt is not None else self.rtt.initial_rto


@dataclass
class _Out:
    """An outstanding packet (sent, not yet ACKed by every receiver)."""

    first_sent: float
    last_sent: float
    acks: int = 0
    mcast_at: float = -math.inf  # when it was last repaired to the whole group


class RlaSender(SendGate, SessionEndpoint[RlaParams], role="rla-sender"):
    """The RLA sender: one window for the group, random listening to congestion."""

    #: Events counted for metrics and tests (:class:`hosts.core.Counters`).
    COUNTERS = ("congestion_signals", "forced_cuts", "random_cuts", "ignored_signals", "rare_losses",
                "timeouts", "mcast_rexmits", "ucast_rexmits", "lost_repairs", "feedback", "tail_loss_probes")

    def __init__(self, config: SessionConfig, rng: random.Random | None = None) -> None:
        super().__init__(config)
        self.rng = rng if rng is not None else random.Random(config.seed)
        self.group: Address = (config.group, config.port)
        self.rcvrs: dict[int, _Receiver] = {}
        self.cwnd = float(self.p.initial_cwnd)
        self.ssthresh = float(self.p.initial_ssthresh)
        self.awnd = self.cwnd
        self.next_seq = 1
        self.packets_sent = 0  # new packets, the clock of congestion intervals
        self.out: dict[int, _Out] = {}
        self.rexmit_queue: set[int] = set()
        self.last_window_cut = 0.0
        self.cuts = CutLog()  # the window before each recent cut (undo_dead_cuts)
        self.recover: int | None = None  # fast recovery until min_last_ack reaches this
        self.cut_seq = 0  # highest sequence number sent before the last cut
        self.absorbed_signals = 0  # signals for packets sent before the last cut
        self.rto_backoff = 0
        self.rto_seq: int | None = None  # the oldest packet at the last timeout that reset the window
        self.fast_rexmit = False
        self.dropped: list[tuple[float, int]] = []  # (time, receiver id) of receivers gone silent
        self.joined: list[tuple[float, int, int]] = []  # (time, receiver id, first packet) of late joiners
        self.restarts = 0  # known receivers that came back with no state
        self.undone_cuts = 0  # cuts undone when the receiver whose silence made them was dropped
        self.last_feedback = -math.inf  # when any receiver was last heard
        #: When feedback came back after the whole group was silent for
        #: ``dead_min / 2`` or more (a path outage): no receiver's silence
        #: before this counts towards dropping it.
        self.heard_again = -math.inf
        #: A loss event awaiting its draw: (lowest lost packet, highest, opened at).
        self.event: tuple[int, int, float] | None = None
        #: The lost packets of the last event drawn: later signals for them are absorbed.
        self.drawn: tuple[int, int] = (0, 0)
        self.events = 0
        #: The tail-loss probe out (``tail_loss_probe``): its packet and the
        #: send time a delivery of it dates (RACK.xmit_ts), until every
        #: receiver has it or a timeout comes.  One per tail, as RFC 8985 7.
        self.probe: tuple[int, float] | None = None
        #: Something new was sent or acknowledged since the probe timeout was set.
        self._progress = False
        #: When the probe is due (None: none armed).  Progress moves it on
        #: every SACK; the one "pto" timer follows it when it fires, so SACKs
        #: set no timer (as ``netsim.tcp.TcpSender`` does for its probe).
        self._pto_deadline: float | None = None
        #: The receiver whose SACKs send (``clock_min_receivers``); None: every SACK.
        self.clock: int | None = None

    # Derived state ---------------------------------------------------------
    @property
    def min_last_ack(self) -> int:
        """Every packet up to this one is received by every receiver."""
        if not self.rcvrs:
            return 0
        return min(r.sb.cum_ack for r in self.rcvrs.values())

    @property
    def largest_srtt(self) -> float:
        """The group's largest smoothed RTT: the round trip the sender's own
        waits (probe, repair choice, lost packets held by the window) cover."""
        return max(r.srtt for r in self.rcvrs.values())

    @property
    def num_trouble_rcvr(self) -> int:
        return sum(1 for r in self.rcvrs.values() if self._troubled(r))

    @property
    def in_recovery(self) -> bool:
        return self.recover is not None

    def _ready(self) -> bool:
        return len(self.rcvrs) >= max(1, self.p.receivers)

    # Endpoint hooks --------------------------------------------------------
    def on_start(self, now: float) -> None:
        self.last_window_cut = now
        self.set_timer("tick", now + self.p.tick_interval)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if not isinstance(msg, RlaSack):
            return
        self.feedback += 1
        self._on_sack(msg, src, now)
        if self._clocked_elsewhere(msg.rcvr_id, now):
            return  # what this SACK freed leaves on the clock receiver's next one
        self._pump(now)

    def on_timer(self, name: str, now: float) -> None:
        if name == "rto":
            self._on_timeout(now)
            self._pump(now)
        elif name == "pto":
            due = self._pto_deadline
            if due is not None and now < due:
                self.set_timer("pto", due)  # progress moved it since the timer was set
            elif due is not None:
                self._pto_deadline = None
                self._on_probe_timeout(now)
                self._pump(now)
        elif name == "tick":
            self._resolve_event(now)
            self._choose_clock()
            if self._drop_silent(now):
                self._pump(now)
            if not self.done:
                self.set_timer("tick", now + self.p.tick_interval)

    # Feedback --------------------------------------------------------------
    def _receiver(self, rid: int, src: Address, cum_ack: int = 0) -> _Receiver:
        r = self.rcvrs.get(rid)
        if r is None:
            r = _Receiver(rid, src, rtt=self.p.rtt_estimator())
            r.adv_buf = self.p.rcv_buffer
            r.last_signal_pkts = self.packets_sent
            r.last_heard = self.now
            # A receiver that comes back (or joins late holding data) owes
            # nothing up to its cumulative ACK.
            r.sb.update(min(cum_ack, self.next_seq - 1))
            self.rcvrs[rid] = r
            # A late joiner has acknowledged nothing: recount outstanding ACKs.
            for s, o in self.out.items():
                o.acks = sum(1 for x in self.rcvrs.values() if x.sb.acked(s))
            if self.out or self.next_seq > 1:
                lo = r.sb.cum_ack + 1
                for s in range(lo, self.next_seq):
                    if s not in self.out:
                        self.out[s] = _Out(-math.inf, -math.inf, len(self.rcvrs) - 1)
        return r

    def _on_sack(self, m: RlaSack, src: Address, now: float) -> None:
        r = self.rcvrs.get(m.rcvr_id)
        if self.started and self.next_seq > 1 and m.cum_ack == 0 and not self.p.late_join_history:
            if r is not None and r.synced and r.sb.cum_ack > 0:
                # A known receiver that starts again with no state (its agent
                # restarted; a cumulative ACK never goes back otherwise): its
                # old scoreboard describes somebody else.
                self.restarts += 1
                self._forget([r.rid])
                r = None
            if r is None:
                r = self._join(m.rcvr_id, src, now)
        r = self._receiver(m.rcvr_id, src, m.cum_ack)
        if now - self.last_feedback >= self.p.dead_min / 2:
            self.heard_again = now  # the first word after the whole group fell silent
        self.last_feedback = now
        if r.last_sack is not None:
            r.sack_gap = ewma(r.sack_gap, now - r.last_sack, 1 / 8)
        r.last_heard = r.last_sack = now
        r.addr = src  # unicast repairs go where its feedback comes from
        r.adv_buf = m.adv_buf
        if m.echo_ts:
            rtt = seconds_since(m.echo_ts, now)
            if 0 <= rtt < 60:
                r.rtt.sample(rtt)
                self.rto_backoff = 0
        newly = r.sb.update(m.cum_ack, m.blocks, limit=self.next_seq - 1)
        if not r.synced and m.cum_ack >= r.join:
            r.synced = True
        # The latest send time among what r acknowledges now (RFC 8985's
        # RACK.xmit_ts), from packets sent once only: which copy of a repaired
        # packet arrived is unknown (RFC 8985 6.2 step 2 skips them likewise).
        # Only worth the scan while repairs to r are outstanding.
        delivered_sent = -math.inf
        if self.p.detect_lost_repairs and r.rexmit_at:
            delivered_sent = max((o.first_sent for s in newly if (o := self.out.get(s)) is not None
                                  and o.last_sent == o.first_sent), default=-math.inf)
        if newly:
            self._progress = True
        probe_delivered = self.probe is not None and self.probe[0] in newly
        n = len(self.rcvrs)
        for s in newly:
            r.lost_pending.discard(s)
            r.lost_since.pop(s, None)
            r.rexmit_at.pop(s, None)
            if ack_from_one_more(self.out, s, n):
                self.rexmit_queue.discard(s)
                self._acked_by_all(s, now)
        if self.recover is not None and self.min_last_ack >= self.recover:
            self.recover = None  # fast recovery ends
        if self.p.detect_lost_repairs and r.rexmit_at:
            self._lost_repairs(r, delivered_sent, now)
        self._resolve_event(now)
        # Rule 1: three higher packets SACKed means lost.
        new_losses = [
            s for s in r.sb.lost(self.p.dupthresh)
            if s < self.next_seq and s not in r.lost_pending and s not in r.rexmit_at
        ]
        if probe_delivered:
            new_losses = sorted(set(new_losses).union(self._probe_losses(r)))
        if self.probe is not None and self.probe[0] not in self.out:
            self.probe = None  # every receiver has it: the tail is over
        if new_losses:
            for s in new_losses:
                o = self.out.get(s)
                if (self.p.one_repair_per_loss and o is not None
                        and now - o.mcast_at < r.srtt + self.p.ack_delay):
                    # A repair multicast since this report left r is on its way
                    # to r as well: wait for it (its RTO covers its loss), do not
                    # send the group another copy.
                    r.rexmit_at[s] = o.mcast_at
                    continue
                self._mark_lost(r, s, now)
            self._congestion(r, now, new_losses)
            self.fast_rexmit = True  # TCP's fast retransmit: the first repair goes at once

    def _probe_losses(self, r: _Receiver) -> list[int]:
        """RACK's rule on the probe's delivery (RFC 8985 6.2, 7.4): what r still
        misses of the packets sent more than a quarter of its srtt before the
        probe is lost."""
        assert self.probe is not None
        sent = self.probe[1] - r.srtt / 4
        return [s for s, o in self.out.items()
                if o.last_sent < sent and not r.sb.acked(s) and s not in r.lost_pending and s not in r.rexmit_at]

    def _arm_pto(self, now: float) -> None:
        """RFC 8985 7.2: the probe timeout, if it comes before the retransmission timeout."""
        self._pto_deadline = None  # a "pto" timer still pending finds none and does nothing
        if (not self.p.tail_loss_probe or self.probe is not None or self.recover is not None
                or not self.out or not self.rcvrs or self.rexmit_queue):
            return
        pto = 2 * self.largest_srtt
        if len(self.out) == 1:
            pto += self.p.ack_delay  # RFC 8985 7.2's WCDelAckT: the receivers' own delay
        rto = self.timer_at("rto")
        if rto is not None and now + pto >= rto:
            return
        self._pto_deadline = now + pto
        pending = self.timer_at("pto")
        if pending is None or self._pto_deadline < pending:
            self.set_timer("pto", self._pto_deadline)

    def _on_probe_timeout(self, now: float) -> None:
        """RFC 8985 7.3: send the next new packet, else the last one again, whatever the window."""
        if self.probe is not None or self.recover is not None or not self.out or self.done:
            return
        if self.next_seq <= self._upper_bound() and not (
                self.p.total_packets and self.next_seq > self.p.total_packets):
            seq = self.next_seq
            self._send_new(now)
            self.probe = (seq, now)
        else:
            seq = max(self.out)
            for r in self.rcvrs.values():
                if not r.sb.acked(seq):
                    self._mark_lost(r, seq, now)
            self._retransmit(seq, now)  # a repair like any other, to whoever lacks it
            # Which copy arrives is unknown: its delivery dates only the first.
            self.probe = (seq, self.out[seq].first_sent)
        self.tail_loss_probes += 1

    def _lost_repairs(self, r: _Receiver, delivered_sent: float, now: float) -> None:
        """Mark lost the repairs r should have had before what it acknowledges now.

        Packets to a receiver travel one path in order, so a packet sent after
        a repair that reached r while the repair did not means the repair was
        lost (RFC 8985 6.2; a quarter of r's srtt tolerates reordering).
        Without this a lost repair -- and a multicast repair that overtook r's
        own report, which r then waits for -- cost an RTO of at least
        ``min_rto``, each a congestion signal at every receiver missing it.
        It is not a new congestion signal: the repair belongs to the loss
        event its packet's first loss signalled.
        """
        reo = r.srtt / 4
        for s, at in list(r.rexmit_at.items()):
            if at + reo < delivered_sent and s in self.out and not r.sb.acked(s):
                self.lost_repairs += 1
                self._mark_lost(r, s, now)

    def _join(self, rid: int, src: Address, now: float) -> _Receiver:
        """Beyond the paper: admit a receiver that joins mid-session from now on.

        It is owed what the sender still holds (the oldest packet not yet
        ACKed by every receiver, or the last one sent) and everything after:
        the trailing edge of the transmit window, where PGM (RFC 3208) starts
        a late joiner.  Unless that is packet 1, the first one is repaired to
        it alone with ``Flags.SYNC``, which tells its buffer where its stream
        starts (a receiver cannot tell the packets sent before it joined from
        packets it lost).
        """
        first = min(self.out) if self.out else self.next_seq - 1
        r = self._receiver(rid, src, first - 1)
        r.join = first
        if first > 1:
            r.synced = False
            self._mark_lost(r, first, -math.inf)
        self.joined.append((now, rid, first))
        return r

    def dead_after(self, r: _Receiver) -> float:
        return max(self.p.dead_min, self.p.dead_rtts * r.srtt)

    def _drop_silent(self, now: float) -> bool:
        """Beyond the paper: forget a receiver that stopped acknowledging.

        RLA's sender waits for every receiver (rule 5 bounds the window by the
        slowest one's ACKs), so one crashed or departed receiver would stall the
        session for good.  A receiver that owes an ACK for longer than
        ``dead_after`` is dropped; if it speaks again it is re-admitted from its
        cumulative ACK, like a late joiner.

        A receiver's silence counts only from when the group was heard again
        after all of it fell silent (``heard_again``): while the path was
        down nobody could answer, and once it is up again each receiver
        answers the first repair in its own time (a thinned SACK waits up to
        ``ack_delay``).  Counted from before the outage, a receiver whose
        answer reached the sender a few milliseconds after the others' was
        dropped (link flap: 1 s down, the first repair through 2 s later).
        """
        gone = []
        for r in self.rcvrs.values():
            owed = next((o.first_sent for s, o in self.out.items() if not r.sb.acked(s)), None)
            if owed is None:
                continue  # owes nothing: silence is normal
            if now - max(r.last_heard, owed, self.heard_again) > self.dead_after(r):
                gone.append(r.rid)
        if not gone:
            return False
        # Only while some other receiver is heard: when all fall silent
        # together, the path is down (a link or switch outage), not they.
        heard = [r for r in self.rcvrs.values() if r.rid not in gone
                 and now - r.last_heard <= self.dead_after(r) / 2]
        if not heard:
            return False
        self.dropped.extend((now, rid) for rid in gone)
        since = min(self.rcvrs[rid].last_heard for rid in gone)
        self._forget(gone)
        if self.p.undo_dead_cuts:
            self.cwnd, self.ssthresh, n = self.cuts.undo_since(since, self.cwnd, self.ssthresh, self._pipe(),
                                                               self.p.initial_cwnd)
            self.undone_cuts += n
        return True

    def _forget(self, rids: list[int]) -> None:
        """Remove receivers; release what every remaining one has acknowledged."""
        for rid in rids:
            del self.rcvrs[rid]
        self._choose_clock()  # a forgotten clock is replaced; a group now too small has none
        n = len(self.rcvrs)
        for s in list(self.out):
            o = self.out[s]
            o.acks = sum(1 for x in self.rcvrs.values() if x.sb.acked(s))
            if o.acks >= n:
                del self.out[s]
                self.rexmit_queue.discard(s)
        if self.recover is not None and self.min_last_ack >= self.recover:
            self.recover = None
        self.rto_backoff = 0

    # The window's clock ----------------------------------------------------
    def _choose_clock(self) -> None:
        """Beyond the paper: the receiver whose SACKs send (``clock_min_receivers``).

        The one with the largest srtt, once it has a sample; the clock stays
        until another's srtt exceeds its own by ``CLOCK_SWITCH``.  Chosen on
        a SACK while there is none (so the first receiver timed is the first
        clock), at every tick, and whenever receivers are forgotten (the one
        way one leaves the group, so the clock is always one of it).
        """
        if len(self.rcvrs) < self.p.clock_min_receivers:
            self.clock = None
            return
        timed = [r for r in self.rcvrs.values() if r.rtt.srtt is not None]
        if not timed:
            return
        slowest = max(timed, key=lambda r: r.srtt)
        current = self.rcvrs.get(self.clock) if self.clock is not None else None
        if current is None or slowest.srtt > CLOCK_SWITCH * current.srtt:
            self.clock = slowest.rid

    def _clocked_elsewhere(self, rid: int, now: float) -> bool:
        """True when a SACK from ``rid`` should send nothing: another receiver
        clocks the window and was heard within ``ack_delay``."""
        if self.clock is None:
            self._choose_clock()
        if self.clock is None or rid == self.clock:
            return False
        clock = self.rcvrs[self.clock]
        if clock.sack_gap is None or clock.sack_gap > clock.srtt / CLOCK_LAG:
            return False  # waiting for its next SACK would stretch the round trip
        return now - clock.last_heard <= self.p.ack_delay

    def _mark_lost(self, r: _Receiver, s: int, now: float) -> None:
        r.lost_pending.add(s)
        r.lost_since.setdefault(s, now)
        r.rexmit_at.pop(s, None)
        if s in self.out:
            self.rexmit_queue.add(s)

    def _acked_by_all(self, s: int, now: float) -> None:
        """Rule 4: grow the window once a packet is ACKed by every receiver."""
        if self.in_recovery:
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += 1.0
        else:
            self.cwnd += 1.0 / self.cwnd
        self.awnd += self.p.awnd_gain * (self.cwnd - self.awnd)

    # Congestion ------------------------------------------------------------
    def _effective_interval(self, r: _Receiver) -> float | None:
        """EWMA interval between r's congestion signals, in packets sent.

        The interval still open counts too, so a receiver whose losses stopped
        stops being troubled without waiting for another signal.
        """
        if r.interval_avg is None:
            return None
        return max(r.interval_avg, float(self.packets_sent - r.last_signal_pkts))

    def min_congestion_interval(self) -> float | None:
        vals = [v for v in (self._effective_interval(r) for r in self.rcvrs.values()) if v is not None]
        return min(vals) if vals else None

    def _troubled(self, r: _Receiver) -> bool:
        """Rule 6: congestion probability above 1 / (eta * min_congestion_interval)."""
        iv = self._effective_interval(r)
        lo = self.min_congestion_interval()
        if iv is None or lo is None:
            return False
        prob = 1.0 / max(iv, 1.0)
        return prob > 1.0 / (self.p.eta * max(lo, 1.0))

    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        """Rules 2, 3 and 6 for a loss detected at receiver ``r``."""
        if now - r.cperiod_start <= self.p.cperiod_rtts * r.srtt:
            return  # same congestion period (rule 2)
        r.cperiod_start = now
        self.congestion_signals += 1
        r.signals += 1
        interval = float(max(1, self.packets_sent - r.last_signal_pkts))
        if r.interval_avg is None:
            r.interval_avg = interval
        else:
            r.interval_avg += self.p.interval_gain * (interval - r.interval_avg)
        r.last_signal_pkts = self.packets_sent
        n = self.num_trouble_rcvr
        if not self._troubled(r):
            self.rare_losses += 1
            return
        if self.p.one_cut_per_window and lost and not by_timeout and max(lost) <= self.cut_seq:
            # Sent before the last cut: the same congestion, already answered.
            self.absorbed_signals += 1
            return
        if now - self.last_window_cut > 2 * self.awnd * r.srtt:
            self.forced_cuts += 1
            self._cut(now)
            self.event = None
            return
        if self.p.one_draw_per_loss and lost:
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
            return
        pthresh = 1.0 / max(n, 1)
        if self.rng.random() > pthresh:
            self.ignored_signals += 1
            return
        self.random_cuts += 1
        self._cut(now)

    def _lost_at(self, r: _Receiver, s: int) -> bool:
        return s in r.lost_pending or s in r.rexmit_at or (r.sb.highest > s and not r.sb.acked(s))

    def _resolve_event(self, now: float, force: bool = False) -> None:
        """Draw for the open loss event once every troubled receiver reported past it.

        The draw cuts with probability k / num_trouble_rcvr, k being the troubled
        receivers that lost its first packet: the paper's expected number of cuts
        for k signals (k draws of 1/n), but never more than one cut for one
        packet, and always one when every troubled receiver lost it.
        """
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
        k = max(1, sum(1 for r in troubled if self._lost_at(r, lo)))
        if self.rng.random() > min(1.0, k / len(troubled)):
            self.ignored_signals += 1
            return
        self.random_cuts += 1
        self._cut(now)

    def _cut(self, now: float) -> None:
        self.cuts.record(now, self.cwnd, self.ssthresh)
        self.cwnd = max(self.p.cut_floor, self.cwnd / 2)
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd)
        self.last_window_cut = now
        self.recover = self.next_seq - 1  # fast recovery until all of this is ACKed
        self.cut_seq = self.next_seq - 1

    def _on_timeout(self, now: float) -> None:
        """Rule 1's other half: packets unACKed for a whole RTO are lost."""
        self.timeouts += 1
        self.probe = None
        cwnd_before = self.cwnd
        oldest = min(self.out) if self.out else None
        nobody_acked_oldest = oldest is not None
        for r in self.rcvrs.values():
            rto = r.rtt.rto * (2 ** self.rto_backoff)
            pending = [s for s in self.out if not r.sb.acked(s) and s not in r.lost_pending]
            if oldest is not None and r.sb.acked(oldest):
                nobody_acked_oldest = False
            expired = [s for s in pending if r.rexmit_at.get(s, self.out[s].last_sent) + rto <= now]
            if not expired:
                continue
            # TCP after a timeout (RFC 5681 3.1, RFC 6675 5.1): everything this
            # receiver has not acknowledged is lost, not only what is older than
            # one RTO.  Marking only the expired packets left the rest of a window
            # that an outage swallowed counted in the pipe for ever, so with the
            # window back at one packet no repair could be sent (link flap).
            lost = pending if self.p.rto_marks_all else expired
            for s in lost:
                # A loss by timeout needs no wait before its repair (a whole RTO
                # was waited already; see "Retransmission timing" in the docs).
                self._mark_lost(r, s, -math.inf)
            self._congestion(r, now, lost, by_timeout=True)
        if nobody_acked_oldest:
            # No receiver acknowledged the oldest packet: TCP's timeout response
            # (instead of, not on top of, a cut the signals above may have made).
            self.cuts.record(now, self.cwnd, self.ssthresh)
            if not (self.p.rto_holds_ssthresh and oldest == self.rto_seq):
                # RFC 5681 3.1: ssthresh falls at the first timeout of a packet;
                # "when ... the given segment has already been retransmitted by
                # way of the retransmission timer at least once, the value of
                # ssthresh is held constant".  Halving the one-packet window
                # again set ssthresh to 2 after any outage longer than one RTO,
                # and the window then climbed back linearly from 2.
                self.ssthresh = max(LEAST_SSTHRESH, cwnd_before / 2)
            self.rto_seq = oldest
            self.cwnd = 1.0
            self.last_window_cut = now
            self.cut_seq = self.next_seq - 1
            # After a timeout TCP slow-starts from one segment as ACKs come
            # (RFC 5681 3.1; RFC 6675 5.1 leaves loss recovery): fast
            # recovery's hold on the window ends here.  Kept, the hold left the
            # window at one packet until every loss of the flight was
            # repaired: after the slow-start overflow of a 20 Mb/s, 200 ms path
            # with a 667-packet queue, hundreds of repairs at one per RTT, and
            # the session delivered 23 kb/s for the rest of a 100 s run.
            self.recover = None
            if self.p.rto_marks_all and self.event is not None:
                # The loss event the signals above opened is this response: it
                # is not drawn for again later.
                self.drawn = (self.event[0], self.event[1])
                self.event = None
        self.rto_backoff = min(self.rto_backoff + 1, 6)

    # Sending ---------------------------------------------------------------
    def _pipe(self) -> int:
        """Packets believed in the network: outstanding, not lost unless resent."""
        pipe = 0
        for s in self.out:
            if s in self.rexmit_queue:
                continue
            pipe += 1
        return pipe

    def _upper_bound(self) -> int:
        """Rule 5: highest packet number the receivers' buffers allow."""
        if not self.rcvrs:
            return 0
        return min(r.sb.cum_ack + max(r.adv_buf, 0) for r in self.rcvrs.values())

    def _started(self, now: float) -> None:
        self.last_window_cut = now

    def _pump(self, now: float) -> None:
        if not self._may_send(now):
            return
        pipe = self._pipe()
        # Retransmissions first, in order.
        for s in sorted(self.rexmit_queue):
            if pipe >= int(self.cwnd) and not self.fast_rexmit:
                break
            if self._retransmit(s, now):
                pipe += 1
                self.fast_rexmit = False
        limit = self._upper_bound()
        if (self.p.spread_pairs and len(self.rcvrs) >= self.p.spread_min_receivers
                and pipe >= 2 and int(self.cwnd) - pipe == 1):
            limit = 0  # a lone packet waits for the next acknowledgement: TCP's pairs
        while pipe < int(self.cwnd) and self.next_seq <= limit:
            if self.p.total_packets and self.next_seq > self.p.total_packets:
                break
            self._send_new(now)
            pipe += 1
        if self.p.total_packets and self.next_seq > self.p.total_packets and not self.out:
            self.metric(self.metrics(now)[0], "done")  # the last record: none once done
            self.done = True
            self.cancel_timer("rto")
            self.cancel_timer("pto")
            return
        self._arm_rto()
        if self._progress or self._pto_deadline is None:
            # RFC 8985 7.2: (re)started on new data sent or acknowledged.
            self._progress = False
            self._arm_pto(now)

    def _data(self, seq: int, now: float, flags: int = 0) -> bytes:
        if len(self.rcvrs) >= self.p.thin_min_receivers:
            flags |= Flags.THIN_ACKS  # receivers thin their SACKs
        if len(self.rcvrs) >= self.p.spread_min_receivers:
            flags |= Flags.SPREAD_ACKS  # and spread them over the data gap
        return RlaData(
            session_id=self.cfg.session_id,
            seq=seq,
            timestamp=ts_us(now),
            flags=flags,
            payload=payload_for(seq, self.p.packet_size),
        ).encode()

    def _send_new(self, now: float) -> None:
        s = self.next_seq
        self.next_seq += 1
        self.packets_sent += 1
        self.out[s] = _Out(now, now, sum(1 for r in self.rcvrs.values() if r.sb.acked(s)))
        self.send(self.group, self._data(s, now))
        self._progress = True

    def _retransmit(self, s: int, now: float) -> bool:
        """Resend ``s`` to the receivers missing it; multicast above ``rexmit_thresh``."""
        want = [r for r in self.rcvrs.values() if s in r.lost_pending and not r.sb.acked(s)]
        if not want:
            self.rexmit_queue.discard(s)
            return False
        # Wait to hear from every receiver about s (so the multicast/unicast
        # choice counts them all), but never longer than the largest srtt.
        waited = now - min(r.lost_since.get(s, now) for r in want)
        if self.p.one_repair_per_loss:
            # Heard from all: each receiver has it, or is known to miss it
            # (rule 1 or a timeout marked it lost, or a repair is on its way).
            heard_all = all(r.sb.acked(s) or s in r.lost_pending or s in r.rexmit_at
                            for r in self.rcvrs.values())
        else:
            heard_all = all(r.sb.highest >= s for r in self.rcvrs.values())
        if not heard_all and waited < self.largest_srtt:
            return False
        data = self._data(s, now, Flags.RETRANSMIT)
        # A late joiner's first packet goes to it alone, marked as its start.
        sync = [r for r in want if not r.synced and s == r.join]
        rest = [r for r in want if r.synced or s != r.join]
        for r in sync:
            self.send(r.addr, self._data(s, now, Flags.RETRANSMIT | Flags.SYNC))
            self.ucast_rexmits += 1
        if len(rest) > self.p.rexmit_thresh:
            self.send(self.group, data)
            self.mcast_rexmits += 1
            self.out[s].mcast_at = now
        else:
            for r in rest:
                self.send(r.addr, data)
                self.ucast_rexmits += 1
        for r in want:
            r.lost_pending.discard(s)
            r.rexmit_at[s] = now
        self.out[s].last_sent = now
        self.rexmit_queue.discard(s)
        return True

    def _arm_rto(self) -> None:
        if not self.out:
            self.cancel_timer("rto")
            return
        when = math.inf
        for r in self.rcvrs.values():
            rto = r.rtt.rto * (2 ** self.rto_backoff)
            for s, o in self.out.items():
                if r.sb.acked(s) or s in r.lost_pending:
                    continue
                when = min(when, r.rexmit_at.get(s, o.last_sent) + rto)
                break  # packets are scanned oldest first; the first is the earliest
        if when is math.inf:
            # Only lost packets waiting for the window: check again after an srtt.
            when = self.now + self.largest_srtt
        if self.timer_at("rto") != when:
            self.set_timer("rto", when)

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        if self.done:
            return None
        srtts = [r.srtt for r in self.rcvrs.values()]
        return (
            {
                "cwnd": self.cwnd,
                "ssthresh": self.ssthresh,
                "awnd": self.awnd,
                "num_trouble_rcvr": self.num_trouble_rcvr,
                "packets_sent": self.packets_sent,
                "min_last_ack": self.min_last_ack,
                "congestion_signals": self.congestion_signals,
                "window_cuts": self.forced_cuts + self.random_cuts,
                "forced_cuts": self.forced_cuts,
                "rtt_s": max(srtts) if srtts else 0.0,
            },
            "recovery" if self.in_recovery else "slowstart" if self.cwnd < self.ssthresh else "steady",
        )


class RlaReceiver(SessionEndpoint[RlaParams], role="rla-receiver"):
    """An RLA receiver: in-order delivery and SACKs, thinned as TCP's ACKs are.

    The paper's receivers "use selective acknowledgments using the same format
    as SACK TCP receivers"; a SACK for every data packet from each of n
    receivers put n feedback packets per data packet, in one burst, onto a
    reverse path that TCP's ACKs share (docs/protocols/rla.md).  So when the
    sender marks its data ``Flags.THIN_ACKS`` (``thin_min_receivers``) a
    regular SACK goes for every ``ack_every`` packets or ``ack_delay`` after
    the first unacknowledged one (RFC 5681 4.2's delayed ACK); what the sender must hear
    promptly -- a hole it can now call lost, a hole filled, a late joiner's
    start -- is acknowledged at once.  Every SACK leaves after the receiver's
    own phase of the data packets' gap.
    """

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.rid = node_id(config.local)
        self.sender: Address = (config.sender, config.port)
        self.buf = ReceiveBuffer(self.p.rcv_buffer)
        self.got_data = False
        self.corrupt = 0
        self.sacks_sent = 0
        self.rng = random.Random(config.seed * 2**32 + self.rid)
        # A separate stream, so the hello schedule does not depend on the ACK rule.
        ack_rng = random.Random(f"rla-ack-{config.seed}-{self.rid}")
        #: Packets received since the last SACK; it starts at a random offset,
        #: so receivers of a group marked large from its first packet
        #: acknowledge different packets (not all the even ones).  A group that
        #: grows large mid-stream counts from each receiver's last SACK of the
        #: unmarked packets, so there its receivers acknowledge the same ones.
        self.unacked = ack_rng.randrange(self.p.ack_every)
        self.phase = ack_rng.uniform(0, self.p.ack_spread)
        self.pending_echo: int | None = None  # send time of the first packet not yet acknowledged
        self.pending_since = 0.0
        self.told_lost = 0  # holes up to here were reported as detectable already
        self.gap: float | None = None  # smoothed interval between data packets
        self.last_data_at: float | None = None
        #: The shortest interval between two data packets in this block of
        #: ``SERVICE_BLOCK`` and in the last one: the bottleneck's service time.
        self._gap_min = self._gap_min_before = math.inf
        self._gaps_in_block = 0

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        if self.p.hello_spread > 0:
            self.set_timer("hello", now + self.rng.uniform(0, self.p.hello_spread))
        else:
            self._hello(now)

    def on_timer(self, name: str, now: float) -> None:
        if name == "hello" and not self.got_data:
            self._hello(now)
        elif name == "ack" and self.pending_echo is not None:
            self._sack(self.pending_echo, now)

    def _hello(self, now: float) -> None:
        self._sack(0, now, hello=True)
        factor = self.rng.uniform(0.5, 1.5) if self.p.hello_spread > 0 else 1.0
        self.set_timer("hello", now + self.p.hello_interval * factor)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if not isinstance(msg, RlaData) or msg.seq < 1:
            return
        if msg.seq > MAX_SEQ:
            self.malformed += 1
            return
        if msg.payload != payload_for(msg.seq, len(msg.payload)):
            self.corrupt += 1
            return
        if not self.got_data:
            self.got_data = True
            self.cancel_timer("hello")
        if self.last_data_at is not None:
            g = now - self.last_data_at
            self.gap = g if self.gap is None else self.gap + (g - self.gap) / 8
            self._note_gap(g)
        self.last_data_at = now
        urgent = bool(msg.flags & Flags.SYNC)
        if msg.flags & Flags.SYNC:
            # The sender's mark of where a late joiner's stream starts; only
            # before anything was delivered (ReceiveBuffer.rebase).
            for d in self.buf.rebase(msg.seq - 1):
                self.emit(d)
        had_holes = self.buf.highest > self.buf.cum_ack
        cum_before = self.buf.cum_ack
        new, delivered = self.buf.add(msg.seq, len(msg.payload))
        for d in delivered:
            self.emit(d)
        if self.pending_echo is None:
            self.pending_echo = msg.timestamp
            self.pending_since = now
        self.unacked += 1
        if not msg.flags & Flags.THIN_ACKS:
            self._sack(self.pending_echo, now)  # unmarked: the paper's SACK per packet
            return
        if not new:
            pass  # a duplicate (a repair for another receiver, most likely): no hurry
        elif had_holes and self.buf.cum_ack > cum_before:
            urgent = True  # it fills a hole (RFC 5681 4.2)
        else:
            hole = self.buf.first_hole_above(self.told_lost)
            if hole is not None and hole + self.p.dupthresh <= self.buf.highest:
                # Rule 1 now lets the sender call this hole lost: tell it at once.
                urgent = True
                self.told_lost = self.buf.highest - self.p.dupthresh
        # In a group marked SPREAD_ACKS every receiver saw this packet at nearly
        # the same instant: each holds its SACK for its own phase of the gap
        # between data packets, so the n/ack_every SACKs one packet triggers
        # reach the reverse queue spread over the gap, not at once.  The hold
        # is at most half of ``ack_delay`` and a lone packet's SACK is due
        # after the other half: no packet waits longer than ``ack_delay``.
        spread = bool(msg.flags & Flags.SPREAD_ACKS)
        hold = self.p.ack_delay / 2 if spread else self.p.ack_delay
        due = now if ack_at_once(self.unacked, urgent, self.p.ack_every) else self.pending_since + hold
        when = due
        if spread:
            when += self.phase * self._spread_span(hold)
        t = self.timer_at("ack")
        if when <= now:
            self._sack(self.pending_echo, now)
        elif t is None or when < t:
            self.set_timer("ack", when)

    def _note_gap(self, g: float) -> None:
        """Keep the running minimum spacing of data packets, over this block and
        the last, so a path whose bottleneck changes is followed within two blocks."""
        self._gap_min = min(self._gap_min, g)
        self._gaps_in_block += 1
        if self._gaps_in_block >= SERVICE_BLOCK:
            self._gap_min_before, self._gap_min, self._gaps_in_block = self._gap_min, math.inf, 0

    def _spread_span(self, hold: float) -> float:
        """The longest a SACK is held for the receiver's phase (the phase scales it):
        the data gap, at most ``hold`` and ``spread_service_times`` service times."""
        span = hold if self.gap is None else min(self.gap, hold)
        service = min(self._gap_min, self._gap_min_before)
        if self.p.spread_service_times and service < math.inf:
            span = min(span, self.p.spread_service_times * max(service, SERVICE_FLOOR))
        return span

    def _sack(self, echo_ts: int, now: float, hello: bool = False) -> None:
        """Send one SACK; the echo is the first packet it acknowledges (RFC 7323 3.4).

        A hello acknowledges no data, so it leaves the count (and its random
        starting offset) alone.
        """
        self.sacks_sent += 1
        if not hello:
            self.unacked = 0
            self.pending_echo = None
            self.cancel_timer("ack")
        self.send(
            self.sender,
            RlaSack(
                session_id=self.cfg.session_id,
                timestamp=ts_us(now),
                cum_ack=self.buf.cum_ack,
                adv_buf=self.buf.free,
                rcvr_id=self.rid,
                echo_ts=echo_ts,
                blocks=self.buf.sack_blocks(MAX_SACK_BLOCKS),
            ).encode(),
        )
