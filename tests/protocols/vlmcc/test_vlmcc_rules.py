"""VLMCC: one test per rule of sections 2.2-2.4 (fake clock, scripted packets)."""

from __future__ import annotations

import dataclasses

import pytest
from win_util import GROUP, PORT, SENDER, cfg, events, feed, out, run_timers

from p4mcc.hosts.core import JoinGroup, node_id
from p4mcc.hosts.registry import ParamError, params_from_dict
from p4mcc.hosts.vlmcc import RULES, VlmccParams, VlmccReceiver, VlmccSender
from vlmcc_util import receiver_class, rules, sender_class
from p4mcc.hosts.wire import Flags, VlmccAck, VlmccChallenge, VlmccData, VlmccStart, ts_us

L, F = "10.0.2.1", "10.0.3.1"


def probe(rcvr: str, t: float) -> VlmccChallenge:
    return VlmccChallenge(session_id=9, timestamp=ts_us(t), rcvr_id=node_id(rcvr))


def leader_ack(seq: int, sent: float, rcvr: str = L) -> VlmccAck:
    return VlmccAck(session_id=9, seq=seq, rcvr_id=node_id(rcvr), tstamp_comp=ts_us(sent))


#: The rules do not depend on the packet size; the scripted rates below are
#: written for the paper's 1000-byte packets (section 3, footnote 3).
PAPER_PACKET = {"packet_size": 1000}


def _split(kw: dict) -> tuple[dict, dict]:
    """Parameters, and rule constants (upper case) to set on the instance."""
    return ({k: v for k, v in kw.items() if not k.isupper()}, {k: v for k, v in kw.items() if k.isupper()})


def sender(without: tuple[str, ...] = (), paper: bool = False, **kw) -> VlmccSender:
    """The default sender (``paper``: the bare core; ``without``: less those rules),
    its first probe answered by L."""
    params, consts = _split(kw)
    s = sender_class(() if paper else rules(without))(cfg(VlmccParams(**{**PAPER_PACKET, **params})))
    for k, v in consts.items():
        setattr(s, k, v)
    s.start(0.0)
    feed(s, probe(L, 0.0), 0.0, src=L)
    return s


def sent_data(s):
    return [m for _d, m in out(s) if isinstance(m, VlmccData)]


def test_first_probe_is_answered_with_start_and_makes_the_leader():
    s = sender_class()(cfg(VlmccParams()))
    s.start(0.0)
    assert sent_data(s) == []  # nobody listening: nothing sent
    feed(s, probe(L, 0.0123), 0.02, src=L)
    msgs = out(s)
    start = next((d, m) for d, m in msgs if isinstance(m, VlmccStart))
    assert start[0] == (L, PORT)
    assert start[1].leader == node_id(L) and start[1].tstamp_comp == ts_us(0.0123)
    assert start[1].seq == 1 and start[1].win_size == 2
    data = [m for _d, m in msgs if isinstance(m, VlmccData)]
    assert [m.seq for m in data] == [1, 2] and all(m.leader_id == node_id(L) for m in data)


def test_data_carries_seq_leader_tstamp_drift_prev_and_rate():
    s = sender(initial_rtt=0.1, initial_window=2)
    d = sent_data(s)
    assert [m.seq for m in d] == [1, 2]
    assert d[0].timestamp == ts_us(0.0) and d[1].drift_prev == 0
    assert d[0].rate == int(2 * 1000 * 8 / 0.1)
    feed(s, leader_ack(1, 0.0), 0.05, src=L)
    run_timers(s, 0.2)
    later = sent_data(s)
    assert later[0].seq == 3
    # drift_prev: time since the previous packet left (packet 2, at 0.0).
    assert later[0].drift_prev == later[0].timestamp - ts_us(0.0) > 0


def test_bursts_of_at_most_two_then_pacing_delay_rtt_over_w():
    s = sender(initial_window=8, initial_rtt=0.08)
    assert len(sent_data(s)) == 2
    assert s.timer_at("tx") == pytest.approx(0.08 / 8)
    s.handle_timer(0.01)
    assert len(sent_data(s)) == 2
    assert s.timer_at("tx") == pytest.approx(0.02)


@pytest.mark.parametrize("clocked", [True, False])
def test_competing_packets_leave_as_the_window_opens_not_paced(clocked: bool):
    # compete_ack_clocked: in the competitive (Reno) mode the window's
    # packets leave back to back, as TCP's leave on its ACK clock; with
    # equation (3) they leave two at a time, rtt / W apart.
    s = sender(() if clocked else ("compete_ack_clocked",), initial_window=8, initial_rtt=0.08)
    out(s)
    s.competing, s.slowstart = True, False
    s.W = 8.0
    assert s.timer_at("tx") == pytest.approx(0.01)  # the first pair's spacing, set before
    s.handle_timer(0.01)
    if clocked:
        # Three at once, as an ACK of two and Reno's growth release TCP's;
        # the rest of a window opened wider (here 6) at equation (3)'s spacing.
        assert len(sent_data(s)) == 3 and s.timer_at("tx") == pytest.approx(0.02)
        s.handle_timer(0.02)
        assert len(sent_data(s)) == 3 and s.timer_at("tx") is None  # W = 8 out: the ACK clock takes over
    else:
        assert len(sent_data(s)) == 2 and s.timer_at("tx") == pytest.approx(0.02)  # the next pair rtt / W later


def test_rtt_and_deviation_ewmas_use_gain_one_tenth():
    s = sender(initial_window=10)
    out(s)
    run_timers(s, 0.05)
    out(s)
    feed(s, leader_ack(1, 0.0), 0.1, src=L)  # first sample initialises
    assert s.rtt == pytest.approx(0.1) and s.dev == pytest.approx(0.05)
    feed(s, leader_ack(2, 0.0), 0.2, src=L)
    rtt = 0.9 * 0.1 + 0.1 * 0.2
    assert s.rtt == pytest.approx(rtt)
    assert s.dev == pytest.approx(0.9 * 0.05 + 0.1 * abs(rtt - 0.2))
    assert s.base_rtt == pytest.approx(0.1)


