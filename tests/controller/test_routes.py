"""Unicast routes: /32 per host up to the table size, compressed beyond it.

The compressed routes must forward every host address exactly as the /32
routes do (checked against ``unicast_ports`` on every switch), fit the
table, and never loop: the program does not decrement TTL, so an address
that is nobody's must end in a drop or a miss within as many hops as there
are switches, from whichever switch it starts.
"""

from __future__ import annotations

import dataclasses
import ipaddress

from hypothesis import given, settings, strategies as st
import pytest

from p4mcc.controller.desired import DesiredOptions, DesiredStateError, SessionSpec, desired_state
from p4mcc.controller.program import MCC
from p4mcc.controller.routes import Route, RoutesTooLarge, host_routes, lookup, pure_cover
from p4mcc.controller.topology import from_scenario_topology, from_tutorials_dict
from p4mcc.controller.trees import unicast_ports
from p4mcc.scenario.shapes import kary_tree


def _tree(receivers: int = 60, k: int = 3):
    return from_scenario_topology(kary_tree(receivers, k))


def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def _walk(topo, routes, start: str, ip: int) -> tuple[str, int]:
    """Follow ``ip`` from switch ``start``: (how it ended, hops taken)."""
    sw, hops = start, 0
    while hops <= len(topo.switches):
        r = lookup(routes[sw], ip)
        if r is None:
            return "miss", hops
        if r.port is None:
            return "drop", hops
        peer = topo.port_map(sw)[r.port]
        if peer in topo.hosts:
            return "host", hops
        sw, hops = peer, hops + 1
    return "loop", hops


def test_up_to_the_table_size_every_switch_has_one_host_route_per_host() -> None:
    topo = _tree(20)
    routes = host_routes(topo, 1024)
    for sw, ports in unicast_ports(topo).items():
        assert routes[sw] == sorted(Route(_ip(topo.hosts[h].ip), 32, p) for h, p in ports.items())


@pytest.mark.parametrize("receivers,k,capacity", [(60, 3, 24), (200, 4, 64), (40, 2, 30)])
def test_compressed_routes_forward_every_host_as_the_host_routes_do(receivers: int, k: int, capacity: int) -> None:
    topo = _tree(receivers, k)
    assert len(topo.hosts) > capacity
    routes = host_routes(topo, capacity)
    for sw, ports in unicast_ports(topo).items():
        assert len(routes[sw]) <= capacity
        for host, port in ports.items():
            r = lookup(routes[sw], _ip(topo.hosts[host].ip))
            assert r is not None and r.port == port, (sw, host)
    assert sum(len(t) for t in routes.values()) < len(topo.hosts) * len(topo.switches) / 4


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_compressed_routes_never_loop(ip: int) -> None:
    topo = _TREE
    for start in topo.switches:
        ended, _ = _walk(topo, _ROUTES, start, ip)
        assert ended != "loop", (start, str(ipaddress.IPv4Address(ip)))


_TREE = _tree(60, 3)
_ROUTES = host_routes(_TREE, 24)


def test_addresses_between_hosts_end_in_a_drop_or_a_miss_not_a_loop() -> None:
    hosts = sorted(_ip(h.ip) for h in _TREE.hosts.values())
    near = {ip + d for ip in hosts for d in (-1, 1, 2)} - set(hosts)
    ends = {_walk(_TREE, _ROUTES, sw, ip)[0] for sw in _TREE.switches for ip in near}
    assert "loop" not in ends and "drop" in ends


def test_pure_cover_keeps_other_hosts_out_of_every_prefix() -> None:
    everyone = sorted([_ip("10.0.0.1"), _ip("10.0.0.2"), _ip("10.0.0.3"), _ip("10.0.0.5")])
    cover = pure_cover({_ip("10.0.0.1"): 7, _ip("10.0.0.2"): 7, _ip("10.0.0.5"): 7}, everyone)
    # .3 is someone else's, so .1/.2 cannot share a prefix with it
    for prefix, length, _ in cover:
        r = Route(prefix, length, 7)
        assert not r.covers(_ip("10.0.0.3"))
    assert {lookup([Route(p, n, lab) for p, n, lab in cover], _ip(a)).port
            for a in ("10.0.0.1", "10.0.0.2", "10.0.0.5")} == {7}


def test_routes_that_cannot_be_compressed_are_refused_with_the_reason() -> None:
    ring = from_tutorials_dict({
        "hosts": {f"h{i}": {"ip": f"10.0.0.{i}"} for i in range(1, 5)},
        "switches": {"s1": {}, "s2": {}, "s3": {}},
        "links": [["h1", "s1-p1"], ["h2", "s2-p1"], ["h3", "s3-p1"], ["h4", "s3-p2"],
                  ["s1-p2", "s2-p2"], ["s2-p3", "s3-p3"], ["s3-p4", "s1-p3"]],
    })
    with pytest.raises(RoutesTooLarge, match="do not form a tree"):
        host_routes(ring, 2)
    with pytest.raises(RoutesTooLarge, match="needs .* routes"):
        host_routes(_tree(60, 3), 3)


