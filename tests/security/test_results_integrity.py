"""Results are whole or refused: a run killed while writing leaves a folder
``p4mcc report`` refuses in one line, and unreadable tables are one line too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4mcc.reporting import results as R
from p4mcc.scenario.model import scenario_from_dict


def _recorder() -> R.Recorder:
    sc = scenario_from_dict({"duration": 4, "topology": {"generate": {"kind": "dumbbell", "receivers": 1}}})
    rec = R.Recorder(sc, "netsim")
    for t in range(4):
        rec.sample(float(t), "link", "s1--s2:a->b", "s1", "queue_pkts", 1.0)
    rec.event(1.0, "r1", "join", "239.1.1.1")
    return rec


def test_a_finished_write_is_marked_and_accepted(tmp_path) -> None:
    _recorder().write(tmp_path)
    mark = json.loads((tmp_path / R.COMPLETE).read_text())
    assert set(mark["files"]) == {R.SUMMARY, R.TIMESERIES, R.EVENTS, R.METRICS}
    assert R.results_folder_problem(tmp_path) is None
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_write_killed_midway_leaves_a_refused_folder(tmp_path, monkeypatch) -> None:
    _recorder().write(tmp_path)  # an earlier, complete run

    def die(self, f):
        f.write("time,kind,flow,node,metric,value\n0.0,link")
        raise KeyboardInterrupt  # the run stopped mid-file

    monkeypatch.setattr(R.Recorder, "_write_samples", die)
    with pytest.raises(KeyboardInterrupt):
        _recorder().write(tmp_path)
    assert R.results_folder_problem(tmp_path) == (
        f"incomplete: no {R.COMPLETE} (the run stopped while writing its results)")
    # the earlier run's timeseries was never replaced by the half-written one
    assert (tmp_path / R.TIMESERIES).read_text().count("\n") == 5


def test_a_file_changed_after_the_run_is_refused(tmp_path) -> None:
    _recorder().write(tmp_path)
    with (tmp_path / R.TIMESERIES).open("a") as f:
        f.write("9.0,link,x,y,z,1\n")
    assert R.results_folder_problem(tmp_path).startswith(f"incomplete: {R.TIMESERIES} has")


def test_report_refuses_an_incomplete_folder_in_one_line(tmp_path, capsys) -> None:
    from p4mcc.cli.main import main

    _recorder().write(tmp_path)
    (tmp_path / R.COMPLETE).unlink()
    rc = main(["report", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc != 0 and "incomplete" in err and len(err.strip().splitlines()) == 1


def test_a_huge_timeseries_is_refused_before_it_is_loaded(tmp_path, monkeypatch) -> None:
    _recorder().write(tmp_path)
    monkeypatch.setattr(R, "MAX_REPORT_SAMPLES_BYTES", 16)
    assert "more than the 0 MiB p4mcc report draws" in R.results_folder_problem(tmp_path)


def test_a_garbage_sweep_table_is_one_line(tmp_path, capsys) -> None:
    from p4mcc.cli.main import main
    from p4mcc.sweep.report import RESULTS
    from p4mcc.sweep.store import META

    (tmp_path / RESULTS).write_bytes(b"PAR1 this is not parquet PAR1")
    (tmp_path / META).write_text("{}")
    rc = main(["report", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "not a sweep table" in err and "Traceback" not in err
