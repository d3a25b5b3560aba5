"""The Wireshark dissector: generated from hosts/wire.py on demand, and tshark reads every message with it."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from packets_testlib import p4mcc_fields_only, random_message, tshark_expected, tshark_frames
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from p4mcc.hosts import wire, wire_lua

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark not installed (Debian package tshark; make install adds it)")


def test_dissector_covers_every_message_type() -> None:
    lua = wire_lua.render()
    for mtype, cls in wire.message_types().items():
        assert f"0x{int(mtype):02x}" in lua.lower(), cls.__name__
        for f in cls.BODY:
            assert f'"{f.name}"' in lua, (cls.__name__, f.name)


def _frames(msgs: list[wire.Message]) -> list[bytes]:
    return [bytes(Ether() / IP(src="10.0.2.4", dst="10.0.1.1")
                  / UDP(sport=5000 + m.session_id % 1000, dport=5000 + m.session_id % 1000)
                  / Raw(m.encode())) for m in msgs]


@needs_tshark
def test_tshark_names_every_field_of_every_message_type(tmp_path: Path) -> None:
    # Several random messages of every type in one capture (one tshark run).
    rng = random.Random(19)
    msgs = [random_message(cls, rng) for cls in wire.message_types().values() for _ in range(6)]
    rng.shuffle(msgs)
    pcap = tmp_path / "all.pcap"
    wrpcap(str(pcap), [Ether(f) for f in _frames(msgs)])
    frames = tshark_frames(pcap)
    assert len(frames) == len(msgs)
    for msg, fr in zip(msgs, frames):
        assert fr["trouble"] == [], (msg, fr["trouble"])
        assert "p4mcc" in fr["protos"]
        assert p4mcc_fields_only(fr["fields"]) == tshark_expected(msg), msg


@needs_tshark
def test_tshark_marks_a_truncated_message_malformed(tmp_path: Path) -> None:
    good = wire.TfmccReport(session_id=1, rate=5).encode()
    pcap = tmp_path / "bad.pcap"
    wrpcap(str(pcap), [Ether(f) for f in _frames([wire.TfmccReport(session_id=1)])]
           + [Ether() / IP() / UDP(sport=5001, dport=5001) / Raw(good[:30])])
    frames = tshark_frames(pcap)
    assert frames[0]["trouble"] == []
    assert any("length" in t or "shorter" in t for t in frames[1]["trouble"])


def test_install_print_and_path_give_the_generated_dissector(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from p4mcc.cli.main import main

    assert main(["wireshark", "--install", "--dir", str(tmp_path / "plugins")]) == 0
    assert (tmp_path / "plugins" / "p4mcc.lua").read_text() == wire_lua.render()
    assert main(["wireshark", "--print"]) == 0
    assert capsys.readouterr().out.endswith(wire_lua.render())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["wireshark"]) == 0
    path = Path(capsys.readouterr().out.splitlines()[-1])
    assert path == tmp_path / "cache" / "p4mcc" / "p4mcc.lua"
    assert path.read_text() == wire_lua.render()
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "p4mcc.lua").mkdir()  # a folder where the file must go: a clear error
    assert main(["wireshark", "--install", "--dir", str(tmp_path / "ro")]) == 1
    assert "cannot write" in capsys.readouterr().err