def test_desired_state_installs_drop_and_default_routes_beyond_the_table_size() -> None:
    topo = _tree(60, 3)
    small = dataclasses.replace(MCC, host_table_size=24)
    states = desired_state(topo, [], DesiredOptions(names=small))
    big = desired_state(topo, [], DesiredOptions())
    for sw, st_ in states.items():
        fwd = [e for e in st_.entries.values() if e.table == MCC.fwd_table]
        assert len(fwd) <= 24 and len(fwd) < len([e for e in big[sw].entries.values() if e.table == MCC.fwd_table])
        arp = [e for e in st_.entries.values() if e.table == MCC.arp_table]
        assert len(arp) == sum(1 for peer in topo.port_map(sw).values() if peer in topo.hosts)
    defaults = [sw for sw, table in host_routes(topo, 24).items() if any(r.length == 1 for r in table)]
    assert len(defaults) == len(topo.switches) - 1  # every switch but the root routes the rest upward
    with pytest.raises(DesiredStateError, match="routes"):
        desired_state(topo, [], DesiredOptions(names=dataclasses.replace(MCC, host_table_size=3)))


def test_the_table_size_is_the_programs(tmp_path) -> None:
    from p4mcc.controller.program import P4_INCLUDE, P4_SOURCE
    from p4mcc.p4switch.frontend import compile_file
    from p4mcc.p4switch.interp import Switch

    sw = Switch(compile_file(str(P4_SOURCE), include_dirs=[str(P4_INCLUDE)]), cpu_port=MCC.cpu_port)
    sizes = {t.size for name, t in sw.tables.items() if name in (MCC.fwd_table, MCC.arp_table)}
    assert sizes == {MCC.host_table_size}


def test_a_session_through_a_compressed_tree_still_configures() -> None:
    topo = _tree(60, 3)
    small = dataclasses.replace(MCC, host_table_size=24)
    states = desired_state(topo, [SessionSpec(1, "snd", ("239.1.1.1",), protocol="tfmcc")],
                           DesiredOptions(names=small))
    assert all(len([e for e in s.entries.values() if e.table == MCC.fwd_table]) <= 24 for s in states.values())


def test_the_program_forwards_and_drops_by_the_compressed_routes() -> None:
    import scapy.all as scapy

    from p4mcc.controller.local import LocalApplier
    from p4mcc.controller.program import P4_INCLUDE, P4_SOURCE
    from p4mcc.p4switch.frontend import compile_file
    from p4mcc.p4switch.interp import Switch

    topo = _TREE
    states = desired_state(topo, [], DesiredOptions(names=dataclasses.replace(MCC, host_table_size=24)))
    program = compile_file(str(P4_SOURCE), include_dirs=[str(P4_INCLUDE)])
    leaf, in_port = topo.attachment("r1")
    sw = Switch(program, cpu_port=MCC.cpu_port)
    LocalApplier(sw, leaf).sync(states[leaf])
    want = unicast_ports(topo)[leaf]
    switch, port = [sw], [in_port]

    def out_ports(dst: str) -> list[int]:
        frame = bytes(scapy.Ether(src=topo.hosts["r1"].mac, dst="08:00:00:00:00:99") /
                      scapy.IP(src=topo.hosts["r1"].ip, dst=dst) / scapy.UDP(sport=1, dport=2) / scapy.Raw(b"x"))
        return [o.port for o in switch[0].process(port[0], frame, 0.0)]

    for host in ("snd", "r2", "r30", "r59"):
        assert out_ports(topo.hosts[host].ip) == [want[host]], host
    # an address that is nobody's, inside a prefix the parent sends down: dropped here, not sent back up
    hosts = {_ip(h.ip) for h in topo.hosts.values()}
    mid, nobody = next(
        (name, ip) for name, table in sorted(_ROUTES.items()) for r in table if r.port is None
        for ip in range(r.prefix, r.prefix + (1 << (32 - r.length)))
        if ip not in hosts and lookup(table, ip) == r
    )
    sw = Switch(program, cpu_port=MCC.cpu_port)
    LocalApplier(sw, mid).sync(states[mid])
    switch[0], port[0] = sw, max(r.port for r in _ROUTES[mid] if r.length == 1)
    assert out_ports(str(ipaddress.IPv4Address(nobody))) == []