@pytest.mark.parametrize("step", [True, False])
def test_a_sample_below_half_the_estimate_restarts_it_and_a_rise_is_smoothed(step: bool):
    """``rtt_step``: a squeezed path's 0.7 s samples, then the restored path's 0.06 s."""
    s = sender(without=() if step else ("rtt_step",), initial_window=10)
    out(s)
    run_timers(s, 0.05)
    out(s)
    for seq in range(1, 6):
        feed(s, leader_ack(seq, 0.01 * seq), 0.01 * seq + 0.7, src=L)
    swollen = s.rtt
    assert swollen == pytest.approx(0.7)
    feed(s, leader_ack(6, 0.72), 0.78, src=L)
    if step:  # restarted as a first measurement (RFC 6298 2.2)
        assert (s.rtt, s.dev, s.rtt_steps) == (pytest.approx(0.06), pytest.approx(0.03), 1)
        feed(s, leader_ack(7, 0.73), 0.83, src=L)  # 0.1: a rise, one tenth of it
        assert s.rtt == pytest.approx(0.9 * 0.06 + 0.1 * 0.1) and s.rtt_steps == 1
    else:  # the paper's one tenth per sample
        assert s.rtt == pytest.approx(0.9 * swollen + 0.1 * 0.06)


def test_vegas_rule_once_per_rtt():
    s = sender()
    s.slowstart = False
    s.W, s.base_rtt, s.rtt, s.acks_in_round = 10.0, 0.1, 0.105, 3  # diff 0.48 < alpha
    s._round(1.0)
    assert s.W == 11
    s.rtt, s.acks_in_round = 0.15, 3  # diff = 11 * (1 - 0.1 / 0.15) = 3.7 > beta
    s._round(1.2)
    assert s.W == 10
    s.rtt, s.acks_in_round = 0.12, 3  # diff 1.7: between alpha and beta
    s._round(1.4)
    assert s.W == 10
    assert s.timer_at("round") == pytest.approx(1.4 + 0.12)


def test_slow_start_doubles_until_the_queue_grows():
    s = sender()
    s.W, s.base_rtt, s.rtt, s.acks_in_round = 4.0, 0.1, 0.1, 2
    s._round(1.0)
    assert s.W == 8 and s.slowstart
    s.rtt, s.acks_in_round = 0.125, 2  # diff 1.6 > gamma: leave slow start
    s._round(1.2)
    assert not s.slowstart and s.W == 8


def test_loss_is_no_ack_within_rtt_plus_four_deviations_and_halves_once_per_rtt():
    s = sender(paper=True, initial_window=10)  # the paper's bare timer
    out(s)
    s.rtt, s.dev, s.W = 0.1, 0.01, 10.0
    s._arm_loss()
    limit = 0.1 + 4 * 0.01
    assert s.timer_at("loss") == pytest.approx(0.0 + limit)
    s.handle_timer(limit - 1e-6)
    assert s.W == 10
    run_timers(s, limit)
    assert s.W == 5 and s.halvings == 1
    # More packets lost within the same RTT: no second halving; one RTT later: halve again.
    s.outstanding = {50: 0.01}
    s._check_losses(limit + 0.05)
    assert s.halvings == 1 and s.W == 5 and s.losses == 3
    s.outstanding = {51: 0.2}
    s._check_losses(limit + 0.2)
    assert s.halvings == 2 and s.W == 2.5


def test_challenge_acceptance_policy():
    s = sender(holdoff_rtts=4, min_rate_bps=100_000)
    out(s)
    s.rtt = 0.05
    s.W = 20.0  # announced 3.2 Mbit/s

    def chal(rate_w: int, rtt: float) -> VlmccChallenge:
        return VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=int(rtt * 1e6), win_size=rate_w,
                              rate=int(rate_w * 8000 / rtt))

    feed(s, chal(5, 0.05), 0.1, src=F)  # within 4 RTTs (0.2 s) of the last change
    assert s.leader == node_id(L) and s.rejected == 1
    feed(s, chal(0 + 1, 0.1), 0.5, src=F)  # 80 kbit/s: below the minimum rate
    assert s.leader == node_id(L) and s.rejected == 2
    s.outstanding = {7: 0.4}
    feed(s, chal(12, 0.05), 0.5, src=F)
    assert s.leader == node_id(F) and s.W == 12
    assert s.outstanding == {}  # packets before the change count as acknowledged
    assert s.leader_log[-1] == (0.5, node_id(F))


def test_leadership_loss_keeps_a_window_per_rtt_and_grows_w_by_one():
    # The paper's rule: W grows by one per round while leaderless, heard or not.
    s = sender(("leaderless_backoff",), initial_window=3, initial_rtt=0.1)
    out(s)
    run_timers(s, 1.05)  # a window and (no RTT yet) the initial 1 s without an ACK
    assert s.leaderless
    w = s.W
    n0 = s.next_seq
    run_timers(s, 1.05 + 1.0)
    # About one window per RTT (W grows by one each RTT while leaderless).
    per_rtt = (s.next_seq - n0) / 10
    assert w <= per_rtt <= s.W + 1
    assert s.W >= w + 8
    # Any challenge names a new leader at once, even right after the loss.
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=100_000, win_size=4, rate=320_000),
         2.1, src=F)
    assert s.leader == node_id(F) and not s.leaderless


def test_a_leader_silent_for_less_than_the_minimum_rto_still_leads():
    """A queue filling behind the leader delays its ACKs past the loss timeout
    of a quiet path (deviation 0, 2 x 30 ms): not a lost leader before RFC 6298
    2.4's 1 s (rule ``leader_silence``); without it the window alone loses the leader."""
    def silent(until: float, without: tuple[str, ...] = ()) -> bool:
        s = sender(without, initial_window=3, initial_rtt=0.1)
        out(s)
        s.rtt, s.dev = 0.03, 0.0
        s._arm_loss()  # the loss timer on this path's RTT: the window is lost after 0.1 s
        run_timers(s, until)
        return s.leaderless

    assert not silent(0.5) and silent(1.05)
    assert silent(0.5, ("leader_silence",))


def test_a_leaderless_sender_nobody_hears_backs_off_instead_of_growing():
    s = sender(initial_window=16, initial_rtt=0.1)
    out(s)
    run_timers(s, 1.05)
    assert s.leaderless
    w = s.W
    run_timers(s, 1.05 + 0.8)  # about eight rounds without a word from any receiver
    assert s.W <= max(1.0, w / 4)
    # a challenge ends it at once
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=100_000, win_size=2, rate=160_000),
         1.9, src=F)
    assert s.leader == node_id(F) and not s.leaderless


# Receivers ------------------------------------------------------------------------------


def dpkt(seq: int, sent: float, drift: float, leader: str = L, rate_w: float = 10, rtt: float = 0.1):
    return VlmccData(session_id=9, seq=seq, timestamp=ts_us(sent), leader_id=node_id(leader),
                     drift_prev=int(round(drift * 1e6)), rate=int(rate_w * 8000 / rtt), payload=bytes(1000))


