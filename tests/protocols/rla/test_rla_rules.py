"""RLA: one test per rule of the paper's section 3.3 (fake clock, scripted SACKs)."""

from __future__ import annotations

import math

import pytest
from rla_util import DEFAULT_RULES, DefaultReceiver, DefaultSender, rules, sender_class
from win_util import GROUP, PORT, SENDER, cfg, events, feed, out, run_timers

from p4mcc.hosts.core import Delivered, JoinGroup, node_id
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.rla import RULES, RlaParams, RlaReceiver, RlaSender
from p4mcc.hosts.rla.receiver import HELLO_INTERVAL
from p4mcc.hosts.rla.rules import SpreadHellos
from p4mcc.hosts.tcp_rules import DELAYED_ACK_TIMEOUT
from p4mcc.hosts.wire import Flags, RlaData, RlaSack, ts_us

R = ["10.0.1.1", "10.0.1.2", "10.0.1.3"]


class FixedRng:
    """A stand-in for random.Random whose draws the test chooses."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def sack(rcvr: str, cum: int, blocks=(), adv: int = 256, echo: int = 0) -> RlaSack:
    return RlaSack(session_id=9, cum_ack=cum, adv_buf=adv, rcvr_id=node_id(rcvr), echo_ts=echo,
                   blocks=tuple(blocks))


def sender(n: int = 1, rng=None, names: tuple[str, ...] = DEFAULT_RULES, ssthresh: float = 100.0,
           consts: dict | None = None, **kw) -> RlaSender:
    """A sender under the rules ``names`` (default: the default profile) whose
    ``n`` receivers said hello; ``consts`` overrides rules' class constants."""
    params = RlaParams(receivers=n, **{"initial_cwnd": 10, **kw})
    cls = sender_class(names)
    if consts:
        cls = type(cls.__name__, (cls,), consts)
    s = cls(cfg(params), rng=rng)
    s.ssthresh = ssthresh
    s.start(0.0)
    for r in R[:n]:
        feed(s, sack(r, 0), 0.0, src=r)
    return s


def data_seqs(msgs) -> list[int]:
    return [m.seq for _d, m in msgs if isinstance(m, RlaData)]


def test_sender_waits_for_every_expected_receiver_then_fills_the_window():
    s = RlaSender(cfg(RlaParams(receivers=2, initial_cwnd=4)))
    s.start(0.0)
    feed(s, sack(R[0], 0), 0.0, src=R[0])
    assert data_seqs(out(s)) == []
    feed(s, sack(R[1], 0), 0.0, src=R[1])
    msgs = out(s)
    assert data_seqs(msgs) == [1, 2, 3, 4]
    assert all(dest == (GROUP, PORT) for dest, _ in msgs)
    assert msgs[0][1].payload == payload_for(1, s.p.packet_size)


def test_rule1_loss_needs_a_packet_three_higher_sacked():
    s = sender()
    out(s)
    # Packet 2 missing; 3 and 4 SACKed: only two higher, not yet a loss.
    feed(s, sack(R[0], 1, [(3, 5)]), 0.1, src=R[0])
    assert not [m for _d, m in out(s) if m.flags & Flags.RETRANSMIT]
    assert s.congestion_signals == 0
    # Packet 5 SACKed: at least three higher than 2 -> 2 is lost and resent.
    feed(s, sack(R[0], 1, [(3, 6)]), 0.11, src=R[0])
    rex = [m for _d, m in out(s) if m.flags & Flags.RETRANSMIT]
    assert [m.seq for m in rex] == [2]
    assert s.congestion_signals == 1


def test_rule1_loss_by_timeout():
    s = sender()
    out(s)
    rto = s.rcvrs[node_id(R[0])].rtt.rto
    t = s.get_timer()
    assert t is not None
    # The retransmission timer is the RTO after the packets were sent.
    assert s.timer_at("rto") == pytest.approx(rto)
    s.handle_timer(rto)
    rex = [m for _d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.RETRANSMIT]
    assert rex and rex[0].seq == 1
    assert s.timeouts == 1
    # Nobody acknowledged the oldest packet: TCP's timeout response as well.
    assert s.cwnd == 1 and s.ssthresh == 5


