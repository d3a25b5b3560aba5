"""The paper's RLA receiver: in-order delivery and a SACK per data packet (section 3.3, rule 1).

Each SACK (RFC 2018 blocks) echoes the packet's send time for ``srtt_i``;
before data a receiver says hello (a SACK of nothing) so the sender knows it.
"""

from __future__ import annotations

import random

from p4mcc.hosts.core import Address, JoinGroup, node_id
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.reliable import MAX_SEQ, ReceiveBuffer, payload_for
from p4mcc.hosts.rla.params import RlaParams
from p4mcc.hosts.rules import hook
from p4mcc.hosts.wire import MAX_SACK_BLOCKS, RlaData, RlaSack, ts_us

#: Seconds between hellos until data arrives (the paper's receivers are known; how is open).
HELLO_INTERVAL = 1.0


class RlaReceiver(SessionEndpoint[RlaParams], role="rla-receiver"):
    """An RLA receiver: in-order delivery, a SACK per data packet."""

    TIMERS = frozenset({"hello"})  # what on_timer handles (Endpoint.TIMERS)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.rid = node_id(config.local)
        self.sender: Address = (config.sender, config.port)
        self.buf = ReceiveBuffer(self.p.rcv_buffer)
        self.got_data = False
        self.corrupt = 0
        self.rng = random.Random(config.seed * 2**32 + self.rid)

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        self._first_hello(now)

    def on_timer(self, name: str, now: float) -> None:
        if name == "hello" and not self.got_data:
            self._hello(now)

    def close(self, now: float) -> None:
        """Stop at ``now``; a rule may say goodbye first."""
        super().close(now)
        self._goodbye(now)

    @hook
    def _goodbye(self, now: float) -> None:
        """What a leaving receiver tells its sender (the paper's receivers are a fixed set: nothing)."""

    @hook
    def _first_hello(self, now: float) -> None:
        """The first hello, at once."""
        self._hello(now)

    @hook
    def _hello_factor(self) -> float:
        """The next hello is ``HELLO_INTERVAL`` times this."""
        return 1.0

    def _hello(self, now: float) -> None:
        self._sack(0, now, hello=True)
        self.set_timer("hello", now + HELLO_INTERVAL * self._hello_factor())

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
        self._note_arrival(msg, now)
        had_holes = self.buf.highest > self.buf.cum_ack
        cum_before = self.buf.cum_ack
        new, delivered = self.buf.add(msg.seq, len(msg.payload))
        for d in delivered:
            self.emit(d)
        self._acknowledge(msg, now, new, had_holes and self.buf.cum_ack > cum_before)

    @hook
    def _note_arrival(self, msg: RlaData, now: float) -> None:
        """A data packet arrived at ``now`` (the paper's stream starts at 1, whatever its flags)."""

    @hook
    def _acknowledge(self, msg: RlaData, now: float, new: bool, filled: bool) -> None:
        """The paper's SACK for every data packet, echoing its send time."""
        self._sack(msg.timestamp, now)

    @hook
    def _sack(self, echo_ts: int, now: float, hello: bool = False, sflags: int = 0) -> None:
        """Send one SACK; ``echo_ts`` is the send time of the packet it answers (the paper's SACK
        has no ``sflags``)."""
        self.send(self.sender, RlaSack(
            session_id=self.cfg.session_id, timestamp=ts_us(now), cum_ack=self.buf.cum_ack, adv_buf=self.buf.free,
            rcvr_id=self.rid, echo_ts=echo_ts, sflags=sflags,
            blocks=self.buf.sack_blocks(MAX_SACK_BLOCKS), stamp=self._echo_stamp()).encode())