def follower(local: str = F, without: tuple[str, ...] = (), **kw) -> VlmccReceiver:
    params, consts = _split(kw)
    r = receiver_class(rules(without))(cfg(VlmccParams(**{**PAPER_PACKET, **params}), local=local))
    for k, v in consts.items():
        setattr(r, k, v)
    r.start(0.0)
    return r


def test_follower_gets_its_first_rtt_from_a_challenge_answered_by_start():
    r = follower()
    assert events(r) == [JoinGroup(GROUP)]
    [(dest, m)] = out(r)
    assert dest == (SENDER, PORT) and isinstance(m, VlmccChallenge)
    assert m.rcvr_id == node_id(F) and m.timestamp == ts_us(0.0) and m.win_size == 0
    again = r.timer_at("probe")  # unanswered: probe again, one jittered interval later
    assert again is not None and 0.5 <= again <= 1.5
    run_timers(r, again)
    [(_d, m2)] = out(r)
    assert m2.timestamp == ts_us(again)
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=6, rate=1,
                                  tstamp_comp=m2.timestamp).encode(), (SENDER, PORT), again + 0.04)
    assert r.rtt == pytest.approx(0.04, abs=2e-6) and r.W == 6 and r.leader == node_id(L)
    assert r.timer_at("probe") is None


def test_unanswered_probes_of_receivers_that_start_together_do_not_repeat_in_step():
    # Without jitter every receiver re-probes at exactly 1 s, 2 s, ...: behind a
    # filtering switch they would keep meeting in one window.
    def repeats(seed: int) -> list[float]:
        times = []
        for i in range(64):
            r = receiver_class()(cfg(VlmccParams(), local=f"10.0.2.{i + 1}", seed=seed))
            r.start(0.0)
            t = r.timer_at("probe")
            assert t is not None and 0.5 <= t <= 1.5
            times.append(t)
        return times

    times = repeats(7)
    assert len(set(times)) == len(times)
    bins = [0] * 10  # 100 ms bins over [0.5, 1.5]
    for t in times:
        bins[min(9, int((t - 0.5) / 0.1))] += 1
    assert max(bins) <= 16  # a uniform spread puts 6.4 in each
    assert repeats(7) == times and repeats(8) != times


def test_params_carry_the_switch_filter_window_for_the_controller():
    p = params_from_dict(VlmccParams, {"filter_window_us": 50_000})
    assert p.filter_window_us == 50_000 and VlmccParams().filter_window_us == 100_000
    with pytest.raises(ParamError, match="filter_window_us"):
        params_from_dict(VlmccParams, {"filter_window_us": 0})


def _started(local: str = F, without: tuple[str, ...] = (), **kw) -> VlmccReceiver:
    r = follower(local, without, **kw)
    out(r)
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=10, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.1)
    return r


def test_follower_rtt_moves_by_delta_from_drift_prev():
    r = _started()
    r.receive_datagram(dpkt(1, 1.0, 0.0).encode(), (SENDER, PORT), 1.05)
    assert r.rtt == pytest.approx(0.1)
    # Sent 10 ms after packet 1 but arrived 15 ms after it: 5 ms more delay.
    r.receive_datagram(dpkt(2, 1.01, 0.01).encode(), (SENDER, PORT), 1.065)
    assert r.rtt == pytest.approx(0.105)
    assert r.rtt_hat == pytest.approx(0.9 * 0.1 + 0.1 * 0.105)
    # After a loss the gap is measured from the timestamps (packet 3 never came).
    r.receive_datagram(dpkt(4, 1.03, 0.01).encode(), (SENDER, PORT), 1.080)
    assert r.rtt == pytest.approx(0.100)
    assert r.lost == 1


def test_leader_acks_every_second_packet_at_once_and_a_lone_or_out_of_order_one_soon():
    """RFC 5681 4.2, as a TCP receiver: an ACK for every second packet, none
    held longer than 40 ms, and an out-of-order packet ACKed at once."""
    r = _started(local=L)
    r.receive_datagram(dpkt(1, 1.0, 0.0).encode(), (SENDER, PORT), 1.05)
    assert out(r) == [] and r.timer_at("ack") == pytest.approx(1.05 + 0.04)
    r.receive_datagram(dpkt(2, 1.001, 0.001).encode(), (SENDER, PORT), 1.052)
    assert [m.seq for _d, m in out(r)] == [1, 2] and r.timer_at("ack") is None
    r.receive_datagram(dpkt(3, 1.002, 0.001).encode(), (SENDER, PORT), 1.06)
    assert out(r) == []
    run_timers(r, 1.2)
    lone = [m for _d, m in out(r)]
    assert [a.seq for a in lone] == [3] and lone[0].tstamp_comp == ts_us(1.002) + 40000
    r.receive_datagram(dpkt(5, 1.3, 0.001).encode(), (SENDER, PORT), 1.35)  # 4 is missing
    assert [m.seq for _d, m in out(r)] == [5]
    paper = _started(L, ("delayed_acks",))
    paper.receive_datagram(dpkt(1, 1.0, 0.0).encode(), (SENDER, PORT), 1.05)
    assert [m.seq for _d, m in out(paper)] == [1]


def test_the_loss_timer_waits_for_a_held_ack():
    """A lone packet's ACK may come 40 ms after its RTT (the hold leaves the
    samples): the timer adds it, or a clean short path counts losses."""
    s = sender()
    s.rtt, s.dev = 0.01, 0.0
    assert s.loss_timeout() == pytest.approx(2 * 0.01 + 0.04)
    p = sender(("delayed_acks",))
    p.rtt, p.dev = 0.01, 0.0
    assert p.loss_timeout() == pytest.approx(2 * 0.01)


def test_leader_acks_every_packet_with_processing_time_added():
    r = _started(L, ACK_DELAY=0.004, ACK_EVERY=3)
    r.receive_datagram(dpkt(1, 1.0, 0.0).encode(), (SENDER, PORT), 1.05)
    r.receive_datagram(dpkt(2, 1.001, 0.001).encode(), (SENDER, PORT), 1.052)
    assert out(r) == []
    run_timers(r, 1.06)
    acks = [m for _d, m in out(r)]
    assert [a.seq for a in acks] == [1, 2]
    # tstamp_comp = tstamp + time held: 4 ms for packet 1, 2 ms for packet 2.
    assert acks[0].tstamp_comp == ts_us(1.0) + 4000
    assert acks[1].tstamp_comp == ts_us(1.001) + 2000
    assert all(a.rcvr_id == node_id(L) for a in acks)


