"""MTCP on the two-branch tree with the switches folding its summaries
(topologies/scenarios/mtcp-tree-assist.yaml): it delivers all run long, with
no stall, within 80 % of its rate without aggregation.  Before the fold's
refresh and the refused late start, the sender sent about 50 packets in the
first 3 s and nothing after."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from p4mcc.netsim.liveness import count_stalls
from p4mcc.netsim.run import run_scenario
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import load_scenario

SCENARIO = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "mtcp-tree-assist.yaml"
DURATION = 30.0

pytestmark = pytest.mark.slow  # two 30 s runs through the P4 program, about a minute each


def _run(assistance: bool) -> tuple[float, int]:
    """The slowest receiver's mean throughput (bit/s) and the stalls the liveness check saw."""
    sc = load_scenario(SCENARIO)
    sess = dataclasses.replace(sc.sessions[0], assistance=assistance)
    sc = dataclasses.replace(sc, sessions=[sess], duration=DURATION)
    run = run_scenario(sc, None, switch=choose_switch("p4", sc))
    hosts = run.net.hosts
    slowest = min(hosts[r].rx_mcast_bytes.get(sess.port, 0) for r in sess.receivers) * 8 / DURATION
    return slowest, count_stalls(run.recorder.events)


def test_mtcp_with_aggregation_keeps_80_percent_of_its_rate_without_and_never_stalls() -> None:
    on, on_stalls = _run(True)
    off, _ = _run(False)
    assert on_stalls == 0
    assert on >= 0.8 * off, (on, off)
