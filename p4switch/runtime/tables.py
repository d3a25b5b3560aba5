"""Match-action table store with BMv2's lookup semantics.

Keys are tuples of ints (one per key element, in key order).  An entry's
match is one ``Match`` per key element.  Lookup order:

* exact-only tables: a hash lookup;
* tables whose only non-exact key is one ``lpm``: longest prefix wins;
* tables with ternary, range or optional keys (or several lpm keys): the
  entry with the largest priority wins; ties go to the entry inserted first
  (BMv2 keeps entries in handle order and keeps the first best match).

Priority convention: a larger number is a higher priority, as in P4Runtime
and p4c's STF files.

Control-plane cost: every lookup structure is updated in place, so insert,
modify and delete are O(1) amortised (a dict per match identity, per exact
key, per prefix length, per priority).  The only ordered lists are the
distinct prefix lengths (at most key width + 1) and the distinct priorities,
kept sorted by binary insertion when a new value first appears.  Priority
tables scan their entries on lookup in any case (O(n)); the flat scan order
is rebuilt from the priority buckets by the first lookup after a change, so
a batch of writes costs one O(n) concatenation, not one sort per entry.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union


class TableError(Exception):
    """A control-plane request the table cannot satisfy (state unchanged)."""


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional_:
    """``optional`` match: ``value`` None is a wildcard."""

    value: Optional[int]


Match = Union[Exact, Lpm, Ternary, Range, Optional_]
# Public alias with the P4 keyword's name.
OptionalMatch = Optional_


@dataclass(frozen=True)
class KeySpec:
    """One key element: its control-plane name, match kind and bit width."""

    name: str
    match_kind: str
    width: int


@dataclass
class ActionSpec:
    """An action as the control plane sees it."""

    name: str
    params: list[tuple[str, int]]  # (name, width)
    fn: Any = None  # the lowered callable (interpreter's business)
    table_only: bool = False  # @tableonly
    default_only: bool = False  # @defaultonly


@dataclass
class TableEntry:
    handle: int
    keys: tuple[Match, ...]
    action: str
    params: tuple[int, ...]
    priority: Optional[int] = None
    is_const: bool = False
    fn: Any = None
    # direct resources, created by the owner when the table has them
    counter: Optional[list[int]] = None  # [packets, bytes]
    meter: Any = None


@dataclass
class ActionCall:
    """A resolved action with its data: what a hit or a miss runs."""

    action: str
    params: tuple[int, ...]
    fn: Any = None


#: (keys, action, params, priority): an entry as :meth:`Table.prepare` checked it
PreparedEntry = tuple[tuple[Match, ...], str, tuple[int, ...], Optional[int]]
#: An entry's keys as the control plane gives them: by key name, or one value per key in key order.
Keys = Union[dict[str, Any], Sequence[Any]]
#: An action's data as the control plane gives it: by parameter name, or in parameter order.
Params = Union[Sequence[int], dict[str, int]]


def _normalize(m: Union[Match, int, None], spec: KeySpec) -> Match:
    """Turn a user match value into the canonical ``Match`` for ``spec``."""
    full = (1 << spec.width) - 1
    kind = spec.match_kind
    if m is None:
        if kind == "exact":
            raise TableError(f"exact key {spec.name!r} needs a value")
        if kind == "lpm":
            return Lpm(0, 0)
        if kind == "ternary":
            return Ternary(0, 0)
        if kind == "range":
            return Range(0, full)
        if kind == "optional":
            return Optional_(None)
        raise TableError(f"unsupported match kind {kind!r}")
    if isinstance(m, bool):
        m = int(m)
    if isinstance(m, int):
        if kind == "exact":
            m = Exact(m)
        elif kind == "lpm":
            m = Lpm(m, spec.width)
        elif kind == "ternary":
            m = Ternary(m, full)
        elif kind == "range":
            m = Range(m, m)
        elif kind == "optional":
            m = Optional_(m)
        else:
            raise TableError(f"unsupported match kind {kind!r}")
    if kind == "exact" and isinstance(m, Exact):
        _check(m.value, spec)
        return m
    if kind == "lpm" and isinstance(m, Lpm):
        if not 0 <= m.prefix_len <= spec.width:
            raise TableError(f"prefix length {m.prefix_len} out of range for {spec.name!r}")
        _check(m.value, spec)
        pmask = full ^ ((1 << (spec.width - m.prefix_len)) - 1)
        return Lpm(m.value & pmask, m.prefix_len)
    if kind == "lpm" and isinstance(m, Exact):
        return _normalize(Lpm(m.value, spec.width), spec)
    if kind == "lpm" and isinstance(m, Ternary):
        # a prefix mask written as value &&& mask (const entries)
        plen = bin(m.mask & full).count("1")
        return _normalize(Lpm(m.value & m.mask, plen), spec)
    if kind == "ternary" and isinstance(m, Ternary):
        _check(m.value, spec)
        _check(m.mask, spec)
        return Ternary(m.value & m.mask, m.mask)
    if kind == "ternary" and isinstance(m, Exact):
        _check(m.value, spec)
        return Ternary(m.value, full)
    if kind == "range" and isinstance(m, Range):
        _check(m.low, spec)
        _check(m.high, spec)
        return m
    if kind == "range" and isinstance(m, Exact):
        return Range(m.value, m.value)
    if kind == "optional" and isinstance(m, Optional_):
        if m.value is not None:
            _check(m.value, spec)
        return m
    if kind == "optional" and isinstance(m, Exact):
        return Optional_(m.value)
    if kind == "optional" and isinstance(m, Ternary):
        if m.mask == 0:
            return Optional_(None)
        if m.mask & full == full:
            return Optional_(m.value)
    if kind == "exact" and isinstance(m, Ternary) and m.mask & full == full:
        return Exact(m.value)
    raise TableError(f"{type(m).__name__} match does not fit {kind} key {spec.name!r}")


def _check(value: int, spec: KeySpec) -> None:
    if value < 0 or value >> spec.width:
        raise TableError(f"value {value:#x} does not fit {spec.width}-bit key {spec.name!r}")


def _matches(m: Match, v: int) -> bool:
    if type(m) is Ternary:
        return v & m.mask == m.value
    if type(m) is Exact:
        return v == m.value
    if type(m) is Range:
        return m.low <= v <= m.high
    if type(m) is Optional_:
        return m.value is None or v == m.value
    # Lpm in a priority-ordered table
    return False  # handled by caller with widths


class Table:
    """Entries of one table plus its default action."""

    def __init__(
        self,
        name: str,
        keys: Sequence[KeySpec],
        actions: dict[str, ActionSpec],
        default: ActionCall,
        *,
        default_const: bool = False,
        size: Optional[int] = None,
        has_direct_counter: bool = False,
        meter_factory: Any = None,
    ) -> None:
        self.name = name
        self.keys = list(keys)
        self.actions = actions
        self.initial_default = default
        self.default = default
        self.default_const = default_const
        self.size = size
        self.has_direct_counter = has_direct_counter
        self.meter_factory = meter_factory
        self.entries: dict[int, TableEntry] = {}
        self._next_handle = 0
        kinds = [k.match_kind for k in self.keys]
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds) or kinds.count("lpm") > 1
        self._exact_only = all(k == "exact" for k in kinds)
        self._lpm_index = kinds.index("lpm") if (not self.needs_priority and "lpm" in kinds) else -1
        self._widths = [k.width for k in self.keys]
        # Lookup structures, updated in place by _index/_unindex.
        self._by_kid: dict[tuple, TableEntry] = {}  # match identity -> entry (duplicates, find)
        self._exact: dict[tuple, TableEntry] = {}
        self._lpm: dict[int, dict[tuple, TableEntry]] = {}
        self._lpm_lens: list[int] = []  # distinct prefix lengths, longest first
        # priority -> {handle: entry}; handles only grow, so dict order is handle order
        self._by_prio: dict[int, dict[int, TableEntry]] = {}
        self._prios: list[int] = []  # distinct priorities, highest first
        self._ordered: Optional[list[TableEntry]] = []  # scan order; None when stale

    # ---------------------------------------------------------------- control plane
    def resolve_action(self, name: str) -> ActionSpec:
        if name in self.actions:
            return self.actions[name]
        cands = [a for n, a in self.actions.items() if n.endswith("." + name) or n.split(".")[-1] == name]
        if len(cands) == 1:
            return cands[0]
        if not cands:
            raise KeyError(f"table {self.name!r} has no action {name!r}; actions: {sorted(self.actions)}")
        raise KeyError(f"action name {name!r} is ambiguous in table {self.name!r}")

    def _params(self, spec: ActionSpec, params: Params) -> tuple[int, ...]:
        if isinstance(params, dict):
            missing = [p for p, _ in spec.params if p not in params]
            extra = [p for p in params if p not in {n for n, _ in spec.params}]
            if missing or extra:
                raise TableError(f"action {spec.name!r}: missing params {missing}, unknown params {extra}")
            vals = [params[p] for p, _ in spec.params]
        else:
            vals = list(params)
            if len(vals) != len(spec.params):
                raise TableError(f"action {spec.name!r} takes {len(spec.params)} params, got {len(vals)}")
        out = []
        for v, (pname, w) in zip(vals, spec.params):
            v = int(v)
            if v < 0:
                v &= (1 << w) - 1
            if v >> w:
                raise TableError(f"param {pname!r}={v:#x} does not fit {w} bits")
            out.append(v)
        return tuple(out)

    def make_keys(self, keys: Keys) -> tuple[Match, ...]:
        if isinstance(keys, dict):
            names = {k.name for k in self.keys}
            unknown = [k for k in keys if k not in names]
            if unknown:
                raise TableError(f"table {self.name!r} has no key field(s) {unknown}; keys: {sorted(names)}")
            raw = [keys.get(k.name) for k in self.keys]
        else:
            raw = list(keys)
            if len(raw) != len(self.keys):
                raise TableError(f"table {self.name!r} has {len(self.keys)} keys, got {len(raw)}")
        return tuple(_normalize(m, s) for m, s in zip(raw, self.keys))

    def _key_id(self, keys: tuple[Match, ...], priority: Optional[int]) -> tuple:
        return (keys, priority if self.needs_priority else None)

    def add(self, keys: Keys, action: str, params: Params = (), priority: Optional[int] = None, *,
            is_const: bool = False) -> int:
        """Add an entry (:meth:`prepare` checks it); its handle."""
        return self._insert(self.prepare(keys, action, params, priority, is_const=is_const), is_const)

    def prepare(self, keys: Keys, action: str, params: Params = (), priority: Optional[int] = None, *,
                is_const: bool = False) -> PreparedEntry:
        """An entry checked and normalised against this table's schema but not
        yet added: valid for every table with an equal :meth:`schema`, so a
        control plane writing the same entry into many switches prepares it once."""
        mk = self.make_keys(keys)
        spec = self.resolve_action(action)
        if spec.default_only and not is_const:
            raise TableError(f"action {spec.name!r} is @defaultonly in table {self.name!r}")
        pv = self._params(spec, params)
        if self.needs_priority and priority is None:
            raise TableError(f"table {self.name!r} needs a priority for each entry")
        return mk, spec.name, pv, priority if self.needs_priority else None

    def schema(self) -> tuple:
        """What :meth:`prepare` depends on (the name, keys and actions), hashable."""
        s = self.__dict__.get("_schema")
        if s is None:
            acts = tuple(sorted((n, a.name, tuple(a.params), a.table_only, a.default_only)
                                for n, a in self.actions.items()))
            s = self._schema = (self.name, tuple(self.keys), acts)
        return s

    def add_prepared(self, rows: Sequence[PreparedEntry]) -> list[int]:
        """Add entries :meth:`prepare` made (on this table or one with an equal
        schema), in order; the handles.  On a failure the rows before it stay
        added and the error's ``index`` names the failing row.  (``_insert``
        per row, with the per-table lookups hoisted out of the loop.)"""
        out: list[int] = []
        entries, by_kid, actions = self.entries, self._by_kid, self.actions
        size = self.size
        counted, meter_factory = self.has_direct_counter, self.meter_factory
        exact_only, li = self._exact_only, self._lpm_index
        index = self._index
        fns: dict[str, Any] = {}
        for i, (mk, action, pv, priority) in enumerate(rows):
            kid = (mk, priority)
            if (size is not None and len(entries) >= size) or kid in by_kid:
                try:
                    self._insert((mk, action, pv, priority), False)  # raises the error it would raise
                except TableError as exc:
                    exc.index = i  # type: ignore[attr-defined]
                    raise
            fn = fns.get(action)
            if fn is None:
                fn = fns[action] = (actions.get(action) or self.resolve_action(action)).fn
            h = self._next_handle
            self._next_handle = h + 1
            e = TableEntry(h, mk, action, pv, priority, False, fn)
            if counted:
                e.counter = [0, 0]
            if meter_factory is not None:
                e.meter = meter_factory()
            entries[h] = e
            if exact_only:
                by_kid[kid] = e
                self._exact[tuple([m.value for m in mk])] = e  # type: ignore[union-attr]
            elif li >= 0 and len(mk) == 1:
                by_kid[kid] = e
                lp = mk[0]
                bucket = self._lpm.get(lp.prefix_len)  # type: ignore[union-attr]
                if bucket is None:
                    index(e)
                else:
                    bucket[(lp.value,)] = e  # type: ignore[union-attr]
            else:
                index(e)
            out.append(h)
        return out

    def _insert(self, row: PreparedEntry, is_const: bool) -> int:
        mk, action, pv, priority = row
        if self.size is not None and len(self.entries) >= self.size and not is_const:
            raise TableError(f"table {self.name!r} is full ({self.size} entries)")
        kid = (mk, priority)
        if kid in self._by_kid:
            raise TableError(f"duplicate entry in table {self.name!r}")
        h = self._next_handle
        self._next_handle += 1
        spec = self.actions.get(action) or self.resolve_action(action)
        e = TableEntry(h, mk, action, pv, priority, is_const, spec.fn)
        if self.has_direct_counter:
            e.counter = [0, 0]
        if self.meter_factory is not None:
            e.meter = self.meter_factory()
        self.entries[h] = e
        self._index(e)
        return h

    def _get(self, handle: int) -> TableEntry:
        try:
            return self.entries[handle]
        except KeyError:
            raise TableError(f"table {self.name!r} has no entry with handle {handle}") from None

    def modify(self, handle: int, action: str, params: Params = ()) -> None:
        e = self._get(handle)
        if e.is_const:
            raise TableError(f"entry {handle} of {self.name!r} is const")
        spec = self.resolve_action(action)
        pv = self._params(spec, params)
        e.action, e.params, e.fn = spec.name, pv, spec.fn

    def delete(self, handle: int) -> None:
        e = self._get(handle)
        if e.is_const:
            raise TableError(f"entry {handle} of {self.name!r} is const")
        del self.entries[handle]
        self._unindex(e)

    def clear(self) -> None:
        for h in [h for h, e in self.entries.items() if not e.is_const]:
            del self.entries[h]
        self._rebuild()

    def find(self, keys: Keys, priority: Optional[int] = None) -> Optional[int]:
        e = self._by_kid.get(self._key_id(self.make_keys(keys), priority))
        return None if e is None else e.handle

    def set_default(self, action: str, params: Params = ()) -> None:
        if self.default_const:
            raise TableError(f"default action of {self.name!r} is const")
        spec = self.resolve_action(action)
        if spec.table_only:
            raise TableError(f"action {spec.name!r} is @tableonly in {self.name!r}")
        self.default = ActionCall(spec.name, self._params(spec, params), spec.fn)

    def reset_default(self) -> None:
        self.default = self.initial_default

    # ---------------------------------------------------------------- data plane
    def _rebuild(self) -> None:
        """Recompute every lookup structure from ``entries`` (after a bulk change)."""
        self._by_kid, self._exact, self._lpm, self._lpm_lens = {}, {}, {}, []
        self._by_prio, self._prios, self._ordered = {}, [], None
        for e in sorted(self.entries.values(), key=lambda e: e.handle):
            self._index(e)

    def _lpm_slot(self, e: TableEntry) -> tuple[int, tuple]:
        """(prefix length, key with the lpm element's masked value) of an lpm-table entry."""
        li = self._lpm_index
        keys = e.keys
        lp: Lpm = keys[li]  # type: ignore[assignment]
        if len(keys) == 1:
            return lp.prefix_len, (lp.value,)
        return lp.prefix_len, tuple(lp.value if i == li else m.value for i, m in enumerate(e.keys))  # type: ignore[union-attr]

    def _index(self, e: TableEntry) -> None:
        """Add ``e`` (the newest handle) to the lookup structures."""
        self._by_kid[self._key_id(e.keys, e.priority)] = e
        if self._exact_only:
            self._exact[tuple(m.value for m in e.keys)] = e  # type: ignore[union-attr]
        elif self._lpm_index >= 0:
            plen, k = self._lpm_slot(e)
            bucket = self._lpm.get(plen)
            if bucket is None:
                bucket = self._lpm[plen] = {}
                bisect.insort(self._lpm_lens, plen, key=lambda x: -x)
            bucket[k] = e
        else:
            prio = e.priority or 0
            bucket_p = self._by_prio.get(prio)
            if bucket_p is None:
                bucket_p = self._by_prio[prio] = {}
                bisect.insort(self._prios, prio, key=lambda x: -x)
            bucket_p[e.handle] = e
            self._ordered = None

    def _unindex(self, e: TableEntry) -> None:
        """Remove ``e`` from the lookup structures."""
        del self._by_kid[self._key_id(e.keys, e.priority)]
        if self._exact_only:
            del self._exact[tuple(m.value for m in e.keys)]  # type: ignore[union-attr]
        elif self._lpm_index >= 0:
            plen, k = self._lpm_slot(e)
            bucket = self._lpm[plen]
            del bucket[k]
            if not bucket:
                del self._lpm[plen]
                self._lpm_lens.remove(plen)  # at most key width + 1 lengths
        else:
            prio = e.priority or 0
            bucket_p = self._by_prio[prio]
            del bucket_p[e.handle]
            if not bucket_p:
                del self._by_prio[prio]
                del self._prios[bisect.bisect_left(self._prios, -prio, key=lambda x: -x)]
            self._ordered = None

    def _scan_order(self) -> list[TableEntry]:
        """Priority-table entries by priority (highest first), then handle (earliest first)."""
        order = self._ordered
        if order is None:
            order = self._ordered = [e for prio in self._prios for e in self._by_prio[prio].values()]
        return order

    def lookup(self, key: tuple[int, ...]) -> Optional[TableEntry]:
        """The entry that matches ``key`` or None (miss)."""
        if self._exact_only:
            return self._exact.get(key)
        if self._lpm_index >= 0:
            li = self._lpm_index
            w = self._widths[li]
            v = key[li]
            for plen in self._lpm_lens:
                pm = ((1 << plen) - 1) << (w - plen)
                k = key[:li] + (v & pm,) + key[li + 1 :]
                e = self._lpm[plen].get(k)
                if e is not None:
                    return e
            return None
        widths = self._widths
        for e in self._ordered if self._ordered is not None else self._scan_order():
            ok = True
            for m, v, w in zip(e.keys, key, widths):
                if type(m) is Lpm:
                    if m.prefix_len and (v >> (w - m.prefix_len)) != (m.value >> (w - m.prefix_len)):
                        ok = False
                        break
                elif not _matches(m, v):
                    ok = False
                    break
            if ok:
                return e
        return None
