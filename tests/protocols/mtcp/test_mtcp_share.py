"""MTCP's ``share_window`` (profile ``stamped``): the window starts at the echoed max-min share."""

from __future__ import annotations

import pytest
from mtcp_util import PaperSender, composed
from test_mtcp_heterogeneity import A, B, TREE2
from win_util import SENDER, cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.wire import MtcpAck, MtcpNack, MtcpWindowUpdate, Share, Stamp, ts_us

LONG_FULL = Stamp.pack(8, 0)  # TCP's full queue: nothing spare, only the share says more
SHARE = Share.code_for(4e6)


def ack(node: str, cum: int, t: float, share: int, stamp: int = LONG_FULL) -> MtcpAck:
    return MtcpAck(session_id=9, cum_ack=cum, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096, node_id=node_id(node),
                   echo_ts=ts_us(t - 0.1), stamp=stamp, share=share)


def sender(share_window: bool):
    s = composed(PaperSender, "default", stamp_echo=True, share_window=share_window)(cfg(MtcpParams(tree=TREE2)))
    s.start(0.0)
    for c in (A, B):
        feed(s, MtcpWindowUpdate(session_id=9, cum_ack=0, min_cwnd=0xFFFFFFFF, max_twnd=0, adv_wnd=4096,
                                 node_id=node_id(c)), 0.0, src=c)
    out(s)
    return s


def _after(share_window: bool, shares: tuple[int, int], stamp: int = LONG_FULL):
    s = sender(share_window)
    for child, share in zip((A, B), shares):
        feed(s, ack(child, 1, 0.2, share, stamp), 0.2, src=child)
    return s


def test_slow_start_starts_at_the_smallest_echoed_share_and_ends_there():
    s = _after(True, (SHARE, SHARE + 8))
    rtt = max(c.rtd.srtt for c in s._acking())
    window = Share.bps(SHARE) * rtt / (8 * s.p.packet_size)
    assert s.cwnd == pytest.approx(window) and s.ssthresh == pytest.approx(window) and s.share_starts == 1
    assert _after(False, (SHARE, SHARE)).cwnd < 12  # default: slow start from the initial window


@pytest.mark.parametrize("shares, stamp", [((SHARE, Share.NONE), LONG_FULL), ((SHARE, SHARE), Stamp.NOT_STAMPED)])
def test_a_child_without_a_share_or_a_stamp_leaves_default(shares, stamp):
    assert _after(True, shares, stamp).cwnd == _after(False, shares, stamp).cwnd


def test_a_cut_ends_what_the_share_says():
    s = _after(True, (SHARE, SHARE))
    feed(s, MtcpNack(session_id=9, cum_ack=1, node_id=node_id(A), missing=(2,)), 0.3, src=A)
    assert s.cwnd_cuts == 1
    cut = s.cwnd
    feed(s, ack(A, 1, 0.35, SHARE), 0.35, src=A)
    assert s.cwnd <= cut + 1 and s.share_starts == 1
