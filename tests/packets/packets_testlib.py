"""Hypothesis strategies over every p4mcc message, and the codec's view of a message as a dict."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from hosts import wire
from hosts.wire_view import tail_of


def _int(bits: int, signed: bool) -> st.SearchStrategy[int]:
    if signed:
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return st.integers(0, (1 << bits) - 1)


def message_of(cls: type[wire.Message]) -> st.SearchStrategy[wire.Message]:
    """Any valid message of class ``cls`` (every body field over its whole range, any tail)."""
    tail = tail_of(cls)
    kw: dict[str, st.SearchStrategy[Any]] = {
        "session_id": _int(32, False), "seq": _int(32, False),
        "timestamp": _int(32, False), "flags": _int(8, False),
    }
    for f in cls.BODY:
        kw[f.name] = _int(f.bits, f.signed)
    if tail.kind == "payload":
        kw["payload"] = st.binary(max_size=200)
    elif tail.kind == "list" and tail.items is not None:
        kw.pop(tail.items.count_field)
        limit = {"blocks": wire.MAX_SACK_BLOCKS, "missing": wire.MAX_NACK_SEQS}[tail.items.name]
        if len(tail.items.item) == 1:
            item: st.SearchStrategy[Any] = _int(tail.items.item[0].bits, False)
        else:
            item = st.tuples(*(_int(f.bits, f.signed) for f in tail.items.item))
        kw[tail.items.name] = st.lists(item, max_size=limit).map(tuple)
    return st.builds(cls, **kw)


def any_message() -> st.SearchStrategy[wire.Message]:
    """A message of any registered type (new types in hosts/wire.py join automatically)."""
    return st.one_of([message_of(c) for c in wire.message_types().values()])


def codec_values(msg: wire.Message) -> dict[str, Any]:
    """Every field of ``msg`` by name, including the header fields the codec computes."""
    data = msg.encode()
    out: dict[str, Any] = {f.name: v for f, v in zip(wire.COMMON_FIELDS, wire._COMMON.unpack_from(data))}
    for f in dataclasses.fields(msg):
        out[f.name] = getattr(msg, f.name)
    return out
