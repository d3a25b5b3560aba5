"""A ``p4mcc run`` killed with -9 leaves switches, agents and interfaces;
``p4mcc stop`` ends exactly those from the run's record (root, Mininet)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4mcc.emulation.runstate import RunRecord, if_index, start_time

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.root, pytest.mark.slow]

SCENARIO = """
name: killed
duration: 60
topology:
  hosts: {h1: {ip: 10.0.8.1/24}, h2: {ip: 10.0.8.2/24}}
  switches: {s1: {}, s2: {}}
  links: [[s1-p1, s2-p1], [h1, s1-p2], [h2, s2-p2]]
sessions:
  - {name: s, protocol: rla, sender: h1, receivers: [h2], group: 239.8.8.8, port: 5008}
"""


def test_stop_after_a_hard_kill_of_the_runner(tmp_path: Path) -> None:
    from p4mcc.emulation.run import missing_requirements

    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, P4MCC_STATE_DIR=str(tmp_path / "state"), PYTHONUNBUFFERED="1")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    runner = subprocess.Popen([sys.executable, "-m", "p4mcc.cli.main", "run", str(tmp_path / "s.yaml"),
                               "--out", str(tmp_path / "out"), "--no-progress"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "runner.err", "w"),
                              start_new_session=True)
    rec = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and runner.poll() is None:
            paths = list((tmp_path / "state").glob("run-*.json"))
            if paths:
                rec = RunRecord.load(paths[0])
                names = [p.name for p in rec.processes]
                if any(n.startswith("recv ") for n in names) and any(n.startswith("send ") for n in names):
                    break
            time.sleep(0.2)  # the record is a file written by another process: poll it
        assert rec is not None and runner.poll() is None, (tmp_path / "runner.err").read_text()[-2000:]
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        rec = RunRecord.load(rec.path)
        left = [p for p in rec.processes if start_time(p.pid) == p.start]
        assert any(p.name.startswith("switch ") for p in left), "nothing outlived the runner: the test tests nothing"
        assert any(if_index(i.name) == i.index for i in rec.interfaces)

        r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "stop"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert [p.name for p in rec.processes if start_time(p.pid) == p.start] == []
        assert [i.name for i in rec.interfaces if if_index(i.name) is not None] == []
        assert not rec.path.exists()
    finally:
        if runner.poll() is None:
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait()
        if rec is not None and rec.path.exists():
            subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "stop"], cwd=ROOT, env=env, timeout=60)
