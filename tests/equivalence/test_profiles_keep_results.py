"""Each profile gives the recorded results: restructuring a protocol changes no figure.

Each case is a fixed-seed simulator run (``cases.py``); every field of its
summary that the recording has (all but the wall time) must equal the
recorded one.  Fields added since the recording (the session's profile and
rule list, say) are not compared: they describe the run, they are not its
results.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cases import GOLDEN, cases, run_case

CASES = cases()


def recorded_fields(got: Any, expected: Any) -> Any:
    """``got`` cut down to the keys ``expected`` has, at every depth."""
    if isinstance(expected, dict) and isinstance(got, dict):
        return {k: recorded_fields(got[k], v) if k in got else "<missing>" for k, v in expected.items()}
    if isinstance(expected, list) and isinstance(got, list) and len(got) == len(expected):
        return [recorded_fields(g, e) for g, e in zip(got, expected)]
    return got


def test_fields_added_later_are_not_compared_but_changed_ones_are() -> None:
    expected = {"a": 1, "s": [{"x": 2}]}
    assert recorded_fields({"a": 1, "s": [{"x": 2, "rules": []}], "new": 3}, expected) == expected
    assert recorded_fields({"a": 1, "s": [{"x": 3}]}, expected) != expected
    assert recorded_fields({"s": [{"x": 2}]}, expected) != expected


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_profile_reproduces_the_recorded_summary(name: str) -> None:
    expected = json.loads((GOLDEN / f"{name}.json").read_text())
    got = json.loads(json.dumps(run_case(CASES[name]), sort_keys=True))
    assert recorded_fields(got, expected) == expected
