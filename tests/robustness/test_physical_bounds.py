"""Every time, rate, delay, queue and count in a scenario has a physical bound.

A figure beyond it (``1e300`` s, a queue of 10^12 packets) is a typing slip
that would run without end or fill memory; the scenario is refused with one
line naming the field, the bound and the figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from p4mcc.scenario import bounds
from p4mcc.scenario.faults import MAX_INSTANCES
from p4mcc.scenario.model import ScenarioError, scenario_from_dict

DEMO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "demo.yaml"
BIG = 1e300


def demo() -> dict:
    return yaml.safe_load(DEMO.read_text())


def problems_after(change: Callable[[dict], Any]) -> list[str]:
    doc = demo()
    change(doc)
    with pytest.raises(ScenarioError) as ei:
        scenario_from_dict(doc, base=DEMO.parent)
    return ei.value.problems


def link0(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d["topology"]["links"][0].update(kw)


def session0(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d["sessions"][0].update(kw)


def fault(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d.update(faults=[{"at": 1, **kw}])


def generated(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d.update(topology={"generate": kw}, sessions=[], tcp_flows=[])


CASES = {
    "link-delay-1e300": (link0(delay=BIG), "topology.links[0].delay: must be at most 60 s, got 1e+300"),
    "link-delay-default": (lambda d: d["topology"]["link_defaults"].update(delay="1e300s"),
                           "topology.links[1].delay: must be at most 60 s, got 1e+300"),
    "queue-1e12-packets": (link0(queue=10**12),
                           "topology.links[0].queue.packets: must be at most 1,000,000, got 1e+12"),
    "queue-1e12-bytes": (link0(queue={"bytes": "1e12"}),
                         "topology.links[0].queue.bytes: must be at most 1,500,000,000, got 1e+12"),
    "session-start": (session0(start=BIG), "sessions[0].start: must be at most 86,400 s, got 1e+300"),
    "session-stop": (session0(stop=BIG), "sessions[0].stop: must be at most 86,400 s, got 1e+300"),
    "join-at": (session0(join_at={"h4": BIG}), "sessions[0].join_at.h4: must be at most 86,400 s, got 1e+300"),
    "join-at-negative": (session0(join_at={"h4": -1}), "sessions[0].join_at.h4: must not be negative"),
    "tcp-start": (lambda d: d["tcp_flows"][0].update(start=BIG),
                  "tcp_flows[0].start: must be at most 86,400 s, got 1e+300"),
    "tcp-start-negative": (lambda d: d["tcp_flows"][0].update(start=-1), "tcp_flows[0].start: must not be negative"),
    "tcp-rwnd": (lambda d: d["tcp_flows"][0].update(rwnd="1e12"),
                 "tcp_flows[0].rwnd: must be at most 1,073,741,824 bytes (TCP's largest window), got 1e+12"),
    "metrics-interval": (lambda d: d.update(metrics_interval=BIG),
                         "metrics_interval: must be at most 86,400 s, got 1e+300"),
    "steady-window": (lambda d: d.update(steady_window=[0, BIG]),
                      "steady_window: the end must be at most 86,400 s, got 1e+300"),
    "seed": (lambda d: d.update(seed=10**30), "seed: expected an integer 0..2**64-1, got 10000000000000000"),
    "fault-until": (fault(type="link_down", target=["s1", "s2"], every=1, until=BIG),
                    "faults[0].until: must be at most 86,400 s, got 1e+300"),
    "fault-for": (fault(type="link_down", target=["s1", "s2"], **{"for": BIG}),
                  "faults[0].for: must be at most 86,400 s, got 1e+300"),
    "fault-count": (fault(type="link_down", target=["s1", "s2"], every=1, count=10**12),
                    f"faults[0].count: expected an integer 1..{MAX_INSTANCES}, got 1000000000000"),
    "link-change-delay": (fault(type="link_change", target=["s1", "s2"], delay=BIG),
                          "faults[0].delay: must be at most 60 s, got 1e+300"),
    "link-change-rate": (fault(type="link_change", target=["s1", "s2"], rate="1e15"),
                         "faults[0].rate: must be at most 100,000,000,000 b/s, got 1e+15"),
    "link-change-queue": (fault(type="link_change", target=["s1", "s2"], queue=10**12),
                          "faults[0].queue: expected packets 1..1,000,000, got 1000000000000"),
    "false-report-claim": (fault(type="false_report", target="h4", claim="1e300"),
                           "faults[0].claim: must be at most 100,000,000,000 b/s, got 1e+300"),
    "disk-free": (fault(type="disk_full", free="1e300"), "faults[0].free: must be at most 1,000,000,000,000,000 bytes"),
    "membership": (lambda d: d.update(membership={"timeout": BIG}),
                   "membership.timeout: must be at most 86,400 s, got 1e+300"),
    "policing-pps": (lambda d: d.update(policing={"feedback_pps": 10**12}),
                     "policing.feedback_pps: expected auto, off or packets/s 1..1e+06, got 1000000000000"),
    "policing-burst": (lambda d: d.update(policing={"burst": 10**12}),
                       "policing.burst: expected packets 1..1,000,000, got 1000000000000"),
    "generator-delay": (generated(kind="dumbbell", receivers=2, delay=BIG),
                        "topology.generate.delay: must be at most 60 s, got 1e+300"),
    "generator-queue": (generated(kind="dumbbell", receivers=2, queue=10**12),
                        "topology.generate.queue.packets: must be at most 1,000,000, got 1e+12"),
    "tree-branch-delay": (generated(kind="tree", branches=[{"delay": BIG}]),
                          "topology.generate.branches[0].delay: must be at most 60 s, got 1e+300"),
    "tree-branch-rate": (generated(kind="tree", branches=[{"rate": "1e15"}]),
                         "topology.generate.branches[0].rate: must be at most 100,000,000,000 b/s, got 1e+15"),
}


@pytest.mark.parametrize("change,line", CASES.values(), ids=CASES.keys())
def test_a_figure_beyond_its_bound_is_refused_by_field(change, line) -> None:
    problems = problems_after(change)
    assert any(p.startswith(line) for p in problems), problems


def test_each_bound_admits_its_own_value() -> None:
    """The bounds are inclusive: the largest figure a field takes still loads."""
    doc = demo()
    doc["topology"]["links"][0].update(delay=bounds.MAX_DELAY_S, queue=bounds.MAX_QUEUE_PACKETS)
    doc["sessions"][1].update(start=bounds.MAX_TIME_S - 1, stop=bounds.MAX_TIME_S)
    doc["tcp_flows"][0].update(rwnd=bounds.MAX_WINDOW_BYTES)
    doc["seed"] = bounds.MAX_SEED
    sc = scenario_from_dict(doc, base=DEMO.parent)
    assert sc.topology.links[0].delay_s == bounds.MAX_DELAY_S
    assert sc.sessions[1].stop == bounds.MAX_TIME_S
