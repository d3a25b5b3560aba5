"""Desired switch state as a pure function of a topology and its sessions.

``desired_state(topo, sessions)`` returns, for every switch, the
:class:`~controller.state.SwitchState` the controller wants there:

* unicast forwarding entries (each host's address -> the port toward it);
* the switch configuration (flood group, membership ageing) and the flood
  PRE group (every port);
* unicast forwarding and ARP-proxy entries for every host;
* per multicast group, a PRE group holding the ports that may carry the
  group (the downstream ports of the source's shortest-path tree pruned to
  the session's receivers) and, in each of the four group tables, an entry
  naming the group slot, that PRE group and the port toward the source.
  Which of those ports actually get a replica is the data plane's business
  (IGMP join state); the controller only bounds it;
* per assisted session its mode: aggregation (slot + data group, the
  program folds over up to ``K`` member ports) or filtering (slot + round
  window); sessions with assistance off get no entry (plain replication);
* per session with ``stamp`` set, an entry in the egress stamp table on
  every switch of its tree, and on every switch any such session crosses,
  each port's rate (from the topology's links) for the stamp's spare rate
  and the share, with the share's epoch, and the share's log tables
  (docs/stamp.md); with no stamped session none of these has entries;
* the feedback-policing meter on host ports and the membership digest.

Slots (group ``gidx``, session ``sidx``) and PRE group ids are allocated in
session-id order and are the same on every switch, so a packet trace or a
counter index reads the same everywhere.

No I/O and no clock: the simulator configures its switch nodes with the same
call, so emulation and simulation see identical tables.  The P4 names come
from :mod:`controller.program`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from p4mcc.controller import share
from p4mcc.controller.program import MCC, ProgramNames
from p4mcc.controller.state import (
    DefaultAction,
    DigestConfig,
    MeterConfig,
    MulticastGroup,
    SwitchState,
    TableEntry,
    _freeze,
)
from p4mcc.controller.topology import Topology, TopologyError
from p4mcc.controller.routes import RoutesTooLarge, host_routes
from p4mcc.controller.trees import source_tree, switches_below
from p4mcc.hosts import registry

MAX_MGID = 0xFFFF
"""v1model's ``mcast_grp`` is 16 bits; group 0 means "no multicast"."""

PORT_SET_BASE = 0x0E00
"""PRE group of the empty port set: the group of port set S is ``PORT_SET_BASE +
sum(1 << p for p in S)`` (``port_sets`` in ``p4src/include/ingress.p4``).  With
ports up to :data:`PORT_SET_MAX_PORT` the highest is 4095, the last group id
BMv2's PRE accepts; session groups (``flood_mgid + 1 + slot``) stay below it."""
PORT_SET_MAX_PORT = 8
"""The highest port number a port-set bitmap may hold."""
PORT_SET_MAX_PORTS = 8
"""A switch with at most this many ports, numbered up to :data:`PORT_SET_MAX_PORT`,
gets a PRE group for every set of its ports (at most 255 groups); a larger one
replicates to each group's downstream ports and lets egress prune."""

MODES = ("aggregate", "filter", "off")


def port_sets_fit(ports: Iterable[int]) -> bool:
    """Whether a switch with these ports gets port-set groups (:func:`port_set_groups`)."""
    ports = set(ports)
    return bool(ports) and len(ports) <= PORT_SET_MAX_PORTS and max(ports) <= PORT_SET_MAX_PORT


def port_set_groups(ports: Iterable[int]) -> list[MulticastGroup] | None:
    """The PRE groups that replicate multicast data to exactly its member ports:
    one per non-empty set of ``ports``, or None where a switch has too many
    ports (or too high a number) for them.

    Why: egress pruning drops a copy only after it went through the port's
    egress queue, and on BMv2 that queue (simple_switch's, before egress) is
    the emulated bottleneck; a copy for a port without members would take
    room and rate there.  Ingress picks the group of the member set instead."""
    ports = sorted(set(ports))
    if not port_sets_fit(ports):
        return None
    out = []
    for k in range(1, 1 << len(ports)):
        members = [p for i, p in enumerate(ports) if k >> i & 1]
        out.append(MulticastGroup.of_ports(PORT_SET_BASE + sum(1 << p for p in members), members))
    return out


