"""TCP-friendliness of the five protocols with their defaults, over a grid of dumbbells.

The grid (``bench/sweeps/friendliness.yaml``, written by ``--write-sweeps``)
spans bottleneck 1-20 Mb/s, RTT 20-200 ms, drop-tail queues of 0.5x-2x the
bandwidth-delay product (at least 10 packets), 1-4 TCP flows and 2-32
receivers: 24 cells, the 16 corners of a half-fraction two-level design
(2^(5-1), fifth factor = product of the other four, so every pair of factors
meets at all four corner combinations) plus 8 interior cells of a
Latin hypercube (one per eighth of every factor's range, log-scaled; fixed
permutations).  Each protocol runs every cell with its default parameters,
except WEBRC's session rate, set to twice the bottleneck rate (well above
the fair share), over 3 seeds.  The sweep runs through ``p4mcc sweep`` (all
cores, resumable: run it again to finish an interrupted grid).

Per protocol it prints, over cells (each cell first averaged over seeds):
median and worst steady-state ratio (mean receiver throughput / mean TCP
flow throughput, second half of the run), the share of cells whose ratio is
in the TFRC bound [0.5, 2], Jain's index over {session, TCP flows}, the
bottleneck utilisation (payload goodput of the session and the TCP flows over
the bottleneck rate) and the time from the session's start until its
throughput (2 s moving mean) first reaches 80 % of the fair share
(bottleneck / (TCP flows + 1)), and the stalls the simulator's liveness check
reported over every cell and seed (``netsim/liveness.py``: a receiver the
session could deliver to that got nothing for 5 s).  It draws one picture per protocol (cells
placed by bottleneck rate and RTT, coloured by ratio).

``--reference`` also runs every cell with the session replaced by one more
TCP flow (``ref``, started with the others) and prints the same figures for
it, its ratio being ``ref`` over the other flows' mean: how far TCP itself
lands from an equal share on that dumbbell in that run length.  A cell that
TCP cannot share within the TFRC bound is not one a protocol can be judged
on by the bound alone.

    .venv/bin/python bench/friendliness.py --quick          # 5 protocols x 4 cells, 1 seed, 60 s
    .venv/bin/python bench/friendliness.py                  # the full grid (long: 360 runs of 200 s)
    .venv/bin/python bench/friendliness.py --docs           # also write docs/friendliness.md's section
    .venv/bin/python bench/friendliness.py --reference --protocols tfmcc --duration 100  # TCP beside it
    .venv/bin/python bench/friendliness.py --write-sweeps   # regenerate the sweep files
    .venv/bin/python bench/friendliness.py --draw 12 --draw-seed 7 --seeds 1  # 12 dumbbells off the grid
    .venv/bin/python bench/friendliness.py --ablate tfmcc --quick --faults   # each rule of TFMCC measured

``--design trees`` runs the tree design instead (``bench/trees.py``): 24
trees of 2-4 branches, each branch its own bottleneck, TCP load and
receivers, some with a lossy leaf; the measure is on the limiting branch
(WEBRC: on every branch).  ``--quick``, ``--cells``, ``--draw``,
``--protocols``, ``--seeds``, ``--duration``, ``--switch``, ``--per-cell`` and
``--docs`` apply; ``--profile`` and ``--rule NAME=on|off`` set the session's rules.

    .venv/bin/python bench/friendliness.py --design trees --quick    # 4 trees, 1 seed, 60 s
    .venv/bin/python bench/friendliness.py --design trees --docs     # 24 trees x 3 seeds, 100 s

``--ablate PROTO`` runs the same cells (``--quick``, ``--cells``, ``--draw``)
for the protocol's ``default`` and ``paper`` profiles, ``default`` minus each
rule, ``default`` plus each rule outside it (not the rules that read the
congestion stamp only: the grid writes no stamp) and ``paper`` plus each rule
(not with ``--no-plus``), as one more axis of the sweep, and prints per
variant the change in median ratio, the cells in [0.5, 2], utilisation, time
to 80 % of the share and (``--faults``) the failing fault rows, with whether
each rule of ``default`` earns its place and each rule outside it would enter
(``bench/ablation.py``).  A change that moves a few arms reruns those alone
(``--variants 'paper,default -R'``, with ``default`` always); ``--docs --merge``
keeps the page's other rows, and is refused if ``default``'s row moved.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from p4mcc.scenario.model import SEND_PATH_AUTO, SEND_PATH_MAX  # noqa: E402

SWEEPS = ROOT / "bench" / "sweeps"
FULL = SWEEPS / "friendliness.yaml"
QUICK = SWEEPS / "friendliness-quick.yaml"
PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
#: The reference's row name, and its stand-in TCP flow (on the dumbbell's last TCP pair).
REFERENCE = "tcp"
REF_FLOW = "ref"
ACCESS_DELAY = 0.001  # the dumbbell generator's access links (one each side)
PKT = 1500

#: Factor ranges (low, high); rate, RTT, queue factor and receivers on a log scale.
RANGES = {"rate_mbps": (1.0, 20.0), "rtt_ms": (20.0, 200.0), "queue_bdp": (0.5, 2.0),
          "tcp": (1, 4), "receivers": (2, 32)}
LOG = {"rate_mbps", "rtt_ms", "queue_bdp", "receivers"}


# The design ---------------------------------------------------------------------


def _level(factor: str, u: float) -> float:
    lo, hi = RANGES[factor]
    if factor in LOG:
        return lo * (hi / lo) ** u
    return lo + (hi - lo) * u


def design() -> list[dict[str, Any]]:
    """24 cells: 16 corners (2^(5-1), E = ABCD) and 8 Latin-hypercube interior cells."""
    cells = []
    names = list(RANGES)
    for signs in itertools.product((0, 1), repeat=4):
        fifth = sum(signs) % 2  # E = A*B*C*D in +-1 coding
        cells.append(dict(zip(names, (*(float(s) for s in signs), float(fifth)))))
    rng = random.Random(2026)
    perms = {f: rng.sample(range(8), 8) for f in names}
    for i in range(8):
        cells.append({f: (perms[f][i] + 0.5) / 8 for f in names})
    return [_cell(c) for c in cells]


def drawn(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` dumbbells drawn at random from the grid's ranges (``random.Random(seed)``).

    Each factor uniform on its own scale (log for rate, RTT, queue and
    receivers), TCP flows uniform in 1-4: cells none of the design's runs
    fix in advance, so a rule tuned to the 24 design cells shows here."""
    rng = random.Random(seed)
    return [_cell({f: rng.random() for f in RANGES}) for _ in range(n)]