def test_rule2_losses_within_two_srtt_are_one_congestion_signal():
    s = sender(initial_cwnd=30, names=())  # the paper's period
    out(s)
    r = s.rcvrs[node_id(R[0])]
    r.rtt.sample(0.1)  # srtt 100 ms: a congestion period lasts 200 ms
    feed(s, sack(R[0], 1, [(3, 6)]), 1.0, src=R[0])  # loses 2
    feed(s, sack(R[0], 1, [(3, 6), (7, 10)]), 1.15, src=R[0])  # loses 6, same period
    assert s.congestion_signals == 1
    feed(s, sack(R[0], 1, [(3, 6), (7, 10), (11, 14)]), 1.25, src=R[0])  # 10: a new period
    assert s.congestion_signals == 2
    assert r.cperiod_start == 1.25


def test_rule6_troubled_receivers_threshold_uses_eta():
    s = sender(n=3, eta=20)
    a, b, c = (s.rcvrs[node_id(x)] for x in R)
    s.packets_sent = 10_000
    for r, iv in ((a, 100.0), (b, 1900.0), (c, 2100.0)):
        r.interval_avg = iv
        r.last_signal_pkts = s.packets_sent  # intervals just closed
    # Threshold on congestion probability: 1 / (20 * 100) -> intervals under 2000 packets.
    assert s.min_congestion_interval() == 100.0
    assert [s._troubled(r) for r in (a, b, c)] == [True, True, False]
    assert s.num_trouble_rcvr == 2
    # Without eta the rare receiver c would count too.
    s.p.eta = 30
    assert s.num_trouble_rcvr == 3


def test_rule3_signal_from_a_receiver_not_troubled_is_ignored():
    s = sender(n=2, rng=FixedRng(0.0))  # the draw would cut, if it were made
    a, b = (s.rcvrs[node_id(x)] for x in R[:2])
    s.packets_sent = 100_000
    a.interval_avg, a.last_signal_pkts = 50.0, s.packets_sent
    b.interval_avg, b.last_signal_pkts = 50_000.0, 0
    s.last_window_cut = -math.inf  # even a forced cut would be due
    cwnd = s.cwnd
    s._congestion(b, 10.0)
    assert s.rare_losses == 1 and s.cwnd == cwnd


#: Rule 3's random listening over every troubled receiver: default's ``worst_path_listening``
#: (tests/protocols/rla/test_rla_trees.py) troubles only the acker.
LISTENING = rules(("worst_path_listening",))


def _two_troubled(rng, names: tuple[str, ...] = LISTENING) -> RlaSender:
    s = sender(n=2, rng=rng, names=names)
    for r in s.rcvrs.values():
        r.interval_avg, r.last_signal_pkts = 100.0, 0
        r.rtt.sample(0.1)
    s.packets_sent = 100
    s.awnd = 10.0
    return s


def test_rule3_forced_cut_when_last_cut_older_than_two_awnd_srtt():
    s = _two_troubled(FixedRng(0.99, 0.99))  # random listening would ignore both
    r = next(iter(s.rcvrs.values()))
    s.last_window_cut = 10.0
    s._congestion(r, 10.0 + 2 * 10.0 * 0.1 - 0.01)  # not yet 2*awnd*srtt
    assert s.cwnd == 10 and s.ignored_signals == 1
    r.cperiod_start = -math.inf
    s._congestion(r, 10.0 + 2 * 10.0 * 0.1 + 0.01)
    assert s.cwnd == 5 and s.forced_cuts == 1 and s.last_window_cut == pytest.approx(12.01)


def test_rule3_randomized_cut_with_probability_one_over_troubled():
    s = _two_troubled(FixedRng(0.51, 0.49))
    a, b = s.rcvrs.values()
    s.last_window_cut = 1.0
    assert s.num_trouble_rcvr == 2
    s._congestion(a, 1.1)  # 0.51 > pthresh 1/2: ignored
    assert s.cwnd == 10 and s.ignored_signals == 1
    s._congestion(b, 1.2)  # 0.49 <= 1/2: cut
    assert s.cwnd == 5 and s.random_cuts == 1
    assert s.in_recovery