def protocol_entry(protocol: str) -> registry.Protocol | None:
    """The protocol's registry entry (which owns its mode, groups and filter
    round), or None for a protocol the registry does not know."""
    try:
        return registry.get(protocol.lower())
    except registry.ParamError:
        return None


class DesiredStateError(ValueError):
    """Sessions that cannot be configured; the message names switch and session."""


@dataclass(frozen=True)
class SessionSpec:
    """What the controller needs to know about one multicast session.

    ``receivers`` empty means every host but the source may receive.
    ``mode`` is ``aggregate``, ``filter``, ``off`` or ``auto`` (the
    protocol's registry entry, :attr:`hosts.registry.Protocol.mode`).
    """

    session_id: int
    source: str
    groups: tuple[str, ...]
    protocol: str = ""
    receivers: tuple[str, ...] = ()
    mode: str = "auto"
    filter_window_us: int | None = None
    """VLMCC's filter round length on the switch (None: the protocol's default)."""
    stamp: bool = False
    """Switches stamp the session's data packets with the congestion signal."""

    @property
    def effective_mode(self) -> str:
        if self.mode != "auto":
            return self.mode
        entry = protocol_entry(self.protocol)
        return entry.mode if entry is not None else "off"


def session_from_scenario(s: Any) -> SessionSpec:
    """A :class:`SessionSpec` from a :class:`scenario.model.Session`."""
    groups = session_groups(s.protocol, s.group, getattr(s, "params", {}) or {})
    assistance = getattr(s, "assistance", True)
    mode = "auto" if assistance else "off"
    return SessionSpec(
        session_id=int(s.session_id),
        source=s.sender,
        groups=groups,
        protocol=s.protocol,
        receivers=tuple(s.receivers),
        mode=mode,
        filter_window_us=(getattr(s, "params", {}) or {}).get("filter_window_us"),
        stamp=assistance == "stamp",
    )


