"""MTCP: a leaf acknowledges as a TCP receiver does, and repair RTT samples follow Karn's rule."""

from __future__ import annotations

from win_util import GROUP, PORT, SENDER, cfg, feed, out, run_timers

from mtcp_util import MtcpReceiver, MtcpSender, PaperReceiver, composed

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import FOLD_ID, MtcpParams
from p4mcc.hosts.mtcp.constants import ACK_DELAY
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us

A = "10.0.1.1"
FOLDER = "10.0.9.9"  # the receiver whose ACK triggered the fold (a report's id is its address)
MEMBER = "10.0.5.5"


def rdata(seq: int, t: float) -> MtcpData:
    return MtcpData(session_id=9, seq=seq, timestamp=ts_us(t), payload=payload_for(seq, 100))


def acks(msgs) -> list[MtcpAck]:
    return [m for _d, m in msgs if isinstance(m, MtcpAck)]


def _leaf(**rules: bool) -> MtcpReceiver:
    """A default leaf with ``rules`` switched on or off by name."""
    r = composed(PaperReceiver, **rules)(cfg(MtcpParams(), local=A))
    r.start(0.0)
    run_timers(r, r.timer_at("wupdate"))  # the hello
    out(r)
    return r


def test_a_leaf_acks_every_second_packet_and_out_of_order_ones_at_once():
    """RFC 5681 4.2, as the simulator's TCP receiver: the sender clocks out pairs
    (TCP's pattern), not single packets that take every slot a drop-tail queue frees."""
    r = _leaf()
    r.receive_datagram(rdata(1, 0.29).encode(), (SENDER, PORT), 0.3)
    assert out(r) == [] and r.timer_at("ack") is not None  # the first one waits
    r.receive_datagram(rdata(2, 0.295).encode(), (SENDER, PORT), 0.305)
    [a] = acks(out(r))  # the second goes at once
    assert a.cum_ack == 2 and r.timer_at("ack") is None
    r.receive_datagram(rdata(4, 0.3).encode(), (SENDER, PORT), 0.31)
    [a] = acks(out(r))  # out of order: at once
    assert a.cum_ack == 2 and a.sack_bitmap == 0b10
    r.receive_datagram(rdata(3, 0.3).encode(), (SENDER, PORT), 0.32)
    [a] = acks(out(r))  # fills the hole: at once
    assert a.cum_ack == 4
    r.receive_datagram(rdata(5, 0.31).encode(), (SENDER, PORT), 0.33)
    assert out(r) == []
    run_timers(r, 0.33 + 1.5 * ACK_DELAY)  # a lone packet: within the (jittered) ACK delay
    [a] = acks(out(r))
    assert a.cum_ack == 5


def test_ack_every_zero_is_the_papers_timed_ack():
    r = _leaf(delayed_ack=False)
    for i, t in enumerate((0.3, 0.305, 0.31), start=1):
        r.receive_datagram(rdata(i, t - 0.01).encode(), (SENDER, PORT), t)
    assert out(r) == []
    run_timers(r, 0.3 + 1.5 * ACK_DELAY)
    [a] = acks(out(r))
    assert a.cum_ack == 3


def _fold(cum: int, cls=MtcpAck):
    return cls(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=256,
               node_id=node_id(FOLDER), flags=Flags.AGGREGATED)


def _folded_sender(cwnd: float) -> MtcpSender:
    s = MtcpSender(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    feed(s, _fold(0, MtcpWindowUpdate), 0.0, src=FOLDER)
    s.cwnd = cwnd
    feed(s, _fold(0), 0.01, src=FOLDER)
    out(s)
    return s


def test_a_cumulative_ack_that_covers_a_repair_behind_a_lower_hole_is_no_rtt_sample():
    """Only the lowest packet a report newly covers was timed by it: a fold that
    covers a repaired packet only once a lower hole is filled would add the
    hole's wait (RTO_RTT went to 8-11 s on a 1 Mb/s path with four TCP flows)."""
    s = _folded_sender(4.0)
    fold = s.children[FOLD_ID]
    fold.rinflight[3], fold.rexmits[3] = 0.5, 1  # packet 3 repaired once at 0.5
    feed(s, _fold(4), 2.5, src=FOLDER)  # the fold passes 1..4 once hole 1 is filled
    assert fold.rtt.srtt is None
    fold.rinflight[5], fold.rexmits[5] = 2.6, 1
    feed(s, _fold(5), 2.7, src=FOLDER)  # the repair moved the ACK: a sample
    assert abs(fold.rtt.srtt - 0.1) < 1e-9


def test_a_multicast_repair_on_a_nack_makes_the_folds_timer_repair_ambiguous():
    """Karn: the fold's packet, resent on a member's NACK, gives no RTT sample."""
    s = _folded_sender(2.0)
    fold = s.children[FOLD_ID]
    t = s.timer_at("pkt")
    s.handle_timer(t)  # packet 1 times out: repaired to the fold (the group)
    assert fold.rexmits.get(1) == 1
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(MEMBER), missing=(1,)), t + 1.5, src=MEMBER)
    assert [m.seq for d, m in out(s) if isinstance(m, MtcpData) and d == (GROUP, PORT)].count(1) >= 1
    assert fold.rexmits[1] == 2
    feed(s, _fold(2), t + 1.6, src=FOLDER)
    assert fold.rtt.srtt is None


def _nacks(msgs) -> list[tuple[int, ...]]:
    return [m.missing for _d, m in msgs if isinstance(m, MtcpNack)]


