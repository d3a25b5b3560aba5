"""Desired state on small topologies: exact entries, groups, trees, errors."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import replace

import pytest

from p4mcc.controller.desired import (
    PORT_SET_BASE,
    PORT_SET_MAX_PORT,
    PORT_SET_MAX_PORTS,
    DesiredOptions,
    DesiredStateError,
    SessionSpec,
    allocate_mgids,
    desired_state,
    plan,
    port_set_groups,
)
from p4mcc.controller.program import MCC
from p4mcc.controller.state import DefaultAction, DigestConfig, MeterConfig, MulticastGroup, TableEntry
from p4mcc.controller.topology import from_tutorials_dict

N = MCC


def ip(a: str) -> int:
    return int(ipaddress.IPv4Address(a))


def triangle():
    return from_tutorials_dict(
        {
            "hosts": {"h1": {"ip": "10.0.0.1"}, "h2": {"ip": "10.0.0.2"}, "h3": {"ip": "10.0.0.3"}},
            "switches": {"s1": {}, "s2": {}, "s3": {}},
            "links": [
                ["h1", "s1-p1"], ["s1-p2", "s2-p2"], ["s1-p3", "s3-p2"],
                ["h2", "s2-p1"], ["s2-p3", "s3-p3"], ["h3", "s3-p1"],
            ],
        }
    )


def fwd(dst: str, port: int) -> TableEntry:
    return TableEntry.make(N.fwd_table, {N.fwd_key: (ip(dst), 32)}, N.fwd_action, {N.fwd_port: port})


def group_entries(g: str, gidx: int, mgid: int, up: int, has_up: int = 1) -> set[TableEntry]:
    params = {N.group_gidx: gidx, N.group_mgid: mgid, N.group_upstream: up, N.group_has_upstream: has_up}
    return {
        TableEntry.make(t, {N.group_key: ip(g)}, a, params) for t, a in zip(N.group_tables, N.group_actions)
    }


def agg_entry(sid: int, sidx: int, gidx: int) -> TableEntry:
    return TableEntry.make(N.session_table, {N.session_key: sid}, N.aggregate_action,
                           {N.session_sidx: sidx, N.session_gidx: gidx})


def filter_entry(sid: int, sidx: int, window: int) -> TableEntry:
    return TableEntry.make(N.session_table, {N.session_key: sid}, N.filter_action,
                           {N.session_sidx: sidx, N.session_window: window})


def entries_of(state, *tables: str) -> set[TableEntry]:
    return {e for e in state.entries.values() if e.table in tables}


G = N.group_tables
M1 = N.flood_mgid + 1  # the first session group's PRE group


def test_unicast_entries_point_along_shortest_paths() -> None:
    st = desired_state(triangle(), [])
    assert entries_of(st["s1"], N.fwd_table) == {fwd("10.0.0.1", 1), fwd("10.0.0.2", 2), fwd("10.0.0.3", 3)}
    assert entries_of(st["s2"], N.fwd_table) == {fwd("10.0.0.1", 2), fwd("10.0.0.2", 1), fwd("10.0.0.3", 3)}
    assert entries_of(st["s3"], N.fwd_table) == {fwd("10.0.0.1", 2), fwd("10.0.0.2", 3), fwd("10.0.0.3", 1)}


def test_arp_proxy_answers_for_every_host() -> None:
    st = desired_state(triangle(), [])
    macs = {e.match[0][1]: dict(e.params)[N.arp_mac] for e in entries_of(st["s2"], N.arp_table)}
    assert macs == {ip("10.0.0.1"): 0x080000000001, ip("10.0.0.2"): 0x080000000002, ip("10.0.0.3"): 0x080000000003}


def session_groups(state) -> list[int]:
    """The state's PRE group ids but the port-set groups."""
    return sorted(g for g in state.groups if g < PORT_SET_BASE)


def test_flood_group_and_switch_config_on_every_switch() -> None:
    st = desired_state(triangle(), [])
    assert st["s1"].groups[N.flood_mgid] == MulticastGroup.of_ports(N.flood_mgid, [1, 2, 3])
    assert session_groups(st["s1"]) == [N.flood_mgid]
    assert st["s1"].defaults[N.config_table] == DefaultAction(
        N.config_table, N.config_action,
        tuple(sorted({N.config_flood_mgid: N.flood_mgid, N.config_timeout: 0, N.config_refresh: 0}.items())),
    )


