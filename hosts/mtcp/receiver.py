"""MTCP's receiver, and with children in the tree a sender's agent (SA) (3.1-3.3, 3.9); answers to
a roll call are the rule ``fold_roll_call``'s, and late starts the rule ``join_at_window_edge``'s."""

from __future__ import annotations

from p4mcc.hosts.core import Address, JoinGroup, node_id
from p4mcc.hosts.mtcp.agent import _Agent
from p4mcc.hosts.mtcp.constants import ACK_DELAY, NACK_HOLDOFF_INITIAL, NACK_HOLDOFF_RTTS, WUPDATE_INITIAL, WUPDATE_STEP
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.reliable import MAX_SEQ, ReceiveBuffer, payload_for
from p4mcc.hosts.rtt import ewma
from p4mcc.hosts.rules import hook
from p4mcc.hosts.wire import MAX_NACK_SEQS, Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us


class MtcpReceiver(_Agent, role="mtcp-receiver"):
    """A receiver; with children in the tree it is also a sender's agent."""

    TIMERS = frozenset({"nack", "ack", "wupdate", "pkt", "probe"})  # what on_timer handles (Endpoint.TIMERS)

    COUNTERS = ("reattached", "corrupt", "acks_sent")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.parent: Address = (self.tree.parent_of(self.me) or config.sender, config.port)
        self.rbuf = ReceiveBuffer(self.p.rcv_buffer)
        self.echo_ts, self.echo_at = 0, 0.0
        self.wupdate_period = WUPDATE_INITIAL
        self.ancestors: set[str] = {config.sender}
        a = self.tree.parent_of(self.me)
        while a is not None:
            self.ancestors.add(a)
            a = self.tree.parent_of(a)
        self.got_data = False
        self.last_summary: dict[str, int] = {}
        self.nacked: dict[int, tuple[float, bool]] = {}  # hole -> (time of the last NACK, NACKed once only)
        self.nack_rtt: float | None = None  # smoothed NACK-to-repair time
        self.unacked = 0  # new packets since our last ACK

    def _ack_limit(self) -> int:
        return max(self.highest_buffered, self.rbuf.highest) + self.p.rcv_buffer

    def _has(self, seq: int) -> bool:
        return seq in self.buf or self.rbuf.has(seq)  # what it got (payload_for regenerates it)

    def _next_point(self) -> int:
        return self.rbuf.cum_ack + 1

    @property
    def is_agent(self) -> bool:
        return bool(self._acking())

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        self.set_timer("wupdate", now + self._first_hello())
        self._start_probing(now)

    @hook
    def _first_hello(self) -> float:
        """When the first window update (the hello that makes us known) goes: at once."""
        return 0.0

    def _arm_wupdate(self, now: float) -> None:
        """Next window update (hello before data) one period from now (3.9)."""
        self.set_timer("wupdate", now + self._jitter(self.wupdate_period))

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if isinstance(msg, MtcpData):
            self._on_data(msg, now)
        elif not isinstance(msg, (MtcpAck, MtcpWindowUpdate, MtcpNack)):
            return
        elif (msg.node_id in self.children or msg.node_id in self.departed) and not self._accepted(msg, src):
            return  # a report from a child must come from that child's address
        elif msg.node_id in self.children and isinstance(msg, MtcpNack):
            self._on_nack(msg, src, now)
        elif msg.node_id in self.children or (isinstance(msg, MtcpWindowUpdate) and msg.node_id in self.departed):
            self._on_feedback(msg, src, now)  # a departed child's update readmits it
            if self._summary_fields() != self.last_summary:  # 3.9: a changed summary goes up with the next ACK
                self._ack_soon(now)
        elif isinstance(msg, MtcpWindowUpdate):
            self._on_probe(msg, src, now)
        elif isinstance(msg, MtcpNack) and src[0] == self.parent[0] and msg.node_id == node_id(src[0]):
            self._on_join(msg, now)
        # anything else: only our children in the tree report to us

    def _ack_soon(self, now: float) -> None:
        """3.1, 3.9: ACKs wait the ACK delay, so an agent can fold its children's reports in."""
        if self.timer_at("ack") is None:
            self.set_timer("ack", now + self._jitter(ACK_DELAY))

    @hook
    def _on_probe(self, msg: MtcpWindowUpdate, src: Address, now: float) -> None:
        """A probe from our parent or an adopting ancestor (re-attaching us): answer at once."""
        if (src[0] != self.parent[0] and src[0] not in self.ancestors) or msg.node_id != node_id(src[0]):
            return
        if src[0] != self.parent[0]:
            self.parent = (src[0], self.cfg.port)
            self.reattached += 1
            self.metric({"parent": msg.node_id}, "reattached")
        self._feedback(MtcpWindowUpdate, now, echo=msg.timestamp)
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        if missing and self.reattached:
            self._nack(missing, now)

    @hook
    def _on_join(self, msg: MtcpNack, now: float) -> None:
        """Our parent's NACK naming where our stream starts (:meth:`_Agent._late_join`; the paper
        sends none)."""

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
        retransmitted = bool(m.flags & Flags.RETRANSMIT)
        self._arrived(m.seq, now, retransmitted)
        hole = self.nacked.pop(m.seq, None)
        if hole is not None and hole[1] and retransmitted:  # NACKed once and repaired: an unambiguous time
            self.nack_rtt = ewma(self.nack_rtt, now - hole[0], 0.125)
        if len(self.nacked) > 4 * MAX_NACK_SEQS:
            self.nacked = {s: v for s, v in self.nacked.items() if not self.rbuf.has(s)}
        self.got_data = True
        if not retransmitted:  # echo the last original's send time: a repair's would inflate the RTD
            self.echo_ts, self.echo_at = m.timestamp, now
            self.wupdate_period = WUPDATE_INITIAL  # reset on a new packet from the sender
            self._arm_wupdate(now)
        if self.is_agent:
            self._buffer(m.seq, m.timestamp, len(m.payload), now, repaired=retransmitted)
            for c in self._acking():
                if m.seq in c.rqueue:
                    self._pump_repairs(c, now)
        self.unacked += 1
        if self._ack_at_once(in_order):
            self.cancel_timer("ack")
            self._ack(now)
        else:
            self._ack_soon(now)

    @hook
    def _arrived(self, seq: int, now: float, repair: bool) -> None:
        """Packet ``seq`` arrived for the first time (``repair``: sent again, flagged
        ``RETRANSMIT``); ``self.nacked`` still holds it if it was NACKed."""

    @hook
    def _ack_at_once(self, in_order: bool) -> bool:
        """Does this packet's ACK go now, not after the ACK delay? (3.1: never.)"""
        return False

    def _ack(self, now: float) -> None:
        """The ACK (and, when due, the NACK) to the parent."""
        self.unacked = 0
        self._feedback(MtcpAck, now)
        self._nack_what_is_due(now)

    def _nack_what_is_due(self, now: float) -> list[int]:
        """NACK the holes that are ripe (``_nack_due``); the holes, ripe or not."""
        missing = self.rbuf.missing(MAX_NACK_SEQS)
        due = self._nack_due(missing, now) if missing else []
        if due:
            self._nack(due, now)
        return missing

    def _holdoff(self) -> float:
        """How long a NACKed hole's repair may take before it is overdue."""
        return NACK_HOLDOFF_INITIAL if self.nack_rtt is None else NACK_HOLDOFF_RTTS * self.nack_rtt

    def on_timer(self, name: str, now: float) -> None:
        if name == "nack":
            self._on_nack_timer(now)
        elif name == "ack":
            self._ack(now)
        elif name == "wupdate":
            # Section 3.9: no summary sent within the period -- send one anyway.
            self._feedback(MtcpWindowUpdate, now)
            if self.got_data:  # before any data it is a hello: repeat it at the first period
                self.wupdate_period += WUPDATE_STEP
            self._arm_wupdate(now)
        elif name == "pkt":
            self._on_packet_timer(now)
        elif name == "probe":
            before = self._summary_fields()
            self._on_probe_timer(now)
            if self._summary_fields() != before:
                self._ack_soon(now)

    @hook
    def _on_nack_timer(self, now: float) -> None:
        """The NACK timer fired: NACK the holes that are ripe.  The paper NACKs with every ACK
        (3.1) and arms no such timer; the rules that NACK between ACKs arm it and wrap this."""
        self._nack_what_is_due(now)

    @hook
    def _nack_due(self, missing: list[int], now: float) -> list[int]:
        """The holes to NACK now (none: no NACK).  3.1: every hole, with every ACK."""
        return missing

    @hook
    def _nack(self, missing: list[int], now: float, echo: int = 0) -> None:
        """NACK to the parent; ``echo``: the timestamp of what it answers (3.1: none)."""
        for s in missing:
            self.nacked[s] = (now, s not in self.nacked)
        timestamp, flags = self._nack_stamp(now, echo)
        self.send(self.parent, MtcpNack(
            session_id=self.cfg.session_id, timestamp=timestamp, flags=flags, cum_ack=self.rbuf.cum_ack,
            node_id=self.nid, missing=tuple(missing)).encode())

    @hook
    def _nack_stamp(self, now: float, echo: int) -> tuple[int, int]:
        """A NACK's timestamp and flags: ``echo`` (a roll call's) or the time now (3.1), no flag."""
        return echo or ts_us(now), 0

    def _feedback(self, cls: type[MtcpAck] | type[MtcpWindowUpdate], now: float, echo: int = 0) -> None:
        """Report to the parent; ``echo`` set: a probe's answer."""
        if cls is MtcpAck and self.timer_at("wupdate") is not None:
            self._arm_wupdate(now)  # an ACK is this period's report (3.9)
        self._report(cls, now, echo)

    @hook
    def _report(self, cls: type[MtcpAck] | type[MtcpWindowUpdate], now: float, echo: int) -> None:
        """The report itself: an ACK (3.1) or a window update (3.9) with this node's summary."""
        msg = self._summary_report(cls, now, echo)
        if cls is MtcpAck:
            self.acks_sent += 1
        self.send(self.parent, msg.encode())

    def _data_echo(self, now: float) -> int:
        """The last original's send time plus how long it was held here: an RTD sample's echo
        (0: no original yet)."""
        if not self.echo_ts:
            return 0
        hold = int(round((now - self.echo_at) * 1e6))
        return (self.echo_ts + hold) & 0xFFFFFFFF or 1

    def _summary_report(self, cls: type[MtcpAck] | type[MtcpWindowUpdate], now: float,
                        echo: int) -> MtcpAck | MtcpWindowUpdate:
        """This node's report (``echo`` 0: the last original's echo), recorded as the last summary sent."""
        fields = self._summary_fields()
        self.last_summary = dict(fields)
        fields["adv_wnd"] = min(fields["adv_wnd"], self.rbuf.free)
        return cls(session_id=self.cfg.session_id, timestamp=ts_us(now), cum_ack=self.rbuf.cum_ack, node_id=self.nid,
                   echo_ts=echo or self._data_echo(now), sack_bitmap=self.rbuf.sack_bitmap(),
                   stamp=self._echo_stamp(), **fields)
