"""Captures of a simulated run: per-port pcaps with simulated times that Scapy and tshark read.

One short run of topologies/scenarios/captures.yaml (one session of every
protocol over a lossy bottleneck) is shared by the tests of this module.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from packets_testlib import p4mcc_fields_only, tshark_expected, tshark_frames
from scapy.layers.inet import UDP
from scapy.utils import rdpcap

from p4mcc.hosts import scapy_layers as L
from p4mcc.hosts import wire
from p4mcc.scenario.capture import read_frames

SCENARIO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "captures.yaml"
DURATION = 4.0
BOTTLENECK_BPS, BOTTLENECK_DELAY = 1e6, 0.010  # s1-p1 -> s2-p1 in captures.yaml
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark not installed (Debian package tshark; make install adds it)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from p4mcc.netsim.run import run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import load_scenario

    sc = load_scenario(SCENARIO).with_overrides(duration=DURATION)
    out = tmp_path_factory.mktemp("captures")
    run_scenario(sc, out, switch=choose_switch("p4", sc))
    return out


def _p4mcc_payloads(path: Path) -> list[tuple[float, bytes, bytes]]:
    """(time, frame, UDP payload) of every p4mcc frame in a pcap."""
    out = []
    for ts, frame in read_frames(path):
        if len(frame) > 42 and frame[12:14] == b"\x08\x00" and frame[23] == 17:
            l4 = 14 + (frame[14] & 0x0F) * 4
            payload = frame[l4 + 8:]
            if payload[:2] == wire.MAGIC.to_bytes(2, "big"):
                out.append((ts, frame, payload))
    return out


def test_every_switch_port_has_an_in_and_an_out_capture(run_dir: Path) -> None:
    names = sorted(p.name for p in (run_dir / "pcaps").glob("*.pcap"))
    ports = {"s1": range(1, 8), "s2": range(1, 4), "s3": range(1, 3)}
    assert names == sorted(f"{s}-eth{p}_{d}.pcap" for s, r in ports.items() for p in r for d in ("in", "out"))


def test_the_bottleneck_captures_hold_every_message_type(run_dir: Path) -> None:
    seen = {wire.peek_header(p)[0] for f in ("s1-eth1_in.pcap", "s1-eth1_out.pcap")
            for _, _, p in _p4mcc_payloads(run_dir / "pcaps" / f)}
    assert seen == set(wire.message_types())


def test_stamps_are_simulated_times_of_the_wire(run_dir: Path) -> None:
    # A frame s1 sends on the bottleneck reaches s2 one serialisation plus one
    # propagation delay later, to the microsecond of the pcap format.
    sent = {frame: ts for ts, frame in read_frames(run_dir / "pcaps" / "s1-eth1_out.pcap")}
    arrived = list(read_frames(run_dir / "pcaps" / "s2-eth1_in.pcap"))
    assert len(arrived) > 200
    for ts, frame in arrived:
        assert 0 <= ts <= DURATION
        expect = sent[frame] + len(frame) * 8 / BOTTLENECK_BPS + BOTTLENECK_DELAY
        assert abs(ts - expect) <= 2e-6
    assert len(sent) > len(arrived)  # the 2 % loss: sent, never arrived
    stamps = [ts for ts, _ in arrived]
    assert stamps == sorted(stamps)


def test_a_captured_run_dissects_in_scapy(run_dir: Path) -> None:
    pkts = [p for name in ("s1-eth1_in.pcap", "s1-eth1_out.pcap")
            for p in rdpcap(str(run_dir / "pcaps" / name))]
    n = 0
    for pkt in pkts:
        if UDP in pkt and pkt.haslayer(L.P4mcc):
            msg = wire.decode(bytes(pkt[UDP].payload))
            values = L.field_values(pkt)
            assert all(values[k] == v for k, v in vars(msg).items()), msg
            layer = pkt[L.P4mcc].payload
            assert isinstance(layer, L.LAYERS[msg.MSG_TYPE])
            assert [f.name for f in layer.fields_desc][: len(msg.BODY)] == [f.name for f in msg.BODY]
            n += 1
    assert n > 200


@needs_tshark
@pytest.mark.parametrize("name", ["s1-eth1_in.pcap", "s1-eth1_out.pcap"])
def test_a_captured_run_dissects_in_tshark(run_dir: Path, name: str) -> None:
    path = run_dir / "pcaps" / name
    ours = _p4mcc_payloads(path)
    frames = tshark_frames(path)
    assert len(frames) == sum(1 for _ in read_frames(path))
    dissected = [fr for fr in frames if "p4mcc" in fr["protos"]]
    # Feedback (the _in direction) is the smaller share of a bottleneck's frames.
    assert len(dissected) == len(ours) > 20
    for (_, _, payload), fr in zip(ours, dissected):
        assert fr["trouble"] == []
        assert p4mcc_fields_only(fr["fields"]) == tshark_expected(wire.decode(payload))
    assert all(fr["trouble"] == [] for fr in frames)


@needs_tshark
def test_tshark_shows_the_simulated_times(run_dir: Path) -> None:
    path = run_dir / "pcaps" / "s2-eth1_in.pcap"
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    ours = [ts for ts, _ in read_frames(path)]
    assert len(out) == len(ours) > 0
    assert all(abs(float(t) - ts) < 1e-6 for t, ts in zip(out, ours))
    assert 0 < float(out[0]) < float(out[-1]) <= DURATION


def test_report_lists_the_captures(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4mcc.reporting.report import report

    assert report([str(run_dir)]) == 0
    text = capsys.readouterr().out
    n = sum(1 for _ in read_frames(run_dir / "pcaps" / "s1-eth1_in.pcap"))
    line = next(l for l in text.splitlines() if "s1-eth1_in.pcap" in l)
    assert str(n) in line.split()