def test_rule3_randomized_cuts_happen_one_time_in_n_with_a_seeded_rng():
    import random

    s = _two_troubled(random.Random(1))
    s.rcvrs[node_id(R[0])].interval_avg = 100.0
    a = s.rcvrs[node_id(R[0])]
    cuts = 0
    for i in range(4000):
        s.cwnd, s.last_window_cut, a.cperiod_start = 64.0, 1e9 + i, -math.inf
        a.interval_avg, a.last_signal_pkts = 100.0, s.packets_sent
        s._congestion(a, 1e9 + i)
        cuts += s.cwnd < 64
    assert 0.45 < cuts / 4000 < 0.55


def test_rule4_window_grows_only_when_acked_by_all():
    s = sender(n=2, initial_cwnd=4, ssthresh=2)
    out(s)
    feed(s, sack(R[0], 1), 0.1, src=R[0])
    assert s.cwnd == 4
    feed(s, sack(R[1], 1), 0.1, src=R[1])
    assert s.cwnd == pytest.approx(4 + 1 / 4)


def test_rule4_slow_start_adds_one_per_packet():
    s = sender(initial_cwnd=2, ssthresh=10)
    out(s)
    feed(s, sack(R[0], 2), 0.1, src=R[0])
    assert s.cwnd == 4


def test_rule5_window_never_passes_min_last_ack_plus_buffer():
    s = RlaSender(cfg(RlaParams(receivers=2, initial_cwnd=50)))
    s.start(0.0)
    feed(s, sack(R[0], 0, adv=3), 0.0, src=R[0])
    feed(s, sack(R[1], 0, adv=100), 0.0, src=R[1])
    assert data_seqs(out(s)) == [1, 2, 3]
    feed(s, sack(R[0], 2, adv=3), 0.1, src=R[0])
    assert data_seqs(out(s)) == [4, 5]


@pytest.mark.parametrize("thresh,expect", [(1, "multicast"), (2, "unicast")])
def test_retransmission_multicast_above_rexmit_thresh(thresh, expect):
    s = sender(n=3, rexmit_thresh=thresh)
    out(s)
    # Packet 2 lost at two receivers, received by the third.
    feed(s, sack(R[0], 1, [(3, 6)]), 0.1, src=R[0])
    feed(s, sack(R[1], 1, [(3, 6)]), 0.1, src=R[1])
    feed(s, sack(R[2], 6), 0.1, src=R[2])
    rex = [(d, m) for d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.RETRANSMIT]
    if expect == "multicast":
        assert [(d, m.seq) for d, m in rex] == [((GROUP, PORT), 2)]
    else:
        assert sorted((d, m.seq) for d, m in rex) == [((R[0], PORT), 2), ((R[1], PORT), 2)]


def test_fast_recovery_holds_the_window_until_the_cut_is_repaired():
    s = sender(initial_cwnd=8, ssthresh=4)
    out(s)
    s.rcvrs[node_id(R[0])].interval_avg = 10.0
    feed(s, sack(R[0], 1, [(3, 6)]), 0.1, src=R[0])  # 2 lost -> cut (the only troubled receiver)
    assert s.random_cuts + s.forced_cuts == 1 and s.in_recovery
    assert s.cwnd == pytest.approx((8 + 4 * (1 / 8)) / 2, rel=0.01)
    recover = s.recover
    assert recover is not None and recover >= 6
    before = s.cwnd
    feed(s, sack(R[0], 1, [(3, recover + 1)]), 0.2, src=R[0])
    assert s.cwnd == before  # ACKs during recovery do not open the window
    feed(s, sack(R[0], recover + 1), 0.3, src=R[0])
    assert not s.in_recovery
    feed(s, sack(R[0], recover + 2), 0.31, src=R[0])
    assert s.cwnd > before


def test_rtt_per_receiver_from_echoed_timestamp():
    s = sender(n=2)
    out(s)
    feed(s, sack(R[0], 1, echo=ts_us(0.01)), 0.06, src=R[0])
    feed(s, sack(R[1], 1, echo=ts_us(0.01)), 0.21, src=R[1])
    assert s.rcvrs[node_id(R[0])].rtt.srtt == pytest.approx(0.05)
    assert s.rcvrs[node_id(R[1])].rtt.srtt == pytest.approx(0.2)


def test_malformed_feedback_is_counted_not_raised():
    s = sender()
    s.receive_datagram(b"\x50\x4d junk", (R[0], PORT), 0.1)
    s.receive_datagram(b"", (R[0], PORT), 0.1)
    assert s.malformed == 2


