"""The scenario format: units, defaults, tutorials topology.json, generators, field-naming errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4mcc.p4switch.units import parse_fraction, parse_rate, parse_size, parse_time
from p4mcc.scenario.model import GilbertElliott, ScenarioError, load_scenario, scenario_from_dict

TOPO = {
    "hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11"},
              "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22"},
              "h3": {"ip": "10.0.3.3/24", "mac": "08:00:00:00:03:33"}},
    "switches": {"s1": {}, "s2": {}},
    "links": [["h1", "s1-p1"], ["s1-p2", "s2-p2", "5ms", 10],
              {"a": "h2", "b": "s2-p1", "rate": "20Mbps", "delay": "2ms", "loss": "1%",
               "queue": {"packets": 50, "bytes": "64KiB"}},
              {"a": "h3", "b": "s2", "loss": {"model": "gilbert", "p_gb": 0.01, "p_bg": 0.3}}],
}


def doc(**over):
    d = {"name": "t", "duration": 30, "seed": 4, "topology": json.loads(json.dumps(TOPO)),
         "sessions": [{"name": "a", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2", "h3"],
                       "group": "239.1.1.1", "port": 5001, "params": {"x": 1}}],
         "tcp_flows": [{"src": "h1", "dst": "h3"}]}
    d.update(over)
    return d


def problems(d, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as ei:
        scenario_from_dict(d, known_protocols={"tfmcc", "webrc"}, **kw)
    return ei.value.problems


def test_units() -> None:
    assert parse_rate("10Mbps") == 10e6 and parse_rate("1.5Gbit") == 1.5e9 and parse_rate(500) == 500
    assert parse_time("20ms") == pytest.approx(0.02) and parse_time("5us") == pytest.approx(5e-6)
    assert parse_time(3) == 3.0
    assert parse_fraction("2.5%") == pytest.approx(0.025) and parse_fraction(0.1) == 0.1
    assert parse_size("64KiB") == 65536 and parse_size("1.5KB") == 1500
    for bad, fn in (("10 furlongs", parse_rate), ("5 parsecs", parse_time), ("150%", parse_fraction)):
        with pytest.raises(ValueError):
            fn(bad)


def test_full_document_parses_with_links_in_both_styles() -> None:
    sc = scenario_from_dict(doc(), known_protocols={"tfmcc"})
    t = sc.topology
    assert set(t.hosts) == {"h1", "h2", "h3"} and t.hosts["h2"].ip == "10.0.2.2"
    assert t.hosts["h1"].prefix_len == 24
    l1 = t.links[1]  # tutorials list form: latency string, bandwidth in Mb/s
    assert (str(l1.a), str(l1.b), l1.delay_s, l1.rate_bps) == ("s1-p2", "s2-p2", 0.005, 10e6)
    l2 = t.links[2]
    assert (l2.rate_bps, l2.loss, l2.queue_packets, l2.queue_bytes) == (20e6, 0.01, 50, 65536)
    assert t.links[3].loss == GilbertElliott(0.01, 0.3)
    assert t.links[3].b.port is None
    s = sc.sessions[0]
    assert (s.protocol, s.receivers, s.session_id, s.assistance, s.params) == (
        "tfmcc", ("h2", "h3"), 1, True, {"x": 1})
    assert sc.tcp_flows[0].name == "tcp1" and sc.tcp_flows[0].mss == 1460
    assert (sc.duration, sc.seed, sc.metrics_interval) == (30.0, 4, 0.5)


def test_unknown_receiver_is_named_by_path() -> None:
    d = doc()
    d["sessions"].append({"protocol": "tfmcc", "sender": "h1", "receivers": ["h9"]})
    assert "sessions[1].receivers[0]: unknown host 'h9'" in problems(d)


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["topology"]["links"][2].update(rate="fast"), "topology.links[2].rate: cannot read 'fast'"),
    (lambda d: d["topology"]["links"][0].__setitem__(1, "s7-p1"), "topology.links[0].b: unknown node 's7'"),
    (lambda d: d["topology"]["hosts"]["h2"].update(ip="300.1.1.1"), "topology.hosts.h2.ip: not an IPv4 address"),
    (lambda d: d["topology"]["hosts"]["h2"].update(mac="zz"), "topology.hosts.h2.mac: not a MAC address"),
    (lambda d: d["sessions"][0].update(protocol="tcpx"), "sessions[0].protocol: unknown protocol 'tcpx'"),
    (lambda d: d["sessions"][0].update(group="10.1.1.1"), "sessions[0].group: 10.1.1.1 is not a multicast address"),
    (lambda d: d["sessions"][0].update(sender="h5"), "sessions[0].sender: unknown host 'h5'"),
    (lambda d: d["sessions"][0].update(start=10, stop=5), "sessions[0].stop: must be after start"),
    (lambda d: d["sessions"][0].update(port=70000), "sessions[0].port: expected a UDP port"),
    (lambda d: d["sessions"][0].update(colour="red"), "sessions[0].colour: unknown field"),
    (lambda d: d["sessions"][0].update(assistance="maybe"), "sessions[0].assistance: expected true/false"),
    (lambda d: d["tcp_flows"][0].update(dst="h1"), "tcp_flows[0].dst: same host as src"),
    (lambda d: d["tcp_flows"][0].update(src="nope"), "tcp_flows[0].src: unknown host 'nope'"),
    (lambda d: d["tcp_flows"][0].update(rto="bsd"), "tcp_flows[0].rto: expected one of linux, rfc6298, got 'bsd'"),
    (lambda d: d["tcp_flows"][0].update(recovery="cubic"), "tcp_flows[0].recovery: expected one of prr, rfc6675, got 'cubic'"),
    (lambda d: d.update(duration=-1), "duration: must be a positive, finite number of seconds"),
    (lambda d: d.update(duration=float("inf")), "duration: inf is not a finite number"),
    (lambda d: d["topology"]["links"][2].update(delay=float("nan")), "topology.links[2].delay: nan is not a finite number"),
    (lambda d: d.update(seed="x"), "seed: expected an integer 0..2**64-1"),
    (lambda d: d.update(tcp_jitter="1s"), "tcp_jitter: must be between 0 and 100ms"),
    (lambda d: d.update(tcp_jitter="soon"), "tcp_jitter: cannot read 'soon'"),
    (lambda d: d.update(agent_jitter=-0.001), "agent_jitter: must be between 0 and 100ms"),
    (lambda d: d["topology"]["links"].append(["h1", "s2"]), "topology.links[4].a: host 'h1' already has a link"),
    (lambda d: d["topology"]["links"].append(["s1-p1", "s2"]), "topology.links[4].a: port s1-p1 is already used"),
    (lambda d: d["topology"]["links"].append(["s2", "s1"]), "topology.links[4]: parallel link between s2 and s1"),
    (lambda d: d["topology"]["links"][2].update(queue={"packets": 0}), "topology.links[2].queue.packets: must be at least 1"),
    (lambda d: d["topology"]["links"][3]["loss"].pop("p_bg"), "topology.links[3].loss.p_bg: required"),
])
def test_errors_name_the_field(mutate, expected: str) -> None:
    d = doc()
    mutate(d)
    assert any(p.startswith(expected) for p in problems(d)), problems(d)


def test_every_problem_is_reported_at_once() -> None:
    d = doc()
    d["sessions"][0]["receivers"] = ["h9", "h8"]
    d["tcp_flows"][0]["dst"] = "h7"
    probs = problems(d)
    assert {"sessions[0].receivers[0]: unknown host 'h9'", "sessions[0].receivers[1]: unknown host 'h8'",
            "tcp_flows[0].dst: unknown host 'h7'"} <= set(probs)


def test_receiver_patterns_expand_and_exclude_the_sender() -> None:
    d = doc()
    d["sessions"][0]["receivers"] = ["h*"]
    sc = scenario_from_dict(d, known_protocols=None)
    assert sc.sessions[0].receivers == ("h2", "h3")


def test_tutorials_topology_json_is_a_scenario(tmp_path: Path) -> None:
    p = tmp_path / "topology.json"
    p.write_text(json.dumps({
        "hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
                         "commands": ["route add default gw 10.0.1.10 dev eth0"]},
                  "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22", "commands": []}},
        "switches": {"s1": {"runtime_json": "pod-topo/s1-runtime.json"}, "s2": {}},
        "links": [["h1", "s1-p1"], ["h2", "s2-p1"], ["s1-p2", "s2-p2", "0ms", 5]],
    }))
    sc = load_scenario(p)
    assert sc.sessions == [] and set(sc.topology.switches) == {"s1", "s2"}
    assert sc.topology.switches["s1"].options["runtime_json"] == "pod-topo/s1-runtime.json"
    assert sc.topology.links[2].rate_bps == 5e6
    assert sc.topology.hosts["h1"].commands == ("route add default gw 10.0.1.10 dev eth0",)


def test_topology_may_be_a_file_next_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "net.json").write_text(json.dumps(TOPO))
    (tmp_path / "s.yaml").write_text("duration: 5\ntopology: net.json\n")
    assert set(load_scenario(tmp_path / "s.yaml").topology.hosts) == {"h1", "h2", "h3"}


def test_generated_topology() -> None:
    sc = scenario_from_dict({"duration": 5, "topology": {"generate": {
        "kind": "kary_tree", "k": 4, "receivers": 64, "loss_distribution": "tfmcc"}},
        "sessions": [{"protocol": "tfmcc", "sender": "snd", "receivers": ["r*"]}]},
        known_protocols=None)
    assert len(sc.sessions[0].receivers) == 64
    assert len(sc.topology.switches) == 1 + 4 + 16
    bad = {"duration": 5, "topology": {"generate": {"kind": "ring"}}}
    with pytest.raises(ScenarioError, match=r"topology.generate.kind: unknown generator 'ring'"):
        scenario_from_dict(bad)


def test_unreadable_or_invalid_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("topology: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML/JSON"):
        load_scenario(tmp_path / "bad.yaml")


def test_shipped_scenarios_are_valid() -> None:
    root = Path(__file__).resolve().parents[2] / "topologies" / "scenarios"
    files = sorted(root.glob("*.yaml"))
    assert files, "no scenarios shipped"
    for f in files:
        text = f.read_text().splitlines()
        assert text[0].startswith("#"), f"{f.name} must say in its first lines what it demonstrates"
        load_scenario(f, known_protocols=None)
