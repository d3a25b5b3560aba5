"""The congestion stamp's desired state: stamped sessions on their tree's
switches, port rates from the scenario's links, nothing without a stamped session."""

from __future__ import annotations

import pytest

from p4mcc.controller import share
from p4mcc.controller.desired import SessionSpec, plan, session_from_scenario
from p4mcc.controller.program import MCC as N
from p4mcc.controller.state import TableEntry
from p4mcc.controller.topology import from_scenario_topology
from p4mcc.scenario.model import scenario_from_dict


def scenario(assistance: object):
    return scenario_from_dict({
        "duration": 5,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}},
            "switches": {"s1": {}, "s2": {}, "s3": {}},
            "links": [{"a": "h1", "b": "s1-p1", "rate": "100Mbps"},
                      {"a": "s1-p2", "b": "s2-p1", "rate": "10Mbps"},
                      {"a": "h2", "b": "s2-p2", "rate": "2Mbps"},
                      {"a": "s2-p3", "b": "s3-p2", "rate": "1Mbps"},
                      {"a": "h3", "b": "s3-p1", "rate": "1Mbps"}],
        },
        "sessions": [{"name": "d", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2"],
                      "group": "239.1.1.1", "port": 5000, "assistance": assistance}],
    }, known_protocols=None)


def stamp_entries(state) -> set[TableEntry]:
    return {e for e in state.entries.values() if e.table in (N.stamp_table, N.port_rate_table)}


def share_entries(state) -> set[TableEntry]:
    return {e for e in state.entries.values() if e.table in (N.share_heavy_table, N.share_spread_table)}


def rate(port: int, units: int, shift: int = 2) -> TableEntry:
    return TableEntry.make(N.port_rate_table, {N.port_rate_key: port}, N.port_rate_action,
                           {N.port_rate_units: units, N.port_rate_epoch: shift})


def test_a_stamped_session_is_stamped_on_its_tree_with_every_port_rate() -> None:
    sc = scenario("stamp")
    assert sc.sessions[0].assistance == "stamp"
    spec = session_from_scenario(sc.sessions[0])
    assert spec.stamp and spec.effective_mode == "filter"  # the protocol's own assistance stays
    p = plan(from_scenario_topology(sc.topology), [spec])
    stamp = TableEntry.make(N.stamp_table, {N.stamp_key: 1}, N.stamp_action, {})
    assert stamp_entries(p.switches["s1"]) == {stamp, rate(1, 2500), rate(2, 250)}
    assert stamp_entries(p.switches["s2"]) == {stamp, rate(1, 250), rate(2, 50), rate(3, 25)}
    assert stamp_entries(p.switches["s3"]) == set()  # not on the session's tree
    # the share's log tables: one entry per heavy-slot count and per slots-in-use count
    assert len(share_entries(p.switches["s1"])) == 2 * (share.SLOTS + 1)
    assert share_entries(p.switches["s3"]) == set()


def test_the_share_epoch_spans_the_longest_round_trip_through_the_switch() -> None:
    sc = scenario_from_dict({
        "duration": 5,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}},
            "switches": {"s1": {}},
            "links": [{"a": "h1", "b": "s1-p1", "rate": "10Mbps", "delay": "5ms"},
                      {"a": "h2", "b": "s1-p2", "rate": "10Mbps", "delay": "95ms"},
                      {"a": "h3", "b": "s1-p3", "rate": "10Mbps", "delay": "1ms"}],
        },
        "sessions": [{"name": "d", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2", "h3"],
                      "group": "239.1.1.1", "port": 5000, "assistance": "stamp"}],
    }, known_protocols=None)
    topo = from_scenario_topology(sc.topology)
    assert share.longest_rtt_s(topo, "s1") == pytest.approx(0.2)  # h2 to h1 and back
    p = plan(topo, [session_from_scenario(sc.sessions[0])])
    # 200 ms needs 25.6 ms << 3 = 204.8 ms
    assert rate(2, 250, 3) in stamp_entries(p.switches["s1"])
    assert share.epoch_shift(0.0) == share.MIN_SHIFT and share.epoch_shift(60.0) == share.MAX_SHIFT


def test_without_a_stamped_session_neither_table_has_entries() -> None:
    for assistance in (True, False):
        sc = scenario(assistance)
        p = plan(from_scenario_topology(sc.topology), [session_from_scenario(sc.sessions[0])])
        assert all(stamp_entries(st) == set() for st in p.switches.values())


def test_a_link_of_unknown_rate_gets_no_port_rate() -> None:
    from p4mcc.controller.topology import from_tutorials_dict

    topo = from_tutorials_dict({"hosts": {"h1": {"ip": "10.0.0.1"}, "h2": {"ip": "10.0.0.2"}},
                                "switches": {"s1": {}}, "links": [["h1", "s1-p1"], ["h2", "s1-p2"]]})
    p = plan(topo, [SessionSpec(1, "h1", ("239.1.1.1",), protocol="tfmcc", stamp=True)])
    assert {e.table for e in stamp_entries(p.switches["s1"])} == {N.stamp_table}


def test_a_bad_assistance_value_names_the_field_and_the_choices() -> None:
    import pytest

    from p4mcc.scenario.model import ScenarioError

    with pytest.raises(ScenarioError, match=r"sessions\[0\]\.assistance: expected true/false \(or on/off\) or stamp"):
        scenario("stamped")
