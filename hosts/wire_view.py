"""How the wire definition reads to a person: tails and flag bits, for the packet tools.

:mod:`hosts.wire` declares every field as data (``COMMON_FIELDS``, each
message's ``BODY`` and counted-list ``TAIL``); flag bytes are plain integers
there.  The Scapy layers (:mod:`hosts.scapy_layers`) and the Wireshark
dissector (:mod:`hosts.wire_lua`) both need the tails' shapes and the flag
bits' names; this module is their one reader, so the two tools can never
describe a tail differently.

A message whose dataclass has a field that is neither in the common header,
its ``BODY``, a payload nor its ``TAIL`` makes :func:`tail_of` raise, so a
new message with a new kind of tail fails loudly in the drift tests instead
of dissecting wrongly.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from p4mcc.hosts import wire
from p4mcc.hosts.wire import ListTail


@dataclass(frozen=True)
class Tail:
    """What follows a message's fixed body: nothing, the payload (rest), or a counted list."""

    kind: str  # "none" | "payload" | "list"
    items: ListTail | None = None


_COMMON_ATTRS = {"session_id", "seq", "timestamp", "flags", "stamp", "share"}


def tail_of(cls: type[wire.Message]) -> Tail:
    """The tail of message class ``cls`` (see the module docstring)."""
    body = {f.name for f in cls.BODY}
    extra = [f.name for f in dataclasses.fields(cls) if f.name not in body | _COMMON_ATTRS]
    if not extra:
        return Tail("none")
    if extra == ["payload"]:
        return Tail("payload")
    if cls.TAIL is not None and extra == [cls.TAIL.name] and cls.TAIL.count_field in body:
        return Tail("list", cls.TAIL)
    raise TypeError(f"{cls.__name__}: tail field(s) {extra} are neither a payload nor its TAIL; "
                    "declare a counted list as TAIL (hosts/wire.py)")


def _bits(flag_class: type) -> dict[int, str]:
    return {v: k.lower() for k, v in vars(flag_class).items()
            if k.isupper() and isinstance(v, int)}


#: Names of the bits of the common ``flags`` byte.
COMMON_FLAG_BITS: dict[int, str] = _bits(wire.Flags)
#: Names of the bits of flag bytes in message bodies, by (message class name, field).
BODY_FLAG_BITS: dict[tuple[str, str], dict[int, str]] = {
    ("TfmccReport", "rflags"): _bits(wire.TfmccReportFlags),
    ("TfmccData", "dflags"): _bits(wire.TfmccDataFlags),
    ("RlaSack", "sflags"): _bits(wire.RlaSackFlags),
}


def snake(name: str) -> str:
    """``TfmccReport`` -> ``tfmcc_report`` (the same rule as the P4 header names)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def tail_text(cls: type[wire.Message]) -> str:
    """The tail of ``cls`` in words (``docs/wire-format.md``); empty: no tail."""
    tail = tail_of(cls)
    if tail.kind == "payload":
        return "payload (rest of the datagram)"
    if tail.kind == "list" and tail.items is not None:
        it = tail.items
        each = " then ".join(f"`{f.name}` {'i' if f.signed else 'u'}{f.bits}" for f in it.item)
        return f"`{it.count_field}` {it.item_name}s, each {each}"
    return ""


WIRE_DOC = "docs/wire-format.md"


def splice(document: str, begin: str, end: str, text: str) -> str:
    """``document`` with the part between the ``begin`` and ``end`` markers replaced by ``text``.

    ``text`` carries the markers itself (generated parts of the docs are
    delimited by them).
    """
    head, _, rest = document.partition(begin)
    _, _, tail = rest.partition(end)
    return head + text + tail


def rewrite_doc(begin: str, end: str, text: str, doc: str = WIRE_DOC) -> None:
    """Splice ``text`` into ``doc`` (a path relative to the repository) in place."""
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / doc
    path.write_text(splice(path.read_text(), begin, end, text))