def test_receiver_joins_says_hello_and_sacks_every_packet():
    r = DefaultReceiver(cfg(RlaParams(), local=R[0]))
    r.start(0.0)
    assert events(r) == [JoinGroup(GROUP)]
    t = r.get_timer()
    assert t is not None and t <= SpreadHellos.HELLO_SPREAD  # the first hello within the spread
    r.handle_timer(t)
    [(dest, hello)] = out(r)
    assert dest == (SENDER, PORT) and isinstance(hello, RlaSack) and hello.cum_ack == 0
    for seq, t in ((1, 0.1), (3, 0.2), (4, 0.3)):
        r.receive_datagram(RlaData(session_id=9, seq=seq, timestamp=ts_us(t - 0.01),
                                   payload=payload_for(seq, 100)).encode(), (SENDER, PORT), t)
    msgs = [m for _d, m in out(r)]
    assert [m.cum_ack for m in msgs] == [1, 1, 1]
    assert msgs[-1].blocks == ((3, 5),)
    assert msgs[-1].echo_ts == ts_us(0.29)
    assert msgs[-1].adv_buf == r.p.rcv_buffer - 2
    assert [e for e in events(r) if isinstance(e, Delivered)] == [Delivered(1, 100)]
    r.receive_datagram(RlaData(session_id=9, seq=2, timestamp=1, payload=payload_for(2, 100)).encode(),
                       (SENDER, PORT), 0.4)
    assert [e.seq for e in events(r) if isinstance(e, Delivered)] == [2, 3, 4]
    assert out(r)[-1][1].cum_ack == 4


def test_receiver_drops_corrupted_payloads():
    r = RlaReceiver(cfg(RlaParams(), local=R[0]))
    r.start(0.0)
    out(r)
    r.receive_datagram(RlaData(session_id=9, seq=1, timestamp=1, payload=b"x" * 10).encode(), (SENDER, PORT), 0.1)
    assert r.corrupt == 1 and r.buf.cum_ack == 0 and out(r) == []


def _shared_loss(one_draw: bool, draws: list[float]) -> RlaSender:
    """Two troubled receivers behind one bottleneck both lose packet 2."""
    s = _two_troubled(FixedRng(*draws), LISTENING if one_draw else rules(("one_draw_per_loss", "worst_path_listening")))
    s.cwnd = 16.0
    s._pump(1.0)
    s.last_window_cut = 1.0
    a, b = R[:2]
    feed(s, sack(a, 1, [(3, 6)]), 1.1, src=a)  # a: 2 lost
    feed(s, sack(b, 1, [(3, 6)]), 1.1005, src=b)  # b: the same packet
    return s


def test_a_packet_lost_at_every_troubled_receiver_is_one_event_and_always_cut():
    """Beyond the paper (docs/protocols/rla.md): one draw per lost packet, with
    probability (receivers that lost it) / num_trouble_rcvr -- here 2/2."""
    s = _shared_loss(True, [0.9, 0.9])
    assert s.congestion_signals == 2 and s.events == 1
    assert s.random_cuts == 1 and s.forced_cuts == 0 and s.cwnd <= 10  # one cut (16 -> 8, then ACKs)
    # The paper's rule draws 1/2 per signal: with these draws both are ignored.
    p = _shared_loss(False, [0.9, 0.9])
    assert p.random_cuts == 0 and p.ignored_signals == 2 and p.cwnd >= 16


def test_rto_floor_is_at_least_one_second_by_default():
    """RFC 6298 (2.4), which the paper's "the same as in TCP" points to: a 0.2 s
    floor fired on 230 ms paths (docs/paper-results.md)."""
    s = sender()
    r = s.rcvrs[node_id(R[0])]
    r.rtt.sample(0.23)
    for _ in range(50):
        r.rtt.sample(0.23)  # rttvar decays to ~0
    assert r.rtt.rto >= 1.0


