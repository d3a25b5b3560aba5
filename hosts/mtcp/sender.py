"""MTCP's sender: the root of the tree, multicasting under its subtree's summary (3.7)."""

from __future__ import annotations

from typing import Any

from p4mcc.hosts.mtcp.agent import _Agent
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.reliable import SendGate, payload_for
from p4mcc.hosts.rules import hook
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us


class MtcpSender(SendGate, _Agent, role="mtcp-sender"):
    """The root of the tree: multicasts data under the tree's summaries."""

    TIMERS = frozenset({"pkt", "probe"})  # what on_timer handles (Endpoint.TIMERS)

    def _ack_limit(self) -> int:
        return self.next_seq - 1

    @hook
    def _claims_unsent(self, cum_ack: int, folded: bool) -> bool:
        # Once sending, nothing above what it sent can be acknowledged.  Receivers may stand up
        # to a receive buffer past a restarted sender's start (one that resumed a little low, or
        # started afresh on a report of nothing): their reports are still taken, clipped.
        return self.started and cum_ack > self.next_seq - 1 + self.p.rcv_buffer

    def _has(self, seq: int) -> bool:
        return 1 <= seq < self.next_seq  # the application's whole stream (payload_for regenerates it)

    def _next_point(self) -> int:
        return self.next_seq

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.next_seq = 1

    @hook
    def _ready(self) -> bool:
        kids = self._acking()
        if self.assisted:  # folds hide how many receivers there are: one heard summary suffices
            return any(c.heard for c in kids)
        want = len(self.tree.children_of(self.me)) or self.p.receivers
        return bool(kids) and len(kids) >= max(1, want) and all(c.heard for c in kids)

    @hook
    def paced_rtd(self) -> float | None:
        """The round trip the window is sent once per when one child's ACKs clock it; None: every
        child acknowledges it (3.7), so the longest RTD paces it (the core's case)."""
        return None

    @hook
    def current_window(self) -> int:
        """3.7: ``minCwnd - maxTwnd``, bounded by the advertised room."""
        min_cwnd, max_twnd, adv = self.summary()
        lowest = min((c.sb.cum_ack for c in self._acking()), default=0)
        return min(min_cwnd - max_twnd, lowest + adv - (self.next_seq - 1))

    def on_start(self, now: float) -> None:
        self._start_probing(now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if isinstance(msg, (MtcpAck, MtcpWindowUpdate, MtcpNack)) and not self._accepted(msg, src):
            liar = self.children.get(msg.node_id)
            folded = bool(msg.flags & Flags.AGGREGATED)
            if liar is not None and liar.addr[0] == src[0] and self._claims_unsent(msg.cum_ack, folded):
                # a member that acknowledges data never sent is not one: its record would hold
                # the window at the last report it was believed for
                self._remove_child(liar, now)
            return
        if isinstance(msg, MtcpAck) and msg.flags & Flags.ACKER:
            self._acker_ack(msg, src, now)
        elif isinstance(msg, (MtcpAck, MtcpWindowUpdate)):
            self._heard_report(msg, now)
            self._on_feedback(msg, src, now)
        elif isinstance(msg, MtcpNack):
            self._on_nack(msg, src, now)
        else:
            return  # only feedback moves the sender
        self._pump(now)

    def on_timer(self, name: str, now: float) -> None:
        handlers = {"pkt": self._on_packet_timer, "probe": self._on_probe_timer}
        handler = handlers.get(name)
        if handler is None or (name == "probe" and self.done):
            return
        handler(now)
        self._pump(now)

    @hook
    def _acker_ack(self, msg: MtcpAck, src: Address, now: float) -> None:
        """The acker's own copy of its ACK, which a folding switch passed on unfolded.  The core
        names no acker, so it reads none: the folded ACK carries the same news."""

    @hook
    def _heard_report(self, msg: MtcpAck | MtcpWindowUpdate, now: float) -> None:
        """Record what an accepted report echoes, before the sender acts on it or a rule refuses
        it (the paper reads nothing more than ``_on_feedback`` does)."""

    def _pump(self, now: float) -> None:
        if not self._may_send(now):
            return
        for _ in range(max(0, self.current_window())):
            if self.p.total_packets and self.next_seq > self.p.total_packets:
                break
            s, ts = self.next_seq, ts_us(now)
            self.next_seq += 1
            self.send(self.group, MtcpData(session_id=self.cfg.session_id, seq=s, timestamp=ts,
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
        return ({"cwnd": self.cwnd, "twnd": self.twnd, "min_cwnd": mc, "max_twnd": mt, "adv_wnd": adv,
                 "packets_sent": self.next_seq - 1, "timeouts": self.timeouts, "summaries_in": self.summaries_in,
                 "dead_children": self.dead_children, "readmitted": self.readmitted,
                 "rtt_s": max((c.rtd.srtt or 0.0) for c in self._acking()) if self._acking() else 0.0},
                "slowstart" if self.cwnd < self.ssthresh else "steady")
