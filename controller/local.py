"""Applying switch state to an in-process p4switch (the simulator's switches).

:class:`LocalApplier` reads and writes a ``p4switch.interp.Switch`` through
its runtime API (docs/p4switch-api.md) with the same
:class:`~controller.state.SwitchState` values the P4Runtime path uses, so the
simulator configures its switch nodes with exactly what ``p4mcc ctl apply``
writes to real switches::

    from p4mcc.controller.desired import desired_state
    from p4mcc.controller.local import LocalApplier

    states = desired_state(topo, sessions)
    for name, node in switches.items():
        LocalApplier(node.switch, name).sync(states[name])

Digest configuration has no in-process counterpart (the interpreter queues
every digest; the caller polls them), so digest entries are accepted and
ignored.
"""

from __future__ import annotations

from typing import Any, Sequence

from p4mcc.controller.diff import Op, diff
from p4mcc.controller.errors import SwitchFault
from p4mcc.controller.state import (
    CloneSession,
    DefaultAction,
    DigestConfig,
    MeterConfig,
    MulticastGroup,
    SwitchState,
    TableEntry,
)

_HIDDEN_MGID = 1 << 16
"""The interpreter keeps multi-replica clone sessions in PRE groups at and
above this id (outside the program's 16-bit space); they are not ours to list."""


def _match_value(m: Any) -> Any:
    name = type(m).__name__
    if name == "Exact":
        return m.value
    if name == "Lpm":
        return (m.value, m.prefix_len)
    if name == "Ternary":
        return (m.value, m.mask)
    if name == "Range":
        return (m.low, m.high)
    return m.value  # Optional_


def _to_match(kind: str, v: Any) -> Any:
    from p4mcc.p4switch.runtime.tables import Exact, Lpm, Optional_, Range, Ternary

    if kind == "exact":
        return Exact(int(v))
    if kind == "lpm":
        return Lpm(*v) if isinstance(v, tuple) else Lpm(int(v), 0)
    if kind == "ternary":
        return Ternary(*v)
    if kind == "range":
        return Range(*v)
    return Optional_(int(v))


_PREPARED: dict[tuple, dict[Any, Any]] = {}
"""Entries already prepared, per table schema: every switch built from one
program has tables of equal schemas, and a network's switches hold many
equal entries (each switch's route to every host, with a handful of ports),
so a network's configuration normalises each distinct entry once.  Keyed
by the entry, and by the entry object's id (with the object, so the id
stays its own) to skip hashing an entry that many switches share."""
_PREPARED_MAX = 1 << 18


def _prepared(table: Any) -> dict[Any, Any]:
    """The memo of prepared entries for ``table``'s schema."""
    key = table.schema()
    memo = _PREPARED.get(key)
    if memo is None or len(memo) > _PREPARED_MAX:
        memo = _PREPARED[key] = {}
    return memo


def _prepare(table: Any, e: TableEntry) -> Any:
    """``e`` checked and normalised for ``table`` (``Table.prepare``)."""
    kinds = {k.name: k.match_kind for k in table.keys}
    keys = {k: _to_match(kinds.get(k, "exact"), v) for k, v in e.match}
    prio = e.priority if table.needs_priority else None
    return table.prepare(keys, e.action, dict(e.params), prio)


