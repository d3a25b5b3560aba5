"""Sweep files: field paths, axes, ranges, zipped groups, and errors that name the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4mcc.sweep.paths import PathError, parse_path, set_path
from p4mcc.sweep.spec import SweepError, sweep_from_dict, validate

BASE = {
    "name": "tiny",
    "duration": 2,
    "topology": {"generate": {"kind": "dumbbell", "receivers": 2, "tcp_pairs": 1, "rate": "2Mbps"}},
    "sessions": [{"protocol": "tfmcc", "sender": "snd1", "receivers": ["r*"]}],
    "tcp_flows": [{"src": "tsrc1", "dst": "tdst1"}],
}

LINKS = {
    "duration": 2,
    "topology": {"hosts": ["h1", "h2"], "switches": ["s1"],
                 "links": [["h1", "s1", 5, 10], {"a": "s1", "b": "h2", "rate": "10Mbps"}]},
    "sessions": [{"protocol": "tfmcc", "sender": "h1", "receivers": ["h2"]}],
}


def problems(raw: dict) -> list[str]:
    with pytest.raises(SweepError) as e:
        validate(sweep_from_dict(raw))
    return e.value.problems


def test_parse_path_reads_names_and_indexes() -> None:
    assert parse_path("topology.links[0].rate") == ["topology", "links", 0, "rate"]
    assert parse_path("sessions[1].params.min_rto") == ["sessions", 1, "params", "min_rto"]
    for bad in ("", "a..b", "a.", "[0]", "a b"):
        with pytest.raises(PathError):
            parse_path(bad)


def test_set_path_turns_a_list_link_into_a_mapping_and_keeps_its_fields() -> None:
    import copy

    doc = copy.deepcopy(LINKS)
    set_path(doc, "topology.links[0].queue", 7)
    assert doc["topology"]["links"][0] == {"a": "h1", "b": "s1", "delay": "5ms", "rate": "10Mbps", "queue": 7}
    with pytest.raises(PathError, match=r"links\[5\]: no element 5 \(the base has 2\)"):
        set_path(doc, "topology.links[5].rate", 1)


def test_points_are_the_product_in_file_order_with_zipped_groups_as_one_dimension() -> None:
    sw = sweep_from_dict({
        "base": BASE,
        "axes": {
            "seed": [1, 2],
            "cell": {"zip": {"topology.generate.rate": ["1Mbps", "4Mbps"],
                             "topology.generate.receivers": [2, 3]}},
            "topology.generate.delay": {"from": 10, "to": 30, "step": 10, "unit": "ms"},
        },
    })
    pts = validate(sw)
    assert len(pts) == 2 * 2 * 3
    assert [p.values["topology.generate.delay"] for p in pts[:3]] == [10, 20, 30]
    assert pts[0].scenario["topology"]["generate"]["delay"] == "10ms"
    assert [(p.values["seed"], p.values["topology.generate.rate"], p.values["topology.generate.receivers"])
            for p in pts[::3]] == [(1, "1Mbps", 2), (1, "4Mbps", 3), (2, "1Mbps", 2), (2, "4Mbps", 3)]
    assert len({p.id for p in pts}) == len(pts)
    assert sw.axis_paths == ["seed", "topology.generate.rate", "topology.generate.receivers",
                             "topology.generate.delay"]


def test_ranges_by_step_and_by_number() -> None:
    sw = sweep_from_dict({"base": BASE, "axes": {
        "duration": {"from": 1, "to": 2, "num": 3},
        "topology.generate.receivers": {"from": 2, "to": 32, "num": 5, "scale": "log"}}})
    vals = [(p.values["duration"], p.values["topology.generate.receivers"]) for p in sw.points()]
    assert sorted({d for d, _ in vals}) == [1.0, 1.5, 2.0]
    assert sorted({r for _, r in vals}) == pytest.approx([2, 4, 8, 16, 32])


def test_an_axis_with_a_wrong_field_gets_the_scenario_readers_error() -> None:
    probs = problems({"base": BASE, "axes": {"sessions[0].protocl": ["tfmcc"]}})
    assert len(probs) == 1
    assert probs[0].startswith("axes: sessions[0].protocl: unknown field (known: ")
    assert "protocol" in probs[0]


def test_a_wrong_link_field_a_missing_index_and_a_bad_value_are_named() -> None:
    assert problems({"base": LINKS, "axes": {"topology.links[1].rat": ["1Mbps"]}})[0].startswith(
        "axes: topology.links[1].rat: unknown field")
    assert problems({"base": LINKS, "axes": {"sessions[2].protocol": ["tfmcc"]}}) == [
        "axes: sessions[2]: no element 2 (the base has 1)"]
    probs = problems({"base": LINKS, "axes": {"topology.links[1].rate": ["10Mbps", "fast"]}})
    assert probs == ["axes: topology.links[1].rate: cannot read 'fast' as a number with a unit (value 'fast')"]


def test_wrong_generator_arguments_and_protocol_parameters_are_named() -> None:
    probs = problems({"base": BASE, "axes": {"topology.generate.recievers": [3]}})
    assert "unexpected keyword argument 'recievers'" in probs[0] and probs[0].startswith("axes: topology.generate")
    probs = problems({"base": BASE, "axes": {"sessions[0].params.no_such_param": [1]}})
    assert probs[0].startswith("axes: sessions[0].params: ") and "no_such_param" in probs[0]


def test_sweep_file_structure_errors() -> None:
    probs = problems({"base": BASE, "axis": {}, "metrics": {"names": ["thruput"]},
                      "axes": {"g": {"zip": {"seed": [1, 2], "duration": [1]}}}})
    assert "axis: unknown field (known: axes, base, description, keep_results, metrics, name, set, switch)" in probs
    assert any(p.startswith("metrics.names[0]: unknown name 'thruput'") for p in probs)
    assert "axes.g.zip: the lists have different lengths (seed: 2, duration: 1)" in probs


def test_a_broken_base_is_reported_as_the_base() -> None:
    bad = {**BASE, "duration": -1}
    assert problems({"base": bad, "axes": {"seed": [1]}}) == ["base: duration: must be a positive, finite number of seconds"]


def test_the_command_names_the_wrong_field_and_exits_2(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "s.yaml").write_text("base: base.yaml\naxes:\n  topology.generate.rate: [1Mbps]\n"
                                     "  sessions[0].protocl: [rla]\n")
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "sweep", str(tmp_path / "s.yaml"),
                          "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "axes: sessions[0].protocl: unknown field" in out.stderr
    assert not (tmp_path / "o").exists()


def test_a_bad_scheduler_address_is_refused_before_anything_runs(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"base": BASE, "axes": {"seed": [1]}}))
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "sweep", str(tmp_path / "s.yaml"),
                          "--out", str(tmp_path / "o"), "--scheduler", "cluster-1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--scheduler: expected a Dask scheduler address like tcp://HOST:8786" in out.stderr


def test_a_range_or_grid_beyond_the_point_limit_is_refused_before_it_is_built() -> None:
    from p4mcc.sweep.spec import MAX_POINTS

    huge = {"from": 1, "to": 10 ** 12, "step": 1}
    assert problems({"base": BASE, "axes": {"seed": huge}}) == [
        f"axes.seed: 1e+12 values, more than the {MAX_POINTS} points a sweep may have"]
    assert problems({"base": BASE, "axes": {"seed": {"from": 1, "to": 2, "num": MAX_POINTS + 1}}}) == [
        f"axes.seed.num: {MAX_POINTS + 1} values, more than the {MAX_POINTS} points a sweep may have"]
    grid = {"seed": {"from": 1, "to": 1000, "step": 1}, "duration": {"from": 1, "to": 1000, "step": 1}}
    assert problems({"base": BASE, "axes": grid}) == [
        f"axes: 1000000 points (1000 x 1000), more than the {MAX_POINTS} a sweep may have"]



def test_the_code_fingerprint_covers_the_protocols(monkeypatch) -> None:
    """A sweep's cache key hashes the code it runs: the protocol packages are read, not skipped."""
    from pathlib import Path

    import p4mcc.hosts.tfmcc.sender as sender
    from p4mcc.sweep import spec

    seen: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: (seen.append(self.resolve()), real(self))[1])
    spec.code_fingerprint.cache_clear()
    try:
        spec.code_fingerprint()
    finally:
        spec.code_fingerprint.cache_clear()
    assert Path(sender.__file__).resolve() in seen
