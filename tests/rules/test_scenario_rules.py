"""A session's ``profile`` and ``rules`` are read, checked against the
protocol's rule book by field, and reach the agents the simulator builds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from p4mcc.hosts import registry
from p4mcc.netsim.run import SimError, registry_factory, run_scenario
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import ScenarioError, scenario_from_dict

BASE: dict[str, Any] = {
    "name": "toy", "duration": 4.0, "seed": 3,
    "topology": {"hosts": {"snd": {"ip": "10.9.0.1/24"}, "r1": {"ip": "10.9.1.1/24"},
                           "r2": {"ip": "10.9.1.2/24"}},
                 "switches": {"s1": {}},
                 "links": [["snd", "s1"], ["r1", "s1"], ["r2", "s1"]]},
    "sessions": [{"name": "t", "protocol": "toyrules", "sender": "snd", "receivers": ["r1", "r2"],
                  "group": "239.9.9.1", "port": 5900}],
}


def doc(**session: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    d["sessions"][0].update(session)
    return d


def problems(d: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(d)
    return e.value.problems


def test_a_session_without_profile_runs_default(toy) -> None:
    s = scenario_from_dict(doc()).sessions[0]
    assert (s.profile, s.rules) == ("default", {})
    assert s.effective_rules() == ("double",)


def test_profile_and_switches_are_read_as_written(toy) -> None:
    s = scenario_from_dict(doc(profile="paper", rules={"eager_join": "on", "double": False})).sessions[0]
    assert (s.profile, s.rules) == ("paper", {"eager_join": True, "double": False})
    assert s.effective_rules() == ("eager_join",)
    s = scenario_from_dict(doc(profile="stamped", rules={"quiet": "off"})).sessions[0]
    assert s.effective_rules() == ("double",)


@pytest.mark.parametrize(("session", "expected"), [
    ({"rules": {"foo": "on"}},
     "sessions[0].rules.foo: unknown rule of toyrules (known: double, quiet, eager_join)"),
    ({"rules": {"double": "maybe"}}, "sessions[0].rules.double: expected on or off, got 'maybe'"),
    ({"rules": ["double"]}, "sessions[0].rules: expected a mapping of rule name -> on/off, got list"),
    ({"profile": "fast"}, "sessions[0].profile: expected one of paper, default, stamped, got 'fast'"),
    ({"profile": "paper", "rules": {"quiet": "on"}},
     "sessions[0].rules: toyrules profile 'paper' with {'quiet': True}: rule 'quiet' needs 'double'"),
])
def test_bad_profiles_and_rules_are_named_by_field(toy, session, expected) -> None:
    got = problems(doc(**session))
    assert any(p.startswith(expected) for p in got), got


def test_a_profile_the_protocol_does_not_define_is_named(plain) -> None:
    assert problems(doc(protocol="toyplain", profile="stamped")) == [
        "sessions[0].profile: toyplain has no profile 'stamped' (known: paper, default)"]


def test_a_protocol_without_a_rule_book_refuses_any_rule_name(plain) -> None:
    assert problems(doc(protocol="toyplain", rules={"double": "on"})) == [
        "sessions[0].rules.double: unknown rule of toyplain (known: none)"]


def test_the_simulators_agents_get_the_effective_rule_list(toy) -> None:
    """The rule list reaches each agent's configuration, and the class that
    runs is the core composed with the rules of its role."""
    sc = scenario_from_dict(doc(profile="paper", rules={"double": "on", "eager_join": "on"}))
    run = run_scenario(sc, switch=model_choice())
    snd, r1 = run.agents["t/snd"], run.agents["t/r1"]
    assert snd.cfg.rules == r1.cfg.rules == ("double", "eager_join")
    assert snd.interval() == pytest.approx(1 / 40)  # double: 40 datagrams/s instead of 20
    assert getattr(r1, "eager", False) and not hasattr(snd, "eager")
    # 40 datagrams/s for 4 s reach each receiver (the paper core alone sends 20).
    assert 150 <= r1.received <= 161


def test_paper_runs_the_bare_cores(toy) -> None:
    import toyproto

    run = run_scenario(scenario_from_dict(doc(profile="paper")), switch=model_choice())
    assert type(run.agents["t/snd"]) is toyproto.ToySender
    assert type(run.agents["t/r1"]) is toyproto.ToyReceiver
    assert 75 <= run.agents["t/r1"].received <= 81


def test_summary_records_profile_and_effective_rules(toy, tmp_path) -> None:
    import json

    sc = scenario_from_dict(doc(profile="stamped", rules={"eager_join": "on"}))
    run_scenario(sc, tmp_path, switch=model_choice())
    s = json.loads((tmp_path / "summary.json").read_text())["sessions"]["t"]
    assert s["profile"] == "stamped"
    assert s["rules"] == ["double", "quiet", "eager_join"]


def test_the_printed_table_names_the_profile_and_the_rules(toy) -> None:
    from rich.console import Console

    from p4mcc.reporting.results import summary_table

    sc = scenario_from_dict(doc(profile="paper", rules={"eager_join": "on"}))
    run = run_scenario(sc, switch=model_choice())
    con = Console(width=200, record=True)
    con.print(summary_table(run.summary))
    text = con.export_text()
    assert "t toyrules/assist paper" in text
    assert "rules: t (paper): eager_join" in text


def test_a_rule_switched_after_loading_is_refused_when_agents_are_built(toy) -> None:
    import dataclasses

    sc = scenario_from_dict(doc())
    bad = dataclasses.replace(sc.sessions[0], rules={"nope": True})
    with pytest.raises(SimError, match="unknown rule 'nope'"):
        registry_factory(bad, "sender", "snd", "10.9.0.1", "10.9.0.1", 1)


def test_fault_scenarios_swap_protocols_without_their_rule_switches(toy) -> None:
    """A fault scenario run with another protocol drops rule names of the
    first (they belong to its book); an ablation puts every session on its variant."""
    from p4mcc.scenario.faults import with_protocol, with_rules

    sc = scenario_from_dict(doc(profile="paper", rules={"eager_join": "on"}))
    same = with_protocol(sc, "toyrules").sessions[0]
    assert (same.profile, same.rules) == ("paper", {"eager_join": True})
    other = with_protocol(sc, "tfmcc").sessions[0]
    assert (other.profile, other.rules) == ("paper", {})
    varied = with_rules(sc, "default", {"double": False}).sessions[0]
    assert (varied.profile, varied.rules, varied.effective_rules()) == ("default", {"double": False}, ())
