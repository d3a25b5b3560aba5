"""``fold_acker``: behind a folding switch a member is the acker, named by a probe, and its
own ACKs (flagged ACKER, which no switch folds) clock the window, driven by messages on the
sans-I/O cores.  Member NEAR (20 ms RTD) loses packets; the fold's ACKs come from member FAR."""

from __future__ import annotations

import dataclasses

import pytest
from mtcp_util import PaperReceiver, PaperSender, composed
from win_util import PORT, SENDER, cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.mtcp.constants import FOLD_ID
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpNack, MtcpWindowUpdate, ts_us

NEAR, FAR = "10.0.1.1", "10.0.1.2"
ACKER = {"acker_election": True, "acker_clock": True, "reliability_window": True, "rtt_fair_increase": False,
         "fold_acker": False}
FOLD_ACKER = {**ACKER, "fold_acker": True}
RTD = 0.02


def fold(cum: int, cls=MtcpAck, echo: int = 0) -> MtcpAck:
    return cls(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096, node_id=node_id(FAR),
               echo_ts=echo, flags=Flags.AGGREGATED)


def originals(sent: list) -> list[MtcpData]:
    """The originals among the (destination, message) pairs a sender put out."""
    return [m for _d, m in sent if isinstance(m, MtcpData) and not m.flags & Flags.RETRANSMIT]


def probes(sent: list) -> list[tuple]:
    """The probes flagged ACKER among them: (destination, ``adv_wnd``), 1 naming the acker, 0 releasing it."""
    return [(d, m.adv_wnd) for d, m in sent if isinstance(m, MtcpWindowUpdate) and m.flags & Flags.ACKER]


def nack(cum: int, missing: tuple[int, ...], sent_at: float) -> MtcpNack:
    """NEAR's NACK as ``fold_acker``'s receiver sends it: its timestamp echoes an original's."""
    return MtcpNack(session_id=9, cum_ack=cum, node_id=node_id(NEAR), missing=missing,
                    timestamp=ts_us(sent_at), flags=Flags.ACKER)


