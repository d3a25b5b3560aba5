"""Unicast routes per switch: one /32 per host, or a compressed set when the
program's route table cannot hold one entry per host.

``mcc.p4`` routes unicast with an LPM table of fixed size
(:attr:`ProgramNames.host_table_size`).  Up to that many hosts, every switch
gets one /32 per host, the plain and obvious table.  Beyond it (the
simulator's 10^4-receiver trees), one entry per host on every switch is
both impossible (the table refuses it, as BMv2 does) and wasteful (10^4
hosts on 5,000 switches would be 5·10^7 entries), so the routes are
compressed the way hierarchical IP routing does it:

* The switches must form a tree (every generated tree and dumbbell does).
  It is rooted at its centre.
* A switch routes the hosts of its own subtree with the fewest prefixes
  that each hold only hosts reached through one port (a *pure* cover:
  addresses that are no host's may fall inside a prefix; nothing else does),
  and everything else up to its parent with two /1 routes (a default route
  without a zero-length LPM match, which P4Runtime spells differently).
* Each prefix a parent sends down to a child is installed on that child as
  a drop route, below the child's own longer prefixes.  An address that is
  nobody's, once it has gone down a branch, is therefore dropped there
  instead of bouncing back up: the routes are loop-free although the
  program does not decrement TTL.  The root has no default route, so an
  address outside every prefix is a miss, as with /32 routes.

Every host address is forwarded exactly as with /32 routes, which
``tests/controller/test_routes.py`` checks against :func:`unicast_ports`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
import ipaddress

import networkx as nx

from p4mcc.controller.topology import Topology
from p4mcc.controller.trees import bfs_parents, unicast_ports

@dataclass(frozen=True, order=True)
class Route:
    """One LPM route: ``prefix/length`` to ``port``, or dropped when ``port`` is None."""

    prefix: int
    length: int
    port: int | None

    def covers(self, ip: int) -> bool:
        shift = 32 - self.length
        return (ip >> shift) == (self.prefix >> shift) if self.length else True


class RoutesTooLarge(ValueError):
    """Some switch needs more routes than the program's table holds."""


def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def pure_cover(members: dict[int, int], everyone: list[int]) -> list[tuple[int, int, int]]:
    """The fewest disjoint prefixes, each holding hosts of one label of
    ``members`` (address -> label) and no other host of ``everyone`` (all host
    addresses, sorted), that together hold every member: ``(prefix, length,
    label)`` in address order.  Prefixes may hold addresses that are no host's."""
    by_label: dict[int, list[int]] = {}
    for ip, label in members.items():
        by_label.setdefault(label, []).append(ip)
    for ips in by_label.values():
        ips.sort()
    mine = sorted(members)

    def count(ips: list[int], lo: int, hi: int) -> int:
        return bisect_right(ips, hi) - bisect_left(ips, lo)

    out: list[tuple[int, int, int]] = []
    stack = [(0, 0)]
    while stack:
        pfx, plen = stack.pop()
        lo, hi = pfx, pfx | ((1 << (32 - plen)) - 1)
        here = count(mine, lo, hi)
        if not here:
            continue
        label = members[mine[bisect_left(mine, lo)]]
        if count(by_label[label], lo, hi) == here == count(everyone, lo, hi):
            out.append((pfx, plen, label))
            continue
        bit = 1 << (31 - plen)
        stack.append((pfx | bit, plen + 1))
        stack.append((pfx, plen + 1))
    return sorted(out)


def host_routes(topo: Topology, capacity: int) -> dict[str, list[Route]]:
    """switch -> its unicast routes; raises :class:`RoutesTooLarge` when
    a switch would still need more than ``capacity`` of them."""
    ips = {name: _ip(h.ip) for name, h in topo.hosts.items()}
    if len(topo.hosts) <= capacity:
        return {
            # Route's own order, by a key tuple: no Python-level comparison per pair
            sw: sorted((Route(ips[h], 32, port) for h, port in ports.items()),
                       key=lambda r: (r.prefix, r.length, r.port))
            for sw, ports in unicast_ports(topo).items()
        }
    graph = topo.switch_graph()
    if not nx.is_tree(graph):
        raise RoutesTooLarge(
            f"{len(topo.hosts)} hosts exceed the {capacity} routes a switch holds, and the switches "
            f"do not form a tree, the only shape whose routes p4mcc can compress"
        )
    root = _centre(graph)
    parents = bfs_parents(topo, root)
    order = list(parents)  # breadth-first: parents before children
    children: dict[str, list[str]] = {sw: [] for sw in order}
    for sw in order:
        if parents[sw] is not None:
            children[parents[sw]].append(sw)
    # below[sw]: address -> port of sw toward that host, for the hosts of sw's subtree
    below: dict[str, dict[int, int]] = {sw: {} for sw in order}
    for host in topo.hosts:
        sw, port = topo.attachment(host)
        below[sw][ips[host]] = port
    for sw in reversed(order):
        parent = parents[sw]
        if parent is not None:
            port = topo.port_to(parent, sw)
            below[parent].update(dict.fromkeys(below[sw], port))
    everyone = sorted(ips.values())
    routes: dict[str, list[Route]] = {}
    down: dict[str, list[tuple[int, int]]] = {sw: [] for sw in order}
    for sw in order:
        parent = parents[sw]
        own = pure_cover(below[sw], everyone)
        table = {(p, n): Route(p, n, port) for p, n, port in own}
        for p, n in down[sw]:
            table.setdefault((p, n), Route(p, n, None))
        if parent is not None:
            up = topo.port_to(sw, parent)
            table[(0, 1)] = Route(0, 1, up)
            table[(1 << 31, 1)] = Route(1 << 31, 1, up)
        for child in children[sw]:
            port = topo.port_to(sw, child)
            down[child] = [(p, n) for p, n, label in own if label == port]
        if len(table) > capacity:
            raise RoutesTooLarge(
                f"switch {sw} needs {len(table)} routes for {len(topo.hosts)} hosts and holds {capacity}: "
                f"give each subtree of switches a contiguous block of host addresses"
            )
        routes[sw] = sorted(table.values(), key=lambda r: (r.prefix, r.length))
    return routes


def _centre(tree: nx.Graph) -> str:
    """A centre of a tree: the middle of a longest path (two sweeps), so
    that no switch is more than half the diameter from it."""
    start = min(tree)
    far = max(nx.single_source_shortest_path_length(tree, start).items(), key=lambda kv: (kv[1], kv[0]))[0]
    paths = nx.single_source_shortest_path(tree, far)
    other = max(paths, key=lambda n: (len(paths[n]), n))
    path = paths[other]
    return path[(len(path) - 1) // 2]


def lookup(routes: list[Route], ip: int) -> Route | None:
    """Longest-prefix match of ``ip`` in ``routes`` (for tests and tools)."""
    best: Route | None = None
    for r in routes:
        if r.covers(ip) and (best is None or r.length > best.length):
            best = r
    return best