def test_rule2_default_period_is_one_srtt_like_tcp_recovery():
    """Deviation (docs/protocols/rla.md, ``one_rtt_congestion_period``): a
    congestion period of one srtt_i, the length of TCP's recovery; the paper's
    two halved RLA's response to a persistently full drop-tail queue."""
    s = sender(initial_cwnd=30)
    out(s)
    s.rcvrs[node_id(R[0])].rtt.sample(0.1)
    feed(s, sack(R[0], 1, [(3, 6)]), 1.0, src=R[0])  # loses 2
    feed(s, sack(R[0], 1, [(3, 6), (7, 10)]), 1.08, src=R[0])  # loses 6 within one srtt
    assert s.congestion_signals == 1
    feed(s, sack(R[0], 1, [(3, 6), (7, 10), (11, 14)]), 1.15, src=R[0])  # 10: a new period
    assert s.congestion_signals == 2


def _loss_after_a_cut(one_cut_per_window: bool) -> RlaSender:
    """A cut at 1.0 s for packet 2, then (two srtt later) a loss of packet 20, which
    was sent before that cut."""
    s = sender(initial_cwnd=30, names=DEFAULT_RULES if one_cut_per_window else rules(("one_cut_per_window",)))
    out(s)
    s.rcvrs[node_id(R[0])].rtt.sample(0.1)
    feed(s, sack(R[0], 1, [(3, 6)]), 1.0, src=R[0])  # loses 2: the cut
    assert s.random_cuts + s.forced_cuts == 1 and s.cut_seq == s.next_seq - 1 >= 20
    feed(s, sack(R[0], 1, [(3, 20), (21, 24)]), 1.2, src=R[0])  # loses 20
    return s


def test_a_loss_of_a_packet_sent_before_the_last_cut_does_not_cut_again():
    """Deviation (docs/protocols/rla.md): one cut per window of data, TCP's rule
    (RFC 6582 3.2, RFC 6675 5).  Rule 2's period alone let a second loss of the
    same overflow, detected more than one srtt later, halve the window again."""
    s = _loss_after_a_cut(True)
    assert s.congestion_signals == 2 and s.absorbed_signals == 1
    assert s.random_cuts + s.forced_cuts == 1
    # A packet sent after the cut is a new congestion event.
    first = s.cut_seq + 1
    feed(s, sack(R[0], s.cut_seq), 1.3, src=R[0])  # all repaired: new packets go out
    assert s.next_seq > first + 4
    feed(s, sack(R[0], first - 1, [(first + 1, first + 5)]), 1.5, src=R[0])
    assert s.random_cuts + s.forced_cuts == 2
    # The paper's time period alone: the second loss cuts again.
    p = _loss_after_a_cut(False)
    assert p.random_cuts + p.forced_cuts == 2


def test_a_timeout_ends_fast_recovery_and_the_window_slow_starts():
    """RFC 5681 3.1: after a timeout, one packet, then slow start as ACKs come.

    A cut puts the sender in fast recovery (the window held until the cut's
    flight is repaired); a timeout with nobody acknowledging the oldest packet
    then sets the window to one.  ACKs for the repairs must open it again, one
    packet per packet acknowledged: held at one, a flight of hundreds of
    losses was repaired at one packet per round trip.
    """
    s = sender(initial_cwnd=8, ssthresh=100)
    out(s)
    s.rcvrs[node_id(R[0])].interval_avg = 10.0
    feed(s, sack(R[0], 1, [(3, 6)]), 0.1, src=R[0])  # 2 lost -> cut, fast recovery
    assert s.in_recovery
    s.handle_timer(s.timer_at("rto"))  # nobody acknowledged packet 2 for an RTO
    assert s.timeouts == 1 and s.cwnd == 1 and not s.in_recovery
    t = s.timer_at("rto")
    feed(s, sack(R[0], 2, [(3, 6)]), t + 0.1, src=R[0])  # the repair of 2 arrives
    assert s.cwnd == 2
    feed(s, sack(R[0], 6), t + 0.2, src=R[0])
    assert s.cwnd == 3


@pytest.mark.parametrize("pairs", [True, False])
def test_a_spread_group_is_sent_pairs_as_tcps_delayed_acks_clock_them(pairs: bool):
    # spread_pairs: spread SACKs free the window one packet at a time; a lone
    # packet waits for the next acknowledgement so data leaves in pairs.
    s = sender(n=2, initial_cwnd=4, ssthresh=2, consts={"SPREAD_MIN_RECEIVERS": 2},
               names=DEFAULT_RULES if pairs else rules(("spread_pairs",)))
    assert data_seqs(out(s)) == [1, 2, 3, 4]
    for r in R[:2]:
        feed(s, sack(r, 1), 0.1, src=r)
    first = data_seqs(out(s))
    for r in R[:2]:
        feed(s, sack(r, 2), 0.2, src=r)
    second = data_seqs(out(s))
    if pairs:
        assert (first, second) == ([], [5, 6])
    else:
        assert (first, second) == ([5], [6])


