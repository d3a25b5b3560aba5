"""RLA recovery: what a timeout marks lost and, by rules beyond the paper, how a
receiver that joins or restarts mid-session is synchronised.  Fake clock,
scripted SACKs; the end-to-end bounds are in tests/protocols/rla/test_rla_faults.py."""

from __future__ import annotations

from rla_util import DEFAULT_RULES, DefaultReceiver, receiver_class, rules, sender_class
from win_util import cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.rla import RlaParams, RlaSender
from p4mcc.hosts.wire import Flags, RlaData, RlaSack, ts_us

R = ["10.0.1.1", "10.0.1.2"]


def sack(rcvr: str, cum: int, blocks=(), adv: int = 256, echo: int = 0) -> RlaSack:
    return RlaSack(session_id=9, cum_ack=cum, adv_buf=adv, rcvr_id=node_id(rcvr), echo_ts=echo,
                   blocks=tuple(blocks))


def sender(n: int = 1, without: tuple[str, ...] = (), ssthresh: float = 100.0,
           consts: dict | None = None, **kw) -> RlaSender:
    """A default sender without the rules ``without``, its ``n`` receivers known;
    ``consts`` overrides rules' class constants."""
    params = RlaParams(receivers=n, **{"initial_cwnd": 10, **kw})
    cls = sender_class(rules(without))
    if consts:
        cls = type(cls.__name__, (cls,), consts)
    s = cls(cfg(params))
    s.ssthresh = ssthresh
    s.start(0.0)
    for r in R[:n]:
        feed(s, sack(r, 0), 0.0, src=r)
    return s


def repairs(s: RlaSender) -> list[int]:
    return [m.seq for _d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.RETRANSMIT]


def _outage(**kw) -> RlaSender:
    """1..10 sent at 0; 1..5 ACKed at 0.5 (11..15 go out then); then silence."""
    s = sender(ssthresh=2, **kw)  # congestion avoidance: the window stays 10
    out(s)
    feed(s, sack(R[0], 5), 0.5, src=R[0])
    assert [m.seq for _d, m in out(s)] == list(range(11, 16))
    assert s.timer_at("rto") == 1.0  # one RTO (1 s, the floor) after packet 6
    s.handle_timer(1.0)
    return s


def test_a_timeout_marks_every_unacknowledged_packet_lost_and_repairs_at_once():
    """An outage swallows a whole window; the RTO of its oldest packet finds them all
    lost (RFC 5681 3.1 go-back, RFC 6675 5.1), so the one-packet window sends a repair."""
    s = _outage()
    assert s.cwnd == 1
    assert repairs(s) == [6]
    assert s.rexmit_queue == set(range(7, 16))
    # ACKs then clock out more repairs (no cut is pending here: slow start).
    feed(s, sack(R[0], 6), 1.1, src=R[0])
    assert s.cwnd == 2 and repairs(s) == [7, 8]


def test_the_paper_reads_a_timeout_as_tcp_does():
    """Section 3.3 leaves timeouts to TCP, so the paper's sender alone marks the
    whole window lost too.  Marking only what is one RTO old left 11..15 filling
    the one-packet pipe: nothing was sent until their own timeout, a round of
    silence per outage."""
    s = _outage(without=DEFAULT_RULES)
    assert s.rexmit_queue == set(range(7, 16))
    assert repairs(s) == [6]


def test_a_second_timeout_of_the_same_packet_holds_ssthresh():
    """RFC 5681 3.1: only the first timeout of a packet halves the window into
    ssthresh; when the packet "has already been retransmitted by way of the
    retransmission timer at least once, the value of ssthresh is held
    constant".  Halving the one-packet window again left ssthresh at 2 after
    any outage longer than one RTO (link flap: 6.5 s to recover with thinned
    SACKs, the window climbing linearly from 2)."""
    s = _outage()
    halved = s.ssthresh
    assert s.cwnd == 1 and 5 < halved < 5.5  # the first timeout: half of the window (10.5)
    out(s)
    s.handle_timer(3.0)  # the repair of 6 was lost too: RTO backed off to 2 s
    assert s.timeouts == 2 and (s.cwnd, s.ssthresh) == (1, halved)
    old = _outage(without=("rto_holds_ssthresh",))
    out(old)
    old.handle_timer(3.0)
    assert old.timeouts == 2 and (old.cwnd, old.ssthresh) == (1, 2)
    # A later timeout of another packet is a new one: it halves the window again.
    feed(s, sack(R[0], 15), 3.1, src=R[0])
    out(s)
    assert s.out and min(s.out) == 16
    before = s.cwnd
    run_timers(s, s.timer_at("rto"))
    assert s.timeouts == 3 and (s.cwnd, s.ssthresh) == (1, max(2, before / 2))


