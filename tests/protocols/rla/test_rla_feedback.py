"""RLA feedback with many receivers: thinned, spread SACKs and one repair per loss.

A SACK for every packet from every receiver put n feedback packets per data
packet, in one burst, onto the reverse path TCP's ACKs share; and a lost
packet was repaired to the group once for each receiver whose report came
after the first repair (docs/protocols/rla.md, "Feedback from many
receivers").  Fake clock, scripted packets.
"""

from __future__ import annotations

import pytest
from rla_util import DEFAULT_RULES, DefaultSender, receiver_class, rules, sender_class
from win_util import GROUP, PORT, SENDER, cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.rla import RlaParams, RlaReceiver, RlaSender
from p4mcc.hosts.wire import Flags, RlaData, RlaSack, ts_us

R = ["10.0.1.1", "10.0.1.2", "10.0.1.3"]


def data(seq: int, sent: float, flags: int = Flags.THIN_ACKS) -> RlaData:
    """A data packet of a large group (the sender marks it ``THIN_ACKS``)."""
    return RlaData(session_id=9, seq=seq, timestamp=ts_us(sent), flags=flags, payload=payload_for(seq, 100))


def receiver(local: str = R[0], names: tuple[str, ...] = DEFAULT_RULES, **consts: float) -> RlaReceiver:
    """A receiver under the rules ``names``; ``consts`` overrides the rules'
    class constants (``ACK_EVERY``, ``ACK_DELAY``, ``ACK_SPREAD``, ``SERVICE_TIMES``)."""
    cls = receiver_class(names)
    if consts:
        cls = type(cls.__name__, (cls,), consts)
    rc = cls(cfg(RlaParams(), local=local))
    rc.start(0.0)
    run_timers(rc, 0.2)  # the first hello
    out(rc)
    return rc


def stream(rc: RlaReceiver, arrivals: list[tuple[int, float]], until: float,
           flags: int = Flags.THIN_ACKS) -> list[tuple[float, RlaSack]]:
    """Deliver (seq, time) in order, firing the receiver's timers in between;
    return every SACK with the time it left (not the hellos of a data silence: ``resume_stream``)."""
    sacks: list[tuple[float, RlaSack]] = []

    def drain(now: float) -> None:
        sacks.extend((now, m) for _d, m in out(rc) if isinstance(m, RlaSack) and (m.echo_ts or not m.cum_ack))

    for seq, t in arrivals:
        while (due := rc.get_timer()) is not None and due <= t:
            rc.handle_timer(due)
            drain(due)
        feed(rc, data(seq, t - 0.01, flags), t, src=SENDER)
        drain(t)
    while (due := rc.get_timer()) is not None and due <= until:
        rc.handle_timer(due)
        drain(due)
    return sacks


def test_a_receiver_acknowledges_every_second_packet_and_within_the_delay():
    """RFC 5681 4.2: an ACK for at least every second full-sized segment, and
    within the delayed-ACK bound after the first unacknowledged one."""
    gap = 0.01
    rc = receiver()
    arrivals = [(s, 1.0 + s * gap) for s in range(1, 41)]
    sacks = stream(rc, arrivals, until=3.0)
    assert len(sacks) <= 40 // rc.ACK_EVERY + 1
    assert sacks[-1][1].cum_ack == 40
    for seq, t in arrivals:  # every packet is acknowledged soon enough
        first = next(at for at, m in sacks if m.cum_ack >= seq)
        assert first - t <= rc.ACK_DELAY + 1e-9
    # The paper's receiver: one SACK per packet, at once.
    paper = [(at, m) for at, m in stream(receiver(names=()), arrivals, until=3.0) if m.cum_ack]  # no hello
    assert len(paper) == 40 and all(at == t for (at, _m), (_s, t) in zip(paper, arrivals))


