"""RLA's ``share_window`` (profile ``stamped``): the window starts at the echoed max-min share."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rla_util import DEFAULT_RULES
from test_rla_rules import R, sack, sender
from win_util import feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.rla import RULES
from p4mcc.hosts.wire import Share, Stamp

STAMPED = RULES.resolve("stamped")
LONG_FULL = Stamp.pack(8, 0)  # TCP's full queue: nothing spare, so only the share can say more
SHARE = Share.code_for(4e6)
SRTT = 0.1


def _after_sacks(names: tuple[str, ...], shares: tuple[int, int], stamp: int = LONG_FULL, cut: bool = False):
    """Two receivers at 100 ms in slow start at 10 packets SACK packets 1-2 with these echoes."""
    s = sender(n=2, names=names, ssthresh=float(sender(n=1).p.rcv_buffer))
    out(s)
    for r in R[:2]:
        s.rcvrs[node_id(r)].rtt.sample(SRTT)
    if cut:
        s.ssthresh = 20.0  # a cut happened: default from then on
    for r, share in zip(R[:2], shares):
        feed(s, replace(sack(r, 2), stamp=stamp, share=share), 0.06, src=r)
    return s


def test_slow_start_starts_at_the_smallest_echoed_share_and_ends_there():
    s = _after_sacks(STAMPED, (SHARE, SHARE + 8))
    window = Share.bps(SHARE) * SRTT / (8 * s.p.packet_size)
    assert s.cwnd == pytest.approx(window) and s.ssthresh == pytest.approx(window)
    assert s.share_starts >= 1
    d = _after_sacks(DEFAULT_RULES, (SHARE, SHARE))
    assert d.cwnd < 13  # default: a packet per packet ACKed by all


@pytest.mark.parametrize("shares, stamp", [((SHARE, Share.NONE), LONG_FULL), ((SHARE, SHARE), Stamp.NOT_STAMPED)])
def test_a_receiver_without_a_share_or_a_stamp_leaves_default(shares, stamp):
    assert _after_sacks(STAMPED, shares, stamp).cwnd == _after_sacks(DEFAULT_RULES, shares, stamp).cwnd


def test_after_a_cut_the_share_no_longer_moves_the_window():
    assert _after_sacks(STAMPED, (SHARE, SHARE), cut=True).cwnd == _after_sacks(DEFAULT_RULES, (SHARE, SHARE),
                                                                                 cut=True).cwnd


def test_a_forged_share_from_one_receiver_raises_the_window_no_higher_than_the_others_echo():
    """Robust to lies: the largest share the wire holds, echoed by one receiver, moves the window
    only to the share the other receiver echoes."""
    forged = 0xFF
    s = _after_sacks(STAMPED, (forged, SHARE))
    assert s.cwnd == pytest.approx(Share.bps(SHARE) * SRTT / (8 * s.p.packet_size))
    assert Share.bps(forged) > 10 * Share.bps(SHARE)
