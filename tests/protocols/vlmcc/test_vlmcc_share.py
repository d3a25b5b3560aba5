"""VLMCC's ``share_start`` (profile ``stamped``): slow start's window goes to the echoed max-min share."""

from __future__ import annotations

import pytest
from test_vlmcc_stamp import L, LONG, NONE, STAMPED, sender, without
from win_util import feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.wire import Share, VlmccAck, ts_us

SHARE = Share.code_for(4e6)


def slow_start_round(names: tuple[str, ...], acks: tuple[tuple[int, int], ...], **state: float):
    """The leader ACKs the oldest packets out with (stamp, share) each; then a slow-start round ends."""
    s = sender(names)
    now = 1.0
    for seq, (stamp, share) in zip(sorted(s.outstanding), acks):
        feed(s, VlmccAck(session_id=9, seq=seq, rcvr_id=node_id(L), tstamp_comp=ts_us(now - 0.1), stamp=stamp,
                         share=share), now, src=L)
    out(s)
    for k, v in {"slowstart": True, "base_rtt": 0.1, "W": 4.0, **state}.items():
        setattr(s, k, v)
    s._round(now)
    return s


def test_slow_start_goes_to_the_shares_window_and_ends_there():
    s = slow_start_round(STAMPED, ((LONG, SHARE), (LONG, SHARE)))
    assert s.W == pytest.approx(Share.bps(SHARE) * s.srtt / (8 * 1000)) and not s.slowstart
    assert s.share_starts == 1
    d = slow_start_round(without("share_start"), ((LONG, SHARE), (LONG, SHARE)))
    assert d.W <= 8.0  # default: doubling at most (stamp_queue holds it under the long queue)


@pytest.mark.parametrize("acks", [((LONG, SHARE), (LONG, Share.NONE)), ((LONG, SHARE), (NONE, SHARE))])
def test_an_ack_without_a_share_or_a_stamp_leaves_default(acks):
    got = slow_start_round(STAMPED, acks)
    want = slow_start_round(without("share_start"), acks)
    assert (got.W, got.slowstart) == (want.W, want.slowstart)


def test_out_of_slow_start_the_share_moves_nothing():
    s = slow_start_round(STAMPED, ((LONG, SHARE), (LONG, SHARE)), slowstart=False, rtt=0.105)
    assert s.share_starts == 0 and s.W <= 5.0