def _first_data(n: int, names: tuple[str, ...] = DEFAULT_RULES) -> list[RlaData]:
    """The data a sender sends once ``n`` receivers said hello."""
    s = sender_class(names)(cfg(RlaParams(receivers=n)))
    s.start(0.0)
    for i in range(n):
        feed(s, RlaSack(session_id=9, cum_ack=0, adv_buf=256, rcvr_id=node_id(f"10.0.3.{i + 1}")),
             0.0, src=f"10.0.3.{i + 1}")
    return [m for _d, m in out(s) if isinstance(m, RlaData)]


def test_unmarked_data_gets_a_sack_per_packet_and_the_paper_marks_none():
    """Without ``thin_acks`` the sender marks nothing, and unmarked data gets
    the paper's SACK for every packet, at once, even from a thinning receiver."""
    arrivals = [(s, 1.0 + s * 0.01) for s in range(1, 21)]
    rc = receiver()
    small = []
    for seq, t in arrivals:
        feed(rc, data(seq, t - 0.01, flags=0), t, src=SENDER)
        small += [(t, m.cum_ack) for _d, m in out(rc) if isinstance(m, RlaSack)]
    assert small == [(t, seq) for seq, t in arrivals] and rc.timer_at("ack") is None and rc.get_timer() == rc.timer_at("quiet")
    for n in (2, 8):
        sent = _first_data(n, names=())
        assert sent and not any(m.flags & (Flags.THIN_ACKS | Flags.SPREAD_ACKS) for m in sent)


def test_every_group_thins_its_sacks_by_default():
    """By default a group of any size gets delayed SACKs, as every TCP receiver
    delays its ACKs (RFC 5681 4.2): grid median 1.29 -> 1.22 against 8+ only."""
    for n in (1, 2):
        sent = _first_data(n)
        assert sent and all(m.flags & Flags.THIN_ACKS for m in sent)


def test_only_a_large_group_spreads_its_sacks_by_default():
    """SPREAD_ACKS from ``SPREAD_MIN_RECEIVERS`` (8) receivers on: a small
    group's SACKs leave at once and clock RLA's packets out in pairs, as TCP's
    delayed ACKs do (docs/protocols/rla.md)."""
    for n, marked in ((2, False), (7, False), (8, True)):
        sent = _first_data(n)
        assert sent and all(bool(m.flags & Flags.SPREAD_ACKS) == marked for m in sent)
    # Without the rule no group is marked, and without thin_acks none is thinned.
    unspread = _first_data(8, rules(("spread_acks", "spread_pairs")))
    assert unspread and not any(m.flags & Flags.SPREAD_ACKS for m in unspread)
    unthinned = _first_data(8, rules(("thin_acks", "spread_acks", "spread_pairs")))
    assert unthinned and not any(m.flags & Flags.THIN_ACKS for m in unthinned)


def test_a_lone_packet_is_acknowledged_after_the_delay():
    rc = receiver(ACK_SPREAD=0.0)
    rc.unacked = 0  # whatever its phase, the first packet does not complete a pair
    sacks = stream(rc, [(1, 1.0)], until=2.0)
    assert [m.cum_ack for _at, m in sacks] == [1] and 1.0 < sacks[0][0] <= 1.0 + rc.ACK_DELAY


def test_a_hole_is_reported_once_the_sender_can_call_it_lost():
    """Loss reports go at once: the SACK that lets the sender apply rule 1
    (a packet dupthresh higher received) is not held for the pair or the delay."""
    rc = receiver(ACK_SPREAD=0.0, ACK_EVERY=8, ACK_DELAY=0.4)
    sacks = stream(rc, [(1, 1.0), (3, 1.01), (4, 1.02), (5, 1.03)], until=1.0301)
    assert [(at, m.cum_ack, m.blocks) for at, m in sacks] == [(1.03, 1, ((3, 6),))]
    # The repair filling the hole is acknowledged at once too (RFC 5681 4.2).
    more = stream(rc, [(2, 1.2)], until=1.2)
    assert [(at, m.cum_ack) for at, m in more] == [(1.2, 5)]


