"""VLMCC's receiver as the paper has it (2.3): the leader ACKs; a follower emulates Vegas on its
own path (eqs. 4, 5) and challenges by eq. (6).  Rules may override the methods marked ``@hook``."""

from __future__ import annotations

import math
import random

from p4mcc.hosts.core import Address, JoinGroup, node_id
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.rtt import ewma, lowest
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tcp_rules import vegas_diff
from p4mcc.hosts.vlmcc.constants import GAP_GAIN, THRESHOLDS, G, jittered, rate_bps
from p4mcc.hosts.vlmcc.params import VlmccParams
from p4mcc.hosts.wire import VlmccAck, VlmccChallenge, VlmccData, VlmccStart, seconds_since, ts_diff_us, ts_us


class VlmccReceiver(SessionEndpoint[VlmccParams], role="vlmcc-receiver"):
    """A receiver: the leader ACKs every packet; a follower watches and may challenge."""

    TIMERS = frozenset({"probe"})  # what on_timer handles (Endpoint.TIMERS)

    COUNTERS = ("received", "lost", "challenges_sent", "acks_sent")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.me = node_id(config.local)
        self.rng = random.Random((config.seed << 32) ^ self.me)  # reproducible, not in step
        self.sender: Address = (config.sender, config.port)
        self.rtt: float | None = None  # raw estimate, updated by equation (4)
        self.rtt_hat: float | None = None
        self.base_rtt: float | None = None
        self.W = float(self.p.initial_window)
        self.leader = self.last_seq = self.last_tstamp = self.last_flags = 0
        self.last_arrival: float | None = None
        self.sender_rate = 0.0  # packets per second, announced
        self.gap_avg: float | None = None
        self.last_adjust = self.last_halve = self.last_challenge = -math.inf
        self.pending_acks: list[tuple[int, int, float]] = []  # (seq, tstamp, arrival)

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))
        self._probe(now)

    def _probe(self, now: float) -> None:
        """A Challenge with only id and tstamp, which the sender answers with Start; repeated if lost."""
        self.send(self.sender, VlmccChallenge(
            session_id=self.cfg.session_id, timestamp=ts_us(now), rcvr_id=self.me).encode())
        self.set_timer("probe", now + jittered(self.p.probe_interval, self.rng))

    def on_timer(self, name: str, now: float) -> None:
        if name == "probe":
            self._timer_probe(now)

    def _timer_probe(self, now: float) -> None:
        if self._awaits_start():
            self._probe(now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id, VlmccStart, VlmccData)
        if isinstance(msg, VlmccStart):
            self._on_start_msg(msg, now)
        elif msg is not None:
            self._on_data(msg, now)

    @hook
    def _awaits_start(self) -> bool:
        return self.rtt is None

    def _on_start_msg(self, m: VlmccStart, now: float) -> None:
        rtt = seconds_since(m.tstamp_comp, now)
        if rtt < 0 or not self._awaits_start():
            return
        self._started(m)
        self.rtt = self.rtt_hat = self.base_rtt = rtt
        self.leader = m.leader
        self.W = max(1.0, float(m.win_size))
        self.cancel_timer("probe")

    @hook
    def _started(self, m: VlmccStart) -> None:
        """A Start is taken: the emulated connection begins on this path."""

    @hook
    def _on_data(self, m: VlmccData, now: float) -> None:
        self.received += 1
        self.leader = m.leader_id
        if m.leader_id == self.me:
            self.pending_acks.append((m.seq, m.timestamp, now))
            self._ack(m.seq == self.last_seq + 1 or not self.last_seq, now)
        if m.seq <= self.last_seq:
            return  # reordered or duplicated: too late to say anything about the path
        if m.seq > self.last_seq + 1 and self.last_seq:
            self.lost += m.seq - self.last_seq - 1
            self._follower_loss(now)
        if self.rtt is not None and self.last_arrival is not None:
            # Eqs. (4), (5); after a loss the tstamp difference spaces it from the last arrival.
            in_order = m.seq == self.last_seq + 1
            spacing = (m.drift_prev if in_order else ts_diff_us(m.timestamp, self.last_tstamp)) / 1e6
            self.rtt = max(1e-6, self.rtt + (now - (self.last_arrival + spacing)))
            assert self.rtt_hat is not None and self.base_rtt is not None
            self.rtt_hat = ewma(self.rtt_hat, self.rtt, G)
            self.base_rtt = lowest(self.base_rtt, self.rtt)
        self.last_seq, self.last_arrival, self.last_tstamp, self.last_flags = m.seq, now, m.timestamp, m.flags
        self._arrived(now)
        self.sender_rate = m.rate / (8 * max(1, self.p.packet_size))
        if self.rtt_hat is not None:
            self._follower_window(now)
            if self.leader != self.me:
                self._maybe_challenge(now)

    @hook
    def _arrived(self, now: float) -> None:
        """After each new data packet: nothing more in the paper."""

    @hook
    def _ack(self, in_order: bool, now: float) -> None:
        """2.2: the leader ACKs every packet at once."""
        self._flush_acks(now)

    def _flush_acks(self, now: float) -> None:
        """One ACK per held packet; tstamp_comp adds the time it was held."""
        stamp = self._echo_stamp() if self.pending_acks else 0
        for seq, ts, arrived in self.pending_acks:
            hold = int(round((now - arrived) * 1e6))
            self.acks_sent += 1
            self.send(self.sender, VlmccAck(
                session_id=self.cfg.session_id, seq=seq, timestamp=ts_us(now), rcvr_id=self.me,
                tstamp_comp=(ts + hold) & 0xFFFFFFFF, stamp=stamp).encode())
        self.pending_acks.clear()

    # Follower emulation ------------------------------------------------------------
    def vegas_diff(self) -> float | None:
        if self.rtt_hat is None or self.base_rtt is None or self.rtt_hat <= 0:
            return None
        return vegas_diff(self.W / self.rtt_hat, self.rtt_hat, self.base_rtt)

    def _follower_window(self, now: float) -> None:
        """The emulated window once per RTT, capped by what the sender sends (else it grows unbounded)."""
        assert self.rtt_hat is not None
        if now - self.last_adjust < self.rtt_hat:
            return
        self.last_adjust = now
        cap = self.sender_rate * self.rtt_hat + self.p.n_extra + 1
        self._emulate(cap)
        self.W = max(1.0, min(self.W, cap))

    @hook
    def _emulate(self, cap: float) -> None:
        """2.3: the Vegas rule, in congestion avoidance."""
        diff = self.vegas_diff()
        if diff is not None:
            self.W = max(1.0, self.W + THRESHOLDS.step(diff))

    @hook
    def _follower_loss(self, now: float) -> None:
        """A sequence gap halves the emulated window at most once per RTT."""
        if self.rtt_hat is not None and now - self.last_halve >= self.rtt_hat:
            self.W = max(1.0, self.W / 2)
            self.last_halve = now

    @hook
    def _maybe_challenge(self, now: float) -> None:
        """Equation (6) and a growing gap, at most once per RTT: ask to lead."""
        assert self.rtt_hat is not None
        gap = self.sender_rate - self.W / self.rtt_hat  # over what Vegas would get on this path
        prev = self.gap_avg
        self.gap_avg = gap if prev is None else (1 - GAP_GAIN) * prev + GAP_GAIN * gap
        if prev is None or self.gap_avg <= prev:
            return
        if self.sender_rate <= (self.W + self.p.n_extra) / self.rtt_hat or now - self.last_challenge < self.rtt_hat:
            return
        self._send_challenge(now)

    def _send_challenge(self, now: float) -> None:
        if self.rtt_hat is None:
            return
        self.last_challenge = now
        self.challenges_sent += 1
        self.send(self.sender, VlmccChallenge(
            session_id=self.cfg.session_id, timestamp=ts_us(now), stamp=self._echo_stamp(),
            rate=min(int(rate_bps(self.W, self.rtt_hat, self.p.packet_size)), 0xFFFFFFFF),
            rcvr_id=self.me, rtt=min(int(self.rtt_hat * 1e6), 0xFFFFFFFF),
            win_size=max(1, int(self.W))).encode())
