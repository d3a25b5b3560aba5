"""``p4mcc report SWEEP_DIR``: lines with a band over seeds, heatmaps over two axes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweeplib import sweep_doc

from p4mcc.sweep.execute import run_sweep
from p4mcc.sweep.report import heat_data, line_data
from p4mcc.sweep.spec import sweep_from_dict


def row(proto: str, x: float, y: float, seed: int, v: float, assist: bool = True) -> dict:
    return {"protocol": proto, "assistance": assist, "x": x, "y": y, "seed": seed, "m": v}


def test_lines_average_each_seed_over_other_axes_then_span_the_seeds() -> None:
    rows = [row("a", 1, 0, 1, 1.0), row("a", 1, 1, 1, 3.0),   # seed 1 at x=1: mean 2
            row("a", 1, 0, 2, 4.0), row("a", 1, 1, 2, 6.0),   # seed 2 at x=1: mean 5
            row("a", 2, 0, 1, 7.0), row("a", 2, 0, 2, 7.0),
            row("a", 2, 0, 1, 9.0, assist=False)]
    got = line_data(rows, "m", "x")
    assert got["a/assist"] == [(1, 3.5, 2.0, 5.0), (2, 7.0, 7.0, 7.0)]
    assert got["a/no-assist"] == [(2, 9.0, 9.0, 9.0)]


def test_heatmap_cells_are_medians() -> None:
    rows = [row("a", 1, 0, s, v) for s, v in ((1, 1.0), (2, 2.0), (3, 10.0))] + [row("b", 2, 1, 1, 4.0)]
    assert heat_data(rows, "m", "x", "y") == {"a/assist": {(1, 0): 2.0}, "b/assist": {(2, 1): 4.0}}


def test_report_of_a_sweep_folder_draws_lines_and_a_heatmap(tmp_path: Path) -> None:
    doc = sweep_doc(seeds=(1,))
    doc["axes"]["topology.generate.delay"] = {"from": 10, "to": 20, "step": 10, "unit": "ms"}
    doc["set"] = {"duration": 2}
    run_sweep(sweep_from_dict(doc), tmp_path, scheduler="serial", progress=False)
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "report", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pngs = sorted(p.name for p in (tmp_path / "plots").glob("*.png"))
    assert pngs == [
        "heatmap-steady_tcp_friendliness-topology.generate.rate-topology.generate.delay.png",
        "lines-steady_tcp_friendliness-vs-topology.generate.delay.png",
        "lines-steady_tcp_friendliness-vs-topology.generate.rate.png",
    ]
    assert "tfmcc/assist" in out.stdout and "webrc/assist" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "report", str(tmp_path), "--x", "nosuch"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no axis 'nosuch'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("metric", ["nosuch"])
def test_unknown_metric_lists_the_known_ones(tmp_path: Path, metric: str) -> None:
    run_sweep(sweep_from_dict(sweep_doc(seeds=(1,), set={"duration": 1})), tmp_path, scheduler="serial",
              progress=False)
    from p4mcc.sweep.report import report_sweep

    assert report_sweep(tmp_path, metric=metric) == 2
