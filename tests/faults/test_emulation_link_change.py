"""A running link changes in Mininet without netem (topologies/scenarios/faults/link-change.yaml).

On the built-in switch the change goes to the switch's own link
emulation over its control socket (p4switch/linkctl.py), exact in rate,
delay and loss, and back to the scenario's values after ``for``.  The
session here is TFMCC: while the s1-s2 link is at 1 Mbit/s it cannot
receive faster than that, and after the restore it is back to 80 % of
its former rate within the fault bench's 5 s bound.  Needs root and Mininet.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from p4mcc.scenario.model import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults" / "link-change.yaml"
pytestmark = [pytest.mark.root, pytest.mark.slow]
BOUND_S = 5.0
#: TFMCC's slow start on this path ends within about 5 s; the recovery
#: rule's baseline is the 5 s before the change
CHANGE_AT = 12.0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from p4mcc.emulation.run import missing_requirements, run_emulation

    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
    sc = load_scenario(SCENARIO)
    sess = dataclasses.replace(sc.sessions[0], name="tfmcc", protocol="tfmcc", params={})
    # the change comes once TFMCC has held its rate for the recovery rule's baseline
    fault = dataclasses.replace(sc.faults[0], at=CHANGE_AT)
    sc = dataclasses.replace(sc, sessions=[sess], faults=[fault], capture=None,
                             duration=CHANGE_AT + fault.duration + 2 * BOUND_S)
    out = tmp_path_factory.mktemp("link-change")
    run_emulation(sc, out, target="builtin", progress=False, plots=False)
    events = [(float(r["time"]), r["node"], r["event"], r["detail"]) for r in csv.DictReader((out / "events.csv").open())]
    rx: dict[str, list[tuple[float, float]]] = {}
    for r in csv.DictReader((out / "timeseries.csv").open()):
        if r["kind"] == "session" and r["metric"] == "throughput_bps":
            rx.setdefault(r["node"], []).append((float(r["time"]), float(r["value"])))
    return sc, events, rx


def test_the_change_and_the_restore_reach_the_switches_link_emulation(run) -> None:
    _sc, events, _rx = run
    rows = [d for _t, n, e, d in events if e == "link_change" and n == "s1--s2"]
    assert rows == ["rate=1000000bps,delay=40000us,loss=0.01", "restored"], rows


def test_while_changed_no_receiver_gets_more_than_the_new_rate(run) -> None:
    sc, _events, rx = run
    f = sc.faults[0]
    # from one second after the change (the queue ahead of it drains) to the restore
    for host in sc.sessions[0].receivers:
        during = [v for t, v in rx[host] if f.at + 1.0 < t <= f.at + f.duration]
        assert during and max(during) <= 1e6 * 1.15, (host, during)


def test_tfmcc_is_back_within_five_seconds_of_the_restore(run) -> None:
    sc, events, rx = run
    recovered = [d for _t, _n, e, d in events if e == "recovered"]
    assert not [e for e in events if e[2] == "not_recovered"], events
    assert recovered, events
    after = float(recovered[0].split("after=")[1].rstrip("s"))
    assert after <= BOUND_S, recovered
    f = sc.faults[0]
    back = f.at + f.duration + BOUND_S
    for host in sc.sessions[0].receivers:
        before = [v for t, v in rx[host] if f.at - 5.0 < t <= f.at]
        later = [v for t, v in rx[host] if back - 1.0 < t <= back + 1.0]
        # the session ran well above the changed link's 1 Mbit/s, and is there again
        assert sum(before) / len(before) > 2e6, (host, before)
        assert sum(later) / len(later) >= 0.8 * sum(before) / len(before), (host, before, later)
