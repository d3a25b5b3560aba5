"""MTCP: one test per mechanism of the paper (fake clock, scripted ACKs and NACKs)."""

from __future__ import annotations

import pytest
from win_util import GROUP, PORT, SENDER, cfg, events, feed, out, run_timers

from p4mcc.hosts.core import Delivered, JoinGroup, node_id
from mtcp_util import MtcpReceiver, MtcpSender, PaperReceiver, PaperSender, composed

from p4mcc.hosts.mtcp import FOLD_ID, NO_CWND, MtcpParams
from p4mcc.hosts.mtcp.constants import ACK_DELAY, INITIAL_SSTHRESH, RTO_MIN
from p4mcc.hosts.mtcp.rules import TimerJitter
from p4mcc.hosts.reliable import payload_for
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us

A, B = "10.0.1.1", "10.0.1.2"
TREE2 = f"{A}>{SENDER},{B}>{SENDER}"


def ack(node: str, cum: int, bitmap: int = 0, echo: int = 0, min_cwnd: int = NO_CWND,
        max_twnd: int = 0, adv: int = 256, flags: int = 0, cls=MtcpAck):
    return cls(session_id=9, cum_ack=cum, min_cwnd=min_cwnd, max_twnd=max_twnd, adv_wnd=adv,
               node_id=node_id(node), echo_ts=echo, sack_bitmap=bitmap, flags=flags)


def nack(node: str, cum: int, missing) -> MtcpNack:
    return MtcpNack(session_id=9, cum_ack=cum, node_id=node_id(node), missing=tuple(missing))


#: The default rules, with the window beginning at the paper's one packet.
Sender1 = composed(PaperSender, initial_window=False)


def sender(tree: str = TREE2, profile: str = "default", cwnd: float | None = None, **rules: bool) -> MtcpSender:
    """A started sender of ``profile`` (rules switched by name) whose window begins
    at the paper's one packet (``initial_window``, RFC 6928's 10, is off), or at ``cwnd``."""
    s = composed(PaperSender, profile, **{"initial_window": False, **rules})(cfg(MtcpParams(tree=tree)))
    if cwnd is not None:
        s.cwnd = cwnd
    s.start(0.0)
    for c in s.tree.children_of(SENDER):
        feed(s, ack(c, 0, cls=MtcpWindowUpdate), 0.0, src=c)
    return s


def data(msgs):
    return [(d, m) for d, m in msgs if isinstance(m, MtcpData)]


def test_sender_multicasts_once_every_child_said_hello_and_stays_in_its_window():
    s = Sender1(cfg(MtcpParams(tree=TREE2)))
    s.start(0.0)
    feed(s, ack(A, 0, cls=MtcpWindowUpdate), 0.0, src=A)
    assert data(out(s)) == []
    feed(s, ack(B, 0, cls=MtcpWindowUpdate), 0.0, src=B)
    sent = data(out(s))
    assert [(d, m.seq) for d, m in sent] == [((GROUP, PORT), 1)]  # cwnd 1, twnd 0
    assert s.twnd == 1


def test_slow_start_grows_cwnd_only_when_all_children_ack():
    s = sender()
    out(s)
    feed(s, ack(A, 1, echo=ts_us(0.0) or 1), 0.05, src=A)
    assert s.cwnd == 1 and s.twnd == 1
    feed(s, ack(B, 1, echo=1), 0.06, src=B)
    assert s.cwnd == 2 and s.twnd == 2  # one left the pipe, two new ones entered
    assert [m.seq for _d, m in data(out(s))] == [2, 3]


def test_slow_start_grows_at_most_two_packets_per_report():
    """RFC 3465's L = 2: a report that acknowledges 12 packets by all at once
    (the slow child's, after the fast one) grows cwnd by 2, not 12."""
    def grown(**kw) -> float:
        s = sender(cwnd=12.0, **kw)
        out(s)
        feed(s, ack(A, 12, echo=1), 0.05, src=A)
        feed(s, ack(B, 12, echo=1), 0.06, src=B)
        return s.cwnd

    assert grown() == 14
    assert grown(abc=False) == 24  # +1 per packet acknowledged by all


