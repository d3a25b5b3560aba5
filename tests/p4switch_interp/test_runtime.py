"""Runtime pieces checked without the front end: hashes, tables, meters, PRE."""

from __future__ import annotations

import zlib

import pytest

from p4mcc.p4switch.runtime import bits, hashes
from p4mcc.p4switch.runtime.externs import GREEN, RED, YELLOW, CounterArray, Meter, RegisterArray
from p4mcc.p4switch.runtime.pre import Pre, PreError
from p4mcc.p4switch.runtime.tables import (ActionCall, ActionSpec, KeySpec, Lpm, OptionalMatch, Range,
                                     Table, TableError, Ternary)

CHECK = b"123456789"


def test_crc_check_values() -> None:
    # The catalogue check values of CRC-16/ARC and CRC-32/ISO-HDLC.
    assert hashes.crc16(CHECK) == 0xBB3D
    assert hashes.crc32(CHECK) == 0xCBF43926
    for data in (b"", b"\x00", b"\xff" * 7, bytes(range(256))):
        assert hashes.crc32(data) == zlib.crc32(data)


def test_csum16_rfc1071_example() -> None:
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert hashes.csum16(hdr) == 0xB861
    # a header carrying its correct checksum sums to zero
    full = hdr[:10] + (0xB861).to_bytes(2, "big") + hdr[12:]
    assert hashes.csum16(full) == 0
    assert hashes.csum16(b"\x01") == (~0x0100) & 0xFFFF  # odd length pads with a zero byte


def test_xor16_identity_and_round_robin() -> None:
    assert hashes.xor16(bytes.fromhex("1234abcd")) == 0x1234 ^ 0xABCD
    assert hashes.xor16(bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert hashes.identity(bytes.fromhex("0102")) == 0x0102
    assert hashes.identity(bytes(range(1, 11))) == 0x0102030405060708
    rr = hashes.algorithm("round_robin")
    assert [rr(b"x") for _ in range(3)] == [0, 1, 2]
    r1, r2 = hashes.algorithm("random", seed=7), hashes.algorithm("random", seed=7)
    assert [r1(b"") for _ in range(4)] == [r2(b"") for _ in range(4)]
    with pytest.raises(KeyError):
        hashes.algorithm("md5")


def test_bits_width_semantics() -> None:
    assert bits.to_signed(0xFF, 8) == -1
    assert bits.to_signed(0x7F, 8) == 127
    assert bits.sat_add_u(250, 10, 8) == 255
    assert bits.sat_sub_u(5, 10, 8) == 0
    assert bits.sat_add_s(120, 10, 8) == 127
    assert bits.sat_sub_s(-120, 10, 8) == -128
    assert bits.shl(0x81, 1, 8) == 0x02
    assert bits.shl(1, 1 << 40, 8) == 0  # huge shift amounts do not build huge ints
    assert bits.set_slice(0xFFFF, 11, 4, 0) == 0xF00F
    assert bits.bits_to_bytes(0b101, 3) == b"\xa0"  # MSB first, zero padded


def _table(kinds: list[tuple[str, int]], size: int | None = 4) -> Table:
    keys = [KeySpec(f"k{i}", k, w) for i, (k, w) in enumerate(kinds)]
    acts = {"a": ActionSpec("a", [("p", 8)]), "drop": ActionSpec("drop", [])}
    return Table("t", keys, acts, ActionCall("drop", ()), size=size)


def test_exact_table_and_errors() -> None:
    t = _table([("exact", 16)])
    h = t.add({"k0": 0x800}, "a", {"p": 3})
    assert t.lookup((0x800,)).params == (3,)
    assert t.lookup((0x801,)) is None
    with pytest.raises(TableError):
        t.add({"k0": 0x800}, "a", [1])  # duplicate
    with pytest.raises(TableError):
        t.add({"k0": 0x10000}, "a", [1])  # does not fit 16 bits
    with pytest.raises(TableError):
        t.add({"k0": 1}, "a", [256])  # param does not fit 8 bits
    t.modify(h, "a", [9])
    assert t.lookup((0x800,)).params == (9,)
    t.delete(h)
    assert t.lookup((0x800,)) is None
    for i in range(4):
        t.add([i], "drop")
    with pytest.raises(TableError):
        t.add([9], "drop")  # size 4


def test_lpm_longest_prefix_wins() -> None:
    t = _table([("exact", 8), ("lpm", 32)])
    t.add([1, Lpm(0x0A000000, 8)], "a", [8])
    t.add([1, Lpm(0x0A010000, 16)], "a", [16])
    t.add([1, Lpm(0, 0)], "a", [0])
    assert t.lookup((1, 0x0A010203)).params == (16,)
    assert t.lookup((1, 0x0A020203)).params == (8,)
    assert t.lookup((1, 0x0B000000)).params == (0,)
    assert t.lookup((2, 0x0A010203)) is None


def test_ternary_priority_larger_wins_ties_first_inserted() -> None:
    t = _table([("ternary", 8)])
    with pytest.raises(TableError):
        t.add([Ternary(1, 0xFF)], "a", [1])  # needs a priority
    t.add([Ternary(0x10, 0xF0)], "a", [1], priority=5)
    t.add([Ternary(0x12, 0xFF)], "a", [2], priority=10)
    t.add([Ternary(0x00, 0x00)], "a", [3], priority=10)
    assert t.lookup((0x12,)).params == (2,)  # 10 beats 5; first of the two 10s
    assert t.lookup((0x13,)).params == (3,)
    assert t.lookup((0x55,)).params == (3,)


def test_range_and_optional() -> None:
    t = _table([("range", 16), ("optional", 8)])
    t.add([Range(10, 20), OptionalMatch(None)], "a", [1], priority=1)
    t.add([Range(15, 15), OptionalMatch(7)], "a", [2], priority=2)
    assert t.lookup((15, 7)).params == (2,)
    assert t.lookup((15, 8)).params == (1,)
    assert t.lookup((21, 7)) is None


def test_default_action_const() -> None:
    t = _table([("exact", 8)])
    t.set_default("a", [4])
    assert t.default.params == (4,)
    t.reset_default()
    assert t.default.action == "drop"
    t.default_const = True
    with pytest.raises(TableError):
        t.set_default("a", [1])


def test_meter_two_rate_three_color() -> None:
    m = Meter(packets=True)
    assert m.execute(0, 100) == GREEN  # unconfigured
    # committed 1 packet per 1000 us, burst 2; peak 1 per 500 us, burst 3
    m.set_rates([(0.001, 2), (0.002, 3)], now_us=0)
    colours = [m.execute(0, 100) for _ in range(4)]
    assert colours == [GREEN, GREEN, YELLOW, RED]
    # after 1000 us: +2 peak tokens, +1 committed token
    assert m.execute(1000, 100) == GREEN
    assert m.execute(1000, 100) == YELLOW
    assert m.execute(1000, 100) == RED
    with pytest.raises(ValueError):
        m.set_rates([(2.0, 1), (1.0, 1)], 0)  # committed above peak


def test_byte_meter_uses_length() -> None:
    m = Meter(packets=False)
    m.set_rates([(0.0, 1000), (0.0, 1500)], now_us=0)
    assert m.execute(10, 1000) == GREEN
    assert m.execute(10, 400) == YELLOW  # peak has 500 left, committed 0
    assert m.execute(10, 400) == RED  # peak has 100 left


def test_register_and_counter_arrays() -> None:
    r = RegisterArray("r", 4, 8)
    r.write(1, 0x1FF)
    assert r.read(1) == 0xFF
    r.write(9, 1)  # out of range: ignored, as BMv2 does
    assert r.read(9) == 0
    s = RegisterArray("s", 2, 8, signed=True)
    s.write(0, 0xFF)
    assert s.read(0) == -1
    c = CounterArray("c", 2)
    c.count(1, 64)
    c.count(1, 100)
    assert c.read(1) == (2, 164)
    with pytest.raises(IndexError):
        c.read(2)


def test_pre_replication_order_and_handles() -> None:
    pre = Pre()
    pre.group_create(1)
    n0 = pre.node_create(5, [3, 1])
    n1 = pre.node_create(6, [2])
    assert (n0, n1) == (0, 1)
    pre.node_associate(1, n1)
    pre.node_associate(1, n0)
    assert pre.replicate(1) == [(2, 6), (1, 5), (3, 5)]  # association order, ports ascending
    assert pre.replicate(99) == []
    pre.node_destroy(n1)
    assert pre.node_create(7, [4]) == 1  # lowest free handle is reused
    with pytest.raises(PreError):
        pre.node_associate(2, 0)
    pre.set_group(2, [(4, 1), (5, 1), (6, 2)])
    assert pre.replicate(2) == [(4, 1), (5, 1), (6, 2)]


def _csum_reference(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def test_csum16_matches_word_by_word_sum() -> None:
    import random

    rng = random.Random(1)
    cases = [b"", b"\x00\x00", b"\xff\xff", b"\xff\xff\xff\xff", b"\x00\x01\xff\xfe"]
    cases += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80))) for _ in range(300)]
    for data in cases:
        assert hashes.csum16(data) == _csum_reference(data), data.hex()


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(entries=hst.lists(hst.tuples(hst.integers(0, 255), hst.integers(0, 255), hst.integers(0, 3)),
                         min_size=0, max_size=12),
       keys=hst.lists(hst.integers(0, 255), min_size=1, max_size=20))
