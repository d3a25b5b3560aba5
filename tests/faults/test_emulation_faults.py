"""Process and switch faults in Mininet (topologies/scenarios/faults/processes.yaml).

One run, several behaviours: a controller takeover, an agent SIGKILLed and
restarted, a host that goes silent and comes back, a switch SIGKILLed and
restarted empty (the controller restores tables and re-queries membership,
so traffic resumes), a graceful leave.  Needs root and Mininet.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

SCENARIO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults" / "processes.yaml"
pytestmark = [pytest.mark.root, pytest.mark.slow]
BOUND_S = 5.0


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    from emulation.run import missing_requirements

    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
    from emulation.run import run_emulation
    from scenario.model import load_scenario

    out = tmp_path_factory.mktemp("processes")
    summary = run_emulation(load_scenario(SCENARIO), out, progress=False)
    events = [(float(r["time"]), r["node"], r["event"], r["detail"]) for r in csv.DictReader((out / "events.csv").open())]
    rx: dict[str, list[tuple[float, float]]] = {}
    for r in csv.DictReader((out / "timeseries.csv").open()):
        if r["kind"] == "session" and r["metric"] == "throughput_bps":
            rx.setdefault(r["node"], []).append((float(r["time"]), float(r["value"])))
    return out, summary, events, rx


def first(events, node, what):
    ts = [t for t, n, e, _ in events if n == node and e == what]
    assert ts, (node, what, [e for e in events if e[2] not in ("join", "leave")])
    return ts[0]


def received(rx, host, t0, t1) -> float:
    return sum(v for t, v in rx.get(host, []) if t0 < t <= t1)


def test_the_run_ends_with_full_results(emu):
    out, summary, events, _ = emu
    assert (out / "summary.json").exists() and summary["sessions"]["vlmcc"]["receivers"]
    assert len([e for e in events if e[2] == "fault"]) == 5
    assert not [e for e in events if e[2] in ("agent_died", "switch_died")]  # only what the faults did


def test_agent_kill_and_restart(emu):
    _, _, events, rx = emu
    back = first(events, "r2", "restart")
    assert 6.9 <= back <= 8.0
    assert received(rx, "r2", back, back + BOUND_S) > 0


def test_receiver_crash_is_silent_then_rejoins(emu):
    _, _, events, rx = emu
    assert first(events, "r3", "crash") >= 6.0
    back = first(events, "r3", "restart")
    assert received(rx, "r3", back, back + BOUND_S) > 0


def test_switch_restart_restores_tables_and_membership(emu):
    _, _, events, rx = emu
    down = first(events, "s2", "switch_down")
    restored = [t for t, n, e, _ in events if n == "s2" and e == "restored" and t > down]
    assert restored, "the controller did not restore s2"
    assert any(e == "requeried" and n == "s2" and t >= restored[0] for t, n, e, _ in events)
    # traffic resumes within the bound after the restore, for every receiver still there
    for host in ("r1", "r2", "r3"):
        assert received(rx, host, restored[0], min(restored[0] + BOUND_S, 22.0)) > 0, host
    assert [e for e in events if e[2] == "recovered" and "faults[3]" in e[3]]


def test_controller_takeover(emu):
    out, _, events, _ = emu
    assert any(e[2] == "controller_up" and "second" in e[3] for e in events)
    from controller.events import read_events

    second = read_events(out / "controller-events.1.jsonl")
    assert {r["switch"] for r in second if r.get("event") == "synced"} == {"s1", "s2"}


def test_graceful_leave(emu):
    _, _, events, rx = emu
    t = first(events, "r1", "graceful_leave")
    assert t >= 22.0
    assert received(rx, "r1", t + 1.0, 26.0) == 0