def _cell(u: dict[str, float]) -> dict[str, Any]:
    rate = round(_level("rate_mbps", u["rate_mbps"]), 2)
    rtt = round(_level("rtt_ms", u["rtt_ms"]), 1)
    qf = _level("queue_bdp", u["queue_bdp"])
    tcp = min(4, 1 + int(u["tcp"] * 4)) if 0 < u["tcp"] < 1 else int(_level("tcp", u["tcp"]))
    rcv = int(round(_level("receivers", u["receivers"])))
    bdp = rate * 1e6 * rtt / 1e3 / 8 / PKT
    return {"rate_mbps": rate, "rtt_ms": rtt, "queue": max(10, int(round(qf * bdp))), "tcp": tcp,
            "receivers": rcv}


#: A cell is judged over at least this many TCP congestion epochs (``--epochs``): its run is
#: long enough that the second half, which the figures read, holds them.
EPOCHS = 3


def epoch_s(cell: dict[str, Any]) -> float:
    """One TCP congestion epoch in ``cell``: a flow's window climbs from half to full, one packet
    per round trip, where full is its share (the session counted as a flow) of the bandwidth-delay
    product plus the queue, and the round trip is the full queue's."""
    rate = cell["rate_mbps"] * 1e6
    rtt = cell["rtt_ms"] / 1e3
    window = (rate * rtt / 8 / PKT + cell["queue"]) / (cell["tcp"] + 1)
    return window / 2 * (rtt + cell["queue"] * PKT * 8 / rate)


def run_length(cell: dict[str, Any], floor: float, epochs: int = EPOCHS) -> float:
    """``floor`` seconds, or longer where ``epochs`` epochs need it in the second half (whole 10 s)."""
    need = 2 * epochs * epoch_s(cell)
    return float(max(floor, 10 * math.ceil(need / 10)))


def _with_send_jitter(base: dict[str, Any], send_jitter: str | None) -> dict[str, Any]:
    """``base`` with every host's simulated send-path time set (None: the scenario default).

    The grid's slow paths are sensitive to it (phase effects of the exact
    clock, docs/simulator.md), so the sensitivity is one option away."""
    if send_jitter is not None:
        base["tcp_jitter"] = base["agent_jitter"] = send_jitter
    return base


def _tcp_flows(count: int, start: float = 0.0) -> list[dict[str, Any]]:
    """TCP flows ``tcp<i>`` from ``tsrc<i>`` to ``tdst<i>`` for i in 1..count,
    starting ``start`` seconds into the run (0: the scenario default)."""
    return [{"name": f"tcp{i}", "src": f"tsrc{i}", "dst": f"tdst{i}", **({"start": start} if start else {})}
            for i in range(1, count + 1)]


