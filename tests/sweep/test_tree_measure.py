"""The tree design's measure (bench/trees.py): the limiting branch, the lossy leaf
against RFC 5348's equation, WEBRC per branch, and harm to the other branches' TCP."""

from __future__ import annotations

import pytest

from bench import trees
from p4mcc.hosts.tfrc import tcp_rate

SLOW = trees._branch(2, 30, 1.0, 1, 2)  # share 1 Mb/s: r1 r2, tcp1
FAST = trees._branch(10, 80, 1.0, 2, 2)  # share 3.33 Mb/s: r3 r4, tcp2 tcp3


def _cell(leaf=None):
    return {"branches": [SLOW, FAST], "lossy_leaf": leaf}


def test_a_single_rate_session_is_measured_on_the_branch_with_the_lowest_fair_share() -> None:
    rcv = {"r1": 0.8e6, "r2": 0.6e6, "r3": 0.7e6, "r4": 0.7e6}
    tcp = {"tcp1": 1.4e6, "tcp2": 4.5e6, "tcp3": 4.3e6}
    m = trees.point_entries(_cell(), "rla", rcv, tcp)
    assert m["limiting"] == 1
    assert m["entries"] == [pytest.approx({"ratio": 0.5, "against": "tcp", "branch": 1, "rtt_ms": 30.0,
                                           "rtt_spread": 80 / 30})]
    assert m["fast_tcp"] == pytest.approx(4.4e6 / (10e6 / 3))
    assert m["jain"][0] == pytest.approx((0.7 + 1.4) ** 2 / (2 * (0.7 ** 2 + 1.4 ** 2)))


def test_a_lossy_leaf_below_every_share_is_measured_against_the_equation() -> None:
    leaf = {"branch": 2, "loss": 0.05}
    eq = 8 * tcp_rate(1460, 0.080, 0.05)
    assert eq < 1e6  # below the slow branch's share: the leaf limits
    rcv = {"r1": 0.5e6, "r2": 0.5e6, "r3": 0.5e6, "r4": 0.4e6}
    m = trees.point_entries(_cell(leaf), "tfmcc", rcv, {"tcp1": 1.5e6, "tcp2": 4e6, "tcp3": 4e6})
    assert [(e["against"], e["branch"]) for e in m["entries"]] == [("eq", 2)]
    assert m["entries"][0]["ratio"] == pytest.approx(0.4e6 / eq)


def test_webrc_is_measured_on_every_branch_and_its_lossy_receiver_apart() -> None:
    leaf = {"branch": 2, "loss": 0.05}
    eq = 8 * tcp_rate(1460, 0.080, 0.05)
    rcv = {"r1": 1e6, "r2": 1e6, "r3": 3e6, "r4": 0.3e6}
    m = trees.point_entries(_cell(leaf), "webrc", rcv, {"tcp1": 1e6, "tcp2": 3e6, "tcp3": 3e6})
    assert [(e["against"], e["branch"], round(e["ratio"], 3)) for e in m["entries"]] == [
        ("tcp", 1, 1.0), ("tcp", 2, 1.0), ("eq", 2, round(0.3e6 / eq, 3))]


def test_the_design_has_24_cells_within_the_issues_ranges_and_both_corner_kinds() -> None:
    cells = trees.design()
    assert len(cells) == 24
    for c in cells:
        assert 2 <= len(c["branches"]) <= 4
        for b in c["branches"]:
            assert 1e6 <= b["rate"] <= 20e6 and 10 <= trees.rtt_ms(b) <= 200.5
            assert 0 <= b["tcp_pairs"] <= 3 and 1 <= b["receivers"] <= 8 and b["queue"] >= 10
        if c["lossy_leaf"]:
            assert 0.005 <= c["lossy_leaf"]["loss"] <= 0.05
    corners = cells[:16]
    fast_long = sum(trees.rtt_ms(c["branches"][1]) > trees.rtt_ms(c["branches"][0]) for c in corners)
    assert fast_long == 8  # fast+long beside slow+short in half the corners, the reverse in the other half
    assert sum(trees.leaf_equation(c) is not None and trees.leaf_equation(c) < min(map(trees.share, c["branches"]))
               for c in cells) >= 4  # some cells are limited by their lossy leaf


