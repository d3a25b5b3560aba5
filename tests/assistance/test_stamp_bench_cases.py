"""The stamp bench's cases (bench/assistance.py --stamp): a tree case is
measured on its limiting branch, the one with the lowest fair share
rate / (TCP flows + 1), as the tree design of bench/friendliness.py measures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.assistance import STAMP_CASES, limiting_branch, stamp_scenario  # noqa: E402

TREES = [c for c, spec in STAMP_CASES.items() if "branches" in spec]


def test_there_are_trees_of_both_corners() -> None:
    """One tree whose slow branch has the short round trip, one the long."""
    corners = set()
    for case in TREES:
        _, slow = limiting_branch(case)
        others = [b for b in STAMP_CASES[case]["branches"] if b is not slow]
        corners.add(all(slow["rtt_ms"] < b["rtt_ms"] for b in others))
    assert corners == {True, False}


@pytest.mark.parametrize("case", TREES)
def test_a_tree_is_measured_on_its_lowest_fair_share(case: str) -> None:
    far, spec = limiting_branch(case)
    shares = [b["rate_mbps"] / (b["tcp"] + 1) for b in STAMP_CASES[case]["branches"]]
    assert spec["rate_mbps"] / (spec["tcp"] + 1) == min(shares) and far == 2 + shares.index(min(shares))


@pytest.mark.parametrize("case", TREES)
def test_a_tree_case_builds_every_branch_with_its_tcp_and_receivers(case: str) -> None:
    sc = stamp_scenario("webrc", "stamped", case)
    branches = STAMP_CASES[case]["branches"]
    (sess,) = sc.sessions
    assert sess.assistance == "stamp" and sess.profile == "stamped"
    assert len(sess.receivers) == sum(b["receivers"] for b in branches)
    assert len(sc.tcp_flows) == sum(b["tcp"] for b in branches)
    rates = sorted(l.rate_bps for l in sc.topology.links if {l.a.node, l.b.node} & {"s1"} and
                   all(n.startswith("s") and n[1:].isdigit() for n in (l.a.node, l.b.node)))
    assert rates == sorted(b["rate_mbps"] * 1e6 for b in branches)


def test_a_dumbbell_is_measured_on_s1_to_s2() -> None:
    assert limiting_branch("d10") == (2, STAMP_CASES["d10"])