def test_follower_challenges_when_the_announced_rate_exceeds_its_window_and_the_gap_grows():
    r = _started(n_extra=2)
    t = 1.0
    seq = 1
    r.W = 10
    # Announced: 10 packets per 0.1 s.  Follower's own path: W falls as its delay grows.
    chal = []
    prev_sent = None
    for step in range(60):
        t += 0.01
        delay = 0.05 + min(step, 40) * 0.002  # a queue building on the follower's path
        sent = t - delay
        drift = 0.0 if prev_sent is None else sent - prev_sent
        prev_sent = sent
        r.receive_datagram(dpkt(seq, sent, drift).encode(), (SENDER, PORT), t)
        seq += 1
        chal += [m for _d, m in out(r) if isinstance(m, VlmccChallenge)]
    assert chal, "a congested follower must challenge"
    c = chal[0]
    assert c.rcvr_id == node_id(F) and c.win_size >= 1
    assert c.rate < 10 * 8000 / 0.1
    # Equation (6) held when it was sent.
    assert 10 / 0.1 > (c.win_size + 2) / (c.rtt / 1e6)


def test_follower_on_an_uncongested_path_never_challenges():
    r = _started(n_extra=2)
    t = 1.0
    for seq in range(1, 200):
        t += 0.01
        r.receive_datagram(dpkt(seq, t - 0.05, 0.01 if seq > 1 else 0.0, rate_w=5).encode(), (SENDER, PORT), t)
    assert [m for _d, m in out(r) if isinstance(m, VlmccChallenge)] == []


@pytest.mark.parametrize("emulated", [True, False])
def test_a_follower_in_slow_start_keeps_up_with_a_doubling_sender_and_does_not_challenge(emulated: bool):
    """2.2: the emulated Vegas connection starts in slow start, as the
    sender's does; on a path without a queue it keeps up with what the
    sender sends it.  Growing by one per RTT instead, it lagged the doubling
    sender and challenged, which ended the sender's slow start."""
    r = _started(without=() if emulated else ("follower_slow_start",))
    t, seq, w = 1.0, 1, 10
    for _round in range(6):  # the sender doubles each 0.1 s round: 10 ... 320 packets
        for i in range(w):
            t += 0.1 / w
            r.receive_datagram(dpkt(seq, t - 0.05, 0.0 if seq == 1 else 0.1 / w, rate_w=w).encode(),
                               (SENDER, PORT), t)
            seq += 1
        w *= 2
    challenges = [m for _d, m in out(r) if isinstance(m, VlmccChallenge)]
    if emulated:
        assert challenges == [] and r.slowstart
        assert r.W >= 160  # the last rounds' 160 and 320 packets per RTT
    else:
        assert challenges and challenges[0].win_size < 40


def test_a_follower_leaves_slow_start_on_its_own_paths_queue_or_a_loss():
    r = _started()
    t, prev_sent = 1.0, None
    for seq in range(1, 60):  # a queue builds on the follower's path: 2 ms more per packet
        t += 0.01
        sent = t - 0.05 - seq * 0.002
        r.receive_datagram(dpkt(seq, sent, 0.0 if prev_sent is None else sent - prev_sent).encode(),
                           (SENDER, PORT), t)
        prev_sent = sent
    assert not r.slowstart
    r2 = _started()
    r2.receive_datagram(dpkt(1, 0.95, 0.0).encode(), (SENDER, PORT), 1.0)
    assert r2.slowstart
    r2.receive_datagram(dpkt(3, 0.97, 0.02).encode(), (SENDER, PORT), 1.02)  # packet 2 lost
    assert not r2.slowstart


def test_leader_does_not_challenge_and_bad_datagrams_are_counted():
    r = _started(local=L)
    r.receive_datagram(b"\x00" * 30, (SENDER, PORT), 1.0)
    assert r.malformed == 1
    r.receive_datagram(dpkt(1, 1.0, 0.0).encode(), (SENDER, PORT), 1.05)
    assert all(isinstance(m, VlmccAck) for _d, m in out(r))


# Beyond the paper: loss-timer floor, fast loss detection, leader loss, rogue receivers ----


def test_loss_timer_never_fires_before_twice_the_rtt_when_the_deviation_decays():
    """rtt + 4*dev alone fires on jitter once dev decays to 0 (issue: 593 of 3,085
    packets counted lost on a clean path); the floor (``loss_timer_floor``) is 2 * rtt."""
    s = sender(("delayed_acks",), initial_window=10)  # no ACK hold to add
    out(s)
    s.rtt, s.dev, s.W = 0.1, 0.0, 10.0
    assert s.loss_timeout() == pytest.approx(0.2)
    s.outstanding = {5: 0.0}
    s._check_losses(0.15)  # 1.5 RTTs late: a queue that grew, not a loss
    assert s.losses == 0 and s.W == 10
    s._check_losses(0.2)
    assert s.losses == 1 and s.W == 5
    bare = sender(("delayed_acks", "loss_timer_floor"), initial_window=10)
    bare.rtt, bare.dev, bare.W = 0.1, 0.0, 10.0
    bare.outstanding = {5: 0.0}
    bare._check_losses(0.15)  # the bare timer: 0.1 s, so 1.5 RTTs is a loss
    assert bare.losses == 1 and bare.W == 5


@pytest.mark.parametrize("rule", [True, False])
def test_three_later_acks_mean_lost_at_once(rule: bool):
    s = sender(() if rule else ("three_later_acks",), initial_window=10)
    out(s)
    s.W, s.rtt, s.dev = 10.0, 0.1, 0.01
    s.outstanding = {i: 0.01 * i for i in range(1, 8)}
    s.next_seq = 100
    feed(s, leader_ack(3, 0.03), 0.13, src=L)  # 1 and 2 still out, nothing 3 higher
    assert s.losses == 0
    feed(s, leader_ack(5, 0.05), 0.15, src=L)  # 5 - 3 = 2: packets 1 and 2 lost
    if rule:
        assert s.losses == 2 and s.halvings == 1 and s.W == 5
        assert sorted(x for x in s.outstanding if x < 100) == [4, 6, 7]
    else:  # the timer alone: nothing is lost yet
        assert s.losses == 0 and s.W == 10 and sorted(x for x in s.outstanding if x < 100) == [1, 2, 4, 6, 7]


