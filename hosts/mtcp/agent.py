"""MTCP's paper core (Rhee, Balaguru, Rouskas, Computer Networks 38, 2002): what the sender and
every sender's agent (SA) share.  Section numbers are the paper's; RFC 6298 and RFC 5681 fill in
where it points to TCP.  The methods marked ``@hook`` are what :mod:`.rules` may override; the fold
and child-removal paths are p4mcc's (``docs/protocols/mtcp.md``); when a child is dead, and the
roll call of the members behind a stalled fold, are rules'.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

from p4mcc.hosts.core import Address, node_id
from p4mcc.hosts.mtcp import tree as mtcp_tree
from p4mcc.hosts.mtcp.constants import (ACK_DELAY, DUP_NACKS, FOLD_ID, INITIAL_CWND, INITIAL_RWND, INITIAL_SSTHRESH,
                                        NO_CWND, PROBE_ANSWER_MIN, PROBE_INTERVAL, RTO_INITIAL, RTO_MIN)
from p4mcc.hosts.mtcp.params import MtcpParams
from p4mcc.hosts.registry import ParamError, SessionConfig, SessionEndpoint
from p4mcc.hosts.reliable import Scoreboard, ack_from_one_more, nack_blocks, payload_for
from p4mcc.hosts.rtt import SmoothedRtt, lowest
from p4mcc.hosts.rules import hook, slot
from p4mcc.hosts.tcp_rules import LEAST_SSTHRESH, VEGAS, vegas_diff
from p4mcc.hosts.wire import MAX_NACK_SEQS, Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, seconds_since, ts_us


@dataclass
class _Child:
    """An SA's state for one child (a receiver, an SA, or a folded switch summary)."""

    nid: int
    addr: Address
    #: RTO_RTD (3.2, 3.4): unsynchronised clocks make RTDs relative, so no floor.
    rtd: SmoothedRtt = field(default_factory=lambda: SmoothedRtt(
        min_rto=-math.inf, max_rto=math.inf, granularity=RTO_MIN, relative=True, incremental=True))
    #: RTO_RTT (3.4): RFC 6298 on SA-child round trips.
    rtt: SmoothedRtt = field(default_factory=lambda: SmoothedRtt(initial_rto=RTO_INITIAL, min_rto=RTO_MIN))
    sb: Scoreboard = field(default_factory=Scoreboard)
    heard: bool = False
    aggregated: bool = False
    nack_only: bool = False  # known only from NACKs (behind a folding switch)
    min_cwnd: int = NO_CWND
    max_twnd: int = 0
    adv_wnd: int = 0
    round_min_rtd: float | None = None
    # Retransmission window (3.6): initial 1, TCP-like growth, never reset when idle.
    rwnd: float = INITIAL_RWND
    rssthresh: float = INITIAL_SSTHRESH
    rinflight: dict[int, float] = field(default_factory=dict)
    rqueue: set[int] = field(default_factory=set)
    last_tx: dict[int, float] = field(default_factory=dict)
    rexmits: dict[int, int] = field(default_factory=dict)
    nacks: dict[int, int] = field(default_factory=dict)
    # Liveness (3.3's probes).
    last_heard: float = 0.0
    probe_ts: int = 0  # wire timestamp of the probe awaiting an answer (0: none)
    probe_at: float = 0.0
    probe_due: float | None = None

    def sent_repair(self, s: int, at: float) -> None:
        self.rinflight[s] = self.last_tx[s] = at
        self.rexmits[s] = self.rexmits.get(s, 0) + 1
        self.rqueue.discard(s)


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

    #: Packets in cwnd when slow start begins (3.1); a rule may start higher.
    initial_window: int = INITIAL_CWND
    COUNTERS = ("timeouts", "nack_rexmits", "timer_rexmits", "suppressed_nacks", "cwnd_cuts", "summaries_in",
                "dead_children", "adopted", "mcast_repairs", "readmitted", "forged")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = config.local
        self.nid = node_id(config.local)
        self.group: Address = (config.group, config.port)
        #: The switches fold this session's summaries (flat tree only).
        self.assisted = self.p.assisted if self.p.assisted is not None else (config.assisted and not self.p.tree)
        try:
            self.tree = mtcp_tree.parse(self.p.tree, config.sender, self.p.k)
        except mtcp_tree.TreeError as e:
            raise ParamError(f"MtcpParams.tree: {e} (the sender is {config.sender})") from None
        self.children: dict[int, _Child] = {}
        self.buf: dict[int, _Buffered] = {}
        self.departed: set[int] = set()  # timed out as dead; a later report readmits one (_child)
        self.rng = random.Random((config.seed << 32) ^ self.nid)  # per node: reproducible, not in step
        for c in self.tree.children_of(self.me):
            self._child(node_id(c), (c, config.port))
        self._timers_heap: list[tuple[float, int]] = []
        self.cwnd = float(self.initial_window)
        self.ssthresh = INITIAL_SSTHRESH
        self.twnd = 0
        self.recover = 0  # cwnd reacts once per window: losses at or below this are old news
        self.trend = 1  # Vegas decision of the last round: +1, 0, -1 packet per round
        self.round_end = 0
        self.round_start = 0.0
        self.round_acked = 0
        self.highest_buffered = 0

    # Children ------------------------------------------------------------------
    @hook
    def _child(self, nid: int, addr: Address, now: float | None = None) -> _Child:
        c = self.children.get(nid)
        if c is None:
            c = self.children[nid] = _Child(nid, addr)
            if nid in self.departed:  # it reports again, so it lives: a child again, owed what it lacks
                self.departed.discard(nid)
                self.readmitted += 1
            if now is not None:
                c.last_heard = now
                c.probe_due = now + self._jitter(PROBE_INTERVAL)
            self._recount()
        return c

    def _recount(self, now: float | None = None) -> None:
        """Recount each buffered packet's acknowledgers; with ``now``, release what all hold."""
        kids = self._acking()
        for s, b in sorted(self.buf.items()):
            b.acks = sum(1 for x in kids if x.sb.acked(s))
            if now is not None and b.acks >= len(kids):
                del self.buf[s]
                self._acked_by_all(s, now)

    def _acking(self) -> list[_Child]:
        return [c for c in self.children.values() if not c.nack_only]

    def _ack_limit(self) -> int:
        """Highest packet a child may acknowledge: a child may be ahead of its agent by a buffer."""
        return self.highest_buffered + self.p.rcv_buffer

    def rto_rtd(self) -> float:
        """3.4: an SA's RTOs are the maximum over its children."""
        return max((c.rtd.rto for c in self._acking() if c.rtd.srtt is not None), default=RTO_INITIAL)

    def rto_rtt(self) -> float:
        return max((c.rtt.rto for c in self._acking()), default=RTO_INITIAL)

    def summary(self) -> tuple[int, int, int]:
        """(minCwnd, maxTwnd, advertised window) of this node's subtree (3.7)."""
        kids = self._acking()
        if not kids:
            return NO_CWND, 0, self.p.rcv_buffer  # a leaf limits nothing but its buffer
        heard = [c for c in kids if c.heard]
        min_cwnd = min([int(self.cwnd)] + [c.min_cwnd for c in heard])
        max_twnd = max([self.twnd] + [c.max_twnd for c in heard])
        return min_cwnd, max_twnd, min((c.adv_wnd for c in heard), default=self.p.rcv_buffer)

    # Liveness: probes, dead children, adoption ---------------------------------------
    @hook
    def _jitter(self, period: float) -> float:
        """The wait before a periodic timer (probe, ACK, window update) fires."""
        return period

    @hook
    def _probed(self, c: _Child) -> bool:
        """Its own children, by unicast: the switch's membership ageing times out folded ones."""
        return not (self.assisted or c.aggregated or c.nack_only)

    def _start_probing(self, now: float) -> None:
        for c in self.children.values():
            c.last_heard = now
            c.probe_due = now + self._jitter(PROBE_INTERVAL)
        self._arm_probe_timer()

    def _arm_probe_timer(self) -> None:
        due = [c.probe_due for c in self.children.values()
               if c.probe_due is not None and self._probed(c) and (c.heard or c.probe_at)]
        if not due:
            self.cancel_timer("probe")
        elif self.timer_at("probe") != min(due):
            self.set_timer("probe", min(due))

    def _probe(self, c: _Child, now: float) -> None:
        """3.3: a window update the child answers at once (an RTT sample and a sign of life)."""
        c.probe_ts, c.probe_at = ts_us(now) or 1, now
        c.probe_due = now + self._answer_timeout(c)
        self.send(c.addr, MtcpWindowUpdate(session_id=self.cfg.session_id, timestamp=c.probe_ts,
                                           node_id=self.nid).encode())

    def _answer_timeout(self, c: _Child) -> float:
        """How long a probe's answer may take (``RTO_INITIAL`` before a sample)."""
        r = c.rtt
        return RTO_INITIAL if r.srtt is None else max(2 * r.srtt, r.srtt + 4 * r.rttvar, PROBE_ANSWER_MIN)

    def _heard(self, c: _Child, now: float, echo_ts: int = 0) -> None:
        """Any message from ``c`` shows it alive; the echo of the pending probe is an RTT sample."""
        c.last_heard = now
        if c.probe_ts and echo_ts == c.probe_ts:
            c.rtt.sample(now - c.probe_at)
            c.probe_ts = 0

    @hook
    def _suspect(self, c: _Child, now: float) -> None:
        """``c`` owes an acknowledgement past a timeout: probe it now, not at the next period (a
        fold or a member behind it is not probed: the switch's membership ageing times them out)."""
        if self._probed(c) and c.heard and c.last_heard >= c.probe_at and now - c.last_heard > self._answer_timeout(c):
            self._probe(c, now)
            self._arm_probe_timer()

    @hook
    def _gone(self, c: _Child, silent: bool, now: float) -> bool:
        """A probe's (or a roll call's) wait for ``c`` ended, ``silent`` or answered: True when
        ``c`` was removed as dead (the paper names no death rule: it probes again)."""
        return False

    def _on_probe_timer(self, now: float) -> None:
        for c in list(self.children.values()):
            if c.probe_due is None or c.probe_due > now or not self._probed(c):
                continue
            silent = bool(c.probe_at) and c.last_heard < c.probe_at  # silent since the last probe
            if self._gone(c, silent, now):
                continue
            if not silent:
                nxt = c.probe_at + self._jitter(PROBE_INTERVAL)
                if c.probe_at and nxt > now:
                    c.probe_due = nxt  # alive: the next periodic probe
                    continue
            self._probe(c, now)
        self._arm_probe_timer()
        self._arm_packet_timer()

    @hook
    def _undo_cuts(self, since: float) -> int:
        """A member found dead or silent since ``since``: the cuts undone (the paper keeps them)."""
        return 0

    @hook
    def _remove_child(self, c: _Child, now: float) -> None:
        """``c`` is gone (a rule found it dead, or a liar): release what only ``c`` lacked, adopt
        and repair its children."""
        del self.children[c.nid]
        self.departed.add(c.nid)
        self.dead_children += 1
        self._undo_cuts(c.last_heard)
        self._recount(now)
        for g in self.tree.children_of(c.addr[0]):
            if node_id(g) not in self.children and g != self.me:
                self.adopted += 1
                self._probe(self._child(node_id(g), (g, self.cfg.port), now), now)
        self.metric({"dead_child": c.nid, "children": len(self.children)}, "tree-repair")

    def _has(self, seq: int) -> bool:
        """Can this node send packet ``seq`` (buffered, or in the stream it holds)?"""
        return seq in self.buf

    def _next_point(self) -> int:
        """The packet after everything this agent's children all hold (nothing buffered)."""
        return self.highest_buffered + 1

    @hook
    def _late_join(self, c: _Child, cum_ack: int, now: float) -> bool:
        """A child reporting ``cum_ack`` 0 mid-session: True when it was started at a later packet
        (the paper has no late joiners: it is owed the whole stream)."""
        return False

    def _restart_record(self, c: _Child, cum_ack: int) -> None:
        """``c``'s record starts again: it holds everything up to ``cum_ack`` and nothing after."""
        c.sb = Scoreboard()
        c.sb.start_after(cum_ack)
        for d in (c.rinflight, c.last_tx, c.rexmits, c.nacks, c.rqueue):
            d.clear()
        self._recount()

    @hook
    def _join_refused(self, c: _Child, cum_ack: int) -> bool:
        """A child's report below the start it was given: True when its record restarted at the
        report (the paper gives no start)."""
        return False

    # Buffering -------------------------------------------------------------------
    def _buffer(self, seq: int, sender_ts: int, size: int, now: float, repaired: bool = False) -> None:
        """Hold a packet first received (or, at the sender, first sent)."""
        if seq in self.buf or not self._acking():
            return
        acks = sum(1 for c in self._acking() if c.sb.acked(seq))
        if acks >= len(self._acking()):
            return
        # The first timer: RTO_RTD less the packet's RTD so far; a repair's: RTO_RTT (3.4).
        age = 0.0 if repaired else seconds_since(sender_ts, now)
        deadline = now + (self.rto_rtt() if repaired else max(0.0, self.rto_rtd() - age))
        self.buf[seq] = _Buffered(sender_ts, size, acks, deadline)
        heapq.heappush(self._timers_heap, (deadline, seq))
        self.twnd += 1
        self.highest_buffered = max(self.highest_buffered, seq)
        if self.round_end == 0:
            self.round_end, self.round_start = seq, now
        self._arm_packet_timer()

    def _arm_packet_timer(self) -> None:
        h = self._timers_heap
        while h and (h[0][1] not in self.buf or self.buf[h[0][1]].deadline != h[0][0]):
            heapq.heappop(h)
        if not h:
            self.cancel_timer("pkt")
        elif self.timer_at("pkt") != h[0][0]:
            self.set_timer("pkt", h[0][0])

    def _set_deadline(self, seq: int, when: float) -> None:
        self.buf[seq].deadline = when
        heapq.heappush(self._timers_heap, (when, seq))

    # Feedback from children ------------------------------------------------------
    def _accepted(self, msg: MtcpAck | MtcpWindowUpdate | MtcpNack, src: Address) -> bool:
        """Feedback that cannot lie about who sent it (p4mcc): a report's ``node_id`` is the
        address it came from (a switch's fold keeps the triggering receiver's address and id), and
        a folded summary counts only in a session the switches fold.  Anything else is counted in
        ``forged`` and dropped: a host naming another's id would release that one's holes, and a
        fold no switch made would speak for every receiver."""
        if (msg.node_id != node_id(src[0]) or (msg.flags & Flags.AGGREGATED and not self.assisted)
                or self._claims_unsent(msg.cum_ack, bool(msg.flags & Flags.AGGREGATED))):
            self.forged += 1
            return False
        return True

    @hook
    def _claims_unsent(self, cum_ack: int, folded: bool) -> bool:
        """A report (``folded``: a switch's fold) acknowledging data that could not have reached
        its sender yet (the sender's check; RFC 9293 3.10.7.4 drops an ACK of something not yet sent)."""
        return False

    @hook
    def _on_feedback(self, msg: MtcpAck | MtcpWindowUpdate, src: Address, now: float) -> None:
        sack_bitmap = msg.sack_bitmap
        if msg.flags & Flags.AGGREGATED:
            if self._fold_refused(msg, now):
                return
            # A fold speaks for every receiver below it: one child, repaired by multicast.
            self._member_acknowledges(msg.node_id, msg.cum_ack, now)
            c = self._child(FOLD_ID, self.group)
            self._fold_heard(c, msg.cum_ack, now)
            c.aggregated = True
            sack_bitmap = 0  # any SACK bits are one receiver's view, not the fold's
        else:
            c = self._child(msg.node_id, src, now)
            c.addr = src  # repairs go where its feedback comes from (its bound port)
            self._join_refused(c, msg.cum_ack) or self._late_join(c, msg.cum_ack, now)
        c.nack_only = False
        if c.probe_due is None:
            c.probe_due = now + self._jitter(PROBE_INTERVAL)
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
        self._acknowledged(c, c.sb.update_bitmap(msg.cum_ack, sack_bitmap, limit=self._ack_limit()), now)
        self._pump_repairs(c, now)
        self._arm_packet_timer()

    @hook
    def _fold_refused(self, msg: MtcpAck | MtcpWindowUpdate, now: float) -> bool:
        """A switch's fold arrives: True when it no longer speaks for the members (the core
        takes every fold)."""
        return False

    @hook
    def _fold_heard(self, fold: _Child, cum_ack: int, now: float) -> None:
        """The fold ``fold`` carries ``cum_ack``, before its record takes it (the core reads
        nothing more)."""

    @hook
    def _acknowledged(self, c: _Child, newly: list[int], now: float) -> None:
        """``c`` holds ``newly``: free its repair slots, and the buffer once every child holds a packet."""
        self._repairs_held(c, newly, now)
        n = len(self._acking())
        for s in newly:
            if ack_from_one_more(self.buf, s, n):
                self._acked_by_all(s, now)

    def _repairs_held(self, c: _Child, newly: list[int], now: float) -> None:
        """``c`` holds ``newly``: its repairs of them are done (their slots free, a Karn sample)."""
        for s in newly:
            sent = c.rinflight.pop(s, None)
            if sent is not None:
                # Karn (RFC 6298 3): only a packet repaired once, and only the lowest one the report newly covers.
                if c.rexmits.get(s, 0) == 1 and s == newly[0]:
                    c.rtt.sample(now - sent)
                self._rwnd_grow(c)
            c.rqueue.discard(s)
            c.last_tx.pop(s, None)
            c.rexmits.pop(s, None)
            c.nacks.pop(s, None)

    @hook
    def _on_nack(self, msg: MtcpNack, src: Address, now: float) -> None:
        c = self.children.get(msg.node_id)
        if c is None:  # a dead child comes back (``_child``); behind a fold: repaired, not a child
            c = self._child(msg.node_id, src)
            c.nack_only = True
        self._join_refused(c, msg.cum_ack)
        self._nack_heard(c, msg, now)
        fold = self.children.get(FOLD_ID)
        if c.nack_only and fold is not None and msg.cum_ack < fold.sb.cum_ack:
            # The fold was taken past this member from the others' answers: repair it from the stream.
            top = min(fold.sb.cum_ack, msg.cum_ack + MAX_NACK_SEQS)
            c.rqueue.update(x for x in range(msg.cum_ack + 1, top + 1) if not c.sb.acked(x))
        self._heard(c, now)
        if self._late_join(c, msg.cum_ack, now):
            c.addr = src
            self._arm_packet_timer()
            return  # what it lists lies before its stream's start
        blocks = nack_blocks(msg.cum_ack, msg.missing)  # a NACK also SACKs the packets between its holes
        if not c.nack_only:
            self._acknowledged(c, c.sb.update(msg.cum_ack, blocks, limit=self._ack_limit()), now)
        else:
            self._nack_acknowledges(c, msg.cum_ack, blocks)
        congested = False
        srtt = c.rtt.srtt
        if srtt is None and fold is not None and c.nack_only:
            srtt = fold.rtt.srtt  # behind a fold a receiver is timed by the fold's repairs and roll calls
        window = (srtt if srtt is not None else RTO_INITIAL) + ACK_DELAY  # a repair this recent may be on its way
        if self._reports_by_nack(c):
            # Repairs above the NACK's last hole sent a round trip before it are out of the pipe (RFC 6675).
            last_hole = max(msg.missing, default=msg.cum_ack)
            for s in [s for s, sent in c.rinflight.items() if s > last_hole and now - sent >= window]:
                del c.rinflight[s]
        for s in msg.missing:
            if c.sb.acked(s) or not self._has(s):
                continue  # acknowledged meanwhile, or not ours to repair (we lack it too)
            last = c.last_tx.get(s)
            if last is not None and now - last < window:
                self.suppressed_nacks += 1
                continue
            c.rinflight.pop(s, None)  # an older repair of it is presumed lost (3.6: no more)
            c.nacks[s] = c.nacks.get(s, 0) + 1
            congested = self._nack_is_congestion(c, s) or congested
            c.rqueue.add(s)
        if congested:
            self._congestion(now, timeout=False)
        self._pump_repairs(c, now, from_nack=True)
        self._arm_packet_timer()

    @hook
    def _nack_heard(self, c: _Child, msg: MtcpNack, now: float) -> None:
        """A NACK from ``c`` (known only from its NACKs, ``nack_only``, when a fold speaks for it)
        arrives, before it is read (the core reads nothing more)."""

    @hook
    def _reports_by_nack(self, c: _Child) -> bool:
        """Whether ``c``'s NACKs are its only reports, so a NACK also shows which repairs left the
        pipe: in the core, a member behind a fold."""
        return c.nack_only

    def _member_acknowledges(self, nid: int, fold_ack: int, now: float) -> None:
        """A fold this member's ACK triggered acknowledges it (the switch counts the reporting port)."""
        m = self.children.get(nid)
        if m is not None and m.nack_only and fold_ack > m.sb.cum_ack:
            self._nack_acknowledges(m, fold_ack, [])
            self._pump_repairs(m, now)

    def _nack_acknowledges(self, c: _Child, cum_ack: int, blocks: list[tuple[int, int]]) -> None:
        """A NACK from behind a fold paces that receiver's repairs; it never releases a packet."""
        c.sb.update(cum_ack, limit=self._ack_limit())
        for s in [s for s in c.rinflight if s <= cum_ack or any(lo <= s < hi for lo, hi in blocks)]:
            del c.rinflight[s]
            self._rwnd_grow(c)
            c.rqueue.discard(s)
            c.nacks.pop(s, None)

    # Windows -----------------------------------------------------------------------
    def _acked_by_all(self, s: int, now: float) -> None:
        """A packet left the subtree's pipe: twnd shrinks (3.7), cwnd grows (2, 3.5)."""
        self.twnd = max(0, self.twnd - 1)
        self.round_acked += 1
        if self.cwnd < self.ssthresh:
            self._slow_start(now)
        else:
            self._avoid_congestion(s)
        if s >= self.round_end:
            self._end_round(now)

    @hook
    def _slow_start(self, now: float) -> None:
        """2: +1 per packet acknowledged by all children."""
        self.cwnd += 1.0

    @slot("avoidance", "vegas")
    def _avoid_congestion(self, s: int) -> None:
        """2, 3.5: 1/cwnd per packet acknowledged by all, signed by Vegas; a decrease keeps
        cwnd at or above ssthresh so it does not restart slow start."""
        if self.trend:
            self.cwnd = max(1.0, self.cwnd + self.trend / self.cwnd)
            self.ssthresh = min(self.ssthresh, self.cwnd)

    def vegas_diff(self, now: float) -> float | None:
        """Packets queued on the worst child's path: ack rate times (RTD - base RTD)."""
        dur = now - self.round_start
        if dur <= 0 or self.round_acked == 0:
            return None
        rate = self.round_acked / dur
        diffs = [vegas_diff(rate, c.round_min_rtd, c.rtd.base) for c in self._acking()
                 if c.round_min_rtd is not None and c.rtd.base is not None]
        return max(diffs) if diffs else None

    def _end_round(self, now: float) -> None:
        """A round ends when a packet buffered after it began is acknowledged by all."""
        self._vegas_round(now)
        for c in self.children.values():
            c.round_min_rtd = None
        self.round_acked = 0
        self.round_start = now
        self.round_end = max(self.highest_buffered, self.round_end + 1)

    @slot("avoidance", "vegas")
    def _vegas_round(self, now: float) -> None:
        """3.5: Vegas' decision on the round's RTDs, and its early exit from slow start."""
        diff = self.vegas_diff(now)
        if diff is not None:
            if self.cwnd < self.ssthresh and VEGAS.leaves_slow_start(diff):
                self.ssthresh = self.cwnd
            self.trend = VEGAS.step(diff)

    @hook
    def _nack_is_congestion(self, c: _Child, s: int) -> bool:
        """2: only ``DUP_NACKS`` NACKs of one packet, once per window, shrink cwnd."""
        if c.nacks[s] >= DUP_NACKS:
            c.nacks[s] = 0
            return s > self.recover
        return False

    @hook
    def _congestion(self, now: float, timeout: bool) -> None:
        """A timeout sets cwnd to 1 and twnd to 0 (3.1, 3.7); repeated NACKs halve cwnd."""
        self.cwnd_cuts += 1
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd / 2)
        self.cwnd = 1.0 if timeout else max(1.0, self.cwnd / 2)
        self.recover = self.highest_buffered
        if timeout:
            self.twnd = 0

    def _rwnd_grow(self, c: _Child) -> None:
        c.rwnd += 1.0 if c.rwnd < c.rssthresh else 1.0 / c.rwnd

    # Repairs ------------------------------------------------------------------------
    def _pump_repairs(self, c: _Child, now: float, from_nack: bool = False) -> None:
        """Send queued repairs to ``c`` while its retransmission window allows."""
        for s in sorted(c.rqueue):
            if len(c.rinflight) >= int(c.rwnd):
                break
            c.rqueue.discard(s)
            if c.sb.acked(s) or not self._has(s):
                continue
            self._repair(c, s, self.buf.get(s), now)
            if from_nack:
                self.nack_rexmits += 1
            else:
                self.timer_rexmits += 1

    def _repair(self, c: _Child, s: int, b: _Buffered | None, now: float) -> None:
        """Resend ``s`` to ``c``; ``b is None``: from the stream (an adopted orphan's gap)."""
        data = MtcpData(session_id=self.cfg.session_id, seq=s, flags=Flags.RETRANSMIT,
                        timestamp=b.sender_ts if b is not None else (ts_us(now) or 1),
                        payload=payload_for(s, b.size if b is not None else self.p.packet_size)).encode()
        fold = self.children.get(FOLD_ID) if self._repaired_with_the_fold(c) else None
        if fold is not None:
            # Behind a fold a bottleneck loss is every member's: one repair to the group per fold RTT.
            rtt = fold.rtt.srtt if fold.rtt.srtt is not None else c.rtt.srtt
            last = fold.last_tx.get(s)
            if last is not None and now - last < (rtt if rtt is not None else RTO_INITIAL) + ACK_DELAY:
                self.suppressed_nacks += 1
                c.sent_repair(s, last)
                return
            fold.last_tx[s] = now
            fold.rexmits[s] = fold.rexmits.get(s, 0) + 1  # the fold's own timer repair of s is now ambiguous
        also = self._also_lacking(c, s, now)
        self.send(self.group if c.aggregated or also or fold is not None else c.addr, data)
        if also or fold is not None:
            self.mcast_repairs += 1
        for x in [c, *also]:
            x.sent_repair(s, now)
        if b is not None:  # from the stream: no timer, a lost one is NACKed again
            b.stage = max(b.stage, 1)
            self._set_deadline(s, now + self.rto_rtt() * 2 ** (b.stage - 1))

    @hook
    def _repaired_with_the_fold(self, c: _Child) -> bool:
        """Whether a repair for ``c`` goes to the group at the fold's pace: a member behind a fold
        (the core), whose loss is likely every member's."""
        return c.nack_only

    @hook
    def _also_lacking(self, c: _Child, s: int, now: float) -> list[_Child]:
        """Other children a repair of ``s`` to ``c`` should reach (3.1: none, repairs go by unicast)."""
        return []

    @hook
    def _on_packet_timer(self, now: float) -> None:
        """3.4: an expired timer is a timeout -- repair, back off, shrink cwnd."""
        due: set[int] = set()
        while self._timers_heap and self._timers_heap[0][0] <= now:
            when, s = heapq.heappop(self._timers_heap)
            if s in self.buf and self.buf[s].deadline == when:
                due.add(s)
        cut = False
        for s in sorted(due):
            b = self.buf[s]
            lacking = [c for c in self._acking() if not c.sb.acked(s)]
            for c in lacking:
                self._suspect(c, now)
            self.timeouts += 1
            cut = cut or s > self.recover
            for c in lacking:
                if c.rinflight.pop(s, None) is not None:  # a repair was lost: rwnd restarts, as cwnd would
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
