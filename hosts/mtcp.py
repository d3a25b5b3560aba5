"""MTCP (Rhee, Balaguru, Rouskas): reliable multicast over a tree of sender's agents.

The sender multicasts; every receiver acknowledges to its parent in a logical
tree (:mod:`hosts.mtcp_tree`).  A node with children is a *sender's agent*
(SA): it buffers each packet until all its children acknowledged it, repairs
its children by unicast, and keeps a TCP-Vegas-like congestion window for the
paths from the sender to its children.  Each ACK carries a *congestion
summary* -- the minimum congestion window and the maximum transit window in
the subtree -- so the sender, itself the root SA, never sends more than
``min(minCwnd - maxTwnd, advertised window)`` beyond what is in flight.

Paper mechanisms and where they live (constants in ``docs/protocols/mtcp.md``):

* relative time delay (RTD): SA clock at ACK arrival minus the sender's clock
  at transmission, so SAs need no clock synchronisation (:func:`_rtd_estimator`);
* per-packet retransmission timers: first ``send time + RTO_RTD``, then
  ``RTO_RTT`` doubling on each expiry (:meth:`_Agent._on_packet_timer`);
* SACK (bitmap) ACKs delayed by ``ack_delay`` and NACKs to the parent;
* repair by unicast on NACK unless resent to that child within its RTT, or on
  timeout, paced by a per-child retransmission window (:class:`_Child`);
* cwnd: slow start from ``initial_cwnd`` (RFC 6928's 10 packets, TCP's; the
  paper starts at one) at +1 per packet ACKed by all children, then either
  ``window="reno"`` (default, a documented deviation for sharing drop-tail
  queues with TCP: +1/cwnd per packet ACKed by all, halved on the first NACK
  of a new loss once per window) or ``window="vegas"`` (the paper: Vegas
  congestion avoidance on RTD differences; only timeouts or repeated NACKs
  shrink it -- an independent loss repaired on the first NACK does not);
* probes every 2 s (section 3.3) for RTT samples; a child silent through
  three probes is dead: its packets are released and its children adopted
  (they re-attach to the prober), and gaps are repaired from the stream;
* behind a folding switch the sender cannot probe the receivers: a fold that
  stalls on a timed-out packet makes it *roll-call* the group; receivers
  answer by NACK (never folded) and report by NACK from then on, and if every
  answer is past the fold the sender unfolds the session (a silent member
  held it);
* twnd: +1 per new packet, -1 per packet ACKed by all children, 0 on timeout;
* window-update ACKs every 0.5 s (+1 s each time; each period jittered by
  ±50 %, ``TIMER_JITTER``) while no summary was sent,
  which breaks the deadlock of section 3.9.

Switch-assisted mode: the P4 program folds ACK summaries arriving from its
downstream ports (minimum ``cum_ack``, ``min_cwnd`` and ``adv_wnd``, maximum
``max_twnd``) and sends one upstream with ``Flags.AGGREGATED``.  The sender's
logic does not change: a folded source is one more child whose repairs go by
multicast, since the sender cannot tell which receivers behind it lack a packet.
A fold acknowledges by ``cum_ack`` only: the switch clears ``sack_bitmap``
and the sender ignores SACK bits on ``AGGREGATED`` messages, because a bitmap
describes one receiver and would release packets other receivers still lack.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Any

from hosts import mtcp_tree
from hosts.core import Address, JoinGroup, node_id
from hosts.registry import ParamError, SessionConfig, SessionEndpoint
from hosts.reliable import (MAX_SEQ, CutLog, ReceiveBuffer, ReliableParams, Scoreboard, SendGate, nack_blocks,
                            ack_from_one_more, payload_for)
from hosts.rtt import SmoothedRtt, lowest
from hosts.tcp_rules import DELAYED_ACK_PACKETS, DUPTHRESH, LEAST_SSTHRESH, VEGAS, Vegas, ack_at_once, vegas_diff
from hosts.wire import (
    MAX_NACK_SEQS,
    Flags,
    MtcpAck,
    MtcpData,
    MtcpNack,
    MtcpWindowUpdate,
    seconds_since,
    ts_us,
)

#: ``min_cwnd`` a leaf reports: it has no window, so it never limits the minimum.
NO_CWND = 0xFFFFFFFF
#: The child id under which the sender keeps switch-folded summaries (no host has id 0).
FOLD_ID = 0
#: The window-update timer (hellos included) fires after ``period * uniform(1 - J,
#: 1 + J)``: receivers that start together, or hear the same last packet, must not
#: report in step and overflow their parent's queue (Floyd and Jacobson, "The
#: Synchronization of Periodic Routing Messages", 1994, advise J >= 0.5; RTCP,
#: RFC 3550 section 6.3.1, uses the same [0.5, 1.5] spread).
TIMER_JITTER = 0.5
#: Congestion-window rules: ``reno`` (default) halves cwnd on the first NACK of a
#: new loss, once per window, as TCP's fast recovery does; ``vegas`` is the
#: paper's rule (Vegas on RTDs; only timeouts and repeated NACKs cut).
WINDOW_MODES = ("reno", "vegas")
#: Shortest wait for a probe's answer (s): a busy host may be descheduled this long.
PROBE_ANSWER_MIN = 0.1
#: A hole is NACKed again after this many NACK-to-repair times (the repair of
#: the last NACK is still on its way before that) ...
NACK_HOLDOFF_RTTS = 2.0
#: ... or, before the first sample, after this long (s).
NACK_HOLDOFF_INITIAL = 0.25


@dataclass
class MtcpParams(ReliableParams):
    """MTCP parameters; sources in ``docs/protocols/mtcp.md``.

    The stream (``packet_size``, ``total_packets``), ``receivers`` (flat tree,
    no assistance: how many children the sender waits for) and RFC 6298's
    timer (``initial_rto``, ``min_rto``) and the first window
    (``initial_cwnd``) are :class:`hosts.reliable.ReliableParams`, shared
    with RLA.
    """

    tree: str = ""  # "child>parent,..."; empty: every receiver a child of the sender
    k: int = 16
    assisted: bool | None = None  # None: the session's (SessionConfig.assisted); set: overrides it
    ack_delay: float = 0.02
    #: A leaf ACKs at once when this many new packets are unacknowledged, or a
    #: packet arrives out of order (or fills a hole), as a TCP receiver does
    #: (RFC 5681 4.2); else ``ack_delay`` (jittered) after the first one held.
    #: Agents (nodes with children) and 0: by time only (the paper's 3.1).
    ack_every: int = DELAYED_ACK_PACKETS
    rcv_buffer: int = 4096
    initial_ssthresh: float = 4096.0
    wupdate_initial: float = 0.5
    wupdate_step: float = 1.0
    hello_interval: float = 1.0
    probe_interval: float = 2.0
    dead_probes: int = 3
    #: Cuts a silent member caused are undone by RFC 4015's response: ssthresh
    #: back, cwnd to the flight plus an initial window, slow start for the
    #: rest (``hosts.tcp_rules.undo_spurious_cuts``).  False: the window
    #: before comes back at once, one burst into an emptied pipe.
    undo_slow_start: bool = True
    #: RFC 3465's limit L: in slow start one report grows cwnd by at most this
    #: many packets however many it acknowledges by all (TCP's byte counting
    #: with L = 2).  A roll call's answers that moved a stalled fold by 114
    #: packets grew cwnd by 114 at once and the window left as one burst.
    #: 0: +1 per packet acknowledged by all, whatever the report.
    abc_limit: int = 2
    window: str = "reno"  # "reno": loss-driven AIMD (TCP-friendly on drop-tail); "vegas": the paper's
    #: ``window="reno"``: after a cut on a NACK the window does not grow on the
    #: packets that were out at the cut (up to ``recover``), as TCP's fast
    #: recovery holds it (RFC 5681 3.2, RFC 6582 3.2, RFC 6937); it grows again
    #: above them.  False: +1/cwnd for every packet acknowledged by all, those
    #: of the flight the cut answered included.
    recovery_hold: bool = True
    #: TCP Vegas' thresholds for ``window="vegas"`` (:class:`hosts.tcp_rules.Vegas`).
    vegas_alpha: float = VEGAS.alpha
    vegas_beta: float = VEGAS.beta
    vegas_gamma: float = VEGAS.gamma
    #: NACKs of one packet that count as congestion (TCP's three duplicate ACKs).
    dup_nack_thresh: int = DUPTHRESH
    #: In a switch-assisted session a receiver NACKs a hole again only after
    #: ``NACK_HOLDOFF_RTTS`` times its NACK-to-repair time (``NACK_HOLDOFF_INITIAL``
    #: before a sample); False: a NACK with every ACK while a hole is open.
    nack_holdoff: bool = True
    #: A receiver NACKs a new hole once this many packets above it arrived (TCP's
    #: three duplicate ACKs, RFC 5681 3.2); 1: at the first (the paper's rule).
    nack_dupthresh: int = DUPTHRESH
    #: A hole with fewer than ``nack_dupthresh`` packets above it is NACKed once
    #: a packet above it arrived a reordering window ago (RFC 8985's RACK: a
    #: quarter of the NACK-to-repair time, ``ack_delay`` before a sample).
    #: False: only the count (RFC 5681 3.2 alone).
    nack_rack: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ack_every < 0:
            raise ValueError(f"ack_every must be >= 0, got {self.ack_every}")
        if self.k < 1 or self.rcv_buffer < 1 or self.dup_nack_thresh < 1 or self.dead_probes < 1 or self.nack_dupthresh < 1:
            raise ValueError("k, rcv_buffer, dup_nack_thresh and dead_probes must be >= 1")
        if self.window not in WINDOW_MODES:
            raise ValueError(f"window must be one of {', '.join(WINDOW_MODES)}, got {self.window!r}")
        if self.probe_interval <= 0:
            raise ValueError(f"probe_interval must be positive, got {self.probe_interval}")
        if self.ack_delay < 0 or self.wupdate_initial <= 0 or self.wupdate_step < 0:
            raise ValueError("ack_delay, wupdate_initial and wupdate_step must be positive")
        _ = self.vegas  # a Vegas checks its own thresholds
        if self.assisted and self.tree:
            raise ValueError("switch-assisted sessions use the flat tree (leave 'tree' empty)")
        if self.tree:
            mtcp_tree.parse(self.tree, mtcp_tree.root_of(self.tree), self.k)  # TreeError is a ValueError

    @property
    def vegas(self) -> Vegas:
        """The Vegas rule with this session's thresholds."""
        return Vegas(self.vegas_alpha, self.vegas_beta, self.vegas_gamma)


