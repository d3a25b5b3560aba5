"""The tree generator: one bottleneck per branch, hosts named per branch, errors that name the field."""

from __future__ import annotations

import pytest

from p4mcc.scenario.model import ScenarioError, scenario_from_dict
from p4mcc.scenario.shapes import tree, tree_layout


def _links(topo):
    return {(l.a.node, l.b.node): l for l in topo.links}


def test_each_branch_is_its_own_bottleneck_with_its_hosts_behind_it() -> None:
    branches = [{"rate": "2Mbps", "delay": "13ms", "tcp_pairs": 1, "receivers": 2},
                {"rate": "10Mbps", "delay": "38ms", "queue": 40, "tcp_pairs": 2, "receivers": 1}]
    topo = tree(branches, lossy_leaf={"branch": 1, "loss": 0.02})
    links = _links(topo)
    b1, b2 = links[("s1", "s2")], links[("s1", "s3")]
    assert (b1.rate_bps, b1.delay_s, b2.rate_bps, b2.delay_s, b2.queue_packets) == pytest.approx(
        (2e6, 0.013, 10e6, 0.038, 40))
    # default queue: one BDP of the branch's round trip 2 * (13 + 2) ms at 2 Mb/s = 5 packets -> the floor 10
    assert b1.queue_packets == 10
    assert tree_layout(branches) == [
        {"receivers": ["r1", "r2"], "tcp": [("tsrc1", "tdst1")]},
        {"receivers": ["r3"], "tcp": [("tsrc2", "tdst2"), ("tsrc3", "tdst3")]}]
    assert links[("r1", "s2")].loss == 0.0 and links[("r2", "s2")].loss == 0.02  # the branch's last receiver
    assert links[("r3", "s3")].loss == 0.0
    assert links[("tsrc2", "s1")] and links[("tdst3", "s3")] and links[("snd1", "s1")]


@pytest.mark.parametrize("gen, field", [
    ({"branches": [{"rate": "fast"}]}, "topology.generate.branches[0].rate"),
    ({"branches": [{}, {"receivers": 2.5}]}, "topology.generate.branches[1].receivers"),
    ({"branches": [{}, {"tcp_pairs": -1}]}, "topology.generate.branches[1].tcp_pairs"),
    ({"branches": [{}, {"queue": 0}]}, "topology.generate.branches[1].queue"),
    ({"branches": [{"delay": "-5ms"}]}, "topology.generate.branches[0].delay"),
    ({"branches": [{"bottleneck": 1}]}, "topology.generate.branches[0].bottleneck"),
    ({"branches": []}, "topology.generate.branches"),
    ({"branches": [{}], "lossy_leaf": {"branch": 3, "loss": 0.01}}, "topology.generate.lossy_leaf.branch"),
    ({"branches": [{}], "lossy_leaf": {"branch": 1, "loss": 1.5}}, "topology.generate.lossy_leaf.loss"),
])
def test_a_bad_branch_field_is_named(gen: dict, field: str) -> None:
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict({"name": "t", "duration": 5, "topology": {"generate": {"kind": "tree", **gen}}})
    assert f"{field}:" in str(e.value)
