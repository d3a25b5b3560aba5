"""TCP cross traffic: the model against the TCP throughput equation, capacity use, fairness."""

from __future__ import annotations

import pytest

from p4mcc.hosts.tcp_rules import DELAYED_ACK_TIMEOUT
from p4mcc.hosts.tfrc import tcp_rate
from p4mcc.netsim.link import Bernoulli
from p4mcc.scenario.shapes import dumbbell
from p4mcc.netsim.tcp import TcpReceiver, TcpSender
from netsim_testlib import network


def one_flow(p: float, duration: float = 60.0, seed: int = 1, rate: str = "200Mbps",
             queue: int = 2000, delay: str = "20ms", warmup: float = 0.0):
    sim, net = network(dumbbell(0, tcp_pairs=1, rate=rate, delay=delay, queue=queue), seed)
    if p:
        fwd = net.links["s1--s2"].ab  # loss on the data direction only
        fwd.set_loss(Bernoulli(p, sim.rng("test-loss")))
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000)
    sim.at(0.0, snd.start)
    sim.run(until=warmup)
    start = (rcv.delivered_bytes, snd.stats.fast_recoveries + snd.stats.timeouts,
             snd.stats.segments_sent, snd.stats.rtt_sum, snd.stats.rtt_samples)
    sim.run(until=warmup + duration)
    return snd, rcv, start


@pytest.mark.parametrize("p", [0.001, 0.005, 0.02, 0.05])
def test_throughput_matches_tcp_equation_within_20_percent(p: float) -> None:
    """RFC 5348's equation (b = 1, t_RTO = 4R) with the measured loss event rate and RTT.

    Measured after a 10 s warm-up, so the initial slow start's overshoot (a
    queue at the 200 Mb/s link) does not count: the flow is loss-limited.
    """
    snd, rcv, (b0, e0, s0, r0, n0) = one_flow(p, warmup=10.0)
    thr = (rcv.delivered_bytes - b0) / 60.0
    events = snd.stats.fast_recoveries + snd.stats.timeouts - e0
    assert events >= 40  # enough loss events for the mean to mean something
    p_event = events / (snd.stats.segments_sent - s0)
    rtt = (snd.stats.rtt_sum - r0) / (snd.stats.rtt_samples - n0)
    expected = tcp_rate(1460, rtt, p_event)
    assert thr == pytest.approx(expected, rel=0.20)


def test_fills_a_clean_bottleneck() -> None:
    snd, rcv, _ = one_flow(0.0, duration=20.0, rate="20Mbps", queue=100)
    goodput = rcv.delivered_bytes * 8 / 20.0
    assert goodput > 0.9 * 20e6 * 1460 / (1460 + 54)  # payload share of the line rate
    assert snd.stats.timeouts == 0


def test_single_loss_is_repaired_by_fast_retransmit_not_timeout() -> None:
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="100Mbps", delay="10ms", queue=1000))
    fwd = net.links["s1--s2"].ab
    dropped = []

    class DropNth:
        n = 0

        def lost(self) -> bool:
            self.n += 1
            if self.n == 50:
                dropped.append(self.n)
                return True
            return False

    fwd.set_loss(DropNth())  # type: ignore[arg-type]
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000)
    sim.at(0.0, snd.start)
    sim.run(until=2.0)
    assert dropped == [50]
    assert snd.stats.fast_recoveries == 1 and snd.stats.timeouts == 0
    assert snd.stats.retransmits == 1
    assert rcv.delivered_bytes > 1_000_000


def test_two_flows_share_a_bottleneck_fairly() -> None:
    sim, net = network(dumbbell(0, tcp_pairs=2, rate="10Mbps", delay="20ms", queue=60))
    flows = []
    for i in (1, 2):
        rcv = TcpReceiver(sim, net.hosts[f"tdst{i}"], 5200 + i)
        snd = TcpSender(sim, net.hosts[f"tsrc{i}"], net.hosts[f"tdst{i}"].ip, 5200 + i, 40000 + i)
        sim.at(0.1 * i, snd.start)
        flows.append(rcv)
    sim.run(until=60.0)
    x = [r.delivered_bytes for r in flows]
    jain = sum(x) ** 2 / (2 * sum(v * v for v in x))
    assert jain > 0.95
    assert sum(x) * 8 / 60 > 0.85 * 10e6 * 1460 / 1514


