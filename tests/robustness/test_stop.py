"""``make stop`` ends what p4mcc runs recorded, by process id, and nothing else.

Name patterns used to kill an unrelated process whose command line held
"p4mcc switch", a ping, and Mininet's cleanup deleted other programs'
/tmp/*.log files and an unrelated ``foo-eth0``.  Here all of those exist with
p4mcc-like names next to a run that was killed hard, and only the run's own
process and interface go.  Root (interfaces); run under the shared lock.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from p4mcc.emulation.runstate import ProcessEntry, RunRecord, if_index, start_time

ROOT = Path(__file__).resolve().parents[2]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (interfaces)")

KILLED_RUN = """
import subprocess, sys, time
from p4mcc.emulation.runstate import RunRecord
rec = RunRecord.create("results/x")
agent = subprocess.Popen(["sleep", "300"], start_new_session=True)
rec.add_process(agent.pid, "recv s r1", group=True)
rec.add_interfaces(sys.argv[1:])
print(agent.pid, flush=True)
time.sleep(300)
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.mark.root
@ROOT_ONLY
def test_make_stop_ends_a_killed_run_and_leaves_lookalikes_alone(tmp_path):
    env = dict(os.environ, P4MCC_STATE_DIR=str(tmp_path / "state"))
    tag = os.getpid() % 10000
    run_ifs = [f"s{tag}-eth1", f"s{tag}-eth2"]
    other_if = "foo-eth0"
    made_other_if = if_index(other_if) is None
    log = Path(f"/tmp/p4mcc-unrelated-{tag}.log")
    lookalike = ping = helper = None
    try:
        _ip("link", "add", run_ifs[0], "type", "veth", "peer", "name", run_ifs[1])
        if made_other_if:
            _ip("link", "add", other_if, "type", "veth", "peer", "name", f"foo{tag}-eth1")
        log.write_text("not p4mcc's\n")
        # a process whose command line contains "p4mcc switch", and a ping
        lookalike = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "p4mcc", "switch",
                                      "-i", "1@s1-eth1"], start_new_session=True)
        ping = subprocess.Popen(["ping", "-q", "-i", "0.5", "127.0.0.1"], stdout=subprocess.DEVNULL,
                                start_new_session=True)
        # a run killed with -9 after it started an agent and created interfaces
        helper = subprocess.Popen([sys.executable, "-c", KILLED_RUN, *run_ifs], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, text=True)
        agent_pid = int(helper.stdout.readline())
        helper.kill()
        helper.wait()
        # a record whose pid now names another process (a reused pid) must not kill it
        rec_path = next((tmp_path / "state").glob("run-*.json"))
        data = json.loads(rec_path.read_text())
        data["processes"].append({"pid": lookalike.pid, "start": (start_time(lookalike.pid) or 0) - 1,
                                  "name": "switch s1", "group": True})
        rec_path.write_text(json.dumps(data))
        assert start_time(agent_pid) is not None and if_index(run_ifs[0]) is not None

        r = subprocess.run(["make", "-s", "stop"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "1 run(s); stopped 1 process(es); deleted 1 interface(s)" in r.stdout

        assert start_time(agent_pid) is None, "the run's agent still runs"
        assert if_index(run_ifs[0]) is None and if_index(run_ifs[1]) is None  # the pair went together
        assert lookalike.poll() is None, "the process named 'p4mcc switch' was stopped"
        assert ping.poll() is None, "the unrelated ping was stopped"
        assert if_index(other_if) is not None, f"{other_if} was deleted"
        assert log.read_text() == "not p4mcc's\n"
        assert not list((tmp_path / "state").glob("run-*.json"))
        # nothing left: a second stop has nothing to do
        r = subprocess.run(["make", "-s", "stop"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert "no p4mcc run recorded" in r.stdout
    finally:
        for p in (lookalike, ping, helper):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        for name in [run_ifs[0]] + ([other_if] if made_other_if else []):
            if if_index(name) is not None:
                subprocess.run(["ip", "link", "del", name], capture_output=True)
        log.unlink(missing_ok=True)


def test_the_makefile_and_sources_kill_nothing_by_name():
    """Nothing p4mcc runs stops processes by name pattern or cleans Mininet machine-wide."""
    by_name = re.compile(r"\bpkill\b|\bkillall\b|\bmn\s+-c\b|[\"']mn[\"'],\s*[\"']-c[\"']|\bmininet\.clean\b")
    hits = []
    for path in [ROOT / "Makefile", *ROOT.glob("*/**/*.py")]:
        if ".venv" in path.parts or "tests" in path.parts:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if by_name.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []


def test_a_record_survives_a_reader_at_any_moment(tmp_path):
    rec = RunRecord.create("out", tmp_path)
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        rec.add_process(child.pid, "agent", group=True)
        again = RunRecord.load(rec.path)
        assert again.processes == [ProcessEntry(child.pid, start_time(child.pid), "agent", True)]
        assert again.runner.pid == os.getpid()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    rec.close()
    assert not rec.path.exists()


def test_a_new_run_ends_what_a_dead_runner_left_and_leaves_a_live_run_alone(tmp_path):
    """A hard-killed run's record and agent must not block the next run; a live run's must stay."""
    from p4mcc.emulation.runstate import reclaim_orphans

    state = tmp_path / "state"
    env = dict(os.environ, P4MCC_STATE_DIR=str(state))
    helper = subprocess.Popen([sys.executable, "-c", KILLED_RUN], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True)
    live = RunRecord.create("results/live", state)  # this process is the live run's runner
    live_agent = subprocess.Popen(["sleep", "300"], start_new_session=True)
    orphan_agent = None
    try:
        orphan_agent = int(helper.stdout.readline())
        helper.kill()
        helper.wait()
        live.add_process(live_agent.pid, "recv s r2", group=True)
        assert start_time(orphan_agent) is not None

        report = reclaim_orphans(state, grace=2.0)

        assert report.runs == 1 and report.terminated == [f"recv s r1 ({orphan_agent})"]
        assert start_time(orphan_agent) is None, "the dead run's agent still runs"
        assert live_agent.poll() is None, "the live run's agent was stopped"
        assert [p.name for p in state.glob("run-*.json")] == [live.path.name]
    finally:
        if orphan_agent is not None and start_time(orphan_agent) is not None:
            os.killpg(orphan_agent, signal.SIGKILL)
        live_agent.kill()
        live_agent.wait()
        live.close()
