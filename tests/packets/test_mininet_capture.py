"""Captures of a Mininet run: the same files and time base as the simulator's (root)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packets_testlib import p4mcc_fields_only, tshark_expected, tshark_frames
from scapy.layers.inet import ICMP, UDP
from scapy.utils import rdpcap

from p4mcc.hosts import scapy_layers as L
from p4mcc.hosts import wire
from p4mcc.scenario.capture import read_frames
from p4mcc.scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]
DURATION = 6.0


def _scenario():
    return scenario_from_dict({
        "name": "mininet-capture", "duration": DURATION, "metrics_interval": 1.0,
        "capture": {"ports": ["s1-p1", "s2-p1"]},
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [{"a": "s1-p1", "b": "s2-p1", "rate": "2Mbps", "delay": "10ms", "queue": 20},
                      ["h1", "s1-p2"], ["h2", "s2-p2"], ["h3", "s2-p3"]],
        },
        "sessions": [{"name": "t", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2", "h3"],
                      "group": "239.5.5.5", "port": 5005,
                      "params": {"initial_rate_bps": 200000, "initial_rtt": 0.1}}],
    })


def test_mininet_and_simulator_captures_share_names_and_time_base(tmp_path: Path) -> None:
    from p4mcc.emulation.run import missing_requirements

    reason = missing_requirements(("tshark",))
    if reason:
        pytest.skip(reason)
    from p4mcc.netsim.run import run_scenario
    from p4mcc.emulation.run import run_emulation

    sc = _scenario()
    run_emulation(sc, tmp_path / "mn", progress=False, plots=False)
    run_scenario(sc, tmp_path / "sim")
    mn, sim = tmp_path / "mn" / "pcaps", tmp_path / "sim" / "pcaps"
    names = sorted(p.name for p in sim.glob("*.pcap"))
    assert names == ["s1-eth1_in.pcap", "s1-eth1_out.pcap", "s2-eth1_in.pcap", "s2-eth1_out.pcap"]
    assert sorted(p.name for p in mn.glob("*.pcap")) == names
    assert not list((tmp_path / "mn" / "logs" / "switch-pcaps").glob("*.pcap"))  # raw files removed

    def first_data(path: Path) -> float:
        return next(ts for ts, f in read_frames(path)
                    if len(f) > 46 and f[23] == 17 and f[42 + 4] == wire.MsgType.TFMCC_DATA)

    for name in names:
        # from the start on; the end includes the agents' shutdown (leaves), a few seconds
        stamps = [ts for ts, _ in read_frames(mn / name)]
        assert stamps and 0 <= min(stamps) and max(stamps) <= DURATION + 15
    # Both time bases start at scenario time 0, when the sender is started:
    # the simulator's sends at once, Mininet's after its agent process has
    # started (Python start-up, 1-2 s on a busy 2-core machine), never before.
    lag = first_data(mn / "s1-eth1_out.pcap") - first_data(sim / "s1-eth1_out.pcap")
    assert -0.01 < lag < 3.0

    path = mn / "s2-eth1_in.pcap"
    frames = tshark_frames(path)
    # (Port-unreachable errors at the end quote p4mcc packets: not counted here.)
    dissected = [fr for fr in frames if "p4mcc" in fr["protos"] and "icmp" not in fr["protos"]]
    assert len(dissected) > 10 and all(fr["trouble"] == [] for fr in frames)
    payloads = [bytes(p[UDP].payload) for p in rdpcap(str(path))
                if p.haslayer(L.P4mcc) and not p.haslayer(ICMP)]
    assert len(payloads) == len(dissected)
    for payload, fr in zip(payloads, dissected):
        assert p4mcc_fields_only(fr["fields"]) == tshark_expected(wire.decode(payload))
