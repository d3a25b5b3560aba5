"""The faults/policing/membership part of the scenario format: parsing and field-path errors."""

from __future__ import annotations

import pytest

from p4mcc.scenario.faults import Fault, recovery_times
from p4mcc.reporting.results import Sample
from p4mcc.scenario.model import ScenarioError, scenario_from_dict

BASE = {
    "duration": 20,
    "topology": {"hosts": ["h1", "r1", "r2"], "switches": ["s1", "s2"],
                 "links": [["s1", "s2"], ["h1", "s1"], ["r1", "s2"], ["r2", "s2"]]},
    "sessions": [{"name": "a", "protocol": "webrc", "sender": "h1", "receivers": ["r1", "r2"]}],
}


def scen(**extra):
    return scenario_from_dict({**BASE, **extra})


def problems(**extra) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        scen(**extra)
    return e.value.problems


def test_every_fault_type_parses_with_its_target():
    s = scen(faults=[
        {"type": "receiver_crash", "target": "r1", "at": 1, "for": 2},
        {"type": "receiver_leave", "target": "r1", "at": 1},
        {"type": "agent_kill", "target": "h1", "at": 1, "for": "500ms"},
        {"type": "switch_crash", "target": "s2", "at": 3},
        {"type": "controller_restart", "at": 3, "takeover": True},
        {"type": "link_down", "target": ["s1", "s2"], "at": 2, "every": 4, "for": 1, "count": 3},
        {"type": "link_change", "target": "r2", "at": 2, "rate": "1Mbps", "delay": "40ms", "loss": "1%"},
        {"type": "feedback_flood", "target": "r2", "at": 1, "rate": 5000},
        {"type": "false_report", "target": "r2", "at": 1, "claim": "8kbps"},
        {"type": "spoof_clr", "target": "r2", "at": 1},
        {"type": "malformed", "target": "s2-p2", "at": 1, "rate": 100, "size": 80},
    ])
    kinds = [f.kind for f in s.faults]
    assert kinds == ["receiver_crash", "receiver_leave", "agent_kill", "switch_crash", "controller_restart",
                     "link_down", "link_change", "feedback_flood", "false_report", "spoof_clr", "malformed"]
    assert s.faults[2].duration == 0.5
    assert s.faults[5].target == ("s1", "s2") and s.faults[5].times(20) == [2, 6, 10]
    assert s.faults[6].target == ("r2", "s2")
    assert s.faults[6].params == {"rate": 1e6, "delay": 0.04, "loss": 0.01}
    assert s.faults[7].session == "a"  # the host's only session
    assert s.faults[10].target == ("s2", 2)


def test_bad_faults_are_reported_with_their_field_paths():
    ps = problems(faults=[
        {"type": "meteor", "at": 1},
        {"type": "switch_crash", "target": "s9", "at": 1},
        {"type": "link_down", "target": ["r1", "r2"], "at": 1},
        {"type": "link_down", "target": ["s1", "s2"], "at": 1, "until": 5},
        {"type": "link_down", "target": ["s1", "s2"], "at": 1, "every": 2, "for": 3},
        {"type": "receiver_crash", "target": "h1", "at": 1},
        {"type": "switch_crash", "target": "s1", "at": 99},
        {"type": "controller_restart", "at": 1, "target": "s1"},
        {"type": "feedback_flood", "target": "r1", "at": 1, "rate": -5},
        {"type": "link_change", "target": "r1", "at": 1},
        {"type": "switch_crash", "target": "s1"},
    ])
    text = "\n".join(ps)
    for want in ("faults[0].type: unknown fault type 'meteor'", "faults[1].target: unknown switch 's9'",
                 "faults[2].target: not a link", "faults[3].every: required with until/count",
                 "faults[4].for: must be shorter than every", "faults[5].target: 'h1' is not a receiver",
                 "faults[6].at: after the run's end", "faults[7].target: controller_restart takes no target",
                 "faults[8].rate: expected packets/s", "faults[9]: link_change needs",
                 "faults[10].at: required"):
        assert want in text, (want, text)


def test_policing_and_membership_fields():
    s = scen(policing={"feedback_pps": 300, "burst": 30}, membership={"timeout": "10s", "query_interval": 4})
    assert (s.policing.feedback_pps, s.policing.burst) == (300, 30)
    assert (s.membership.timeout, s.membership.query_interval) == (10.0, 4.0)
    assert scen(policing="off").policing.feedback_pps is None
    ps = problems(policing={"feedback_pps": "lots"}, membership={"timeout": 5, "query_interval": 6, "x": 1})
    assert any(p.startswith("policing.feedback_pps:") for p in ps)
    assert any(p.startswith("membership.query_interval: must be shorter") for p in ps)
    assert any(p.startswith("membership.x: unknown field") for p in ps)


