"""RLA's stamp rules (profile ``stamped``), driven on the cores with a fake clock."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rla_util import DEFAULT_RULES
from test_rla_feedback import data, receiver
from test_rla_rules import R, sack, sender
from win_util import feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.rla import RULES, RlaParams
from p4mcc.hosts.wire import RlaSack, Stamp

STAMPED = RULES.resolve("stamped")
SHORT_SPARE = Stamp.pack(1, 7)  # < 512 us of queue, >= 5.12 Mb/s spare
SHORT_FULL = Stamp.pack(2, 0)  # 0.5-1 ms of queue, nothing spare
LONG_FULL = Stamp.pack(8, 0)  # 33-66 ms of queue (TCP's), nothing spare


def without(name: str) -> tuple[str, ...]:
    return RULES.resolve("stamped", {name: "off"})


def test_the_stamped_profile_is_default_plus_the_stamp_rules():
    assert set(STAMPED) - set(DEFAULT_RULES) == {"stamp_echo", "stamp_climb", "stamp_hold", "share_window"}


@pytest.mark.parametrize("names, echoed", [(STAMPED, [SHORT_SPARE, 0, LONG_FULL]), (DEFAULT_RULES, [0, 0, 0])])
def test_a_sack_carries_back_the_stamps_of_the_data_since_the_last_one(names, echoed):
    rc = receiver(names=names)
    out(rc)
    got = []
    for seq, stamp in enumerate((SHORT_SPARE, Stamp.NOT_STAMPED, LONG_FULL), start=1):
        pkt = replace(data(seq, 1.0, flags=0), stamp=stamp)  # unmarked: a SACK per packet
        feed(rc, pkt, 1.0 + seq / 100, src="10.0.0.1")
        got += [m.stamp for _, m in out(rc) if isinstance(m, RlaSack)]
    assert got == echoed


def _window_acked_by_both(names: tuple[str, ...], stamps: tuple[int, int], consts: dict | None = None) -> float:
    """Two receivers at 50 ms in congestion avoidance at 10 packets; both
    acknowledge packets 1-2 with the given echoes; the window's growth."""
    s = sender(n=2, names=names, ssthresh=2, consts=consts)
    out(s)
    for r in R[:2]:
        s.rcvrs[node_id(r)].rtt.sample(0.050)
    before = s.cwnd
    for r, stamp in zip(R[:2], stamps):
        feed(s, replace(sack(r, 2), stamp=stamp), 0.06, src=r)
    return s.cwnd - before


RULE4 = pytest.approx(1 / 10 + 1 / (10 + 1 / 10))  # two packets ACKed by all, cwnd += 1/cwnd each


def test_a_short_queue_with_rate_spare_takes_half_of_it_for_a_round_trip():
    spare_pkts = 0.5 * Stamp.spare_bps(SHORT_SPARE) * 0.050 / (8 * RlaParams().packet_size)
    assert _window_acked_by_both(STAMPED, (SHORT_SPARE, SHORT_SPARE)) == pytest.approx(1 / 10 + spare_pkts, rel=0.01)
    assert _window_acked_by_both(without("stamp_climb"), (SHORT_SPARE, SHORT_SPARE)) == RULE4


@pytest.mark.parametrize("stamps", [(SHORT_SPARE, LONG_FULL), (SHORT_SPARE, Stamp.NOT_STAMPED)])
def test_a_long_queue_or_an_unstamped_path_anywhere_in_the_group_climbs_as_default(stamps):
    assert _window_acked_by_both(STAMPED, stamps) == RULE4


def test_a_short_queue_with_nothing_spare_holds_the_window():
    assert _window_acked_by_both(STAMPED, (SHORT_FULL, SHORT_FULL)) == 0.0
    assert _window_acked_by_both(without("stamp_hold"), (SHORT_FULL, SHORT_FULL)) == RULE4


def test_a_full_queue_tcp_keeps_never_holds_the_window():
    assert _window_acked_by_both(STAMPED, (LONG_FULL, LONG_FULL)) == RULE4


def test_spare_below_an_eighth_of_the_sessions_rate_is_none():
    # 80 kb/s beside the session's 2.3 Mb/s (10 packets per 50 ms) is the few per
    # cent a full port's rate window leaves: the window holds, as with none.
    crumbs = Stamp.pack(2, 1)
    assert _window_acked_by_both(STAMPED, (crumbs, crumbs)) == 0.0
    assert _window_acked_by_both(STAMPED, (crumbs, crumbs), consts={"SPARE_FLOOR": 0.0}) > RULE4.expected


def test_a_climb_waits_two_round_trips_for_its_echo():
    s = sender(n=2, names=STAMPED, ssthresh=2)
    out(s)
    for r in R[:2]:
        s.rcvrs[node_id(r)].rtt.sample(0.050)
    for t, cum in ((0.06, 2), (0.12, 3), (0.17, 4)):
        for r in R[:2]:
            feed(s, replace(sack(r, cum), stamp=SHORT_SPARE), t, src=r)
    assert s.stamp_climbs == 2  # at 0.06 and 0.17, not at 0.12 (one srtt later)
