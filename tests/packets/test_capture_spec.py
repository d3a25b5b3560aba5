"""The capture: section, --pcap filters, and the pcap files they produce."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.igmp import IGMP

from p4mcc.scenario.capture import CaptureSpec, FrameFilter, PcapFile, read_frames
from p4mcc.scenario.model import ScenarioError, load_scenario, scenario_from_dict

SCENARIO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "captures.yaml"


def _doc(capture: object) -> dict:
    return {"name": "c", "duration": 1, "capture": capture,
            "topology": {"hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}},
                         "switches": {"s1": {}}, "links": [["h1", "s1-p1"], ["h2", "s1-p2"]]},
            "sessions": [{"name": "t", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2"],
                          "group": "239.1.1.1", "port": 5007}],
            "tcp_flows": [{"name": "bulk", "src": "h1", "dst": "h2", "port": 5201}]}


def test_capture_section_parses_sessions_ports_and_snaplen() -> None:
    sc = scenario_from_dict(_doc({"sessions": ["t", "bulk"], "ports": ["s1-p2", "s1-eth1", "s1"],
                                  "snaplen": 128}))
    assert sc.capture == CaptureSpec(("t", "bulk"), (("s1", 2), ("s1", 1), ("s1", None)), 128)
    assert scenario_from_dict(_doc(True)).capture == CaptureSpec()
    assert scenario_from_dict(_doc(False)).capture is None


@pytest.mark.parametrize("bad, problem", [
    ({"sessions": ["nope"]}, "no session or TCP flow named 'nope'"),
    ({"ports": ["s9-p1"]}, "'s9-p1' is not a switch port"),
    ({"snaplen": 10}, "capture.snaplen: expected an integer 64..65535"),
    ({"session": ["t"]}, "capture: unknown key(s) session"),
    ("yes", "capture: expected true or a mapping"),
])
def test_bad_capture_sections_name_the_problem(bad: object, problem: str) -> None:
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(_doc(bad))
    assert any(problem in p for p in e.value.problems), e.value.problems


def test_session_filter_keeps_its_ports_and_igmp_only() -> None:
    sc = scenario_from_dict(_doc({"sessions": ["t"]}))
    flt = FrameFilter.for_scenario(sc.capture, sc)
    mine = bytes(Ether() / IP(dst="239.1.1.1") / UDP(sport=5007, dport=5007) / b"x")
    feedback = bytes(Ether() / IP(dst="10.0.0.1") / UDP(sport=40000, dport=5007) / b"x")
    other = bytes(Ether() / IP() / UDP(sport=5008, dport=5008) / b"x")
    tcp = bytes(Ether() / IP() / TCP(sport=40000, dport=5201))
    igmp = bytes(Ether() / IP(proto=2) / IGMP(type=0x16, gaddr="239.1.1.1"))
    assert [flt.keep(f) for f in (mine, feedback, other, tcp, igmp)] == [True, True, False, False, True]
    assert FrameFilter.for_scenario(CaptureSpec(), sc).keep(tcp)


def test_pcap_file_keeps_snaplen_bytes_and_the_original_length(tmp_path: Path) -> None:
    f = PcapFile(tmp_path / "x.pcap", snaplen=64)
    f.write(1.5, b"a" * 100)
    f.write(2.000001, b"b" * 10)
    f.close()
    assert list(read_frames(tmp_path / "x.pcap")) == [(1.5, b"a" * 64), (2.000001, b"b" * 10)]
    raw = (tmp_path / "x.pcap").read_bytes()
    assert int.from_bytes(raw[24 + 12:24 + 16], "little") == 100  # orig_len


def test_sim_pcap_flags_narrow_the_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4mcc.cli.main import main

    out = tmp_path / "r"
    rc = main(["sim", str(SCENARIO), "--switch", "model", "--duration", "1", "--quiet", "--out", str(out),
               "--pcap", "--pcap-session", "tfmcc", "--pcap-port", "s1-p4"])
    assert rc == 0
    assert sorted(p.name for p in (out / "pcaps").iterdir()) == ["s1-eth4_in.pcap", "s1-eth4_out.pcap"]
    frames = [f for p in (out / "pcaps").iterdir() for _, f in read_frames(p)]
    udp = [Ether(f)[UDP] for f in frames if UDP in Ether(f)]
    port = next(s.port for s in load_scenario(SCENARIO).sessions if s.name == "tfmcc")
    assert udp and all(port in (u.sport, u.dport) for u in udp)


def test_sim_rejects_an_unknown_capture_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4mcc.cli.main import main

    rc = main(["sim", str(SCENARIO), "--quiet", "--out", str(tmp_path), "--pcap", "--pcap-session", "nope"])
    assert rc == 2
    assert capsys.readouterr().err.strip() == "p4mcc sim: --pcap-session: no session or TCP flow named 'nope'"


@pytest.mark.parametrize("cmd", ["sim", "run"])
def test_pcap_filters_need_pcap_and_known_names(cmd: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from p4mcc.cli.main import main

    base = [cmd, str(SCENARIO), "--out", str(tmp_path)]
    assert main(base + ["--pcap-port", "s1-p1"]) == 2
    assert capsys.readouterr().err.strip() == f"p4mcc {cmd}: --pcap-session and --pcap-port need --pcap"
    assert main(base + ["--pcap", "--pcap-port", "s7-p1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"p4mcc {cmd}: --pcap-port: 's7-p1' is not a switch port (s1-p2, s1-eth2) or a switch name")