def _samples(values: list[float], node: str = "r1") -> list[Sample]:
    return [Sample(0.5 * (i + 1), "session", "a", node, "throughput_bps", v) for i, v in enumerate(values)]


def test_recovery_time_is_when_throughput_holds_80_percent_of_its_baseline():
    s = scen()
    f = Fault("link_down", 5.0, ("s1", "s2"))
    # 1 Mb/s until 5 s, nothing for 2 s, 0.7 Mb/s (below 80 %) for 1 s, then 0.9 Mb/s
    vals = [1e6] * 10 + [0.0] * 4 + [0.7e6] * 2 + [0.9e6] * 8
    both = _samples(vals, "r1") + _samples(vals, "r2")
    assert recovery_times(both, s, f, 5.0) == {"a": pytest.approx(3.5)}
    lasting = Fault("link_down", 5.0, ("s1", "s2"), duration=2.0)
    assert recovery_times(both, s, lasting, 5.0) == {"a": pytest.approx(1.5)}  # from its end
    never = _samples([1e6] * 10 + [0.0] * 14, "r1") + _samples([1e6] * 10 + [0.0] * 14, "r2")
    assert recovery_times(never, s, f, 5.0) == {"a": None}


def test_both_engines_age_memberships_with_a_querier_by_default_and_scenarios_override_it():
    from p4mcc.controller.querier import max_response_ds
    from p4mcc.scenario.control import scenario_options

    # one function for both engines (p4mcc run and p4mcc sim call it)
    opts, query = scenario_options(scen())
    assert opts.membership_timeout_us == 20_000_000 and query == pytest.approx(20 * 125 / 385)
    assert opts.proxy_refresh_us == int(20 * 100 / 385 * 1e6)
    assert opts.feedback_by_host and opts.feedback_pps is None  # policing: auto, per host
    # RFC 2236 sec. 8.4: robustness (3) x query interval + response interval fits the timeout
    assert 3 * query + max_response_ds(query) / 10 <= 20.0
    assert max_response_ds(125.0) == 100  # IGMPv2's own defaults: 10 s for 125 s
    opts, query = scenario_options(scen(membership={"timeout": 0}))
    assert opts.membership_timeout_us == 0 and query is None
    opts, _ = scenario_options(scen(policing={"feedback_pps": 300}))
    assert (opts.feedback_pps, opts.feedback_burst, opts.feedback_by_host) == (300, 30, None)


def test_mininet_refuses_a_fault_it_cannot_inject_before_building_anything():
    from p4mcc.emulation.faults import check_supported

    check_supported(scen(faults=[{"type": "switch_crash", "target": "s1", "at": 1}]))
    check_supported(scen(faults=[{"type": "link_change", "target": "r1", "at": 1, "rate": "1Mbps"}]), "bmv2")
    # on a link tc shapes, netem adds to the shaping: a longer delay and more loss go ...
    check_supported(scen(faults=[{"type": "link_change", "target": "r1", "at": 1, "delay": "9ms", "loss": "1%"}]),
                    "bmv2")
    # ... a queue, a shorter delay or less loss cannot
    with pytest.raises(ValueError, match=r"^faults\[0\]: link_change in Mininet: the queue belongs to the switch"):
        check_supported(scen(faults=[{"type": "link_change", "target": "r1", "at": 1, "queue": 5}]), "bmv2")
    slow = {**BASE, "topology": {**BASE["topology"], "link_defaults": {"delay": "20ms", "loss": "2%"}}}
    for change, why in (({"delay": "9ms"}, "can only lengthen the delay .the link has 20 ms"),
                        ({"loss": "1%"}, "can only add loss .the link has 0.02")):
        faulty = scenario_from_dict({**slow, "faults": [{"type": "link_change", "target": "r1", "at": 1, **change}]})
        with pytest.raises(ValueError, match=rf"^faults\[0\]: link_change in Mininet: netem {why}"):
            check_supported(faulty, "bmv2")
        check_supported(faulty)  # the built-in switch changes its own emulation to any value
    check_supported(scen(faults=[{"type": "link_change", "target": "r1", "at": 1, "queue": 5}]))
    with pytest.raises(ValueError, match=r"faults\[0\].rate: Mininet can only lower"):
        check_supported(scen(faults=[{"type": "link_change", "target": "r1", "at": 1, "rate": "5Gbps"}]), "bmv2")
