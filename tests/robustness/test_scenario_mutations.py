"""Any scenario file a user can write is parsed or refused with named problems, never a traceback.

Hypothesis takes the shipped scenarios (the demo and fault scenarios, which
use every section of the format) and replaces or removes one to three of
their fields, at any depth, with values of the wrong kind: lists and
mappings where names go, NaN and infinity, negative numbers, empty strings.
``scenario_from_dict`` must return a scenario or raise ``ScenarioError``;
any other exception is a crash a user would meet as a traceback.  (Such
mutations found eight: a list as a host name, a mapping as a session's
sender or a fault's session, infinity as a port number.)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4mcc.scenario.model import ScenarioError, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [ROOT / "topologies/scenarios/demo.yaml",
             *sorted((ROOT / "topologies/scenarios/faults").glob("*.yaml"))]
ODD_VALUES = [None, 0, -1, 2.5, float("nan"), float("inf"), -0.0, 1e300, True, "", "x", "r*", "s1-p1",
              "10Mbps", [], [1], ["h1"], {}, {"a": 1}, {"type": "link_down"}]


def _places(doc: Any, at: tuple = ()) -> Iterator[tuple]:
    """Every key and list index of ``doc``, as a path from the top."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield (*at, key)
        yield from _places(value, (*at, key))


def _docs() -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in SCENARIOS]


DOCS = _docs()


@st.composite
def mutated(draw: st.DrawFn) -> dict:
    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(1, 3))):
        places = list(_places(doc))
        if not places:
            break
        place = draw(st.sampled_from(places))
        parent = doc
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            parent.pop(place[-1])
        else:
            parent[place[-1]] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
    return doc


def test_the_shipped_scenarios_parse() -> None:
    assert len(DOCS) >= 10
    for doc in DOCS:
        scenario_from_dict(copy.deepcopy(doc))


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_a_mutated_scenario_is_parsed_or_refused_by_name(doc: dict) -> None:
    try:
        scenario_from_dict(doc)
    except ScenarioError as e:
        assert e.problems and all(isinstance(p, str) and p for p in e.problems)