def _rtd_estimator(min_rto: float) -> SmoothedRtt:
    """Relative time delay estimator: TCP's srtt/rttvar rules on RTD samples.

    RTD samples may be negative (the clocks are not synchronised); only their
    differences matter, so the timeout is ``srtd + max(4 * rtdvar, min_rto)``
    on the sender's time axis (``min_rto`` as RFC 6298's G, no floor) and the
    smallest sample is Vegas' base.
    """
    return SmoothedRtt(min_rto=-math.inf, max_rto=math.inf, granularity=min_rto, relative=True, incremental=True)


@dataclass
class _Child:
    """An SA's state for one child (a receiver, an SA, or a folded switch summary)."""

    nid: int
    addr: Address
    rtd: SmoothedRtt
    rtt: SmoothedRtt
    sb: Scoreboard = field(default_factory=Scoreboard)
    heard: bool = False
    aggregated: bool = False
    nack_only: bool = False  # known only from NACKs (behind a folding switch)
    min_cwnd: int = NO_CWND
    max_twnd: int = 0
    adv_wnd: int = 0
    round_min_rtd: float | None = None
    # Retransmission window (section 3.6): initial 1, TCP-like growth, never reset when idle.
    rwnd: float = 1.0
    rssthresh: float = 64.0
    rinflight: dict[int, float] = field(default_factory=dict)
    rcut_at: float = float("-inf")  # when a lost repair last halved rwnd (once per RTT)
    rqueue: set[int] = field(default_factory=set)
    last_tx: dict[int, float] = field(default_factory=dict)
    rexmits: dict[int, int] = field(default_factory=dict)
    nacks: dict[int, int] = field(default_factory=dict)
    # Liveness (section 3.3's probes; p4mcc's dead-child timeout, docs/protocols/mtcp.md).
    last_heard: float = 0.0
    probe_ts: int = 0  # wire timestamp of the probe awaiting an answer (0: none)
    probe_at: float = 0.0
    probe_due: float | None = None
    missed: int = 0
    # Behind a folding switch after the sender unfolded the session: the child
    # reports by NACK (never folded) and is probed by the sender's roll call.
    solo: bool = False


@dataclass
class _Buffered:
    """A packet an SA holds until every child acknowledged it."""

    sender_ts: int
    size: int
    acks: int
    deadline: float
    stage: int = 0  # 0: RTD-based timer; n: RTT-based, backed off 2**(n-1)


