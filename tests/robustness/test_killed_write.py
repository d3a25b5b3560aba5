"""A run killed while writing its results leaves nothing a later run or ``p4mcc report`` trips on.

The child writes a real run's results and is SIGKILLed (no ``finally``
runs) while ``timeseries.csv`` is half-written under its temporary name.
``p4mcc report`` refuses the folder in one line; the next write into it
finishes, leaves no temporary behind, and the folder reports again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from p4mcc.reporting.results import Recorder, clear_stale_temporaries, results_folder_problem
from p4mcc.scenario.model import load_scenario

DEMO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "demo.yaml"

CHILD = r"""
import sys
from p4mcc.reporting.results import Recorder
from p4mcc.scenario.model import load_scenario

rec = Recorder(load_scenario(sys.argv[1]), "sim")
rec.sample(0.5, "tcp", "tcp", "h8", "throughput_bps", 1e6)

def stuck(f):
    f.write("time,kind,flow,node,metric,value\n0.5,tcp,tcp,h8,throughput")
    f.flush()
    print("writing", flush=True)
    sys.stdin.read()  # until the parent kills this process

rec._write_samples = stuck
rec.write(sys.argv[2])
"""


def recorder() -> Recorder:
    rec = Recorder(load_scenario(DEMO), "sim")
    rec.sample(0.5, "tcp", "tcp", "h8", "throughput_bps", 1e6)
    return rec


def temporaries(d: Path) -> list[str]:
    return sorted(f.name for f in d.iterdir() if f.name.endswith(".tmp"))


def test_a_run_killed_mid_write_leaves_nothing_the_next_run_or_report_trips_on(tmp_path) -> None:
    out = tmp_path / "results"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(DEMO), str(out)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        assert temporaries(out) == [f".timeseries.csv.{child.pid}.tmp"]
    finally:
        child.kill()
        child.wait(timeout=30)
    assert temporaries(out) == [f".timeseries.csv.{child.pid}.tmp"]  # SIGKILL: nothing cleaned up
    assert results_folder_problem(out) is not None  # no completion mark: refused, not half-drawn
    # another writer's temporary (pid 1 is alive) and a file that is not ours stay
    (out / ".events.csv.1.tmp").write_text("")
    (out / ".notes.7.tmp").write_text("")
    recorder().write(out)
    assert temporaries(out) == [".events.csv.1.tmp", ".notes.7.tmp"]
    assert results_folder_problem(out) is None


def test_clearing_keeps_a_live_writers_temporary_and_takes_its_own(tmp_path) -> None:
    mine = tmp_path / f".summary.json.{os.getpid()}.tmp"
    live = tmp_path / ".summary.json.1.tmp"
    for f in (mine, live):
        f.write_text("{")
    assert clear_stale_temporaries(tmp_path) == [mine]
    assert temporaries(tmp_path) == [live.name]
