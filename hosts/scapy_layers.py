"""Scapy layers for every p4mcc message, built from :mod:`hosts.wire` at import time.

Import this module and p4mcc packets read like any other protocol in Scapy::

    from scapy.all import Ether, IP, UDP, rdpcap
    from p4mcc.hosts.scapy_layers import P4mcc, TfmccReport

    frame = Ether() / IP(dst="10.0.1.1") / UDP(sport=5001, dport=5001) / P4mcc(session_id=1) / TfmccReport(rate=10**6)
    rdpcap("results/demo-sim/pcaps/s1-eth2_in.pcap")[0].show()

Layout: :class:`P4mcc` is the common header; its ``msg_type`` chooses the body
layer (one class per message, named like the codec class: ``WebrcData``,
``TfmccReport``, ``RlaSack``, ...).  Data messages carry their application
payload as ``Raw`` after the body; RLA SACK blocks and MTCP NACK lists are
fields of the body layer, counted by ``nblocks`` / ``count``.  When building,
``msg_type``, ``length`` and the counts fill themselves in; ``stamp`` starts
unstamped (0), as senders send it.

The classes are generated from the same tables the codec and ``wire.p4`` use,
so a message added to ``hosts/wire.py`` gets its layer with no edit here;
``tests/packets/test_scapy_drift.py`` checks every layer against the codec.

Binding: UDP ports 5000-5999 (where scenarios put sessions by default)
dissect as p4mcc when the payload starts with the p4mcc magic and version,
also ports Scapy binds to something else (5353).  A scenario that names
another port: call :func:`bind_port`.
"""

from __future__ import annotations

from typing import Any