class _Agent(SessionEndpoint[MtcpParams]):
    """What the sender and every SA share: children, buffer, timers, windows."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = config.local
        self.nid = node_id(config.local)
        self.group: Address = (config.group, config.port)
        #: The switches fold this session's summaries (flat tree only).
        self.assisted = self.p.assisted if self.p.assisted is not None else (
            config.assisted and not self.p.tree)
        try:
            self.tree = mtcp_tree.parse(self.p.tree, config.sender, self.p.k)
        except mtcp_tree.TreeError as e:
            raise ParamError(f"MtcpParams.tree: {e} (the sender is {config.sender})") from None
        self.children: dict[int, _Child] = {}
        self.buf: dict[int, _Buffered] = {}
        #: Children timed out as dead; any later report makes one a child again
        #: (``_child``), and a fold's report from one calls no roll.
        self.departed: set[int] = set()
        # Per-node stream from the session seed: reproducible, not in step.
        self.rng = random.Random((config.seed << 32) ^ self.nid)
        for c in self.tree.children_of(self.me):
            self._child(node_id(c), (c, config.port))
        self._timers_heap: list[tuple[float, int]] = []
        self.cwnd = float(self.p.initial_cwnd)
        self.ssthresh = float(self.p.initial_ssthresh)
        self.twnd = 0
        self.recover = 0  # cwnd reacts once per window: losses at or below this are old news
        self.hold_until = 0  # fast recovery: packets up to this one acknowledged by all do not grow cwnd
        self.trend = 1  # Vegas decision of the last round: +1, 0, -1 packet per round
        self.round_end = 0
        self.round_start = 0.0
        self.round_acked = 0
        self.highest_buffered = 0
        # Counters for metrics and tests.
        self.timeouts = 0
        self.nack_rexmits = 0
        self.timer_rexmits = 0
        self.suppressed_nacks = 0
        self.cwnd_cuts = 0
        self.summaries_in = 0
        self.cuts = CutLog()  # the window before each recent cut (_undo_cuts)
        self.ss_event, self.ss_grown = -1.0, 0  # slow start's growth in the current report (abc_limit)
        self.probes_sent = 0
        self.dead_children = 0
        self.adopted = 0
        self.stream_repairs = 0
        self.mcast_repairs = 0
        self.deferred_timeouts = 0
        self.late_joins = 0
        self.readmitted = 0  # children timed out as dead that reported again and came back
        # Roll calls (p4mcc, docs/protocols/mtcp.md "Faults"): the sender finds a
        # switch fold held by a silent member and unfolds the session.
        self.unfolded = False
        self.unfolds = 0
        self.rollcalls = 0
        self.rollcall_at: float | None = None
        self.rollcall_ts = 0  # the call's timestamp, which answers echo
        self.rollcall_fold: int | None = None  # the fold's cum_ack when the roll call went out
        self.rollcall_heard: dict[int, int] = {}  # answers: node id -> cumulative ACK
        self.fold_reported = 0  # highest cum_ack a fold carried
        self.fold_moved_at = 0.0  # when it last rose
        self.fold_stalled_at: int | None = None  # fold_reported when a roll call last found it stalled

    # Children ------------------------------------------------------------------
    def _child(self, nid: int, addr: Address, now: float | None = None) -> _Child:
        c = self.children.get(nid)
        if c is None:
            c = _Child(nid, addr, _rtd_estimator(self.p.min_rto), self.p.rtt_estimator(),
                       rssthresh=self.p.initial_ssthresh)
            self.children[nid] = c
            if nid in self.departed:
                # It reports again, so it lives: its reports were lost for the
                # dead timeout (a feedback flood policed at its port took its
                # ACKs with the flood's).  It is a child again, owed what it
                # lacks: a packet released meanwhile is repaired from the
                # stream (``_has``).  Its reports ignored, it stalled for good
                # at its next loss.
                self.departed.discard(nid)
                self.readmitted += 1
            if now is not None:
                c.last_heard = now
                c.probe_due = now + self._jittered(self.p.probe_interval)
            for s, b in self.buf.items():
                b.acks = sum(1 for x in self._acking() if x.sb.acked(s))
        return c

    def _acking(self) -> list[_Child]:
        return [c for c in self.children.values() if not c.nack_only]

    def _ack_limit(self) -> int:
        """Highest packet a child may acknowledge: what exists, as far as we know.

        A child may be ahead of its agent (it got a packet the agent lost), so
        an agent allows a margin of its buffer size beyond what it has seen.
        """
        return self.highest_buffered + self.p.rcv_buffer

    def rto_rtd(self) -> float:
        """Section 3.4: an SA's RTO_RTD is the maximum over its children."""
        vals = [c.rtd.rto for c in self._acking() if c.rtd.srtt is not None]
        return max(vals) if vals else self.p.initial_rto

    def rto_rtt(self) -> float:
        vals = [c.rtt.rto for c in self._acking()]
        return max(vals) if vals else self.p.initial_rto

    def summary(self) -> tuple[int, int, int]:
        """(minCwnd, maxTwnd, advertised window) of this node's subtree (section 3.7)."""
        kids = self._acking()
        if not kids:
            return NO_CWND, 0, self.p.rcv_buffer  # a leaf limits nothing but its buffer
        heard = [c for c in kids if c.heard]
        min_cwnd = min([int(self.cwnd)] + [c.min_cwnd for c in heard])
        max_twnd = max([self.twnd] + [c.max_twnd for c in heard])
        adv = min((c.adv_wnd for c in heard), default=self.p.rcv_buffer)
        return min_cwnd, max_twnd, adv

    # Liveness: probes, dead children, adoption ---------------------------------------
    def _jittered(self, period: float) -> float:
        return period * (1.0 + TIMER_JITTER * (2.0 * self.rng.random() - 1.0))

    def _probed(self, c: _Child) -> bool:
        """Children this agent probes: its own, reachable by unicast.

        A switch fold (and a receiver behind one, known from NACKs only)
        cannot be probed: the switch's membership ageing times those out.
        """
        return not ((self.assisted and not self.unfolded) or c.aggregated or c.nack_only or c.solo)

    def _start_probing(self, now: float) -> None:
        for c in self.children.values():
            c.last_heard = now
            c.probe_due = now + self._jittered(self.p.probe_interval)
        self._arm_probe_timer()

    def _arm_probe_timer(self) -> None:
        due = [c.probe_due for c in self.children.values()
               if c.probe_due is not None and self._probed(c) and (c.heard or c.probe_at)]
        if due:
            if self.timer_at("probe") != min(due):
                self.set_timer("probe", min(due))
        else:
            self.cancel_timer("probe")

    def _probe(self, c: _Child, now: float) -> None:
        """Section 3.3: a probe the child answers at once (an RTT sample, and a sign of life).

        p4mcc sends it as a window update from the parent (no new message
        type): a receiver answers a window update from its parent -- or
        from an ancestor adopting it -- with a window update echoing the
        probe's timestamp.
        """
        ts = ts_us(now) or 1
        c.probe_ts, c.probe_at = ts, now
        c.probe_due = now + self._answer_timeout(c)
        self.probes_sent += 1
        self.send(c.addr, MtcpWindowUpdate(session_id=self.cfg.session_id, timestamp=ts,
                                           node_id=self.nid).encode())

    def _answer_timeout(self, c: _Child) -> float:
        """How long a probe's answer may take: ``max(2 RTT, RTT + 4 RTTVAR, PROBE_ANSWER_MIN)``.

        The child answers at once (no ACK delay), so the RTO's 1 s floor, which
        guards against spurious retransmissions, is not needed here; never less
        than the path's RTT, never less than a busy host's scheduling delay.
        Before the first sample: ``initial_rto``.
        """
        r = c.rtt
        if r.srtt is None:
            return self.p.initial_rto
        return max(2 * r.srtt, r.srtt + 4 * r.rttvar, PROBE_ANSWER_MIN)

    def _heard(self, c: _Child, now: float, echo_ts: int = 0) -> None:
        """Any message from ``c`` shows it alive; the echo of the pending probe is an RTT sample."""
        c.last_heard = now
        if c.probe_ts and echo_ts == c.probe_ts:
            c.rtt.sample(now - c.probe_at)
            c.probe_ts = 0

    def _suspect(self, c: _Child, now: float) -> None:
        """``c`` owes an acknowledgement past a timeout: probe it now, not at the next period."""
        if c.aggregated or c.solo:
            self._roll_call(now)
            return
        if self._probed(c) and c.heard and c.last_heard >= c.probe_at and now - c.last_heard > self._answer_timeout(c):
            self._probe(c, now)
            self._arm_probe_timer()

    def _on_probe_timer(self, now: float) -> None:
        for c in list(self.children.values()):
            if c.probe_due is None or c.probe_due > now or not self._probed(c):
                continue
            if c.probe_at and c.last_heard < c.probe_at:  # silent since the last probe
                c.missed += 1
                if c.missed >= self.p.dead_probes:
                    self._remove_child(c, now)
                    continue
            else:
                c.missed = 0
                nxt = c.probe_at + self._jittered(self.p.probe_interval)
                if c.probe_at and nxt > now:
                    c.probe_due = nxt  # alive: the next periodic probe
                    continue
            self._probe(c, now)
        self._arm_probe_timer()
        self._arm_packet_timer()

    def _undo_cuts(self, since: float) -> None:
        """Cuts since ``since`` were a silent member's, not congestion: undo them.

        RFC 4015's response (``tcp_rules.undo_spurious_cuts``): ssthresh back
        to the window before the first of them, cwnd to what is in flight
        plus an initial window, the rest by slow start.  ``undo_slow_start``
        false: the window before comes back at once (the former rule).
        """
        self.cwnd, self.ssthresh, undone = self.cuts.undo_since(since, self.cwnd, self.ssthresh, self.twnd,
                                                                self.p.initial_cwnd, self.p.undo_slow_start)
        if undone:
            self.hold_until = 0  # an undone cut holds nothing back

    def _remove_child(self, c: _Child, now: float) -> None:
        """Dead-child timeout: stop waiting for ``c`` and adopt its children.

        Packets only ``c`` still lacked leave the buffer (they count as
        acknowledged by all).  Its own children in the tree become ours: we
        probe them at once, and a probe from an ancestor makes a receiver
        re-attach to it.  Whatever they lack that we released, we repair from
        what we have received (:meth:`_has`).
        """
        del self.children[c.nid]
        self.departed.add(c.nid)
        self.dead_children += 1
        # Cuts since it fell silent were its silence, not congestion: undo them
        # (as TCP undoes cuts that turn out spurious, RFC 4015).
        self._undo_cuts(c.last_heard)
        kids = self._acking()
        for s, b in sorted(self.buf.items()):
            b.acks = sum(1 for x in kids if x.sb.acked(s))
            if b.acks >= len(kids):
                del self.buf[s]
                self._acked_by_all(s, now)
        for g in self.tree.children_of(c.addr[0]):
            gid = node_id(g)
            if gid in self.children or g == self.me:
                continue
            o = self._child(gid, (g, self.cfg.port), now)
            self.adopted += 1
            self._probe(o, now)
        self.metric({"dead_child": c.nid, "children": len(self.children)}, "tree-repair")

    def _has(self, seq: int) -> bool:
        """Can this node send packet ``seq`` (buffered, or in the stream it holds)?"""
        return seq in self.buf

    def _next_point(self) -> int:
        """The packet after everything this agent's children all hold (nothing buffered)."""
        return self.highest_buffered + 1

    def _late_join(self, c: _Child, cum_ack: int, now: float) -> bool:
        """Bring in a child that has received nothing (``cum_ack`` 0) while the session runs.

        A receiver that joins late, or restarts with fresh state, reports
        ``cum_ack`` 0.  Packets this agent released were acknowledged by all
        the children it had then, so they are not owed to the newcomer: its
        stream begins at the oldest packet still buffered (or, for a child
        that was known before, just after what it acknowledged then, which
        its previous run delivered), and a *join* -- a NACK from the parent,
        ``cum_ack`` = the packet before that point -- tells it so.  Without
        this it NACKs from packet 1 and the tree waits for it for ever
        (p4mcc; the paper has no late joiners; docs/protocols/mtcp.md).
        """
        if cum_ack != 0 or c.aggregated:
            return False
        start = max(min(self.buf) if self.buf else self._next_point(), c.sb.cum_ack + 1)
        if start <= 1:
            return False  # the session is at its first packet: nothing to skip
        c.sb = Scoreboard()
        c.sb.update(start - 1)
        for d in (c.rinflight, c.last_tx, c.rexmits, c.nacks):
            d.clear()
        c.rqueue.clear()
        kids = self._acking()
        for s, b in sorted(self.buf.items()):
            b.acks = sum(1 for x in kids if x.sb.acked(s))
        self.late_joins += 1
        self.send(c.addr, MtcpNack(session_id=self.cfg.session_id, timestamp=ts_us(now) or 1,
                                   cum_ack=start - 1, node_id=self.nid).encode())
        self.metric({"late_join": c.nid, "start": start}, "tree-repair")
        return True

    def _roll_call(self, now: float) -> None:
        """Only the sender roll-calls the receivers behind a switch fold (:class:`MtcpSender`)."""

    def _solo(self, c: _Child, now: float) -> None:
        """``c``, known so far from its NACKs behind a fold, becomes a child that
        acknowledges by NACK (the session is unfolded: folds no longer count)."""
        c.nack_only, c.solo, c.heard = False, True, True
        c.min_cwnd, c.max_twnd, c.adv_wnd = NO_CWND, 0, self.p.rcv_buffer  # a leaf's summary
        c.last_heard = now
        kids = self._acking()
        for s, b in self.buf.items():
            b.acks = sum(1 for x in kids if x.sb.acked(s))

    # Buffering -------------------------------------------------------------------
    def _buffer(self, seq: int, sender_ts: int, size: int, now: float, repaired: bool = False) -> None:
        """Hold a packet first received (or, at the sender, first sent)."""
        if seq in self.buf or not self._acking():
            return
        acks = sum(1 for c in self._acking() if c.sb.acked(seq))
        if acks >= len(self._acking()):
            return
        if repaired:
            deadline = now + self.rto_rtt()
        else:
            age = seconds_since(sender_ts, now)  # RTD of this packet so far
            deadline = now + max(0.0, self.rto_rtd() - age)
        self.buf[seq] = _Buffered(sender_ts, size, acks, deadline)
        heapq.heappush(self._timers_heap, (deadline, seq))
        self.twnd += 1
        if seq > self.highest_buffered:
            self.highest_buffered = seq
        if self.round_end == 0:
            self.round_end, self.round_start = seq, now
        self._arm_packet_timer()

    def _arm_packet_timer(self) -> None:
        h = self._timers_heap
        while h and (h[0][1] not in self.buf or self.buf[h[0][1]].deadline != h[0][0]):
            heapq.heappop(h)
        if h:
            if self.timer_at("pkt") != h[0][0]:
                self.set_timer("pkt", h[0][0])
        else:
            self.cancel_timer("pkt")

    def _set_deadline(self, seq: int, when: float) -> None:
        b = self.buf[seq]
        b.deadline = when
        heapq.heappush(self._timers_heap, (when, seq))

    # Feedback from children ------------------------------------------------------
    def _on_feedback(self, msg: MtcpAck | MtcpWindowUpdate, src: Address, now: float) -> None:
        sack_bitmap = msg.sack_bitmap
        if msg.flags & Flags.AGGREGATED:
            if self.unfolded:
                # The session reports by NACK since it was unfolded; a fold now
                # comes from a member that missed the call: call the roll again.
                if msg.node_id not in self.departed:
                    self._roll_call(now)
                return
            # A switch's fold keeps the reporter's node_id and address, but
            # speaks for every receiver below it: one child, repaired by multicast.
            if msg.cum_ack > self.fold_reported:
                self.fold_reported, self.fold_moved_at, self.fold_stalled_at = msg.cum_ack, now, None
            self._member_acknowledges(msg.node_id, msg.cum_ack, now)
            c = self._child(FOLD_ID, self.group)
            if msg.cum_ack < c.sb.cum_ack:
                # Below what a roll call's answers showed: a member that did not
                # answer is behind (or silent). Call again; a NACK shows which.
                self._roll_call(now)
            c.aggregated = True
            # Its SACK bits (if a switch left any) are one receiver's view, not
            # the fold's: releasing on them would drop packets others still lack.
            sack_bitmap = 0
        else:
            # A child timed out as dead that reports again is back (``_child``).
            c = self._child(msg.node_id, src, now)
            c.addr = src  # repairs go where its feedback comes from (its bound port)
            self._late_join(c, msg.cum_ack, now)
        c.nack_only = False
        if c.probe_due is None:
            c.probe_due = now + self._jittered(self.p.probe_interval)
        if not c.heard:
            c.heard = True
            self._arm_probe_timer()
        self._heard(c, now, msg.echo_ts if isinstance(msg, MtcpWindowUpdate) else 0)
        c.min_cwnd, c.max_twnd, c.adv_wnd = msg.min_cwnd, msg.max_twnd, msg.adv_wnd
        self.summaries_in += 1
        if msg.echo_ts and isinstance(msg, MtcpAck):
            rtd = seconds_since(msg.echo_ts, now)
            c.rtd.sample(rtd)
            c.round_min_rtd = lowest(c.round_min_rtd, rtd)
        newly = c.sb.update_bitmap(msg.cum_ack, sack_bitmap, limit=self._ack_limit())
        self._acknowledged(c, newly, now)
        self._pump_repairs(c, now)
        self._arm_packet_timer()

    def _acknowledged(self, c: _Child, newly: list[int], now: float) -> None:
        """``c`` now holds the packets ``newly``: free its repair slots and,
        once every child holds a packet, the buffer.  Every report that moves
        a child's scoreboard goes through here (ACKs and NACKs alike): a
        cumulative ACK carried by a NACK that skipped this step would leave
        the packets' repair slots taken and their buffers held for ever.
        """
        n = len(self._acking())
        for s in newly:
            sent = c.rinflight.pop(s, None)
            if sent is not None:
                # Karn: only unambiguous samples (a packet repaired once), and
                # only from the lowest packet the report newly covers -- the one
                # whose arrival sent it.  A cumulative ACK (a fold's) that covers
                # a repair only once a lower hole is filled would time that hole
                # as well: on 1 Mb/s with four TCP flows such samples took
                # RTO_RTT to 8-11 s and held every repair back for seconds.
                if c.rexmits.get(s, 0) == 1 and s == newly[0]:
                    c.rtt.sample(now - sent)
                self._rwnd_grow(c)
            c.rqueue.discard(s)
            c.last_tx.pop(s, None)
            c.rexmits.pop(s, None)
            c.nacks.pop(s, None)
            if ack_from_one_more(self.buf, s, n):
                self._acked_by_all(s, now)

    def _on_nack(self, msg: MtcpNack, src: Address, now: float) -> None:
        c = self.children.get(msg.node_id)
        if c is None:
            # A child timed out as dead comes back as any member does (``_child``);
            # cum_ack 0: with fresh state -- a late joiner, brought in below.
            # Behind a folding switch: repair it directly, without counting it as a child.
            c = self._child(msg.node_id, src)
            c.nack_only = True
        if self.unfolded and c.nack_only:
            self._solo(c, now)  # the session is unfolded: a member's NACK makes it a child
        fold = self.children.get(FOLD_ID)
        if c.nack_only and fold is not None and msg.cum_ack < fold.sb.cum_ack:
            # The fold was taken past this member from the others' answers: it
            # gets what it lacks below that point from the stream.
            top = min(fold.sb.cum_ack, msg.cum_ack + MAX_NACK_SEQS)
            c.rqueue.update(x for x in range(msg.cum_ack + 1, top + 1) if not c.sb.acked(x))
        if self.rollcall_at is not None:
            self.rollcall_heard[msg.node_id] = msg.cum_ack
            if msg.timestamp == self.rollcall_ts:
                self._rollcall_answer(c, now)
        self._heard(c, now)
        if self._late_join(c, msg.cum_ack, now):
            c.addr = src
            self._arm_packet_timer()
            return  # what it lists lies before its stream's start
        # Every packet below its last hole that the NACK does not name has
        # arrived: a SACK.  A child unfolded from a switch reports by NACK
        # alone, and with the cumulative ACK only its repairs that arrived
        # above a still-open hole held its retransmission window full.
        blocks = nack_blocks(msg.cum_ack, msg.missing)
        if not c.nack_only:
            self._acknowledged(c, c.sb.update(msg.cum_ack, blocks, limit=self._ack_limit()), now)
        else:
            self._nack_acknowledges(c, msg.cum_ack, blocks)
        congested = repair_lost = False
        srtt = c.rtt.srtt
        if srtt is None and fold is not None and c.nack_only:
            srtt = fold.rtt.srtt  # a receiver behind a fold is timed by the fold's repairs and roll calls
        # A repair resent within this long of a NACK may still be on its way.
        window = (srtt if srtt is not None else self.p.initial_rto) + self.p.ack_delay
        if c.nack_only or c.solo:
            self._age_repairs(c, max(msg.missing, default=msg.cum_ack), now, window)
        for s in msg.missing:
            if c.sb.acked(s) or not self._has(s):
                continue  # acknowledged meanwhile, or not ours to repair (we lack it too)
            last = c.last_tx.get(s)
            if last is not None and now - last < window:
                self.suppressed_nacks += 1  # resent within its RTT: the repair is on its way
                continue
            if c.rinflight.pop(s, None) is not None:  # an older repair of it is presumed lost
                repair_lost = True
            c.nacks[s] = c.nacks.get(s, 0) + 1
            if self.p.window == "reno" and c.nacks[s] == 1 and c.rexmits.get(s, 0) == 0:
                # A new loss on the way from the sender: a congestion signal, as
                # three duplicate ACKs are to TCP (once per window: ``recover``).
                congested = congested or s > self.recover
            elif c.nacks[s] >= self.p.dup_nack_thresh:
                c.nacks[s] = 0
                congested = congested or s > self.recover
            c.rqueue.add(s)
        if congested:
            self._congestion(now, timeout=False)
        if repair_lost:
            self._repair_lost(c, now, srtt)
        self._pump_repairs(c, now, from_nack=True)
        self._arm_packet_timer()

    def _member_acknowledges(self, nid: int, fold_ack: int, now: float) -> None:
        """A fold triggered by a member the sender repairs directly (a NACK-only child).

        The switch counts the reporting port in every fold it sends, so the
        fold's cumulative ACK is at most that member's own: it acknowledges
        the member's repairs up to there, and its retransmission window moves
        on its ACKs, not only on its NACKs.  A member a restarted switch left
        out of the fold for a while is repaired this way: the others' folds
        ran past it, and with NACKs and roll calls alone its window grew once
        per second.
        """
        m = self.children.get(nid)
        if m is None or not m.nack_only or fold_ack <= m.sb.cum_ack:
            return
        self._nack_acknowledges(m, fold_ack, [])
        self._pump_repairs(m, now)

    def _nack_acknowledges(self, c: _Child, cum_ack: int, blocks: list[tuple[int, int]]) -> None:
        """A receiver behind a folding switch: its NACKs are all the sender hears of it.

        Its ACKs go into the switch's fold, so without this its repairs would
        never leave ``rinflight`` and its retransmission window would stay
        full after the first repair.  A NACK acknowledges everything up to
        ``cum_ack`` and the ``blocks`` between its holes (``nack_blocks``).
        This paces that receiver's repairs only: a NACK-only child never
        counts toward releasing a packet, and its scoreboard keeps the
        cumulative ACK alone.
        """
        c.sb.update(cum_ack, limit=self._ack_limit())
        for s in [s for s in c.rinflight if s <= cum_ack or any(lo <= s < hi for lo, hi in blocks)]:
            del c.rinflight[s]
            self._rwnd_grow(c)
            c.rqueue.discard(s)
            c.nacks.pop(s, None)

    # Windows -----------------------------------------------------------------------
    def _acked_by_all(self, s: int, now: float) -> None:
        """A packet left the subtree's pipe: twnd shrinks, cwnd grows (Vegas-style)."""
        self.twnd = max(0, self.twnd - 1)
        self.round_acked += 1
        if self.cwnd < self.ssthresh:
            if now != self.ss_event:  # one report (or timer) is one ACK for RFC 3465
                self.ss_event, self.ss_grown = now, 0
            if not self.p.abc_limit or self.ss_grown < self.p.abc_limit:
                self.cwnd += 1.0
                self.ss_grown += 1
        elif self.p.window == "reno":
            if s > self.hold_until:  # not a packet of the flight a fast-recovery cut answered
                self.cwnd += 1.0 / self.cwnd  # section 2: 1/cwnd per packet acknowledged by all
        elif self.trend:
            self.cwnd = max(1.0, self.cwnd + self.trend / self.cwnd)
            # A Vegas decrease stays in congestion avoidance: it must not
            # drop cwnd under ssthresh and so restart slow start.
            self.ssthresh = min(self.ssthresh, self.cwnd)
        if s >= self.round_end:
            self._end_round(now)

    def vegas_diff(self, now: float) -> float | None:
        """Packets queued on the worst child's path: ack rate times (RTD - base RTD)."""
        dur = now - self.round_start
        if dur <= 0 or self.round_acked == 0:
            return None
        rate = self.round_acked / dur
        diffs = [
            vegas_diff(rate, c.round_min_rtd, c.rtd.base)
            for c in self._acking()
            if c.round_min_rtd is not None and c.rtd.base is not None
        ]
        return max(diffs) if diffs else None

    def _end_round(self, now: float) -> None:
        diff = self.vegas_diff(now) if self.p.window == "vegas" else None
        if diff is not None:
            vegas = self.p.vegas
            if self.cwnd < self.ssthresh and vegas.leaves_slow_start(diff):
                self.ssthresh = self.cwnd  # Vegas leaves slow start early
            self.trend = vegas.step(diff)
        for c in self.children.values():
            c.round_min_rtd = None
        self.round_acked = 0
        self.round_start = now
        self.round_end = max(self.highest_buffered, self.round_end + 1)

    def _congestion(self, now: float, timeout: bool) -> None:
        """Timeouts (and repeated NACKs) shrink cwnd, once per window of packets."""
        self.cuts.record(now, self.cwnd, self.ssthresh)
        self.cwnd_cuts += 1
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd / 2)
        self.cwnd = 1.0 if timeout else max(1.0, self.cwnd / 2)
        self.recover = self.highest_buffered
        if timeout:
            self.twnd = 0
            self.hold_until = 0  # slow start from one packet grows on every packet (RFC 5681 3.1)
        elif self.p.recovery_hold:
            self.hold_until = self.recover

    def _rwnd_grow(self, c: _Child) -> None:
        if c.rwnd < c.rssthresh:
            c.rwnd += 1.0
        else:
            c.rwnd += 1.0 / c.rwnd

    def _age_repairs(self, c: _Child, top: int, now: float, window: float) -> None:
        """Repairs above a NACK's last hole ``top``, sent ``window`` (a round trip) or more
        before it, are out of the pipe.

        A child that reports only by NACK says nothing of the packets above
        its last hole, so a repair that went there and arrived stayed in
        ``rinflight`` until the cumulative ACK passed it, and enough of them
        held the retransmission window shut while the NACK's own holes
        waited.  RFC 6675's pipe counts a segment only while it may still be
        in the network: a report sent more than a round trip after the
        repair was sent shows it has arrived or been lost.  A lost one at
        the tail is the packet timer's, as TCP's tail loss is its RTO's.
        """
        for s in [s for s, sent in c.rinflight.items() if s > top and now - sent >= window]:
            del c.rinflight[s]

    def _repair_lost(self, c: _Child, now: float, srtt: float | None) -> None:
        """A NACK named a repair sent more than an RTT ago: it was lost.

        The retransmission window is TCP's (section 3.6), and a lost
        retransmission is a new congestion signal to TCP (RFC 5681 halves
        its window on the loss; RFC 8985 detects a lost retransmission as
        any other loss).  Without the cut, a window grown in slow start
        (``rssthresh`` starts at ``initial_ssthresh``) kept sending its
        whole size in repairs into a short queue: a child unfolded from a
        restarted switch got bursts of 30-50 repairs through a 10-packet
        queue, lost most of each and waited a backed-off timer every round.
        Halved at most once per round trip, as TCP cuts once per window.
        """
        if now - c.rcut_at < (srtt if srtt is not None else self.p.initial_rto):
            return
        c.rcut_at = now
        c.rssthresh = max(1.0, c.rwnd / 2)
        c.rwnd = c.rssthresh

    # Repairs ------------------------------------------------------------------------
    def _pump_repairs(self, c: _Child, now: float, from_nack: bool = False) -> None:
        """Send queued repairs to ``c`` while its retransmission window allows."""
        for s in sorted(c.rqueue):
            if len(c.rinflight) >= int(c.rwnd):
                break
            c.rqueue.discard(s)
            b = self.buf.get(s)
            if c.sb.acked(s) or not self._has(s):
                continue
            self._repair(c, s, b, now)
            if from_nack:
                self.nack_rexmits += 1
            else:
                self.timer_rexmits += 1

    def _repair(self, c: _Child, s: int, b: _Buffered | None, now: float) -> None:
        """Resend ``s`` to ``c``; ``b is None``: from the stream (an adopted orphan's gap)."""
        data = MtcpData(
            session_id=self.cfg.session_id,
            seq=s,
            timestamp=b.sender_ts if b is not None else (ts_us(now) or 1),
            flags=Flags.RETRANSMIT,
            payload=payload_for(s, b.size if b is not None else self.p.packet_size),
        ).encode()
        fold = self.children.get(FOLD_ID) if c.nack_only else None
        if fold is not None:
            # Behind a folding switch a bottleneck loss is every member's: the
            # first NACK's repair goes to the group, and the others' NACKs
            # within the fold's RTT find it on its way (one copy crosses the
            # bottleneck, not one per member).
            rtt = fold.rtt.srtt if fold.rtt.srtt is not None else c.rtt.srtt
            last = fold.last_tx.get(s)
            if last is not None and now - last < (rtt if rtt is not None else self.p.initial_rto) + self.p.ack_delay:
                self.suppressed_nacks += 1
                c.rinflight[s] = c.last_tx[s] = last
                c.rexmits[s] = c.rexmits.get(s, 0) + 1
                c.rqueue.discard(s)
                return
            fold.last_tx[s] = now
            # The fold's own timer repair of s (if any) is now ambiguous (Karn).
            fold.rexmits[s] = fold.rexmits.get(s, 0) + 1
        also = self._also_lacking(c, s, now)
        self.send(self.group if c.aggregated or also or fold is not None else c.addr, data)
        if also or fold is not None:
            self.mcast_repairs += 1
        for x in [c, *also]:
            x.rinflight[s] = now
            x.last_tx[s] = now
            x.rexmits[s] = x.rexmits.get(s, 0) + 1
            x.rqueue.discard(s)
        if b is None:
            self.stream_repairs += 1
            return  # no timer: a lost one is NACKed again
        b.stage = max(b.stage, 1)
        self._set_deadline(s, now + self.rto_rtt() * 2 ** (b.stage - 1))

    def _also_lacking(self, c: _Child, s: int, now: float) -> list[_Child]:
        """Other children a repair of ``s`` to ``c`` should reach (an SA: none; it repairs by unicast)."""
        return []

    def _on_packet_timer(self, now: float) -> None:
        """Section 3.4: an expired timer is a timeout -- repair, back off, shrink cwnd."""
        due = []
        h = self._timers_heap
        while h and h[0][0] <= now:
            when, s = heapq.heappop(h)
            b = self.buf.get(s)
            if b is not None and b.deadline == when and s not in due:
                due.append(s)
        cut = False
        rto_rtt = self.rto_rtt()
        for s in sorted(due):
            b = self.buf[s]
            lacking = [c for c in self._acking() if not c.sb.acked(s)]
            for c in lacking:
                self._suspect(c, now)
            if lacking and all(s in c.rqueue or now - c.rinflight.get(s, -1e9) < rto_rtt for c in lacking):
                # Its repair waits for a retransmission window or is on its way
                # (sent within RTO_RTT): pacing, not a loss -- check again later
                # (as TCP restarts its timer while recovery makes progress, RFC 6298 5.3).
                self.deferred_timeouts += 1
                self._set_deadline(s, now + rto_rtt)
                continue
            self.timeouts += 1
            if s > self.recover:
                cut = True
            for c in self._acking():
                if c.sb.acked(s):
                    continue
                if c.rinflight.pop(s, None) is not None:
                    # A repair was lost: the retransmission window restarts (as cwnd would).
                    c.rssthresh = max(1.0, c.rwnd / 2)
                    c.rwnd = 1.0
                c.rqueue.add(s)
            b.stage += 1
            self._set_deadline(s, now + self.rto_rtt() * 2 ** (b.stage - 1))
        if cut:
            self._congestion(now, timeout=True)
        for c in self._acking():
            self._pump_repairs(c, now)
        self._arm_packet_timer()

    def _summary_fields(self) -> dict[str, int]:
        mc, mt, adv = self.summary()
        return {"min_cwnd": min(mc, NO_CWND), "max_twnd": min(mt, NO_CWND), "adv_wnd": adv}