def test_port_set_groups_replicate_to_exactly_each_set_of_ports() -> None:
    st = desired_state(triangle(), [])["s1"]
    sets = {g: m for g, m in st.groups.items() if g >= PORT_SET_BASE}
    # ports 1..3: the 7 non-empty sets, each group's id its port bitmap above the base
    assert len(sets) == 7
    for gid, group in sets.items():
        assert gid - PORT_SET_BASE == sum(1 << p for p, _rid in group.replicas)
    assert sets[PORT_SET_BASE + 0b1010] == MulticastGroup.of_ports(PORT_SET_BASE + 0b1010, [1, 3])
    assert st.defaults[N.port_sets_table] == DefaultAction(
        N.port_sets_table, N.port_sets_action,
        tuple(sorted({N.port_sets_base: PORT_SET_BASE, N.port_sets_ports: 0b1110}.items())))


def test_a_switch_with_many_ports_keeps_per_group_replication() -> None:
    assert port_set_groups(range(1, PORT_SET_MAX_PORTS + 1)) is not None
    assert port_set_groups(range(1, PORT_SET_MAX_PORTS + 2)) is None
    assert port_set_groups([1, PORT_SET_MAX_PORT + 1]) is None


def test_group_ports_follow_source_tree_and_upstream_points_to_source() -> None:
    s = SessionSpec(7, "h1", ("239.1.1.1",), protocol="mtcp")
    st = desired_state(triangle(), [s])
    assert st["s1"].groups[M1] == MulticastGroup.of_ports(M1, [2, 3])
    assert st["s2"].groups[M1] == MulticastGroup.of_ports(M1, [1])
    assert st["s3"].groups[M1] == MulticastGroup.of_ports(M1, [1])
    # the sender's own switch stops joins there (has_upstream = 0)
    assert entries_of(st["s1"], *G) == group_entries("239.1.1.1", 0, M1, 1, has_up=0)
    assert entries_of(st["s2"], *G) == group_entries("239.1.1.1", 0, M1, 2)
    assert entries_of(st["s3"], *G) == group_entries("239.1.1.1", 0, M1, 2)


def test_aggregation_session_gets_its_slot_and_data_group() -> None:
    s = SessionSpec(7, "h1", ("239.1.1.1",), protocol="mtcp")
    st = desired_state(triangle(), [s])
    for sw in ("s1", "s2", "s3"):
        assert entries_of(st[sw], N.session_table) == {agg_entry(7, 0, 0)}


def test_second_session_uses_next_slots_and_filter_mode() -> None:
    a = SessionSpec(1, "h1", ("239.1.1.1",), protocol="mtcp")
    b = SessionSpec(2, "h2", ("239.1.1.2",), protocol="tfmcc")
    c = SessionSpec(3, "h3", ("239.1.1.3",), protocol="vlmcc")
    st = desired_state(triangle(), [c, b, a])  # order of the input does not matter
    assert entries_of(st["s2"], N.session_table) == {
        agg_entry(1, 0, 0), filter_entry(2, 1, 0), filter_entry(3, 2, 100_000)
    }
    assert st["s2"].groups[M1 + 1] == MulticastGroup.of_ports(M1 + 1, [2, 3])
    assert entries_of(st["s2"], *G) >= group_entries("239.1.1.2", 1, M1 + 1, 1, has_up=0)


def test_assistance_off_session_configures_replication_only() -> None:
    s = SessionSpec(3, "h1", ("239.1.1.3",), protocol="mtcp", mode="off")
    st = desired_state(triangle(), [s])
    assert entries_of(st["s1"], N.session_table) == set()
    assert st["s1"].groups[M1].ports == [2, 3]
    assert len(entries_of(st["s1"], *G)) == 4


def test_off_sessions_take_no_session_slot() -> None:
    a = SessionSpec(1, "h1", ("239.1.1.1",), protocol="webrc")
    b = SessionSpec(2, "h1", ("239.1.1.2",), protocol="mtcp")
    p = plan(triangle(), [a, b])
    assert p.sidx == {2: 0}
    assert p.gidx == {"239.1.1.1": 0, "239.1.1.2": 1}


def test_receivers_prune_the_tree() -> None:
    s = SessionSpec(1, "h1", ("239.1.1.1",), receivers=("h2",), protocol="webrc")
    st = desired_state(triangle(), [s])
    assert st["s1"].groups[M1] == MulticastGroup.of_ports(M1, [2])
    assert st["s2"].groups[M1] == MulticastGroup.of_ports(M1, [1])
    assert M1 not in st["s3"].groups
    assert entries_of(st["s3"], *G) == set()


