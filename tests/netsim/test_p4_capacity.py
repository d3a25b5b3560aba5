"""A topology whose per-host entries overflow the program's tables is refused
up front with one clear line, before the desired state is computed.

``mcc.p4`` gets one route (``ipv4_fwd``) and one ARP answer (``arp_proxy``)
per host on every switch, in tables of 1024 entries; the interpreter, like
BMv2, refuses an entry beyond a table's size.  The test shrinks the route
table of every node to two entries, so a three-host topology overflows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsim import p4_switch
from netsim.run import build_run
from netsim.switches import SwitchUnavailable, choose_switch
from scenario.model import scenario_from_dict


def _scenario(receivers: int):
    return scenario_from_dict({
        "name": "capacity", "duration": 1.0, "seed": 1,
        "topology": {"generate": {"kind": "kary_tree", "k": 2, "receivers": receivers, "rate": "10Mbps",
                                  "delay": "2ms"}},
        "sessions": [{"name": "tfmcc", "protocol": "tfmcc", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.1.1", "port": 5001}],
    }, known_protocols=None)


@pytest.fixture
def small_route_table(monkeypatch: pytest.MonkeyPatch) -> None:
    init = p4_switch.P4SwitchNode.__init__

    def shrunk(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        init(self, *a, **kw)
        self.sw.tables["MccIngress.ipv4_fwd"].size = 3

    monkeypatch.setattr(p4_switch.P4SwitchNode, "__init__", shrunk)


def test_more_hosts_than_route_entries_is_refused_with_one_line(small_route_table: None) -> None:
    sc = _scenario(3)  # 4 hosts: the sender and three receivers
    with pytest.raises(SwitchUnavailable) as exc:
        build_run(sc, switch=choose_switch("p4", sc))
    msg = str(exc.value)
    assert "\n" not in msg
    assert "4 hosts need 4 entries in MccIngress.ipv4_fwd" in msg and "holds 3" in msg


def test_a_topology_that_fits_is_configured(small_route_table: None) -> None:
    sc = _scenario(2)  # 3 hosts fill the 3 entries exactly
    run = build_run(sc, switch=choose_switch("p4", sc))
    for node in run.net.switches.values():
        assert len(node.sw.tables["MccIngress.ipv4_fwd"].entries) == 3


def test_cli_reports_it_without_a_traceback(small_route_table: None, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from p4mcc_cli.main import main

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
    assert err.strip().startswith("p4mcc sim: P4 switch nodes cannot run this topology: 4 hosts need 4 entries")
