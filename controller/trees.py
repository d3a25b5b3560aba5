"""Paths on a topology: unicast next hops and per-source multicast trees.

Both are computed on the switch graph with hop count as the metric, and ties
are broken by switch name, so the result is the same on every run and in
every engine.  The multicast tree of a source is the union of the shortest
paths from the source's switch to each receiver; because unicast next hops
are read off the same breadth-first trees, feedback sent unicast toward the
source travels exactly up the branches data came down, which is what
in-network aggregation needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from p4mcc.controller.topology import Topology, TopologyError


def bfs_parents(topo: Topology, root: str) -> dict[str, str | None]:
    """Parent of each switch in the breadth-first tree of switches rooted at ``root``.

    Neighbours are visited in name order, so among equal-length paths the one
    through the lexicographically smaller switch wins.
    """
    parents: dict[str, str | None] = {root: None}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for nbr in sorted(topo.graph.adj[node]):
            if nbr in topo.switches and nbr not in parents:
                parents[nbr] = node
                queue.append(nbr)
    return parents


def unicast_ports(topo: Topology) -> dict[str, dict[str, int]]:
    """switch -> host -> the egress port toward that host."""
    out: dict[str, dict[str, int]] = {s: {} for s in topo.switches}
    for host in sorted(topo.hosts):
        home, home_port = topo.attachment(host)
        parents = bfs_parents(topo, home)
        for sw in topo.switches:
            if sw not in parents:
                continue  # disconnected: validate() rejects this earlier
            parent = parents[sw]
            out[sw][host] = home_port if parent is None else topo.port_to(sw, parent)
    return out


@dataclass
class TreeNode:
    """One switch on a source's tree: the port toward the source and the ports
    toward receivers (child switches whose subtree holds a receiver, and
    receivers cabled to this switch)."""

    upstream: int
    downstream: set[int] = field(default_factory=set)
    #: The switch the upstream port leads to (None at the source's own switch):
    #: the tree's shape, for what a restarted switch's neighbours must re-send.
    parent: str | None = None


def source_tree(topo: Topology, source: str, receivers: list[str] | tuple[str, ...]) -> dict[str, TreeNode]:
    """switch -> :class:`TreeNode` for the tree from ``source`` to ``receivers``.

    Only switches on a path to some receiver appear.  The source's own port
    is never a downstream port (a sender does not receive its own data).
    """
    if source not in topo.hosts:
        raise TopologyError(f"unknown source host {source!r}")
    root, root_port = topo.attachment(source)
    parents = bfs_parents(topo, root)
    tree: dict[str, TreeNode] = {}

    def node(sw: str) -> TreeNode:
        if sw not in tree:
            parent = parents[sw]
            tree[sw] = TreeNode(root_port if parent is None else topo.port_to(sw, parent), parent=parent)
        return tree[sw]

    for r in receivers:
        if r == source:
            continue
        if r not in topo.hosts:
            raise TopologyError(f"unknown receiver host {r!r}")
        sw, port = topo.attachment(r)
        node(sw).downstream.add(port)
        child = sw
        parent = parents[child]
        while parent is not None:
            node(parent).downstream.add(topo.port_to(parent, child))
            child, parent = parent, parents[parent]
    return tree


def switches_below(trees: Iterable[Mapping[str, TreeNode]]) -> dict[str, frozenset[str]]:
    """switch -> the switches whose joins climb through it, in any of ``trees``.

    A switch that restarts has lost the memberships its children's proxied
    joins made; a child proxies a join only when its own group goes from empty
    to non-empty (or its refresh comes due), so those below it must be asked
    to send them again (``controller.querier.rejoin_state``).
    """
    below: dict[str, set[str]] = {}
    for tree in trees:
        for sw, node in tree.items():
            parent = node.parent
            while parent is not None:
                below.setdefault(parent, set()).add(sw)
                parent = tree[parent].parent
    return {sw: frozenset(v) for sw, v in below.items()}
