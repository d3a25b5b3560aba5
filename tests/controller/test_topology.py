"""Loading topologies: tutorials topology.json, port naming, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from p4mcc.controller.topology import TopologyError, from_tutorials_dict, parse_endpoint
from p4mcc.scenario.control import load_topology

DATA = Path(__file__).parent / "data"


def test_tutorials_triangle_ports_and_hosts() -> None:
    topo = load_topology(DATA / "tutorials_triangle.json")
    assert sorted(topo.hosts) == ["h1", "h2", "h3"]
    assert topo.hosts["h1"].ip == "10.0.1.1"  # prefix length dropped
    assert topo.hosts["h2"].mac == "08:00:00:00:02:22"
    assert topo.port_map("s1") == {1: "h1", 2: "s2", 3: "s3"}
    assert topo.port_map("s3") == {1: "h3", 2: "s1", 3: "s2"}
    assert topo.attachment("h3") == ("s3", 1)
    link = topo.graph.edges["s1", "s3"]["link"]
    assert link.delay_ms == 5.0


def test_tutorials_switch_addresses_follow_launcher_numbering() -> None:
    topo = load_topology(DATA / "tutorials_triangle.json")
    assert [(s.address, s.device_id) for s in topo.switches.values()] == [
        ("127.0.0.1:50051", 0),
        ("127.0.0.1:50052", 1),
        ("127.0.0.1:50053", 2),
    ]


@pytest.mark.parametrize(
    "text,expected", [("s1-p2", ("s1", 2)), ("h1", ("h1", -1)), ("sw_a-p10", ("sw_a", 10))]
)
def test_parse_endpoint(text: str, expected: tuple[str, int]) -> None:
    assert parse_endpoint(text) == expected


def _base() -> dict:
    return {"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s1-p1"]]}


def test_defaults_for_missing_host_addresses() -> None:
    topo = from_tutorials_dict({"hosts": {"h7": {}}, "switches": {"s1": {}}, "links": [["h7", "s1-p4"]]})
    assert topo.hosts["h7"].ip == "10.0.0.7"
    assert topo.hosts["h7"].mac == "08:00:00:00:00:07"


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d["links"].append(["s1-p1", "h2"]), "unknown node 'h2'"),
        (lambda d: d["links"].append(["h1", "s1-p3"]), "host h1 already has a link"),
        (lambda d: (d["hosts"].update(h2={}), d["links"].append(["h2", "s1-p1"])), "port s1-p1 already links to h1"),
        (lambda d: (d["hosts"].update(h2={}), d["links"].append(["h2", "s1"])), "needs a port"),
        (lambda d: d["hosts"]["h1"].update(ip="10.0.0.300"), "host h1: bad ip"),
        (lambda d: d["links"].append(["s1-p2"]), "expected [a, b]"),
    ],
)
def test_bad_topology_names_the_item(mutate, message: str) -> None:
    data = _base()
    mutate(data)
    with pytest.raises(TopologyError, match=re.escape(message)):
        from_tutorials_dict(data)


def test_disconnected_switches_rejected() -> None:
    data = {
        "hosts": {"h1": {}, "h2": {}},
        "switches": {"s1": {}, "s2": {}},
        "links": [["h1", "s1-p1"], ["h2", "s2-p1"]],
    }
    with pytest.raises(TopologyError, match=r"switches are not connected: \[\['s1'\], \['s2'\]\]"):
        from_tutorials_dict(data)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="cannot read"):
        load_topology(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(TopologyError, match="bad.json: not valid"):
        load_topology(bad)


def test_scenario_topology_section_is_read(tmp_path: Path) -> None:
    path = tmp_path / "scn.json"
    path.write_text(json.dumps({"name": "x", "topology": _base()}))
    topo = load_topology(path)
    assert topo.attachment("h1") == ("s1", 1)
