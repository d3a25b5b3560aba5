"""RLA on trees: the ``rtt_fair_increase`` rule, driven on the core with a fake clock."""

from __future__ import annotations

import math

import pytest
from rla_util import DEFAULT_RULES
from test_rla_rules import R, sack, sender
from win_util import feed, out

from hosts.core import node_id
from hosts.rtt import MAX_RTT_SPREAD

WITH = (*DEFAULT_RULES, "rtt_fair_increase") if "rtt_fair_increase" not in DEFAULT_RULES else DEFAULT_RULES
WITHOUT = tuple(n for n in WITH if n != "rtt_fair_increase")


def _cut_by_short_receiver(names: tuple[str, ...]):
    """Two receivers, srtt 30 ms and 80 ms; the 30 ms one signals a forced cut
    from window 20; then the window is in congestion avoidance at 10."""
    s = sender(n=2, names=names, initial_cwnd=20, ssthresh=2)
    out(s)
    near, far = (s.rcvrs[node_id(x)] for x in R[:2])
    near.rtt.sample(0.030)
    far.rtt.sample(0.080)
    near.interval_avg = 100.0
    near.last_signal_pkts = s.packets_sent
    s.last_window_cut = -math.inf
    s._congestion(near, 5.0, lost=None)
    assert s.cwnd == 10
    s.recover = None  # the cut's recovery is over
    return s


@pytest.mark.parametrize("names, growth", [(WITH, (0.080 / 0.030) ** 2), (WITHOUT, 1.0)])
def test_a_window_cut_for_a_short_round_trip_grows_by_the_squared_rtt_spread(names, growth):
    # Sent once per 80 ms, the window must grow (80/30)^2 packets per round to
    # keep TCP's pace at 30 ms; the paper's increase (one per round) leaves the
    # session at 30/80 of the TCP flow beside the short receiver.
    s = _cut_by_short_receiver(names)
    before = s.cwnd
    feed(s, sack(R[0], 1), 5.1, src=R[0])
    feed(s, sack(R[1], 1), 5.1, src=R[1])
    assert s.cwnd - before == pytest.approx(growth / before, rel=1e-6)


def test_equal_round_trips_keep_the_papers_increase():
    s = _cut_by_short_receiver(WITH)
    s.rcvrs[node_id(R[1])].rtt.srtt = 0.030
    assert s.rtt_spread() == 1.0


def test_a_spread_below_a_quarter_is_no_spread():
    # Receivers behind one queue differ by its swing, not by the tree: 36 ms
    # beside 30 ms (1.2) keeps the paper's increase, 39 ms (1.3) is compensated.
    s = _cut_by_short_receiver(WITH)
    s.rcvrs[node_id(R[1])].rtt.srtt = 0.036
    assert s.rtt_spread() == 1.0
    s.rcvrs[node_id(R[1])].rtt.srtt = 0.039
    assert s.rtt_spread() == pytest.approx(1.3)


def test_the_compensated_spread_is_bounded():
    s = _cut_by_short_receiver(WITH)
    s.rcvrs[node_id(R[1])].rtt.srtt = 10.0  # a wild srtt
    assert s.rtt_spread() == MAX_RTT_SPREAD