def session_groups(protocol: str, group: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """Every group address a session uses, from the protocol's registry entry
    (WEBRC: the base channel, then its wave channels).  Unknown protocols and
    parameters the protocol rejects use the one group."""
    entry = protocol_entry(protocol)
    if entry is None:
        return (group,)
    try:
        return entry.session_groups(group, dict(params))
    except (ValueError, ImportError, AttributeError):  # bad params or a broken module: one group
        return (group,)


@dataclass(frozen=True)
class DesiredOptions:
    """Knobs of the desired state that are policy, not topology."""

    names: ProgramNames = MCC
    feedback_pps: int | None = 20_000
    """Feedback each host port may send (packets/s) before the meter drops it;
    None leaves the meter unconfigured (no policing).  Only host-facing ports
    are policed: switch-to-switch ports carry many receivers' feedback."""
    feedback_burst: int = 2_000
    feedback_by_host: Mapping[str, tuple[int, int]] | None = None
    """Per host (packets/s, burst), overriding ``feedback_pps``/``feedback_burst``
    for that host's port (``controller.policing.host_budgets``)."""
    membership_timeout_us: int = 0
    """IGMP membership ageing (0: never age; then no querier is needed)."""
    proxy_refresh_us: int = 0
    digest_max_list: int = 1
    digest_timeout_ns: int = 0
    forwarding: bool = True
    """Unicast forwarding and ARP proxy entries for every host."""


@dataclass
class Plan:
    """The desired state plus the facts used to build it (for the CLI and tests)."""

    switches: dict[str, SwitchState]
    mgids: dict[str, int] = field(default_factory=dict)
    """group address -> PRE group id (the same on every switch)."""
    gidx: dict[str, int] = field(default_factory=dict)
    """group address -> the program's group slot (the same on every switch)."""
    sidx: dict[int, int] = field(default_factory=dict)
    """session id -> the program's session slot."""
    trees: dict[int, dict[str, Any]] = field(default_factory=dict)
    """session id -> switch -> TreeNode."""
    below: dict[str, frozenset[str]] = field(default_factory=dict)
    """switch -> the switches whose proxied joins climb through it (``trees.switches_below``):
    those a restore of that switch asks to join again."""
    warnings: list[str] = field(default_factory=list)


def allocate_groups(sessions: Sequence[SessionSpec], names: ProgramNames = MCC) -> dict[str, int]:
    """group address -> group slot 0, 1, ... in (session id, group) order.

    The PRE group id is ``flood_mgid + 1 + slot``.  Appending a session with
    a higher id never renumbers existing groups.
    """
    out: dict[str, int] = {}
    for s in sorted(sessions, key=lambda s: s.session_id):
        for g in s.groups:
            if g in out:
                raise DesiredStateError(f"session {s.session_id}: group {g} is already used by another session")
            out[g] = len(out)
    if len(out) > names.max_groups:
        raise DesiredStateError(f"{len(out)} groups exceed the program's {names.max_groups} group slots")
    return out


def allocate_mgids(sessions: Sequence[SessionSpec], names: ProgramNames = MCC) -> dict[str, int]:
    """group address -> PRE group id."""
    return {g: names.flood_mgid + 1 + i for g, i in allocate_groups(sessions, names).items()}


def _ip(addr: str, what: str) -> int:
    try:
        return int(ipaddress.IPv4Address(addr))
    except ValueError:
        raise DesiredStateError(f"{what}: not an IPv4 address: {addr!r}") from None


def _mac(mac: str, what: str) -> int:
    try:
        parts = mac.split(":")
        if len(parts) != 6:
            raise ValueError
        return int("".join(f"{int(p, 16):02x}" for p in parts), 16)
    except ValueError:
        raise DesiredStateError(f"{what}: not a MAC address: {mac!r}") from None


def _check_session(topo: Topology, s: SessionSpec) -> None:
    where = f"session {s.session_id}"
    if not 0 < s.session_id < 2**32:
        raise DesiredStateError(f"{where}: session id must be 1..2^32-1")
    if s.source not in topo.hosts:
        raise DesiredStateError(f"{where}: unknown source host {s.source!r}")
    for r in s.receivers:
        if r not in topo.hosts:
            raise DesiredStateError(f"{where}: unknown receiver host {r!r}")
    if s.effective_mode not in MODES:
        raise DesiredStateError(f"{where}: unknown mode {s.mode!r} (aggregate, filter, off, auto)")
    if not s.groups:
        raise DesiredStateError(f"{where}: no group address")
    for g in s.groups:
        if not ipaddress.IPv4Address(_ip(g, where)).is_multicast:
            raise DesiredStateError(f"{where}: {g} is not a multicast address")


def desired_state(
    topo: Topology,
    sessions: Iterable[SessionSpec],
    options: DesiredOptions = DesiredOptions(),
) -> dict[str, SwitchState]:
    """switch name -> the state the controller wants on it."""
    return plan(topo, sessions, options).switches


def plan(
    topo: Topology,
    sessions: Iterable[SessionSpec],
    options: DesiredOptions = DesiredOptions(),
) -> Plan:
    """Like :func:`desired_state`, also returning slots, PRE group ids and trees."""
    n = options.names
    sessions = sorted(sessions, key=lambda s: s.session_id)
    ids = [s.session_id for s in sessions]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise DesiredStateError(f"session ids used twice: {dup}")
    for s in sessions:
        _check_session(topo, s)
    gidx = allocate_groups(sessions, n)
    mgids = {g: n.flood_mgid + 1 + i for g, i in gidx.items()}
    if n.flood_mgid + len(gidx) >= (PORT_SET_BASE if n.port_sets_table else MAX_MGID + 1):
        raise DesiredStateError(f"{len(gidx)} groups exceed the {MAX_MGID} PRE groups v1model can address")
    assisted = [s for s in sessions if s.effective_mode != "off"]
    if len(assisted) > n.max_sessions:
        raise DesiredStateError(
            f"{len(assisted)} assisted sessions exceed the program's {n.max_sessions} session slots"
        )
    sidx = {s.session_id: i for i, s in enumerate(assisted)}
    states = {sw: SwitchState() for sw in topo.switches}
    out = Plan(states, mgids, gidx, sidx)

    for name in topo.switches:
        st = states[name]
        ports = sorted(p for p in topo.port_map(name) if p != n.cpu_port)
        st.add(MulticastGroup.of_ports(n.flood_mgid, ports))
        sets = port_set_groups(ports) if n.port_sets_table else None
        if sets is not None:
            for g in sets:
                st.add(g)
            st.add(DefaultAction(n.port_sets_table, n.port_sets_action, _freeze(
                {n.port_sets_base: PORT_SET_BASE, n.port_sets_ports: sum(1 << p for p in ports)})))
        st.add(
            DefaultAction(
                n.config_table,
                n.config_action,
                _freeze(
                    {
                        n.config_flood_mgid: n.flood_mgid,
                        n.config_timeout: options.membership_timeout_us,
                        n.config_refresh: options.proxy_refresh_us,
                    }
                ),
            )
        )
        by_host = options.feedback_by_host or {}
        if (options.feedback_pps is not None or by_host) and n.feedback_meter:
            for port, peer in sorted(topo.port_map(name).items()):
                if peer in topo.hosts:
                    pps, burst = by_host.get(peer, (options.feedback_pps, options.feedback_burst))
                    if pps is None:
                        continue
                    st.add(
                        MeterConfig(
                            n.feedback_meter, port,
                            cir=pps, cburst=burst,
                            pir=pps, pburst=burst,
                        )
                    )
        if n.membership_digest:
            st.add(
                DigestConfig(
                    n.membership_digest,
                    max_timeout_ns=options.digest_timeout_ns,
                    max_list_size=options.digest_max_list,
                )
            )

    if options.forwarding:
        _add_forwarding(topo, states, n)

    for s in sessions:
        receivers = s.receivers or tuple(h for h in sorted(topo.hosts) if h != s.source)
        try:
            tree = source_tree(topo, s.source, receivers)
        except TopologyError as exc:
            raise DesiredStateError(f"session {s.session_id}: {exc}") from None
        out.trees[s.session_id] = tree
        mode = s.effective_mode
        source_switch = topo.attachment(s.source)[0]
        for sw, node in sorted(tree.items()):
            st = states[sw]
            too_high = sorted(p for p in node.downstream if p >= n.member_ports)
            if too_high:
                raise DesiredStateError(
                    f"switch {sw}, session {s.session_id}: ports {too_high} cannot be group members "
                    f"(the program tracks ports 0..{n.member_ports - 1})"
                )
            has_upstream = 0 if sw == source_switch else 1
            for g in s.groups:
                st.add(MulticastGroup.of_ports(mgids[g], node.downstream))
                params = {
                    n.group_gidx: gidx[g],
                    n.group_mgid: mgids[g],
                    n.group_upstream: node.upstream,
                    n.group_has_upstream: has_upstream,
                }
                for table, action in zip(n.group_tables, n.group_actions):
                    st.add(TableEntry.make(table, {n.group_key: _ip(g, f"session {s.session_id}")}, action, params))
            key = {n.session_key: s.session_id}
            if mode == "aggregate":
                st.add(TableEntry.make(n.session_table, key, n.aggregate_action,
                                       {n.session_sidx: sidx[s.session_id], n.session_gidx: gidx[s.groups[0]]}))
                unfolded = sorted(p for p in node.downstream if p >= n.agg_k)
                if unfolded:
                    out.warnings.append(
                        f"switch {sw}, session {s.session_id}: feedback from ports {unfolded} passes unfolded "
                        f"(the program folds ports 0..{n.agg_k - 1})"
                    )
            elif mode == "filter":
                window = s.filter_window_us
                if window is None:
                    entry = protocol_entry(s.protocol)
                    window = entry.filter_window_us if entry is not None else 0
                st.add(TableEntry.make(n.session_table, key, n.filter_action,
                                       {n.session_sidx: sidx[s.session_id], n.session_window: int(window)}))
    _add_stamping(topo, states, sessions, out.trees, n)
    out.below = switches_below(out.trees.values())
    return out


def _add_stamping(topo: Topology, states: dict[str, SwitchState], sessions: Sequence[SessionSpec],
                  trees: Mapping[int, Mapping[str, Any]], n: ProgramNames) -> None:
    """The stamp's tables: each stamped session on the switches of its tree,
    and on those switches every port's rate (links of unknown rate: none,
    the port then never limits the spare rate or the share) with the share
    estimate's epoch for the switch, and the share's two log tables."""
    stamping: set[str] = set()
    for s in sessions:
        if not s.stamp:
            continue
        for sw in sorted(trees[s.session_id]):
            states[sw].add(TableEntry.make(n.stamp_table, {n.stamp_key: s.session_id}, n.stamp_action, {}))
            stamping.add(sw)
    shifts = {sw: share.epoch_shift(share.longest_rtt_s(topo, sw)) for sw in sorted(stamping)}
    for link in topo.links:
        if link.rate_bps is None:
            continue
        units = int(link.rate_bps // n.stamp_rate_unit_bps)
        for sw, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if sw in stamping:
                states[sw].add(TableEntry.make(n.port_rate_table, {n.port_rate_key: port}, n.port_rate_action,
                                               {n.port_rate_units: units, n.port_rate_epoch: shifts[sw]}))
    for sw in sorted(stamping):
        for h, log_n, log_n1 in share.heavy_log_entries():
            states[sw].add(TableEntry.make(n.share_heavy_table, {n.share_heavy_key: h}, n.share_heavy_action,
                                           {n.share_heavy_log: log_n, n.share_heavy_log_more: log_n1}))
        for k, log_ratio in share.spread_log_entries():
            states[sw].add(TableEntry.make(n.share_spread_table, {n.share_spread_key: k}, n.share_spread_action,
                                           {n.share_spread_log: log_ratio}))


def _add_forwarding(topo: Topology, states: dict[str, SwitchState], n: ProgramNames) -> None:
    """Unicast routes and ARP answers on every switch.

    Up to the program's table size every switch routes and answers ARP for
    every host.  Beyond it the routes are compressed (:mod:`controller.routes`)
    and each switch answers ARP only for the hosts cabled to it; a request
    for any other host misses and is flooded, and the target answers it, as
    on a plain Ethernet.
    """
    try:
        routes = host_routes(topo, n.host_table_size)
    except RoutesTooLarge as exc:
        raise DesiredStateError(str(exc)) from None
    # every switch holds the same few entries per host (a route per port, one
    # ARP answer): each distinct entry is built once and shared (they are frozen)
    made: dict[tuple[int, int, int | None], TableEntry] = {}
    for sw, table in routes.items():
        for r in table:
            e = made.get((r.prefix, r.length, r.port))
            if e is None:
                if r.port is None:
                    e = TableEntry.make(n.fwd_table, {n.fwd_key: (r.prefix, r.length)}, n.fwd_drop_action, {})
                else:
                    e = TableEntry.make(n.fwd_table, {n.fwd_key: (r.prefix, r.length)}, n.fwd_action,
                                        {n.fwd_port: r.port})
                made[(r.prefix, r.length, r.port)] = e
            states[sw].add(e)
    compressed = len(topo.hosts) > n.host_table_size
    arp = [(host, TableEntry.make(n.arp_table, {n.arp_key: _ip(h.ip, f"host {host}")}, n.arp_action,
                                  {n.arp_mac: _mac(h.mac, f"host {host}")}))
           for host, h in sorted(topo.hosts.items()) if h.mac is not None]
    for sw in topo.switches:
        local = set(topo.port_map(sw).values()) if compressed else ()
        for host, e in arp:
            if not compressed or host in local:
                states[sw].add(e)