def test_fast_recovery_halves_the_window_not_the_pipe() -> None:
    """ssthresh = cwnd / 2 (RFC 5681 eq. (4) for a window-limited sender; Linux Reno).

    One drop in a large window: by the time three segments above the hole are
    SACKed, the pipe (flight minus SACKed) is smaller than the window, and
    halving it would cut the window by more than half for a single loss.
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="100Mbps", delay="10ms", queue=1000))
    fwd = net.links["s1--s2"].ab

    class DropNth:
        n = 0

        def lost(self) -> bool:
            self.n += 1
            return self.n == 200

    fwd.set_loss(DropNth())  # type: ignore[arg-type]
    entry: list[tuple[float, int, int]] = []

    class Recording(TcpSender):
        def _detect_loss(self) -> None:
            before = self.in_recovery
            cwnd, flight, sacked = self.cwnd, self.nxt - self.una, len(self.sacked)
            super()._detect_loss()
            if self.in_recovery and not before:
                entry.append((cwnd, flight, sacked))

    TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = Recording(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000)
    sim.at(0.0, snd.start)
    sim.run(until=0.5)
    assert len(entry) == 1 and snd.stats.timeouts == 0
    cwnd, flight, sacked = entry[0]
    assert sacked >= 3 and flight - sacked < cwnd  # the pipe really was smaller than the window
    assert snd.ssthresh == pytest.approx(cwnd / 2.0)


def test_a_timeout_in_recovery_does_not_reopen_slow_start_past_the_path() -> None:
    """Slow start's overshoot loses many segments; if a retransmission is lost
    too, the timeout halves the window (not the flight with all its SACKed
    segments), so slow start stops near the path's capacity and the next
    overshoot does not end in a timeout again.  A lone flow fills the link."""
    snd, rcv, _ = one_flow(0.0, duration=30.0, rate="10Mbps", delay="50ms", queue=50)
    assert snd.stats.timeouts <= 2
    assert rcv.delivered_bytes * 8 / 30.0 > 0.85 * 10e6 * 1460 / (1460 + 54)


def test_a_second_timeout_of_the_same_segment_holds_ssthresh() -> None:
    """RFC 5681 3.1: ssthresh is held when the timer fires again for a segment
    it already retransmitted (Linux's tcp_enter_loss reduces it on the first
    timeout of a loss episode only).  The data path drops everything for
    1.5 s, several RTOs: the first timeout halves the window, the later
    ones leave ssthresh there instead of setting it to 2 from cwnd = 1."""
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="10Mbps", delay="10ms", queue=100))
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=64 * 1024)
    sim.at(0.0, snd.start)
    sim.run(until=3.0)
    assert snd.stats.timeouts == 0 and snd.cwnd > 8
    fwd = net.links["s1--s2"].ab
    send = fwd.send
    fwd.send = lambda frame: False if 3.0 <= sim.now < 4.5 else send(frame)
    halved = snd.cwnd / 2
    sim.run(until=4.5)
    assert snd.stats.timeouts >= 2
    assert snd.ssthresh == pytest.approx(halved, rel=0.2)
    sim.run(until=8.0)
    assert rcv.delivered_bytes > 0 and snd.una > snd.nxt - 50


def test_linux_rto_floors_the_variance_term_not_the_whole_timeout() -> None:
    """Linux's rule (tcp_rtt_estimator): RTO = SRTT + max(4 RTTVAR, 200 ms).

    On a 20 ms path with a steady RTT the RTO is about 220 ms, where RFC 6298's
    1 s floor would hold it at 1 s; the RFC rule stays available as ``rto="rfc6298"``.
    """
    snd, _, _ = one_flow(0.0, duration=5.0, rate="20Mbps", queue=100, delay="10ms")
    assert snd.rto_rule == "linux"
    assert snd.srtt is not None and snd.srtt < 0.1
    assert snd.rto == pytest.approx(snd.srtt + max(4 * snd.rttvar, 0.2), rel=1e-9)
    assert 0.2 < snd.rto < 0.35

    sim, net = network(dumbbell(0, tcp_pairs=1, rate="20Mbps", delay="10ms", queue=100))
    TcpReceiver(sim, net.hosts["tdst1"], 5201)
    rfc = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rto="rfc6298")
    sim.at(0.0, rfc.start)
    sim.run(until=5.0)
    assert rfc.rto == pytest.approx(1.0)
    with pytest.raises(ValueError, match="rto must be one of"):
        TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40001, rto="bsd")


def test_a_spurious_timeout_is_undone_on_dsack() -> None:
    """A timeout that the receiver's D-SACKs show to be spurious is undone.

    The ACK path stalls for 0.6 s (longer than the ~0.24 s RTO, and than a
    tail loss probe's 2 SRTT plus it) while no segment is lost: the timeout fires, retransmits what the receiver
    already has, the receiver reports each duplicate in a D-SACK block
    (RFC 2883), and the sender restores cwnd and ssthresh (RFC 3708
    detection, Linux's ``tcp_try_undo_loss``).  The flow is window-limited
    (64 KiB) on a 100-packet queue, so nothing is ever dropped and
    ssthresh stays unset unless the timeout's halving sticks.
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="20Mbps", delay="10ms", queue=100))
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=64 * 1024)
    sim.at(0.0, snd.start)
    sim.run(until=3.0)
    assert snd.stats.timeouts == 0 and snd.stats.retransmits == 0
    cwnd_before = snd.cwnd
    acks = net.links["s1--s2"].ba
    base = acks.delay_s
    sim.at(3.0, setattr, acks, "delay_s", base + 0.6)
    sim.at(3.6, setattr, acks, "delay_s", base)  # every ACK sent in the stall is late, a probe's too
    sim.run(until=5.0)
    assert snd.stats.timeouts >= 1
    assert rcv.duplicates >= 1  # the retransmissions were not needed
    assert snd.stats.spurious_timeouts >= 1
    assert snd.ssthresh == float("inf") and snd.cwnd >= cwnd_before


