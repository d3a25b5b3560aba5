"""Every reader of a user's file bounds what it accepts and answers in one line.

Deep nesting, huge numbers and floods of unknown keys are refused with an
error naming the field, before any code recurses, runs without end or
prints without end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from p4mcc.hosts import registry
from p4mcc.hosts.addresses import group_problem
from p4mcc.hosts.input_files import MAX_NESTING, nesting_depth, parse_json
from p4mcc.scenario.model import MAX_DURATION_S, MAX_PROBLEMS, ScenarioError, load_scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "topologies" / "scenarios" / "demo.yaml"


def demo() -> dict:
    return yaml.safe_load(DEMO.read_text())


def problems_of(doc: dict) -> list[str]:
    with pytest.raises(ScenarioError) as ei:
        scenario_from_dict(doc, base=DEMO.parent)
    return ei.value.problems


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_scenario_nested_100000_deep_is_one_line(tmp_path, suffix) -> None:
    f = tmp_path / f"deep{suffix}"
    f.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ScenarioError) as ei:
        load_scenario(f)
    assert ei.value.problems == [f"{f}: nested deeper than {MAX_NESTING} levels"]


def test_a_duration_of_1e300_names_the_field() -> None:
    doc = demo()
    doc["duration"] = 1e300
    assert problems_of(doc) == [f"duration: must be at most {MAX_DURATION_S:g} s (one day)"]


def test_300000_unknown_keys_give_fifty_lines_and_a_count() -> None:
    doc = demo()
    doc.update({f"k{i}": 1 for i in range(300_000)})
    problems = problems_of(doc)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"... and {300_000 - MAX_PROBLEMS} more problems"


def test_a_link_rate_above_100_gbps_names_the_link() -> None:
    doc = demo()
    doc["topology"]["links"][0]["rate"] = "1e15"
    assert problems_of(doc) == ["topology.links[0].rate: must be at most 100 Gb/s"]


@dataclass
class _RateParams:
    initial_rate_bps: float = 1e6
    max_rate_bps: float = float("inf")


def test_a_rate_parameter_of_1e18_is_refused_by_name() -> None:
    with pytest.raises(registry.ParamError, match=r"_RateParams.initial_rate_bps: 1e\+18 b/s is above"):
        registry.params_from_dict(_RateParams, {"initial_rate_bps": 1e18})
    # an unlimited ceiling stays unlimited; a finite one above the bound does not
    assert registry.params_from_dict(_RateParams, {"max_rate_bps": "inf"}).max_rate_bps == float("inf")
    with pytest.raises(registry.ParamError, match="max_rate_bps"):
        registry.params_from_dict(_RateParams, {"max_rate_bps": 1e12})


def test_a_deep_parameter_file_is_one_line(tmp_path) -> None:
    f = tmp_path / "p.json"
    f.write_text('{"a": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(registry.ParamError, match="nested deeper than"):
        registry.load_params_file(f)


@pytest.mark.parametrize(("group", "ok"), [("239.1.1.1", True), ("224.0.0.1", False), ("224.0.1.1", True),
                                           ("10.0.0.1", False), ("nope", False)])
def test_group_rule_has_one_owner(group, ok) -> None:
    assert (group_problem(group) is None) == ok


def test_host_recv_refuses_a_link_local_group(capsys) -> None:
    from p4mcc.cli.main import main

    rc = main(["host", "recv", "--proto", "tfmcc", "--group", "224.0.0.1", "--sender", "10.0.0.1",
               "--local", "10.0.0.2"])
    err = capsys.readouterr().err
    assert rc != 0 and "224.0.0.1 is link-local" in err and "Traceback" not in err


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                     max_leaves=30)


@settings(max_examples=60)
@given(data=_json, wrap=st.integers(min_value=0, max_value=3 * MAX_NESTING))
def test_parse_json_accepts_shallow_and_refuses_deep_documents(data, wrap) -> None:
    doc = data
    for _ in range(wrap):
        doc = [doc]
    text = json.dumps(doc)
    if nesting_depth(doc, MAX_NESTING) > MAX_NESTING:
        with pytest.raises(ValueError, match="nested deeper"):
            parse_json(text)
    else:
        assert parse_json(text) == doc


@settings(max_examples=25)
@given(data=_json, depth=st.integers(min_value=0, max_value=2000))
def test_every_scenario_reader_answers_a_random_document_with_scenario_error(tmp_path_factory, data, depth) -> None:
    # Written as text: json.dumps itself recurses, and 2000 levels are past its limit.
    nested = '{"x": ' * depth + "{}" + "}" * depth
    text = json.dumps({"duration": 10, "extra": data})[:-1] + f', "x": {nested}}}'
    d = tmp_path_factory.mktemp("doc")
    for suffix in (".json", ".yaml"):
        f = d / f"s{suffix}"
        f.write_text(text)
        with pytest.raises(ScenarioError):
            load_scenario(f)
