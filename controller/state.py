"""Target-neutral switch state: what a switch holds, as plain frozen values.

The desired-state function produces these, appliers read them back from a
switch, and :mod:`controller.diff` compares two of them.  Nothing here knows
about P4Runtime ids or the interpreter's objects: names are P4 names, match
values are integers, so the same value can be written through finsy, into the
in-process p4switch runtime, or compared in a unit test.

Match values:

* exact / optional: ``int``
* lpm: ``(value, prefix_len)``
* ternary: ``(value, mask)``
* range: ``(low, high)`` -- tagged by the table's key kind, not by the tuple.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Union

MatchValue = Union[int, tuple[int, int]]


def _freeze(d: dict[str, Any] | tuple[tuple[str, Any], ...] | None) -> tuple[tuple[str, Any], ...]:
    if d is None:
        return ()
    if isinstance(d, tuple):
        return tuple(sorted(d))
    return tuple(sorted(d.items()))


@dataclass(frozen=True)
class TableEntry:
    """One table entry.  Its identity (``key``) is table + match + priority."""

    table: str
    match: tuple[tuple[str, MatchValue], ...]
    action: str
    params: tuple[tuple[str, int], ...] = ()
    priority: int = 0

    @staticmethod
    def make(
        table: str,
        match: dict[str, MatchValue],
        action: str,
        params: dict[str, int] | None = None,
        priority: int = 0,
    ) -> "TableEntry":
        """Build an entry from dicts (sorted into the frozen form)."""
        return TableEntry(table, _freeze(match), action, _freeze(params), priority)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, MatchValue], ...], int]:
        return (self.table, self.match, self.priority)

    def describe(self) -> str:
        m = " ".join(f"{k}={_fmt(v)}" for k, v in self.match)
        p = ", ".join(f"{k}={v}" for k, v in self.params)
        pr = f" prio={self.priority}" if self.priority else ""
        return f"{self.table} [{m}]{pr} -> {self.action}({p})"


@dataclass(frozen=True)
class DefaultAction:
    """A table's default action (modify-only: it always exists)."""

    table: str
    action: str
    params: tuple[tuple[str, int], ...] = ()

    @property
    def key(self) -> str:
        return self.table

    def describe(self) -> str:
        p = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.table} default -> {self.action}({p})"


@dataclass(frozen=True)
class MulticastGroup:
    """A PRE multicast group: the (port, instance) replicas, sorted."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]

    @staticmethod
    def of_ports(group_id: int, ports: Any) -> "MulticastGroup":
        return MulticastGroup(group_id, tuple(sorted((int(p), 0) for p in ports)))

    @property
    def key(self) -> int:
        return self.group_id

    @property
    def ports(self) -> list[int]:
        return [p for p, _ in self.replicas]

    def describe(self) -> str:
        return f"mcast group {self.group_id} -> ports {self.ports}"


@dataclass(frozen=True)
class CloneSession:
    """A clone (mirror) session: replicas and truncation length (0 = whole)."""

    session_id: int
    replicas: tuple[tuple[int, int], ...]
    packet_length: int = 0

    @property
    def key(self) -> int:
        return self.session_id

    def describe(self) -> str:
        return f"clone session {self.session_id} -> ports {[p for p, _ in self.replicas]}"


@dataclass(frozen=True)
class MeterConfig:
    """An indirect meter cell's rates (P4Runtime units: per second, bursts)."""

    meter: str
    index: int
    cir: int
    cburst: int
    pir: int
    pburst: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.meter, self.index)

    def describe(self) -> str:
        return (
            f"meter {self.meter}[{self.index}] cir={self.cir}/{self.cburst} "
            f"pir={self.pir}/{self.pburst}"
        )


@dataclass(frozen=True)
class DigestConfig:
    """Digest delivery settings for one digest (presence enables it)."""

    digest: str
    max_timeout_ns: int = 0
    max_list_size: int = 1
    ack_timeout_ns: int = 0

    @property
    def key(self) -> str:
        return self.digest

    def describe(self) -> str:
        return (
            f"digest {self.digest} list<={self.max_list_size} "
            f"timeout={self.max_timeout_ns}ns ack={self.ack_timeout_ns}ns"
        )


