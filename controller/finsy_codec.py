"""Conversion between :mod:`controller.state` values and finsy entities.

finsy resolves names to P4Info ids (its ``P4Schema``), so this module only
maps shapes: our frozen, integer-valued entities to finsy's dataclasses and
back.  Read-back values are normalised to integers whatever ``@format``
annotation the P4Info carries (finsy decodes annotated fields to
``IPv4Address``/``MACAddress`` objects), so a read-back entry compares equal
to the desired one.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import finsy as fy

from p4mcc.controller.state import (
    CloneSession,
    DefaultAction,
    DigestConfig,
    Entity,
    MeterConfig,
    MulticastGroup,
    SwitchState,
    TableEntry,
)


def _to_int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return int(v)
    if isinstance(v, fy.MACAddress):
        return int(v)
    if isinstance(v, str):
        return int(v, 0)
    raise TypeError(f"cannot read {v!r} as an integer")


def _norm_match(v: Any) -> int | tuple[int, int]:
    if isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return (int(v.network_address), v.prefixlen)
    if isinstance(v, tuple):
        return (_to_int(v[0]), _to_int(v[1]))
    return _to_int(v)


def to_finsy(ent: Entity) -> Any:
    """The finsy entity that writes ``ent``."""
    if isinstance(ent, TableEntry):
        return fy.P4TableEntry(
            ent.table,
            match=fy.P4TableMatch(dict(ent.match)),
            action=fy.P4TableAction(ent.action, **dict(ent.params)),
            priority=ent.priority,
        )
    if isinstance(ent, DefaultAction):
        return fy.P4TableEntry(
            ent.table,
            action=fy.P4TableAction(ent.action, **dict(ent.params)),
            is_default_action=True,
        )
    if isinstance(ent, MulticastGroup):
        return fy.P4MulticastGroupEntry(ent.group_id, replicas=list(ent.replicas))
    if isinstance(ent, CloneSession):
        return fy.P4CloneSessionEntry(
            ent.session_id, replicas=list(ent.replicas), packet_length_bytes=ent.packet_length
        )
    if isinstance(ent, MeterConfig):
        return fy.P4MeterEntry(
            ent.meter,
            index=ent.index,
            config=fy.P4MeterConfig(cir=ent.cir, cburst=ent.cburst, pir=ent.pir, pburst=ent.pburst),
        )
    if isinstance(ent, DigestConfig):
        return fy.P4DigestEntry(
            ent.digest,
            max_list_size=ent.max_list_size,
            max_timeout_ns=ent.max_timeout_ns,
            ack_timeout_ns=ent.ack_timeout_ns,
        )
    raise TypeError(f"not a switch-state entity: {ent!r}")


def _replicas(reps: Any) -> tuple[tuple[int, int], ...]:
    out = []
    for r in reps:
        if isinstance(r, int):
            out.append((r, 0))
        elif isinstance(r, fy.P4Replica) or hasattr(r, "port"):
            out.append((int(r.port), int(r.instance)))
        else:
            out.append((int(r[0]), int(r[1])))
    return tuple(sorted(out))


class SchemaError(ValueError):
    """A name the switch's P4Info does not define."""


def _full(kind: str, mapping: Any, name: str) -> str:
    obj = mapping.get(name)
    if obj is None:
        raise SchemaError(f"{kind} {name!r} is not in the switch's P4Info")
    return obj.name


def _table_action(schema: Any, table: str, action: str) -> str:
    """The full name of ``action`` as ``table`` lists it.

    A program whose control is instantiated several times has one action per
    instance (``record1.set_group``); a P4Info that lists one shared action
    for all instances is accepted by matching the action's last name
    component among the table's actions when it is unique.
    """
    t = schema.tables.get(table)
    if t is None:
        raise SchemaError(f"table {table!r} is not in the switch's P4Info")
    ref = t.actions.get(action)
    if ref is not None:
        return schema.actions[ref.id].name
    short = action.rsplit(".", 1)[-1]
    cands = [schema.actions[r.id].name for r in t.actions if schema.actions[r.id].name.rsplit(".", 1)[-1] == short]
    if len(cands) == 1:
        return cands[0]
    raise SchemaError(f"table {t.name}: action {action!r} is not one of its actions")


def canonical(state: SwitchState, schema: Any) -> SwitchState:
    """``state`` with every name spelled as the switch's P4Info spells it.

    Read-back entities come back with P4Info names, so desired state passes
    through here before a diff; unknown names raise :class:`SchemaError`.
    """
    out = SwitchState()
    for e in state:
        if isinstance(e, TableEntry):
            e = TableEntry(_full("table", schema.tables, e.table), e.match,
                           _table_action(schema, e.table, e.action), e.params, e.priority)
        elif isinstance(e, DefaultAction):
            e = DefaultAction(_full("table", schema.tables, e.table), _table_action(schema, e.table, e.action), e.params)
        elif isinstance(e, MeterConfig):
            e = MeterConfig(_full("meter", schema.meters, e.meter), e.index, e.cir, e.cburst, e.pir, e.pburst)
        elif isinstance(e, DigestConfig):
            e = DigestConfig(_full("digest", schema.digests, e.digest), e.max_timeout_ns, e.max_list_size,
                             e.ack_timeout_ns)
        out.add(e)
    return out


def from_finsy(ent: Any, schema: Any) -> Entity | None:
    """Our entity for a read-back finsy entity (None for kinds we do not manage)."""
    if isinstance(ent, fy.P4TableEntry):
        action = ent.action
        if action is not None and not isinstance(action, fy.P4TableAction):
            return None  # action-profile tables are not used by the program
        t = schema.tables[ent.table_id]
        table = t.name
        name = schema.actions[action.name].name if action is not None else "NoAction"
        params = {k: _to_int(v) for k, v in (action.args if action is not None else {}).items()}
        if ent.is_default_action:
            return DefaultAction(table, name, tuple(sorted(params.items())))
        # finsy decodes match fields under their alias (``tpa``); use the full name
        match = {t.match_fields[k].name: _norm_match(v) for k, v in (ent.match or {}).items()}
        return TableEntry.make(table, match, name, params, ent.priority)
    if isinstance(ent, fy.P4MulticastGroupEntry):
        return MulticastGroup(ent.multicast_group_id, _replicas(ent.replicas))
    if isinstance(ent, fy.P4CloneSessionEntry):
        return CloneSession(ent.session_id, _replicas(ent.replicas), ent.packet_length_bytes)
    if isinstance(ent, fy.P4MeterEntry):
        if ent.config is None or ent.index is None:
            return None
        c = ent.config
        return MeterConfig(schema.meters[ent.meter_id].name, ent.index, c.cir, c.cburst, c.pir, c.pburst)
    if isinstance(ent, fy.P4DigestEntry):
        return DigestConfig(schema.digests[ent.digest_id].name, ent.max_timeout_ns, ent.max_list_size,
                            ent.ack_timeout_ns)
    return None


def state_from_finsy(entities: list[Any], schema: Any) -> SwitchState:
    """Collect read-back finsy entities into a :class:`SwitchState`."""
    st = SwitchState()
    for e in entities:
        ours = from_finsy(e, schema)
        if ours is not None:
            st.bucket(ours)[ours.key] = ours
    return st
