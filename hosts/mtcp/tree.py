"""MTCP's logical tree of sender's agents (SAs), built from a topology.

MTCP (Rhee, Balaguru, Rouskas) organises the group as a tree rooted at the
sender: every receiver acknowledges to its parent, and every node with
children is a *sender's agent* that buffers, repairs and summarises for its
subtree.  The paper bounds the fan-out by a small constant (it measures 16 as
a reasonable upper bound and simulates with 3 and 5); here it is ``k``.

Two ways to build one:

* :func:`from_parent_map` validates an explicit ``{child: parent}`` mapping;
* :func:`from_graph` places receivers greedily on a network graph: in order of
  hop distance from the sender, each receiver's parent is the nearest already
  placed node (sender or receiver) that still has room for a child, ties
  broken toward the root.  Receivers that share a subnet therefore hang below
  one of them, which is the locality MTCP's trees are built for.

A tree is carried to every agent as one string (:meth:`Tree.encode`,
``"child>parent,child>parent"``), so all agents of a session share identical
parameters and each finds its own parent and children from its address.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # imported where a graph is placed on: agents never do, and it costs them 0.1 s each
    import networkx as nx


class TreeError(ValueError):
    """A parent map that is not a tree rooted at the sender, or breaks the fan-out bound."""


@dataclass(frozen=True)
class Tree:
    """A validated logical tree: ``parent[child]`` for every receiver."""

    root: str
    parent: Mapping[str, str]
    k: int = 16
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kids: dict[str, list[str]] = {}
        for c, p in self.parent.items():
            kids.setdefault(p, []).append(c)
        object.__setattr__(self, "children", {p: tuple(sorted(v, key=_addr_key)) for p, v in kids.items()})

    def children_of(self, node: str) -> tuple[str, ...]:
        return self.children.get(node, ())

    def parent_of(self, node: str) -> str | None:
        return self.parent.get(node)

    def depth(self, node: str) -> int:
        d = 0
        while node != self.root:
            node = self.parent[node]
            d += 1
        return d

    @property
    def height(self) -> int:
        return max((self.depth(n) for n in self.parent), default=0)

    @property
    def agents(self) -> list[str]:
        """Nodes with children (the sender first)."""
        return [self.root] + sorted((n for n in self.children if n != self.root), key=_addr_key)

    def encode(self) -> str:
        """The parameter form: ``child>parent`` pairs joined by commas."""
        return ",".join(f"{c}>{p}" for c, p in sorted(self.parent.items(), key=lambda kv: _addr_key(kv[0])))


def _addr_key(a: Any) -> tuple[Any, ...]:
    """Sort IPv4 addresses numerically, other node names after them by text."""
    parts = str(a).split(".")
    if len(parts) == 4 and all(p.isdigit() for p in parts):
        return (0, *map(int, parts))
    return (1, str(a))


def from_parent_map(root: str, parent: Mapping[str, str], k: int = 16) -> Tree:
    """Validate ``parent`` as a tree rooted at ``root`` with at most ``k`` children each."""
    if k < 1:
        raise TreeError(f"fan-out k must be >= 1, got {k}")
    if root in parent:
        raise TreeError(f"the sender {root} cannot have a parent")
    nodes = set(parent) | {root}
    for c, p in parent.items():
        if p not in nodes:
            raise TreeError(f"{c}'s parent {p} is neither the sender nor a receiver")
        if c == p:
            raise TreeError(f"{c} is its own parent")
    for c in parent:
        seen = {c}
        n = c
        while n != root:
            n = parent[n]
            if n in seen:
                raise TreeError(f"cycle through {n}")
            seen.add(n)
    tree = Tree(root, dict(parent), k)
    for p, kids in tree.children.items():
        if len(kids) > k:
            raise TreeError(f"{p} has {len(kids)} children, more than k={k}")
    return tree


def from_graph(graph: nx.Graph, root: str, receivers: list[str], k: int = 16,
               weight: str | None = None) -> Tree:
    """Place ``receivers`` on ``graph`` greedily (see the module doc).

    ``weight`` names an edge attribute (for example a delay) to measure
    distance with; by default hops count.
    """
    if k < 1:
        raise TreeError(f"fan-out k must be >= 1, got {k}")
    missing = [n for n in [root, *receivers] if n not in graph]
    if missing:
        raise TreeError(f"not in the topology: {', '.join(missing)}")
    import networkx as nx

    dist = dict(nx.all_pairs_dijkstra_path_length(graph, weight=weight)) if weight else dict(
        nx.all_pairs_shortest_path_length(graph))
    order = sorted(set(receivers) - {root}, key=lambda r: (dist[root].get(r, float("inf")), _addr_key(r)))
    unreachable = [r for r in order if r not in dist[root]]
    if unreachable:
        raise TreeError(f"unreachable from {root}: {', '.join(unreachable)}")
    placed = [root]
    nkids: dict[str, int] = {root: 0}
    parent: dict[str, str] = {}
    for r in order:
        best = min(
            (c for c in placed if nkids[c] < k),
            key=lambda c: (dist[r][c], dist[root][c], _addr_key(c)),
        )
        parent[r] = best
        nkids[best] += 1
        nkids[r] = 0
        placed.append(r)
    return from_parent_map(root, parent, k)


def flat(root: str, receivers: list[str]) -> Tree:
    """Every receiver a child of the sender (the mode switch-assisted sessions use)."""
    return from_parent_map(root, {r: root for r in receivers}, k=max(1, len(receivers)))


def parse(text: str, root: str, k: int = 1 << 30) -> Tree:
    """Inverse of :meth:`Tree.encode`; an empty string is the empty tree."""
    parent: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        c, sep, p = item.partition(">")
        if not sep or not c.strip() or not p.strip():
            raise TreeError(f"tree entry {item!r} is not child>parent")
        if c.strip() in parent:
            raise TreeError(f"{c.strip()} has two parents")
        parent[c.strip()] = p.strip()
    return from_parent_map(root, parent, k)


def root_of(text: str) -> str:
    """The one node of a parameter string that is a parent but nobody's child."""
    pairs = [item.partition(">") for item in filter(None, (x.strip() for x in text.split(",")))]
    children = {c.strip() for c, _s, _p in pairs}
    roots = {p.strip() for _c, _s, p in pairs} - children
    if len(roots) != 1:
        raise TreeError(f"a tree needs exactly one root (a parent that is nobody's child), found {sorted(roots)}")
    return roots.pop()
