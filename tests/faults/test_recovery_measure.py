"""The recovery measure judges the receivers behind a fault, each against its
own pre-fault throughput (scenario.faults.recovery_times), on synthetic series.

A tree: h1 - s1 (root) - s2 (leaf, r1) and s3 (leaf, r2 .. r6).  One
receiver in six behind a leaf: losing it all takes the session's mean
throughput to 83 %, never below the 80 % the measure asks for.
"""

from __future__ import annotations

import pytest

from p4mcc.reporting.results import Sample
from p4mcc.scenario.faults import Fault, behind, recovery_times
from p4mcc.scenario.model import scenario_from_dict

TREE = {
    "duration": 20,
    "topology": {"hosts": ["h1", "r1", "r2", "r3", "r4", "r5", "r6"], "switches": ["s1", "s2", "s3"],
                 "links": [["h1", "s1"], ["s1", "s2"], ["s1", "s3"], ["r1", "s2"], ["r2", "s3"],
                           ["r3", "s3"], ["r4", "s3"], ["r5", "s3"], ["r6", "s3"]]},
    "sessions": [{"name": "a", "protocol": "webrc", "sender": "h1",
                  "receivers": ["r1", "r2", "r3", "r4", "r5", "r6"]}],
}
RECEIVERS = ("r1", "r2", "r3", "r4", "r5", "r6")


def series(node: str, values: list[float]) -> list[Sample]:
    return [Sample(0.5 * (i + 1), "session", "a", node, "throughput_bps", v) for i, v in enumerate(values)]


def steady(node: str, bps: float = 1e6, n: int = 30) -> list[Sample]:
    return series(node, [bps] * n)


def test_the_receivers_behind_a_switch_or_a_link_are_those_whose_path_crosses_it() -> None:
    sc = scenario_from_dict(TREE)
    s = sc.sessions[0]
    assert behind(sc, s, Fault("switch_crash", 5.0, "s2")) == ["r1"]
    assert behind(sc, s, Fault("switch_crash", 5.0, "s1")) == list(RECEIVERS)
    assert behind(sc, s, Fault("link_down", 5.0, ("s3", "s1"))) == ["r2", "r3", "r4", "r5", "r6"]
    assert behind(sc, s, Fault("link_down", 5.0, ("r4", "s3"))) == ["r4"]
    assert behind(sc, s, Fault("malformed", 5.0, ("s2", 1))) == ["r1"]
    assert behind(sc, s, Fault("controller_restart", 5.0)) == list(RECEIVERS)


def test_a_leaf_crash_is_judged_on_its_own_receivers_not_the_session_mean() -> None:
    sc = scenario_from_dict(TREE)
    crash = Fault("switch_crash", 5.0, "s2", duration=2.0)
    # r1 behind s2: nothing from 5 s, back at 1 Mb/s 3 s after the crash ends (10 s);
    # the five others never notice.
    leaf = [1e6] * 9 + [0.0] * 10 + [1e6] * 11  # samples at 0.5 .. 15 s; 0 from 5 s to 9.5 s
    others = [x for r in RECEIVERS[1:] for x in steady(r)]
    assert recovery_times(series("r1", leaf) + others, sc, crash, 5.0) == {"a": pytest.approx(3.0)}
    # with no sample at all after the crash, it never recovers
    assert recovery_times(series("r1", [1e6] * 9) + others, sc, crash, 5.0) == {"a": None}
    # a dip of a receiver not behind the fault is not the fault's
    other = series("r2", [1e6] * 9 + [0.0] * 21)
    calm = steady("r1") + other + [x for r in RECEIVERS[2:] for x in steady(r)]
    assert recovery_times(calm, sc, crash, 5.0) == {"a": 0.0}


def test_each_receiver_is_held_to_its_own_baseline() -> None:
    sc = scenario_from_dict(TREE)
    cut = Fault("link_down", 5.0, ("s1", "s3"), duration=1.0)
    # Behind s3, r2 had 1 Mb/s and comes back at 0.5 Mb/s; r3 had 0.2 Mb/s and comes back
    # at 1 Mb/s.  The mean behind s3 (0.9 Mb/s) is above its mean before (0.84 Mb/s); r2 is
    # at half its own.
    r2 = series("r2", [1e6] * 9 + [0.0] * 4 + [0.5e6] * 17)
    r3 = series("r3", [0.2e6] * 9 + [0.0] * 4 + [1e6] * 17)
    rest = [x for r in ("r1", "r4", "r5", "r6") for x in steady(r)]
    assert recovery_times(r2 + r3 + rest, sc, cut, 5.0) == {"a": None}
    # r2 at 0.85 Mb/s from 7.5 s is back (85 % of its own 1 Mb/s) 1.5 s after the cut's end
    r2_back = series("r2", [1e6] * 9 + [0.0] * 5 + [0.85e6] * 16)
    assert recovery_times(r2_back + r3 + rest, sc, cut, 5.0) == {"a": pytest.approx(1.5)}
