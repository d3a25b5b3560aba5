"""TCP's rules the window protocols share (hosts.tcp_rules), and that each protocol reads them."""

from __future__ import annotations

import pytest

from p4mcc.hosts import tcp_rules
from p4mcc.hosts.mtcp import constants as mtcp
from p4mcc.hosts.reliable import ReliableParams, Scoreboard
from p4mcc.hosts.rla import RlaParams
from p4mcc.hosts.rla import sender as rla_sender
from p4mcc.hosts.rtt import SmoothedRtt
from p4mcc.hosts.tcp_rules import VEGAS, Vegas, undo_spurious_cuts, vegas_diff
from p4mcc.hosts.vlmcc import constants as vlmcc_constants
from p4mcc.hosts.vlmcc import rules as vlmcc_rules


def test_vegas_steps_the_window_by_the_packets_queued() -> None:
    v = Vegas(alpha=1.0, beta=3.0, gamma=1.0)
    assert [v.step(d) for d in (0.5, 1.0, 2.0, 3.0, 3.5)] == [1, 0, 0, 0, -1]
    assert not v.leaves_slow_start(1.0) and v.leaves_slow_start(1.01)
    assert vegas_diff(rate=100.0, delay=0.05, base_delay=0.04) == pytest.approx(1.0)


def test_vegas_refuses_thresholds_out_of_order() -> None:
    with pytest.raises(ValueError):
        Vegas(alpha=3.0, beta=1.0)


def test_every_window_protocol_defaults_to_the_shared_facts() -> None:
    rla, vlmcc = RlaParams(), vlmcc_rules
    assert rla.min_rto == mtcp.RTO_MIN == vlmcc.CompeteTimeouts.COMPETE_MIN_RTO == tcp_rules.MIN_RTO == 1.0
    assert rla.initial_rto == mtcp.RTO_INITIAL == SmoothedRtt().initial_rto == tcp_rules.INITIAL_RTO == 1.0
    assert rla_sender.DUPTHRESH == vlmcc.ThreeLaterAcks.LOSS_DUPTHRESH == mtcp.DUP_NACKS == tcp_rules.DUPTHRESH == 3
    assert vlmcc_constants.THRESHOLDS == VEGAS == Vegas(1.0, 3.0, 1.0)


def test_the_reliable_senders_share_their_stream_and_timer_parameters() -> None:
    for cls in (RlaParams,):
        p = cls(packet_size=1000, total_packets=5, receivers=2, initial_rto=2.0, min_rto=0.5)
        assert isinstance(p, ReliableParams)
        rtt = p.rtt_estimator()
        assert (rtt.initial_rto, rtt.min_rto) == (2.0, 0.5)
        for bad in ({"packet_size": 0}, {"receivers": -1}, {"min_rto": 0.0}, {"initial_rto": -1.0}):
            with pytest.raises(ValueError):
                cls(**bad)


def test_scoreboard_loss_rule_defaults_to_three_later_packets() -> None:
    sb = Scoreboard()
    sb.update(0, [(2, 4)])
    assert sb.lost() == []  # two later packets SACKed: not yet
    sb.update(0, [(2, 5)])
    assert sb.lost() == [1]


def test_spurious_cuts_come_back_by_slow_start_not_in_one_burst() -> None:
    """RFC 4015's response: ssthresh to the window before the cuts, cwnd to the
    flight plus an initial window (never the old window in one burst)."""
    # A timeout left cwnd 1: the flight and an initial window, slow start up to 114.
    assert undo_spurious_cuts(1.0, 57.0, (114.0, 18.0), flight=1, initial_window=10) == (11.0, 114.0)
    # The cuts left a window larger than the emptied pipe holds: it is lowered too.
    assert undo_spurious_cuts(62.0, 62.0, (124.0, 23.5), flight=0, initial_window=10) == (10.0, 124.0)
    # A small window comes back whole; a slow start's ssthresh is kept.
    assert undo_spurious_cuts(2.0, 2.0, (4.0, 100.0), flight=0, initial_window=10) == (4.0, 100.0)
