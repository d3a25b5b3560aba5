"""The difference between desired and read-back switch state, as write ops.

``diff(desired, actual)`` returns the inserts, modifies and deletes that turn
``actual`` into ``desired``; applying them and diffing again yields nothing,
so ``apply`` is idempotent by construction and never re-inserts blindly.

Two kinds of state are modify-only in P4Runtime and are treated so: a table's
default action and an indirect meter cell always exist, so they are only
modified when they differ, and they are left alone when the desired state does
not mention them.

Ordering: all deletes come first (table entries before the groups and
sessions they may name), then inserts and modifies (groups, clone sessions,
meters and digests before the table entries that use them).  Deleting first
keeps a full table from refusing an entry whose key moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

from p4mcc.controller.state import KINDS, Entity, SwitchState

OpKind = Literal["insert", "modify", "delete"]

MODIFY_ONLY = frozenset({"defaults", "meters"})
"""State kinds that always exist on the switch (P4Runtime MODIFY only)."""

_WRITE_ORDER = ("groups", "clones", "meters", "digests", "defaults", "entries")
_DELETE_ORDER = ("entries", "digests", "clones", "groups")


@dataclass(frozen=True)
class Op:
    """One write: ``entity`` is the new value (the old one for a delete)."""

    kind: OpKind
    entity: Entity
    old: Entity | None = None

    def describe(self) -> str:
        sign = {"insert": "+", "modify": "~", "delete": "-"}[self.kind]
        return f"{sign} {self.entity.describe()}"


_REPRS: dict[object, str] = {}
_REPRS_MAX = 1 << 18


def _order(key: object) -> str:
    """``repr(key)``, the order ops are written in, remembered: the switches
    of one network share most keys (a route to every host), and formatting
    a key costs twenty times a look-up."""
    r = _REPRS.get(key)
    if r is None:
        if len(_REPRS) >= _REPRS_MAX:
            _REPRS.clear()
        r = _REPRS[key] = repr(key)
    return r


def diff(desired: SwitchState, actual: SwitchState, *, prune: bool = True) -> list[Op]:
    """Ops that make ``actual`` equal ``desired``.

    With ``prune=False`` entities present only on the switch are kept (used
    when an operator adds state by hand and wants ``apply`` to leave it).
    """
    ops: list[Op] = []
    if prune:
        for kind in _DELETE_ORDER:
            want, have = getattr(desired, kind), getattr(actual, kind)
            for key in sorted(set(have) - set(want), key=_order):
                ops.append(Op("delete", have[key]))
    for kind in _WRITE_ORDER:
        want, have = getattr(desired, kind), getattr(actual, kind)
        for key in sorted(want, key=_order):
            new = want[key]
            old = have.get(key)
            if old is None:
                ops.append(Op("modify" if kind in MODIFY_ONLY else "insert", new))
            elif old != new:
                ops.append(Op("modify", new, old))
    return ops


def apply_ops(state: SwitchState, ops: Iterable[Op]) -> SwitchState:
    """The state after ``ops`` (a model of the switch, used by tests and dry runs)."""
    out = SwitchState(**{k: dict(getattr(state, k)) for k in KINDS})
    for op in ops:
        bucket = out.bucket(op.entity)
        if op.kind == "delete":
            bucket.pop(op.entity.key, None)
        else:
            bucket[op.entity.key] = op.entity
    return out


def summarize(ops: Iterable[Op]) -> dict[str, int]:
    """Counts of inserts, modifies and deletes."""
    out = {"insert": 0, "modify": 0, "delete": 0}
    for op in ops:
        out[op.kind] += 1
    return out
