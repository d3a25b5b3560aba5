"""Table lookup structures kept in place agree with a brute-force reading of BMv2's rules.

Random sequences of inserts, modifies, deletes and clears are interleaved
with lookups; after every step each lookup must return the entry the
reference picks from the full entry list: exact match; longest prefix; or
highest priority with ties going to the entry inserted first.
"""

from __future__ import annotations

import random
from typing import Optional

import pytest

from p4mcc.p4switch.runtime.tables import (ActionCall, ActionSpec, Exact, KeySpec, Lpm, OptionalMatch, Range, Table,
                                     TableEntry, TableError, Ternary)

W = 8  # narrow keys so random lookups hit often
EXACT_SPAN = 8  # exact values (entries and lookups) drawn from 0..7 for the same reason


def _table(kinds: list[str]) -> Table:
    keys = [KeySpec(f"k{i}", k, W) for i, k in enumerate(kinds)]
    actions = {"a": ActionSpec("a", [("x", 8)]), "b": ActionSpec("b", [])}
    return Table("t", keys, actions, ActionCall("b", ()))


def _hits(m, v: int) -> bool:
    if isinstance(m, Exact):
        return v == m.value
    if isinstance(m, Lpm):
        shift = W - m.prefix_len
        return (v >> shift) == (m.value >> shift)
    if isinstance(m, Ternary):
        return v & m.mask == m.value
    if isinstance(m, Range):
        return m.low <= v <= m.high
    return m.value is None or v == m.value


def reference(t: Table, key: tuple[int, ...]) -> Optional[TableEntry]:
    """The entry BMv2 picks, from the entry list alone."""
    live = sorted(t.entries.values(), key=lambda e: e.handle)
    hits = [e for e in live if all(_hits(m, v) for m, v in zip(e.keys, key))]
    if not hits:
        return None
    if t.needs_priority:
        top = max(e.priority or 0 for e in hits)
        return next(e for e in hits if (e.priority or 0) == top)  # earliest handle among the best
    lpm = [i for i, k in enumerate(t.keys) if k.match_kind == "lpm"]
    if lpm:
        return max(hits, key=lambda e: e.keys[lpm[0]].prefix_len)
    assert len(hits) == 1
    return hits[0]


def _random_match(kind: str, rng: random.Random):
    v = rng.randrange(1 << W)
    if kind == "exact":
        return Exact(v % EXACT_SPAN)
    if kind == "lpm":
        return Lpm(v, rng.choice([0, 1, 3, 4, 6, 8]))
    if kind == "ternary":
        return Ternary(v, rng.choice([0, 0xF0, 0x0F, 0xFF, 0xAA]))
    if kind == "range":
        lo = rng.randrange(1 << W)
        return Range(lo, min((1 << W) - 1, lo + rng.randrange(64)))
    return OptionalMatch(rng.choice([None, v]))


@pytest.mark.parametrize("kinds", [["exact"], ["exact", "lpm"], ["lpm"], ["ternary"], ["ternary", "exact"],
                                   ["range", "optional"], ["lpm", "lpm"]])
def test_random_writes_keep_lookups_equal_to_reference(kinds: list[str]) -> None:
    rng = random.Random(f"{kinds}")
    t = _table(kinds)
    outcomes = {True: 0, False: 0}
    for step in range(600):
        op = rng.random()
        if op < 0.55 or not t.entries:
            keys = [_random_match(k, rng) for k in kinds]
            prio = rng.randrange(6) if t.needs_priority else None  # few priorities: many ties
            try:
                t.add(keys, "a", (step % 256,), priority=prio)
            except TableError as e:
                assert "duplicate" in str(e)
        elif op < 0.75:
            t.modify(rng.choice(list(t.entries)), "b")
        elif op < 0.98:
            t.delete(rng.choice(list(t.entries)))
        else:
            t.clear()
        for _ in range(4):
            key = tuple(rng.randrange(EXACT_SPAN if k == "exact" else 1 << W) for k in kinds)
            got = t.lookup(key)
            assert got is reference(t, key), (step, key)
            outcomes[got is not None] += 1
    assert outcomes[True] > 100 and outcomes[False] > 100  # both hits and misses were checked


def test_priority_ties_go_to_the_earlier_entry_across_deletes() -> None:
    t = _table(["ternary"])
    first = t.add([Ternary(0, 0)], "a", (1,), priority=5)
    second = t.add([Ternary(1, 1)], "a", (2,), priority=5)
    high = t.add([Ternary(1, 0xFF)], "a", (3,), priority=9)
    assert t.lookup((1,)).handle == high
    t.delete(high)
    assert t.lookup((1,)).handle == first  # same priority: the earlier insert wins
    t.delete(first)
    assert t.lookup((1,)).handle == second
    again = t.add([Ternary(0, 0)], "a", (4,), priority=5)  # re-added: now the later one
    assert t.lookup((1,)).handle == second and t.lookup((0,)).handle == again


def test_find_and_duplicates_use_the_match_identity() -> None:
    t = _table(["ternary"])
    h = t.add([Ternary(0x12, 0xFF)], "a", (1,), priority=3)
    assert t.find([Ternary(0x12, 0xFF)], 3) == h
    assert t.find([Ternary(0x12, 0xFF)], 4) is None  # priority is part of the identity
    t.add([Ternary(0x12, 0xFF)], "a", (1,), priority=4)
    with pytest.raises(TableError, match="duplicate"):
        t.add([Ternary(0x12, 0xFF)], "b", priority=3)
    t.delete(h)
    assert t.find([Ternary(0x12, 0xFF)], 3) is None
    assert t.add([Ternary(0x12, 0xFF)], "b", priority=3) > h

    e = _table(["lpm"])
    h = e.add([Lpm(0x10, 4)], "a", (1,))
    with pytest.raises(TableError, match="duplicate"):
        e.add([Lpm(0x1F, 4)], "a", (2,))  # the same prefix once masked
    e.delete(h)
    assert e.lookup((0x13,)) is None and e.find([Lpm(0x10, 4)]) is None