def sweep_doc(cells: list[dict[str, Any]], seeds: list[int], duration: float, name: str,
              protocols: tuple[str, ...] = PROTOCOLS, switch: str = "p4",
              send_jitter: str | None = None, tcp_start: float = 0.0,
              variants: dict[str, list[Any]] | None = None, epochs: int = 0) -> dict[str, Any]:
    """The sweep file: one zipped group over (protocol, cell), crossed with the seeds.

    ``epochs``: each cell runs at least ``duration`` seconds, longer where that
    many TCP congestion epochs need it (``run_length``; 0: ``duration`` for all).

    ``tcp_start``: the TCP flows start this many seconds after the session,
    so the session has the link to itself first (``--tcp-start``).
    ``variants``: a zipped group (path -> values) crossed with the grid
    before it, e.g. ``sessions[0].profile`` and ``sessions[0].rules`` (``--ablate``)."""
    cols: dict[str, list[Any]] = defaultdict(list)
    for proto in protocols:
        for c in cells:
            rate_bps = int(c["rate_mbps"] * 1e6)
            cols["sessions[0].protocol"].append(proto)
            cols["sessions[0].params"].append({"session_rate_bps": 2 * rate_bps} if proto == "webrc" else {})
            cols["topology.generate.rate"].append(rate_bps)
            cols["topology.generate.delay"].append(round(c["rtt_ms"] / 2e3 - 2 * ACCESS_DELAY, 5))
            cols["topology.generate.queue"].append(c["queue"])
            cols["topology.generate.receivers"].append(c["receivers"])
            cols["topology.generate.tcp_pairs"].append(c["tcp"])
            cols["tcp_flows"].append(_tcp_flows(c["tcp"], tcp_start))
            if epochs:
                cols["duration"].append(run_length(c, duration, epochs))
    return {
        "name": name,
        "description": "TCP-friendliness grid of bench/friendliness.py (generated by --write-sweeps)",
        "switch": switch,
        "base": _with_send_jitter({
            "name": name,
            "duration": duration,
            "steady_window": 0.5,
            "topology": {"generate": {"kind": "dumbbell", "receivers": 2, "tcp_pairs": 1}},
            "sessions": [{"name": "mc", "protocol": "tfmcc", "sender": "snd1", "receivers": ["r*"]}],
            "tcp_flows": [{"name": "tcp1", "src": "tsrc1", "dst": "tdst1"}],
        }, send_jitter),
        "axes": {**({"variant": {"zip": variants}} if variants else {}),
                 "cell": {"zip": dict(cols)}, "seed": seeds},
        "metrics": {"kinds": ["session", "tcp"], "series": True},
    }


def reference_doc(cells: list[dict[str, Any]], seeds: list[int], duration: float, name: str,
                  switch: str = "p4", send_jitter: str | None = None, tcp_start: float = 0.0,
                  epochs: int = 0) -> dict[str, Any]:
    """The TCP reference's sweep: each cell with one more TCP flow (``ref``) in the session's place.

    The stand-in starts at 0 and the other flows at ``tcp_start``, as the
    session and the TCP flows of the grid do, so the reference sees the same
    start-up race a session does (and, with ``--tcp-start``, how far a TCP
    flow that holds the link gives way to late ones).  Cells that differ
    only in their receivers share one reference."""
    cols: dict[str, list[Any]] = defaultdict(list)
    seen: set[tuple[Any, ...]] = set()
    for c in cells:
        key = (c["rate_mbps"], c["rtt_ms"], c["queue"], c["tcp"])
        if key in seen:
            continue
        seen.add(key)
        n = c["tcp"] + 1
        cols["topology.generate.rate"].append(int(c["rate_mbps"] * 1e6))
        cols["topology.generate.delay"].append(round(c["rtt_ms"] / 2e3 - 2 * ACCESS_DELAY, 5))
        cols["topology.generate.queue"].append(c["queue"])
        cols["topology.generate.tcp_pairs"].append(n)
        cols["tcp_flows"].append(_tcp_flows(n - 1, tcp_start)
                                 + [{"name": REF_FLOW, "src": f"tsrc{n}", "dst": f"tdst{n}"}])
        if epochs:
            cols["duration"].append(run_length(c, duration, epochs))
    return {
        "name": name,
        "description": "TCP reference of the friendliness grid (bench/friendliness.py --reference)",
        "switch": switch,
        "base": _with_send_jitter({
            "name": name,
            "duration": duration,
            "steady_window": 0.5,
            "topology": {"generate": {"kind": "dumbbell", "pairs": 0, "tcp_pairs": 2}},
            "tcp_flows": [{"name": "tcp1", "src": "tsrc1", "dst": "tdst1"},
                          {"name": REF_FLOW, "src": "tsrc2", "dst": "tdst2"}],
        }, send_jitter),
        "axes": {"cell": {"zip": dict(cols)}, "seed": seeds},
        "metrics": {"kinds": ["tcp"], "series": True},
    }


#: The quick version's cells: four corners of moderate cost (rate <= 10 Mb/s, <= 8 receivers).
QUICK_CELLS = [
    {"rate_mbps": 1.0, "rtt_ms": 20.0, "queue": 10, "tcp": 1, "receivers": 2},
    {"rate_mbps": 1.0, "rtt_ms": 200.0, "queue": 33, "tcp": 2, "receivers": 8},
    {"rate_mbps": 4.0, "rtt_ms": 40.0, "queue": 27, "tcp": 1, "receivers": 4},
    {"rate_mbps": 10.0, "rtt_ms": 100.0, "queue": 42, "tcp": 4, "receivers": 2},
]