def behind_a_fold(rules: dict):
    """An assisted sender, the fold heard, then two loss events of NEAR's a round trip apart; the
    sender (its last output not taken), the time, and the probes flagged ACKER taken before."""
    s = composed(PaperSender, "default", **rules)(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    feed(s, fold(0, MtcpWindowUpdate), 0.0, src=FAR)
    now, cum, told = 0.0, 0, []
    for hole in (1, 2):
        sent = out(s)
        told += probes(sent)
        now += RTD
        top = max(m.seq for m in originals(sent))
        feed(s, nack(cum, (top - 1,), now - RTD), now, src=NEAR)
        feed(s, fold(top, echo=ts_us(now - 0.2)), now + 0.001, src=FAR)
        cum, now = top, now + 0.3
    return s, now, told


def test_a_member_that_loses_is_elected_and_told_by_a_probe() -> None:
    s, _, told = behind_a_fold(FOLD_ACKER)
    near = s.children[node_id(NEAR)]
    assert near.nack_only and s.acker == near.nid
    assert abs(near.rtd.srtt - RTD) < 1e-3  # from the NACKs' echoes
    assert told + probes(out(s)) == [((NEAR, PORT), 1)]


def test_without_the_rule_no_member_is_a_candidate_and_none_is_told() -> None:
    s, _, told = behind_a_fold(ACKER)
    assert s.acker in (None, FOLD_ID)
    assert told + probes(out(s)) == []


def test_the_ackers_copy_clocks_the_window_and_releases_nothing() -> None:
    s, now, _told = behind_a_fold(FOLD_ACKER)
    near = s.children[node_id(NEAR)]
    out(s)
    cwnd, held = s.cwnd, dict(s.buf)
    top = s.next_seq - 1
    copy = MtcpAck(session_id=9, cum_ack=top, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096,
                   node_id=near.nid, echo_ts=ts_us(now - RTD), flags=Flags.ACKER)
    feed(s, copy, now, src=NEAR)
    assert s.cwnd > cwnd, "the acker's ACK grows the window"
    assert set(held) <= set(s.buf), "only the fold releases a packet"
    assert near.sb.cum_ack == top and near.nack_only
    # a folded ACK does not grow it while the acker clocks
    cwnd = s.cwnd
    feed(s, fold(top), now + 0.01, src=FAR)
    assert s.cwnd == cwnd


def test_a_copy_from_a_member_that_is_not_the_acker_changes_nothing() -> None:
    s, now, _told = behind_a_fold(FOLD_ACKER)
    cwnd = s.cwnd
    other = "10.0.1.3"
    feed(s, MtcpAck(session_id=9, cum_ack=1, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096,
                    node_id=node_id(other), flags=Flags.ACKER), now, src=other)
    assert s.cwnd == cwnd and node_id(other) not in s.children


def _receiver(rules: dict):
    r = composed(PaperReceiver, "default", **rules)(cfg(MtcpParams(assisted=True), local=NEAR))
    r.start(0.0)
    out(r)
    return r


def _reports(r) -> list[MtcpAck]:
    return [m for d, m in out(r) if isinstance(m, MtcpAck) and d == (SENDER, PORT)]


def _probe(acker: bool) -> MtcpWindowUpdate:
    return MtcpWindowUpdate(session_id=9, timestamp=5, node_id=node_id(SENDER), flags=Flags.ACKER,
                            adv_wnd=int(acker))


@pytest.mark.parametrize("probes, copies", [((True,), 1), ((True, False), 0), ((), 0)])
def test_the_named_member_sends_each_ack_twice_the_second_flagged(probes: tuple[bool, ...], copies: int) -> None:
    r = _receiver(FOLD_ACKER)
    for acker in probes:
        r.receive_datagram(_probe(acker).encode(), (SENDER, PORT), 0.01)
    out(r)
    for seq in (1, 2):
        r.receive_datagram(MtcpData(session_id=9, seq=seq, timestamp=ts_us(0.01 * seq)).encode(),
                           (SENDER, PORT), 0.05 * seq)
    if r.timer_at("ack") is not None:  # delayed_ack: the second packet's ACK went at once
        r.handle_timer(r.timer_at("ack"))
    acks = _reports(r)
    flagged = [a for a in acks if a.flags & Flags.ACKER]
    assert len(flagged) == copies
    plain = [a for a in acks if not a.flags & Flags.ACKER]
    assert plain and all(dataclasses.replace(f, flags=0) == plain[-1] for f in flagged)


def test_a_members_nack_echoes_the_last_original_and_says_so() -> None:
    r = _receiver(FOLD_ACKER)
    for seq in (1, 3):
        r.receive_datagram(MtcpData(session_id=9, seq=seq, timestamp=ts_us(0.01 * seq)).encode(),
                           (SENDER, PORT), 0.05 * seq)
    r._nack([2], 0.2)
    [n] = [m for _d, m in out(r) if isinstance(m, MtcpNack)]
    assert n.flags & Flags.ACKER
    assert n.timestamp == ts_us(0.03) + round((0.2 - 0.15) * 1e6)  # the echo plus its hold


def test_the_paper_receiver_nacks_with_its_own_time() -> None:
    r = _receiver({"fold_acker": False})
    r.receive_datagram(MtcpData(session_id=9, seq=3, timestamp=ts_us(0.03)).encode(), (SENDER, PORT), 0.15)
    r._nack([1, 2], 0.2)
    [n] = [m for _d, m in out(r) if isinstance(m, MtcpNack)]
    assert not n.flags and n.timestamp == ts_us(0.2)



def test_a_named_acker_that_falls_silent_is_passed_over_for_no_acker_not_the_fold() -> None:
    s, now, _told = behind_a_fold(FOLD_ACKER)
    near = s.children[node_id(NEAR)]
    assert s.acker == near.nid and near.rtd.srtt is not None
    out(s)
    assert s.buf, "NEAR owes what is held"
    quiet = max(3 * near.rtd.srtt, near.rtd.srtt + 4 * near.rtd.rttvar) + 1.0
    # a switch's refresh of the fold NEAR holds; NEAR itself says nothing
    feed(s, fold(s.children[FOLD_ID].sb.cum_ack, echo=ts_us(now)), now + quiet, src=FAR)
    # no member talks: no acker, the core's clock; never the fold, whose ACK is every member's
    assert s.acker is None and s.silent_ackers == 1
    assert probes(out(s)) == [((NEAR, PORT), 0)], "released, so its copies stop"


def test_the_copy_clocks_even_after_the_fold_the_ackers_own_ack_moved() -> None:
    """The switch sends the fold the acker's ACK triggered before the copy: that fold moves the
    acker's record, and the copy must still grow the window by what it acknowledges."""
    s, now, _told = behind_a_fold(FOLD_ACKER)
    near = s.children[node_id(NEAR)]
    out(s)
    top = s.next_seq - 1
    moved = dataclasses.replace(fold(top), node_id=near.nid)  # the fold NEAR's ACK triggered
    feed(s, moved, now, src=NEAR)
    assert near.sb.cum_ack == top
    cwnd = s.cwnd
    feed(s, MtcpAck(session_id=9, cum_ack=top, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096,
                    node_id=near.nid, echo_ts=ts_us(now - RTD), flags=Flags.ACKER), now, src=NEAR)
    assert s.cwnd > cwnd


def _acker_lacks_a_hole(s, now: float) -> tuple[int, float]:
    """NEAR (the acker) NACKs a hole a group repair just went out for; the repairs sent since."""
    out(s)
    hole = min(s.buf)
    s.children[FOLD_ID].last_tx[hole] = now - 0.001  # repaired to the group a moment ago
    feed(s, nack(hole - 1, (hole,), now - RTD), now, src=NEAR)
    return hole, now


def test_the_ackers_hole_is_repaired_to_it_at_once_not_at_the_folds_pace() -> None:
    s, now, _told = behind_a_fold(FOLD_ACKER)
    hole, _ = _acker_lacks_a_hole(s, now)
    repairs = [(d, m.seq) for d, m in out(s) if isinstance(m, MtcpData) and m.flags & Flags.RETRANSMIT]
    assert ((NEAR, PORT), hole) in repairs


def test_a_member_acker_waiting_for_its_repair_is_not_passed_over() -> None:
    s, now, _told = behind_a_fold(FOLD_ACKER)
    near = s.children[node_id(NEAR)]
    hole, at = _acker_lacks_a_hole(s, now)
    quiet = s.quiet_bound(near)
    # NEAR last spoke with the NACK; a repair went to it at the same instant, and it is on its way
    later = at + 0.9 * quiet
    near.last_heard = at - quiet  # as if its NACK were long ago: only the repair keeps it
    assert not s.acker_silent(near, later)
    assert s.acker_silent(near, at + 1.1 * quiet + 0.001)


def test_a_new_member_acker_is_told_at_once_and_answers_with_its_copy() -> None:
    """The window its stale record closes may hold every original, so the sender tells the new
    acker by a probe flagged ACKER, which it answers with its copy."""
    s = composed(PaperSender, "default", **FOLD_ACKER)(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    feed(s, fold(0, MtcpWindowUpdate), 0.0, src=FAR)
    told = []
    now, cum = 0.0, 0
    for _ in range(2):
        sent = originals(out(s))
        now += RTD
        top = max(m.seq for m in sent)
        feed(s, nack(cum, (top - 1,), now - RTD), now, src=NEAR)
        told += [(d, m) for d, m in out(s) if isinstance(m, MtcpWindowUpdate) and m.flags & Flags.ACKER]
        feed(s, fold(top, echo=ts_us(now - 0.2)), now + 0.001, src=FAR)
        cum, now = top, now + 0.3
    assert s.acker == node_id(NEAR)
    assert [d for d, _m in told] == [(NEAR, PORT)]
    r = _receiver(FOLD_ACKER)
    r.receive_datagram(told[0][1].encode(), (SENDER, PORT), 1.0)
    [copy] = _reports(r)
    assert copy.flags & Flags.ACKER and copy.echo_ts == told[0][1].timestamp
    assert r.named_acker


def test_a_probe_flagged_acker_from_another_host_is_ignored() -> None:
    r = _receiver(FOLD_ACKER)
    probe = MtcpWindowUpdate(session_id=9, timestamp=5, node_id=node_id(FAR), flags=Flags.ACKER, adv_wnd=1)
    r.receive_datagram(probe.encode(), (FAR, PORT), 1.0)
    assert _reports(r) == [] and not r.named_acker
