"""The Scapy layers and the codec agree byte for byte on every message type."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packets_testlib import any_message, codec_values, message_of
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4mcc.hosts import scapy_layers as L
from p4mcc.hosts import wire


@settings(max_examples=400, deadline=None)
@given(any_message())
def test_layers_build_the_codec_bytes(msg: wire.Message) -> None:
    assert bytes(L.to_layers(msg)) == msg.encode()


@settings(max_examples=400, deadline=None)
@given(any_message())
def test_layers_dissect_the_codec_bytes_to_the_codec_fields(msg: wire.Message) -> None:
    assert L.field_values(L.P4mcc(msg.encode())) == codec_values(msg)


@pytest.mark.parametrize("mtype", list(wire.message_types()), ids=lambda t: t.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_captured_frame_of_each_type_dissects_by_itself(mtype: wire.MsgType, data) -> None:
    msg = data.draw(message_of(wire.message_types()[mtype]))
    port = 5000 + msg.session_id % 1000
    frame = bytes(Ether() / IP(src="10.0.2.4", dst="10.0.1.1") / UDP(sport=port, dport=port)
                  / Raw(msg.encode()))
    pkt = Ether(frame)
    assert pkt.haslayer(L.P4mcc) and isinstance(pkt[L.P4mcc].payload, L.LAYERS[mtype])
    assert L.field_values(pkt) == codec_values(msg)
    assert wire.decode(bytes(pkt[UDP].payload)) == msg


def test_every_message_type_has_a_named_layer() -> None:
    for mtype, cls in wire.message_types().items():
        layer = getattr(L, cls.__name__)
        assert layer is L.LAYERS[mtype]
        names = [f.name for f in layer.fields_desc]
        assert names[: len(cls.BODY)] == [f.name for f in cls.BODY]


def test_layers_built_by_hand_fill_in_type_length_and_counts() -> None:
    pkt = L.P4mcc(session_id=7, seq=3) / L.RlaSack(cum_ack=10, blocks=[L.RlaSack.RlaSackBlock(start=12, end=15)])
    assert bytes(pkt) == wire.RlaSack(session_id=7, seq=3, cum_ack=10, blocks=((12, 15),)).encode()
    frame = Ether(bytes(Ether() / IP() / UDP() / L.P4mcc(session_id=1) / L.MtcpNack(missing=[4, 9])))
    assert frame[UDP].dport == 5000
    assert wire.decode(bytes(frame[UDP].payload)) == wire.MtcpNack(session_id=1, missing=(4, 9))


def test_non_p4mcc_bytes_on_a_bound_port_stay_raw() -> None:
    pkt = Ether(bytes(Ether() / IP() / UDP(sport=5001, dport=5001) / Raw(b"\x00" * 24)))
    assert not pkt.haslayer(L.P4mcc) and pkt[Raw].load == b"\x00" * 24


def test_bind_port_adds_a_scenario_port() -> None:
    msg = wire.VlmccAck(session_id=2, rcvr_id=5)
    frame = bytes(Ether() / IP() / UDP(sport=40000, dport=7777) / Raw(msg.encode()))
    assert not Ether(frame).haslayer(L.P4mcc)
    L.bind_port(7777)
    assert L.field_values(Ether(frame))["rcvr_id"] == 5


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.sampled_from(list(wire.MsgType)))
def test_any_bytes_on_a_bound_port_rebuild_unchanged(junk: bytes, mtype: wire.MsgType) -> None:
    # Loading the layers must not change a frame that other code dissects and
    # rebuilds, valid or not (wrong length, short tails, counts past the end).
    head = wire.MAGIC.to_bytes(2, "big") + bytes([wire.VERSION, int(mtype) >> 4, int(mtype)])
    data = head + junk
    assert bytes(L.P4mcc(data)) == data
    frame = bytes(Ether() / IP() / UDP(sport=5001, dport=5001) / Raw(data))
    assert bytes(Ether(frame)) == frame
