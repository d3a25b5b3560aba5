"""Running sweeps: the table, its columns and values, resume, metric selection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
import yaml
from sweeplib import BASE, sweep_doc

from p4mcc.sweep.execute import run_sweep
from p4mcc.sweep.spec import sweep_from_dict, validate
from p4mcc.sweep.store import DUCKDB, POINTS, RESULTS, SERIES


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serial")
    res = run_sweep(sweep_from_dict(sweep_doc()), out, scheduler="serial", progress=False)
    assert (res.points, res.ran, res.skipped, res.failed) == (8, 8, 0, [])
    return out


def test_one_row_per_point_and_flow_with_every_axis_a_typed_column(serial: Path) -> None:
    t = pq.read_table(serial / RESULTS)
    assert t.column_names[:5] == ["point", "point_id", "seed", "sessions[0].protocol", "topology.generate.rate"]
    assert str(t.schema.field("seed").type) == "int64"
    assert str(t.schema.field("topology.generate.rate").type) == "int64"
    assert str(t.schema.field("sessions[0].protocol").type) == "string"
    rows = t.to_pylist()
    for point in range(8):
        kinds = sorted(r["kind"] for r in rows if r["point"] == point and r["kind"] != "link")
        assert kinds == ["receiver", "receiver", "session", "tcp"]
    sessions = [r for r in rows if r["kind"] == "session"]
    assert [r["protocol"] for r in sessions] == [r["sessions[0].protocol"] for r in sessions]
    assert all(r["steady_tcp_friendliness"] is not None for r in sessions)


def test_table_values_are_those_of_a_single_run(serial: Path) -> None:
    from p4mcc.netsim.run import run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import scenario_from_dict

    pts = validate(sweep_from_dict(sweep_doc()))
    p = pts[5]
    run = run_scenario(scenario_from_dict(p.scenario), None, switch=choose_switch("model"))
    s = run.summary["sessions"]["s"]
    con = duckdb.connect(str(serial / DUCKDB), read_only=True)
    got = con.execute("select tcp_friendliness, steady_tcp_friendliness, throughput_bps from results "
                      "where point = ? and kind = 'session'", [p.index]).fetchall()
    assert got == [(s["tcp_friendliness"], s["steady_tcp_friendliness"], s["mean_receiver_throughput_bps"])]
    tcp = con.execute("select steady_throughput_bps from results where point = ? and kind = 'tcp'",
                      [p.index]).fetchall()
    assert tcp == [(run.summary["tcp_flows"]["tcp"]["steady_throughput_bps"],)]


def test_a_resumed_sweep_runs_only_the_points_not_finished(serial: Path, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "resume"
    shutil.copytree(serial, out)
    sw = sweep_from_dict(sweep_doc())
    ran: list[int] = []
    res = run_sweep(sw, out, scheduler="serial", progress=False, on_done=lambda p, r: ran.append(p.index))
    assert (res.ran, res.skipped, ran) == (0, 8, [])
    pts = validate(sw)
    for i in (2, 6):
        (out / POINTS / f"{pts[i].id}.json").unlink()
    res = run_sweep(sw, out, scheduler="serial", progress=False, on_done=lambda p, r: ran.append(p.index))
    assert (res.ran, res.skipped, ran) == (2, 6, [2, 6])
    assert pq.read_table(out / RESULTS).equals(pq.read_table(serial / RESULTS))
    # A changed base is a different scenario: nothing is reused.
    doc = sweep_doc(seeds=(1,))
    doc["base"] = {**doc["base"], "duration": 2}
    res = run_sweep(sweep_from_dict(doc), out, scheduler="serial", progress=False)
    assert (res.ran, res.skipped) == (4, 0)


def test_metric_selection_and_series(tmp_path: Path) -> None:
    doc = sweep_doc(seeds=(1,), metrics={"kinds": ["session", "tcp"], "windows": ["steady"],
                                         "names": ["throughput_bps", "tcp_friendliness"], "series": True})
    run_sweep(sweep_from_dict(doc), tmp_path, scheduler="serial", progress=False)
    t = pq.read_table(tmp_path / RESULTS)
    assert t.column_names[-2:] == ["steady_throughput_bps", "steady_tcp_friendliness"]
    assert "throughput_bps" not in t.column_names
    assert set(t.column("kind").to_pylist()) == {"session", "tcp"}
    s = pq.read_table(tmp_path / SERIES).to_pylist()
    times = sorted({r["time"] for r in s if r["point"] == 0 and r["kind"] == "session"})
    assert times == pytest.approx([0.5 * i for i in range(1, int(BASE["duration"] / 0.5) + 1)])


def test_the_command_runs_a_local_cluster_and_matches_serial_runs(serial: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sweep_doc()))
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "sweep", str(tmp_path / "s.yaml"),
                          "--out", str(tmp_path / "o"), "--workers", "2", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "8 points: 8 run, 0 already done, 0 failed" in out.stdout
    assert pq.read_table(tmp_path / "o" / RESULTS).equals(pq.read_table(serial / RESULTS))


def test_a_p4_point_configures_its_switches_as_p4mcc_sim_does() -> None:
    """A sweep point with P4 switches gets the scenario's own switch options
    (per-host feedback policing, membership ageing) and the desired state the
    run restores after a switch restart, exactly as ``p4mcc sim`` does."""
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import scenario_from_dict
    from p4mcc.sweep.point import _switch

    doc = {"name": "p4-point", "duration": 1.0, "seed": 3,
           "topology": {"generate": {"kind": "dumbbell", "receivers": 3, "tcp_pairs": 1, "rate": "2Mbps"}},
           "membership": {"timeout": 12.0},
           "sessions": [{"name": "v", "protocol": "vlmcc", "sender": "snd1", "receivers": ["r*"]}]}
    sc = scenario_from_dict(doc)
    cli = build_run(sc, switch=choose_switch("p4", sc))
    point = build_run(scenario_from_dict(doc), switch=_switch("p4", None, sc.seed))
    want = cli.net.desired_states
    got = getattr(point.net, "desired_states", None)
    assert got is not None and set(got) == set(want)
    for sw in want:
        assert got[sw].meters == want[sw].meters and got[sw].defaults == want[sw].defaults
        assert got[sw].entries == want[sw].entries
    assert any(st.meters for st in want.values())  # the policing budgets are really there