Entity = Union[TableEntry, DefaultAction, MulticastGroup, CloneSession, MeterConfig, DigestConfig]

KINDS: tuple[str, ...] = ("entries", "defaults", "groups", "clones", "meters", "digests")
"""The kinds of state, in the order they are written (groups before the
entries that name them; deletes run in the reverse order)."""


@dataclass
class SwitchState:
    """Everything the controller manages on one switch, keyed by identity."""

    entries: dict[Any, TableEntry] = field(default_factory=dict)
    defaults: dict[str, DefaultAction] = field(default_factory=dict)
    groups: dict[int, MulticastGroup] = field(default_factory=dict)
    clones: dict[int, CloneSession] = field(default_factory=dict)
    meters: dict[tuple[str, int], MeterConfig] = field(default_factory=dict)
    digests: dict[str, DigestConfig] = field(default_factory=dict)

    def add(self, ent: Entity) -> None:
        """Add an entity; a second, different entity with the same key is a bug."""
        bucket = self.bucket(ent)
        old = bucket.get(ent.key)
        if old is not None and old != ent:
            raise ValueError(f"conflicting desired state: {old.describe()} vs {ent.describe()}")
        bucket[ent.key] = ent

    def bucket(self, ent: Entity) -> dict[Any, Any]:
        return getattr(self, kind_of(ent))

    def __iter__(self) -> Iterator[Entity]:
        for kind in KINDS:
            yield from getattr(self, kind).values()

    def __len__(self) -> int:
        return sum(len(getattr(self, k)) for k in KINDS)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (lists of dicts), used by ``--json`` output."""
        return {
            "entries": [
                {
                    "table": e.table,
                    "match": {k: _jsonable(v) for k, v in e.match},
                    "action": e.action,
                    "params": dict(e.params),
                    "priority": e.priority,
                }
                for e in sorted(self.entries.values(), key=lambda e: repr(e.key))
            ],
            "defaults": [
                {"table": d.table, "action": d.action, "params": dict(d.params)}
                for d in sorted(self.defaults.values(), key=lambda d: d.table)
            ],
            "groups": [
                {"group_id": g.group_id, "ports": g.ports}
                for g in sorted(self.groups.values(), key=lambda g: g.group_id)
            ],
            "clones": [
                {"session_id": c.session_id, "ports": [p for p, _ in c.replicas],
                 "packet_length": c.packet_length}
                for c in sorted(self.clones.values(), key=lambda c: c.session_id)
            ],
            "meters": [
                {"meter": m.meter, "index": m.index, "cir": m.cir, "cburst": m.cburst,
                 "pir": m.pir, "pburst": m.pburst}
                for m in sorted(self.meters.values(), key=lambda m: m.key)
            ],
            "digests": [
                {"digest": d.digest, "max_timeout_ns": d.max_timeout_ns,
                 "max_list_size": d.max_list_size, "ack_timeout_ns": d.ack_timeout_ns}
                for d in sorted(self.digests.values(), key=lambda d: d.digest)
            ],
        }


def kind_of(ent: Entity) -> str:
    """The :class:`SwitchState` attribute that holds entities like ``ent``."""
    if isinstance(ent, TableEntry):
        return "entries"
    if isinstance(ent, DefaultAction):
        return "defaults"
    if isinstance(ent, MulticastGroup):
        return "groups"
    if isinstance(ent, CloneSession):
        return "clones"
    if isinstance(ent, MeterConfig):
        return "meters"
    if isinstance(ent, DigestConfig):
        return "digests"
    raise TypeError(f"not a switch-state entity: {ent!r}")


def _fmt(v: MatchValue) -> str:
    if isinstance(v, tuple):
        return f"{v[0]:#x}/{v[1]}"
    return f"{v:#x}" if v >= 1 << 16 else str(v)


def _jsonable(v: MatchValue) -> Any:
    return list(v) if isinstance(v, tuple) else v
