"""Port helpers: PORT@IFACE parsing and pcap files readable by standard tools."""

from __future__ import annotations

import struct

import pytest
from scapy.utils import rdpcap

from p4mcc.p4switch.ports import PcapWriter, PortError, PortSpec, Port, read_pcap


def test_port_spec_parsing():
    assert PortSpec.parse("3@veth0") == PortSpec(3, "veth0")
    for bad in ("veth0", "x@veth0", "3@", "512@veth0"):
        with pytest.raises(ValueError):
            PortSpec.parse(bad)


def test_pcap_round_trip_and_scapy_reads_it(tmp_path):
    path = tmp_path / "p.pcap"
    w = PcapWriter(path)
    frames = [bytes(range(60)), b"\xff" * 1514]
    w.write(frames[0], ts=1000.25)
    w.write(frames[1], ts=1000.5)
    w.close()
    w.write(b"late", ts=1.0)  # writes after close are ignored, not errors
    assert read_pcap(path) == [(1000.25, frames[0]), (1000.5, frames[1])]
    header = path.read_bytes()[:24]
    assert struct.unpack("<IHHiIII", header)[0] == 0xA1B2C3D4 and struct.unpack("<IHHiIII", header)[6] == 1
    assert [bytes(p) for p in rdpcap(str(path))] == frames


def test_missing_interface_is_a_port_error():
    with pytest.raises(PortError, match="no interface named"):
        Port(1, "p4mcc-no-such-if")
