"""The emulation plan: exact switch, host and agent commands, without root."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.controller.program import CPU_PORT
from p4mcc.emulation.plan import PlanError, link_params, make_plan
from p4mcc.scenario.model import scenario_from_dict

BASE = {
    "name": "chain",
    "duration": 20,
    "seed": 3,
    "topology": {
        "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}},
        "switches": {"s1": {}, "s2": {}},
        "links": [
            {"a": "s1-p1", "b": "s2-p1", "rate": "2Mbps", "delay": "10ms", "queue": 20, "loss": 0.01},
            ["h1", "s1-p2"],
            {"a": "h2", "b": "s2-p2", "rate": "5Mbps", "delay": "1ms", "queue": 30},
            ["h3", "s2"],
        ],
    },
    "sessions": [{"name": "a", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2", "h3"],
                  "group": "239.1.1.1", "port": 5001, "leave_at": {"h3": 8}, "params": {"packet_size": 500}}],
    "tcp_flows": [{"name": "bulk", "src": "h1", "dst": "h2", "start": 2, "stop": 12}],
}


def plan_of(raw: dict, tmp_path: Path):
    return make_plan(scenario_from_dict(raw, known_protocols=None), tmp_path)


def test_ports_follow_the_controllers_numbering_and_name_interfaces(tmp_path: Path) -> None:
    p = plan_of(BASE, tmp_path)
    assert p.switches["s1"].ports == {1: "s1-eth1", 2: "s1-eth2"}
    # h3's end was unnumbered: it takes the lowest free port of s2
    assert p.switches["s2"].ports == {1: "s2-eth1", 2: "s2-eth2", 3: "s2-eth3"}
    assert p.hosts["h3"].switch == "s2" and p.hosts["h3"].switch_port == 3
    assert [(c.a_iface, c.b_iface) for c in p.cables] == [
        ("s1-eth1", "s2-eth1"), ("h1-eth0", "s1-eth2"), ("h2-eth0", "s2-eth2"), ("h3-eth0", "s2-eth3")]


def test_each_link_direction_is_shaped_exactly_once(tmp_path: Path) -> None:
    p = plan_of(BASE, tmp_path)
    bottleneck = "rate=2000000bps,delay=10ms,queue=20,loss=0.01"
    access = "rate=5000000bps,delay=1ms,queue=30"
    s1, s2 = p.switches["s1"].link_flags, p.switches["s2"].link_flags
    # switch-switch: each side shapes its own egress, no ingress shaping
    assert f"1:egress:{bottleneck}" in s1 and f"1:egress:{bottleneck}" in s2
    assert not any(f.startswith("1:ingress") for f in s1 + s2)
    # host-switch: the switch shapes both directions of its port
    assert f"2:egress:{access}" in s2 and f"2:ingress:{access}" in s2
    for flags in (s1, s2):
        directions = [":".join(f.split(":")[:2]) for f in flags]
        assert len(directions) == len(set(directions))
    assert len(s1) == 3 and len(s2) == 5  # 1 + 2 + 0 on s1's side; 1 + 2 + 2 on s2's


def test_switch_command_is_p4mcc_switch_with_every_port(tmp_path: Path) -> None:
    plan = plan_of(BASE, tmp_path)
    cmd = plan.switches["s2"].command(Path("p4src/mcc.p4"))
    assert cmd[1:5] == ["-m", "p4mcc.cli.main", "switch", "p4src/mcc.p4"]
    addrs = [sw.grpc_addr for sw in plan.switches.values()]
    assert cmd[cmd.index("--grpc-server-addr") + 1] == plan.switches["s2"].grpc_addr
    assert len(set(addrs)) == len(addrs) and all(a.startswith("127.0.0.1:") for a in addrs)
    assert cmd[cmd.index("--cpu-port") + 1] == str(CPU_PORT)
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-i"] == ["1@s2-eth1", "2@s2-eth2", "3@s2-eth3"]


def test_agents_start_and_stop_at_scenario_times(tmp_path: Path) -> None:
    p = plan_of(BASE, tmp_path)
    by_host = {a.host: a for a in p.agents}
    assert by_host["h1"].role == "send" and (by_host["h1"].start, by_host["h1"].stop) == (0, 20)
    assert (by_host["h3"].start, by_host["h3"].stop) == (0, 8)
    argv = by_host["h3"].argv
    assert argv[argv.index("--sender") + 1] == "10.0.0.1"
    assert argv[argv.index("--local") + 1] == "10.0.0.3"
    assert argv[argv.index("--duration") + 1] == "8.000"
    assert "packet_size=500" in argv
    assert [(t.start, t.stop, t.dst_ip) for t in p.tcp] == [(2, 12, "10.0.0.2")]


def test_a_webrc_session_edited_after_loading_runs_at_a_rate_its_sender_link_carries(tmp_path: Path) -> None:
    # A session swapped to WEBRC after loading (as bench/faults.py does) is
    # fitted where the plan is made: every agent of the session gets the same
    # session rate, under h2's 5 Mbit/s link, and the controller's plan sees it.
    import dataclasses

    from p4mcc.hosts.webrc import SENDER_LINK_SHARE, WebrcParams, wire_rate_bps

    sc = scenario_from_dict({**BASE, "sessions": [{**BASE["sessions"][0], "sender": "h2",
                                                   "receivers": ["h1", "h3"], "params": {}}]},
                            known_protocols=None)
    sc = dataclasses.replace(sc, sessions=[dataclasses.replace(s, protocol="webrc") for s in sc.sessions])
    p = make_plan(sc, tmp_path)
    rates = {a.host: [x for x in a.argv if x.startswith("session_rate_bps=")] for a in p.agents}
    assert len({tuple(v) for v in rates.values()}) == 1 and all(rates.values())
    rate = float(rates["h2"][0].split("=")[1])
    assert wire_rate_bps(WebrcParams(session_rate_bps=rate)) <= SENDER_LINK_SHARE * 5e6
    assert p.scenario.sessions[0].params == {"session_rate_bps": rate}


def test_bursty_loss_is_refused_naming_the_link(tmp_path: Path) -> None:
    raw = {**BASE, "topology": {**BASE["topology"], "links": [
        {"a": "s1-p1", "b": "s2-p1", "loss": {"model": "gilbert", "p_gb": 0.01, "p_bg": 0.3}}, *BASE["topology"]["links"][1:]]}}
    with pytest.raises(PlanError, match=r"topology\.links\[0\]\.loss"):
        plan_of(raw, tmp_path)


def test_link_params_without_queue_limit() -> None:
    from p4mcc.scenario.model import Link, LinkEnd

    ln = Link(LinkEnd("s1", 1), LinkEnd("s2", 1), rate_bps=1e6, delay_s=0.0025, queue_packets=None, queue_bytes=15000)
    assert link_params(ln, "x") == "rate=1000000bps,delay=2.5ms,queue=none,queue_bytes=15000"


def test_a_port_in_use_is_skipped_with_its_thrift_port() -> None:
    import socket

    from p4mcc.emulation.plan import THRIFT_PORT_OFFSET, switch_ports

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        busy = held.getsockname()[1]
        if busy + THRIFT_PORT_OFFSET > 65535 or busy < 1024:
            pytest.skip("the port the kernel gave leaves no room for its Thrift port")
        assert busy not in switch_ports(3, base=busy)
        # a P4Runtime port whose Thrift port is taken is skipped too
        assert busy - THRIFT_PORT_OFFSET not in switch_ports(2, base=busy - THRIFT_PORT_OFFSET)
