"""Topology generators, network building, and port numbering shared with the controller."""

from __future__ import annotations

import math
import random

import pytest

from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.scenario.shapes import dumbbell, heterogeneous_losses, kary_tree, star
from p4mcc.scenario.model import scenario_from_dict


def test_dumbbell_shape_and_default_queue_is_one_bdp() -> None:
    t = dumbbell(2, tcp_pairs=1, rate="10Mbps", delay="20ms", access_delay="1ms")
    assert sorted(t.hosts) == ["r1", "r2", "snd1", "snd2", "tdst1", "tsrc1"]
    bott = t.links[0]
    assert (bott.a.node, bott.b.node, bott.rate_bps, bott.delay_s) == ("s1", "s2", 10e6, 0.02)
    # 10 Mb/s * 2 * (20 + 2) ms / (8 * 1500) = 36.7 -> 37 packets
    assert bott.queue_packets == 37
    assert len({h.ip for h in t.hosts.values()}) == 6


def test_kary_tree_depth_and_receiver_spread() -> None:
    t = kary_tree(receivers=20, k=3)
    # leaves needed >= ceil(20/3) = 7 -> depth 3 (9 leaves); 1 + 3 + 9 switches
    assert len(t.switches) == 13
    leaves = {l.b.node for l in t.links if l.a.node.startswith("r")}
    assert len(leaves) == 9
    per_leaf = [sum(1 for l in t.links if l.a.node.startswith("r") and l.b.node == s) for s in leaves]
    assert max(per_leaf) - min(per_leaf) <= 1


def test_heterogeneous_losses_follow_the_tfmcc_scaling_mix() -> None:
    n = 1000
    rates = heterogeneous_losses(n, random.Random(3))
    high = sum(1 for r in rates if r >= 0.05)
    mid = sum(1 for r in rates if 0.02 <= r < 0.05)
    low = sum(1 for r in rates if 0.005 <= r < 0.02)
    assert high == round(math.log(n))  # a*ln(n) with a = 1
    assert mid == round(4 * math.log(n))
    assert low == n - high - mid and min(rates) >= 0.005 and max(rates) <= 0.10
    t = kary_tree(receivers=50, k=4, loss_distribution="tfmcc", loss_seed=3)
    assert all(0.005 <= l.loss <= 0.1 for l in t.links if l.a.node.startswith("r"))
    with pytest.raises(ValueError, match="loss_distribution"):
        kary_tree(receivers=4, loss_distribution="pareto")


def test_star_per_receiver_parameters() -> None:
    t = star(4, delay=["30ms", "60ms"], loss=[0.001, 0.005, 0.025, 0.125])
    rl = {l.a.node: l for l in t.links if l.a.node.startswith("r")}
    assert [rl[f"r{i}"].loss for i in range(1, 5)] == [0.001, 0.005, 0.025, 0.125]
    assert [rl[f"r{i}"].delay_s for i in range(1, 5)] == [0.03, 0.06, 0.03, 0.06]


def test_port_numbering_matches_the_controllers() -> None:
    sc = scenario_from_dict({"duration": 1, "topology": {
        "hosts": ["h1", "h2", "h3"], "switches": ["s1", "s2", "s3"],
        "links": [["h1", "s1"], ["s1-p1", "s2"], ["h2", "s2-p1"], ["h3", "s1"], ["s1", "s3"],
                  ["s3", "s2"]]}},
        known_protocols=None)
    net = build_network(Simulator(), sc.topology)
    from p4mcc.controller.topology import from_scenario_topology

    ctopo = from_scenario_topology(sc.topology)
    theirs = {(l.a, l.a_port, l.b, l.b_port) for l in ctopo.links}
    ours = {(a, pa, b, pb) for (a, pa), (b, pb) in net.peers.items()}
    assert theirs <= ours
    assert net.peers[("s1", 1)] == ("s2", 2)  # explicit s1-p1; s2's first free port after p1
    assert net.peers[("h1", 0)] == ("s1", 2)


def test_routes_follow_shortest_paths() -> None:
    t = kary_tree(receivers=8, k=2)
    net = build_network(Simulator(), t)
    # the root switch reaches r1 through the child on r1's side, and the sender through its own port
    root = net.switches["s1"]
    snd_port = next(p for p, peer in net.adjacency["s1"].items() if peer == "snd")
    assert root.routes[net.hosts["snd"].ip_int] == snd_port
    for h in ("r1", "r2"):
        nxt = net.adjacency["s1"][root.routes[net.hosts[h].ip_int]]
        assert nxt in ("s2", "s3")


def test_routes_match_a_search_from_each_host() -> None:
    """Hosts behind one switch share that switch's search (install_routes);
    every route must still be the one a search from the host itself gives,
    ties between equal paths included."""
    sc = scenario_from_dict({"topology": {
        "hosts": ["h1", "h2", "h3", "h4", "h5"], "switches": ["s1", "s2", "s3", "s4"],
        "links": [["h1", "s1"], ["h2", "s1"], ["s1", "s2"], ["s1", "s3"], ["s2", "s4"], ["s3", "s4"],
                  ["h3", "s4"], ["h4", "s4"], ["h5", "s2"]]}}, known_protocols=None)
    for topo in (sc.topology, kary_tree(receivers=23, k=3)):
        net = build_network(Simulator(), topo)
        for h, node in net.hosts.items():
            want = net.next_hops(h)
            got = {sw: s.routes[node.ip_int] for sw, s in net.switches.items()}
            assert got == want, h
