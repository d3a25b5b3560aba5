"""The controller drives BMv2 exactly as it drives the built-in switch:
``p4mcc ctl apply --target bmv2`` pushes p4c's JSON with p4c's P4Info to
``simple_switch_grpc`` at BMv2's default device id (0) and writes the desired
state; a second apply reads that state back and finds nothing to do.  And a
short Mininet run on BMv2 writes full results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bmv2_harness import REPO, P4cBuild, need

SCENARIO = Path(__file__).with_name("bmv2-short.yaml")


def ctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "ctl", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_ctl_apply_configures_bmv2_with_p4c_p4info(p4c_build: P4cBuild, tmp_path: Path) -> None:
    need("simple_switch_grpc")
    assert p4c_build.returncode == 0, p4c_build.stderr
    from live import Bmv2Proc

    # BMv2's own default device id (0): no --device-id given
    sw = Bmv2Proc({}, tmp_path / "bmv2.log", device_id=None)
    try:
        common = ["--topology", str(SCENARIO), "--switch", f"s1={sw.address}", "--target", "bmv2",
                  "--bmv2-json", str(p4c_build.json), "--p4info", str(p4c_build.p4info),
                  "--state-dir", str(tmp_path / "state")]
        first = ctl(*common, "apply", "--json", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        wrote = json.loads(first.stdout)["switches"]["s1"]
        assert wrote["insert"] >= 10 and wrote["delete"] == 0, wrote
        assert any("MccIngress.record3.groups" in o["entity"] for o in wrote["ops"]), wrote["ops"]
        again = ctl(*common, "apply", "--json", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["switches"]["s1"]["ops"] == []
    finally:
        sw.stop()


@pytest.mark.root
@pytest.mark.slow
def test_short_mininet_run_on_bmv2_writes_full_results(p4c_build: P4cBuild, tmp_path: Path) -> None:
    need("simple_switch_grpc")
    if os.geteuid() != 0:
        pytest.skip("needs root for Mininet")
    assert p4c_build.returncode == 0, p4c_build.stderr
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "run", str(SCENARIO), "--target", "bmv2",
                        "--out", str(out), "--no-progress"], capture_output=True, text=True,
                       timeout=280, cwd=REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["target"] == "bmv2" and summary["failed_components"] == []
    receivers = summary["sessions"]["tfmcc"]["receivers"]
    assert set(receivers) == {"h2", "h3"}
    assert all(r["throughput_bps"] > 0 for r in receivers.values()), receivers
    for f in ("timeseries.csv", "events.csv", "throughput.png", "loss.png", "rtt.png", "feedback.png",
              "membership.png"):
        assert (out / f).stat().st_size > 0, f
