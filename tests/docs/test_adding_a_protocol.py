"""docs/adding-a-protocol.md's worked example is a whole protocol with a named rule, and it runs.

The test loads the example's two blocks (the paper cores, then the rule and
its profiles) from the page as one module, registers it from here (no p4mcc
file is touched) and runs a scenario with it in the simulator: every
receiver gets the beacons and its reports (the periodic ones and the leaving
one sent through ``close`` at ``leave_at``) reach the sender.  The scenario
parser, the registry, the simulator's agent factory, the controller's
desired state and the results layer all accept it.  The rule is composed
only where its profile lists it and changes what the receiver sends, and
the page's ``--explain`` output is the one the code prints.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from p4mcc.cli.main import main
from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import Endpoint, node_id
from p4mcc.hosts.explain import explain_lines
from p4mcc.netsim.run import run_scenario
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import scenario_from_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-protocol.md"


def _example_block(name: str, lang: str = "python") -> str:
    m = re.search(rf"<!-- example: beacon {name} -->\s*```{lang}\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"the worked example's {name} block is missing from docs/adding-a-protocol.md"
    return m.group(1)


def _example_source() -> str:
    """The cores, then the rule and its profiles: one module, as the page says."""
    return _example_block("module") + "\n\n" + _example_block("rule")


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
    # The session runs `default`: the receivers are the core composed with the rule.
    assert type(r1).__name__ == "BeaconReceiver[report_gaps]" and isinstance(r1, beacon.ReportGaps)
    assert type(snd) is beacon.BeaconSender  # no rule changes the sender
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


def _receiver(profile: str, switches: dict[str, str] | None = None) -> Endpoint:
    proto = registry.get("beacon")
    cfg = registry.SessionConfig(session_id=7, group="239.8.8.1", port=5800, sender="10.8.0.1",
                                 local="10.8.1.1", params={"report_every": 10},
                                 rules=proto.resolve_rules(profile, switches))
    return proto.receiver(cfg)


def _beacons(beacon: ModuleType, rcvr: Endpoint, seqs: list[int]) -> list[list[tuple[int, int]]]:
    """Feed one beacon per seq; per beacon, the (rcvr_id, received) of each report it caused."""
    rcvr.start(0.0)
    out = []
    for i, seq in enumerate(seqs):
        data = beacon.BeaconData(session_id=7, seq=seq, timestamp=0, rate_pps=20).encode()
        rcvr.receive_datagram(data, ("10.8.0.1", 5800), 0.05 * (i + 1))
        sent = rcvr.datagrams_to_send()
        assert all(d.dest == ("10.8.0.1", 5800) for d in sent)
        reports = [wire.decode(d.data) for d in sent]
        assert all(isinstance(m, beacon.BeaconReport) and m.leaving == 0 for m in reports)
        out.append([(m.rcvr_id, m.received) for m in reports])
    return out


def test_profiles_list_the_rule_by_name(beacon: ModuleType) -> None:
    assert dict(beacon.RULES.profiles) == {"paper": (), "default": ("report_gaps",)}
    proto = registry.get("beacon")
    assert proto.resolve_rules("default", {"report_gaps": "off"}) == ()
    assert proto.resolve_rules("paper", {"report_gaps": "on"}) == ("report_gaps",)
    assert type(_receiver("paper")) is beacon.BeaconReceiver


def test_the_rule_reports_a_gap_at_once_and_the_paper_waits(beacon: ModuleType) -> None:
    me = node_id("10.8.1.1")
    seqs = [0, 1, 2, 5, 6, 7, 8, 9, 10, 11]  # 3 and 4 lost: the 4th beacon heard follows a gap
    with_rule = _beacons(beacon, _receiver("default"), seqs)
    assert with_rule[3] == [(me, 4)]  # the gap, at once
    assert with_rule[9] == [(me, 10)]  # and the core's every-10th report still runs below it
    assert sum(map(len, with_rule)) == 2
    for rcvr in (_receiver("paper"), _receiver("default", {"report_gaps": "off"})):
        without = _beacons(beacon, rcvr, seqs)
        assert without[3] == [] and without[9] == [(me, 10)] and sum(map(len, without)) == 1


def test_the_pages_explain_output_is_the_codes(beacon: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    shown = _example_block("explain", "text").splitlines()
    assert explain_lines("beacon", "default") == shown
    assert main(["host", "send", "--proto", "beacon", "--profile", "default", "--explain"]) == 0
    assert capsys.readouterr().out.splitlines() == shown
    assert main(["host", "send", "--proto", "beacon", "--profile", "paper", "--explain"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["  no rule: the paper's cores run as they are"]
