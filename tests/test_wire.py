"""The wire codec: round trips for every message and clean errors for bad input."""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts import wire

_PAYLOAD_TYPES = {"payload"}


def _field_strategy(cls: type[wire.Message], name: str) -> st.SearchStrategy:
    for f in cls.BODY:
        if f.name == name:
            lo, hi = wire._limit(f.bits, f.signed)
            return st.integers(lo, hi)
    if name == "payload":
        return st.binary(max_size=1400)
    if name == "blocks":
        edge = st.integers(0, 0xFFFFFFFF)
        return st.lists(st.tuples(edge, edge), max_size=wire.MAX_SACK_BLOCKS).map(tuple)
    if name == "missing":
        return st.lists(st.integers(0, 0xFFFFFFFF), max_size=wire.MAX_NACK_SEQS).map(tuple)
    if name == "flags":
        return st.integers(0, 0xFF)
    return st.integers(0, 0xFFFFFFFF)


def message_strategy() -> st.SearchStrategy[wire.Message]:
    per_type = []
    for cls in wire.message_types().values():
        kwargs = {
            f.name: _field_strategy(cls, f.name)
            for f in fields(cls)
            if f.name not in ("nblocks", "count")
        }
        per_type.append(st.builds(cls, **kwargs))
    return st.one_of(per_type)


@settings(max_examples=600)
@given(message_strategy())
def test_decode_inverts_encode_for_every_message_type(msg: wire.Message) -> None:
    data = msg.encode()
    assert wire.decode(data) == msg
    assert len(data) == struct.unpack_from("!H", data, 6)[0]


def test_every_message_type_is_registered_with_its_protocol_nibble() -> None:
    types = wire.message_types()
    assert set(types) == set(wire.MsgType)
    for mtype, cls in types.items():
        assert cls().proto == wire.Proto(int(mtype) >> 4)


def test_common_header_layout_is_exact() -> None:
    msg = wire.TfmccReport(session_id=0x01020304, seq=0x0A0B0C0D, timestamp=0x11223344, flags=0x02, rate=0xDEADBEEF, fb_round=7)
    data = msg.encode()
    assert data[:20] == bytes.fromhex("504d" "01" "02" "22" "02" "0034" "01020304" "0a0b0c0d" "11223344")
    # the switch reads rate and round at fixed offsets right after the common header
    assert data[20:24] == bytes.fromhex("deadbeef")
    assert data[24:26] == b"\x00\x07"


@settings(max_examples=400)
@given(message_strategy(), st.data())
def test_truncation_raises_wire_error(msg: wire.Message, data: st.DataObject) -> None:
    raw = msg.encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(wire.WireError):
        wire.decode(raw[:cut])


@settings(max_examples=1500)
@given(st.binary(max_size=200))
def test_garbage_raises_only_wire_error(raw: bytes) -> None:
    try:
        wire.decode(raw)
    except wire.WireError:
        pass


@settings(max_examples=300)
@given(message_strategy(), st.binary(min_size=1, max_size=40))
def test_extra_bytes_are_rejected_unless_payload(msg: wire.Message, extra: bytes) -> None:
    raw = bytearray(msg.encode()) + extra
    struct.pack_into("!H", raw, 6, len(raw) & 0xFFFF)
    if "payload" in {f.name for f in fields(msg)}:
        assert wire.decode(bytes(raw)).payload == msg.payload + extra  # type: ignore[attr-defined]
    else:
        with pytest.raises(wire.WireError):
            wire.decode(bytes(raw))


def test_oversized_and_out_of_range_inputs_raise_wire_error() -> None:
    with pytest.raises(wire.WireError):
        wire.decode(b"\x50\x4d" + b"\x00" * (wire.MAX_DATAGRAM + 1))
    with pytest.raises(wire.WireError):
        wire.TfmccReport(rate=1 << 32).encode()
    with pytest.raises(wire.WireError):
        wire.VlmccData(drift_prev=1 << 31).encode()
    with pytest.raises(wire.WireError):
        wire.RlaSack(blocks=((0, 1),) * (wire.MAX_SACK_BLOCKS + 1)).encode()
    with pytest.raises(wire.WireError):
        wire.WebrcData(payload=b"x" * wire.MAX_DATAGRAM).encode()
    with pytest.raises(wire.WireError):
        wire.decode("not bytes")  # type: ignore[arg-type]


def test_counted_tail_must_match_its_count() -> None:
    raw = bytearray(wire.MtcpNack(missing=(1, 2, 3)).encode())
    raw[20 + 8] = 4  # claim four sequences, carry three
    with pytest.raises(wire.WireError):
        wire.decode(bytes(raw))


def test_timestamp_difference_survives_wraparound() -> None:
    assert wire.ts_diff_us(5, 0xFFFFFFFB) == 10
    assert wire.ts_diff_us(0xFFFFFFFB, 5) == -10
    assert wire.ts_us(1.5) == 1_500_000


def test_replicas_of_one_datagram_decode_to_one_shared_message() -> None:
    """The n receivers of a multicast packet decode it once (``wire._decoded``):
    equal bytes, even in a fresh buffer, give the very same frozen message."""
    raw = wire.TfmccData(session_id=7, seq=99, payload=b"p" * 100).encode()
    first = wire.decode(raw)
    again = wire.decode(bytearray(raw))
    assert again is first
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.seq = 1  # type: ignore[misc]
    other = wire.decode(wire.TfmccData(session_id=7, seq=100, payload=b"p" * 100).encode())
    assert other is not first and other.seq == 100


def test_decode_memo_is_bounded_and_never_remembers_a_malformed_datagram() -> None:
    for seq in range(2 * wire.DECODED_MEMO_SIZE):
        wire.decode(wire.RlaData(session_id=1, seq=seq, payload=b"").encode())
    assert len(wire._decoded) <= wire.DECODED_MEMO_SIZE
    bad = bytearray(wire.RlaData(session_id=1, seq=5, payload=b"abc").encode())
    bad[0] ^= 0xFF  # bad magic
    for _ in range(2):
        with pytest.raises(wire.WireError):
            wire.decode(bytes(bad))
    assert bytes(bad) not in wire._decoded
