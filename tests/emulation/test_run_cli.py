"""``p4mcc run``'s command line: the default target, and errors as one line, not tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.cli.main import main

DEMO = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "demo.yaml"


def test_default_target_is_auto(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from p4mcc.emulation import run as emulation_run

    seen: dict[str, str] = {}

    def fake(scenario, out, *, target, **_kw):
        seen["target"] = target
        raise emulation_run.EmulationError("stop here")

    monkeypatch.setattr(emulation_run, "run_emulation", fake)
    assert main(["run", str(DEMO), "--out", str(tmp_path), "--no-progress"]) == 1
    assert seen["target"] == "auto"


@pytest.mark.parametrize("error", ["ComponentError", "PlanError", "ShapingError", "LinkConfigError"])
def test_a_target_problem_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str], error: str) -> None:
    from p4mcc.emulation import run as emulation_run
    from p4mcc.emulation.mininet_net import ComponentError
    from p4mcc.emulation.plan import PlanError
    from p4mcc.emulation.shaping import ShapingError
    from p4mcc.p4switch.linkemu import LinkConfigError

    cls = {"ComponentError": ComponentError, "PlanError": PlanError, "ShapingError": ShapingError,
           "LinkConfigError": LinkConfigError}[error]

    def fake(*_a, **_kw):
        raise cls("s1-p1--s2-p1: delay needs netem (run with --target builtin)\nlast log lines\nmore")

    monkeypatch.setattr(emulation_run, "run_emulation", fake)
    assert main(["run", str(DEMO), "--out", str(tmp_path), "--target", "bmv2", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        f"p4mcc run: s1-p1--s2-p1: delay needs netem (run with --target builtin) (logs: {tmp_path}/logs)"]