def test_a_hole_with_one_packet_above_it_is_nacked_after_a_reordering_window():
    """RFC 8985 (RACK): a packet is lost once one sent after it arrived and a
    reordering window passed, whatever the count.  With windows of 2-3
    packets no hole ever has three above it, and every loss waited for the
    1 s packet timer (1 Mb/s, 20 ms, 10 packets, 4 TCP: 239 timeouts in 60 s)."""
    r = _leaf()
    r.receive_datagram(rdata(1, 0.29).encode(), (SENDER, PORT), 0.3)
    r.receive_datagram(rdata(3, 0.3).encode(), (SENDER, PORT), 0.31)  # hole 2, one above it
    assert _nacks(out(r)) == []  # not yet: reordering is possible
    reo = r._reo_wnd()
    assert reo == ACK_DELAY  # before a NACK-to-repair sample
    run_timers(r, 0.31 + reo + 0.001)
    assert _nacks(out(r)) == [(2,)]
    # The count rule alone (RFC 5681 3.2) leaves it to the parent's timer.
    r0 = _leaf(nack_rack=False)
    r0.receive_datagram(rdata(1, 0.29).encode(), (SENDER, PORT), 0.3)
    r0.receive_datagram(rdata(3, 0.3).encode(), (SENDER, PORT), 0.31)
    run_timers(r0, 1.0)
    assert _nacks(out(r0)) == []


def _feed(r: MtcpReceiver, seqs: list[int], t: float, step: float = 0.001) -> float:
    for s in seqs:
        r.receive_datagram(rdata(s, t).encode(), (SENDER, PORT), t)
        t += step
    return t


def test_once_the_path_reordered_three_later_packets_wait_out_the_window():
    """RFC 8985 6.2: three later packets mark a hole lost until reordering is
    seen; then a hole waits RACK's window from the first packet above it.
    Reordering a twentieth of the frames by 10 ms read each hit frame as a loss."""
    r = _leaf()
    r.nack_rtt = 0.2  # the window: 50 ms
    t = _feed(r, [1, 2, 4, 5, 6], 0.1)
    assert _nacks(out(r)) == [(3,)]  # not seen to reorder: the count rule
    t = _feed(r, [3], t)  # 3's original, late: its NACK was spurious, the path reorders
    assert r.reo.reordering_seen and r.nack_rtt == 0.2  # and its time is no NACK-to-repair sample
    out(r)
    _feed(r, [7, 9, 10, 11, 12], t)
    assert _nacks(out(r)) == []  # four above 8, inside the window
    run_timers(r, t + 0.04)
    assert _nacks(out(r)) == []
    run_timers(r, t + r._reo_wnd() + 0.002)
    assert _nacks(out(r)) == [(8,)]
    # Without the rule the same arrivals NACK 8 at the third packet above it.
    r0 = _leaf(rack_reordering=False)
    r0.nack_rtt = 0.2
    t = _feed(r0, [1, 2, 4, 5, 6, 3], 0.1)
    out(r0)
    _feed(r0, [7, 9, 10, 11, 12], t)
    assert _nacks(out(r0))[:1] == [(8,)]


def test_a_spurious_nack_widens_the_window_once_per_round_trip_up_to_the_round_trip():
    """RFC 8985 6.2's multiplier: each round trip that shows a NACK spurious
    widens the window a quarter round trip, to at most the whole; a repair
    that fills a NACKed hole counts toward the fall back after 16."""
    r = _leaf()
    r.nack_rtt = 0.2
    base = r._reo_wnd()
    t = _feed(r, [1, 2, 4, 5, 6, 3], 0.1)  # seen to reorder, no widening yet
    assert r.reo.mult == 1
    out(r)
    seq, widened = 7, []
    for k in range(6):  # a spurious NACK per 0.3 s
        t = _feed(r, [seq, seq + 2], t)
        run_timers(r, t + r._reo_wnd() + 0.001)
        assert _nacks(out(r)) == [(seq + 1,)]
        t = _feed(r, [seq + 1], t + r._reo_wnd() + 0.3)
        widened.append(r.reo.mult)
        seq += 3
    assert widened == [2, 3, 4, 4, 4, 4]
    assert r._reo_wnd() == 4 * base == r.nack_rtt
    for _ in range(16):  # holes that repairs fill: real losses
        t = _feed(r, [seq, seq + 2], t)
        run_timers(r, t + r._reo_wnd() + 0.001)
        out(r)
        r.receive_datagram(MtcpData(session_id=9, seq=seq + 1, flags=Flags.RETRANSMIT, timestamp=ts_us(t),
                                    payload=payload_for(seq + 1, 100)).encode(), (SENDER, PORT), t + 0.3)
        t += 0.31
        seq += 3
    assert r.reo.mult == 1


def test_the_reordering_window_is_a_quarter_of_the_nack_to_repair_time():
    r = _leaf()
    r.nack_rtt = 0.2
    assert r._reo_wnd() == 0.05


def test_a_nack_from_behind_a_fold_is_suppressed_for_the_folds_rtt_not_the_initial_rto():
    """The receiver's NACK repeats once its repair is overdue; the sender timed the
    fold, not that receiver, and waited a 1 s initial RTO before resending."""
    s = _folded_sender(2.0)
    fold = s.children[FOLD_ID]
    fold.rtt.sample(0.1)
    member = MEMBER
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(MEMBER), missing=(1,)), 0.2, src=member)
    assert [m.seq for _d, m in out(s) if isinstance(m, MtcpData)] == [1]
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(MEMBER), missing=(1,)), 0.5, src=member)
    assert [m.seq for _d, m in out(s) if isinstance(m, MtcpData)] == [1]  # 0.3 s > RTT + ack_delay