def test_silence_while_the_whole_group_was_unheard_does_not_drop_a_receiver():
    """``drop_silent_receivers``: a path outage silences every receiver.  When it
    is back, the first repair reaches them all, and each answers in its own time
    (a thinned SACK waits its phase): the one heard a little after the others is
    not dropped for the outage's silence.  A receiver silent while the others are
    heard still is."""
    rs = R + ["10.0.1.3"]
    # dead_after = dead_min (2 s), as on a short path (no RTT sample here: srtt_i = 1 s)
    s = sender(3, ssthresh=2, consts={"DEAD_RTTS": 1})
    for r in rs[3:]:
        feed(s, sack(r, 0), 0.0, src=r)
    out(s)
    for r in rs:
        feed(s, sack(r, 5), 0.5, src=r)
    out(s)
    run_timers(s, 3.0)  # down from 0.5 to 3.0: timeouts, nobody heard
    out(s)
    assert s.timeouts >= 1 and not s.dropped
    for r in rs[:2]:
        feed(s, sack(r, 15), 3.0, src=r)  # their answers to the first repairs through
    run_timers(s, 3.1)
    assert not s.dropped  # the third's answer is on its way
    feed(s, sack(rs[2], 15), 3.11, src=rs[2])
    assert not s.dropped
    # Then the third falls silent while the other two acknowledge everything.
    t = 3.11
    while t < 6.0 and not s.dropped:
        t = round(t + 0.05, 2)
        out(s)
        for r in rs[:2]:
            feed(s, sack(r, s.next_seq - 1), t, src=r)
        run_timers(s, t)
    assert [rid for _t, rid in s.dropped] == [node_id(rs[2])]
    assert 5.1 < s.dropped[0][0] <= 5.3  # dead_after (2 s) after it was last heard


# A receiver that joins, or comes back with no state, mid-session ---------------------


def test_a_late_joiner_is_owed_what_the_sender_still_holds_and_gets_its_start_alone():
    s = sender(ssthresh=2)
    out(s)
    feed(s, sack(R[0], 10), 0.5, src=R[0])
    out(s)
    assert min(s.out) == 11  # the trailing edge of the transmit window
    feed(s, sack(R[1], 0), 0.6, src=R[1])  # hello of a receiver nobody expected
    j = s.rcvrs[node_id(R[1])]
    assert (j.sb.cum_ack, s.join_at.get(j.rid), s._synced(j)) == (10, 11, False)
    assert s.min_last_ack == 10  # it owes nothing the first receiver has not ACKed
    msgs = [(d, m) for d, m in out(s) if isinstance(m, RlaData)]
    # Its start alone, marked SYNC (THIN_ACKS, how its SACKs are spaced, is beside the point).
    assert [(d[0], m.seq, m.flags & ~Flags.THIN_ACKS) for d, m in msgs] == [(R[1], 11, Flags.RETRANSMIT | Flags.SYNC)]
    feed(s, sack(R[1], 11), 0.7, src=R[1])
    assert s._synced(j)


def test_a_lost_sync_is_sent_again_when_the_joiners_sack_shows_plain_data():
    # The joiner got packet 11 as plain multicast data and its SYNC was lost: its SACKs hold 11
    # with a cumulative ACK of 0, so no repair of 11 is owed, and without a second SYNC its
    # stream never starts (its buffer fills and rule 5 stops the session).
    s = sender(ssthresh=2)
    out(s)
    feed(s, sack(R[0], 10), 0.5, src=R[0])
    out(s)
    feed(s, sack(R[1], 0), 0.6, src=R[1])
    j = s.rcvrs[node_id(R[1])]
    out(s)  # the first SYNC, lost
    j.rtt.sample(0.1)
    feed(s, sack(R[1], 0, [(11, 12)], echo=1), 0.7, src=R[1])
    syncs = [(d[0], m.seq) for d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.SYNC]
    assert syncs == [(R[1], 11)] and s.sync_resends == 1
    feed(s, sack(R[1], 0, [(11, 13)], echo=1), 0.75, src=R[1])  # within its round trip: not again
    assert not [m for _d, m in out(s) if isinstance(m, RlaData) and m.flags & Flags.SYNC]
    feed(s, sack(R[1], 12), 0.9, src=R[1])
    assert s._synced(j)


def test_without_the_rule_a_late_joiner_is_owed_every_packet():
    s = sender(ssthresh=2, without=("join_at_window_edge",))
    out(s)
    feed(s, sack(R[0], 10), 0.5, src=R[0])
    out(s)
    feed(s, sack(R[1], 0), 0.6, src=R[1])
    assert s.rcvrs[node_id(R[1])].sb.cum_ack == 0 and s.min_last_ack == 0


def test_a_known_receiver_whose_cumulative_ack_falls_to_zero_is_a_restart():
    s = sender(n=2, ssthresh=2)
    out(s)
    for r in R:
        feed(s, sack(r, 10), 0.5, src=r)
    out(s)
    feed(s, sack(R[1], 0), 0.6, src=R[1])  # r2's agent came back empty
    assert s.restarts == 1 and s.join_at[node_id(R[1])] == 11
    # ... also when its first word is a SACK of data (its hello still waiting).
    s3 = sender(n=2, ssthresh=2)
    out(s3)
    for r in R:
        feed(s3, sack(r, 10), 0.5, src=r)
    out(s3)
    feed(s3, sack(R[1], 0, [(12, 13)], echo=1), 0.6, src=R[1])
    assert s3.restarts == 1 and s3.join_at[node_id(R[1])] == 11
    # A hello before any data is no restart.
    s2 = sender(n=2)
    feed(s2, sack(R[1], 0), 0.0, src=R[1])
    assert s2.restarts == 0 and not s2.joined


