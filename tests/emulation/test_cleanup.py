"""A component that dies mid-run is reported, the run goes on to write its results, and nothing is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from p4mcc.scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]


def scenario():
    return scenario_from_dict({
        "name": "crash",
        # room after the kill (at 3 s) for a cold restart of the switch process and the
        # controller's restore on a loaded 2-core machine: 11 s was not always enough
        "duration": 30,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.7.1/24"}, "h2": {"ip": "10.0.7.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [["s1-p1", "s2-p1"], ["h1", "s1-p2"], ["h2", "s2-p2"]],
        },
        "sessions": [{"name": "s", "protocol": "rla", "sender": "h1", "receivers": ["h2"],
                      "group": "239.7.7.7", "port": 5007}],
    })


def _leftovers() -> list[str]:
    links = [i for i in os.listdir("/sys/class/net") if i.split("-")[0] in ("s1", "s2", "h1", "h2")]
    procs = subprocess.run(["pgrep", "-af", "p4mcc.cli.main (switch|host)"], capture_output=True, text=True)
    mine = [ln for ln in procs.stdout.splitlines() if "10.0.7." in ln or "-eth" in ln]
    return links + mine


def test_a_switch_that_dies_is_restarted_and_the_run_writes_its_results(mininet_ready: None, tmp_path: Path) -> None:
    import csv

    from p4mcc.emulation.run import run_emulation

    killed: list[float] = []

    def kill_s2(now: float, net: Any, _plan: Any) -> None:
        if now > 3 and not killed:
            os.killpg(net["s2"].process.proc.pid, signal.SIGKILL)
            killed.append(now)

    # no fault in the scenario: a switch SIGKILLed from outside is restarted by the runner
    run_emulation(scenario(), tmp_path, progress=False, observe=kill_s2, plots=False)
    assert killed and killed[0] < 10
    assert (tmp_path / "summary.json").exists()
    what = [(r["node"], r["event"]) for r in csv.DictReader((tmp_path / "events.csv").open())]
    assert ("s2", "switch_died") in what and ("s2", "switch_up") in what
    assert ("s2", "restored") in what  # the controller wrote its state again
    assert _leftovers() == []
    assert (tmp_path / "logs" / "s2.log").exists() and (tmp_path / "logs" / "s2.log.1").exists()


@pytest.mark.timeout(240)
def test_sigterm_ends_a_run_through_its_cleanup(mininet_ready: None, tmp_path: Path) -> None:
    import sys
    import time

    import yaml

    path = tmp_path / "crash.yaml"
    sc = scenario()
    path.write_text(yaml.safe_dump({
        "name": sc.name, "duration": 60,
        "topology": {"hosts": {"h1": {"ip": "10.0.7.1/24"}, "h2": {"ip": "10.0.7.2/24"}},
                     "switches": {"s1": {}, "s2": {}},
                     "links": [["s1-p1", "s2-p1"], ["h1", "s1-p2"], ["h2", "s2-p2"]]},
        "sessions": [{"name": "s", "protocol": "rla", "sender": "h1", "receivers": ["h2"],
                      "group": "239.7.7.7", "port": 5007}]}))
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "p4mcc.cli.main", "run", str(path), "--target", "builtin",
                            "--out", str(out), "--no-progress"], stderr=subprocess.PIPE, text=True)
    metrics = out / "agents" / "s-h2.jsonl"
    deadline = time.monotonic() + 150
    while not (metrics.exists() and metrics.stat().st_size) and run.poll() is None:
        assert time.monotonic() < deadline, "the receiver never wrote a metric"
        time.sleep(0.2)  # polling a file another process writes: no event to wait on
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 143, err
    assert err.strip().count("\n") == 0 and "stopped by a signal" in err, err
    assert _leftovers() == []
