"""Shared helpers for the fault tests: run a scenario of topologies/scenarios/faults in the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

SCENARIOS = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults"


@pytest.fixture(scope="module")
def sim_fault():
    """sim_fault(name, switch="p4"|"model") -> (SimRun, events without joins/leaves); cached per module."""
    from p4mcc.netsim.run import run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import load_scenario

    cache: dict[tuple[str, str], tuple] = {}

    def run(name: str, switch: str = "p4"):
        if (name, switch) not in cache:
            sc = load_scenario(SCENARIOS / f"{name}.yaml")
            r = run_scenario(sc, switch=choose_switch(switch, sc))
            ev = [e for e in sorted(r.recorder.events) if e[2] not in ("join", "leave")]
            cache[(name, switch)] = (r, ev)
        return cache[(name, switch)]

    return run