def chain():
    """h1 - s1 - s2 - s3 - h3, with h2 on s2: s1 is the root, s3 the deepest."""
    return from_tutorials_dict(
        {
            "hosts": {"h1": {"ip": "10.0.0.1"}, "h2": {"ip": "10.0.0.2"}, "h3": {"ip": "10.0.0.3"}},
            "switches": {"s1": {}, "s2": {}, "s3": {}},
            "links": [["h1", "s1-p1"], ["s1-p2", "s2-p1"], ["h2", "s2-p2"], ["s2-p3", "s3-p1"], ["h3", "s3-p2"]],
        }
    )


def test_below_names_the_switches_whose_joins_climb_through_each_switch() -> None:
    """A restarted switch lost the joins its subtree proxied: ``below`` names who must send them again."""
    one = plan(chain(), [SessionSpec(1, "h1", ("239.1.1.1",), protocol="tfmcc")])
    assert one.below == {"s1": frozenset({"s2", "s3"}), "s2": frozenset({"s3"})}
    # A session sent from the other end turns the tree around; a pruned branch adds nothing.
    two = plan(chain(), [SessionSpec(1, "h1", ("239.1.1.1",), receivers=("h2",), protocol="tfmcc"),
                         SessionSpec(2, "h3", ("239.1.1.2",), receivers=("h2",), protocol="tfmcc")])
    assert two.below == {"s1": frozenset({"s2"}), "s3": frozenset({"s2"})}


def test_rejoin_state_proxies_every_report_and_changes_nothing_else() -> None:
    from p4mcc.controller.diff import diff
    from p4mcc.controller.querier import rejoin_state

    want = desired_state(chain(), [SessionSpec(1, "h1", ("239.1.1.1",), protocol="tfmcc")],
                         DesiredOptions(membership_timeout_us=20_000_000, proxy_refresh_us=16_000_000))["s2"]
    eager = rejoin_state(want)
    cfg = dict(eager.defaults[N.config_table].params)
    assert cfg[N.config_refresh] == 1 and cfg[N.config_timeout] == 20_000_000
    ops = diff(eager, want)
    assert [(o.kind, o.entity.key) for o in ops] == [("modify", N.config_table)]
    assert dict(want.defaults[N.config_table].params)[N.config_refresh] == 16_000_000  # the input is untouched


def test_equal_cost_paths_break_ties_by_switch_name() -> None:
    topo = from_tutorials_dict(
        {
            "hosts": {"h1": {}, "h4": {}},
            "switches": {"s1": {}, "s2": {}, "s3": {}, "s4": {}},
            "links": [
                ["h1", "s1-p1"], ["s1-p2", "s3-p1"], ["s1-p3", "s2-p1"],
                ["s2-p2", "s4-p2"], ["s3-p2", "s4-p3"], ["h4", "s4-p1"],
            ],
        }
    )
    p = plan(topo, [SessionSpec(1, "h1", ("239.0.0.9",))])
    assert sorted(p.trees[1]) == ["s1", "s2", "s4"]
    assert p.switches["s1"].groups[M1].ports == [3]  # toward s2, not s3
    assert entries_of(p.switches["s4"], *G) == group_entries("239.0.0.9", 0, M1, 2)
    # unicast back to h1 follows the same branch
    assert fwd("10.0.0.1", 2) in entries_of(p.switches["s4"], N.fwd_table)


def test_meters_on_host_ports_and_digest_on_every_switch() -> None:
    st = desired_state(triangle(), [], DesiredOptions(feedback_pps=100, feedback_burst=10))
    assert set(st["s1"].meters.values()) == {MeterConfig(N.feedback_meter, 1, 100, 10, 100, 10)}
    assert st["s2"].digests == {N.membership_digest: DigestConfig(N.membership_digest, 0, 1, 0)}
    assert desired_state(triangle(), [], DesiredOptions(feedback_pps=None))["s1"].meters == {}


def test_multi_group_session_gets_one_pre_group_per_group() -> None:
    s = SessionSpec(1, "h1", ("239.1.1.1", "239.1.1.2", "239.1.1.3"), protocol="webrc")
    p = plan(triangle(), [s])
    assert p.mgids == {"239.1.1.1": M1, "239.1.1.2": M1 + 1, "239.1.1.3": M1 + 2}
    assert session_groups(p.switches["s1"]) == [N.flood_mgid, M1, M1 + 1, M1 + 2]