def _drop_copies(sim, channel, seg: int, copies: int, mss: int = 1460) -> list[float]:
    """Drop the first ``copies`` frames on ``channel`` that carry TCP segment ``seg``."""
    victim = (seg * mss).to_bytes(4, "big")
    dropped: list[float] = []
    send = channel.send

    def dropping(frame: bytes) -> bool:
        if frame[23] == 6 and frame[38:42] == victim and len(dropped) < copies:
            dropped.append(sim.now)
            return False
        return send(frame)

    channel.send = dropping
    return dropped


def test_a_lost_retransmission_is_found_by_rack_not_the_rto() -> None:
    """RFC 8985 6.2: a retransmission older than a delivered segment is lost too.

    One segment and its fast retransmission are dropped on a flow whose
    window keeps new data going during recovery.  The new segments sent after
    the retransmission are SACKed, which tells RACK the retransmission was
    lost: it is sent again at once.  Without RACK only the retransmission
    timeout found it (cwnd 1 and slow start from there).
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="200Mbps", delay="10ms", queue=2000))
    dropped = _drop_copies(sim, net.links["s1--s2"].ab, 400, 2)
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000)
    sim.at(0.0, snd.start)
    sim.run(until=1.0)
    assert len(dropped) == 2
    assert rcv.nxt > 401  # the segment got through in the end
    assert snd.stats.timeouts == 0 and snd.stats.fast_recoveries == 1
    assert snd.stats.retransmits == 2


def test_a_loss_in_a_window_of_two_is_found_without_three_dupacks() -> None:
    """RACK's time rule (RFC 8985 6.2, reordering timer 6.3): one SACK suffices.

    A flow held to two segments (a 2-segment receive window) cannot get three
    duplicate ACKs.  When one of its segments is dropped, the SACK for the
    other one arms RACK's reordering timer, which marks the hole lost a
    quarter of min_rtt later; RFC 6675's rule alone left it to the RTO.
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="20Mbps", delay="10ms", queue=100))
    dropped = _drop_copies(sim, net.links["s1--s2"].ab, 200, 1)
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=2 * 1460)
    sim.at(0.0, snd.start)
    sim.run(until=5.0)
    assert dropped and rcv.nxt > 201
    assert snd.stats.timeouts == 0 and snd.stats.fast_recoveries == 1


