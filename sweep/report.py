"""``p4mcc report SWEEP_DIR``: what sweep users look at, drawn from the table.

* Lines of a metric against one axis, one line per protocol, assistance
  setting and profile (``default`` is not named), the band spanning the seeds (each seed's value is first averaged
  over the other axes at that x).
* Heatmaps over two axes, one panel per protocol, assistance setting and profile,
  each cell the median over seeds and the other axes.

By default the metric is the session's steady-state TCP-friendliness ratio
(else its steady throughput), the rows are the sessions, every numeric axis
gets a line plot and the first two numeric axes a heatmap.  PNGs go to
``SWEEP_DIR/plots/``.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from p4mcc.sweep.store import META, RESULTS, load_meta

PLOTS = "plots"


def is_sweep_dir(d: str | Path) -> bool:
    return (Path(d) / RESULTS).exists() and (Path(d) / META).exists()


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


def _line_key(r: dict[str, Any]) -> str:
    proto = r.get("protocol") or "-"
    a = r.get("assistance")
    key = proto if a is None else f"{proto}/{'assist' if a else 'no-assist'}"
    profile = r.get("profile")
    return key if profile in (None, "default") else f"{key}/{profile}"


class SweepReadError(ValueError):
    """A sweep folder whose table or metadata cannot be read (one line)."""


def load_rows(d: str | Path, kind: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(Path(d) / RESULTS)
        rows = [r for r in table.to_pylist() if r.get("kind") == kind]
    except (pa.ArrowException, OSError) as exc:
        raise SweepReadError(f"{RESULTS}: not a sweep table ({type(exc).__name__})") from None
    try:
        meta = load_meta(d)
    except (OSError, ValueError) as exc:
        raise SweepReadError(f"{META}: {exc}") from None
    if not isinstance(meta, dict):
        raise SweepReadError(f"{META}: not a sweep's metadata")
    return rows, meta


def _numeric_axes(rows: list[dict[str, Any]], paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        vals = {r.get(p) for r in rows}
        if p != "seed" and len(vals) > 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in vals):
            out.append(p)
    return out


def _default_metric(rows: list[dict[str, Any]]) -> str | None:
    for m in ("steady_tcp_friendliness", "tcp_friendliness", "steady_throughput_bps", "throughput_bps"):
        if any(r.get(m) is not None for r in rows):
            return m
    return None


def line_data(rows: list[dict[str, Any]], metric: str, x: str) -> dict[str, list[tuple[float, float, float, float]]]:
    """line -> [(x, mean over seeds, lowest seed, highest seed)]."""
    acc: dict[tuple[str, Any, Any], list[float]] = defaultdict(list)
    for r in rows:
        v = r.get(metric)
        if v is None or r.get(x) is None or (isinstance(v, float) and math.isnan(v)):
            continue
        acc[(_line_key(r), r[x], r.get("seed"))].append(v)
    per_seed: dict[tuple[str, Any], list[float]] = defaultdict(list)
    for (line, xv, _seed), vs in acc.items():
        per_seed[(line, xv)].append(statistics.fmean(vs))
    out: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for (line, xv), vs in sorted(per_seed.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out[line].append((xv, statistics.fmean(vs), min(vs), max(vs)))
    return dict(out)


def heat_data(rows: list[dict[str, Any]], metric: str, x: str, y: str) -> dict[str, dict[tuple[Any, Any], float]]:
    """line -> {(x, y): median of the metric over seeds and the other axes}."""
    acc: dict[str, dict[tuple[Any, Any], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        v = r.get(metric)
        if v is None or r.get(x) is None or r.get(y) is None:
            continue
        acc[_line_key(r)][(r[x], r[y])].append(v)
    return {k: {c: statistics.median(vs) for c, vs in cells.items()} for k, cells in acc.items()}


def draw_lines(rows: list[dict[str, Any]], metric: str, x: str, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for line, pts in sorted(line_data(rows, metric, x).items()):
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], marker="o", label=line)
        ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], alpha=0.2)
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_heatmaps(rows: list[dict[str, Any]], metric: str, x: str, y: str, path: Path, title: str,
                  center: float | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = heat_data(rows, metric, x, y)
    xs = sorted({c[0] for cells in data.values() for c in cells})
    ys = sorted({c[1] for cells in data.values() for c in cells})
    n = max(1, len(data))
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n + 1.2, 3.4), squeeze=False)
    vals = [v for cells in data.values() for v in cells.values()]
    vmin, vmax = (min(vals), max(vals)) if vals else (0.0, 1.0)
    im = None
    for ax, (line, cells) in zip(axes[0], sorted(data.items())):
        grid = [[cells.get((xv, yv), float("nan")) for xv in xs] for yv in ys]
        im = ax.imshow(grid, origin="lower", aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis")
        ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs], fontsize=7, rotation=45)
        ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys], fontsize=7)
        ax.set_xlabel(x, fontsize=8)
        ax.set_ylabel(y, fontsize=8)
        ax.set_title(line, fontsize=9)
        for j, row in enumerate(grid):
            for i, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(i, j, f"{v:.2g}", ha="center", va="center", fontsize=6, color="w")
    if im is not None:
        fig.colorbar(im, ax=axes[0].tolist(), label=metric)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def report_sweep(d: str | Path, *, metric: str | None = None, x: str | None = None,
                 heatmap: list[str] | None = None, kind: str = "session") -> int:
    from rich.table import Table

    from p4mcc.reporting.console import table_console

    d = Path(d)
    try:
        rows, meta = load_rows(d, kind)
    except SweepReadError as exc:
        print(f"p4mcc report: {d}: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(f"p4mcc report: {d}: no {kind} rows in {RESULTS}", file=sys.stderr)
        return 1
    paths = [p for a in meta.get("axes", []) for p in a["paths"]]
    metric = metric or _default_metric(rows)
    if metric is None or metric not in rows[0]:
        known = [c for c in rows[0] if c not in paths and c not in ("point", "point_id", "kind", "flow", "node",
                                                                    "protocol", "assistance", "profile",
                                                                    "rules")]
        print(f"p4mcc report: {d}: no metric {metric!r} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    for a in [x, *(heatmap or [])]:
        if a is not None and a not in paths:
            print(f"p4mcc report: {d}: no axis {a!r} (axes: {', '.join(paths)})", file=sys.stderr)
            return 2
    numeric = _numeric_axes(rows, paths)
    out = d / PLOTS
    out.mkdir(exist_ok=True)
    files = []
    title = f"{meta.get('name', d.name)}: {metric} ({kind} rows)"
    for ax in ([x] if x else numeric):
        files.append(draw_lines(rows, metric, ax, out / f"lines-{_slug(metric)}-vs-{_slug(ax)}.png", title))
    pair = heatmap or (numeric[:2] if len(numeric) >= 2 else None)
    if pair:
        files.append(draw_heatmaps(rows, metric, pair[0], pair[1],
                                   out / f"heatmap-{_slug(metric)}-{_slug(pair[0])}-{_slug(pair[1])}.png", title))
    t = Table(title=f"{title}, {meta.get('finished')} of {meta.get('points')} points")
    for col in ("line", "points", "median", "min", "max"):
        t.add_column(col, justify="left" if col == "line" else "right")
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.get(metric) is not None:
            by[_line_key(r)].append(r[metric])
    for line, vs in sorted(by.items()):
        t.add_row(line, str(len(vs)), f"{statistics.median(vs):.4g}", f"{min(vs):.4g}", f"{max(vs):.4g}")
    console = table_console()
    console.print(t)
    console.print(f"plots: {', '.join(str(f) for f in files) or '(no numeric axis to plot against)'}")
    return 0