def test_mgids_are_stable_when_a_later_session_is_added() -> None:
    a = SessionSpec(1, "h1", ("239.1.1.1",))
    b = SessionSpec(5, "h2", ("239.1.1.5",))
    assert allocate_mgids([a])["239.1.1.1"] == allocate_mgids([a, b])["239.1.1.1"] == M1


def test_same_input_same_output() -> None:
    sessions = [SessionSpec(i, f"h{i}", (f"239.1.1.{i}",), protocol="mtcp") for i in (1, 2, 3)]
    assert desired_state(triangle(), sessions) == desired_state(triangle(), list(reversed(sessions)))


def _star(n_hosts: int, first_port: int = 1):
    hosts = {f"h{i}": {} for i in range(1, n_hosts + 1)}
    return from_tutorials_dict(
        {"hosts": hosts, "switches": {"s1": {}},
         "links": [[h, f"s1-p{i}"] for i, h in enumerate(hosts, first_port)]}
    )


def test_aggregation_beyond_k_ports_is_a_warning_naming_switch_and_ports() -> None:
    topo = _star(N.agg_k + 2, first_port=0)
    p = plan(topo, [SessionSpec(4, "h1", ("239.1.1.1",), protocol="mtcp")])
    assert p.warnings == [
        f"switch s1, session 4: feedback from ports {[N.agg_k, N.agg_k + 1]} passes unfolded "
        f"(the program folds ports 0..{N.agg_k - 1})"
    ]


def test_member_ports_beyond_the_bitmap_are_refused() -> None:
    topo = _star(3, first_port=N.member_ports - 1)
    with pytest.raises(DesiredStateError, match=rf"switch s1, session 4: ports \[{N.member_ports}, {N.member_ports + 1}\]"):
        desired_state(topo, [SessionSpec(4, "h1", ("239.1.1.1",))])


@pytest.mark.parametrize(
    "sessions,message",
    [
        ([SessionSpec(1, "h9", ("239.1.1.1",))], "session 1: unknown source host 'h9'"),
        ([SessionSpec(1, "h1", ("239.1.1.1",), receivers=("h7",))], "session 1: unknown receiver host 'h7'"),
        ([SessionSpec(1, "h1", ("10.1.1.1",))], "session 1: 10.1.1.1 is not a multicast address"),
        ([SessionSpec(1, "h1", ("239.1.1.300",))], "not an IPv4 address"),
        ([SessionSpec(1, "h1", ("239.1.1.1",), mode="fold")], "unknown mode 'fold'"),
        ([SessionSpec(1, "h1", ("239.1.1.1",)), SessionSpec(1, "h2", ("239.1.1.2",))], "session ids used twice: [1]"),
        ([SessionSpec(1, "h1", ("239.1.1.1",)), SessionSpec(2, "h2", ("239.1.1.1",))], "group 239.1.1.1 is already used"),
        ([SessionSpec(0, "h1", ("239.1.1.1",))], "session 0: session id must be"),
    ],
)
def test_bad_sessions_are_rejected_with_a_named_cause(sessions, message: str) -> None:
    with pytest.raises(DesiredStateError, match=re.escape(message)):
        desired_state(triangle(), sessions)


def test_names_come_from_the_program_names_object() -> None:
    renamed = replace(N, fwd_table="Ingress.l3", session_table="Ingress.sess")
    st = desired_state(triangle(), [SessionSpec(1, "h1", ("239.1.1.1",), protocol="mtcp")],
                       DesiredOptions(names=renamed))
    tables = {e.table for e in st["s1"].entries.values()}
    assert "Ingress.l3" in tables and "Ingress.sess" in tables and N.fwd_table not in tables


def test_webrc_session_from_a_scenario_gets_every_channel_group() -> None:
    from types import SimpleNamespace

    from p4mcc.controller.desired import session_from_scenario
    from p4mcc.hosts.webrc import WebrcParams

    scn = SimpleNamespace(session_id=4, sender="h1", receivers=("h2",), protocol="webrc", group="239.1.1.10",
                          params={}, assistance=True)
    spec = session_from_scenario(scn)
    waves = WebrcParams().t
    assert len(spec.groups) == waves + 1
    assert spec.groups[0] == "239.1.1.10"  # the base channel is the session's group
    assert sorted(int(ipaddress.IPv4Address(g)) for g in spec.groups) == list(
        range(ip("239.1.1.10"), ip("239.1.1.10") + waves + 1))
    p = plan(triangle(), [spec])
    assert len(session_groups(p.switches["s1"])) == waves + 2  # plus the flood group
