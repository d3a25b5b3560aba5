"""P4Info index and P4Runtime value codec shared by the server's handlers.

One :class:`Schema` is built per committed pipeline: it resolves the ids a
request carries to P4Info objects (and their fully qualified names, which the
interpreter's runtime API takes), so handlers never scan P4Info lists.
Bytestrings follow the spec's rules (section "Bytestrings"): any length is
accepted as long as the value fits the declared width, an empty string is
rejected, and the server always answers with the shortest encoding
(read-write symmetry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finsy.proto import p4i

from .errors import P4RTError, Code


def decode_uint(data: bytes, width: int, what: str) -> int:
    """A P4Runtime bytestring as an unsigned integer of ``width`` bits."""
    if not data:
        raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: empty bytestring (a value has at least one byte)")
    value = int.from_bytes(data, "big")
    if width and value >> width:
        raise P4RTError(Code.OUT_OF_RANGE, f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


def encode_uint(value: int) -> bytes:
    """The canonical (shortest, at least one byte) big-endian encoding of ``value``."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_width(value: int, width: int) -> bytes:
    """Full-width encoding, for headers whose bytes must line up."""
    return value.to_bytes(max(1, (width + 7) // 8), "big")


@dataclass
class TableInfo:
    msg: p4i.Table
    name: str
    fields: dict[int, p4i.MatchField]
    actions: dict[int, int]  # action id -> ActionRef.Scope
    needs_priority: bool
    const_default_action_id: int
    is_const: bool
    direct_counter_id: int = 0
    direct_meter_id: int = 0


@dataclass
class Schema:
    """Id-indexed view of one P4Info."""

    p4info: p4i.P4Info
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, p4i.Action] = field(default_factory=dict)
    counters: dict[int, p4i.Counter] = field(default_factory=dict)
    direct_counters: dict[int, p4i.DirectCounter] = field(default_factory=dict)
    meters: dict[int, p4i.Meter] = field(default_factory=dict)
    direct_meters: dict[int, p4i.DirectMeter] = field(default_factory=dict)
    registers: dict[int, p4i.Register] = field(default_factory=dict)
    value_sets: dict[int, p4i.ValueSet] = field(default_factory=dict)
    digests: dict[int, p4i.Digest] = field(default_factory=dict)
    digests_by_name: dict[str, p4i.Digest] = field(default_factory=dict)
    packet_in: p4i.ControllerPacketMetadata | None = None
    packet_out: p4i.ControllerPacketMetadata | None = None

    @classmethod
    def build(cls, info: p4i.P4Info) -> "Schema":
        s = cls(info)
        for a in info.actions:
            s.actions[a.preamble.id] = a
        for c in info.direct_counters:
            s.direct_counters[c.preamble.id] = c
        for m in info.direct_meters:
            s.direct_meters[m.preamble.id] = m
        for t in info.tables:
            fields = {f.id: f for f in t.match_fields}
            needs_priority = any(
                f.match_type in (p4i.MatchField.TERNARY, p4i.MatchField.RANGE, p4i.MatchField.OPTIONAL)
                for f in t.match_fields
            )
            ti = TableInfo(
                t, t.preamble.name, fields, {r.id: r.scope for r in t.action_refs}, needs_priority,
                t.const_default_action_id, t.is_const_table,
            )
            for rid in t.direct_resource_ids:
                if rid in s.direct_counters:
                    ti.direct_counter_id = rid
                elif rid in s.direct_meters:
                    ti.direct_meter_id = rid
            s.tables[t.preamble.id] = ti
        for c in info.counters:
            s.counters[c.preamble.id] = c
        for m in info.meters:
            s.meters[m.preamble.id] = m
        for r in info.registers:
            s.registers[r.preamble.id] = r
        for v in info.value_sets:
            s.value_sets[v.preamble.id] = v
        for d in info.digests:
            s.digests[d.preamble.id] = d
            s.digests_by_name[d.preamble.name] = d
        for cpm in info.controller_packet_metadata:
            if cpm.preamble.name == "packet_in":
                s.packet_in = cpm
            elif cpm.preamble.name == "packet_out":
                s.packet_out = cpm
        s._check_ids_unique()
        return s

    def _check_ids_unique(self) -> None:
        seen: dict[int, str] = {}
        info = self.p4info
        groups: list[Any] = [info.tables, info.actions, info.counters, info.direct_counters, info.meters,
                             info.direct_meters, info.registers, info.digests, info.controller_packet_metadata,
                             info.action_profiles, info.value_sets]
        for group in groups:
            for obj in group:
                pid = obj.preamble.id
                if pid == 0:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"P4Info object {obj.preamble.name!r} has id 0")
                if pid in seen:
                    raise P4RTError(
                        Code.INVALID_ARGUMENT,
                        f"P4Info id {pid:#x} used by both {seen[pid]!r} and {obj.preamble.name!r}",
                    )
                seen[pid] = obj.preamble.name

    # -- lookups raising the spec's codes ----------------------------------

    def table(self, table_id: int) -> TableInfo:
        try:
            return self.tables[table_id]
        except KeyError:
            raise P4RTError(Code.NOT_FOUND, f"no table with id {table_id:#x}") from None

    def action(self, action_id: int) -> p4i.Action:
        try:
            return self.actions[action_id]
        except KeyError:
            raise P4RTError(Code.NOT_FOUND, f"no action with id {action_id:#x}") from None

    def lookup(self, kind: str, obj_id: int) -> Any:
        table: dict[int, Any] = getattr(self, kind)
        try:
            return table[obj_id]
        except KeyError:
            singular = kind.rstrip("s").replace("_", " ")
            raise P4RTError(Code.NOT_FOUND, f"no {singular} with id {obj_id:#x}") from None
