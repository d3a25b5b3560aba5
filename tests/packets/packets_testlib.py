"""Hypothesis strategies over every p4mcc message, and the codec's view of a message as a dict."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from p4mcc.hosts import wire, wire_view
from p4mcc.hosts.wire_view import tail_of


def _int(bits: int, signed: bool) -> st.SearchStrategy[int]:
    if signed:
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return st.integers(0, (1 << bits) - 1)


def message_of(cls: type[wire.Message]) -> st.SearchStrategy[wire.Message]:
    """Any valid message of class ``cls`` (every body field over its whole range, any tail)."""
    tail = tail_of(cls)
    kw: dict[str, st.SearchStrategy[Any]] = {
        "session_id": _int(32, False), "seq": _int(32, False),
        "timestamp": _int(32, False), "flags": _int(8, False), "stamp": _int(8, False),
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


# ---------------------------------------------------------------------------
# tshark with the generated dissector
# ---------------------------------------------------------------------------

_LUA: list[Path] = []


def lua_file() -> Path:
    """The generated dissector, written once per test run into a private temp folder."""
    if not _LUA:
        import atexit
        import tempfile

        from p4mcc.hosts import wire_lua

        folder = tempfile.TemporaryDirectory(prefix="p4mcc-lua-")
        atexit.register(folder.cleanup)
        _LUA.append(wire_lua.write(Path(folder.name)))
    return _LUA[0]


#: Names tshark gives to broken dissection: malformed packets, expert notes, Lua errors.
TROUBLE = ("_ws.malformed", "_ws.expert", "_ws.lua")


def tshark_frames(pcap: Path) -> list[dict[str, Any]]:
    """Per frame: the p4mcc fields tshark names (name -> list of values) and any trouble marks.

    Values are tshark's raw hex (``value`` attribute), so they compare exactly
    with the codec's integers and bytes.
    """
    proc = subprocess.run(["tshark", "-r", str(pcap), "-X", f"lua_script:{lua_file()}", "-T", "pdml"],
                          capture_output=True, text=True, timeout=120, check=True)
    frames = []
    for pkt in ET.fromstring(proc.stdout).iter("packet"):
        fields: dict[str, list[str]] = {}
        trouble = []
        protos = []
        for el in pkt.iter():
            name = el.get("name", "")
            if el.tag == "proto":
                protos.append(name)
            if name.startswith(TROUBLE) and name != "_ws.lua.fake":  # PDML's wrapper, not an error
                trouble.append(f"{name}: {el.get('showname') or el.get('show')}")
            elif name.startswith("p4mcc.") and el.tag == "field":
                fields.setdefault(name, []).append(el.get("value", ""))
        frames.append({"fields": fields, "trouble": trouble, "protos": protos})
    return frames


def tshark_expected(msg: wire.Message) -> dict[str, list[str]]:
    """The p4mcc fields (no flag bits) tshark should show for ``msg``, as raw hex values."""
    cls = type(msg)
    snake = wire_view.snake(cls.__name__)
    vals = codec_values(msg)

    def hx(v: int, f: wire.WireField) -> str:
        return f"{v & ((1 << f.bits) - 1):0{f.bits // 4}x}"

    out = {f"p4mcc.{f.name}": [hx(vals[f.name], f)] for f in wire.COMMON_FIELDS}
    for f in cls.BODY:
        out[f"p4mcc.{snake}.{f.name}"] = [hx(vals[f.name], f)]
    tail = tail_of(cls)
    if tail.kind == "payload" and vals["payload"]:
        out["p4mcc.payload"] = [vals["payload"].hex()]
    elif tail.kind == "list" and tail.items is not None:
        it = tail.items
        for i, f in enumerate(it.item):
            name = f"p4mcc.{snake}.{it.item_name}" + (f".{f.name}" if len(it.item) > 1 else "")
            items = vals[it.name]
            col = [v[i] if len(it.item) > 1 else v for v in items]
            if col:
                out[name] = [hx(v, f) for v in col]
    return out


def p4mcc_fields_only(fields: dict[str, list[str]]) -> dict[str, list[str]]:
    """Drop flag-bit and stamp-code subfields (``p4mcc.flags.retransmit``,
    ``p4mcc.stamp.queue``): they repeat their byte."""
    flag_names = {f"p4mcc.flags.{n}" for n in wire_view.COMMON_FLAG_BITS.values()}
    flag_names |= {"p4mcc.stamp.queue", "p4mcc.stamp.spare"}
    for (cls_name, fld), bits in wire_view.BODY_FLAG_BITS.items():
        flag_names |= {f"p4mcc.{wire_view.snake(cls_name)}.{fld}.{n}" for n in bits.values()}
    return {k: v for k, v in fields.items() if k not in flag_names}


def random_message(cls: type[wire.Message], rng: random.Random) -> wire.Message:
    """A random valid message of ``cls`` from a seeded generator (for captures checked by tshark)."""
    tail = tail_of(cls)

    def val(bits: int, signed: bool) -> int:
        v = rng.choice([0, 1, (1 << bits) - 1, rng.getrandbits(bits)])
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    kw: dict[str, Any] = {"session_id": rng.getrandbits(32), "seq": rng.getrandbits(32),
                          "timestamp": rng.getrandbits(32), "flags": rng.getrandbits(8),
                          "stamp": rng.getrandbits(8)}
    for f in cls.BODY:
        kw[f.name] = val(f.bits, f.signed)
    if tail.kind == "payload":
        kw["payload"] = rng.randbytes(rng.choice([0, 1, 100]))
    elif tail.kind == "list" and tail.items is not None:
        kw.pop(tail.items.count_field)
        n = rng.choice([0, 1, 3])
        if len(tail.items.item) == 1:
            kw[tail.items.name] = tuple(rng.getrandbits(32) for _ in range(n))
        else:
            kw[tail.items.name] = tuple(tuple(rng.getrandbits(f.bits) for f in tail.items.item)
                                        for _ in range(n))
    return cls(**kw)
