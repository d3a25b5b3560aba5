"""``p4mcc report DIR [DIR2]``: re-render a results folder, or compare two.

A sweep's output folder (``p4mcc sweep``) is drawn by :mod:`sweep.report`; the
command (:mod:`p4mcc.cli.report`) decides which of the two a folder is.

With one folder it redraws the plots from ``timeseries.csv``/``events.csv``,
lists the run's packet captures (``pcaps/``, see docs/captures.md)
and prints the summary table.  With two (for example the emulation and the
simulation of one scenario) it prints both tables, a per-flow comparison of
mean throughput with the ratio DIR2/DIR1, and writes ``compare.png`` into the
second folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from p4mcc.reporting import results as R


def _flows(summary: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, s in summary.get("sessions", {}).items():
        out[f"{name} (mean receiver)"] = s.get("mean_receiver_throughput_bps")
        for node, r in sorted(s.get("receivers", {}).items()):
            out[f"{name}/{node}"] = r.get("throughput_bps")
    for name, f in summary.get("tcp_flows", {}).items():
        out[f"{name} (tcp)"] = f.get("throughput_bps")
    return out


def compare_table(a: dict[str, Any], b: dict[str, Any], max_rows: int = 30) -> Any:
    from rich.table import Table

    t = Table(title=f"{a.get('scenario')}: {a.get('engine')} vs {b.get('engine')}")
    for col in ("flow", "run 1 (Mb/s)", "run 2 (Mb/s)", "run2/run1"):
        t.add_column(col, justify="left" if col == "flow" else "right")
    fa, fb = _flows(a), _flows(b)
    for i, k in enumerate(sorted(set(fa) | set(fb))):
        if i >= max_rows:
            t.add_row(f"... {len(set(fa) | set(fb)) - max_rows} more", "", "", "")
            break
        x, y = fa.get(k), fb.get(k)
        ratio = f"{y / x:.2f}" if x and y is not None else "-"
        t.add_row(k, "-" if x is None else f"{x / 1e6:.3f}", "-" if y is None else f"{y / 1e6:.3f}", ratio)
    return t


def captures_table(results: str | Path) -> Any:
    """The run's pcaps (``pcaps/`` of a results folder): frames and time span, or None."""
    from rich.table import Table

    from p4mcc.scenario.capture import list_captures

    caps = list_captures(results)
    if not caps:
        return None
    t = Table(title=f"captures in {Path(results) / 'pcaps'} (times in s since the run's start)")
    for col in ("file", "frames", "first", "last"):
        t.add_column(col, justify="left" if col == "file" else "right", no_wrap=True)
    for c in caps:
        t.add_row(c.path.name, str(c.frames), "-" if c.first is None else f"{c.first:.6f}",
                  "-" if c.last is None else f"{c.last:.6f}")
    return t


def report(dirs: list[str]) -> int:
    from p4mcc.reporting import plots
    from p4mcc.reporting.console import table_console

    console = table_console()
    if not 1 <= len(dirs) <= 2:
        print("p4mcc report: give one results folder, or two to compare", file=sys.stderr)
        return 2
    summaries = []
    for d in dirs:
        problem = R.results_folder_problem(d)
        if problem is not None:
            print(f"p4mcc report: {d}: {problem}", file=sys.stderr)
            return 1
        try:
            files = plots.render(d)
        except ValueError as e:  # a sample line that is not one
            print(f"p4mcc report: {d}: {e}", file=sys.stderr)
            return 1
        s = R.load_summary(d)
        summaries.append(s)
        console.print(R.summary_table(s))
        console.print(f"plots: {', '.join(str(f) for f in files)}")
        caps = captures_table(d)
        if caps is not None:
            console.print(caps)
    if len(dirs) == 2:
        console.print(compare_table(summaries[0], summaries[1]))
        out = plots.render_comparison(dirs[0], dirs[1], Path(dirs[1]) / "compare.png")
        console.print(f"comparison plot: {out}")
    return 0