@pytest.mark.parametrize("rule", [True, False])
def test_base_rtt_survives_a_leader_change(rule: bool):
    """Re-learning base_rtt under a full queue made the new leader's Vegas rule see no queue."""
    s = sender(() if rule else ("keep_base_rtt",), holdoff_rtts=0)
    out(s)
    s.next_seq = 20
    s.outstanding = {10: 1.0}
    feed(s, leader_ack(10, 1.0), 1.05, src=L)  # the leader's path: 50 ms
    assert s.base_rtt == pytest.approx(0.05)
    s.rtt, s.W = 0.2, 20.0
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=150_000, win_size=2, rate=1),
         2.0, src=F)
    assert s.leader == node_id(F)
    if rule:
        assert s.base_rtt == pytest.approx(0.05)  # not the 150 ms the follower sees under the queue
    else:
        assert s.base_rtt is None  # the paper: learnt afresh, from the next ACK on the new path


def test_feedback_whose_id_is_not_its_source_is_refused():
    p = sender(("bounded_claims",), holdoff_rtts=0)
    p.W, p.rtt = 20.0, 0.05
    feed(p, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=50_000, win_size=1, rate=1), 1.0,
         src="10.0.9.9")
    assert p.leader == node_id(F) and p.W == 1  # the paper trusts the claim: the rogue leads
    s = sender(holdoff_rtts=0)
    out(s)
    s.W, s.rtt = 20.0, 0.05
    # A rogue at 10.0.9.9 claims to be F, with a tiny window.
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=50_000, win_size=1, rate=1), 1.0,
         src="10.0.9.9")
    assert s.leader == node_id(L) and s.refused == 1 and s.W == 20
    s.outstanding = {3: 0.9}
    feed(s, leader_ack(3, 0.9), 1.0, src="10.0.9.9")  # spoofed leader ACK
    assert s.refused == 2 and 3 in s.outstanding


def test_a_challenge_cuts_the_window_at_most_in_half_and_the_rtt_at_most_doubles():
    s = sender(holdoff_rtts=0, min_rate_bps=1)
    out(s)
    s.W, s.rtt = 40.0, 0.05
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=10_000_000, win_size=1, rate=1), 1.0,
         src=F)
    assert s.leader == node_id(F)
    assert s.W == 20 and s.rtt == pytest.approx(0.1)
    p = sender(("bounded_claims",), holdoff_rtts=0, min_rate_bps=1)
    p.W, p.rtt = 40.0, 0.05
    feed(p, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=10_000_000, win_size=1, rate=1), 1.0,
         src=F)
    assert p.W == 1 and p.rtt == pytest.approx(10.0)  # the paper adopts the claim whole


def test_a_leader_that_falls_silent_is_barred_and_the_data_asks_for_volunteers():
    s = sender(initial_window=3, initial_rtt=0.1)
    out(s)
    run_timers(s, 1.05)
    assert s.leaderless and s.leader_losses == 1
    later = sent_data(s)
    assert later and all(m.leader_id == 0 for m in later[-2:])
    # The silent leader cannot take the role back within the bar ...
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(L), rtt=100_000, win_size=4, rate=1), 1.1, src=L)
    assert s.leaderless
    # ... a follower can, at once.
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=100_000, win_size=4, rate=1), 1.2, src=F)
    assert s.leader == node_id(F) and not s.leaderless
    # Without the rules the data names the lost leader, and it may lead again at once.
    p = sender(("bar_silent_leaders", "volunteers"), initial_window=3, initial_rtt=0.1)
    out(p)
    run_timers(p, 1.05)
    assert p.leaderless and all(m.leader_id == node_id(L) for m in sent_data(p)[-2:])
    feed(p, VlmccChallenge(session_id=9, rcvr_id=node_id(L), rtt=100_000, win_size=4, rate=1), 1.1, src=L)
    assert not p.leaderless and p.leader == node_id(L)


def test_followers_volunteer_when_the_data_names_no_leader():
    r = follower()
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=6, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.05)
    out(r)
    r.receive_datagram(dpkt(1, 0.1, 0.0, leader=L).encode(), (SENDER, PORT), 0.125)
    assert r.timer_at("volunteer") is None
    r.receive_datagram(VlmccData(session_id=9, seq=2, timestamp=ts_us(0.11), leader_id=0, drift_prev=10_000,
                                 rate=80_000, payload=bytes(1000)).encode(), (SENDER, PORT), 0.135)
    t = r.timer_at("volunteer")
    assert t is not None and 0.135 <= t <= 0.135 + r.rtt_hat
    p = follower(without=("volunteers",))
    p.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=6, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.05)
    p.receive_datagram(VlmccData(session_id=9, seq=2, timestamp=ts_us(0.11), leader_id=0, drift_prev=10_000,
                                 rate=80_000, payload=bytes(1000)).encode(), (SENDER, PORT), 0.135)
    assert p.timer_at("volunteer") is None  # the paper's followers wait for their own challenge
    run_timers(r, t)
    [(dest, m)] = [(d, m) for d, m in out(r) if isinstance(m, VlmccChallenge)]
    assert dest == (SENDER, PORT) and m.rcvr_id == node_id(F) and m.win_size >= 1


def test_a_receiver_that_hears_nothing_probes_again_and_follows_a_restarted_sender():
    """A sender that restarted has no leader and sends nothing until a probe
    comes; receivers that joined long before sent theirs once.  After
    ``rejoin_silence`` (2 s) without a packet a receiver probes again, and the
    fresh sender's Start restarts its stream at sequence number 1."""
    def silent_follower(without: tuple[str, ...] = ()) -> tuple[VlmccReceiver, float]:
        r = follower(without=without)
        r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=6, rate=1,
                                      tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.05)
        for seq in range(1, 50):
            r.receive_datagram(dpkt(seq, 0.1 + 0.01 * seq, 0.01).encode(), (SENDER, PORT), 0.15 + 0.01 * seq)
        out(r)
        return r, 0.15 + 0.49

    def probes(r: VlmccReceiver) -> list[VlmccChallenge]:
        return [m for d, m in out(r) if isinstance(m, VlmccChallenge) and d == (SENDER, PORT)]

    r, last = silent_follower()
    run_timers(r, last + 1.9)
    assert probes(r) == [] and not r.rejoining  # quiet, but not for 2 s yet
    run_timers(r, last + 2.05)
    (probe,) = probes(r)
    assert probe.win_size == 0 and r.rejoining and r.rejoins == 1
    t = last + 2.15
    r.receive_datagram(VlmccStart(session_id=9, seq=1, leader=node_id(F), win_size=2, rate=1,
                                  tstamp_comp=probe.timestamp).encode(), (SENDER, PORT), t)
    assert not r.rejoining and r.last_seq == 0 and r.rtt == pytest.approx(0.15, abs=1e-3)  # probe at last + 2 s
    r.receive_datagram(dpkt(1, t, 0.0, leader=F).encode(), (SENDER, PORT), t + 0.05)
    r.receive_datagram(dpkt(2, t + 0.01, 0.01, leader=F).encode(), (SENDER, PORT), t + 0.06)
    assert r.last_seq == 2 and r.lost == 0  # the new stream, not 47 packets "reordered"
    # With the rule off the receiver never probes again.
    q, last = silent_follower(("rejoin_after_silence",))
    run_timers(q, last + 10.0)
    assert probes(q) == []


