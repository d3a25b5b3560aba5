"""Topologies with more hosts than the program's route table holds.

``mcc.p4``'s ``ipv4_fwd`` and ``arp_proxy`` hold 1024 entries.  Beyond one
/32 per host, the controller compresses the routes of a tree of switches
(``controller/routes.py``); a switch that would still overflow is refused
up front with one clear line.  The tests shrink the tables (the program's
and the controller's view of them) to a few entries so a small tree
stands in for a 10^4-receiver one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from p4mcc.controller.program import MCC
from p4mcc.netsim import p4_switch
from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import SwitchUnavailable, choose_switch
from p4mcc.scenario.model import scenario_from_dict


def _scenario(receivers: int):
    return scenario_from_dict({
        "name": "capacity", "duration": 3.0, "seed": 1,
        "topology": {"generate": {"kind": "kary_tree", "k": 2, "receivers": receivers, "rate": "10Mbps",
                                  "delay": "2ms"}},
        "sessions": [{"name": "tfmcc", "protocol": "tfmcc", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.1.1", "port": 5001}],
    }, known_protocols=None)


def _shrink(monkeypatch: pytest.MonkeyPatch, entries: int) -> Iterator[None]:
    init = p4_switch.P4SwitchNode.__init__

    def shrunk(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        init(self, *a, **kw)
        self.sw.tables["MccIngress.ipv4_fwd"].size = entries
        self.sw.tables["MccIngress.arp_proxy"].size = entries

    monkeypatch.setattr(p4_switch.P4SwitchNode, "__init__", shrunk)
    old = MCC.host_table_size
    object.__setattr__(MCC, "host_table_size", entries)  # the controller's view of the same program
    try:
        yield
    finally:
        object.__setattr__(MCC, "host_table_size", old)


@pytest.fixture
def nine_entries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from _shrink(monkeypatch, 9)


@pytest.fixture
def one_entry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from _shrink(monkeypatch, 1)


def test_more_hosts_than_route_entries_run_on_compressed_routes(nine_entries: None) -> None:
    sc = _scenario(16)  # 17 hosts on a tree of 15 switches, 9 routes each at most
    run = build_run(sc, switch=choose_switch("p4", sc))
    for node in run.net.switches.values():
        assert len(node.sw.tables["MccIngress.ipv4_fwd"].entries) <= 9
    run.sim.run(until=sc.duration)
    got = {r: run.net.hosts[r].rx_mcast_bytes.get(5001, 0) for r in sc.topology.hosts if r.startswith("r")}
    assert len(got) == 16 and all(b > 0 for b in got.values()), got  # data down, joins and feedback up


def test_a_switch_that_still_overflows_is_refused_with_one_line(one_entry: None) -> None:
    sc = _scenario(3)
    with pytest.raises(SwitchUnavailable) as exc:
        build_run(sc, switch=choose_switch("p4", sc))
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("P4 switch nodes cannot run this topology: switch ") and "holds 1" in msg


def test_cli_reports_it_without_a_traceback(one_entry: None, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from p4mcc.cli.main import main

    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({
        "name": "capacity", "duration": 1.0, "seed": 1,
        "topology": {"generate": {"kind": "kary_tree", "k": 2, "receivers": 3, "rate": "10Mbps", "delay": "2ms"}},
        "sessions": [{"name": "tfmcc", "protocol": "tfmcc", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.1.1", "port": 5001}],
    }))
    rc = main(["sim", str(path), "--switch", "p4", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert err.strip().startswith("p4mcc sim: P4 switch nodes cannot run this topology: switch ")