class LocalApplier:
    """Reads and writes one in-process switch; ``now`` feeds meter clocks."""

    def __init__(self, switch: Any, name: str = "local", now: float = 0.0) -> None:
        self.sw = switch
        self.name = name
        self.now = now
        self._digests: dict[str, DigestConfig] = {}

    # -- reading ---------------------------------------------------------
    def _param_names(self, table: Any, action: str) -> list[str]:
        spec = table.resolve_action(action)
        return [p for p, _w in spec.params]

    def read_state(self, desired: SwitchState | None = None) -> SwitchState:
        """The switch's state of the kinds the controller manages."""
        st = SwitchState()
        for tname, table in self.sw.tables.items():
            for e in table.entries.values():
                if e.is_const:
                    continue
                match = {k.name: _match_value(m) for k, m in zip(table.keys, e.keys)}
                params = dict(zip(self._param_names(table, e.action), e.params))
                st.add(TableEntry.make(tname, match, e.action, params, e.priority or 0))
        for mgid in sorted(self.sw.pre.groups):
            if mgid < _HIDDEN_MGID:
                st.add(MulticastGroup(mgid, tuple(sorted(self.sw.pre.replicate(mgid)))))
        for sid, ms in sorted(self.sw.mirror.items()):
            if getattr(ms, "mgid", None) is not None:
                reps = tuple(sorted(self.sw.pre.replicate(ms.mgid)))
            else:
                reps = ((int(ms.port), 0),)
            st.add(CloneSession(sid, reps, int(getattr(ms, "truncate", 0) or 0)))
        if desired is not None:
            for d in desired.defaults.values():
                table = self.sw.tables[self._resolve_table(d.table)]
                action, params = self.sw.table_get_default(d.table)
                st.add(DefaultAction(table.name, action,
                                     tuple(sorted(zip(self._param_names(table, action), params)))))
            for m in desired.meters.values():
                rates = self.sw.meter_get_rates(m.meter, m.index)
                if len(rates) == 2:
                    (cir, cb), (pir, pb) = rates
                    st.add(MeterConfig(m.meter, m.index, round(cir), int(cb), round(pir), int(pb)))
        for d in self._digests.values():
            st.add(d)
        return st

    def _resolve_table(self, name: str) -> str:
        from p4mcc.p4switch.interp.switch import resolve_name

        try:
            return resolve_name(self.sw.tables, name, "table")
        except KeyError as exc:
            raise SwitchFault(self.name, f"table {name}", str(exc).strip("\"'")) from None

    # -- writing ---------------------------------------------------------
    def write(self, ops: Sequence[Op]) -> None:
        """Apply ``ops``; the first failure becomes a :class:`SwitchFault`.
        A run of inserts into one table goes in as one bulk write of
        prepared entries (:func:`_prepared`), in the same order."""
        bulk = hasattr(self.sw, "table_add_prepared")
        i, n = 0, len(ops)
        while i < n:
            op = ops[i]
            e = op.entity
            if bulk and op.kind == "insert" and type(e) is TableEntry:
                j = i + 1
                while j < n and ops[j].kind == "insert" and type(ops[j].entity) is TableEntry \
                        and ops[j].entity.table == e.table:
                    j += 1
                self._insert_run(ops, i, j)
                i = j
                continue
            try:
                self._apply(op)
            except SwitchFault:
                raise
            except (KeyError, ValueError, IndexError, LookupError, RuntimeError) as exc:
                raise SwitchFault(self.name, f"{op.kind} {op.entity.describe()}", str(exc).strip("\"'")) from None
            i += 1

    def _insert_run(self, ops: Sequence[Op], i: int, j: int) -> None:
        """Insert ``ops[i:j]``, entries of one table, in one bulk write."""
        k = i
        try:
            table = self.sw.tables[self._resolve_table(ops[i].entity.table)]
            memo = _prepared(table)
            rows = []
            for k in range(i, j):
                e = ops[k].entity
                row = memo.get(id(e))  # the same entity object, shared by many switches' states
                if row is not None and row[0] is e:
                    rows.append(row[1])
                    continue
                row = memo.get(e)  # an equal entity
                if row is None:
                    row = memo[e] = _prepare(table, e)
                memo[id(e)] = (e, row)
                rows.append(row)
            k = i
            self.sw.table_add_prepared(table.name, rows)
        except SwitchFault:
            raise
        except (KeyError, ValueError, IndexError, LookupError, RuntimeError) as exc:
            k += getattr(exc, "index", 0)
            raise SwitchFault(self.name, f"insert {ops[k].entity.describe()}", str(exc).strip("\"'")) from None

    def _apply(self, op: Op) -> None:
        e = op.entity
        sw = self.sw
        if isinstance(e, TableEntry):
            table = sw.tables[self._resolve_table(e.table)]
            kinds = {k.name: k.match_kind for k in table.keys}
            keys = {k: _to_match(kinds.get(k, "exact"), v) for k, v in e.match}
            prio = e.priority if table.needs_priority else None
            if op.kind == "insert":
                sw.table_add(table.name, keys, e.action, dict(e.params), prio)
                return
            handle = sw.table_find(table.name, keys, prio)
            if handle is None:
                raise SwitchFault(self.name, f"{op.kind} {e.describe()}", "NOT_FOUND: no such entry")
            if op.kind == "modify":
                sw.table_modify(table.name, handle, e.action, dict(e.params))
            else:
                sw.table_delete(table.name, handle)
        elif isinstance(e, DefaultAction):
            sw.table_set_default(e.table, e.action, dict(e.params))
        elif isinstance(e, MulticastGroup):
            if op.kind == "delete":
                sw.delete_multicast_group(e.group_id)
            else:
                sw.set_multicast_group(e.group_id, list(e.replicas))
        elif isinstance(e, CloneSession):
            if op.kind == "delete":
                sw.mirroring_delete(e.session_id)
            else:
                sw.set_clone_session(e.session_id, list(e.replicas), e.packet_length)
        elif isinstance(e, MeterConfig):
            sw.meter_set_rates(e.meter, e.index, [(e.cir, e.cburst), (e.pir, e.pburst)], self.now)
        elif isinstance(e, DigestConfig):
            if op.kind == "delete":
                self._digests.pop(e.digest, None)
            else:
                self._digests[e.digest] = e

    def sync(self, desired: SwitchState, *, prune: bool = True) -> list[Op]:
        """Make the switch hold ``desired``; returns the ops written."""
        ops = diff(desired, self.read_state(desired), prune=prune)
        self.write(ops)
        return ops