def test_the_echo_is_the_first_packet_a_sack_acknowledges():
    """RFC 7323 3.4: the echoed time is that of the earliest unacknowledged
    packet, so the sender's RTT (and RTO) cover the receiver's delay."""
    rc = receiver(ACK_SPREAD=0.0)
    rc.unacked = 0
    sacks = stream(rc, [(1, 1.0), (2, 1.01)], until=1.5)
    assert [(m.cum_ack, m.echo_ts) for _at, m in sacks] == [(2, ts_us(0.99))]


def test_many_receivers_spread_the_sacks_one_packet_triggers():
    """32 receivers that get the same packets at the same instants: their SACKs
    reach the reverse path spread over the gap between data packets, not as one
    burst per packet (bound: fewer SACKs within a tenth of a gap than the
    grid's smallest reverse queue, 10 packets, holds; in step, half the group
    leaves at the same instant)."""
    gap = 0.012  # 1500-byte packets at 1 Mb/s
    arrivals = [(s, 1.0 + s * gap) for s in range(1, 101)]

    def sack_times(flags: int = Flags.THIN_ACKS | Flags.SPREAD_ACKS, **kw) -> list[float]:
        times = []
        for i in range(32):
            sacks = stream(receiver(f"10.0.2.{i + 1}", **kw), arrivals, until=3.0, flags=flags)
            # Once the receivers know the gap (not the hellos, not the first packets).
            times += [at for at, m in sacks if m.cum_ack > 4]
        return sorted(times)

    def densest(times: list[float], width: float) -> int:
        return max(sum(1 for u in times if t <= u < t + width) for t in times)

    spread = sack_times()
    assert densest(spread, gap / 10) < 10
    assert len(spread) <= 32 * (100 // 2 + 1)  # thinned: about one SACK per receiver per two packets
    in_step = sack_times(ACK_SPREAD=0.0)
    assert densest(spread, gap / 10) <= 2 * densest(in_step, gap) / 10 + 2
    assert densest(in_step, gap / 10) >= 32 // 2 - 4
    # Data the sender did not mark SPREAD_ACKS (a small group): SACKs at once.
    assert densest(sack_times(flags=Flags.THIN_ACKS), gap / 10) >= 32 // 2 - 4


def test_the_spread_lasts_two_service_times_of_the_bottleneck_at_most():
    """Pairs 2.4 ms apart (1500 bytes at 5 Mb/s), one pair every 25 ms (a share
    of 80 packets/s): a receiver's SACK for a pair waits at most two of those
    service times, not its phase of the 25 ms gap (up to ``ack_delay``/2 =
    20 ms, added to every round trip of the acknowledged-by-all clock), and
    the group's SACKs still do not leave in step."""
    svc, period = 0.0024, 0.025
    arrivals = [(s, 1.0 + (s - 1) // 2 * period + (s - 1) % 2 * svc) for s in range(1, 201)]
    completes = {seq: t for seq, t in arrivals}

    def waits(**kw) -> tuple[list[float], list[float]]:
        delays, times = [], []
        for i in range(16):
            for at, m in stream(receiver(f"10.0.3.{i + 1}", **kw), arrivals, until=7.0,
                                flags=Flags.THIN_ACKS | Flags.SPREAD_ACKS):
                if m.cum_ack > 70:  # the receiver has seen two blocks of spacings
                    delays.append(at - completes[m.cum_ack])
                    times.append(at)
        return delays, sorted(times)

    capped, times = waits()
    assert max(capped) <= 2 * svc + 1e-9
    assert max(sum(1 for u in times if t <= u < t + svc / 10) for t in times) < 16 // 2
    gap_only, _ = waits(SERVICE_TIMES=1e9)  # no bound: the phase of the data gap
    assert max(gap_only) > 4 * svc


def _sender(n: int = 3, without: tuple[str, ...] = ()) -> RlaSender:
    s = sender_class(rules(without))(cfg(RlaParams(receivers=n, initial_cwnd=10)))
    s.ssthresh = 100
    s.start(0.0)
    for r in R[:n]:
        feed(s, RlaSack(session_id=9, cum_ack=0, adv_buf=256, rcvr_id=node_id(r)), 0.0, src=r)
    for rr in s.rcvrs.values():
        rr.rtt.sample(0.1)
    out(s)
    return s


def _sack(r: str, cum: int, blocks=()) -> RlaSack:
    return RlaSack(session_id=9, cum_ack=cum, adv_buf=256, rcvr_id=node_id(r), blocks=tuple(blocks))


def _repairs(s: RlaSender) -> list[tuple[tuple[str, int], int]]:
    return [(d, m.seq) for d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.RETRANSMIT]


@pytest.mark.parametrize("rule", [True, False])
def test_a_packet_lost_behind_a_shared_bottleneck_is_repaired_to_the_group_once(rule):
    """Footnote 8: the sender "waits until it hears from all the receivers" and
    multicasts the repair.  Three receivers lose packet 2; their reports come
    one after another.  With the rule the group gets one repair; without it
    (the former wait for a report at or above the packet) one per receiver."""
    s = _sender(without=() if rule else ("one_repair_per_loss",))
    a, b, c = R
    feed(s, _sack(b, 1, [(3, 4)]), 0.10, src=b)  # b has 3: it cannot call 2 lost yet
    feed(s, _sack(c, 1, [(3, 4)]), 0.10, src=c)
    feed(s, _sack(a, 1, [(3, 6)]), 0.11, src=a)  # a: 2 lost
    first = _repairs(s)
    feed(s, _sack(b, 1, [(3, 6)]), 0.12, src=b)  # b and c: 2 lost as well
    feed(s, _sack(c, 1, [(3, 6)]), 0.13, src=c)
    later = _repairs(s)
    if rule:
        assert first == [] and later == [((GROUP, PORT), 2)]
        assert all(2 in r.rexmit_at for r in s.rcvrs.values())
    else:
        assert len(first + later) == 3


def test_a_report_overtaken_by_a_multicast_repair_waits_for_it():
    """A receiver whose report of the loss left it before the group's repair
    reached it is covered by that repair; a report an RTT later is not."""
    s = _sender()
    a, b, c = R
    feed(s, _sack(b, 6), 0.10, src=b)
    feed(s, _sack(a, 1, [(3, 6)]), 0.10, src=a)
    feed(s, _sack(c, 1, [(3, 5)]), 0.10, src=c)  # c: 2 not yet called lost
    assert _repairs(s) == []
    s.on_timer("tick", 0.25)  # no word from c for an srtt: the repair goes
    s._pump(0.25)
    assert _repairs(s) == [((GROUP, PORT), 2)]
    feed(s, _sack(c, 1, [(3, 7)]), 0.27, src=c)  # sent before the repair reached c
    assert _repairs(s) == [] and 2 in s.rcvrs[node_id(c)].rexmit_at


def test_a_cumulative_ack_grows_the_window_by_the_packets_it_acknowledges():
    """RFC 3465: with fewer ACKs the window grows per packet ACKed by all, not
    per ACK (rule 4 counts packets)."""
    s = _sender(n=1)
    before = s.cwnd
    feed(s, _sack(R[0], 2), 0.1, src=R[0])  # one SACK for two packets, slow start
    assert s.cwnd == before + 2


@pytest.mark.parametrize("rule", [True, False])
def test_a_lost_repair_is_found_by_a_later_packet_and_sent_again(rule):
    """RFC 8985 6.2: a packet sent after the repair reached the receiver and
    the repair did not, so the repair is lost: it goes again at once, not
    after a retransmission timeout (at least ``min_rto``)."""
    s = _sender(without=() if rule else ("detect_lost_repairs",))
    a, b, c = R
    feed(s, _sack(b, 10), 0.10, src=b)
    feed(s, _sack(c, 10), 0.10, src=c)
    feed(s, _sack(a, 1, [(3, 11)]), 0.10, src=a)  # a lost 2
    assert _repairs(s) == [((GROUP, PORT), 2)]
    # Packets sent with the repair reach everyone: the window moves on, new
    # packets leave at 0.30 (a's report of them is no news about the repair).
    feed(s, _sack(b, 14), 0.30, src=b)
    feed(s, _sack(c, 14), 0.30, src=c)
    feed(s, _sack(a, 1, [(3, 15)]), 0.30, src=a)
    assert getattr(s, "lost_repairs", 0) == 0
    out(s)
    later = min(q for q, o in s.out.items() if o.first_sent >= 0.30)
    # a acknowledges a packet sent 0.2 s after the repair, still without 2.
    feed(s, _sack(a, 1, [(3, later + 1)]), 0.45, src=a)
    assert s.timer_at("rto") > 0.45 + s.p.min_rto / 2  # no timeout came in between
    if rule:
        assert _repairs(s) == [((GROUP, PORT), 2)] and s.lost_repairs == 1
    else:
        assert _repairs(s) == [] and 2 in s.rcvrs[node_id(a)].rexmit_at


def test_a_report_sent_before_the_repair_arrived_is_not_a_lost_repair():
    """Within the reordering window (a quarter of the srtt) nothing is repaired again."""
    s = _sender()
    a, b, c = R
    feed(s, _sack(b, 10), 0.10, src=b)
    feed(s, _sack(c, 10), 0.10, src=c)
    feed(s, _sack(a, 1, [(3, 11)]), 0.10, src=a)
    assert _repairs(s) == [((GROUP, PORT), 2)]
    newest = max(s.out)  # sent at 0.10 with the repair
    feed(s, _sack(a, 1, [(3, newest + 1)]), 0.15, src=a)
    assert _repairs(s) == [] and s.lost_repairs == 0


def test_slow_start_and_the_buffer_reach_a_long_fat_paths_window():
    """RFC 5681 3.1: ssthresh starts "arbitrarily high (e.g., the size of the
    largest possible advertised window)", and the advertised buffer must cover
    the bandwidth-delay product: 20 Mb/s x 200 ms is 333 packets of 1500 bytes,
    plus a queue of up to 2 BDP in the friendliness grid."""
    p = RlaParams()
    bdp = 20e6 * 0.2 / 8 / 1500
    s = DefaultSender(cfg(RlaParams(receivers=1)))  # the defaults
    assert s.ssthresh == p.rcv_buffer >= 3 * bdp
    s.start(0.0)
    feed(s, RlaSack(session_id=9, cum_ack=0, adv_buf=p.rcv_buffer, rcvr_id=node_id(R[0])), 0.0, src=R[0])
    out(s)
    t, acked = 0.1, 0
    while s.cwnd < 3 * bdp and t < 2.0:  # one slow-start round per 0.1 s
        top = s.next_seq - 1
        feed(s, RlaSack(session_id=9, cum_ack=top, adv_buf=p.rcv_buffer, rcvr_id=node_id(R[0])), t, src=R[0])
        out(s)
        acked, t = top, t + 0.1
    assert s.cwnd >= 3 * bdp and s.cwnd < s.ssthresh  # still in slow start
    assert s.next_seq - 1 - acked >= 3 * bdp  # and the buffer lets the window out


def test_the_first_window_is_rfc_6928s_ten_packets():
    """RFC 6928: an initial window of 10 segments (the simulator's TCP's)."""
    s = DefaultSender(cfg(RlaParams(receivers=1)))
    s.start(0.0)
    feed(s, RlaSack(session_id=9, cum_ack=0, adv_buf=256, rcvr_id=node_id(R[0])), 0.0, src=R[0])
    assert [m.seq for _d, m in out(s) if isinstance(m, RlaData)] == list(range(1, 11))
