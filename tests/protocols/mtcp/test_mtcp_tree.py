"""MTCP's logical tree: validation, fan-out bound, locality, parameter form."""

from __future__ import annotations

import networkx as nx
import pytest

from p4mcc.hosts.mtcp import tree as mtcp_tree
from p4mcc.hosts.mtcp.tree import TreeError


def test_parent_map_round_trips_through_the_parameter_string():
    t = mtcp_tree.from_parent_map("10.0.0.1", {"10.0.0.2": "10.0.0.1", "10.0.0.3": "10.0.0.2"}, k=2)
    text = t.encode()
    assert text == "10.0.0.2>10.0.0.1,10.0.0.3>10.0.0.2"
    back = mtcp_tree.parse(text, "10.0.0.1")
    assert back.parent == t.parent
    assert back.children_of("10.0.0.2") == ("10.0.0.3",)
    assert back.agents == ["10.0.0.1", "10.0.0.2"]
    assert back.height == 2


@pytest.mark.parametrize(
    "parent,msg",
    [
        ({"a": "b", "b": "a"}, "cycle"),
        ({"a": "zz"}, "neither the sender"),
        ({"a": "a"}, "its own parent"),
        ({"s": "a", "a": "s"}, "cannot have a parent"),
    ],
)
def test_bad_parent_maps_are_rejected(parent, msg):
    with pytest.raises(TreeError, match=msg):
        mtcp_tree.from_parent_map("s", parent)


def test_fan_out_bound_is_enforced():
    with pytest.raises(TreeError, match="more than k=2"):
        mtcp_tree.from_parent_map("s", {"a": "s", "b": "s", "c": "s"}, k=2)


def test_graph_placement_respects_k_and_keeps_subnets_together():
    g = nx.Graph()
    g.add_edges_from([("s", "r0"), ("r0", "r1"), ("r0", "r2")])
    left = [f"l{i}" for i in range(4)]
    right = [f"x{i}" for i in range(4)]
    g.add_edges_from(("r1", h) for h in left)
    g.add_edges_from(("r2", h) for h in right)
    t = mtcp_tree.from_graph(g, "s", left + right, k=2)
    assert all(len(v) <= 2 for v in t.children.values())
    # Each receiver hangs below a node of its own subnet unless it is a subnet's first.
    for h in left[1:]:
        assert t.parent[h] in left
    for h in right[1:]:
        assert t.parent[h] in right
    assert t.children_of("s") == ("l0", "x0")


def test_graph_placement_with_large_k_is_flat():
    g = nx.star_graph(5)
    t = mtcp_tree.from_graph(g, 0, [1, 2, 3, 4, 5], k=16)  # type: ignore[arg-type]
    assert set(t.parent.values()) == {0}


def test_unknown_or_unreachable_receivers_are_errors():
    g = nx.Graph([("s", "a")])
    g.add_node("b")
    with pytest.raises(TreeError, match="not in the topology"):
        mtcp_tree.from_graph(g, "s", ["zz"])
    with pytest.raises(TreeError, match="unreachable"):
        mtcp_tree.from_graph(g, "s", ["a", "b"])


def test_flat_tree_and_bad_strings():
    t = mtcp_tree.flat("s", ["a", "b"])
    assert t.children_of("s") == ("a", "b")
    with pytest.raises(TreeError, match="child>parent"):
        mtcp_tree.parse("a-b", "s")
    with pytest.raises(TreeError, match="two parents"):
        mtcp_tree.parse("a>s,a>b,b>s", "s")


def test_parameter_strings_are_validated_up_front():
    from p4mcc.hosts.mtcp import MtcpParams, MtcpSender
    from p4mcc.hosts.registry import ParamError, SessionConfig

    assert mtcp_tree.root_of("b>a,c>b") == "a"
    with pytest.raises(TreeError, match="exactly one root"):
        mtcp_tree.root_of("b>a,d>c")
    with pytest.raises(ValueError, match="more than k=1"):
        MtcpParams(tree="b>a,c>a", k=1)
    with pytest.raises(ParamError, match="the sender is 10.0.0.9"):
        MtcpSender(SessionConfig(1, "239.1.1.1", 5000, "10.0.0.9", "10.0.0.9", MtcpParams(tree="b>a")))


def test_a_session_with_a_tree_is_not_folded_and_delivers_on_the_paper_network():
    """The switches fold MTCP ACKs of assisted sessions, and a fold would hide
    each agent's tree children from it: the sender never heard its children
    and sent nothing (mtcp-interfairness-4 delivered 0 bytes). A session with a
    ``tree`` is unassisted by default; asking for assistance is an error."""
    import dataclasses
    from pathlib import Path

    import yaml

    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import ScenarioError, load_scenario, scenario_from_dict

    path = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "paper" / "mtcp-interfairness-4.yaml"
    sc = load_scenario(path)
    assert all(not s.assistance for s in sc.sessions)
    sc = dataclasses.replace(sc, duration=8.0)
    run = build_run(sc, switch=choose_switch("p4", sc))
    run.sim.run(until=8.0)
    for s in sc.sessions:
        for r in s.receivers:
            assert run.agents[f"{s.name}/{r}"].rbuf.cum_ack > 50, (s.name, r)  # > 50 kb/s each
    raw = yaml.safe_load(path.read_text())
    raw["sessions"][0]["assistance"] = True
    with pytest.raises(ScenarioError, match="cannot be switch-assisted"):
        scenario_from_dict(raw)
