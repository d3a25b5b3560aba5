"""docs/adding-a-protocol.md's worked example is a whole protocol, and it runs.

The test loads the example module's text from the page, registers it from
here (no p4mcc file is touched) and runs a scenario with it in the
simulator: every receiver gets the beacons and its reports (the periodic
ones and the leaving one sent through ``close`` at ``leave_at``) reach the
sender.  The scenario parser, the registry, the simulator's agent factory,
the controller's desired state and the results layer all accept it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from p4mcc.hosts import registry
from p4mcc.hosts.core import node_id
from p4mcc.netsim.run import run_scenario
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import scenario_from_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-protocol.md"


def _example_source() -> str:
    text = DOC.read_text()
    m = re.search(r"<!-- example: beacon module -->\s*```python\n(.*?)```", text, re.S)
    assert m, "the worked example's module is missing from docs/adding-a-protocol.md"
    return m.group(1)


@pytest.fixture()
def beacon(tmp_path: Path) -> Iterator[ModuleType]:
    path = tmp_path / "beacon_example.py"
    path.write_text(_example_source())
    spec = importlib.util.spec_from_file_location("beacon_example", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["beacon_example"] = mod
    spec.loader.exec_module(mod)
    registry.register(registry.Protocol("beacon", "beacon_example", "BeaconParams", "BeaconSender",
                                        "BeaconReceiver", "the docs' worked example"))
    try:
        yield mod
    finally:
        registry.unregister("beacon")
        sys.modules.pop("beacon_example", None)


def test_the_worked_example_runs_as_a_protocol(beacon: ModuleType) -> None:
    assert "beacon" in registry.names()
    sc = scenario_from_dict({
        "name": "beacon", "duration": 6.0, "seed": 2,
        "topology": {"hosts": {"snd": {"ip": "10.8.0.1/24"}, "r1": {"ip": "10.8.1.1/24"},
                               "r2": {"ip": "10.8.1.2/24"}},
                     "switches": {"s1": {}},
                     "links": [["snd", "s1"], ["r1", "s1"], ["r2", "s1"]]},
        "sessions": [{"name": "b", "protocol": "beacon", "sender": "snd", "receivers": ["r1", "r2"],
                      "group": "239.8.8.1", "port": 5800, "params": {"rate_pps": 50, "report_every": 25},
                      "leave_at": {"r2": 3.0}}],
    })
    run = run_scenario(sc, switch=model_choice())
    snd, r1, r2 = (run.agents[f"b/{h}"] for h in ("snd", "r1", "r2"))
    assert isinstance(snd, beacon.BeaconSender)
    # 50 beacons/s: r1 hears about 6 s of them, r2 about 3 s (its leave at 3 s).
    assert 250 <= r1.received <= 300 and 125 <= r2.received <= 150
    id1, id2 = node_id("10.8.1.1"), node_id("10.8.1.2")
    # r1's last periodic report (every 25 beacons); r2's leaving report has its exact count.
    assert snd.counts[id1] == r1.received - r1.received % 25
    assert snd.counts[id2] == r2.received and snd.left == {id2}
    # The results layer summarised it like any protocol: 50 beacons/s of 24 bytes.
    summary = run.summary["sessions"]["b"]
    assert summary["protocol"] == "beacon"
    assert 0.8 * 9600 <= summary["receivers"]["r1"]["throughput_bps"] <= 1.2 * 9600
    reports = r1.received // 25 + r2.received // 25 + 1
    assert summary["feedback_msgs_at_sender"] == reports
    # Unknown to the P4 program: plain replication, no assistance.
    assert registry.get("beacon").mode == "off"
    assert registry.get("beacon").session_groups("239.8.8.1") == ("239.8.8.1",)