@pytest.mark.parametrize("rule", [True, False])
def test_a_rejoin_takes_the_start_after_the_fresh_streams_data_and_slow_starts(rule: bool):
    """rejoin_takes_start: a restarted sender's data reaches every rejoining
    receiver before its Start (the first prober's probe starts the stream).
    The Start's RTT still replaces the estimate carried over the silence, and
    the emulation slow-starts as after the session's own start, so the
    sender's doubling draws no challenge.  Without the rule the Start was
    ignored: the estimate taken in a queue the silence drained read as queue
    on the empty path, and the follower challenged the doubling sender."""
    names = RULES.resolve("default", {"rejoin_takes_start": rule})
    r = receiver_class(names)(cfg(VlmccParams(**PAPER_PACKET), local=F))
    r.start(0.0)
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=2, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.05)
    t, prev = 0.1, None
    for seq in range(1, 80):  # a queue builds: 1 ms more one-way delay per packet, to 0.079 s
        sent = 0.1 + 0.01 * seq
        t = sent + 0.025 + 0.001 * seq
        r.receive_datagram(dpkt(seq, sent, 0.0 if prev is None else sent - prev, rtt=0.05).encode(),
                           (SENDER, PORT), t)
        prev = sent
    assert r.rtt > 0.1 and not r.slowstart  # the estimate the crash leaves behind
    out(r)
    run_timers(r, t + 2.05)
    (probe,) = [m for d, m in out(r) if isinstance(m, VlmccChallenge)]
    probed = t + 2.0  # REJOIN_SILENCE after the last packet
    assert r.rejoining and probe.timestamp == ts_us(probed)
    # The fresh sender's first packet (another receiver probed first) on the empty path, then the Start.
    sent0 = probed + 0.02
    r.receive_datagram(dpkt(1, sent0, 0.0, rtt=0.05).encode(), (SENDER, PORT), sent0 + 0.025)
    r.receive_datagram(VlmccStart(session_id=9, seq=1, leader=node_id(L), win_size=2, rate=1,
                                  tstamp_comp=probe.timestamp).encode(), (SENDER, PORT), probed + 0.05)
    assert not r.rejoining
    if rule:
        assert r.rtt == pytest.approx(0.05, abs=1e-3) and r.slowstart
    else:
        assert r.rtt > 0.1
    seq, prev, w = 2, sent0, 2
    for _round in range(6):  # the sender doubles each 0.05 s round on the empty path: 2 ... 64 packets
        for _i in range(w):
            sent = prev + 0.05 / w
            r.receive_datagram(dpkt(seq, sent, sent - prev, rate_w=w, rtt=0.05).encode(), (SENDER, PORT),
                               sent + 0.025)
            prev, seq = sent, seq + 1
        w *= 2
    challenges = [m for _d, m in out(r) if isinstance(m, VlmccChallenge)]
    assert (challenges == []) == rule, challenges


@pytest.mark.parametrize("rule", [True, False])
def test_after_a_rejoins_start_no_packet_is_owed_before_the_first_heard(rule: bool):
    """rejoin_first_packet: a leaf switch that restarted grafts its branch back
    some time after its receivers' probes reached the sender, which went on
    sending meanwhile.  As after the join, the stream starts at the first
    packet heard: the emulation stays in slow start and nothing is lost.
    Without the rule the 170 packets sent between the Start and the graft
    counted lost, halved the emulated window and ended its slow start."""
    names = RULES.resolve("default", {"rejoin_first_packet": rule})
    r = receiver_class(names)(cfg(VlmccParams(**PAPER_PACKET), local=F))
    r.start(0.0)
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=2, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.05)
    for seq in range(1, 50):
        r.receive_datagram(dpkt(seq, 0.1 + 0.01 * seq, 0.01).encode(), (SENDER, PORT), 0.15 + 0.01 * seq)
    out(r)
    last = 0.15 + 0.49
    run_timers(r, last + 2.05)
    (probe,) = [m for d, m in out(r) if isinstance(m, VlmccChallenge)]
    r.receive_datagram(VlmccStart(session_id=9, seq=100, leader=node_id(L), win_size=20, rate=1,
                                  tstamp_comp=probe.timestamp).encode(), (SENDER, PORT), last + 2.1)
    assert not r.rejoining and r.slowstart and r.lost == 0
    t = last + 2.3  # the branch is back: packet 270 is the first heard
    for seq in range(270, 300):
        r.receive_datagram(dpkt(seq, t - 0.025, 0.0 if seq == 270 else 0.005, rate_w=20, rtt=0.05).encode(),
                           (SENDER, PORT), t)
        t += 0.005
    if rule:
        assert r.lost == 0 and r.slowstart and r.W >= 20
    else:
        assert r.lost == 170 and not r.slowstart


def test_the_quiet_timer_fires_once_where_the_silence_rounds_below_the_limit() -> None:
    """15.414125 + 2.0 is 17.414125, but 17.414125 - 15.414125 is a rounding
    below 2.0: a check by subtraction re-armed the timer at the time it fired,
    and the host's timer loop fired it again for ever (a simulation hung)."""
    r = follower()
    r.last_arrival, r.rtt_hat = 15.414125, 0.01
    now = 15.414125 + 2.0
    assert now - r.last_arrival < 2.0  # the rounding this test is about
    r._timer_quiet(now)
    assert r.rejoining and r.timer_at("quiet") is None