#: The echoed timestamp of packets sent at 0.0 (1 us: 0 means "no echo").
SENT = ts_us(0.0) + 1


def test_a_held_lone_packet_leaves_as_a_probe_when_no_sack_comes():
    # spread_pairs: the flight the pair waits on was lost, so no SACK is coming.
    # The lone packet leaves 2 srtt after the last SACK (RACK-TLP's probe
    # timeout, RFC 8985 7.2), before the retransmission timer would fire.
    s = sender(n=2, initial_cwnd=4, ssthresh=2, consts={"SPREAD_MIN_RECEIVERS": 2}, names=DEFAULT_RULES)
    assert data_seqs(out(s)) == [1, 2, 3, 4]
    for r in R[:2]:
        feed(s, sack(r, 1, echo=SENT), 0.1, src=r)  # srtt 0.1 s
    assert data_seqs(out(s)) == []  # held for its pair
    due = 0.1 + 2 * s.largest_srtt
    run_timers(s, due - 1e-6)
    assert data_seqs(out(s)) == []
    run_timers(s, due)
    assert data_seqs(out(s)) == [5]
    assert s.timeouts == 0


def clocked(clock_min: int) -> RlaSender:
    """``one_clock`` (in default) with three receivers, window 4 in congestion avoidance,
    SACKs not spread; R[0] is heard first with an RTT sample, so it is the first clock."""
    s = sender(n=3, initial_cwnd=4, ssthresh=2,
               consts={"SPREAD_MIN_RECEIVERS": 100, "CLOCK_MIN_RECEIVERS": clock_min})
    assert data_seqs(out(s)) == [1, 2, 3, 4]
    return s


def fast_clock(s: RlaSender, gap: float = 0.002) -> None:
    """The clock's SACKs as at 16 Mb/s: one per pair, some 2 ms apart."""
    s.sack_gap[s.clock] = gap


def test_a_receivers_sack_interval_runs_from_its_first_sack():
    # The clock's SACK interval (CLOCK_LAG) is measured between SACKs: the
    # SACK that creates a receiver's record gives no interval of its own.
    s = DefaultSender(cfg(RlaParams(receivers=1)))
    s.start(1.0)
    feed(s, sack(R[0], 0), 1.0, src=R[0])
    r = s.rcvrs[node_id(R[0])]
    assert r.rid not in s.sack_gap
    feed(s, sack(R[0], 0), 1.01, src=R[0])
    assert s.sack_gap[r.rid] == pytest.approx(0.01)


@pytest.mark.parametrize("clock_min, gap, expect", [(3, 0.002, ([], [5])), (4, 0.002, ([5], [])),
                                                    (3, 0.1 / 15, ([5], []))])
def test_a_large_group_is_sent_on_one_receivers_sacks(clock_min: int, gap: float, expect):
    # clock_min_receivers: the window frees when the last receiver acknowledges
    # packet 1 (R[2]), but what it freed leaves on the clock's (R[0]) next SACK,
    # as a TCP sender sends on its one receiver's ACKs.  Below the group size
    # every SACK sends, the paper's window, and so does every SACK while the
    # clock's come less often than 16 times per srtt (CLOCK_LAG): waiting for
    # the next would stretch the round trip.
    s = clocked(clock_min)
    feed(s, sack(R[0], 1, echo=SENT), 0.100, src=R[0])
    if clock_min == 3:
        fast_clock(s, gap)
    feed(s, sack(R[1], 1, echo=SENT), 0.105, src=R[1])
    assert data_seqs(out(s)) == []
    feed(s, sack(R[2], 1, echo=SENT), 0.110, src=R[2])  # 1 acknowledged by all
    first = data_seqs(out(s))
    feed(s, sack(R[0], 2, echo=SENT), 0.120, src=R[0])
    assert (first, data_seqs(out(s))) == expect
    assert s.clock == (node_id(R[0]) if clock_min == 3 else None)