def test_sender_window_is_min_cwnd_minus_max_twnd_and_the_advertised_window():
    s = sender()
    s.cwnd = 50.0
    out(s)
    # A child SA reports minCwnd 6 and a subtree still holding 4 packets: room for 2,
    # although the sender's own twnd (1: B has not acknowledged packet 1) would allow 5.
    feed(s, ack(A, 1, min_cwnd=6, max_twnd=4), 0.1, src=A)
    assert [m.seq for _d, m in data(out(s))] == [2, 3]
    assert s.twnd == 3 and s.current_window() == 6 - 4
    # The advertised window bounds it too: B has room for 2 beyond its cumulative ACK.
    s2 = sender()
    s2.cwnd = 50.0
    out(s2)
    feed(s2, ack(B, 1, adv=2), 0.1, src=B)
    feed(s2, ack(A, 1), 0.1, src=A)
    assert [m.seq for _d, m in data(out(s2))] == [2, 3]


def test_packet_timer_uses_send_time_plus_rto_rtd_then_unicast_repair():
    s = sender()
    s.cwnd = 2.0
    out(s)
    c = s.children[node_id(A)]
    for i in range(5):  # RTD samples of 40 ms
        c.rtd.sample(0.04)
        s.children[node_id(B)].rtd.sample(0.04)
    rto = s.rto_rtd()
    assert rto == pytest.approx(0.04 + RTO_MIN, rel=0.05)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    sent = data(out(s))
    t0 = 0.05
    assert [m.seq for _d, m in sent][:1] == [2]
    feed(s, ack(B, 3), 0.1, src=B)  # A never acknowledges packet 2
    out(s)
    assert s.timer_at("pkt") == pytest.approx(t0 + rto)
    run_timers(s, t0 + rto - 1e-6)
    assert not [m for _d, m in data(out(s)) if m.flags & Flags.RETRANSMIT]
    run_timers(s, t0 + rto)
    msgs = data(out(s))
    rex = [(d, m) for d, m in msgs if m.flags & Flags.RETRANSMIT]
    assert [(d, m.seq) for d, m in rex][0] == ((A, PORT), 2)
    # A timeout: cwnd back to 1 and twnd to 0, so exactly one new packet may go.
    assert s.cwnd_cuts == 1 and s.cwnd == 1
    assert len([m for _d, m in msgs if not m.flags & Flags.RETRANSMIT]) == 1 and s.twnd == 1


def test_retransmission_timer_backs_off_on_rto_rtt():
    s = sender()
    out(s)
    feed(s, ack(B, 1), 0.05, src=B)
    t = s.buf[1].deadline
    s.handle_timer(t)  # first expiry: RTD-based, repair sent, timer -> RTO_RTT
    t1 = s.buf[1].deadline
    assert t1 == pytest.approx(t + s.rto_rtt())
    run_timers(s, t1)
    t2 = s.buf[1].deadline
    assert t2 - t1 == pytest.approx(2 * (t1 - t))


def test_nack_triggers_unicast_repair_unless_resent_within_rtt():
    s = sender()
    s.cwnd = 10
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    out(s)
    cA = s.children[node_id(A)]
    cA.rtt.sample(0.03)
    feed(s, nack(A, 1, [3]), 0.1, src=A)
    assert [(d, m.seq) for d, m in data(out(s))] == [((A, PORT), 3)]
    feed(s, nack(A, 1, [3]), 0.1 + 0.03 + ACK_DELAY - 0.001, src=A)  # within its RTT
    assert data(out(s)) == [] and s.suppressed_nacks == 1
    feed(s, nack(A, 1, [3]), 0.1 + 0.03 + ACK_DELAY + 0.001, src=A)
    assert [(d, m.seq) for d, m in data(out(s))] == [((A, PORT), 3)]