def test_drain_probe_enters_and_leaves_the_competitive_mode():
    """A queue that outlives two RTTs of half the window is a competitor's: the sender
    switches to Reno's rule (W + 1 per RTT, no Vegas decrease) and marks its data;
    two probes that see the queue drain bring Vegas back."""
    s = sender(PROBE_ROUNDS=3, COMPETE_EXIT_PROBES=2)
    out(s)
    s.slowstart = False
    s.W, s.base_rtt, s.rtt = 10.0, 0.1, 0.2  # a standing queue: Vegas would shrink W

    def rnd(t: float, mean_rtt: float) -> None:
        s.acks_in_round, s.round_rtt_sum, s.round_rtt_n = 3, 3 * mean_rtt, 3
        s._round(t)

    for i in range(3):
        rnd(1 + i, 0.2)
    assert s.probe_phase == 1 and s.W == 7  # three Vegas decrements, then the probe
    assert not s._window_open(4.0) or len(s.outstanding) < 3
    rnd(4, 0.2)
    rnd(5, 0.2)  # the probe's second round: queue still there
    assert s.competing and s.compete_entries == 1 and s.W == 7
    rnd(6, 0.2)
    assert s.W == 14  # a TCP flow's slow start on entry, despite the queue
    s.compete_ssthresh = s.W  # (its first loss ends it: the next test)
    rnd(6.5, 0.2)
    assert s.W == 15  # then Reno's additive increase
    s.outstanding.clear()
    s.next_tx = 0.0
    s._pump(6.0)
    assert any(m.flags & Flags.COMPETING for m in sent_data(s))
    for t in range(7, 30):
        rnd(t, 0.1)  # the queue drains now
        if not s.competing:
            break
    assert not s.competing and s.drained_probes >= 2
    # The paper's pure behaviour: no probes, Vegas only.
    v = sender(("compete",))
    v.slowstart, v.W, v.base_rtt, v.rtt = False, 10.0, 0.1, 0.2
    for t in range(10):
        v.acks_in_round, v.round_rtt_sum, v.round_rtt_n = 3, 0.6, 3
        v._round(float(t))
    assert v.W == 6 and v._window_limit() == 6  # Vegas: diff = 6 * 0.5 = beta; no half-window probe


@pytest.mark.parametrize("exits", [None, 2])
def test_a_reno_competitors_empty_queue_phase_does_not_end_the_competitive_mode(exits):
    # COMPETE_EXIT_PROBES (4): three drained probes, then one that finds the
    # queue again (the competitor regrew its halved window), keep the
    # competitive mode; with 2 the sender had left after the second.
    kw = {} if exits is None else {"COMPETE_EXIT_PROBES": exits}
    s = sender(**kw)
    out(s)
    s.competing, s.slowstart = True, False
    for _ in range(3):
        s._probe_result(True)
    assert s.competing == (exits is None)
    if exits is None:
        s._probe_result(False)  # the queue is back: the count starts again
        assert s.competing and s.drained_probes == 0
        for _ in range(4):
            assert s.competing
            s._probe_result(True)
        assert not s.competing  # four in a row: the competitor left


def test_entering_the_competitive_mode_slow_starts_until_the_first_loss():
    """A buffer-filling competitor found late (the first probe comes after
    ``probe_rounds`` RTTs) holds most of a long path; entering, the sender
    starts as a TCP flow would (RFC 5681 3.1: slow start until a loss), and
    the loss's halving ends slow start (3.2), so Reno's +1 per RTT follows.
    Without ``compete_slow_start`` it enters with +1 per RTT at once."""
    def entered(without: tuple[str, ...] = ()) -> VlmccSender:
        s = sender(without, PROBE_ROUNDS=3, initial_window=10)
        out(s)
        s.slowstart = False
        s.W, s.base_rtt, s.rtt, s.dev = 10.0, 0.1, 0.2, 0.01
        for t in (1.0, 2.0, 3.0, 3.2, 3.4):  # three Vegas rounds, then the probe's two
            s.acks_in_round, s.round_rtt_sum, s.round_rtt_n = 3, 0.6, 3
            s._round(t)
        assert s.competing
        return s

    s = entered()
    w0 = s.W
    assert w0 == 7
    s.acks_in_round = 3
    s._round(4.0)
    assert s.W == 2 * w0
    s.outstanding = {i: 3.0 + 0.01 * i for i in range(1, 8)}
    s.next_seq = 100
    feed(s, leader_ack(5, 3.05), 4.1, src=L)  # 1 and 2 lost: three later packets ACKed
    assert s.W == w0 and s.compete_ssthresh == w0 and s.compete_timeouts == 0
    s.acks_in_round = 3
    s._round(4.3)
    assert s.W == w0 + 1
    plain = entered(("compete_slow_start",))
    w0 = plain.W
    plain.acks_in_round = 3
    plain._round(4.0)
    assert plain.W == w0 + 1


def test_drain_probe_judges_the_queue_by_the_rounds_mean_rtt_not_its_smallest():
    """A bursty competitor's queue empties for a moment between its bursts: one
    ACK in the probe round at base_rtt while the rest wait 40 ms is a standing
    queue, not a drained one (the smallest RTT alone said drained, and on a
    1-BDP queue with TCP the sender fell back to Vegas at 0.35 of TCP's share)."""
    s = sender(initial_window=10)
    out(s)
    s.slowstart, s.W, s.base_rtt, s.rtt = False, 10.0, 0.05, 0.09
    for rtt in (0.051, 0.09, 0.09, 0.09, 0.09):
        s.outstanding[s.next_seq] = 0.0
        feed(s, leader_ack(s.next_seq, 1.0 - rtt), 1.0, src=L)
        s.next_seq += 1
    assert s.round_rtt_n == 5 and not s.queue_drained()
    s.round_rtt_sum, s.round_rtt_n = 0.0, 0
    for rtt in (0.051, 0.052, 0.05):
        s.outstanding[s.next_seq] = 0.0
        feed(s, leader_ack(s.next_seq, 2.0 - rtt), 2.0, src=L)
        s.next_seq += 1
    assert s.queue_drained()


@pytest.mark.parametrize("rule", [True, False])
def test_followers_emulate_the_rule_the_sender_announces(rule: bool):
    # (out of its slow start: the queue alone decides the Vegas emulation)
    r = follower(without=("follower_slow_start",) if rule else ("follower_slow_start", "compete"))
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=6, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.1)
    t = 0.2
    for seq in range(1, 120):  # a growing one-way delay: Vegas would shrink W
        m = dataclasses.replace(dpkt(seq, t, 0.01, rate_w=100), flags=Flags.COMPETING)
        r.receive_datagram(m.encode(), (SENDER, PORT), t + 0.1 + 0.002 * seq)
        t += 0.01
    if rule:
        assert r.last_flags & Flags.COMPETING and r.W >= 12, r.W
    else:
        assert r.W < 6, r.W  # a Vegas emulation on the competitor's queue


