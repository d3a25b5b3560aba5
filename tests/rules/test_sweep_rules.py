"""Sweep axes vary a session's profile and rules; the table records both."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from p4mcc.sweep.execute import run_sweep
from p4mcc.sweep.spec import SweepError, sweep_from_dict, validate
from test_scenario_rules import BASE


def sweep(axes: dict[str, Any]) -> dict[str, Any]:
    base = copy.deepcopy(BASE)
    base["duration"] = 2.0
    return {"name": "rules", "base": base, "switch": "model", "axes": axes,
            "metrics": {"kinds": ["session", "receiver"], "names": ["throughput_bps"], "windows": ["run"]}}


def test_profile_and_rules_axes_build_one_point_each(toy) -> None:
    sw = sweep_from_dict(sweep({"sessions[0].profile": ["paper", "default"],
                                "sessions[0].rules": [{}, {"eager_join": "on"}]}))
    points = validate(sw)
    got = [(p.scenario["sessions"][0]["profile"], p.scenario["sessions"][0]["rules"]) for p in points]
    assert got == [("paper", {}), ("paper", {"eager_join": "on"}), ("default", {}),
                   ("default", {"eager_join": "on"})]
    assert [p.values["sessions[0].rules"] for p in points[:2]] == ["{}", '{"eager_join":"on"}']


@pytest.mark.parametrize(("axes", "expected"), [
    ({"sessions[0].profile": ["paper", "fastest"]},
     "axes: sessions[0].profile: expected one of paper, default, stamped, got 'fastest' (value 'fastest')"),
    ({"sessions[0].rules": [{"double": "on"}, {"foo": "off"}]},
     "axes: sessions[0].rules.foo: unknown rule of toyrules (known: double, quiet, eager_join) "
     "(value '{\"foo\":\"off\"}')"),
    ({"sessions[0].rules.quiet": ["on", "sometimes"]},
     "axes: sessions[0].rules.quiet: expected on or off, got 'sometimes' (value 'sometimes')"),
])
def test_a_bad_axis_value_is_named_by_its_axis_and_value(toy, axes, expected) -> None:
    with pytest.raises(SweepError) as e:
        validate(sweep_from_dict(sweep(axes)))
    assert e.value.problems == [expected]


def test_results_table_has_profile_and_rules_columns(toy, tmp_path: Path) -> None:
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    sw = sweep_from_dict(sweep({"sessions[0].profile": ["paper", "stamped"]}))
    out = run_sweep(sw, tmp_path, scheduler="serial", progress=False)
    assert not out.failed
    table = pq.read_table(tmp_path / "results.parquet")
    assert table.schema.field("profile").type == pa.string()
    assert table.schema.field("rules").type == pa.list_(pa.string())
    rows = [(r["kind"], r["profile"], r["rules"]) for r in table.to_pylist()]
    assert ("session", "paper", []) in rows and ("session", "stamped", ["double", "quiet"]) in rows
    assert ("receiver", "stamped", ["double", "quiet"]) in rows
    # The list column is queried as a list: stamped's session ran "quiet", paper's did not.
    con = duckdb.connect(str(tmp_path / "results.duckdb"), read_only=True)
    try:
        got = con.execute("SELECT profile FROM results WHERE kind = 'session' "
                          "AND list_contains(rules, 'quiet')").fetchall()
    finally:
        con.close()
    assert got == [("stamped",)]