def test_retransmission_window_paces_repairs_per_child():
    s = sender()
    s.cwnd = 10
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    out(s)
    feed(s, nack(A, 1, [2, 3, 4]), 0.1, src=A)
    assert [m.seq for _d, m in data(out(s))] == [2]  # window of one repair
    feed(s, ack(A, 2), 0.12, src=A)  # the repair is acknowledged: window 2
    assert [m.seq for _d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == [3, 4]
    assert s.children[node_id(A)].rwnd == 2


def test_a_nacks_cumulative_ack_frees_repair_slots_and_buffers():
    # The repair of 2 reaches A and A's next report is a NACK (for 4) whose
    # cumulative ACK covers 2 and 3: the repair slot must be free again and
    # 2, 3 (held by B too) released, else A's window stays full for good.
    s = sender()
    s.cwnd = 10
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 3), 0.05, src=B)
    out(s)
    feed(s, nack(A, 1, [2, 3]), 0.1, src=A)
    assert [m.seq for _d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == [2]
    feed(s, nack(A, 3, [4]), 0.2, src=A)
    cA = s.children[node_id(A)]
    assert 2 not in cA.rinflight and 2 not in s.buf and 3 not in s.buf
    assert [m.seq for _d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == [4]


def test_one_nack_does_not_shrink_cwnd_repeated_nacks_do():
    s = sender(profile="paper")  # the paper's rule
    s.cwnd = s.ssthresh = 10.0
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    out(s)
    cw = s.cwnd
    s.children[node_id(A)].rtt.sample(0.01)
    feed(s, nack(A, 1, [3]), 0.1, src=A)  # independent loss: repaired, no reaction
    assert s.cwnd == cw
    feed(s, nack(A, 1, [3]), 0.2, src=A)  # the repair was lost too
    assert s.cwnd == cw
    feed(s, nack(A, 1, [3]), 0.3, src=A)  # third NACK for it: congestion
    assert s.cwnd == pytest.approx(cw / 2) and s.cwnd_cuts == 1


def test_twnd_counts_packets_not_yet_acked_by_all_children():
    sa = MtcpReceiver(cfg(MtcpParams(tree=f"{A}>{SENDER},{B}>{A},10.0.1.3>{A}"), local=A))
    sa.start(0.0)
    for c in (B, "10.0.1.3"):
        feed(sa, ack(c, 0, cls=MtcpWindowUpdate), 0.0, src=c)
    for seq in (1, 2, 3):
        sa.receive_datagram(rdata(seq, 0.0).encode(), (SENDER, PORT), 0.01)
    assert sa.twnd == 3
    feed(sa, ack(B, 2), 0.05, src=B)
    assert sa.twnd == 3
    feed(sa, ack("10.0.1.3", 2), 0.05, src="10.0.1.3")
    assert sa.twnd == 1 and set(sa.buf) == {3}


def test_vegas_round_adjusts_the_trend_by_rtd_growth():
    s = sender(profile="paper")
    s.cwnd, s.ssthresh = 10.0, 2.0
    out(s)
    a, b = s.children[node_id(A)], s.children[node_id(B)]
    a.rtd.sample(0.040)
    b.rtd.sample(0.040)
    s.round_start, s.round_acked = 0.0, 100  # 100 packets/s
    a.round_min_rtd, b.round_min_rtd = 0.045, 0.041  # 0.5 packet queued on A's path
    s._end_round(1.0)
    assert s.trend == 1
    s.round_acked = 100
    a.round_min_rtd = 0.080  # 4 packets queued: above beta = 3
    s._end_round(2.0)
    assert s.trend == -1
    s.round_acked = 100
    a.round_min_rtd = 0.060  # 2: between alpha and beta
    s._end_round(3.0)
    assert s.trend == 0


def test_switch_folded_feedback_is_one_child_repaired_by_multicast():
    s = Sender1(cfg(MtcpParams(receivers=1, assisted=True)))
    s.start(0.0)
    # The switch keeps the reporting receiver's node_id: folds from two receivers are one child.
    feed(s, ack("10.0.9.9", 0, flags=Flags.AGGREGATED, cls=MtcpWindowUpdate), 0.0, src="10.0.9.9")
    feed(s, ack("10.0.9.8", 0, flags=Flags.AGGREGATED, cls=MtcpWindowUpdate), 0.0, src="10.0.9.8")
    assert [m.seq for _d, m in data(out(s))] == [1]
    c = s.children[FOLD_ID]
    assert c.aggregated and len(s.children) == 1
    s.handle_timer(s.timer_at("pkt"))
    rex = [(d, m.seq) for d, m in data(out(s)) if m.flags & Flags.RETRANSMIT]
    assert rex == [((GROUP, PORT), 1)]
    # A NACK from a receiver behind the switch is repaired without making it a child,
    # by multicast (a loss behind the fold is likely every member's) ...
    feed(s, nack("10.0.5.5", 0, [1]), 5.0, src="10.0.5.5")
    assert [(d, m.seq) for d, m in data(out(s))] == [((GROUP, PORT), 1)]
    assert len(s._acking()) == 1
    # ... once: another member's NACK within the fold's RTT finds it on its way.
    feed(s, nack("10.0.5.6", 0, [1]), 5.01, src="10.0.5.6")
    assert data(out(s)) == [] and s.suppressed_nacks == 1


def test_sender_ignores_sack_bits_of_a_fold_and_releases_by_cum_ack_only():
    # A fold speaks for every receiver behind the switch; a bitmap in it is one
    # receiver's view, so packets it marks may still be missing elsewhere.
    s = Sender1(cfg(MtcpParams(receivers=1, assisted=True)))
    s.start(0.0)
    feed(s, ack("10.0.9.9", 0, flags=Flags.AGGREGATED, cls=MtcpWindowUpdate), 0.0, src="10.0.9.9")
    s.cwnd = 8.0
    feed(s, ack("10.0.9.9", 0, flags=Flags.AGGREGATED), 0.01, src="10.0.9.9")
    assert [m.seq for _d, m in data(out(s))] == list(range(1, 9))
    # cum_ack 1 and SACK bits for 3..6 (bit i = packet cum_ack + 1 + i).
    feed(s, ack("10.0.9.9", 1, bitmap=0b11110, flags=Flags.AGGREGATED), 0.05, src="10.0.9.9")
    assert 1 not in s.buf and set(range(2, 9)) <= set(s.buf)  # only packet 1 released
    # The same bits from an ordinary child do count.
    s2 = sender(tree=f"{A}>{SENDER}")
    s2.cwnd = 8.0
    feed(s2, ack(A, 0), 0.01, src=A)
    out(s2)
    feed(s2, ack(A, 1, bitmap=0b11110), 0.05, src=A)
    assert 3 not in s2.buf and 2 in s2.buf


# Receivers ------------------------------------------------------------------------


def rdata(seq: int, t: float, flags: int = 0) -> MtcpData:
    return MtcpData(session_id=9, seq=seq, timestamp=ts_us(t), flags=flags, payload=payload_for(seq, 100))


def test_receiver_delays_its_sack_ack_and_corrects_echo_for_holding_time():
    r = composed(PaperReceiver, nack_dupthresh=False, nack_rack=False, delayed_ack=False)(cfg(MtcpParams(tree=TREE2), local=A))
    r.start(0.0)
    assert events(r) == [JoinGroup(GROUP)]
    run_timers(r, r.timer_at("wupdate"))
    [(dest, hello)] = out(r)
    assert dest == (SENDER, PORT) and isinstance(hello, MtcpWindowUpdate)
    assert hello.min_cwnd == NO_CWND and hello.max_twnd == 0  # a leaf limits nothing
    r.receive_datagram(rdata(1, 0.29).encode(), (SENDER, PORT), 0.3)
    r.receive_datagram(rdata(3, 0.3).encode(), (SENDER, PORT), 0.31)
    assert out(r) == []
    t_ack = r.timer_at("ack")  # ack_delay (jittered +-50 %) after the first unacknowledged arrival
    assert 0.31 <= t_ack <= 0.33
    run_timers(r, t_ack)
    msgs = [m for _d, m in out(r)]
    a = next(m for m in msgs if isinstance(m, MtcpAck))
    assert a.cum_ack == 1 and a.sack_bitmap == 0b10
    # echo = send time of the last packet + the time it was held
    assert a.echo_ts == ts_us(0.3) + round((t_ack - 0.31) * 1e6)
    n = next(m for m in msgs if isinstance(m, MtcpNack))
    assert n.missing == (2,) and n.cum_ack == 1
    assert [e for e in events(r) if isinstance(e, Delivered)] == [Delivered(1, 100)]


FOLDER = "10.0.9.9"  # the folding switch's reports carry this receiver's node_id


def _sender_behind_a_fold() -> MtcpSender:
    """A started sender whose one child is a switch's fold, with 8 packets out."""
    s = Sender1(cfg(MtcpParams(receivers=1, assisted=True)))
    s.start(0.0)
    feed(s, ack(FOLDER, 0, flags=Flags.AGGREGATED, cls=MtcpWindowUpdate), 0.0, src=FOLDER)
    s.cwnd = 8.0
    feed(s, ack(FOLDER, 0, flags=Flags.AGGREGATED), 0.01, src=FOLDER)
    out(s)
    return s


def test_nacks_of_a_receiver_behind_a_fold_acknowledge_its_repairs():
    # Its ACKs go into the switch's fold, so only its NACKs tell the sender a
    # repair arrived; otherwise its retransmission window stays full after one.
    s = _sender_behind_a_fold()
    x = "10.0.5.5"
    feed(s, nack(x, 1, [2]), 0.05, src=x)
    assert [(d, m.seq) for d, m in data(out(s))] == [((GROUP, PORT), 2)]
    feed(s, nack(x, 4, [5]), 0.10, src=x)  # 2 arrived (cum_ack 4); now 5 is missing
    assert [(d, m.seq) for d, m in data(out(s))] == [((GROUP, PORT), 5)]
    assert s.children[node_id(x)].nack_only and len(s._acking()) == 1
    assert 2 in s.buf  # a NACK-only receiver never releases a packet


@pytest.mark.parametrize("its_own", [True, False])
def test_a_fold_a_nack_only_member_triggered_acknowledges_its_repairs(its_own: bool) -> None:
    """The switch counts the reporting port in every fold it sends, so a fold
    keeps the reporter's node_id and its cum_ack is at most the reporter's
    own: a member the sender repairs directly (a restarted switch left it out
    of the fold for a while) has its repairs acknowledged at its ACKs' pace,
    not only at its NACKs'.  A fold another member triggered says nothing of it."""
    s = _sender_behind_a_fold()
    x = "10.0.5.5"
    feed(s, nack(x, 1, [2, 3]), 0.05, src=x)  # x lacks 2 and 3: its retransmission window sends one
    assert [m.seq for _d, m in data(out(s))] == [2]
    reporter = x if its_own else FOLDER
    feed(s, ack(reporter, 2, flags=Flags.AGGREGATED), 0.10, src=reporter)
    repairs = [m.seq for _d, m in data(out(s)) if m.seq <= 3]
    assert repairs == ([3] if its_own else [])
    assert s.children[node_id(x)].sb.cum_ack == (2 if its_own else 1)


def _wupdate_in(r: MtcpReceiver, now: float, period: float) -> float:
    """The armed window-update time, checked to lie within the jittered period."""
    t = r.timer_at("wupdate")
    assert t is not None
    assert (1 - TimerJitter.JITTER) * period <= t - now <= (1 + TimerJitter.JITTER) * period
    return t


def test_window_update_every_half_second_growing_by_one_second():
    r = MtcpReceiver(cfg(MtcpParams(tree=TREE2), local=A))
    r.start(0.0)
    out(r)
    r.receive_datagram(rdata(1, 0.0).encode(), (SENDER, PORT), 0.0)
    run_timers(r, 0.05)
    out(r)  # the delayed ACK, at 0.02: the window update is put off from there
    t = _wupdate_in(r, 0.02, 0.5)
    run_timers(r, t)
    assert [type(m) for _d, m in out(r)] == [MtcpWindowUpdate]
    t2 = _wupdate_in(r, t, 1.5)
    run_timers(r, t2)
    assert [type(m) for _d, m in out(r)] == [MtcpWindowUpdate]
    t3 = _wupdate_in(r, t2, 2.5)
    r.receive_datagram(rdata(2, t3 - 0.1).encode(), (SENDER, PORT), t3 - 0.1)
    _wupdate_in(r, t3 - 0.1, 0.5)  # reset by a new packet


def _first_repeats(seed: int, n: int = 64) -> list[float]:
    """When each of ``n`` receivers that start together repeats its hello."""
    times = []
    for i in range(n):
        r = MtcpReceiver(cfg(MtcpParams(receivers=n), local=f"10.0.2.{i + 1}", seed=seed))
        r.start(0.0)
        assert out(r) == []  # the first hello waits up to half a period
        t0 = r.timer_at("wupdate")
        assert 0.0 <= t0 <= 0.25
        run_timers(r, t0)
        [(_d, hello)] = out(r)
        assert isinstance(hello, MtcpWindowUpdate)
        times.append(_wupdate_in(r, t0, 0.5))
    return times


def test_hellos_of_receivers_that_start_together_do_not_repeat_in_step():
    # Without jitter all 64 would repeat at exactly 0.5 s, and every later
    # round again together: the same ones lose at the parent's queue each time.
    times = _first_repeats(seed=7)
    assert len(set(times)) == len(times)
    bins = [0] * 10  # 100 ms bins over [0.0, 1.0]
    for t in times:
        bins[min(9, int(t / 0.1))] += 1
    assert max(bins) <= 16  # a uniform spread puts about 6 in each
    assert _first_repeats(seed=7) == times  # reproducible from the session seed
    assert _first_repeats(seed=8) != times


def test_window_updates_break_the_deadlock_of_section_3_9():
    """A child SA reported a large twnd; the sender stops; only a window update revives it."""
    s = sender()
    s.cwnd = 5.0
    out(s)
    feed(s, ack(A, 1, min_cwnd=5, max_twnd=5), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    assert data(out(s)) == []  # current window 5 - 5 = 0: nothing to send, no data to ACK
    feed(s, ack(A, 1, min_cwnd=5, max_twnd=0, cls=MtcpWindowUpdate), 0.6, src=A)
    assert len(data(out(s))) >= 1


def test_agent_buffers_repairs_its_children_and_summarises_its_subtree():
    tree = f"{A}>{SENDER},{B}>{A}"
    sa = PaperReceiver(cfg(MtcpParams(tree=tree), local=A))
    sa.start(0.0)
    out(sa)
    assert sa.is_agent
    feed(sa, ack(B, 0, min_cwnd=NO_CWND, cls=MtcpWindowUpdate), 0.0, src=B)
    sa.receive_datagram(rdata(1, 0.0).encode(), (SENDER, PORT), 0.01)
    sa.receive_datagram(rdata(2, 0.0).encode(), (SENDER, PORT), 0.011)
    assert sa.twnd == 2 and set(sa.buf) == {1, 2}
    feed(sa, nack(B, 0, [1]), 0.03, src=B)
    assert [(d, m.seq) for d, m in data(out(sa))] == [((B, PORT), 1)]
    feed(sa, ack(B, 2, min_cwnd=NO_CWND, max_twnd=0), 0.04, src=B)
    assert sa.twnd == 0 and sa.cwnd == 3
    run_timers(sa, 0.1)
    a = next(m for _d, m in out(sa) if isinstance(m, MtcpAck))
    assert (a.min_cwnd, a.max_twnd, a.cum_ack) == (3, 0, 2)
    # Feedback from a node that is not our child is ignored.
    feed(sa, ack("10.0.7.7", 5), 0.2, src="10.0.7.7")
    assert node_id("10.0.7.7") not in sa.children


def test_malformed_and_foreign_datagrams_are_dropped():
    s = sender()
    s.receive_datagram(b"garbage", (A, PORT), 0.1)
    feed(s, MtcpAck(session_id=99, node_id=node_id(A), cum_ack=5), 0.1, src=A)
    assert s.malformed == 1 and s.children[node_id(A)].sb.cum_ack == 0


def test_reno_window_halves_on_the_first_nack_of_a_new_loss_once_per_window():
    s = sender()  # reno_window, a default rule
    s.cwnd = s.ssthresh = 10.0
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    sent = [m.seq for _d, m in data(out(s))]
    cw = s.cwnd
    assert cw == pytest.approx(10.1)  # congestion avoidance: +1/cwnd per packet ACKed by all
    feed(s, nack(A, 1, [3]), 0.1, src=A)  # a new loss: congestion, as 3 dup ACKs are to TCP
    assert s.cwnd == pytest.approx(cw / 2) and s.ssthresh == pytest.approx(cw / 2) and s.cwnd_cuts == 1
    # Once per window: another loss from the same window (B's NACK, a NACK for 4) does not cut again.
    feed(s, nack(B, 1, [3, 4]), 0.11, src=B)
    assert s.cwnd_cuts == 1
    # A loss of a packet sent after the cut is new congestion.
    later = s.next_seq
    s.cwnd = 10.0
    feed(s, ack(A, 4), 0.2, src=A)
    feed(s, ack(B, 4), 0.2, src=B)
    assert s.next_seq > later and max(sent) < later
    feed(s, nack(A, 4, [s.next_seq - 1]), 0.3, src=A)
    assert s.cwnd_cuts == 2


@pytest.mark.parametrize("hold", [True, False])
def test_reno_window_does_not_grow_on_the_flight_a_nack_cut_answered(hold):
    """TCP's fast recovery (RFC 5681 3.2, RFC 6582 3.2): the packets that were
    out when a loss cut the window leave the pipe without growing it; the
    window grows again on the packets sent after the cut."""
    s = sender(recovery_hold=hold)
    s.cwnd = s.ssthresh = 10.0
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    first = [m.seq for _d, m in data(out(s))]
    assert len(first) == 10
    feed(s, nack(A, 2, [3]), 0.1, src=A)  # packet 3 lost on the way to A: a cut
    cut = s.cwnd
    assert cut == pytest.approx(10.1 / 2) and s.cwnd_cuts == 1
    top = max(first)
    feed(s, ack(A, top), 0.2, src=A)  # its repair arrived, and the rest of the flight
    feed(s, ack(B, top), 0.2, src=B)
    if hold:
        assert s.cwnd == cut  # ten packets acknowledged by all, no growth
    else:
        assert s.cwnd > cut + 10 / (cut + 2)  # +1/cwnd for each of them
    held = s.cwnd
    after = [m.seq for _d, m in data(out(s)) if m.seq > top]  # new data (the repair of 3 went too)
    assert after
    feed(s, ack(A, max(after)), 0.3, src=A)
    feed(s, ack(B, max(after)), 0.3, src=B)
    assert s.cwnd > held  # above the recovery point the window grows again

def test_vegas_decrease_does_not_restart_slow_start():
    s = sender(profile="paper")
    s.cwnd, s.ssthresh, s.trend = 10.0, 10.0, -1
    s.round_end = 10**6
    out(s)
    for seq in range(1, 4):
        feed(s, ack(A, seq), 0.05 * seq, src=A)
        feed(s, ack(B, seq), 0.05 * seq, src=B)
    assert s.cwnd < 10.0 and s.ssthresh == s.cwnd  # shrinking, still in congestion avoidance


def test_rto_floor_is_rfc6298s_one_second_and_never_below_the_path_rtt():
    s = sender()
    c = s.children[node_id(A)]
    c.rtt.sample(0.05)
    assert RTO_MIN == 1.0 and c.rtt.rto == pytest.approx(1.0)
    c.rtd.sample(0.05)
    assert c.rtd.rto == pytest.approx(1.05)
    slow = s.children[node_id(B)]
    for _ in range(20):
        slow.rtt.sample(1.5)
    assert slow.rtt.rto >= 1.5


@pytest.mark.parametrize("on", [True, False])
def test_sender_repairs_a_loss_several_children_share_by_multicast_once(on):
    """Rule ``shared_loss_multicast``; without it (the paper, 3.1) each child gets its own unicast repair."""
    s = sender(shared_loss_multicast=on)
    s.cwnd = 10.0
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)
    out(s)
    # Packet 2 was lost at a shared bottleneck: both children hold 3, not 2.
    feed(s, ack(B, 1, bitmap=0b10), 0.1, src=B)
    feed(s, ack(A, 1, bitmap=0b10), 0.1, src=A)
    feed(s, nack(A, 1, [2]), 0.1, src=A)
    rex = [(d, m.seq) for d, m in data(out(s)) if m.flags & Flags.RETRANSMIT]
    if not on:
        assert rex == [((A, PORT), 2)] and s.mcast_repairs == 0
        feed(s, nack(B, 1, [2]), 0.11, src=B)
        assert [(d, m.seq) for d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == [((B, PORT), 2)]
        return
    assert rex == [((GROUP, PORT), 2)] and s.mcast_repairs == 1
    feed(s, nack(B, 1, [2]), 0.11, src=B)  # on its way to B too: not sent again
    assert [m for _d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == []
    # A loss only one child has is repaired to that child alone.
    feed(s, ack(A, 3, bitmap=0b10), 0.2, src=A)  # the repair arrived; A holds 5, not 4
    feed(s, ack(B, 5), 0.2, src=B)
    feed(s, nack(A, 3, [4]), 0.2, src=A)
    assert [(d, m.seq) for d, m in data(out(s)) if m.flags & Flags.RETRANSMIT] == [((A, PORT), 4)]


def test_a_packet_timer_whose_repair_waits_for_the_retransmission_window_times_out():
    """3.4: an expired packet timer is a timeout (backed off, cwnd cut), even
    while its repair waits in the child's retransmission window."""
    s = sender()
    s.cwnd = 10.0
    out(s)
    hi = s.next_seq - 1  # B holds all, A all but 2, 3 and 4
    feed(s, ack(B, hi), 0.05, src=B)
    feed(s, ack(A, 1, bitmap=sum(1 << (q - 2) for q in range(5, hi + 1))), 0.05, src=A)
    out(s)
    feed(s, nack(A, 1, [2, 3, 4]), 0.06, src=A)  # one repair window: 2 goes, 3 and 4 wait
    assert [m.seq for _d, m in data(out(s))] == [2]
    assert s.children[node_id(A)].rqueue == {3, 4}
    deadline = s.buf[3].deadline
    feed(s, ack(A, 1), deadline - 0.01, src=A)  # keep A alive; nothing repaired yet
    feed(s, ack(B, s.next_seq - 1), deadline - 0.01, src=B)
    run_timers(s, deadline + 0.01)
    assert s.buf[3].stage >= 1 and s.timeouts >= 2
    assert INITIAL_SSTHRESH >= s.p.rcv_buffer  # RFC 5681 3.1: ssthresh starts arbitrarily high


def test_ack_delays_are_jittered_so_receivers_do_not_report_in_step():
    """Receivers behind one bottleneck get a packet at the same moment; their
    ACK timers must spread over [0.5, 1.5] x ack_delay (TimerJitter.JITTER)."""
    waits = []
    for i in range(40):
        r = MtcpReceiver(cfg(MtcpParams(receivers=1), local=f"10.0.7.{i + 1}"))
        r.start(0.0)
        r.receive_datagram(rdata(1, 0.29).encode(), (SENDER, PORT), 0.3)
        waits.append(r.timer_at("ack") - 0.3)
    assert all(0.01 - 1e-9 <= w <= 0.03 + 1e-9 for w in waits)
    assert max(waits) - min(waits) > 0.012  # spread over most of the 20 ms window


def test_a_new_hole_is_nacked_once_three_packets_above_it_arrived():
    """TCP fast-retransmits on three duplicate ACKs; without RACK's time rule
    (``nack_rack``, test_mtcp_acks.py) a hole with fewer packets above it waits
    for the parent's timer (TCP's retransmission timeout)."""
    r = composed(PaperReceiver, nack_rack=False)(cfg(MtcpParams(tree=TREE2), local=A))
    r.start(0.0)
    out(r)
    t = 0.3
    nacks = []
    for seq in (1, 3, 4, 5):
        r.receive_datagram(rdata(seq, t).encode(), (SENDER, PORT), t)
        run_timers(r, t + 0.05)
        nacks.append([m.missing for _d, m in out(r) if isinstance(m, MtcpNack)])
        t += 0.1
    assert nacks == [[], [], [], [(2,)]]  # after 3, 4: no NACK; after 5 (three above 2): NACK
    r1 = composed(PaperReceiver, nack_dupthresh=False, nack_rack=False)(cfg(MtcpParams(tree=TREE2), local=A))
    r1.start(0.0)
    out(r1)
    for seq in (1, 3):
        r1.receive_datagram(rdata(seq, 0.3).encode(), (SENDER, PORT), 0.3)
    run_timers(r1, 0.4)
    assert [m.missing for _d, m in out(r1) if isinstance(m, MtcpNack)] == [(2,)]  # the paper's rule


def test_the_window_starts_at_rfc_6928s_ten_packets_by_default():
    """RFC 6928's initial window, as the simulator's TCP and RLA start: with
    the paper's one packet MTCP entered a long-RTT path ten times behind a TCP
    flow started with it (docs/protocols/mtcp.md)."""
    s = MtcpSender(cfg(MtcpParams(tree=TREE2)))
    s.start(0.0)
    for c in s.tree.children_of(SENDER):
        feed(s, ack(c, 0, cls=MtcpWindowUpdate), 0.0, src=c)
    assert [m.seq for _d, m in data(out(s))] == list(range(1, 11))
    assert s.cwnd == 10


@pytest.mark.parametrize("on", [True, False])
def test_the_cuts_since_a_removed_child_was_last_heard_are_undone(on):
    """RFC 4015 3.1 (``undo_dead_cuts``): a cut made while a child was already silent was its
    silence, not congestion; once the child is removed as dead the window before the cut is back."""
    s = sender(undo_dead_cuts=on)
    s.cwnd = s.ssthresh = 10.0
    out(s)
    feed(s, ack(A, 1), 0.05, src=A)
    feed(s, ack(B, 1), 0.05, src=B)  # B's last word
    before = s.cwnd
    feed(s, nack(A, 1, [3]), 0.1, src=A)  # a cut while B is silent
    cut = (s.cwnd, s.ssthresh)
    assert cut == pytest.approx((before / 2, before / 2)) and s.cwnd_cuts == 1
    s._remove_child(s.children[node_id(B)], 2.0)  # B timed out as dead
    if on:  # RFC 4015 3.2: ssthresh back to the window before the cut, cwnd above the cut
        assert s.ssthresh == pytest.approx(before) and s.cwnd > before
    else:
        assert (s.cwnd, s.ssthresh) == pytest.approx(cut)  # the paper keeps the cut
