"""MTCP's rules for receivers behind different round trips (``rtt_fair_increase``)
and for the switches' congestion stamp (``stamp_echo``, ``stamp_climb``), with and
without each, driven by messages on the sans-I/O cores."""

from __future__ import annotations

import pytest
from mtcp_util import PaperReceiver, PaperSender, composed
from win_util import SENDER, cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.rtt import MAX_RTT_SPREAD
from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, Stamp, ts_us

A, B = "10.0.1.1", "10.0.1.2"
TREE2 = f"{A}>{SENDER},{B}>{SENDER}"


def ack(node: str, cum: int, echo_at: float | None = None, stamp: int = 0, cls=MtcpAck):
    return cls(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096, node_id=node_id(node),
               echo_ts=ts_us(echo_at) if echo_at is not None else 0, stamp=stamp)


def sender(**rules: bool):
    s = composed(PaperSender, "default", **rules)(cfg(MtcpParams(tree=TREE2)))
    s.start(0.0)
    for c in (A, B):
        feed(s, ack(c, 0, cls=MtcpWindowUpdate), 0.0, src=c)
    out(s)
    return s


def _cut_by(s, short: float, long_: float):
    """A's ACKs take ``short`` s, B's ``long_``; then a loss on A's path cuts the window."""
    for i, t in enumerate((0.0, 0.2, 0.4)):
        feed(s, ack(A, 1 + i, echo_at=t), t + short, src=A)
        feed(s, ack(B, 1 + i, echo_at=t), t + long_, src=B)
    feed(s, MtcpNack(session_id=9, cum_ack=3, node_id=node_id(A), missing=(4,)), 0.7, src=A)
    assert s.cwnd_cuts == 1


def _growth(s) -> float:
    """cwnd's growth on one packet sent after the cut, acknowledged by all in congestion avoidance."""
    s.cwnd = s.ssthresh = 20.0
    before = s.cwnd
    s._acked_by_all(s.recover + 1, 1.0)
    return s.cwnd - before


@pytest.mark.parametrize("on", [True, False])
def test_a_window_cut_for_a_short_round_trip_grows_by_the_squared_rtt_spread(on):
    s = sender(rtt_fair_increase=on)
    _cut_by(s, 0.03, 0.12)
    if on:
        assert s.rtt_spread() == pytest.approx(4.0, rel=0.02)
        assert _growth(s) == pytest.approx(s.rtt_spread() ** 2 / 20.0)  # 16 times Reno's 1/cwnd
    else:
        assert _growth(s) == pytest.approx(1 / 20.0)


def test_equal_round_trips_keep_renos_increase():
    s = sender(rtt_fair_increase=True)
    _cut_by(s, 0.05, 0.05)
    assert s.rtt_spread() == 1.0 and _growth(s) == pytest.approx(1 / 20.0)


def test_under_the_ackers_clock_the_compensation_stands_aside():
    # Once A, whose NACK cut, is the acker, its ACKs clock the window: it is sent once per A's RTD,
    # the very R_c, and growing 16 times faster would outrun the TCP flow beside A (3.3 times it on
    # a 20 ms branch beside a 200 ms one).
    s = sender(rtt_fair_increase=True, acker_election=True, acker_clock=True)
    _cut_by(s, 0.03, 0.12)
    s._elect(0.8)  # on the loss event the NACK recorded
    assert s.clock_child() is s.children[node_id(A)]
    assert s.paced_rtd() == pytest.approx(0.03, rel=0.05)
    assert s.rtt_spread() == 1.0


def test_a_cut_on_the_long_round_trip_is_not_compensated_and_the_spread_is_bounded():
    s = sender(rtt_fair_increase=True)
    _cut_by(s, 0.12, 0.03)  # A, whose loss cuts, is the far one
    assert s.rtt_spread() == 1.0
    s = sender(rtt_fair_increase=True)
    _cut_by(s, 0.01, 0.5)
    assert s.rtt_spread() == MAX_RTT_SPREAD == 8.0