def test_a_receiver_buffer_starts_at_the_sync_mark():
    from p4mcc.hosts.reliable import payload_for

    rc = DefaultReceiver(cfg(RlaParams(), local=R[1]))
    rc.start(0.0)
    out(rc)

    def data(seq: int, flags: int = 0) -> RlaData:
        return RlaData(session_id=9, seq=seq, timestamp=1, flags=flags, payload=payload_for(seq, 100))

    feed(rc, data(502), 0.1)  # multicast data overtaking the unicast start mark
    feed(rc, data(501, Flags.RETRANSMIT | Flags.SYNC), 0.11)
    feed(rc, data(503), 0.12)
    assert rc.buf.cum_ack == 503 and rc.buf.delivered_packets == 3
    feed(rc, data(600, Flags.SYNC), 0.2)  # a later mark moves nothing once data was delivered
    assert rc.buf.cum_ack == 503


def test_receivers_that_start_together_spread_their_hellos():
    """32 receivers joining at once sent 32 hellos in step, every second, into one
    10-packet reverse queue: the same 21 were never heard (docs/protocols/rla.md)."""
    def hello_times(names: tuple[str, ...] = DEFAULT_RULES) -> list[list[float]]:
        times = []
        for i in range(32):
            rc = receiver_class(names)(cfg(RlaParams(), local=f"10.0.2.{i + 1}"))
            rc.start(0.0)
            ts = [0.0] if out(rc) else []
            while (t := rc.get_timer()) is not None and t < 3.0:
                rc.handle_timer(t)
                if out(rc):
                    ts.append(t)
            times.append(ts)
        return times

    spread = hello_times()
    firsts = sorted(ts[0] for ts in spread)
    assert all(0 <= t <= 0.1 for t in firsts) and len(set(firsts)) == 32
    # fewer than a 10-packet queue holds within any 10 ms, first hello or a repeat
    every = sorted(t for ts in spread for t in ts)
    assert max(sum(1 for u in every if t <= u < t + 0.01) for t in every) <= 8
    in_step = hello_times(rules(("spread_hellos",)))
    assert all(ts == [0.0, 1.0, 2.0] for ts in in_step)


def test_a_dropped_receivers_cuts_are_undone_by_slow_start():
    """The cuts since a receiver fell silent were its silence (timeouts of what
    only it lacked): once it is dropped they are undone by RFC 4015's
    response, ssthresh back to the window before and cwnd to the pipe plus an
    initial window."""
    def after_drop(**kw) -> RlaSender:
        s = sender(2, ssthresh=2, **kw)
        out(s)
        if hasattr(s, "cuts"):
            s.cuts.record(0.2, 40.0, 20.0)  # the window before a cut made while R[1] was silent
        s.cwnd, s.ssthresh = 5.0, 5.0
        for i in range(1, 10):  # R[0] goes on acknowledging; R[1] never answers
            feed(s, sack(R[0], s.next_seq - 1), 0.5 * i, src=R[0])
        assert s.dropped == []
        s._drop_silent(4.6)  # R[1] silent past dead_after (4 RTOs of its initial 1 s)
        assert [rid for _t, rid in s.dropped] == [node_id(R[1])]
        return s

    s = after_drop()
    assert s.undone_cuts == 1 and s.ssthresh == 40.0
    assert s.cwnd == min(40.0, s._pipe() + 10)
    t = after_drop(without=("undo_dead_cuts",))
    assert not hasattr(t, "undone_cuts") and t.ssthresh == 5.0


def _tail(**kw) -> RlaSender:
    """Two receivers, srtt 0.1 s, a window of three; 4..6 (the tail) are lost for both."""
    s = sender(n=2, initial_cwnd=2, ssthresh=2, **kw)  # congestion avoidance
    out(s)
    for r in R:
        feed(s, sack(r, 2), 0.1, src=r)
    out(s)
    for r in R:
        feed(s, sack(r, 3, echo=ts_us(0.1)), 0.2, src=r)
    assert [m.seq for _d, m in out(s)] == [5, 6] and s.timer_at("rto") == 1.1
    return s


def test_a_tail_loss_is_found_by_the_timeout():
    """A lost tail draws no SACK to reveal it: the retransmission timer finds it
    (RFC 6298 5.4-5.6), and the window restarts at one (RFC 5681 3.1)."""
    s = _tail()
    run_timers(s, 1.05)
    assert out(s) == [] and s.timeouts == 0
    run_timers(s, 1.1)
    assert s.timeouts == 1 and s.cwnd == 1