class MtcpSender(SendGate, _Agent, role="mtcp-sender"):
    """The root of the tree: multicasts data under the tree's summaries."""

    def _ack_limit(self) -> int:
        return self.next_seq - 1

    def _has(self, seq: int) -> bool:
        # The sender holds the application's whole stream (payload_for regenerates it).
        return 1 <= seq < self.next_seq

    def _next_point(self) -> int:
        return self.next_seq

    def _also_lacking(self, c: _Child, s: int, now: float) -> list[_Child]:
        """Children that lack ``s`` too: then the sender repairs by multicast, once.

        A p4mcc deviation (the paper repairs by unicast only): a packet lost
        at a bottleneck shared by many children would otherwise cross it once
        per child.  A child lacks ``s`` if it acknowledged a later packet but
        not ``s``, and it was not sent ``s`` within its RTT.  Only the sender
        does this; the multicast reaches the group as the original did.
        Children that never acknowledged a packet above ``s`` are repaired by
        unicast: nothing shows that multicast reaches them.
        """
        out: list[_Child] = []
        if c.aggregated or c.sb.highest <= s:
            return out  # no sign that multicast reaches c: unicast, as the paper does
        for x in self._acking():
            if x is c or x.aggregated or x.sb.acked(s) or x.sb.highest <= s:
                continue
            last = x.last_tx.get(s)
            rtt = x.rtt.srtt if x.rtt.srtt is not None else self.p.initial_rto
            if last is not None and now - last < rtt:
                continue
            out.append(x)
        return out

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.next_seq = 1
        self.sent_ts: dict[int, int] = {}

    # Roll calls: a fold held by a silent member (docs/protocols/mtcp.md, "Faults") ---------
    def _rollcall_wait(self) -> float:
        """How long the answers to a roll call may take: the probe answer wait of
        the fold (or of the children that report by NACK), ``initial_rto`` before a sample."""
        kids = [c for c in self.children.values() if (c.aggregated or c.solo) and c.rtt.srtt is not None]
        return max((self._answer_timeout(c) for c in kids), default=self.p.initial_rto)

    def _roll_call(self, now: float) -> None:
        """Ask every member of the group to answer by NACK, which no switch folds.

        A probe (a window update from the sender) sent to the group, with
        ``cum_ack`` set (to the packet the sender waits for, at least 1):
        plain probes carry 0.  A receiver whose parent is the sender answers
        it by NACK; once the session is unfolded the call carries
        ``adv_wnd = 1`` and the receiver reports by NACK only from then on.
        At most one roll call is out at a time.
        """
        if self.rollcall_at is not None or self.done:
            return
        fold = self.children.get(FOLD_ID)
        self.rollcall_fold = fold.sb.cum_ack if fold is not None else None
        self.rollcall_at = now
        self.rollcall_heard = {}
        self.rollcalls += 1
        waiting = min(self.buf, default=self.next_seq)
        self.rollcall_ts = ts_us(now) or 1
        self.send(self.group, MtcpWindowUpdate(session_id=self.cfg.session_id, timestamp=self.rollcall_ts,
                                               node_id=self.nid, cum_ack=max(1, waiting),
                                               adv_wnd=int(self.unfolded)).encode())
        self.set_timer("rollcall", now + self._rollcall_wait())

    def _rollcall_answer(self, c: _Child, now: float) -> None:
        """An answer echoes the call's timestamp: an RTT sample (of the fold, for a
        member behind it), and the wait for the other answers shrinks to match."""
        if self.rollcall_at is None:
            return
        target = self.children.get(FOLD_ID) if c.nack_only else c
        if target is None:
            return
        target.rtt.sample(now - self.rollcall_at)
        close = self.rollcall_at + self._rollcall_wait()
        if close < (self.timer_at("rollcall") or float("inf")):
            self.set_timer("rollcall", max(now, close))

    def _on_rollcall_timer(self, now: float) -> None:
        """The answers are in: unfold a stalled fold, or time out silent NACK-reporting children."""
        at, heard = self.rollcall_at, self.rollcall_heard
        self.rollcall_at, self.rollcall_heard = None, {}
        if at is None:
            return
        fold = self.children.get(FOLD_ID)
        if fold is not None and not self.unfolded:
            stuck = fold.sb.cum_ack
            heard = {n: cum for n, cum in heard.items() if n in self.children and self.children[n].nack_only}
            # Every member that answered holds the packet the fold still lacks, and
            # the fold has not moved since the call.
            if (heard and self.fold_moved_at < at and stuck == self.rollcall_fold
                    and all(cum > stuck for cum in heard.values()) and stuck + 1 in self.buf):
                if self.fold_stalled_at == self.fold_reported:
                    self._unfold(fold, heard, now)  # frozen across two calls: a silent member holds it
                else:
                    # The first time: the fold's last message may just have been lost
                    # (the switch sends an unchanged fold only once). Take the answers.
                    self.fold_stalled_at = self.fold_reported
                    self._undo_cuts(self.fold_moved_at)
                    low = min(heard.values())
                    for x in [x for x in fold.rinflight if x <= low]:
                        del fold.rinflight[x]  # not an RTT sample: the answers came from the call
                    self._acknowledged(fold, fold.sb.update(low, limit=self._ack_limit()), now)
            return
        again = False
        for c in [c for c in self.children.values() if c.solo]:
            if c.last_heard >= at:
                c.missed = 0
                continue
            c.missed += 1
            if c.missed >= self.p.dead_probes:
                self._remove_child(c, now)
            else:
                again = True
        if again:
            self._roll_call(now)
        self._arm_packet_timer()

    def _unfold(self, fold: _Child, heard: dict[int, int], now: float) -> None:
        """Stop counting on the switch's fold: the members that answered become
        children that acknowledge by NACK; the silent one is left out."""
        del self.children[FOLD_ID]
        self.unfolded = True
        self.unfolds += 1
        for nid in heard:
            c = self.children.get(nid)
            if c is not None and c.nack_only:
                self._solo(c, now)
        # Cuts since the fold stalled were the silent member's, not congestion (RFC 4015).
        self._undo_cuts(self.fold_moved_at)
        kids = self._acking()
        for s, b in sorted(self.buf.items()):
            if b.acks >= len(kids):
                del self.buf[s]
                self._acked_by_all(s, now)
        self.metric({"unfolded": 1, "children": len(kids)}, "tree-repair")
        self._roll_call(now)  # tells the members to report by NACK from now on

    def _ready(self) -> bool:
        kids = self._acking()
        if self.assisted:
            # Folds hide how many receivers there are: one heard summary suffices.
            return any(c.heard for c in kids)
        want = len(self.tree.children_of(self.me)) or self.p.receivers
        return bool(kids) and len(kids) >= max(1, want) and all(c.heard for c in kids)

    def current_window(self) -> int:
        """Section 3.7: ``minCwnd - maxTwnd``, bounded by the advertised window.

        A snapshot: the sender computes it when feedback (or a timer) arrives
        and sends at most that many new packets until the next one -- the
        paper's "amount no more than the current window".  Recomputing it
        after every packet would let the sender's own twnd hide a child's
        larger one.
        """
        min_cwnd, max_twnd, adv = self.summary()
        win = min_cwnd - max_twnd
        lowest = min((c.sb.cum_ack for c in self._acking()), default=0)
        room = lowest + adv - (self.next_seq - 1)
        return min(win, room)

    def on_start(self, now: float) -> None:
        self._start_probing(now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if msg is None:
            return
        if isinstance(msg, (MtcpAck, MtcpWindowUpdate)):
            self._on_feedback(msg, src, now)
        elif isinstance(msg, MtcpNack):
            self._on_nack(msg, src, now)
        else:
            return
        self._pump(now)

    def on_timer(self, name: str, now: float) -> None:
        handlers = {"pkt": self._on_packet_timer, "probe": self._on_probe_timer, "rollcall": self._on_rollcall_timer}
        handler = handlers.get(name)
        if handler is None or (name == "probe" and self.done):
            return
        handler(now)
        self._pump(now)

    def _pump(self, now: float) -> None:
        if not self._may_send(now):
            return
        allowance = self.current_window()
        while allowance >= 1:
            if self.p.total_packets and self.next_seq > self.p.total_packets:
                break
            allowance -= 1
            s = self.next_seq
            self.next_seq += 1
            ts = ts_us(now)
            self.send(self.group, MtcpData(
                session_id=self.cfg.session_id, seq=s, timestamp=ts,
                payload=payload_for(s, self.p.packet_size)).encode())
            self._buffer(s, ts, self.p.packet_size, now)
        if self.p.total_packets and self.next_seq > self.p.total_packets and not self.buf:
            self.metric(self.metrics(now)[0], "done")  # the last record: none once done
            self.done = True
            self.cancel_timer("pkt")

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        if self.done:
            return None
        mc, mt, adv = self.summary()
        return (
            {
                "cwnd": self.cwnd,
                "twnd": self.twnd,
                "min_cwnd": mc,
                "max_twnd": mt,
                "adv_wnd": adv,
                "packets_sent": self.next_seq - 1,
                "timeouts": self.timeouts,
                "summaries_in": self.summaries_in,
                "dead_children": self.dead_children,
                "readmitted": self.readmitted,
                "rtt_s": max((c.rtd.srtt or 0.0) for c in self._acking()) if self._acking() else 0.0,
            },
            "slowstart" if self.cwnd < self.ssthresh else "steady",
        )


class MtcpReceiver(_Agent, role="mtcp-receiver"):
    """A receiver; with children in the tree it is also a sender's agent."""

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        parent = self.tree.parent_of(self.me) or config.sender
        self.parent: Address = (parent, config.port)
        self.rbuf = ReceiveBuffer(self.p.rcv_buffer)
        self.echo_ts = 0
        self.echo_at = 0.0
        self.wupdate_period = self.p.wupdate_initial
        self.ancestors: set[str] = set()
        a = self.tree.parent_of(self.me)
        while a is not None:
            self.ancestors.add(a)
            a = self.tree.parent_of(a)
        self.ancestors.add(config.sender)
        self.reattached = 0
        self.late_joined = 0  # where our stream began, if we joined a running session
        self.got_data = False
        self.corrupt = 0
        self.acks_sent = 0
        self.nacks_sent = 0
        self.wupdates_sent = 0
        self.last_summary: dict[str, int] = {}
        #: Reports by NACK only (which no switch folds) since the sender's roll call.
        self.solo = False
        #: Holes NACKed: seq -> (time of the last NACK, NACKed once only).
        self.nacked: dict[int, tuple[float, bool]] = {}
        self.nack_rtt: float | None = None  # smoothed NACK-to-repair time
        self.last_nack_at = float("-inf")
        self.nacks_held = 0
        self.unacked = 0  # new packets since our last ACK (``ack_every``)
        self.hole_at: dict[int, float] = {}  # hole -> when a packet above it first arrived (``nack_rack``)

    def _ack_limit(self) -> int:
        return max(self.highest_buffered, self.rbuf.highest) + self.p.rcv_buffer

    def _has(self, seq: int) -> bool:
        # What this receiver got (its application holds it; payload_for regenerates it).
        return seq in self.buf or self.rbuf.has(seq)

    def _next_point(self) -> int:
        return self.rbuf.cum_ack + 1

    @property
    def is_agent(self) -> bool:
        return bool(self._acking())

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        # The first hello goes within half a period: receivers that start together
        # would otherwise hit the parent's queue in one burst (and with it the
        # group join the switch forwards upstream).
        self.set_timer("wupdate", now + self.rng.uniform(0.0, 0.5 * self.wupdate_period))
        self._start_probing(now)

    def _ack_wait(self) -> float:
        """The ACK delay, jittered by ``TIMER_JITTER`` (p4mcc).

        Receivers behind one bottleneck get each packet at the same moment;
        with a fixed delay all their ACKs and NACKs reached the switch in
        the same microsecond, and a 10-packet reverse queue dropped all but
        ten of them, the fold's ACK among them (32 receivers: 1,937 of
        4,614 reverse packets dropped in 20 s, the session at 0.11 of TCP).
        The echo carries the holding time, so the parent's RTD is unchanged.
        """
        return self.p.ack_delay * (1.0 + TIMER_JITTER * (2.0 * self.rng.random() - 1.0))

    def _arm_wupdate(self, now: float) -> None:
        """Next window update (hello before data) one jittered period from now."""
        spread = 1.0 + TIMER_JITTER * (2.0 * self.rng.random() - 1.0)
        self.set_timer("wupdate", now + self.wupdate_period * spread)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if msg is None:
            return
        if isinstance(msg, MtcpData):
            self._on_data(msg, now)
        elif isinstance(msg, (MtcpAck, MtcpWindowUpdate, MtcpNack)):
            if isinstance(msg, MtcpWindowUpdate) and msg.node_id not in self.children:
                if msg.node_id not in self.departed:
                    self._on_probe(msg, src, now)
                    return
            elif (isinstance(msg, MtcpNack) and src[0] == self.parent[0]
                    and msg.node_id == node_id(src[0]) and msg.node_id not in self.children):
                self._on_join(msg, now)
                return
            elif msg.node_id not in self.children:
                return  # only our children in the tree report to us
            if isinstance(msg, MtcpNack):
                self._on_nack(msg, src, now)
            else:
                self._on_feedback(msg, src, now)
                # Section 3.9: ACKs wait so an agent can fold its children's
                # reports in; a changed summary goes up in the next ACK round.
                if self._summary_fields() != self.last_summary and self.timer_at("ack") is None:
                    self.set_timer("ack", now + self._ack_wait())

    def _on_probe(self, msg: MtcpWindowUpdate, src: Address, now: float) -> None:
        """A probe from our parent, or from an ancestor adopting us: answer at once.

        An ancestor probes us when it timed our parent out as dead (tree
        repair): from then on we report to it.  Probes from anyone else are
        ignored.
        """
        if src[0] != self.parent[0] and src[0] not in self.ancestors:
            return
        if msg.node_id != node_id(src[0]):
            return
        if msg.cum_ack and not msg.flags & Flags.AGGREGATED:
            # A roll call (a probe to the group, cum_ack set): the sender's fold is
            # stalled. Only the sender's own children answer, by NACK (never folded);
            # adv_wnd 1: the session is unfolded, report by NACK from now on.
            # (A unicast probe that crossed a folding switch carries the fold's
            # fields and the AGGREGATED flag: it is a plain probe.)
            if src[0] != self.parent[0] or src[0] != self.cfg.sender:
                return
            self.solo = self.solo or bool(msg.adv_wnd)
            self._nack(self.rbuf.missing(MAX_NACK_SEQS), now, echo=msg.timestamp)
            return
        if src[0] != self.parent[0]:
            self.parent = (src[0], self.cfg.port)
            self.reattached += 1
            self.metric({"parent": msg.node_id}, "reattached")
        self._feedback(MtcpWindowUpdate, now, echo=msg.timestamp)
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        if missing and self.reattached and not self.solo:
            self._nack(missing, now)

    def _on_join(self, msg: MtcpNack, now: float) -> None:
        """Our parent's join (:meth:`_Agent._late_join`): our stream starts after ``cum_ack``.

        Only a receiver that has delivered nothing takes it: one that has
        delivered data owes its application every later packet.
        """
        if self.rbuf.delivered_packets or msg.cum_ack == 0:
            return
        for d in self.rbuf.start_at(msg.cum_ack + 1):
            self.emit(d)
        self.late_joined = msg.cum_ack + 1
        self.metric({"start": msg.cum_ack + 1}, "late-join")
        if self.timer_at("ack") is None:
            self.set_timer("ack", now + self._ack_wait())

    def _on_data(self, m: MtcpData, now: float) -> None:
        if m.seq < 1:
            return
        if m.seq > MAX_SEQ:
            self.malformed += 1
            return
        if m.payload != payload_for(m.seq, len(m.payload)):
            self.corrupt += 1
            return
        in_order = m.seq == self.rbuf.cum_ack + 1 and self.rbuf.highest <= self.rbuf.cum_ack
        new, delivered = self.rbuf.add(m.seq, len(m.payload))
        for d in delivered:
            self.emit(d)
        if not new:
            return
        self.hole_at.pop(m.seq, None)
        if self.p.nack_rack and self.p.nack_dupthresh > 1 and m.seq > self.rbuf.cum_ack:
            fresh = [s for s in self.rbuf.missing(MAX_NACK_SEQS) if s not in self.hole_at]
            for s in fresh:
                self.hole_at[s] = now
            if fresh and self.timer_at("nack") is None:
                self.set_timer("nack", now + self._reo_wnd() + 1e-9)
        hole = self.nacked.pop(m.seq, None)
        if hole is not None and hole[1]:  # NACKed once: the time to its repair is unambiguous
            x = now - hole[0]
            self.nack_rtt = x if self.nack_rtt is None else 0.875 * self.nack_rtt + 0.125 * x
        if len(self.nacked) > 4 * MAX_NACK_SEQS:
            self.nacked = {s: v for s, v in self.nacked.items() if not self.rbuf.has(s)}
        self.got_data = True
        retransmitted = bool(m.flags & Flags.RETRANSMIT)
        if not retransmitted:
            # Echo the send time of the last original transmission (a repair's
            # old stamp would inflate the parent's RTD).
            self.echo_ts, self.echo_at = m.timestamp, now
            self.wupdate_period = self.p.wupdate_initial  # reset on a new packet from the sender
            self._arm_wupdate(now)
        if self.is_agent:
            self._buffer(m.seq, m.timestamp, len(m.payload), now, repaired=retransmitted)
            for c in self._acking():
                if m.seq in c.rqueue:
                    self._pump_repairs(c, now)
        self.unacked += 1
        if self.p.ack_every and not self.is_agent and ack_at_once(self.unacked, not in_order, self.p.ack_every):
            # RFC 5681 4.2: a leaf ACKs every second full-sized packet, and at
            # once one out of order or filling a hole (TCP's receiver). An
            # agent's ACK waits ``ack_delay`` to fold its children's reports in
            # (section 3.1).
            self.cancel_timer("ack")
            self._ack(now)
        elif self.timer_at("ack") is None:
            self.set_timer("ack", now + self._ack_wait())

    def _ack(self, now: float) -> None:
        """The ACK (and, when due, the NACK) to the parent."""
        self.unacked = 0
        self._feedback(MtcpAck, now)
        self._nack_what_is_due(now)

    def _nack_what_is_due(self, now: float) -> list[int]:
        """NACK the holes that are ripe (``_nack_due``); the holes, ripe or not."""
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        due = self._nack_due(missing, now) if missing and not self.solo else []
        if due:
            self._nack(due, now)
        return missing

    def _reo_wnd(self) -> float:
        """RFC 8985's reordering window: a quarter of the round trip (here the
        NACK-to-repair time, which this receiver measures); ``ack_delay`` before a sample."""
        return self.p.ack_delay if self.nack_rtt is None else self.nack_rtt / 4

    def _holdoff(self) -> float:
        """How long a NACKed hole's repair may take before it is overdue: twice the
        NACK-to-repair time (``NACK_HOLDOFF_INITIAL`` before a sample)."""
        return NACK_HOLDOFF_INITIAL if self.nack_rtt is None else NACK_HOLDOFF_RTTS * self.nack_rtt

    def _solo_renack(self, now: float) -> None:
        """A receiver reporting by NACK alone names its holes again once their repair is overdue.

        Its reports ride on data: one per second packet (``ack_every``).  A
        hole the sender's window waits for stops the data, and the sender
        suppresses a NACK within a round trip of its repair, so a lost
        repair was asked for again only by the next window update (0.5 s
        and more, section 3.9): after an unfold, 1 % of the packets waited
        0.6-0.8 s to be acknowledged by all and the session ran at 60 % of
        its folded rate.  A tree's receiver re-NACKs after the same holdoff
        (``_nack_due``); TCP's receiver keeps sending duplicate ACKs only
        while data arrives, but TCP's sender then has its own timer.
        """
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        if not missing:
            return
        due = self.last_nack_at + self._holdoff()
        if now >= due - 1e-9:
            self._nack(missing, now)
        else:
            self.set_timer("nack", due)

    def on_timer(self, name: str, now: float) -> None:
        if name == "nack" and self.solo:
            self._solo_renack(now)
        elif name == "nack":
            self.hole_at = {s: t for s, t in self.hole_at.items() if not self.rbuf.has(s)}
            missing = self._nack_what_is_due(now)
            wait = [self.hole_at[s] for s in missing if s in self.hole_at and s not in self.nacked]
            if wait:
                reo = self._reo_wnd()
                at = min(wait) + reo + 1e-9
                self.set_timer("nack", at if at > now else now + reo)
        elif name == "ack":
            self._ack(now)
        elif name == "wupdate":
            # Section 3.9: no summary sent within the period -- send one anyway.
            self._feedback(MtcpWindowUpdate, now)
            if self.got_data:  # before any data it is a hello: repeat it at the first period
                self.wupdate_period += self.p.wupdate_step
            self._arm_wupdate(now)
        elif name == "pkt":
            self._on_packet_timer(now)
        elif name == "probe":
            before = self._summary_fields()
            self._on_probe_timer(now)
            if self._summary_fields() != before and self.timer_at("ack") is None:
                self.set_timer("ack", now + self._ack_wait())

    def _nack_due(self, missing: list[int], now: float) -> list[int]:
        """The holes to NACK now (none: no NACK): ``missing`` up to the last hole
        that is new with ``nack_dupthresh`` packets above it, or whose last NACK's
        repair is overdue.

        The ACK timer fires after every data packet, and a NACK with each
        while a hole stays open sent a window of NACKs per loss per receiver
        (32 receivers behind one fold: 32 per packet) into the reverse
        path's queue, where they crowded out the fold's ACKs and the
        session stalled on timeouts.  In a switch-assisted session (every
        receiver NACKs the sender directly) a hole is NACKed when found and
        again only when its repair is overdue (p4mcc; docs/protocols/mtcp.md).
        In a tree an SA's child NACKs with every ACK: there the holdoff
        slowed the repairs down a chain of agents.
        A new hole is NACKed only once ``nack_dupthresh`` packets above it
        arrived, as TCP fast-retransmits only on three duplicate ACKs: with
        fewer (windows of a few packets) the parent's packet timer repairs it
        and cuts cwnd to 1, TCP's retransmission timeout.  Every NACK lists
        every hole below its last one (a NACK acknowledges what it does not
        list below its last hole); holes with fewer packets above them are the
        highest ones, so they are left off the end.
        """
        if self.p.nack_dupthresh > 1:
            reo = self._reo_wnd()
            ripe = [s for s in missing if s in self.nacked
                    or self.rbuf.received_above(s) >= self.p.nack_dupthresh
                    or (self.p.nack_rack and now - self.hole_at.get(s, now) >= reo)]
            if not ripe:
                return []
            missing = missing[:missing.index(ripe[-1]) + 1]
        if not (self.p.nack_holdoff and self.assisted):
            return missing
        wait = self._holdoff()
        if any(now - self.nacked[s][0] >= wait if s in self.nacked else True for s in missing):
            return missing
        self.nacks_held += 1
        return []

    def _nack(self, missing: list[int], now: float, echo: int = 0) -> None:
        """NACK to the parent; ``echo``: the answer to a roll call carries the call's
        timestamp instead of our clock (the sender takes it as an RTT sample)."""
        self.nacks_sent += 1
        self.last_nack_at = now
        for s in missing:
            self.nacked[s] = (now, s not in self.nacked)
        if self.solo and missing and self.timer_at("nack") is None:
            # Armed once; on firing it re-arms for the last NACK's holdoff (_solo_renack).
            self.set_timer("nack", now + self._holdoff())
        self.send(self.parent, MtcpNack(
            session_id=self.cfg.session_id, timestamp=echo or ts_us(now), cum_ack=self.rbuf.cum_ack,
            node_id=self.nid, missing=tuple(missing)).encode())

    def _feedback(self, cls: type[MtcpAck] | type[MtcpWindowUpdate], now: float, echo: int = 0) -> None:
        """Report to the parent; ``echo`` set: the answer to a probe (echoes its timestamp).

        After a roll call (``solo``) every report is a NACK, which carries the
        cumulative ACK and the holes but no summary: a leaf behind a switch
        has none to give.
        """
        if self.solo:
            if cls is MtcpAck and self.timer_at("wupdate") is not None:
                self._arm_wupdate(now)
            self._nack(self.rbuf.missing(MAX_NACK_SEQS), now)
            return
        if echo:
            pass
        elif self.echo_ts:
            hold = int(round((now - self.echo_at) * 1e6))
            echo = (self.echo_ts + hold) & 0xFFFFFFFF or 1
        fields = self._summary_fields()
        self.last_summary = dict(fields)
        fields["adv_wnd"] = min(fields["adv_wnd"], self.rbuf.free)
        msg = cls(
            session_id=self.cfg.session_id,
            timestamp=ts_us(now),
            cum_ack=self.rbuf.cum_ack,
            node_id=self.nid,
            echo_ts=echo,
            sack_bitmap=self.rbuf.sack_bitmap(),
            **fields,
        )
        if cls is MtcpAck:
            self.acks_sent += 1
            if self.timer_at("wupdate") is not None:
                self._arm_wupdate(now)
        else:
            self.wupdates_sent += 1
        self.send(self.parent, msg.encode())
