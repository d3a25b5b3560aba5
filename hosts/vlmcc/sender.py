"""VLMCC's sender as the paper has it (2.2-2.4); the methods marked ``@hook`` are the
ones rules may override, doing here what the paper does (often nothing).  ``docs/protocols/vlmcc.md`` maps each to its test."""

from __future__ import annotations

import math
from typing import Any

from p4mcc.hosts.core import Address
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.rtt import SmoothedRtt, lowest
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tcp_rules import vegas_diff
from p4mcc.hosts.vlmcc.constants import G, G_DEV, INITIAL_LOSS_TIMEOUT, MAX_BURST, THRESHOLDS, rate_bps
from p4mcc.hosts.vlmcc.params import VlmccParams
from p4mcc.hosts.wire import VlmccAck, VlmccChallenge, VlmccData, VlmccStart, seconds_since, ts_us


def _estimate(field: str) -> Any:
    """A read-write view of the RTT estimator's ``field``: eqs. (1), (2) keep it there."""
    return property(lambda s: getattr(s.est, field), lambda s, v: setattr(s.est, field, v))


class VlmccSender(SessionEndpoint[VlmccParams], role="vlmcc-sender"):
    """The sender: Vegas toward the leader, challenge arbitration, leadership recovery."""

    TIMERS = frozenset({"loss", "round", "tx"})  # what on_timer handles (Endpoint.TIMERS)

    COUNTERS = ("losses", "halvings", "leader_changes", "leader_losses", "challenges", "rejected", "refused")
    rtt = _estimate("srtt")  # eqs. (1), (2): None before the first sample
    dev = _estimate("rttvar")

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.group: Address = (config.group, config.port)
        self.W = float(self.p.initial_window)
        self.est = SmoothedRtt(alpha=G, beta=G_DEV, mean_first=True)
        self.base_rtt: float | None = None
        self.slowstart = True
        self.leader, self.leader_since, self.leaderless = 0, -math.inf, False
        self.next_seq, self.sent_since_ack = 1, 0
        self.cut_seq = 0  # the next sequence number when W was last cut
        self.outstanding: dict[int, float] = {}  # seq -> send time
        self.late: dict[int, float] = {}  # declared lost: send times kept for RTT samples
        self.last_send: float | None = None
        self.next_tx = 0.0
        self.last_halve = self.last_ack = -math.inf
        self.leader_log: list[tuple[float, int]] = []
        self._new_round()

    def _new_round(self) -> None:
        """This round's ACKs and RTT samples (their mean is what the round measured)."""
        self.acks_in_round, self.round_rtt_sum, self.round_rtt_n = 0, 0.0, 0

    @property
    def srtt(self) -> float:
        return self.rtt if self.rtt is not None else self.p.initial_rtt

    @property
    def rate_bps(self) -> float:
        """The rate announced in every data packet: W / rtt."""
        return rate_bps(self.W, self.srtt, self.p.packet_size)

    @hook
    def loss_timeout(self) -> float:
        """2.2: no ACK within ``rtt + 4·dev`` means lost (TCP's RTO rule)."""
        return INITIAL_LOSS_TIMEOUT if self.rtt is None else self.srtt + 4 * self.dev

    def pacing_delay(self) -> float:
        """Equation (3): ``rtt · MaxSegment / W`` between bursts."""
        return self.srtt / max(self.W, 1.0)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if msg is None:
            return
        if isinstance(msg, (VlmccAck, VlmccChallenge)):
            if not self._genuine(msg.rcvr_id, src):
                self.refused += 1
                return
            (self._on_ack if isinstance(msg, VlmccAck) else self._on_challenge)(msg, src, now)
        self._pump(now)

    def on_timer(self, name: str, now: float) -> None:
        if name == "loss":
            self._check_losses(now)
        elif name == "round":
            self._round(now)
        self._pump(now)  # "tx", and what a loss or a round opened

    @hook
    def _genuine(self, rid: int, src: Address) -> bool:
        return True  # the paper trusts every receiver's id

    @hook
    def _on_ack(self, m: VlmccAck, src: Address, now: float) -> None:
        if m.rcvr_id != self.leader or self.leader == 0:
            return
        sent = self.outstanding.pop(m.seq, self.late.pop(m.seq, None))  # a late ACK still samples RTT
        self.sent_since_ack = 0
        self.last_ack = now
        self.leaderless = False  # the leader was only quiet: it leads on
        if sent is not None:
            self._acked(m, sent, now)

    @hook
    def _acked(self, m: VlmccAck, sent: float, now: float) -> None:
        """An ACK of a packet sent at ``sent``: an RTT sample (eqs. 1, 2) and base_rtt."""
        rtt = seconds_since(m.tstamp_comp, now)
        if rtt < 0:
            return
        rtt = self._ack_rtt(rtt, sent, now)
        self.acks_in_round += 1
        self.est.sample(rtt)
        self.base_rtt = lowest(self.base_rtt, rtt)
        self._sampled(rtt)
        self.round_rtt_sum += rtt
        self.round_rtt_n += 1
        self._detect_losses(m.seq, now)
        if self.timer_at("round") is None:
            self.set_timer("round", now + self.srtt)

    @hook
    def _ack_rtt(self, rtt: float, sent: float, now: float) -> float:
        return rtt  # the echo's age

    @hook
    def _sampled(self, rtt: float) -> None:
        """After each RTT sample: nothing more in the paper."""

    @hook
    def _detect_losses(self, seq: int, now: float) -> None:
        """2.2 finds losses by the timer alone."""

    def vegas_diff(self) -> float | None:
        """Extra packets queued (:func:`hosts.tcp_rules.vegas_diff`)."""
        if self.base_rtt is None or self.rtt is None or self.rtt <= 0:
            return None
        return vegas_diff(self.W / self.rtt, self.rtt, self.base_rtt)

    @hook
    def _round(self, now: float) -> None:
        """Once per RTT: the window's adjustment, or leadership-loss probing."""
        if self.leaderless:
            self._leaderless_round()
        elif self.acks_in_round:
            self._adjust_window()
        self._new_round()
        if self.leader:
            self.set_timer("round", now + self.srtt)

    @hook
    def _leaderless_round(self) -> None:
        """2.4: W grows by one per RTT to provoke a challenge."""
        self.W = min(self.p.max_window, self.W + 1)

    @hook
    def _adjust_window(self) -> None:
        """2.2: the Vegas rule (slow start doubles W until more than γ packets queue)."""
        diff = self.vegas_diff()
        if diff is None:
            return
        if self.slowstart:
            if THRESHOLDS.leaves_slow_start(diff):
                self.slowstart = False
            else:
                self.W = min(self.p.max_window, self.W * 2)
        if not self.slowstart:
            step = THRESHOLDS.step(diff)
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
        """``n`` lost on the leader's path; ``since``: the timer's oldest send time; ``newest``: top seq."""
        if not self.leaderless:
            self.losses += n
            self._loss_response(n, now, since, newest)

    @hook
    def _loss_response(self, n: int, now: float, since: float | None, newest: int | None) -> None:
        """2.2: halve W at most once per RTT."""
        if now - self.last_halve >= self.srtt:
            self._halve(now)

    @hook
    def _halve(self, now: float) -> None:
        self.W = max(1.0, self.W / 2)
        self.slowstart = False
        self.last_halve = now
        self.cut_seq = self.next_seq
        self.halvings += 1

    def _arm_loss(self) -> None:
        if self.outstanding:
            self.set_timer("loss", min(self.outstanding.values()) + self.loss_timeout())
        else:
            self.cancel_timer("loss")

    def _on_challenge(self, m: VlmccChallenge, src: Address, now: float) -> None:
        self.challenges += 1
        if m.win_size == 0:  # an RTT probe from a joining receiver; the first one leads
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
        self._adopt(m)
        self.slowstart = False
        self.base_rtt = self._base_rtt_for(m.rcvr_id)
        self.outstanding.clear()  # packets sent before the change count as ACKed
        self.sent_since_ack = 0
        self._arm_loss()

    @hook
    def _adopt(self, m: VlmccChallenge) -> None:
        """2.3: the challenger's window and RTT become the sender's."""
        self.W = max(1.0, float(m.win_size))
        if m.rtt:
            self.rtt = m.rtt / 1e6

    @hook
    def _base_rtt_for(self, rid: int) -> float | None:
        return None  # a new leader's path has its own propagation delay: learnt afresh

    @hook
    def accept_challenge(self, m: VlmccChallenge, now: float) -> bool:
        """2.3's policy: settle a few RTTs after a change; keep a minimum rate; lower the rate."""
        if self.leaderless or self.leader == 0:
            return True
        if now - self.leader_since < self.p.holdoff_rtts * self.srtt:
            return False
        new_rate = rate_bps(m.win_size, m.rtt / 1e6 if m.rtt else self.srtt, self.p.packet_size)
        return new_rate >= self.p.min_rate_bps and self._slower(new_rate)

    @hook
    def _slower(self, new_rate: float) -> bool:
        return new_rate < self.rate_bps  # the challenge lowers the rate

    @hook
    def _set_leader(self, rid: int, src: Address, now: float) -> None:
        if rid != self.leader:
            self.leader_changes += 1
            self.leader_log.append((now, rid))
        self.leader, self.leader_since, self.leaderless = rid, now, False
        self.last_ack = now  # the new leader's silence counts from now
        self._new_round()
        self.set_timer("round", now + self.srtt)

    @hook
    def _leader_lost(self, now: float) -> None:
        """2.4: a whole window without a single ACK: the leader is gone."""
        self.leaderless = True
        self.leader_losses += 1
        self.outstanding.clear()

    def _pump(self, now: float) -> None:
        if self.leader == 0:
            return
        if now < self.next_tx:
            self.set_timer("tx", self.next_tx)
            return
        sent, burst = 0, self._burst()
        while sent < burst and self._window_open(now):
            self._send(now)
            sent += 1
        self._after_burst(now, sent, burst)

    @hook
    def _burst(self) -> int:
        return 1 if self.leaderless else MAX_BURST  # leaderless: one window per RTT (2.4)

    @hook
    def _after_burst(self, now: float, sent: int, burst: int) -> None:
        if sent:
            self.next_tx = now + self.pacing_delay()
            self.set_timer("tx", self.next_tx)
        elif self.leaderless:
            self.set_timer("tx", now + self.pacing_delay())

    @hook
    def _leader_silence_limit(self) -> float:
        return 0.0  # 2.4 counts the window only

    def _window_open(self, now: float) -> bool:
        if (not self.leaderless and self.sent_since_ack > self.W
                and now - self.last_ack > self._leader_silence_limit()):
            self._leader_lost(now)
        # Leaderless, one window per RTT: pacing alone spaces the packets.
        return self.leaderless or len(self.outstanding) < self._window_limit()

    @hook
    def _window_limit(self) -> int:
        return int(self.W)

    def _send(self, now: float) -> None:
        s, self.next_seq = self.next_seq, self.next_seq + 1
        drift = 0 if self.last_send is None else int(round((now - self.last_send) * 1e6))
        self.last_send = now
        self.send(self.group, VlmccData(
            session_id=self.cfg.session_id, seq=s, timestamp=ts_us(now), flags=self._data_flags(),
            leader_id=self._named_leader(), drift_prev=min(drift, 0x7FFFFFFF),
            rate=min(int(self.rate_bps), 0xFFFFFFFF), payload=bytes(self.p.packet_size)).encode())
        self.sent_since_ack += 1
        if not self.leaderless:
            self.outstanding[s] = now
            if self.timer_at("loss") is None:
                self._arm_loss()

    @hook
    def _data_flags(self) -> int:
        return 0

    @hook
    def _named_leader(self) -> int:
        return self.leader

    @hook
    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        values = {"cwnd": self.W, "rate_bps": self.rate_bps, "rtt_s": self.srtt, "leader": self.leader,
                  "leader_changes": self.leader_changes, "losses": self.losses, "packets_sent": self.next_seq - 1}
        return values, "leaderless" if self.leaderless else "slowstart" if self.slowstart else "steady"