def write_sweeps() -> None:
    import yaml

    head = ("# Generated by bench/friendliness.py --write-sweeps (do not edit by hand).\n"
            "# Run: p4mcc sweep {f} --out results/sweeps/{n}; the table is printed by\n"
            "#      .venv/bin/python bench/friendliness.py{q}\n")
    for path, cells, seeds, dur, q in ((FULL, design(), [1, 2, 3], 200, ""),
                                       (QUICK, QUICK_CELLS, [1], 60, " --quick")):
        doc = sweep_doc(cells, seeds, dur, path.stem, epochs=EPOCHS)
        path.write_text(head.format(f=path.relative_to(ROOT), n=path.stem, q=q)
                        + yaml.safe_dump(doc, sort_keys=False, width=200))


# Figures from the table --------------------------------------------------------------


def _moving(xs: list[tuple[float, float]], window: float) -> list[tuple[float, float]]:
    out = []
    for i, (t, _) in enumerate(xs):
        vs = [v for (u, v) in xs[: i + 1] if u > t - window]
        out.append((t, statistics.fmean(vs)))
    return out


def cell_figures(rows: list[dict[str, Any]], series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per point: cell values, ratio, Jain, utilisation, time to 80 % of the fair share."""
    by_point: dict[int, dict[str, Any]] = {}
    tcp_sum: dict[int, float] = defaultdict(float)
    for r in rows:
        if r["kind"] == "session":
            by_point[r["point"]] = r
        elif r["kind"] == "tcp" and r["steady_throughput_bps"] is not None:
            tcp_sum[r["point"]] += r["steady_throughput_bps"]
    sess_series: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for s in series:
        if s["kind"] == "session":
            sess_series[s["point"]].append((s["time"], s["throughput_bps"]))
    out = []
    for point, r in sorted(by_point.items()):
        rate = r["topology.generate.rate"]
        ntcp = r["topology.generate.tcp_pairs"]
        fair = rate / (ntcp + 1)
        t80 = None
        for t, v in _moving(sorted(sess_series.get(point, [])), 2.0):
            if v >= 0.8 * fair:
                t80 = t
                break
        sess = r["steady_throughput_bps"] or 0.0
        out.append({
            "protocol": r["protocol"], "seed": r["seed"], "point": point,
            "cell": (rate, r["topology.generate.delay"], r["topology.generate.queue"], ntcp,
                     r["topology.generate.receivers"]),
            "rate_mbps": rate / 1e6, "rtt_ms": (r["topology.generate.delay"] + 2 * ACCESS_DELAY) * 2e3,
            "ratio": r["steady_tcp_friendliness"], "jain": r["steady_jain_with_tcp"],
            "util": (sess + tcp_sum[point]) / rate, "t80": t80, "stalls": r.get("stalls") or 0,
        })
    return out


def reference_figures(rows: list[dict[str, Any]], series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`cell_figures` for the reference: the ``ref`` flow in the session's place."""
    flows: dict[int, dict[str, float]] = defaultdict(dict)
    first: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["kind"] == "tcp":
            flows[r["point"]][r["flow"]] = r["steady_throughput_bps"] or 0.0
            first.setdefault(r["point"], r)
    ref_series: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for s in series:
        if s["kind"] == "tcp" and s["flow"] == REF_FLOW:
            ref_series[s["point"]].append((s["time"], s["throughput_bps"]))
    out = []
    for point, fl in sorted(flows.items()):
        r = first[point]
        rate = r["topology.generate.rate"]
        ntcp = r["topology.generate.tcp_pairs"] - 1
        ref = fl.get(REF_FLOW, 0.0)
        others = [v for f, v in fl.items() if f != REF_FLOW]
        mean_others = statistics.fmean(others) if others else 0.0
        t80 = None
        for t, v in _moving(sorted(ref_series.get(point, [])), 2.0):
            if v >= 0.8 * rate / (ntcp + 1):
                t80 = t
                break
        shares = [ref, *others]
        squares = sum(x * x for x in shares)
        out.append({
            "protocol": REFERENCE, "seed": r["seed"],
            "cell": (rate, r["topology.generate.delay"], r["topology.generate.queue"], ntcp, 0),
            "rate_mbps": rate / 1e6, "rtt_ms": (r["topology.generate.delay"] + 2 * ACCESS_DELAY) * 2e3,
            "ratio": ref / mean_others if mean_others > 0 else None,
            "jain": sum(shares) ** 2 / (len(shares) * squares) if squares > 0 else None,
            "util": sum(shares) / rate, "t80": t80,
        })
    return out


def per_cell(points: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """protocol -> cells, each averaged over its seeds (t80: the slowest seed; None if one never got there)."""
    acc: dict[tuple[str, tuple], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        acc[(p["protocol"], p["cell"])].append(p)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (proto, _), ps in acc.items():
        ratios = [p["ratio"] for p in ps if p["ratio"] is not None]
        t80s = [p["t80"] for p in ps]
        out[proto].append({
            **{k: ps[0][k] for k in ("cell", "rate_mbps", "rtt_ms")},
            "ratio": statistics.fmean(ratios) if ratios else 0.0,
            "jain": statistics.fmean(p["jain"] or 0.0 for p in ps),
            "util": statistics.fmean(p["util"] for p in ps),
            "t80": None if any(t is None for t in t80s) else max(t80s),
            "stalls": sum(p.get("stalls", 0) for p in ps),  # netsim/liveness.py, over the seeds
        })
    return out


def summary_rows(cells: dict[str, list[dict[str, Any]]], order: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """One row per key of ``cells`` in ``order`` (default: the protocols, then the reference)."""
    rows = []
    for proto in order or (*PROTOCOLS, REFERENCE):
        cs = cells.get(proto, [])
        if not cs:
            continue
        ratios = [c["ratio"] for c in cs]
        worst = max(ratios, key=lambda x: abs(math.log(x)) if x > 0 else math.inf)
        t80 = [c["t80"] for c in cs if c["t80"] is not None]
        rows.append({
            "protocol": proto, "cells": len(cs),
            "median": statistics.median(ratios), "worst": worst,
            "in_bound": sum(0.5 <= x <= 2 for x in ratios) / len(ratios),
            "jain": statistics.median(c["jain"] for c in cs),
            "util_median": statistics.median(c["util"] for c in cs),
            "util_min": min(c["util"] for c in cs),
            "t80_median": statistics.median(t80) if t80 else None,
            "never": sum(c["t80"] is None for c in cs),
            "stalls": sum(c.get("stalls", 0) for c in cs),
        })
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| protocol | cells | median ratio | worst ratio | cells in [0.5, 2] | Jain (median) "
             "| utilisation median / min | time to 80 % of fair share, median (cells never) | stalls |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = "-" if r["t80_median"] is None else f"{r['t80_median']:.1f} s"
        lines.append(f"| {r['protocol']} | {r['cells']} | {r['median']:.2f} | {r['worst']:.2f} | "
                     f"{r['in_bound']:.0%} | {r['jain']:.3f} | {r['util_median']:.2f} / {r['util_min']:.2f} | "
                     f"{t} ({r['never']}) | {r.get('stalls', 0)} |")
    return "\n".join(lines)


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for col in ("protocol", "cells", "median ratio", "worst ratio", "in [0.5, 2]", "Jain",
                "util median", "util min", "t80 median", "never 80 %", "stalls"):
        t.add_column(col, justify="left" if col == "protocol" else "right")
    for r in rows:
        t.add_row(r["protocol"], str(r["cells"]), f"{r['median']:.2f}", f"{r['worst']:.2f}",
                  f"{r['in_bound']:.0%}", f"{r['jain']:.3f}", f"{r['util_median']:.2f}",
                  f"{r['util_min']:.2f}", "-" if r["t80_median"] is None else f"{r['t80_median']:.1f} s",
                  str(r["never"]), str(r.get("stalls", 0)))
    Console(width=160).print(t)


def draw(cells: dict[str, list[dict[str, Any]]], out: Path, tag: str) -> list[Path]:
    """One picture per protocol: cells by bottleneck rate and RTT, coloured by the ratio (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for proto, cs in sorted(cells.items()):
        fig, ax = plt.subplots(figsize=(5.6, 4.4))
        xs = [c["rate_mbps"] for c in cs]
        ys = [c["rtt_ms"] for c in cs]
        vs = [min(max(c["ratio"], 1 / 16), 16) for c in cs]
        sizes = [40 + 12 * c["cell"][4] for c in cs]
        sc = ax.scatter(xs, ys, c=vs, s=sizes, cmap="RdBu_r", norm=LogNorm(vmin=1 / 8, vmax=8),
                        edgecolors="k", linewidths=0.5)
        for c, x, y in zip(cs, xs, ys):
            ax.annotate(f"{c['ratio']:.2f}", (x, y), textcoords="offset points", xytext=(0, 9),
                        ha="center", fontsize=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(0.8, 25)
        ax.set_ylim(16, 250)
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else ""))
        ax.set_xlabel("bottleneck, Mb/s")
        ax.set_ylabel("RTT, ms")
        ax.set_title(f"{proto}: steady-state ratio to TCP ({tag}); size ~ receivers", fontsize=9)
        bar = fig.colorbar(sc, label="mean receiver / mean TCP throughput")
        ticks = [1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8]
        bar.set_ticks(ticks, labels=["1/8", "1/4", "1/2", "1", "2", "4", "8"])
        bar.minorticks_off()
        fig.tight_layout()
        f = out / f"friendliness-{proto}.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files


def _chosen_cells(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.draw:
        return drawn(args.draw, args.draw_seed)
    cells = QUICK_CELLS if args.quick else design()
    if args.cells:
        try:
            cells = [cells[int(i)] for i in args.cells.split(",")]
        except (ValueError, IndexError):
            raise SystemExit(f"friendliness: --cells: indices 0-{len(cells) - 1} expected, got {args.cells!r}")
    return cells


def _seeds_and_duration(args: argparse.Namespace) -> tuple[list[int], float]:
    return (list(range(1, (args.seeds or (1 if args.quick else 3)) + 1)),
            args.duration or (60.0 if args.quick else 200.0))


def _subset_sweep(args: argparse.Namespace, out: Path) -> Path:
    """A sweep file for part of the grid, written into the output folder (not into bench/)."""
    import yaml

    protocols = tuple(p.strip() for p in args.protocols.split(",")) if args.protocols else PROTOCOLS
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        raise SystemExit(f"friendliness: --protocols: unknown {', '.join(unknown)} (known: {', '.join(PROTOCOLS)})")
    cells = _chosen_cells(args)
    seeds, duration = _seeds_and_duration(args)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "friendliness-subset.yaml"
    variants = None
    if args.profile or args.rule:
        from bench.trees import session_variant

        variants = {f"sessions[0].{k}": [v] for k, v in session_variant(args).items()}
    doc = sweep_doc(cells, seeds, duration, "friendliness-subset", protocols, args.switch, args.send_jitter,
                    args.tcp_start, variants=variants, epochs=args.epochs)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    return path


def _reference_sweep(args: argparse.Namespace, out: Path) -> Path:
    """The TCP reference's sweep file for the same cells, seeds and duration, in its own folder."""
    import yaml

    seeds, duration = _seeds_and_duration(args)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "friendliness-reference.yaml"
    doc = reference_doc(_chosen_cells(args), seeds, duration, "friendliness-reference", args.switch,
                        args.send_jitter, args.tcp_start, epochs=args.epochs)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    return path


def _sweep(sweep_file: Path, out: Path, scheduler: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Run (or resume) one sweep through ``p4mcc sweep``; its table and series, or None if it failed."""
    import pyarrow.parquet as pq

    cmd = [sys.executable, "-m", "p4mcc.cli.main", "sweep", str(sweep_file), "--out", str(out)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    done = subprocess.run(cmd)
    if done.returncode != 0:
        print(f"friendliness: p4mcc sweep failed ({done.returncode}); run it again to resume", file=sys.stderr)
        return None
    return pq.read_table(out / "results.parquet").to_pylist(), pq.read_table(out / "series.parquet").to_pylist()


def ablation_doc(proto: str, args: argparse.Namespace, name: str) -> tuple[dict[str, Any], list[Any]]:
    """The ablation's sweep file for ``proto`` (its variants crossed with the
    chosen cells and seeds) and the variants (``bench/ablation.py``)."""
    from bench import ablation
    from p4mcc.hosts import registry

    vs = ablation.variants(registry.get(proto).rules, plus=not args.no_plus)
    if getattr(args, "variants", None):
        try:
            vs = ablation.chosen(vs, args.variants)
        except ValueError as e:
            raise SystemExit(f"friendliness: {e}") from None
    seeds, duration = _seeds_and_duration(args)
    doc = sweep_doc(_chosen_cells(args), seeds, duration, name, (proto,), args.switch, args.send_jitter,
                    args.tcp_start, variants=ablation.axis(vs), epochs=args.epochs)
    doc["description"] = f"ablation of {proto}'s rules on the friendliness grid (bench/friendliness.py --ablate)"
    return doc, vs


def _ablate(args: argparse.Namespace, argv: list[str]) -> int:
    """``--ablate PROTO``: every variant of the protocol's rules on the grid, beside ``default``."""
    import yaml

    from bench import ablation
    from p4mcc.hosts import registry

    proto = args.ablate
    if proto not in PROTOCOLS:
        raise SystemExit(f"friendliness: --ablate: unknown protocol {proto!r} (known: {', '.join(PROTOCOLS)})")
    stem = f"ablate-{proto}" + ("-quick" if args.quick else "") + (
        f"-draw{args.draw}-seed{args.draw_seed}" if args.draw else "")
    out = Path(args.out or ROOT / "results" / "sweeps" / stem)
    out.mkdir(parents=True, exist_ok=True)
    doc, vs = ablation_doc(proto, args, stem)
    path = out / "ablation.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    ran = _sweep(path, out, args.scheduler)
    if ran is None:
        return 1
    rows, series = ran
    names = ablation.variant_of_rows(rows, vs)
    points = cell_figures(rows, series)
    for p in points:
        p["protocol"] = names[p["point"]]
    cells = per_cell(points)
    figs = {v.name: ablation.figures(v.name, cells[v.name]) for v in vs if cells.get(v.name)}
    if args.faults:
        from bench import faults

        cases = list(faults.QUICK) if args.quick else sorted(
            p.stem for p in faults.SCENARIOS.glob("*.yaml") if p.stem != "processes")
        for v in vs:
            for case in cases:
                row = faults.run_one(case, proto, profile=v.profile, rules=v.switches)
                if ablation.fault_failed(row):
                    figs[v.name].faults_failed.append(case)
    seeds, duration = _seeds_and_duration(args)
    tag = (f"{args.draw} drawn dumbbells, seed {args.draw_seed}" if args.draw
           else f"{len(_chosen_cells(args))} {'quick ' if args.quick else ''}grid cells") + (
        f", {len(seeds)} seed{'s' if len(seeds) > 1 else ''}, {duration:g} s runs")
    table = ablation.table_rows(figs, vs, args.faults)
    ablation.print_rows(table, f"{proto}: each rule measured ({tag}; steady state = second half)")
    skipped = ablation.stamp_only(registry.get(proto).rules)
    if skipped:
        print(f"not measured here (they read the congestion stamp only; bench/assistance.py --stamp): "
              f"{', '.join(skipped)}")
    if args.docs:
        from bench.docsection import write_section

        page = ROOT / ablation.page(proto)
        section = f"ablation-{proto}-draws" if args.draw else f"ablation-{proto}"
        kept = None
        if args.merge:
            from bench.docsection import sections

            every = ablation.variants(registry.get(proto).rules, plus=not args.no_plus)
            try:
                kept = ablation.merged(sections(page.read_text()).get(section, ""), table, every)
            except ValueError as e:
                raise SystemExit(f"friendliness: {e}") from None
        body = ablation.docs_body(table, proto, tag, drawn=bool(args.draw), skipped=skipped, table=kept)
        write_section(page, section, body,
                      "bench/friendliness.py " + " ".join(argv))
        print(f"wrote the {section} section of {page.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 protocols x 4 cells, 1 seed, 60 s runs")
    ap.add_argument("--out", help="sweep output folder (default results/sweeps/<sweep name>)")
    ap.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    ap.add_argument("--docs", action="store_true", help="write the pictures to docs/img/ and print "
                                                         "the Markdown table for docs/friendliness.md")
    ap.add_argument("--write-sweeps", action="store_true", help="regenerate bench/sweeps/friendliness*.yaml")
    ap.add_argument("--protocols", help="comma-separated subset of the protocols (default: all five)")
    ap.add_argument("--seeds", type=int, help="seeds 1..N (default: 3, or 1 with --quick)")
    ap.add_argument("--duration", type=float, help="seconds per run (default: 200, or 60 with --quick)")
    ap.add_argument("--epochs", type=int, default=EPOCHS,
                    help=f"a cell runs longer than --duration where its second half needs it to hold this many "
                         f"TCP congestion epochs (default {EPOCHS}; 0: every cell --duration)")
    ap.add_argument("--per-cell", action="store_true", help="also print every cell's figures")
    ap.add_argument("--cells", help="comma-separated cell indices of the grid (0-23; default: all)")
    ap.add_argument("--draw", type=int, metavar="N",
                    help="instead of the design, N dumbbells drawn at random from the same ranges "
                         "(off the grid: a check that no rule is tuned to the design's cells)")
    ap.add_argument("--draw-seed", type=int, default=1, metavar="S",
                    help="the draw's random.Random seed (default 1); the same N and S give the same cells")
    ap.add_argument("--switch", choices=["p4", "model"], default="p4",
                    help="switch nodes (default p4, as p4mcc sim); model: 2-4x cheaper, no switch "
                         "assistance (MTCP's fold, TFMCC's filter), the end-to-end protocols alone")
    ap.add_argument("--reference", action="store_true",
                    help="also run each cell with one more TCP flow in the session's place and print "
                         "its figures as the row 'tcp' (its ratio: that flow over the others' mean)")
    ap.add_argument("--send-jitter", metavar="TIME",
                    help="every host's simulated send-path time (tcp_jitter and agent_jitter, e.g. 10ms, or "
                         "auto: one 1500-byte frame's service time on the cell's bottleneck; "
                         "default: the scenario default), for the grid's sensitivity to phase effects")
    ap.add_argument("--tcp-start", type=float, default=0.0, metavar="S",
                    help="the TCP flows start S seconds after the session (default 0: together), so the "
                         "session holds the link alone first and TCP arrives on it; the ratio is still "
                         "taken over the second half")
    ap.add_argument("--ablate", metavar="PROTO",
                    help="measure each of PROTO's named rules: default, paper, default minus each rule, "
                         "default plus each rule outside it and paper plus each rule on the grid (or --draw), "
                         "side by side with default "
                         "(bench/ablation.py); with --docs the table goes into docs/protocols/PROTO-ablation.md")
    ap.add_argument("--no-plus", action="store_true",
                    help="with --ablate: only default, paper, default minus each rule and default plus each "
                         "rule outside it (no paper plus each rule: half the runs; the verdicts are the same)")
    ap.add_argument("--faults", action="store_true",
                    help="with --ablate: also run bench/faults.py's fault cases (--quick: four) per variant")
    ap.add_argument("--variants", metavar="NAMES",
                    help="with --ablate: default and these variants only (comma-separated, as the table "
                         "names them, e.g. 'paper,default -R'), for a change that moves a few arms")
    ap.add_argument("--merge", action="store_true",
                    help="with --ablate --variants --docs: keep the page's rows of the variants not rerun "
                         "(refused unless default's row is unchanged); rows of removed rules go")
    ap.add_argument("--design", choices=["grid", "trees"], default="grid",
                    help="grid: the dumbbells (default); trees: receivers behind 2-4 different bottlenecks, "
                         "each with its own TCP load, some with a lossy leaf (bench/trees.py)")
    ap.add_argument("--profile", help="the session's profile (default: the protocol's default)")
    ap.add_argument("--rule", action="append", metavar="NAME=on|off",
                    help="turn one rule on or off in every session (repeatable; with one protocol)")
    args = ap.parse_args(argv)
    if args.design == "trees":
        if args.ablate or args.reference or args.faults or args.write_sweeps or args.tcp_start or args.send_jitter:
            raise SystemExit("friendliness: --design trees: not with --ablate, --reference, --faults, "
                             "--write-sweeps, --tcp-start or --send-jitter")
        if args.draw is not None and (args.draw < 1 or args.cells):
            raise SystemExit("friendliness: --draw: a positive count expected, and not with --cells")
        from bench import trees

        return trees.run(args, sys.argv[1:] if argv is None else list(argv), ROOT)
    if (args.profile or args.rule) and (args.ablate or args.reference):
        raise SystemExit("friendliness: --profile and --rule: not with --ablate or --reference")
    if args.no_plus and not args.ablate:
        raise SystemExit("friendliness: --no-plus: only with --ablate")
    if args.faults and not args.ablate:
        raise SystemExit("friendliness: --faults: only with --ablate")
    if args.variants and not args.ablate:
        raise SystemExit("friendliness: --variants: only with --ablate")
    if args.merge and not (args.variants and args.docs):
        raise SystemExit("friendliness: --merge: only with --ablate --variants --docs")
    if not 0 <= args.tcp_start < _seeds_and_duration(args)[1] / 2:
        raise SystemExit(f"friendliness: --tcp-start: seconds from 0 to less than half the run expected, "
                         f"got {args.tcp_start}")
    if args.send_jitter is not None and args.send_jitter != SEND_PATH_AUTO:
        from p4mcc.p4switch.units import parse_time

        try:
            if not 0 <= parse_time(args.send_jitter) <= SEND_PATH_MAX:
                raise ValueError("outside 0-100ms")
        except ValueError as e:
            raise SystemExit(f"friendliness: --send-jitter: a time of 0-100ms or 'auto' expected, "
                             f"got {args.send_jitter!r} ({e})")
    if args.write_sweeps:
        write_sweeps()
        print(f"wrote {FULL.relative_to(ROOT)} and {QUICK.relative_to(ROOT)}")
        return 0
    if args.draw is not None and (args.draw < 1 or args.cells):
        raise SystemExit("friendliness: --draw: a positive count expected, and not with --cells")
    if args.ablate:
        return _ablate(args, sys.argv[1:] if argv is None else list(argv))
    sweep_file = QUICK if args.quick else FULL
    stem = f"friendliness-draw{args.draw}-seed{args.draw_seed}" if args.draw else sweep_file.stem
    if args.tcp_start:
        stem += f"-tcp-start{args.tcp_start:g}"
    out = Path(args.out or ROOT / "results" / "sweeps" / stem)
    if (args.protocols or args.seeds or args.duration or args.cells or args.draw or args.switch != "p4"
            or args.send_jitter or args.tcp_start or args.profile or args.rule or args.epochs != EPOCHS):
        sweep_file = _subset_sweep(args, out)
    ran = _sweep(sweep_file, out, args.scheduler)
    if ran is None:
        return 1
    points = cell_figures(*ran)
    if args.reference:
        ref_out = out / "reference"
        ref = _sweep(_reference_sweep(args, ref_out), ref_out, args.scheduler)
        if ref is None:
            return 1
        points += reference_figures(*ref)
    cells = per_cell(points)
    summary = summary_rows(cells)
    tag = (f"{args.draw} drawn dumbbells, seed {args.draw_seed}" if args.draw
           else "quick" if args.quick else "full grid")
    if args.per_cell:
        for proto, cs in sorted(cells.items()):
            for c in sorted(cs, key=lambda c: c["cell"]):
                rate, delay, queue, ntcp, nrcv = c["cell"]
                t80 = "never" if c["t80"] is None else f"{c['t80']:.1f} s"
                print(f"{proto:6} {rate / 1e6:6.2f} Mb/s {c['rtt_ms']:6.1f} ms queue {queue:4} tcp {ntcp} "
                      f"rcv {nrcv:3}: ratio {c['ratio']:.2f} jain {c['jain']:.3f} util {c['util']:.2f} t80 {t80}")
    conditions = f"; send-path time {args.send_jitter}" if args.send_jitter is not None else ""
    if args.tcp_start:
        conditions += f"; TCP starts {args.tcp_start:g} s after the session"
    print_table(summary, f"TCP-friendliness with default parameters ({tag}; steady state = second half{conditions})")
    img = ROOT / "docs" / "img" if args.docs else out / "plots"
    files = draw(cells, img, tag)
    print(f"pictures: {', '.join(str(f) for f in files)}")
    if args.docs:
        print(markdown_table(summary))
        from bench import docsection

        pictures = " ".join(f"![{f.stem}](img/{f.name})" for f in files)
        docsection.write_section(ROOT / "docs" / "friendliness.md", "friendliness-grid",
                                 f"{tag}; steady state = second half{conditions}\n\n{markdown_table(summary)}"
                                 f"\n\n{pictures}", docsection.command_line("bench/friendliness.py", argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
