"""BMv2's simple packet replication engine and mirroring (clone) sessions."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence


class PreError(Exception):
    """A PRE request that cannot be honoured (state unchanged)."""


@dataclass
class McNode:
    rid: int
    ports: set[int] = field(default_factory=set)


class Pre:
    """Multicast groups of (rid, port-set) nodes.

    ``replicate(mgid)`` yields ``(port, rid)`` node by node in association
    order, ports ascending within a node: the order BMv2 emits replicas in.
    Node handles are allocated lowest-free-first starting at 0.
    """

    def __init__(self) -> None:
        self.groups: dict[int, list[int]] = {}
        self.nodes: dict[int, McNode] = {}
        # Lowest-free-first handles in O(log n): handles below ``_next`` that
        # were freed wait in a heap (a linear scan made large batches quadratic).
        self._next = 0
        self._free: list[int] = []
        # replicate() per mgid, computed once per configuration: every
        # mutator below clears it (replication runs per packet, changes are rare)
        self._reps: dict[int, tuple[tuple[int, int], ...]] = {}

    def group_create(self, mgid: int) -> None:
        if mgid in self.groups:
            raise PreError(f"multicast group {mgid} exists")
        self._reps.clear()
        self.groups[mgid] = []

    def group_destroy(self, mgid: int) -> None:
        if self.groups.pop(mgid, None) is None:
            raise PreError(f"no multicast group {mgid}")
        self._reps.clear()

    def node_create(self, rid: int, ports: Iterable[int]) -> int:
        if self._free:
            h = heapq.heappop(self._free)
        else:
            h = self._next
            self._next += 1
        self.nodes[h] = McNode(rid, set(ports))
        self._reps.clear()
        return h

    def node_update(self, handle: int, ports: Iterable[int]) -> None:
        self._node(handle).ports = set(ports)
        self._reps.clear()

    def node_destroy(self, handle: int) -> None:
        self._node(handle)
        self._release(handle)
        self._reps.clear()
        for lst in self.groups.values():
            if handle in lst:
                lst.remove(handle)

    def node_associate(self, mgid: int, handle: int) -> None:
        self._node(handle)
        lst = self._group(mgid)
        if handle in lst:
            raise PreError(f"node {handle} already in group {mgid}")
        lst.append(handle)
        self._reps.clear()

    def node_dissociate(self, mgid: int, handle: int) -> None:
        lst = self._group(mgid)
        if handle not in lst:
            raise PreError(f"node {handle} not in group {mgid}")
        lst.remove(handle)
        self._reps.clear()

    def set_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        """Replace group ``mgid`` with ``(port, rid)`` replicas (P4Runtime style)."""
        if mgid in self.groups:
            self.delete_group(mgid)
        self.groups[mgid] = []
        by_rid: dict[int, list[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(rid, []).append(port)
        for rid, ports in by_rid.items():
            self.node_associate(mgid, self.node_create(rid, ports))

    def delete_group(self, mgid: int) -> None:
        for h in self._group(mgid):
            if h in self.nodes:
                self._release(h)
        del self.groups[mgid]
        self._reps.clear()

    def replicate(self, mgid: int) -> list[tuple[int, int]]:
        """The ``(port, rid)`` replicas of group ``mgid`` (empty if none)."""
        return list(self.replicas(mgid))

    def replicas(self, mgid: int) -> tuple[tuple[int, int], ...]:
        """``replicate`` as a shared tuple, computed once per configuration
        (the per-packet path: nothing is built while the groups are unchanged)."""
        reps = self._reps.get(mgid)
        if reps is None:
            out: list[tuple[int, int]] = []
            for h in self.groups.get(mgid, ()):
                node = self.nodes[h]
                for p in sorted(node.ports):
                    out.append((p, node.rid))
            reps = self._reps[mgid] = tuple(out)
        return reps

    def _release(self, handle: int) -> None:
        del self.nodes[handle]
        heapq.heappush(self._free, handle)

    def _node(self, handle: int) -> McNode:
        try:
            return self.nodes[handle]
        except KeyError:
            raise PreError(f"no multicast node {handle}") from None

    def _group(self, mgid: int) -> list[int]:
        try:
            return self.groups[mgid]
        except KeyError:
            raise PreError(f"no multicast group {mgid}") from None


@dataclass
class MirrorSession:
    """A clone session: to one port, to a multicast group, or both."""

    port: Optional[int] = None
    mgid: Optional[int] = None
    truncate: int = 0  # bytes kept of each clone; 0 keeps all


MAX_MIRROR_SESSION_ID = (1 << 15) - 1