def test_a_silent_clock_lets_any_sack_send():
    # A clock not heard for ack_delay (the longest a SACK is held) may have
    # crashed or lost its SACKs: the others' SACKs send until it is heard again.
    s = clocked(3)
    feed(s, sack(R[0], 1, echo=SENT), 0.100, src=R[0])
    fast_clock(s)
    feed(s, sack(R[1], 1, echo=SENT), 0.105, src=R[1])
    feed(s, sack(R[2], 1, echo=SENT), 0.100 + DELAYED_ACK_TIMEOUT + 0.001, src=R[2])
    assert data_seqs(out(s)) == [5]


def test_a_clock_that_holds_everything_sent_lets_the_last_sack_send():
    # The clock acknowledged all four packets first; no SACK of its own comes until new data
    # does, so the SACK that frees the window (the last receiver's) sends, or nothing ever will.
    s = clocked(3)
    feed(s, sack(R[0], 4, echo=SENT), 0.100, src=R[0])
    fast_clock(s)
    feed(s, sack(R[1], 4, echo=SENT), 0.105, src=R[1])
    feed(s, sack(R[2], 4, echo=SENT), 0.110, src=R[2])
    assert int(s.cwnd) == 4 and data_seqs(out(s)) == [5, 6, 7, 8]


@pytest.mark.parametrize("slow_rtt, moves", [(0.12, False), (0.13, True)])
def test_the_clock_moves_to_a_receiver_whose_srtt_is_a_quarter_larger(slow_rtt: float, moves: bool):
    # The clock is the receiver with the largest srtt, but receivers behind one
    # queue differ by a few per cent, and a clock that followed them would be
    # the latest of n again: it moves only for CLOCK_SWITCH (1.25) or more.
    s = clocked(3)
    feed(s, sack(R[0], 1, echo=SENT), 0.100, src=R[0])
    feed(s, sack(R[2], 1, echo=SENT), slow_rtt, src=R[2])
    s.handle_timer(s.timer_at("tick"))
    assert s.clock == node_id(R[2] if moves else R[0])


def test_a_forgotten_clock_is_replaced_by_the_slowest_receiver():
    s = clocked(2)
    feed(s, sack(R[0], 1, echo=SENT), 0.100, src=R[0])
    feed(s, sack(R[1], 1, echo=SENT), 0.110, src=R[1])
    feed(s, sack(R[2], 1, echo=SENT), 0.105, src=R[2])
    s._forget([node_id(R[0])])
    assert s.clock == node_id(R[1])
    s._forget([node_id(R[1])])
    assert s.clock is None  # one receiver left, below clock_min_receivers (2)


def test_a_lone_packet_leaves_when_nothing_is_in_flight():
    s = sender(n=2, initial_cwnd=1, ssthresh=1, consts={"SPREAD_MIN_RECEIVERS": 2})
    assert data_seqs(out(s)) == [1]  # a window of one: no acknowledgement would come to pair it


def test_a_lone_packet_leaves_when_only_one_is_in_flight():
    # spread_pairs holds a lone packet for the next acknowledgement only while
    # two or more are in flight: with one, no acknowledgement is sure to come
    # (if that packet is lost, none ever does), and the held packet is what
    # would reveal the loss.
    s = sender(n=2, initial_cwnd=2, ssthresh=1, consts={"SPREAD_MIN_RECEIVERS": 2})
    assert data_seqs(out(s)) == [1, 2]
    for r in R[:2]:
        feed(s, sack(r, 1), 0.1, src=r)  # 1 acknowledged by all: cwnd 2.5, packet 2 alone in flight
    assert s.cwnd == pytest.approx(2.5)
    assert data_seqs(out(s)) == [3]


@pytest.mark.parametrize("floor, expect", [(True, 2.0), (False, 1.5)])
def test_a_cut_leaves_at_least_tcps_two_packets(floor: bool, expect: float):
    # tcp_cut_floor, RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2 * SMSS),
    # and the window is ssthresh when fast recovery ends; the paper's bare halving
    # leaves 1.5 of 3.
    s = sender(initial_cwnd=3, ssthresh=1, names=DEFAULT_RULES if floor else rules(("tcp_cut_floor",)))
    out(s)
    s._cut(0.1)
    assert s.cwnd == pytest.approx(expect) and s.ssthresh == 2.0