def test_a_tail_loss_is_found_by_a_probe_not_the_rto() -> None:
    """RFC 8985 7 (TLP, Linux's default): the last two segments of a flight are
    lost, so no ACK comes back.  After 2 SRTT the sender sends a probe (the
    last segment again: its window is full); the probe's SACK lets RACK call
    the other segment lost, and fast recovery repairs it.  Without the probe
    only the RTO found them (cwnd 1).
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="20Mbps", delay="10ms", queue=100))
    fwd = net.links["s1--s2"].ab
    first, second = _drop_copies(sim, fwd, 300, 1), _drop_copies(sim, fwd, 301, 1)
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=2 * 1460)
    sim.at(0.0, snd.start)
    sim.run(until=5.0)
    assert len(first) == len(second) == 1 and rcv.nxt > 302
    assert snd.stats.tail_loss_probes >= 1
    assert snd.stats.timeouts == 0 and snd.stats.fast_recoveries == 1


def test_rtt_samples_come_only_from_segments_newly_acknowledged() -> None:
    """A cumulative ACK that moves over segments SACKed earlier is no RTT sample.

    One segment of a window-limited flow (64 KiB, so the queue stays empty)
    is dropped, and so is its fast retransmission: it is repaired by the
    retransmission timeout.  Meanwhile the segments above it are SACKed; the
    ACK for the repair then covers them all, and timing the highest of them
    measures the whole recovery (the RTO and more), not the path.  Linux
    (``tcp_clean_rtx_queue``) samples only segments not SACKed before and
    never retransmitted, so no sample exceeds the path's round trip plus
    the receiver's delayed-ACK timeout (RFC 5681 4.2).
    """
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="100Mbps", delay="10ms", queue=1000))
    copies = _drop_copies(sim, net.links["s1--s2"].ab, 300, 2)
    samples: list[float] = []

    class Recording(TcpSender):
        def _rtt_sample(self, r: float) -> None:
            samples.append(r)
            super()._rtt_sample(r)

    TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = Recording(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=64 * 1024)
    sim.at(0.0, snd.start)
    sim.run(until=3.0)
    assert len(copies) == 2 and snd.stats.timeouts == 1
    base = min(samples)
    assert 0.02 < base < 0.03  # 2 x 10 ms bottleneck + access links and serialization
    assert max(samples) < base + DELAYED_ACK_TIMEOUT < snd.rto


@pytest.mark.parametrize("rearm", [True, False])
def test_retransmitting_the_oldest_segment_restarts_the_timer(rearm: bool, monkeypatch) -> None:
    """Linux's ``tcp_xmit_retransmit_queue``: the repair of the oldest hole
    restarts the retransmission timer.

    One segment is dropped just as the path's delay grows by 0.15 s (a queue
    building behind it), so the SACKs that reveal the hole come 0.15 s late
    and the repair needs the longer round trip.  Timed from the last
    cumulative ACK (RFC 6298 5.3 alone), the timer (SRTT + 0.2 s) fires
    while the repair is in flight: a spurious timeout, the window sent
    again.  Restarted by the repair, it does not fire.
    """
    monkeypatch.setattr(TcpSender, "rearm_on_head_retransmit", rearm)
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="10Mbps", delay="50ms", queue=100))
    fwd = net.links["s1--s2"].ab
    base = fwd.delay_s
    dropped = _drop_copies(sim, fwd, 400, 1)
    send = fwd.send

    def slowing(frame: bytes) -> bool:
        if dropped and fwd.delay_s == base:
            fwd.delay_s = base + 0.15
        return send(frame)

    fwd.send = slowing
    rcv = TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, rwnd=16 * 1460)
    sim.at(0.0, snd.start)
    sim.run(until=5.0)
    assert len(dropped) == 1 and rcv.nxt > 401
    assert snd.stats.fast_recoveries == 1
    if rearm:
        assert snd.stats.timeouts == 0 and snd.stats.retransmits == 1
    else:
        assert snd.stats.timeouts == 1  # the rule's absence shows: the timer fired mid-repair


def _one_recovery(recovery: str) -> tuple[dict[str, float], list[tuple[float, bool]]]:
    """One segment dropped in slow start on a 100 Mb/s, 10 ms path: the first
    recovery's entry time, RecoverFS, ssthresh, exit time and cwnd then, and
    what was sent during it as (time, retransmission)."""
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="100Mbps", delay="10ms", queue=1000))
    dropped = _drop_copies(sim, net.links["s1--s2"].ab, 300, 1)
    state: dict[str, float] = {}
    sent: list[tuple[float, bool]] = []

    class Recording(TcpSender):
        def _detect_loss(self) -> None:
            before = self.in_recovery
            flight = self.nxt - self.una
            super()._detect_loss()
            if self.in_recovery and not before and "entry" not in state:
                state.update(entry=self.sim.now, recover_fs=flight, ssthresh=self.ssthresh)

        def _emit(self, seg: int, retx: bool) -> None:
            if self.in_recovery and "exit" not in state:
                sent.append((self.sim.now, retx))
            super()._emit(seg, retx)

        def on_segment(self, p) -> None:
            before = self.in_recovery
            super().on_segment(p)
            if before and not self.in_recovery and "exit" not in state:
                state.update(exit=self.sim.now, exit_cwnd=self.cwnd)

    TcpReceiver(sim, net.hosts["tdst1"], 5201)
    snd = Recording(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, recovery=recovery)
    sim.at(0.0, snd.start)
    sim.run(until=1.0)
    assert len(dropped) == 1 and snd.stats.timeouts == 0 and "exit" in state
    return state, sent


@pytest.mark.parametrize("recovery", ["prr", "rfc6675"])
def test_prr_spreads_the_halved_flight_over_the_recovery_round_trip(recovery: str) -> None:
    """RFC 6937 (Linux's recovery): each ACK in recovery lets out ssthresh /
    RecoverFS of what it reports delivered, so the halved flight leaves
    spread over the round trip and recovery ends with ssthresh sent.  RFC
    6675's rule alone (cwnd = ssthresh on entry) sends nothing new until the
    pipe has fallen to half, then the rest as one train."""
    state, sent = _one_recovery(recovery)
    entry, recover_fs, ssthresh, exit_at = state["entry"], state["recover_fs"], state["ssthresh"], state["exit"]
    assert recover_fs > 100 and ssthresh == pytest.approx(recover_fs / 2, abs=1)
    early = [t for t, retx in sent if not retx and t < entry + 0.4 * (exit_at - entry)]
    if recovery == "prr":
        # 40 % of the round trip's deliveries at ssthresh / RecoverFS = 1/2.
        assert len(early) >= 0.1 * recover_fs
        assert abs(len(sent) - ssthresh) <= 2
    else:
        assert early == []
    assert state["exit_cwnd"] == ssthresh  # leaving recovery: cwnd = ssthresh (both rules)


def test_an_unknown_recovery_rule_is_refused() -> None:
    sim, net = network(dumbbell(0, tcp_pairs=1, rate="10Mbps", delay="10ms", queue=100))
    with pytest.raises(ValueError, match="recovery"):
        TcpSender(sim, net.hosts["tsrc1"], net.hosts["tdst1"].ip, 5201, 40000, recovery="cubic")
