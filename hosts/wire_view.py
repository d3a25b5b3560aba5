"""How the wire definition reads to a person: tails and flag bits, for the packet tools.

:mod:`hosts.wire` defines every fixed field as data (``COMMON_FIELDS``,
``Message.BODY``), but the variable *tails* (payload, SACK blocks, NACK lists)
live in codec methods, and flag bytes are plain integers there.  The Scapy
layers (:mod:`hosts.scapy_layers`) and the Wireshark dissector
(:mod:`hosts.wire_lua`) both need those shapes and names as data; this module
is their one owner, so the two tools can never describe a tail differently.

A message whose dataclass has a field that is neither in the common header,
its ``BODY``, nor a tail known here makes :func:`tail_of` raise, so a new
message with a new kind of tail fails loudly in the drift tests instead of
dissecting wrongly.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from hosts import wire


@dataclass(frozen=True)
class ListTail:
    """A counted list after the body: ``count_field`` (a body field) items of ``item`` fields."""

    name: str
    count_field: str
    item: tuple[wire.WireField, ...]
    item_name: str

    @property
    def item_size(self) -> int:
        return sum(f.bits for f in self.item) // 8


@dataclass(frozen=True)
class Tail:
    """What follows a message's fixed body: nothing, the payload (rest), or a counted list."""

    kind: str  # "none" | "payload" | "list"
    items: ListTail | None = None


#: Counted-list tails by dataclass field name.
LIST_TAILS: dict[str, ListTail] = {
    "blocks": ListTail("blocks", "nblocks", (wire.WireField("start", 32), wire.WireField("end", 32)),
                       "block"),
    "missing": ListTail("missing", "count", (wire.WireField("seq", 32),), "seq"),
}

_COMMON_ATTRS = {"session_id", "seq", "timestamp", "flags"}


def tail_of(cls: type[wire.Message]) -> Tail:
    """The tail of message class ``cls`` (see the module docstring)."""
    body = {f.name for f in cls.BODY}
    extra = [f.name for f in dataclasses.fields(cls) if f.name not in body | _COMMON_ATTRS]
    if not extra:
        return Tail("none")
    if extra == ["payload"]:
        return Tail("payload")
    if len(extra) == 1 and extra[0] in LIST_TAILS and LIST_TAILS[extra[0]].count_field in body:
        return Tail("list", LIST_TAILS[extra[0]])
    raise TypeError(f"{cls.__name__}: tail field(s) {extra} unknown to hosts/wire_view.py; "
                    "describe them in LIST_TAILS")


def _bits(flag_class: type) -> dict[int, str]:
    return {v: k.lower() for k, v in vars(flag_class).items()
            if k.isupper() and isinstance(v, int)}


#: Names of the bits of the common ``flags`` byte.
COMMON_FLAG_BITS: dict[int, str] = _bits(wire.Flags)
#: Names of the bits of flag bytes in message bodies, by (message class name, field).
BODY_FLAG_BITS: dict[tuple[str, str], dict[int, str]] = {
    ("TfmccReport", "rflags"): _bits(wire.TfmccReportFlags),
    ("TfmccData", "dflags"): _bits(wire.TfmccDataFlags),
}


def snake(name: str) -> str:
    """``TfmccReport`` -> ``tfmcc_report`` (the same rule as the P4 header names)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