def test_the_leafs_equation_takes_the_round_trip_and_loss_its_branchs_tcp_flows_measure() -> None:
    """RFC 5348 3.1: R is the measured round trip (the branch's queue
    included) and a TCP flow to the leaf loses upstream too; at the base
    round trip alone this 2 % leaf would not limit (its rate is above the slow
    branch's 1 Mb/s share)."""
    leaf = {"branch": 2, "loss": 0.02}
    assert trees.leaf_equation(_cell(leaf)) == pytest.approx(8 * tcp_rate(1460, 0.080, 0.02))
    assert trees.leaf_equation(_cell(leaf)) > 1e6
    paths = {"tcp1": (0.05, 0.01), "tcp2": (0.15, 0.01), "tcp3": (0.17, 0.01)}
    eq = 8 * tcp_rate(1460, 0.16, 1 - 0.98 * 0.99)
    assert eq < 1e6
    rcv = {"r1": 0.5e6, "r2": 0.5e6, "r3": 0.5e6, "r4": 0.3e6}
    tcp = {"tcp1": 1.5e6, "tcp2": 4e6, "tcp3": 4e6}
    m = trees.point_entries(_cell(leaf), "tfmcc", rcv, tcp, paths)
    assert [(e["against"], e["branch"]) for e in m["entries"]] == [("eq", 2)]
    assert m["entries"][0]["ratio"] == pytest.approx(0.3e6 / eq)
    # a branch with no TCP flow, or flows that measured nothing: the base round trip and the leaf's loss alone
    assert trees.leaf_path([], paths) is None
    assert trees.leaf_path(["tcp1"], {}) is None
    assert trees.leaf_path(["tcp2", "tcp3"], paths) == pytest.approx((0.16, 0.01))


def test_a_cell_keeps_the_entries_most_of_its_seeds_chose() -> None:
    cell = _cell({"branch": 2, "loss": 0.02})
    eq_run = {"entries": [{"ratio": 0.8, "against": "eq", "branch": 2, "rtt_ms": 80.0}]}
    tcp_run = {"entries": [{"ratio": 0.1, "against": "tcp", "branch": 1, "rtt_ms": 30.0}]}
    pts = [{"protocol": "tfmcc", "seed": s, "cell": cell, "limiting": 1, "jain": [1.0, 1.0], "fast_tcp": 1.0,
            **run, "entries": [{**run["entries"][0], "ratio": run["entries"][0]["ratio"] + s / 100}]}
           for s, run in ((1, tcp_run), (2, eq_run), (3, eq_run))]
    (c,) = trees.per_cell(pts)["tfmcc"]
    assert [(e["against"], e["branch"]) for e in c["entries"]] == [("eq", 2)]
    assert c["entries"][0]["ratio"] == pytest.approx(0.825)


def test_a_tree_runs_as_long_as_its_slowest_branchs_tcp_epochs_need() -> None:
    """The epoch rule per branch: the branch whose TCP flows climb slowest sets the run."""
    from bench import friendliness
    from bench.trees import rtt_ms, run_length, sweep_doc

    long_branch = {"rate": 20_000_000, "delay": 0.098, "queue": 667, "tcp_pairs": 1, "receivers": 2}
    short_branch = {"rate": 2_000_000, "delay": 0.008, "queue": 20, "tcp_pairs": 1, "receivers": 2}
    quiet = {"rate": 20_000_000, "delay": 0.2, "queue": 2000, "tcp_pairs": 0, "receivers": 2}  # no TCP: no epoch
    cell = {"branches": [short_branch, long_branch, quiet], "lossy_leaf": None}
    want = friendliness.run_length({"rate_mbps": 20.0, "rtt_ms": rtt_ms(long_branch), "queue": 667, "tcp": 1}, 100)
    assert run_length(cell, 100, 3) == want > 100
    assert run_length({"branches": [short_branch, quiet], "lossy_leaf": None}, 100, 3) == 100
    assert run_length(cell, 100, 0) == 100
    doc = sweep_doc([cell], [1], 100, "t", ("rla",), epochs=3)
    assert doc["axes"]["cell"]["zip"]["duration"] == [want]
