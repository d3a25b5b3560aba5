"""PNG plots of a results folder (both engines' layout, ``reporting/results.py``).

``render(dir)`` writes ``throughput.png`` (per receiver and TCP flow, the
sender's send rate dashed), ``loss.png``, ``rtt.png``, ``feedback.png``
(feedback messages per interval at each session's sender), ``membership.png``
(join/leave events per host), ``queues.png`` (switch-to-switch queues) and,
for runs with ``assistance: stamp``, ``stamp.png`` (the congestion stamp
each receiver saw).
Sessions with many receivers are drawn as a min/median/max band plus the
slowest few receivers, so 1000-receiver runs stay readable.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from p4mcc.reporting import results as R

MAX_LINES = 12


def _mpl() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(samples: list[R.Sample], metric: str) -> dict[tuple[str, str, str], tuple[list[float], list[float]]]:
    out: dict[tuple[str, str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for s in samples:
        if s.metric == metric:
            xs, ys = out[(s.kind, s.flow, s.node)]
            xs.append(s.time)
            ys.append(s.value)
    return out


def _plot_metric(plt: Any, ax: Any, series: dict, scale: float, senders: dict[str, str],
                 label_prefix: str = "") -> bool:
    drew = False
    by_flow: dict[tuple[str, str], list[tuple[str, list[float], list[float]]]] = defaultdict(list)
    for (kind, flow, node), (xs, ys) in sorted(series.items()):
        by_flow[(kind, flow)].append((node, xs, ys))
    for (kind, flow), lines in by_flow.items():
        snd = senders.get(flow)
        recv = [l for l in lines if l[0] != snd]
        for node, xs, ys in lines:
            if node == snd:
                ax.plot(xs, [y / scale for y in ys], "--", lw=1.2, label=f"{flow} sender {node}")
                drew = True
        if len(recv) > MAX_LINES:
            # band over receivers on a common time grid
            grid: dict[float, list[float]] = defaultdict(list)
            for _, xs, ys in recv:
                for x, y in zip(xs, ys):
                    grid[round(x, 6)].append(y / scale)
            ts = sorted(grid)
            lo = [min(grid[t]) for t in ts]
            hi = [max(grid[t]) for t in ts]
            med = [sorted(grid[t])[len(grid[t]) // 2] for t in ts]
            ax.fill_between(ts, lo, hi, alpha=0.25, label=f"{flow}: {len(recv)} receivers min-max")
            ax.plot(ts, med, lw=1.2, label=f"{flow}: median")
            drew = True
        else:
            for node, xs, ys in recv:
                tag = f"{flow} {node}" if kind != "tcp" else f"{flow} (tcp)"
                ax.plot(xs, [y / scale for y in ys], lw=1, label=tag)
                drew = True
    return drew


def _finish(plt: Any, fig: Any, ax: Any, path: Path, ylabel: str, title: str) -> None:
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="best", ncol=2 if len(handles) > 6 else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(d: str | Path) -> list[Path]:
    """Write every plot for results folder ``d``; returns the files written."""
    plt = _mpl()
    d = Path(d)
    samples = R.load_samples(d)
    events = R.load_events(d)
    summary = R.load_summary(d)
    senders = {name: s.get("sender", "") for name, s in summary.get("sessions", {}).items()}
    name = summary.get("scenario", "")
    written: list[Path] = []
    for metric, fname, ylabel, scale, kinds in (
        (R.THROUGHPUT, "throughput.png", "throughput (Mb/s)", 1e6, ("session", "tcp")),
        (R.LOSS, "loss.png", "loss (event) rate", 1.0, ("session", "tcp")),
        (R.RTT, "rtt.png", "RTT (s)", 1.0, ("session", "tcp")),
        (R.FEEDBACK, "feedback.png", "feedback msgs at sender / interval", 1.0, ("session",)),
        ("queue_pkts", "queues.png", "queue (packets)", 1.0, ("link",)),
    ):
        series = {k: v for k, v in _series(samples, metric).items() if k[0] in kinds}
        if metric == R.FEEDBACK:
            series = {k: v for k, v in series.items() if senders.get(k[1]) == k[2]}
        if metric == "queue_pkts":
            series = {k: v for k, v in series.items() if max(v[1], default=0) > 0}
        fig, ax = plt.subplots(figsize=(9, 4.5))
        drew = _plot_metric(plt, ax, series, scale, {} if metric == R.FEEDBACK else senders)
        if not drew:
            ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
        _finish(plt, fig, ax, d / fname, ylabel, f"{name}: {ylabel}")
        written.append(d / fname)
    # membership
    fig, ax = plt.subplots(figsize=(9, 4))
    nodes = sorted({e[1] for e in events})
    if nodes:
        shown = nodes[:40]
        ypos = {n: i for i, n in enumerate(shown)}
        for what, marker, color in (("join", "^", "tab:green"), ("leave", "v", "tab:red")):
            pts = [(t, ypos[n]) for t, n, ev, _ in events if ev == what and n in ypos]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, c=color, label=what)
        ax.set_yticks(range(len(shown)))
        ax.set_yticklabels(shown, fontsize=6)
    else:
        ax.text(0.5, 0.5, "no membership events", ha="center", va="center", transform=ax.transAxes)
    _finish(plt, fig, ax, d / "membership.png", "host", f"{name}: group joins and leaves")
    written.append(d / "membership.png")
    stamp = _stamp_plot(plt, d, samples, name)
    return written + ([stamp] if stamp else [])


def _stamp_plot(plt: Any, d: Path, samples: list[R.Sample], name: str) -> Path | None:
    """``stamp.png``: what the congestion stamp told each receiver of a stamped
    session (docs/stamp.md): the worst queueing delay on its path and the
    tightest spare rate, each a lower bound within a factor of two.  Only
    runs with ``assistance: stamp`` have these samples; others get no file."""
    queue = _series(samples, R.STAMP_QUEUE)
    if not queue:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    _plot_metric(plt, top, queue, 1e-3, {})
    top.set_ylabel("queueing delay >= (ms)")
    top.set_title(f"{name}: congestion stamp seen by each receiver")
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="best")
    _plot_metric(plt, bottom, _series(samples, R.STAMP_SPARE), 1e6, {})
    path = d / "stamp.png"
    _finish(plt, fig, bottom, path, "spare rate >= (Mb/s)", "")
    return path


def render_comparison(a: str | Path, b: str | Path, out: str | Path) -> Path:
    """Throughput of two runs of one scenario side by side (e.g. emulation vs simulation)."""
    plt = _mpl()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5), sharey=True)
    for ax, d in zip(axes, (Path(a), Path(b))):
        summary = R.load_summary(d)
        senders = {n: s.get("sender", "") for n, s in summary.get("sessions", {}).items()}
        series = {k: v for k, v in _series(R.load_samples(d), R.THROUGHPUT).items() if k[0] != "link"}
        _plot_metric(plt, ax, series, 1e6, senders)
        ax.set_title(f"{d.name} ({summary.get('engine')})")
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("throughput (Mb/s)")
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
