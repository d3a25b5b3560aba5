"""The wire codec: round trips for every message and clean errors for bad input."""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4mcc.hosts import wire

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
    if name in ("flags", "stamp", "share"):
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
    assert data[:22] == bytes.fromhex("504d" "02" "00" "22" "02" "0036" "01020304" "0a0b0c0d" "11223344" "00" "00")
    # the switch reads rate and round at fixed offsets right after the common header
    assert data[22:26] == bytes.fromhex("deadbeef")
    assert data[26:28] == b"\x00\x07"


def test_share_is_byte_20_and_senders_send_none() -> None:
    assert wire.WebrcData(session_id=1).encode()[20:22] == b"\x00\x00"
    data = wire.WebrcData(session_id=1, share=140).encode()
    assert data[20:22] == bytes([140, 0])
    assert wire.decode(data).share == 140


def test_share_codes_are_eighth_octaves_from_the_stamp_unit() -> None:
    Sh = wire.Share
    assert Sh.bps(Sh.UNIT_CODE) == 40_000 and Sh.bps(Sh.UNIT_CODE + 8) == 80_000
    assert Sh.bps(0) is None
    assert Sh.bps(1) == pytest.approx(340.8, rel=1e-3) and Sh.bps(255) == pytest.approx(1.2e12, rel=0.03)
    for bps in (1e3, 1e6, 2.5e6, 10e6, 1e9):
        c = Sh.code_for(bps)
        assert Sh.bps(c) <= bps * (1 + 1e-9) < Sh.bps(c + 1)  # the largest code at most the rate
    assert Sh.code_for(0) == 1 and Sh.code_for(1e15) == 255
    with pytest.raises(wire.WireError, match="share code out of range"):
        Sh.bps(256)


def test_shares_take_the_smallest_estimate_along_a_path_and_in_echoes() -> None:
    Sh = wire.Share
    assert Sh.along_path(Sh.NONE, 120) == 120  # the first switch that estimates
    assert Sh.along_path(120, Sh.NONE) == 120  # a port without an estimate leaves it
    assert Sh.along_path(120, 90) == 90 and Sh.along_path(90, 120) == 90
    assert Sh.combine_echo(120, 90) == 90
    assert Sh.combine_echo(120, Sh.NONE) == Sh.NONE  # a receiver without a share: the sender falls back


def test_stamp_is_byte_3_and_senders_leave_it_unstamped() -> None:
    assert wire.WebrcData(session_id=1).encode()[3] == wire.Stamp.NOT_STAMPED
    data = wire.WebrcData(session_id=1, stamp=wire.Stamp.pack(3, 7)).encode()
    assert data[3] == 0x37
    assert wire.decode(data).stamp == 0x37


def test_stamp_codes_follow_their_scales() -> None:
    S = wire.Stamp
    assert [S.queue_code_for(us) for us in (0, 511, 512, 1023, 1024, 2**21, 2**22, 10**9)] == [
        1, 1, 2, 2, 3, 14, 15, 15]
    assert S.queue_delay_s(S.pack(3, 0)) == 1024e-6
    assert S.queue_delay_s(S.pack(1, 0)) == 0.0
    # RFC 4782 3.1: N means at least 40 kb/s * 2**N
    assert [S.spare_code_for(r) for r in (0, 79_999, 80_000, 10e6, 1.4e9)] == [0, 0, 1, 7, 15]
    assert S.spare_bps(S.pack(1, 7)) == 40_000 * 128
    assert S.spare_bps(S.pack(1, 0)) == 0.0


def test_an_unstamped_byte_reads_as_no_switch_on_the_path() -> None:
    S = wire.Stamp
    # version-1 senders wrote the protocol id (1..5) here: the high nibble is 0
    for legacy in range(6):
        assert not S.stamped(legacy)
        assert S.queue_delay_s(legacy) is None and S.spare_bps(legacy) is None
    assert S.combine(0x05, 1, 9) == S.pack(1, 9)


def test_stamps_combine_by_worst_queue_and_tightest_spare() -> None:
    S = wire.Stamp
    first = S.combine(S.NOT_STAMPED, 2, 9)
    assert S.combine(first, 5, 12) == S.pack(5, 9)
    assert S.combine(first, 1, 3) == S.pack(2, 3)


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
    raw[wire.COMMON_LEN + 8] = 4  # claim four sequences, carry three
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
