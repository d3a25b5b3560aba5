"""TCP cross traffic: a bulk NewReno sender with SACK recovery, and its receiver.

A model of a Linux-like bulk transfer (iperf3), built to compete fairly and
measurably with the multicast protocols:

* **Sender.** Initial window 10 segments (RFC 6928); slow start and
  congestion avoidance with appropriate byte counting (RFC 3465, L = 2);
  loss recovery after three duplicate ACKs (or when three segments above a
  hole are SACKed) following RFC 6675's SACK recovery: ssthresh =
  max(cwnd/2, 2 segments), retransmit holes first, send new data while the
  pipe estimate is below cwnd, stay in recovery through partial ACKs until
  the recovery point is acknowledged (NewReno, RFC 6582).  How much is sent
  during recovery is Proportional Rate Reduction (RFC 6937, Linux's since
  3.2; ``recovery="prr"``, the default): each ACK lets out ssthresh /
  RecoverFS of what it reports delivered, so the halved flight leaves
  spread over the recovery round trip.  ``recovery="rfc6675"``: cwnd =
  ssthresh at once, the model before, which sends nothing until the pipe
  falls to half and then one segment per ACK: the halved flight leaves as
  one train in the second half of the round trip, and the ACK clock keeps
  it a train, which drop-tail queues then hit harder than paced or
  ACK-clocked competitors (docs/simulator.md, "Proportional Rate Reduction").
  Retransmission timer after RFC 6298 (SRTT/RTTVAR with alpha 1/8, beta
  1/4, exponential backoff, Karn's rule: no samples from retransmitted
  segments), with the floor where Linux puts it (``rto="linux"``, the
  default): RTO = SRTT + max(G, 4 RTTVAR, ``min_rto``), ``min_rto`` 200 ms
  (Linux's ``TCP_RTO_MIN``, applied to the variance term in
  ``tcp_rtt_estimator``), which is what iperf3 runs in Mininet.
  ``rto="rfc6298"``: RTO = max(SRTT + max(G, 4 RTTVAR), ``min_rto``) with the
  RFC's 1 s floor (2.4), the model before; on paths whose bandwidth-delay
  product is a few packets, where TCP lives in timeouts, it leaves TCP with
  a fraction of what Linux gets.  On timeout: ssthresh = max(cwnd/2, 2),
  cwnd = 1, every unSACKed segment is retransmitted again.  Retransmitting
  the oldest outstanding segment restarts the timer, as Linux does
  (``tcp_xmit_retransmit_queue``).  A timeout the
  receiver shows to be spurious is undone as Linux undoes it
  (``tcp_try_undo_loss``, RFC 3708's D-SACK detection): once every segment
  the timeout retransmitted has come back in a D-SACK (the original had
  arrived), cwnd and ssthresh return to their values before the timeout.
  Without it, the 200 ms floor on the variance term fired on every queue
  that grew faster than RTTVAR followed (a 1 Mb/s path with a 50-packet
  queue: 7 % of segments retransmitted, TCP at 0.21 of 1 Mb/s where
  Linux took 0.44).
* **Receiver.** Cumulative ACK plus up to four SACK blocks (RFC 2018; most
  recent block first); delayed ACKs (RFC 1122/5681): every second full
  segment, or after ``ack_delay`` (40 ms, Linux's minimum delayed-ACK
  timeout), and at once for out-of-order data or data that fills a hole.
  A duplicate segment is reported in a D-SACK block, the first block of
  the next ACK (RFC 2883), as Linux does.

No handshake is modelled: the flow starts sending at its start time (a
connection already open), and the receive window is fixed.  Sequence numbers
on the wire are bytes (segment index times MSS); a flow must stay under 4 GiB.
Segments are real frames with real headers so switches forward them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4mcc.hosts.rtt import SmoothedRtt
from p4mcc.hosts.tcp_rules import DELAYED_ACK_TIMEOUT, DUPTHRESH, INITIAL_RTO, INITIAL_WINDOW, LEAST_SSTHRESH, ack_at_once
from p4mcc.netsim import packets as pk
from p4mcc.scenario.model import TCP_RECOVERY_RULES as RECOVERY_RULES
from p4mcc.scenario.model import TCP_RTO_RULES as RTO_RULES

#: RFC 8985 7.2's WCDelAckT: the worst-case delayed ACK a one-segment flight waits for.
TLP_WORST_DELAYED_ACK = 0.2

if TYPE_CHECKING:
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.host import HostNode


@dataclass
class TcpStats:
    segments_sent: int = 0
    retransmits: int = 0
    timeouts: int = 0
    fast_recoveries: int = 0
    acked_bytes: int = 0
    rtt_samples: int = 0
    rtt_sum: float = 0.0
    spurious_timeouts: int = 0  # timeouts undone on D-SACK evidence
    tail_loss_probes: int = 0  # RFC 8985 7 probes sent


class TcpSender:
    """Bulk sender on ``host`` toward ``dst_ip:dport`` (see the module docstring)."""

    G = 0.001  # clock granularity in the RTO formula
    #: Retransmitting the oldest outstanding segment restarts the
    #: retransmission timer (Linux's ``tcp_xmit_retransmit_queue``).  RFC
    #: 6298 5.3 restarts it only on an ACK of new data, so in a recovery that
    #: finds its hole late (three SACKs on a window of a few packets behind a
    #: standing queue) it fired while the repair was still in flight: on a
    #: 1.14 Mb/s, 168 ms path with 31 packets of queue, 2 of 3 timeouts were
    #: spurious, each one a window retransmitted into the full queue.
    rearm_on_head_retransmit = True

    def __init__(self, sim: "Simulator", host: "HostNode", dst_ip: str, dport: int, sport: int, *,
                 mss: int = 1460, rwnd: int = 4 * 1024 * 1024, init_cwnd: int = INITIAL_WINDOW,
                 rto: str = "linux", min_rto: float | None = None, max_rto: float = 60.0,
                 recovery: str = "prr", label: str = "") -> None:
        if rto not in RTO_RULES:
            raise ValueError(f"rto must be one of {sorted(RTO_RULES)}, got {rto!r}")
        if recovery not in RECOVERY_RULES:
            raise ValueError(f"recovery must be one of {list(RECOVERY_RULES)}, got {recovery!r}")
        self.sim, self.host = sim, host
        self.label = label or f"{host.name}:{sport}"
        self.dst = pk.ip_int(dst_ip)
        self.dport, self.sport = dport, sport
        self.mss = mss
        self.rwnd_segs = max(2, rwnd // mss)
        self.cwnd = float(init_cwnd)
        self.ssthresh = float("inf")
        self.rto_rule = rto
        self.min_rto = RTO_RULES[rto] if min_rto is None else min_rto
        # RFC 6298's estimator (hosts.rtt, as the window protocols run it).
        # Linux floors the variance term, which is G in RFC 6298's formula;
        # RFC 6298 2.4 floors the whole timeout.
        if rto == "linux":
            self.rtt = SmoothedRtt(initial_rto=INITIAL_RTO, min_rto=0.0, max_rto=max_rto,
                                   granularity=max(self.G, self.min_rto))
        else:
            self.rtt = SmoothedRtt(initial_rto=INITIAL_RTO, min_rto=self.min_rto, max_rto=max_rto,
                                   granularity=self.G)
        self.una = 0  # oldest unacknowledged segment
        self.nxt = 0  # next new segment
        self.sacked: set[int] = set()
        self.retx: set[int] = set()  # retransmitted since the last RTO/recovery start
        self.lost: set[int] = set()  # marked lost, not yet retransmitted
        self.sent_at: dict[int, float] = {}
        self.ever_retx: set[int] = set()
        self.dupacks = 0
        self.in_recovery = False
        self.recover = 0
        self.high_sacked = -1
        self.running = False
        self._rto_token = 0
        self._rto_at: float | None = None
        #: After a timeout: (cwnd, ssthresh) before it, the segments it
        #: retransmitted that no D-SACK has shown spurious yet, and the
        #: highest segment sent when it fired (the episode ends past it).
        self._undo: tuple[float, float] | None = None
        self._undo_retrans: set[int] = set()
        self._undo_high = 0
        #: una when the retransmission timer last fired (-1: never).
        self._rto_una = -1
        #: RFC 8985's RACK.xmit_ts: the latest send time among the segments
        #: acknowledged so far (a retransmission's only when its round trip
        #: shows which copy arrived).
        self.rack_xmit_ts = -1.0
        #: RACK.rtt: the round trip of the segment that set ``rack_xmit_ts``.
        self.rack_rtt = 0.0
        #: RACK.end_seq: the segment that set ``rack_xmit_ts`` (ties between
        #: segments sent at one instant go by sequence, RFC 8985 6.2).
        self.rack_seg = -1
        self._rack_token = 0
        #: RFC 8985 7 (TLP): when the probe is due (None: no probe armed), the
        #: instant its pending timer event fires, that event's token, and
        #: whether a probe is out (one per episode, until an ACK acknowledges
        #: new data).  Every ACK moves the deadline; the one pending event
        #: follows it when it fires, so ACKs add no timer events.
        self._pto_deadline: float | None = None
        self._pto_event_at: float | None = None
        self._pto_token = 0
        self._tlp_out = False
        #: RFC 6937's state: segments delivered (cumulatively or by SACK) and
        #: sent since recovery began, and the flight when it began (RecoverFS).
        self.prr = recovery == "prr"
        self.prr_delivered = 0
        self.prr_out = 0
        self.recover_fs = 1
        self.stats = TcpStats()
        self._dmac = host.arp.get(self.dst, b"\xff" * 6)
        host.bind_tcp(sport, self)

    # Control -----------------------------------------------------------
    def start(self) -> None:
        self.running = True
        self._send_what_we_can()

    def stop(self) -> None:
        self.running = False
        self._rto_token += 1

    # Sending -------------------------------------------------------------
    def _emit(self, seg: int, retx: bool) -> None:
        h = self.host
        frame = pk.tcp_frame(h.mac, self._dmac, h.ip_int, self.dst, self.sport, self.dport,
                             seg * self.mss, 0, pk.TCP_ACK | pk.TCP_PSH, 65535, self.mss,
                             ident=h.next_ident())
        self.stats.segments_sent += 1
        if retx:
            self.stats.retransmits += 1
            self.retx.add(seg)
            self.ever_retx.add(seg)
            if self._undo is not None and seg <= self._undo_high:
                self._undo_retrans.add(seg)  # the timeout's go-back, not a later recovery
        self.sent_at[seg] = self.sim.now
        if self.in_recovery:
            self.prr_out += 1
        h.send_frame(frame)
        if self._rto_at is None:
            self._arm_rto()

    def _pipe(self) -> int:
        """RFC 6675 pipe: segments believed in the network."""
        out = self.nxt - self.una - len(self.sacked) - len(self.lost)
        return max(0, out)

    def _next_hole(self) -> int | None:
        for s in sorted(self.lost):
            return s
        return None

    def _send_what_we_can(self) -> None:
        if not self.running:
            return
        window = min(self.cwnd, self.rwnd_segs)
        timer_running = self._rto_at is not None  # else the first segment sent starts it
        rearm = False
        while self._pipe() < window:
            hole = self._next_hole()
            if hole is not None:
                self.lost.discard(hole)
                self._emit(hole, True)
                rearm = rearm or hole == self.una
                continue
            if self.nxt - self.una >= self.rwnd_segs:
                break
            seg = self.nxt
            self.nxt += 1
            self._emit(seg, False)
        if rearm and timer_running and self.rearm_on_head_retransmit:
            # Linux's tcp_xmit_retransmit_queue: retransmitting the oldest
            # outstanding segment restarts the timer, so it runs from the
            # repair, not from the last cumulative ACK before the loss.
            self._arm_rto()

    # Timer ---------------------------------------------------------------
    def _arm_pto(self) -> None:
        """RFC 8985 7.2: a probe timeout of 2 SRTT (plus the worst-case delayed
        ACK, 200 ms, when one segment is out), if it comes before the RTO."""
        self._pto_deadline = None
        srtt = self.rtt.srtt
        if (srtt is None or self._tlp_out or self.in_recovery or self.una >= self.nxt
                or self._rto_at is None or self._undo is not None):
            return
        at = self.sim.now + 2 * srtt + (TLP_WORST_DELAYED_ACK if self.nxt - self.una == 1 else 0.0)
        if at >= self._rto_at:
            return
        self._pto_deadline = at
        if self._pto_event_at is None or at < self._pto_event_at:
            self._schedule_pto(at)

    def _schedule_pto(self, at: float) -> None:
        self._pto_token += 1
        self._pto_event_at = at
        self.sim.at(at, self._on_pto, self._pto_token)

    def _on_pto(self, token: int) -> None:
        """RFC 8985 7.3: send one probe, new data if the window allows, else the
        last segment sent again; its ACK lets RACK find a tail loss the RTO
        would otherwise have had to."""
        if token != self._pto_token:
            return
        self._pto_event_at = None
        due = self._pto_deadline
        if due is None or not self.running or self.una >= self.nxt or self.in_recovery:
            return
        if self.sim.now < due:  # ACKs moved the deadline since this event was set
            self._schedule_pto(due)
            return
        self._pto_deadline = None
        self._tlp_out = True
        self.stats.tail_loss_probes += 1
        if self.nxt - self.una < self.rwnd_segs:
            seg = self.nxt
            self.nxt += 1
            self._emit(seg, False)
        else:
            self._emit(self.nxt - 1, True)
        self._arm_rto()

    def _arm_rto(self) -> None:
        self._rto_token += 1
        self._rto_at = self.sim.now + self.rto
        self.sim.at(self._rto_at, self._on_rto, self._rto_token)

    def _on_rto(self, token: int) -> None:
        if token != self._rto_token or not self.running:
            return
        self._rto_at = None
        if self.una >= self.nxt:
            return
        self.stats.timeouts += 1
        if self._undo is None or self.una > self._undo_high:
            # A new episode (a timeout after the last one's data was all
            # acknowledged, or the first): remember what to undo to.
            self._undo = (self.cwnd, self.ssthresh)
            self._undo_retrans = set()
        self._undo_high = self.nxt - 1
        if self.una != self._rto_una:
            # RFC 5681 3.1 (and Linux's tcp_enter_loss): ssthresh is held
            # constant when the timer fires again for a segment it already
            # retransmitted; halving cwnd = 1 again left ssthresh at 2 and
            # every outage longer than two RTOs a climb of +1 per RTT.
            self.ssthresh = self._halved_window()
        self._rto_una = self.una
        self.cwnd = 1.0
        self.rtt.back_off()
        self.in_recovery = False
        self.dupacks = 0
        self.retx.clear()
        self.lost = {s for s in range(self.una, self.nxt) if s not in self.sacked}
        self._send_what_we_can()
        if self._rto_at is None:
            self._arm_rto()

    def _halved_window(self) -> float:
        """ssthresh = max(cwnd / 2, 2 segments), as Linux's Reno does.

        RFC 5681 eq. (4) halves FlightSize, which for a bulk sender limited by
        its window is the window.  Halving the window itself, not the pipe
        (flight minus SACKed segments, which cuts a window that lost one
        packet by more than half) and not the flight (which after a burst of
        losses still counts every SACKed segment, so a timeout in recovery
        would set ssthresh far above the path's capacity and slow start would
        overshoot again, timeout after timeout).
        """
        return max(self.cwnd / 2.0, LEAST_SSTHRESH)

    @property
    def srtt(self) -> float | None:
        return self.rtt.srtt

    @property
    def rttvar(self) -> float:
        return self.rtt.rttvar

    @property
    def rto(self) -> float:
        """The retransmission timeout now, back-off included."""
        return self.rtt.rto

    def _rtt_sample(self, r: float) -> None:
        self.stats.rtt_samples += 1
        self.stats.rtt_sum += r
        self.rtt.sample(r)

    # Receiving ACKs ------------------------------------------------------
    def on_segment(self, p: pk.Parsed) -> None:
        if not (p.flags & pk.TCP_ACK) or not self.running:
            return
        mss = self.mss
        ack = p.ack // mss
        if p.sack and self._undo is not None:
            self._on_dsack(p.sack, ack)
        if ack > self.nxt:
            return  # acknowledges what we never sent: ignore
        # The RTT sample (Linux's tcp_clean_rtx_queue and tcp_sacktag): from
        # the oldest segment this ACK newly acknowledges, cumulatively or by
        # SACK, that was never retransmitted (Karn) and not SACKed before.  A
        # cumulative ACK that moves over segments SACKed long ago (a hole just
        # repaired) says nothing about the path's delay now: sampling the
        # highest of them measured the whole recovery (seconds on a 90 ms
        # path), and the inflated RTO then starved the flow in back-off.
        sampled_at: float | None = None
        newly_acked = [s for s in range(self.una, min(ack, self.nxt)) if s not in self.sacked]
        for l, r in p.sack:
            for s in range(max(l // mss, self.una, ack), min(r // mss, self.nxt)):
                if s not in self.sacked:
                    newly_acked.append(s)
                    self.sacked.add(s)
                    self.lost.discard(s)
                    if s > self.high_sacked:
                        self.high_sacked = s
        now = self.sim.now
        min_rtt = self.rtt.base
        for s in newly_acked:
            at = self.sent_at.get(s)
            if at is None:
                continue
            if s in self.ever_retx:
                # RFC 8985 6.2 step 2: a retransmitted segment dates the
                # delivery only when its round trip rules out the original
                # having been the copy that arrived (to the clock's granularity).
                if min_rtt is None or now - at < min_rtt - self.G:
                    continue
            elif sampled_at is None or at < sampled_at:
                sampled_at = at
            if at > self.rack_xmit_ts or (at == self.rack_xmit_ts and s > self.rack_seg):
                self.rack_xmit_ts, self.rack_seg = at, s
                self.rack_rtt = now - at
        if sampled_at is not None:
            self._rtt_sample(self.sim.now - sampled_at)
        if ack > self.una:
            newly = ack - self.una
            for s in range(self.una, ack):
                self.sent_at.pop(s, None)
                self.sacked.discard(s)
                self.lost.discard(s)
                self.retx.discard(s)
                self.ever_retx.discard(s)
            self.stats.acked_bytes += newly * mss
            self.una = ack
            self.dupacks = 0
            self._tlp_out = False
            if self.in_recovery:
                if ack > self.recover:
                    self.in_recovery = False
                    self.cwnd = self.ssthresh
                # partial ACK: stay in recovery; holes below high SACK get retransmitted
            elif self.cwnd < self.ssthresh:
                self.cwnd += min(newly, 2)
            else:
                self.cwnd += newly / self.cwnd
            if self.una < self.nxt:
                self._arm_rto()
            else:
                self._rto_token += 1
                self._rto_at = None
        elif ack == self.una and self.una < self.nxt:
            self.dupacks += 1
        self._detect_loss()
        if self.prr and self.in_recovery:
            self._prr_window(len(newly_acked))
        self._send_what_we_can()
        self._arm_pto()

    def _on_dsack(self, blocks: tuple[tuple[int, int], ...], ack: int) -> None:
        """RFC 2883: a first block below the cumulative ACK, or inside the
        second block, reports a duplicate; a duplicate of a segment the
        timeout retransmitted means the original got there.  When every such
        retransmission is reported (Linux's ``undo_retrans`` reaching 0) the
        timeout was spurious: undo it (RFC 3708 detection, Linux's response)."""
        l, r = blocks[0]
        if not (r // self.mss <= ack or (len(blocks) > 1 and blocks[1][0] <= l and r <= blocks[1][1])):
            return
        for seg in range(l // self.mss, r // self.mss):
            self._undo_retrans.discard(seg)
        if self._undo_retrans or self._undo is None:
            return
        cwnd, ssthresh = self._undo
        self._undo = None
        self.stats.spurious_timeouts += 1
        self.cwnd = max(self.cwnd, cwnd)
        self.ssthresh = max(self.ssthresh, ssthresh)
        self.in_recovery = False
        self.lost.clear()  # what the timeout marked lost was not (tcp_undo_loss)

    def _detect_loss(self) -> None:
        """Mark segments lost: RFC 6675 IsLost, then RFC 8985's RACK.

        IsLost: holes below ``DUPTHRESH`` (three) SACKed segments, or as many
        dupacks.  RACK (Linux's default loss detection): a segment, original
        or retransmission, sent before one that has since been delivered is
        lost once the delivered one's round trip and a reordering window
        have passed since it left.  That finds a loss in a window of two or
        three segments, too small for three dupacks, and a lost
        retransmission, which otherwise only the RTO finds: on paths whose
        windows are a few packets those were most of TCP's timeouts.
        """
        if self.una >= self.nxt:
            return
        newly_lost = []
        if self.sacked or self.dupacks >= DUPTHRESH:
            sacked_sorted = sorted(self.sacked)
            # Holes below the third-highest SACKed segment are lost.
            if len(sacked_sorted) >= DUPTHRESH:
                limit = sacked_sorted[-DUPTHRESH]
                for s in range(self.una, limit):
                    if s not in self.sacked and s not in self.retx and s not in self.lost:
                        newly_lost.append(s)
            elif self.dupacks >= DUPTHRESH and self.una not in self.retx and self.una not in self.lost:
                newly_lost.append(self.una)
        newly_lost += self._rack_lost(set(newly_lost))
        if not newly_lost:
            return
        self.retx.difference_update(newly_lost)
        self.lost.update(newly_lost)
        if not self.in_recovery:
            self.in_recovery = True
            self.stats.fast_recoveries += 1
            self.recover = self.nxt - 1
            self.ssthresh = self._halved_window()
            if self.prr:
                # RFC 6937 3: the window is set per ACK from here; until the
                # next one (recovery entered on RACK's timer) it lets out the
                # fast retransmit alone, as Linux's tcp_rack_reo_timeout does.
                self.prr_delivered = 0
                self.prr_out = 0
                self.recover_fs = max(1, self.nxt - self.una)
                self.cwnd = float(self._pipe() + 1)
            else:
                self.cwnd = self.ssthresh

    def _prr_window(self, delivered: int) -> None:
        """RFC 6937 3, on an ACK in recovery: cwnd = pipe + sndcnt.

        While the pipe is above ssthresh, what leaves is ssthresh / RecoverFS
        of what was delivered (the proportional part); below it, the
        slow-start reduction bound lets the pipe grow back to ssthresh by at
        most one segment more than was delivered (PRR-SSRB, the RFC's and
        Linux's default).  The first ACK always lets out one segment, the
        fast retransmit (Linux's ``tcp_cwnd_reduction``).
        """
        self.prr_delivered += delivered
        pipe = self._pipe()
        if pipe > self.ssthresh:
            sndcnt = math.ceil(self.prr_delivered * self.ssthresh / self.recover_fs) - self.prr_out
        else:
            limit = max(self.prr_delivered - self.prr_out, delivered) + 1
            sndcnt = min(int(self.ssthresh) - pipe, limit)
        if self.prr_out == 0 and delivered > 0:
            sndcnt = max(sndcnt, 1)
        self.cwnd = float(pipe + max(sndcnt, 0))

    def _rack_lost(self, already: set[int]) -> list[int]:
        """RFC 8985 6.2 RACK_detect_loss; arms the reordering timer for what is not due yet.

        The reordering window is min_rtt / 4, and 0 in recovery or once
        ``DUPTHRESH`` segments are SACKed (RFC 8985 6.2.4, Linux's
        ``tcp_rack_reo_wnd``); min_rtt is the estimator's smallest sample.
        """
        base = self.rtt.base
        if base is None or self.rack_xmit_ts < 0:
            return []
        reo = 0.0 if (self.in_recovery or len(self.sacked) >= DUPTHRESH) else base / 4
        now = self.sim.now
        wait = self.rack_rtt + reo
        lost: list[int] = []
        due: float | None = None
        candidates = sorted(self.retx) if self.retx else []
        for s in candidates:  # retransmissions: their send times are out of sequence order
            at = self.sent_at.get(s)
            if at is not None and self._sent_before_rack(at, s) and s not in self.lost and s not in already:
                if at + wait <= now:
                    lost.append(s)
                elif due is None or at + wait < due:
                    due = at + wait
        for s in range(self.una, self.nxt):  # originals leave in sequence order
            if s in self.sacked or s in self.retx:
                continue
            at = self.sent_at.get(s)
            if at is None or not self._sent_before_rack(at, s):
                break
            if s in self.lost or s in already:
                continue
            if at + wait <= now:
                lost.append(s)
            else:
                if due is None or at + wait < due:
                    due = at + wait
                break
        if due is not None:
            self._rack_token += 1
            self.sim.at(due, self._on_reorder_timer, self._rack_token)
        return lost

    def _sent_before_rack(self, at: float, seg: int) -> bool:
        """RFC 8985's RACK_sent_after(RACK, segment): sent earlier, or at once and lower."""
        return at < self.rack_xmit_ts or (at == self.rack_xmit_ts and seg < self.rack_seg)

    def _on_reorder_timer(self, token: int) -> None:
        if token != self._rack_token or not self.running:
            return
        self._detect_loss()
        self._send_what_we_can()


class TcpReceiver:
    """Receiver side: cumulative ACK, SACK blocks, delayed ACKs."""

    def __init__(self, sim: "Simulator", host: "HostNode", port: int, *, mss: int = 1460,
                 ack_delay: float = DELAYED_ACK_TIMEOUT, label: str = "") -> None:
        self.sim, self.host = sim, host
        self.port, self.mss = port, mss
        self.label = label or f"{host.name}:{port}"
        self.ack_delay = ack_delay
        self.nxt = 0
        self.ooo: set[int] = set()
        self.delivered_bytes = 0
        self.segments_received = 0
        self.acks_sent = 0
        self._unacked = 0
        self._delack_token = 0
        self._recent: list[int] = []  # most recently touched SACK block starts
        self._dsack: tuple[int, int] | None = None  # a duplicate to report (RFC 2883)
        self.duplicates = 0
        self._peer: tuple[int, int] | None = None
        host.bind_tcp(port, self)

    def on_segment(self, p: pk.Parsed) -> None:
        if p.payload_len <= 0:
            return
        self._peer = (p.src, p.sport)
        self.segments_received += 1
        seg = p.seq // self.mss
        if seg == self.nxt:
            filled_hole = bool(self.ooo)
            self.nxt += 1
            while self.nxt in self.ooo:
                self.ooo.discard(self.nxt)
                self.nxt += 1
            self.delivered_bytes = self.nxt * self.mss
            self._unacked += 1
            if ack_at_once(self._unacked, urgent=filled_hole):
                self._ack_now()
            elif self._unacked == 1:
                self._delack_token += 1
                self.sim.after(self.ack_delay, self._delack, self._delack_token)
        else:
            if seg < self.nxt or seg in self.ooo:
                self.duplicates += 1
                self._dsack = (seg * self.mss, (seg + 1) * self.mss)
                if seg in self.ooo:  # its block goes second, as RFC 2883 asks
                    self._recent.insert(0, seg)
                    del self._recent[8:]
            else:
                self.ooo.add(seg)
                self._recent.insert(0, seg)
                del self._recent[8:]
            self._ack_now()  # out of order or duplicate: immediate (dup)ACK

    def _delack(self, token: int) -> None:
        if token == self._delack_token and self._unacked:
            self._ack_now()

    def _blocks(self) -> tuple[tuple[int, int], ...]:
        """SACK blocks, most recent first, after a D-SACK block if one is due."""
        blocks: list[tuple[int, int]] = []
        if self._dsack is not None:
            blocks.append(self._dsack)
            self._dsack = None
        if not self.ooo:
            return tuple(blocks)
        seen_starts: set[int] = set()
        for s in self._recent:
            if s not in self.ooo:
                continue
            lo = s
            while lo - 1 in self.ooo:
                lo -= 1
            if lo in seen_starts:
                continue
            hi = s
            while hi + 1 in self.ooo:
                hi += 1
            seen_starts.add(lo)
            blocks.append((lo * self.mss, (hi + 1) * self.mss))
            if len(blocks) == 4:
                break
        return tuple(blocks)

    def _ack_now(self) -> None:
        self._unacked = 0
        self._delack_token += 1
        if self._peer is None:
            return
        h = self.host
        dst, dport = self._peer
        frame = pk.tcp_frame(h.mac, h.arp.get(dst, b"\xff" * 6), h.ip_int, dst, self.port, dport,
                             0, self.nxt * self.mss, pk.TCP_ACK, 65535, 0, self._blocks(),
                             ident=h.next_ident())
        self.acks_sent += 1
        h.send_frame(frame)
