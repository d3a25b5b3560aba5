"""Topologies as networkx graphs: hosts, switches, links and port numbers.

The controller needs one fact more than a plain graph gives: on each switch,
which port number leads to which neighbour.  Port numbers follow
p4lang/tutorials: a link end written ``s1-p2`` is port 2 of switch ``s1``; a
host end is the host's name (``h1``, its single interface) or ``h1-p0``.

Files -- a p4mcc scenario (YAML or JSON) or a p4lang/tutorials
``topology.json`` -- are read by :func:`scenario.model.load_scenario`
(one parser, errors naming the field) and converted by
:func:`from_scenario_topology`; :func:`from_tutorials_dict` builds a topology
straight from a tutorials-style mapping (tests, benchmarks).

The result is a :class:`Topology`: an undirected ``networkx.Graph`` whose nodes
carry ``kind`` (``"host"`` or ``"switch"``) and whose edges carry the port
number at each end, so path computations stay networkx calls and port
look-ups stay dictionary reads.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import networkx as nx

DEFAULT_GRPC_BASE_PORT = 50051
"""gRPC port of the first switch when a topology names none (as p4lang/tutorials)."""

_PORT_RE = re.compile(r"^(?P<node>[A-Za-z_][\w.]*?)(?:-p(?P<port>\d+))?$")


class TopologyError(ValueError):
    """A topology that cannot be used; the message names the offending item."""


@dataclass(frozen=True)
class Host:
    """An end host with one interface."""

    name: str
    ip: str
    mac: str


@dataclass(frozen=True)
class Switch:
    """A P4Runtime switch: its name, gRPC address and device id."""

    name: str
    address: str
    device_id: int = 0
    cpu_port: int | None = None


@dataclass(frozen=True)
class Link:
    """One cable; ``*_port`` is the port number on a switch end (0 on a host).

    ``rate_bps`` (None: unknown, as a tutorials topology without ``bw``) is
    what the congestion stamp measures a port's spare rate against; the
    simulator and Mininet shape links from the scenario itself.
    """

    a: str
    a_port: int
    b: str
    b_port: int
    delay_ms: float = 0.0
    loss: float = 0.0
    queue: int | None = None
    rate_bps: float | None = None


@dataclass
class Topology:
    """Hosts, switches and links, with port maps for every switch.

    ``graph`` is an undirected ``networkx.Graph``; each edge stores
    ``ports={node: port}`` and the link's ``Link`` object.
    """

    hosts: dict[str, Host] = field(default_factory=dict)
    switches: dict[str, Switch] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    graph: nx.Graph = field(default_factory=nx.Graph)

    # -- construction -----------------------------------------------------
    def add_host(self, host: Host) -> None:
        self._check_new_name(host.name)
        self.hosts[host.name] = host
        self.graph.add_node(host.name, kind="host", ip=host.ip, mac=host.mac)

    def add_switch(self, switch: Switch) -> None:
        self._check_new_name(switch.name)
        self.switches[switch.name] = switch
        self.graph.add_node(switch.name, kind="switch", address=switch.address)

    def add_link(self, link: Link) -> None:
        for node in (link.a, link.b):
            if node not in self.graph:
                raise TopologyError(f"link {link.a}-{link.b}: unknown node {node!r}")
        for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if node in self.switches:
                if port < 0:
                    raise TopologyError(
                        f"link {link.a}-{link.b}: switch end {node} needs a port (write {node}-pN)"
                    )
                used = self.port_map(node)
                if port in used:
                    raise TopologyError(
                        f"link {link.a}-{link.b}: port {node}-p{port} already links to {used[port]}"
                    )
            elif self.graph.degree(node) > 0:
                raise TopologyError(f"link {link.a}-{link.b}: host {node} already has a link")
        if link.a == link.b:
            raise TopologyError(f"link {link.a}-{link.b}: a link needs two different nodes")
        if self.graph.has_edge(link.a, link.b):
            raise TopologyError(f"link {link.a}-{link.b}: parallel links are not supported")
        self.links.append(link)
        self.graph.add_edge(
            link.a, link.b, ports={link.a: link.a_port, link.b: link.b_port}, link=link
        )

    def _check_new_name(self, name: str) -> None:
        if name in self.graph:
            raise TopologyError(f"node {name!r} is defined twice")

    # -- queries ----------------------------------------------------------
    def port_map(self, switch: str) -> dict[int, str]:
        """Port number -> neighbour name for ``switch``."""
        return {
            data["ports"][switch]: nbr for nbr, data in self.graph.adj[switch].items()
        }

    def port_to(self, node: str, neighbour: str) -> int:
        """The port on ``node`` whose cable leads to ``neighbour``."""
        try:
            return int(self.graph.edges[node, neighbour]["ports"][node])
        except KeyError:
            raise TopologyError(f"no link between {node} and {neighbour}") from None

    def attachment(self, host: str) -> tuple[str, int]:
        """The (switch, port) a host is cabled to."""
        if host not in self.hosts:
            raise TopologyError(f"unknown host {host!r}")
        nbrs = list(self.graph.adj[host])
        if not nbrs:
            raise TopologyError(f"host {host} has no link")
        sw = nbrs[0]
        if sw not in self.switches:
            raise TopologyError(f"host {host} is cabled to {sw}, which is not a switch")
        return sw, self.port_to(sw, host)

    def host_by_ip(self, ip: str) -> Host:
        """The host owning ``ip``."""
        for h in self.hosts.values():
            if h.ip == ip:
                return h
        raise TopologyError(f"no host has address {ip}")

    def switch_graph(self) -> nx.Graph:
        """The subgraph of switches only (hosts are never transit nodes)."""
        return self.graph.subgraph(self.switches).copy()

    def validate(self) -> None:
        """Every host cabled to a switch, switches connected to one another."""
        for h in self.hosts:
            self.attachment(h)
        sg = self.switch_graph()
        if len(sg) > 1 and not nx.is_connected(sg):
            parts = sorted(sorted(c) for c in nx.connected_components(sg))
            raise TopologyError(f"switches are not connected: {parts}")


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


def _switch_from_options(name: str, index: int, spec: Mapping[str, Any], base_port: int) -> Switch:
    """A switch's address and device id from its options.

    With no address at all, switch i gets ``127.0.0.1:base_port+i`` and
    device id i (the tutorials' launcher numbering).  An explicit
    ``address`` or ``grpc_port`` means a switch process of its own, whose
    device id defaults to 0 as ``simple_switch_grpc`` and ``p4mcc switch`` do.
    """
    address = spec.get("address") or spec.get("grpc_address")
    explicit = bool(address) or "grpc_port" in spec
    if not address:
        address = f"127.0.0.1:{int(spec.get('grpc_port', base_port + index))}"
    device = int(spec.get("device_id", 0 if explicit else index))
    cpu = spec.get("cpu_port")
    return Switch(name, str(address), device, int(cpu) if cpu is not None else None)


def parse_endpoint(text: str) -> tuple[str, int]:
    """``"s1-p2"`` -> ``("s1", 2)``; ``"h1"`` -> ``("h1", -1)`` (no port written)."""
    m = _PORT_RE.match(str(text).strip())
    if not m:
        raise TopologyError(f"bad link end {text!r}: write NODE or NODE-pN (e.g. s1-p2)")
    port = m.group("port")
    return m.group("node"), int(port) if port is not None else -1


def _parse_delay_ms(value: Any, where: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    m = re.fullmatch(r"\s*([\d.]+)\s*(us|ms|s)?\s*", str(value))
    if not m:
        raise TopologyError(f"{where}: bad latency {value!r} (write e.g. '5ms')")
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3, None: 1.0}[m.group(2)]
    return float(m.group(1)) * scale


def _default_ip(index: int) -> str:
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.0.0.0")) + index))


def _default_mac(index: int) -> str:
    return "08:00:00:00:%02x:%02x" % ((index >> 8) & 0xFF, index & 0xFF)


def _host_index(name: str, fallback: int) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else fallback


def from_tutorials_dict(data: Mapping[str, Any], *, base_port: int = DEFAULT_GRPC_BASE_PORT) -> Topology:
    """Build a topology from a p4lang/tutorials-style ``topology.json`` mapping.

    Hosts may give ``ip`` (``10.0.1.1/24`` accepted; the prefix is dropped) and
    ``mac``; missing ones get ``10.0.0.N`` and ``08:00:00:00:00:N`` from the
    host's number.  Switches may give ``address`` (``HOST:PORT``), ``grpc_port``
    or ``device_id``; otherwise the i-th switch listens on ``base_port + i``
    with device id ``i``, as the tutorials' launcher numbers them.
    Links are ``[a, b]`` or ``[a, b, latency, bandwidth_mbps]``.
    """
    if not isinstance(data, Mapping):
        raise TopologyError("topology: expected a mapping with hosts, switches, links")
    topo = Topology()
    hosts = data.get("hosts", {})
    if isinstance(hosts, list):  # older tutorials: a list of names
        hosts = {name: {} for name in hosts}
    for i, (name, spec) in enumerate(dict(hosts).items(), start=1):
        spec = spec or {}
        idx = _host_index(name, i)
        ip = str(spec.get("ip", _default_ip(idx))).split("/")[0]
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise TopologyError(f"host {name}: bad ip {spec.get('ip')!r}") from None
        topo.add_host(Host(name, ip, str(spec.get("mac", _default_mac(idx))).lower()))
    switches = data.get("switches", {})
    if isinstance(switches, list):
        switches = {name: {} for name in switches}
    for i, (name, spec) in enumerate(dict(switches).items()):
        spec = spec or {}
        topo.add_switch(_switch_from_options(name, i, spec, base_port))
    for raw in data.get("links", []):
        if isinstance(raw, Mapping):
            ends = [raw.get("a") or raw.get("node1"), raw.get("b") or raw.get("node2")]
            extra = raw
            lat = raw.get("latency", raw.get("delay"))
        else:
            if not isinstance(raw, (list, tuple)) or len(raw) < 2:
                raise TopologyError(f"link {raw!r}: expected [a, b] or [a, b, latency, bw]")
            ends = list(raw[:2])
            extra = {}
            lat = raw[2] if len(raw) > 2 else None
        (a, ap), (b, bp) = parse_endpoint(ends[0]), parse_endpoint(ends[1])
        ap, bp = (max(ap, 0) if a in topo.hosts else ap), (max(bp, 0) if b in topo.hosts else bp)
        where = f"link {ends[0]}-{ends[1]}"
        topo.add_link(
            Link(
                a,
                ap,
                b,
                bp,
                delay_ms=_parse_delay_ms(lat, where),
                loss=float(extra.get("loss", 0.0)),
                queue=extra.get("queue"),
            )
        )
    topo.validate()
    return topo


def number_ports(switches: Iterable[str], links: Sequence[Any]) -> list[tuple[int, int]]:
    """The port number of each end of each scenario link: ``(a_port, b_port)`` in link order.

    This is the one port numbering of p4mcc: :func:`from_scenario_topology`
    (hence the controller and the Mininet builder) and the simulator's
    :func:`netsim.network.build_network` all take it from here.  A host's end
    is port 0 (its single interface).  A switch end keeps the port the
    scenario gives it (``s1-p2``); an unnumbered one gets the lowest port
    number not otherwise used on that switch, taken in link order.  ``links``
    are scenario links (ends with ``node`` and ``port``, None when unnumbered).
    """
    taken: dict[str, set[int]] = {name: set() for name in switches}
    for ln in links:
        for end in (ln.a, ln.b):
            if end.node in taken and end.port is not None:
                taken[end.node].add(int(end.port))

    def number(end: Any) -> int:
        if end.node not in taken:
            return 0
        if end.port is not None:
            return int(end.port)
        port = 1
        while port in taken[end.node]:
            port += 1
        taken[end.node].add(port)
        return port

    return [(number(ln.a), number(ln.b)) for ln in links]


def from_scenario_topology(t: Any) -> Topology:
    """Adapt a :class:`scenario.model.Topology` to a :class:`Topology`.

    Scenario link ends may leave a switch port unnumbered; such ends get the
    lowest port number not otherwise used on that switch, taken in link order.
    This is the one numbering every engine uses (the simulator and the
    Mininet builder configure their switches from this object).
    Switch ``options`` may carry ``address``, ``grpc_port``, ``device_id`` and
    ``cpu_port``; otherwise switch i listens on ``127.0.0.1:50051+i``.
    """
    topo = Topology()
    for h in t.hosts.values():
        topo.add_host(Host(h.name, h.ip, (h.mac or "").lower()))
    for i, sw in enumerate(t.switches.values()):
        opts = dict(getattr(sw, "options", {}) or {})
        topo.add_switch(_switch_from_options(sw.name, i, opts, DEFAULT_GRPC_BASE_PORT))
    for ln, (a_port, b_port) in zip(t.links, number_ports(t.switches, t.links)):
        loss = ln.loss if isinstance(ln.loss, (int, float)) else float(ln.loss.mean_loss)
        topo.add_link(
            Link(
                ln.a.node,
                a_port,
                ln.b.node,
                b_port,
                delay_ms=float(ln.delay_s) * 1e3,
                loss=float(loss),
                queue=ln.queue_packets,
                rate_bps=float(ln.rate_bps),
            )
        )
    topo.validate()
    return topo