def test_before_the_first_rtt_sample_the_loss_timer_is_one_second():
    """RFC 6298's initial RTO: with initial_rtt (0.1 s) a sender that joined a full
    queue (RTT 0.45 s) called every packet lost and never measured an RTT."""
    s = sender(initial_rtt=0.1)
    out(s)
    assert s.loss_timeout() == 1.0
    s.outstanding = {1: 0.0}
    s._check_losses(0.5)
    assert s.losses == 0
    s._check_losses(1.0)
    assert s.losses == 1 and 1 in s.late
    feed(s, leader_ack(1, 0.0), 1.2, src=L)  # a late ACK still gives the RTT
    assert s.rtt == pytest.approx(1.2)


def test_competing_a_timer_loss_is_tcps_timeout_window_one_and_backoff():
    s = sender(initial_window=3)
    out(s)
    s.competing, s.slowstart = True, False
    s.rtt, s.dev, s.W = 0.1, 0.01, 3.0
    s.outstanding = {1: 0.0, 2: 0.0, 3: 0.0}
    s.next_seq = 4
    s._check_losses(0.3)  # no ACK within the loss timer: no three later ACKs either
    assert s.W == 1.0 and s.compete_timeouts == 1 and s.compete_ssthresh == 2.0  # half the flight, at least 2
    assert s.paused_until == pytest.approx(1.0)  # RFC 6298's 1 s after the lost packet left
    s._pump(0.5)
    assert sent_data(s) == []  # nothing new during the RTO
    run_timers(s, 1.0)
    d = sent_data(s)
    assert [m.seq for m in d] == [4]  # then one packet: W = 1
    # A late ACK of the first flight (its echo dates its RTT at 0.1 s): the leader is alive ...
    feed(s, leader_ack(2, 1.0), 1.1, src=L)
    assert s.backoff == 2  # ... but data sent before the pause does not end the backoff
    # The packet after the pause is lost too: the next RTO is doubled.
    s._check_losses(1.5)
    assert s.compete_timeouts == 2 and s.paused_until == pytest.approx(1.0 + 2.0)
    run_timers(s, 3.0)
    p = sent_data(s)[0]  # (the late ACK's round let the window grow to 2)
    # An ACK of data sent after the pause ends the backoff; W slow-starts back.
    feed(s, leader_ack(p.seq, 3.0), 3.1, src=L)
    assert s.backoff == 1
    # Without the rule a timer loss only halves W.
    t = sender(("compete_timeouts",), initial_window=3)
    out(t)
    t.competing, t.slowstart = True, False
    t.rtt, t.dev, t.W = 0.1, 0.01, 3.0
    t.outstanding = {1: 0.0}
    t._check_losses(0.3)
    assert t.W == 1.5 and not hasattr(t, "paused_until")


def test_competing_a_leader_silent_through_two_timeouts_in_a_row_is_lost():
    """Section 2.4 on the window after a timeout: one packet, unanswered too.
    A crashed leader otherwise kept the sender in back-off (1, 2, 4 ... 64
    RTOs) and the followers, alive behind another branch, got nothing."""
    def competing(without: tuple[str, ...] = ()) -> VlmccSender:
        s = sender(without, initial_window=3)
        out(s)
        s.competing, s.slowstart = True, False
        s.rtt, s.dev, s.W = 0.1, 0.01, 3.0
        s.outstanding = {1: 0.0, 2: 0.0, 3: 0.0}
        s.next_seq = 4
        s._check_losses(0.3)  # the first timeout: W = 1, a pause until 1.0
        run_timers(s, 1.0)
        assert [m.seq for m in sent_data(s)] == [4]
        s._check_losses(1.5)  # seq 4 unanswered as well, the leader silent since 0
        return s

    s = competing()
    assert s.leaderless and s.leader_losses == 1 and s.compete_timeouts == 1 and s.backoff == 1
    run_timers(s, 1.7)
    later = sent_data(s)
    assert later and all(m.leader_id == 0 for m in later)  # the data asks for volunteers
    feed(s, VlmccChallenge(session_id=9, rcvr_id=node_id(F), rtt=100_000, win_size=4, rate=1), 1.8, src=F)
    assert s.leader == node_id(F) and not s.leaderless
    # Without the rule the sender backs off again and sends nothing for 2 s.
    t = competing(("timeout_loses_leader",))
    assert not t.leaderless and t.compete_timeouts == 2 and t.paused_until == pytest.approx(3.0)


def test_competing_a_loss_found_by_three_later_acks_only_halves():
    s = sender(initial_window=10)
    out(s)
    s.competing, s.slowstart = True, False
    s.W, s.rtt, s.dev = 10.0, 0.1, 0.01
    s.outstanding = {i: 0.01 * i for i in range(1, 8)}
    s.next_seq = 100
    feed(s, leader_ack(5, 0.05), 0.15, src=L)
    assert s.W == 5 and s.compete_timeouts == 0 and s.paused_until < 0


def _competing_with_a_flight(without: tuple[str, ...] = ()) -> VlmccSender:
    """A competing sender with W = 16 and packets 1-7 out (next sequence number 100)."""
    s = sender(without, initial_window=10)
    out(s)
    s.competing, s.slowstart = True, False
    s.W, s.rtt, s.dev = 16.0, 0.1, 0.01
    s.outstanding = {i: 0.01 * i for i in range(1, 8)}
    s.next_seq = 100
    return s


def test_competing_losses_before_the_last_cut_do_not_cut_again():
    """RFC 6582 3.2's recovery point: one cut per window of data while competing.

    Packets 1 and 2 are found lost by three later ACKs: W halves and the cut
    remembers the next sequence number (100).  More than an RTT later packet 3,
    sent before that cut, is found lost too: the same overflow, no second cut.
    A loss of a packet sent after the cut (101) halves again.
    """
    s = _competing_with_a_flight()
    feed(s, leader_ack(5, 0.05), 0.15, src=L)  # 1 and 2 lost
    assert s.W == 8 and s.cut_seq >= 100
    s.outstanding.update({3: 0.03, 101: 0.4, 102: 0.4, 103: 0.4, 104: 0.4})
    s.next_seq = 105
    feed(s, leader_ack(6, 0.4), 0.45, src=L)  # 3 lost, 0.3 s (3 RTTs) after the cut
    assert s.W == 8 and s.absorbed_losses == 1
    feed(s, leader_ack(104, 0.5), 0.6, src=L)  # 101 lost: sent after the cut
    assert s.W == 4 and s.cut_seq > 104
    # The paper's rule (once per RTT of time) cuts for packet 3 as well.
    p = _competing_with_a_flight(("one_cut_per_window",))
    feed(p, leader_ack(5, 0.05), 0.15, src=L)
    p.outstanding.update({3: 0.03})
    feed(p, leader_ack(6, 0.4), 0.45, src=L)
    assert p.W == 4