def _receiver(**rules: bool):
    r = composed(PaperReceiver, "stamped", **rules)(cfg(MtcpParams(), local=A))
    r.start(0.0)
    out(r)
    return r


def _data(seq: int, stamp: int) -> bytes:
    return MtcpData(session_id=9, seq=seq, timestamp=ts_us(0.0), payload=payload_for(seq, 100), stamp=stamp).encode()


@pytest.mark.parametrize("on", [True, False])
def test_a_receivers_ack_carries_back_the_worst_stamp_since_its_last_ack(on):
    r = _receiver(stamp_echo=on)
    r.receive_datagram(_data(1, Stamp.pack(2, 9)), (SENDER, 6001), 0.01)
    r.receive_datagram(_data(2, Stamp.pack(5, 7)), (SENDER, 6001), 0.02)  # the second packet: an ACK
    acks = [m for _d, m in out(r) if isinstance(m, MtcpAck)]
    assert acks and acks[-1].stamp == (Stamp.pack(5, 7) if on else 0)
    r.receive_datagram(_data(3, Stamp.pack(1, 9)), (SENDER, 6001), 0.03)
    r.receive_datagram(_data(4, 0), (SENDER, 6001), 0.04)  # one unstamped packet: the window says nothing
    acks = [m for _d, m in out(r) if isinstance(m, MtcpAck)]
    assert acks and acks[-1].stamp == 0


@pytest.mark.parametrize("stamp, on, extra", [
    (Stamp.pack(1, 7), True, True),  # short queue, 5.12 Mb/s spare: half of it per round trip
    (Stamp.pack(1, 7), False, False),
    (Stamp.pack(9, 0), True, False),  # a long queue, nothing spare (TCP fills it): default's growth
    (Stamp.pack(1, 0), True, False),  # short, but nothing spare
    (0, True, False),  # no stamp: default's growth
])
def test_a_short_stamped_queue_with_spare_rate_adds_half_of_it_per_round_trip(stamp, on, extra):
    s = sender(stamp_climb=on)
    _cut_by(s, 0.05, 0.05)
    feed(s, ack(A, 3, echo_at=0.7, stamp=stamp), 0.75, src=A)
    rtt = max(c.rtd.srtt for c in s._acking())
    want = 1 / 20.0 + (0.5 * Stamp.spare_bps(stamp) * rtt / (8 * s.p.packet_size) / 20.0 if extra else 0.0)
    assert _growth(s) == pytest.approx(want)



def _b_acks_alone(s, t: float, until: float) -> float:
    """B acknowledges all that is sent, every 50 ms; A says nothing."""
    while t < until:
        t += 0.05
        top = max(s.buf, default=s.next_seq - 1)
        feed(s, ack(B, top, echo_at=t - 0.05), t, src=B)
        while (when := s.get_timer()) is not None and when <= t:
            s.handle_timer(max(s.now, when))
        out(s)
    return t


def test_a_removed_child_that_reports_again_is_a_child_again():
    """A falls silent and is removed as dead (``remove_dead_children``, after three missed probes); B goes on.
    A's next report readmits it: the sender holds what A lacks until A has it (section 3.9)."""
    s = sender()
    feed(s, ack(A, 5, echo_at=0.0), 0.04, src=A)
    t = _b_acks_alone(s, 0.04, 1.0)
    s._remove_child(s.children[node_id(A)], t)
    assert node_id(A) not in s.children
    t = _b_acks_alone(s, t, 2.0)
    missed = [q for q in range(6, s.next_seq) if q in s.buf][:3]
    assert missed, "B acknowledged everything A missed, so nothing is buffered for A"
    feed(s, ack(A, 5, echo_at=t), t + 0.05, src=A)
    assert s.readmitted == 1 and node_id(A) in s.children
    feed(s, ack(B, s.next_seq - 1, echo_at=t), t + 0.1, src=B)
    assert all(q in s.buf for q in missed), "B's ACK released what the readmitted A still lacks"
