"""Build a simulated network (nodes, links, routes) from a scenario topology.

:func:`build_network` turns a :class:`scenario.model.Topology` into host
nodes, switch nodes and links on a :class:`~netsim.engine.Simulator`.  Switch
ports are numbered by the controller's topology
(:func:`controller.topology.number_ports`: as the scenario says, ``s1-p2``, or
1, 2, ... in link order; a host's single interface is its port 0).  Static ARP covers every host (as the
tutorials' host ``commands`` do).  For switches that need routes (the model
switch), :meth:`Network.install_routes` fills shortest-path host routes and
:meth:`Network.set_group_source` the port toward each group's sender.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from p4mcc.controller.topology import number_ports
from p4mcc.netsim import packets as pk
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.host import EventSink, HostNode
from p4mcc.netsim.link import Link
from p4mcc.netsim.model_switch import ModelSwitch
from p4mcc.scenario.model import Topology

SwitchFactory = Callable[[Simulator, str], Any]


@dataclass
class Network:
    sim: Simulator
    topology: Topology
    hosts: dict[str, HostNode] = field(default_factory=dict)
    switches: dict[str, Any] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    #: (node, port) -> (peer node, peer port)
    peers: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    #: node -> {port: peer node}
    adjacency: dict[str, dict[int, str]] = field(default_factory=dict)

    def set_send_jitter(self, host: str, jitter_s: float) -> None:
        """Frames ``host`` sends wait up to ``jitter_s`` (uniform) before they may start."""
        link = self.host_link(host)
        channel = link.ab if link.a is self.hosts[host] else link.ba
        channel.set_jitter(jitter_s, self.sim.rng(f"host/{host}/jitter"))

    def host_link(self, host: str) -> Link:
        """The link that attaches ``host`` to its switch."""
        for l in self.links.values():
            if l.a is self.hosts[host] or l.b is self.hosts[host]:
                return l
        raise KeyError(host)

    def next_hops(self, target: str,
                  ordered: dict[str, list[tuple[int, str]]] | None = None) -> dict[str, int]:
        """For every switch, the port on a shortest path toward node ``target``.

        ``ordered``: every node's ``adjacency`` items already sorted (as
        :meth:`_ordered_adjacency` gives them), for callers that search from
        many targets: sorting each node's ports again for every target took
        most of the set-up time with thousands of hosts.
        """
        out: dict[str, int] = {}
        seen = {target}
        frontier = deque([target])
        empty: list[tuple[int, str]] = []
        while frontier:
            n = frontier.popleft()
            ports = ordered.get(n, empty) if ordered is not None else sorted(self.adjacency.get(n, {}).items())
            for port, peer in ports:
                if peer in seen:
                    continue
                seen.add(peer)
                # peer reaches n (hence target) through the port that faces n
                back = self.peers[(n, port)]
                if peer in self.switches:
                    out[peer] = back[1]
                    frontier.append(peer)
        return out

    def _ordered_adjacency(self) -> dict[str, list[tuple[int, str]]]:
        """Every node's (port, peer) pairs in port order, for :meth:`next_hops`."""
        return {n: sorted(ports.items()) for n, ports in self.adjacency.items()}

    def install_routes(self) -> None:
        """Fill every routing switch's host routes (shortest paths, ties by port).

        Only switches with a ``routes`` table (the model switch) take them; when
        there is none (P4 switch nodes get their routes from the controller's
        desired state) no path is searched at all: one search per host over
        the whole topology took 260 of 330 CPU s of set-up with 10^4 receivers.
        """
        routing = {sw: s for sw, s in self.switches.items() if hasattr(s, "routes")}
        if not routing:
            return
        ordered = self._ordered_adjacency()
        # A host with one link to a switch is reached from every other switch
        # as that switch is (hosts are never transit), so one search per
        # attachment switch serves all its hosts (10^4 receivers on a 4-ary
        # tree's 4,096 leaf switches: build_network 177 -> 121 CPU s, the same
        # routes; what is left is writing 5,461 x 10^4 of them).
        behind: dict[str, list[tuple[int, int]]] = {}  # switch -> (host IP, its port there)
        for h, node in self.hosts.items():
            adj = self.adjacency.get(h, {})
            if len(adj) == 1:
                (port, sw), = adj.items()
                if sw in self.switches:
                    behind.setdefault(sw, []).append((node.ip_int, self.peers[(h, port)][1]))
                    continue
            for sw, out in self.next_hops(h, ordered).items():
                s = routing.get(sw)
                if s is not None:
                    s.routes[node.ip_int] = out
        for attach, hosts in behind.items():
            hops = [(routing[sw], out) for sw, out in self.next_hops(attach, ordered).items() if sw in routing]
            own = routing.get(attach)
            for ip, port in hosts:
                for s, out in hops:
                    s.routes[ip] = out
                if own is not None:
                    own.routes[ip] = port

    def set_group_source(self, group: str, sender: str) -> None:
        """Tell model switches which port leads toward ``group``'s sender."""
        g = pk.ip_int(group)
        for sw, port in self.next_hops(sender).items():
            s = self.switches[sw]
            if hasattr(s, "upstream"):
                s.upstream[g] = port


def build_network(sim: Simulator, topo: Topology, *, sink: EventSink | None = None,
                  switch_factory: SwitchFactory | None = None, igmp_version: int = 3) -> Network:
    """Instantiate ``topo`` on ``sim`` (model switches unless ``switch_factory``)."""
    net = Network(sim, topo)
    arp: dict[int, bytes] = {pk.ip_int(h.ip): pk.mac_bytes(h.mac) for h in topo.hosts.values()}
    for h in topo.hosts.values():
        net.hosts[h.name] = HostNode(sim, h.name, h.ip, h.mac, arp=arp, igmp_version=igmp_version,
                                     sink=sink)
    factory = switch_factory or ModelSwitch
    for s in topo.switches.values():
        net.switches[s.name] = factory(sim, s.name)
    for l, (pa, pb) in zip(topo.links, number_ports(topo.switches, topo.links)):
        na = net.hosts.get(l.a.node) or net.switches[l.a.node]
        nb = net.hosts.get(l.b.node) or net.switches[l.b.node]
        link = Link(sim, l.name, na, pa, nb, pb, rate_bps=l.rate_bps, delay_s=l.delay_s,
                    loss=l.loss, queue_packets=l.queue_packets, queue_bytes=l.queue_bytes)
        na.attach(pa, link.ab)
        nb.attach(pb, link.ba)
        net.links[l.name] = link
        net.peers[(l.a.node, pa)] = (l.b.node, pb)
        net.peers[(l.b.node, pb)] = (l.a.node, pa)
        net.adjacency.setdefault(l.a.node, {})[pa] = l.b.node
        net.adjacency.setdefault(l.b.node, {})[pb] = l.a.node
    net.install_routes()
    return net
