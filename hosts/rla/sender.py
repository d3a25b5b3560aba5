"""RLA -- the Random Listening Algorithm (Wang and Schwartz, SIGCOMM '98), the paper's sender.

The numbered rules in the docstrings are section 3.3's (``docs/protocols/rla.md``
lists them with their tests); where the paper says "the same as in TCP" the core
follows RFC 6298, 5681 and 6675.  Rules (:mod:`hosts.rla.rules`) override the hooks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from p4mcc.hosts.core import Address, node_id
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint
from p4mcc.hosts.reliable import Scoreboard, SendGate, ack_from_one_more, payload_for
from p4mcc.hosts.rla.constants import AWND_GAIN, CPERIOD_RTTS, CUT_FLOOR, FORCED_CUT_RTTS, INTERVAL_GAIN, MAX_BACKOFF
from p4mcc.hosts.rla.params import RlaParams
from p4mcc.hosts.rtt import SmoothedRtt
from p4mcc.hosts.rules import hook
from p4mcc.hosts.tcp_rules import DUPTHRESH, LEAST_SSTHRESH
from p4mcc.hosts.wire import Flags, RlaData, RlaSack, seconds_since, ts_us


@dataclass
class _Receiver:
    """The sender's state for one receiver."""

    rid: int
    addr: Address
    sb: Scoreboard = field(default_factory=Scoreboard)
    rtt: SmoothedRtt = field(default_factory=SmoothedRtt)
    adv_buf: int = 0
    cperiod_start: float = -math.inf
    last_signal_pkts: int = 0
    interval_avg: float | None = None
    lost_pending: set[int] = field(default_factory=set)  # lost, not yet resent
    lost_since: dict[int, float] = field(default_factory=dict)
    rexmit_at: dict[int, float] = field(default_factory=dict)  # resent, awaiting ACK
    last_heard: float = 0.0

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

    TIMERS = frozenset({"rto"})  # what on_timer handles (Endpoint.TIMERS)

    #: Events counted for metrics and tests (:class:`hosts.core.Counters`).
    COUNTERS = ("congestion_signals", "forced_cuts", "random_cuts", "ignored_signals", "rare_losses",
                "timeouts", "mcast_rexmits", "ucast_rexmits", "feedback", "forged")
    #: Rule 2's period and rule 3's floor, as class constants so a rule can change them.
    cperiod_rtts = CPERIOD_RTTS
    cut_floor = CUT_FLOOR

    def __init__(self, config: SessionConfig, rng: random.Random | None = None) -> None:
        super().__init__(config)
        self.rng = rng if rng is not None else random.Random(config.seed)
        self.group: Address = (config.group, config.port)
        self.rcvrs: dict[int, _Receiver] = {}
        self.cwnd = float(self.p.initial_cwnd)
        #: RFC 5681 3.1: "arbitrarily high (e.g., ... the largest possible advertised window)".
        self.ssthresh = float(self.p.rcv_buffer)
        self.awnd = self.cwnd
        self.next_seq = 1
        self.packets_sent = 0  # new packets, the clock of congestion intervals
        self.out: dict[int, _Out] = {}
        self.rexmit_queue: set[int] = set()
        self.last_window_cut = 0.0
        self.recover: int | None = None  # fast recovery until min_last_ack reaches this
        self.cut_seq = 0  # highest sequence number sent before the last cut
        self.rto_backoff = 0
        self.fast_rexmit = False

    # Derived state ---------------------------------------------------------
    @property
    def min_last_ack(self) -> int:
        """Every packet up to this one is received by every receiver."""
        return min((r.sb.cum_ack for r in self.rcvrs.values()), default=0)

    @property
    def largest_srtt(self) -> float:
        """The round trip the sender's own waits (repairs, held losses) cover."""
        return max(r.srtt for r in self.rcvrs.values())

    @property
    def num_trouble_rcvr(self) -> int:
        return sum(1 for r in self.rcvrs.values() if self._troubled(r))

    @property
    def in_recovery(self) -> bool:
        return self.recover is not None

    @hook
    def paced_srtt(self) -> float:
        """The round trip the window is sent once per: the largest srtt, since every receiver's
        SACK acknowledges it (rule 5); a rule that clocks the window by one receiver says its own."""
        return self.largest_srtt

    @hook
    def _ready(self) -> bool:
        return len(self.rcvrs) >= max(1, self.p.receivers)

    # Endpoint hooks --------------------------------------------------------
    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        msg = self.decode_session(data, self.cfg.session_id)
        if not isinstance(msg, RlaSack):
            return
        if msg.rcvr_id != node_id(src[0]):
            # p4mcc: a receiver's id is its address, as MTCP's sender holds it; a host naming
            # another's id would acknowledge that one's holes, which would never be repaired
            self.forged += 1
            return
        self.feedback += 1
        if not (msg.sflags and self._membership(msg, now)):  # a plain SACK (sflags 0) says nothing of it
            self._on_sack(msg, src, now)
            if self._clocked_elsewhere(msg.rcvr_id, now):
                return
        self._pump(now)

    def on_timer(self, name: str, now: float) -> None:
        if name == "rto":
            self._on_timeout(now)
            self._pump(now)

    # Hooks the rules fill (the paper: nothing) -------------------------------
    @hook
    def _membership(self, m: RlaSack, now: float) -> bool:
        """What a SACK with ``sflags`` says of its receiver's membership; True when that is all it
        says and its acknowledgements are not taken (the paper's receivers are a fixed set: never)."""
        return False

    @hook
    def _resolve_event(self, now: float, force: bool = False) -> None:
        """Draw for a pending loss event (the paper draws at each signal)."""

    @hook
    def _choose_clock(self) -> None:
        """Choose the receiver whose SACKs send (the paper: every SACK sends)."""

    @hook
    def _clocked_elsewhere(self, rid: int, now: float) -> bool:
        """True when a SACK from ``rid`` should send nothing."""
        return False

    @hook
    def _awaits_repair(self, r: _Receiver, s: int, now: float) -> bool:
        """True when r's loss of ``s`` is answered by a repair already on its way."""
        return False

    @hook
    def _repair_joiners(self, s: int, want: list[_Receiver], now: float) -> list[_Receiver]:
        """Send ``s`` to receivers whose stream starts there; the rest (all here)."""
        return want

    @hook
    def _cut_already_answers(self, lost: list[int] | None, by_timeout: bool) -> bool:
        """True when the last cut answered this signal (the paper: rule 2 alone)."""
        return False

    @hook
    def _data_flags(self, flags: int) -> int:
        """Flags on every data packet (marks a rule's receivers read)."""
        return flags

    @hook
    def _new_data_limit(self, pipe: int) -> int:
        """The highest new packet the pump may send (rule 5's bound)."""
        return self._upper_bound()

    # Feedback --------------------------------------------------------------
    @hook
    def _receiver(self, rid: int, src: Address, cum_ack: int = 0) -> _Receiver:
        r = self.rcvrs.get(rid)
        if r is None:
            r = _Receiver(rid, src, rtt=self.p.rtt_estimator(), adv_buf=self.p.rcv_buffer,
                          last_signal_pkts=self.packets_sent, last_heard=self.now)
            # A receiver first heard holding data owes nothing up to its cumulative ACK.
            r.sb.start_after(min(cum_ack, self.next_seq - 1))
            self.rcvrs[rid] = r
            # A receiver first heard mid-stream has acknowledged nothing: recount.
            for s, o in self.out.items():
                o.acks = sum(1 for x in self.rcvrs.values() if x.sb.acked(s))
            if self.out or self.next_seq > 1:
                for s in range(r.sb.cum_ack + 1, self.next_seq):
                    if s not in self.out:
                        self.out[s] = _Out(-math.inf, -math.inf, len(self.rcvrs) - 1)
        return r

    @hook
    def _admit(self, m: RlaSack, src: Address, now: float) -> _Receiver:
        """The sender's record of the SACK's receiver, created at its first word."""
        return self._receiver(m.rcvr_id, src, m.cum_ack)

    @hook
    def _note_echo(self, m: RlaSack) -> None:
        """Record what the SACK echoes of the data's marks, before the sender acts on it
        (the paper's data carries none)."""

    @hook
    def _sack_window(self, now: float) -> None:
        """The window's move on a SACK once rules 1-6 ran on it (the paper: none; rule 4
        grows the window per packet every receiver acknowledged)."""

    @hook
    def _on_sack(self, m: RlaSack, src: Address, now: float) -> None:
        self._note_echo(m)
        r = self._admit(m, src, now)
        r.last_heard = now
        r.addr = src  # unicast repairs go where its feedback comes from
        r.adv_buf = m.adv_buf
        if m.echo_ts:
            rtt = seconds_since(m.echo_ts, now)
            if 0 <= rtt < 60:
                r.rtt.sample(rtt)
                self.rto_backoff = 0
        newly = r.sb.update(m.cum_ack, m.blocks, limit=self.next_seq - 1)
        self._take_acks(r, newly, now)
        self._resolve_event(now)
        new_losses = self._detect_losses(r, newly)
        if new_losses:
            for s in new_losses:
                if not self._awaits_repair(r, s, now):
                    self._mark_lost(r, s, now)
            self._congestion(r, now, new_losses)
            self.fast_rexmit = True  # TCP's fast retransmit: the first repair goes at once
        self._sack_window(now)

    @hook
    def _take_acks(self, r: _Receiver, newly: list[int], now: float) -> None:
        """Count r's new acknowledgements; rule 4 for packets now ACKed by all."""
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

    def _detect_losses(self, r: _Receiver, newly: list[int]) -> list[int]:
        """Rule 1: packets three lower than one r SACKed, not yet known lost."""
        return [s for s in r.sb.lost(DUPTHRESH)
                if s < self.next_seq and s not in r.lost_pending and s not in r.rexmit_at]

    def _owed_since(self, r: _Receiver) -> float | None:
        """When the oldest packet r lacks was first sent (None: it owes nothing)."""
        return next((o.first_sent for s, o in self.out.items() if not r.sb.acked(s)), None)

    @hook
    def _forget(self, rids: list[int], since: float | None = None) -> None:
        """Remove receivers (for rules that change the group); release what the
        rest acknowledged.  ``since``, for the rules: they were dropped, silent since then."""
        for rid in rids:
            del self.rcvrs[rid]
        n = len(self.rcvrs)
        for s, o in list(self.out.items()):
            o.acks = sum(1 for x in self.rcvrs.values() if x.sb.acked(s))
            if o.acks >= n:
                del self.out[s]
                self.rexmit_queue.discard(s)
        if self.recover is not None and self.min_last_ack >= self.recover:
            self.recover = None
        self.rto_backoff = 0
        self._choose_clock()  # on what the rest still lack

    def _mark_lost(self, r: _Receiver, s: int, now: float) -> None:
        r.lost_pending.add(s)
        r.lost_since.setdefault(s, now)
        r.rexmit_at.pop(s, None)
        if s in self.out:
            self.rexmit_queue.add(s)

    @hook
    def _acked_by_all(self, s: int, now: float) -> None:
        """Rule 4: grow the window once a packet is ACKed by every receiver."""
        self._grow(now)

    @hook
    def _grow(self, now: float) -> None:
        """Rule 4's growth for one acknowledged packet (a rule may clock it by other ACKs)."""
        if self.in_recovery:
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += 1.0
        else:
            self.cwnd += 1.0 / self.cwnd
        self.awnd += AWND_GAIN * (self.cwnd - self.awnd)

    # Congestion ------------------------------------------------------------
    def _effective_interval(self, r: _Receiver) -> float | None:
        """EWMA interval between r's signals, in packets sent; the open interval
        counts too, so a receiver whose losses stopped stops being troubled."""
        if r.interval_avg is None:
            return None
        return max(r.interval_avg, float(self.packets_sent - r.last_signal_pkts))

    def min_congestion_interval(self) -> float | None:
        return min((v for r in self.rcvrs.values() if (v := self._effective_interval(r)) is not None), default=None)

    @hook
    def _troubled(self, r: _Receiver) -> bool:
        """Rule 6: congestion probability above 1 / (eta * min_congestion_interval)."""
        iv = self._effective_interval(r)
        lo = self.min_congestion_interval()
        if iv is None or lo is None:
            return False
        prob = 1.0 / max(iv, 1.0)
        return prob > 1.0 / (self.p.eta * max(lo, 1.0))

    @hook
    def _congestion(self, r: _Receiver, now: float, lost: list[int] | None = None,
                    by_timeout: bool = False) -> None:
        """Rules 2, 3 and 6 for a loss detected at receiver ``r``."""
        if now - r.cperiod_start <= self.cperiod_rtts * r.srtt:
            return  # same congestion period (rule 2)
        r.cperiod_start = now
        self.congestion_signals += 1

        interval = float(max(1, self.packets_sent - r.last_signal_pkts))
        if r.interval_avg is None:
            r.interval_avg = interval
        else:
            r.interval_avg += INTERVAL_GAIN * (interval - r.interval_avg)
        r.last_signal_pkts = self.packets_sent
        if not self._troubled(r):
            self.rare_losses += 1
            return
        if self._cut_already_answers(lost, by_timeout):
            return
        if now - self.last_window_cut > FORCED_CUT_RTTS * self.awnd * r.srtt:
            self.forced_cuts += 1
            self._cut(now)
            return
        self._randomized_cut(r, now, lost)

    @hook
    def _randomized_cut(self, r: _Receiver, now: float, lost: list[int] | None) -> None:
        """Rule 3: cut with probability ``pthresh = 1 / num_trouble_rcvr``."""
        self._draw(1.0 / max(self.num_trouble_rcvr, 1), now)

    def _draw(self, pthresh: float, now: float) -> None:
        """Rule 3's draw: cut with probability ``pthresh``, else the signal is ignored."""
        if self.rng.random() > pthresh:
            self.ignored_signals += 1
        else:
            self.random_cuts += 1
            self._cut(now)

    @hook
    def _cut(self, now: float) -> None:
        """Rule 3's halving; ssthresh as TCP's (section 4.1 (2), RFC 5681 eq. 4)."""
        self.cwnd = max(self.cut_floor, self.cwnd / 2)
        self.ssthresh = max(LEAST_SSTHRESH, self.cwnd)
        self.last_window_cut = now
        self.recover = self.next_seq - 1  # fast recovery until all of this is ACKed
        self.cut_seq = self.next_seq - 1

    def _on_timeout(self, now: float) -> None:
        """Rule 1's other half, read as TCP reads a timeout (section 3.3 leaves
        timeouts to TCP): once a receiver's oldest packet is unACKed for a whole
        RTO, everything it lacks is lost (RFC 5681 3.1's go-back, RFC 6675 5.1)."""
        self.timeouts += 1
        cwnd_before = self.cwnd
        oldest = min(self.out, default=None)
        for r in self.rcvrs.values():
            rto = r.rtt.rto * (2 ** self.rto_backoff)
            lost = [s for s in self.out if not r.sb.acked(s) and s not in r.lost_pending]
            if not any(r.rexmit_at.get(s, self.out[s].last_sent) + rto <= now for s in lost):
                continue
            for s in lost:
                # A loss by timeout needs no wait before its repair: a whole RTO was waited.
                self._mark_lost(r, s, -math.inf)
            self._congestion(r, now, lost, by_timeout=True)
        if oldest is not None and not any(r.sb.acked(oldest) for r in self.rcvrs.values()):
            self._timeout_response(now, oldest, cwnd_before)
        self.rto_backoff = min(self.rto_backoff + 1, MAX_BACKOFF)

    @hook
    def _timeout_response(self, now: float, oldest: int, cwnd_before: float) -> None:
        """No receiver acknowledged the oldest packet: TCP's timeout (section
        4.1 (3), RFC 5681 3.1); slow start from one packet ends fast recovery."""
        self._timeout_ssthresh(oldest, cwnd_before)
        self.cwnd = 1.0
        self.last_window_cut = now
        self.cut_seq = self.next_seq - 1
        self.recover = None

    @hook
    def _timeout_ssthresh(self, oldest: int, cwnd_before: float) -> None:
        """Section 4.1 (3): ssthresh is half the window at every timeout."""
        self.ssthresh = max(LEAST_SSTHRESH, cwnd_before / 2)

    # Sending ---------------------------------------------------------------
    @hook
    def _pipe(self) -> int:
        """Packets believed in the network: outstanding, not lost unless resent (RFC 6675)."""
        return sum(1 for s in self.out if s not in self.rexmit_queue)

    def _upper_bound(self) -> int:
        """Rule 5: highest packet number the receivers' buffers allow."""
        return min((r.sb.cum_ack + max(r.adv_buf, 0) for r in self.rcvrs.values()), default=0)

    @hook
    def _started(self, now: float) -> None:
        self.last_window_cut = now

    def _pump(self, now: float) -> None:
        if not self._may_send(now):
            return
        pipe = self._pipe()
        for s in sorted(self.rexmit_queue):  # retransmissions first, in order
            if pipe >= int(self.cwnd) and not self.fast_rexmit:
                break
            if self._retransmit(s, now):
                pipe += 1
                self.fast_rexmit = False
        limit = self._new_data_limit(pipe)
        while pipe < int(self.cwnd) and self.next_seq <= limit:
            if self.p.total_packets and self.next_seq > self.p.total_packets:
                break
            self._send_new(now)
            pipe += 1
        if self.p.total_packets and self.next_seq > self.p.total_packets and not self.out:
            self._finish(now)
            return
        self._arm_timers(now)

    def _finish(self, now: float) -> None:
        """Every packet is ACKed by every receiver: the last record, then silence."""
        self.metric(self.metrics(now)[0], "done")  # type: ignore[index]
        self.done = True
        self.cancel_timer("rto")

    def _arm_timers(self, now: float) -> None:
        self._arm_rto()

    def _data(self, seq: int, now: float, flags: int = 0) -> bytes:
        return RlaData(session_id=self.cfg.session_id, seq=seq, timestamp=ts_us(now), flags=self._data_flags(flags),
                       payload=payload_for(seq, self.p.packet_size)).encode()

    def _send_new(self, now: float) -> None:
        s = self.next_seq
        self.next_seq += 1
        self.packets_sent += 1
        self.out[s] = _Out(now, now, sum(1 for r in self.rcvrs.values() if r.sb.acked(s)))
        self.send(self.group, self._data(s, now))

    @hook
    def _heard_all(self, s: int) -> bool:
        """Footnote 8: the sender "waits until it hears from all the receivers"
        about ``s``: each reported a packet at or above it."""
        return all(r.sb.highest >= s for r in self.rcvrs.values())

    @hook
    def _retransmit(self, s: int, now: float) -> bool:
        """Resend ``s`` to the receivers missing it; multicast above ``rexmit_thresh``."""
        want = [r for r in self.rcvrs.values() if s in r.lost_pending and not r.sb.acked(s)]
        if not want:
            self.rexmit_queue.discard(s)
            return False
        # Wait to hear from every receiver about s (so the multicast/unicast
        # choice counts them all), but never longer than the largest srtt.
        waited = now - min(r.lost_since.get(s, now) for r in want)
        if not self._heard_all(s) and waited < self.largest_srtt:
            return False
        data = self._data(s, now, Flags.RETRANSMIT)
        rest = self._repair_joiners(s, want, now)
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
        """RFC 6298 per receiver: the earliest expiry of what some receiver still owes."""
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
        values = {"cwnd": self.cwnd, "ssthresh": self.ssthresh, "awnd": self.awnd,
                  "num_trouble_rcvr": self.num_trouble_rcvr, "packets_sent": self.packets_sent,
                  "min_last_ack": self.min_last_ack, "congestion_signals": self.congestion_signals,
                  "window_cuts": self.forced_cuts + self.random_cuts, "forced_cuts": self.forced_cuts,
                  "rtt_s": self.largest_srtt if self.rcvrs else 0.0}
        return values, ("recovery" if self.in_recovery else "slowstart" if self.cwnd < self.ssthresh
                        else "steady")