def test_ternary_lookup_matches_brute_force(entries: list, keys: list) -> None:
    t = _table([("ternary", 8)], size=None)
    added = []
    for value, mask, prio in entries:
        try:
            t.add([Ternary(value, mask)], "a", [len(added)], priority=prio)
            added.append((value & mask, mask, prio, len(added)))
        except TableError:
            assert any((value & mask, mask, prio) == e[:3] for e in added)  # only duplicates are refused
    for k in keys:
        cands = [e for e in added if k & e[1] == e[0]]
        # larger priority wins; among equals the first inserted
        best = min(cands, key=lambda e: (-e[2], e[3])) if cands else None
        got = t.lookup((k,))
        assert (got.params[0] if got else None) == (best[3] if best else None)


@settings(max_examples=60, deadline=None)
@given(prefixes=hst.lists(hst.tuples(hst.integers(0, 0xFFFF), hst.integers(0, 16)), max_size=12),
       keys=hst.lists(hst.integers(0, 0xFFFF), min_size=1, max_size=20))
def test_lpm_lookup_matches_brute_force(prefixes: list, keys: list) -> None:
    t = _table([("lpm", 16)], size=None)
    added = {}
    for value, plen in prefixes:
        m = (0xFFFF << (16 - plen)) & 0xFFFF
        if (value & m, plen) in added:
            continue
        added[(value & m, plen)] = len(added)
        t.add([Lpm(value, plen)], "a", [added[(value & m, plen)] % 256])
    for k in keys:
        cands = [(plen, idx) for (v, plen), idx in added.items() if k & ((0xFFFF << (16 - plen)) & 0xFFFF) == v]
        got = t.lookup((k,))
        if not cands:
            assert got is None
        else:
            assert got.params[0] == max(cands)[1] % 256