from scapy.config import conf
from scapy.fields import (
    ByteEnumField,
    ByteField,
    Field,
    FieldLenField,
    FieldListField,
    FlagsField,
    IntField,
    LongField,
    PacketListField,
    ShortField,
    SignedByteField,
    SignedIntField,
    SignedLongField,
    SignedShortField,
    XByteField,
    XShortField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, Padding, bind_layers, bind_top_down

from p4mcc.hosts import wire
from p4mcc.hosts.wire_view import BODY_FLAG_BITS, COMMON_FLAG_BITS, ListTail, tail_of

#: UDP ports bound by default (where scenarios put sessions unless they name a port).
DEFAULT_PORTS = range(5000, 6000)

_FIELD = {
    (8, False): ByteField, (8, True): SignedByteField,
    (16, False): ShortField, (16, True): SignedShortField,
    (32, False): IntField, (32, True): SignedIntField,
    (64, False): LongField, (64, True): SignedLongField,
}


def _flags_field(name: str, bits: dict[int, str], width: int) -> FlagsField:
    names = [bits.get(1 << i, f"bit{i}") for i in range(width)]
    return FlagsField(name, 0, width, names)


def _scapy_field(f: wire.WireField, flag_bits: dict[int, str] | None = None) -> Field[Any, Any]:
    if flag_bits is not None and not f.signed:
        return _flags_field(f.name, flag_bits, f.bits)
    return _FIELD[(f.bits, f.signed)](f.name, 0)


def _common_fields() -> list[Field[Any, Any]]:
    out: list[Field[Any, Any]] = []
    for f in wire.COMMON_FIELDS:
        if f.name == "magic":
            out.append(XShortField("magic", wire.MAGIC))
        elif f.name == "version":
            out.append(ByteField("version", wire.VERSION))
        elif f.name == "stamp":
            out.append(XByteField("stamp", wire.Stamp.NOT_STAMPED))
        elif f.name == "msg_type":
            out.append(ByteEnumField("msg_type", None, {int(t): t.name for t in wire.MsgType}))
        elif f.name == "flags":
            out.append(_flags_field("flags", COMMON_FLAG_BITS, f.bits))
        elif f.name == "length":
            out.append(ShortField("length", None))
        else:
            out.append(_scapy_field(f))
    return out


class P4mcc(Packet):
    """The p4mcc common header (``wire.COMMON_LEN`` bytes); the body layer follows by ``msg_type``."""

    name = "p4mcc"
    fields_desc = _common_fields()

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        # Offsets come from the definition, not from constants written here.
        offs = _OFFS
        if self.msg_type is None:
            pkt = pkt[: offs["msg_type"]] + b"\x00" + pkt[offs["msg_type"] + 1 :]
        if self.length is None:
            n = (len(pkt) + len(pay)).to_bytes(2, "big")
            pkt = pkt[: offs["length"]] + n + pkt[offs["length"] + 2 :]
        return pkt + pay

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        """Bytes that do not start with the p4mcc magic and version stay ``Raw``."""
        if _pkt is not None and not _is_p4mcc(_pkt):
            return conf.raw_layer
        return cls

    def do_dissect_payload(self, s: bytes) -> None:
        # A message with no body and no payload (an empty RlaData) still
        # names its layer, so every captured message shows its kind.
        if not s:
            cls = self.guess_payload_class(s)
            if cls in _EMPTY_BODIES:
                self.add_payload(cls())
            return
        super().do_dissect_payload(s)

    def mysummary(self) -> str:
        try:
            kind = wire.MsgType(self.msg_type).name
        except ValueError:
            kind = f"type 0x{self.msg_type:02x}"
        return self.sprintf(f"p4mcc {kind} session %P4mcc.session_id% seq %P4mcc.seq%")


def _common_offsets() -> dict[str, int]:
    offs, at = {}, 0
    for f in wire.COMMON_FIELDS:
        offs[f.name] = at
        at += f.bits // 8
    return offs


_OFFS = _common_offsets()


def _is_p4mcc(data: bytes) -> bool:
    return (len(data) >= wire.COMMON_LEN
            and int.from_bytes(data[_OFFS["magic"]:_OFFS["magic"] + 2], "big") == wire.MAGIC
            and data[_OFFS["version"]] == wire.VERSION)


def _item_layer(tail: ListTail, owner: str) -> type[Packet]:
    """One item of a counted tail (an RLA SACK block, an MTCP NACKed sequence)."""

    def extract_padding(self: Packet, s: bytes) -> tuple[bytes, bytes]:
        return b"", s

    return type(f"{owner}{tail.item_name.capitalize()}", (Packet,), {
        "name": f"{owner} {tail.item_name}",
        "fields_desc": [_scapy_field(f) for f in tail.item],
        "extract_padding": extract_padding,
        "__doc__": f"One {tail.item_name} of a {owner} tail.",
    })


def _body_layer(cls: type[wire.Message]) -> type[Packet]:
    tail = tail_of(cls)
    fields: list[Field[Any, Any]] = []
    items = tail.items if tail.kind == "list" else None
    for f in cls.BODY:
        if items is not None and f.name == items.count_field:
            fields.append(FieldLenField(f.name, None, count_of=items.name, fmt="!" + f.struct_code))
        else:
            fields.append(_scapy_field(f, BODY_FLAG_BITS.get((cls.__name__, f.name))))
    attrs: dict[str, Any] = {
        "name": f"p4mcc {cls.__name__}",
        "__doc__": f"Body of {cls.__name__} (msg_type 0x{int(cls.MSG_TYPE):02x}).",
    }
    if items is not None:
        count = items.count_field
        if len(items.item) == 1:
            fields.append(FieldListField(items.name, [], _scapy_field(items.item[0]),
                                         count_from=lambda p, c=count: getattr(p, c)))
        else:
            item_cls = _item_layer(items, cls.__name__)
            attrs[item_cls.__name__] = item_cls
            fields.append(PacketListField(items.name, [], item_cls,
                                          count_from=lambda p, c=count: getattr(p, c)))
    attrs["fields_desc"] = fields
    return type(cls.__name__, (Packet,), attrs)


#: Body layer class per message type.
LAYERS: dict[wire.MsgType, type[Packet]] = {}
for _mtype, _cls in wire.message_types().items():
    LAYERS[_mtype] = _body_layer(_cls)
    globals()[_cls.__name__] = LAYERS[_mtype]
    bind_layers(P4mcc, LAYERS[_mtype], msg_type=int(_mtype))
_EMPTY_BODIES = {c for c in LAYERS.values() if not c.fields_desc}


class _PortIn:
    """Compares equal to any port in ``ports``: one binding for a range of UDP ports."""

    def __init__(self, ports: range | set[int]) -> None:
        self.ports = ports

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and other in self.ports

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<p4mcc ports {self.ports}>"


_BOUND: set[int] = set()


def bind_port(*ports: int) -> None:
    """Dissect UDP traffic on ``ports`` (source or destination) as p4mcc, first of all bindings."""
    new = {p for p in ports if p not in DEFAULT_PORTS and p not in _BOUND}
    if not new:
        return
    _BOUND.update(new)
    _prepend(_PortIn(set(new)))


def _prepend(match: _PortIn) -> None:
    # Ahead of Scapy's own port bindings, so 5353 (mDNS) in the range still
    # tries p4mcc first; P4mcc.dispatch_hook leaves non-p4mcc bytes Raw.
    UDP.payload_guess = [({"dport": match}, P4mcc), ({"sport": match}, P4mcc)] + UDP.payload_guess


_prepend(_PortIn(DEFAULT_PORTS))
# Building UDP()/P4mcc() without ports uses the first default port.
bind_top_down(UDP, P4mcc, sport=DEFAULT_PORTS[0], dport=DEFAULT_PORTS[0])


def to_layers(msg: wire.Message) -> Packet:
    """The Scapy packet (``P4mcc / body [/ Raw]``) of a codec message, field for field."""
    common = {f.name: getattr(msg, f.name) for f in wire.COMMON_FIELDS
              if f.name in ("session_id", "seq", "timestamp", "flags", "stamp", "share")}
    body_cls = LAYERS[msg.MSG_TYPE]
    tail = tail_of(type(msg))
    kw: dict[str, Any] = {f.name: getattr(msg, f.name) for f in type(msg).BODY}
    if tail.kind == "list" and tail.items is not None:
        kw.pop(tail.items.count_field)
        values = getattr(msg, tail.items.name)
        if len(tail.items.item) == 1:
            kw[tail.items.name] = list(values)
        else:
            item_cls = body_cls.fields_desc[-1].cls
            kw[tail.items.name] = [item_cls(**dict(zip((f.name for f in tail.items.item), v)))
                                   for v in values]
    pkt = P4mcc(**common) / body_cls(**kw)
    if tail.kind == "payload" and msg.payload:  # type: ignore[attr-defined]
        pkt = pkt / conf.raw_layer(load=msg.payload)  # type: ignore[attr-defined]
    return pkt


def field_values(pkt: Packet) -> dict[str, Any]:
    """Plain values of a dissected p4mcc packet: the same names and types as the codec's message.

    Common-header fields, body fields, tails as tuples (SACK blocks as
    ``(start, end)`` pairs), ``payload`` as bytes for data messages.
    """
    head = pkt[P4mcc]
    out: dict[str, Any] = {f.name: int(head.getfieldval(f.name)) for f in wire.COMMON_FIELDS}
    body = head.payload
    mtype = wire.MsgType(out["msg_type"])
    cls = wire.message_types()[mtype]
    tail = tail_of(cls)
    for f in cls.BODY:
        out[f.name] = int(body.getfieldval(f.name))
    if tail.kind == "list" and tail.items is not None:
        vals = body.getfieldval(tail.items.name)
        if len(tail.items.item) == 1:
            out[tail.items.name] = tuple(int(v) for v in vals)
        else:
            out[tail.items.name] = tuple(tuple(int(i.getfieldval(f.name)) for f in tail.items.item)
                                         for i in vals)
    elif tail.kind == "payload":
        rest = body.payload
        data = isinstance(rest, conf.raw_layer) and not isinstance(rest, Padding)
        out["payload"] = bytes(rest.load) if data else b""
    return out


__all__ = ["DEFAULT_PORTS", "LAYERS", "P4mcc", "bind_port", "field_values", "to_layers",
           *(c.__name__ for c in wire.message_types().values())]
