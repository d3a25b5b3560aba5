"""Do the two engines agree?  One scenario in `p4mcc sim` and in `p4mcc run`.

Runs each scenario in the simulator and in Mininet (the latter needs root)
and prints, per flow (every multicast receiver and every TCP flow), the
steady-state throughput, loss and RTT of both engines side by side with the
ratio Mininet / simulator.  The figures are the results' own steady-state
fields (``steady_throughput_bps``, ``steady_loss``, ``steady_rtt_s`` of
``summary.json``), so the window is the one both runs report.

    sudo .venv/bin/python bench/engines.py --out results/engines
    sudo .venv/bin/python bench/engines.py --out results/engines --repeat 3
    .venv/bin/python bench/engines.py --out results/engines --compare-only

By default the demo, the demo with the congestion stamp (``demo-stamp``:
both sessions with ``assistance: stamp``, so the switches' queue metadata
shapes every data packet in both engines) and two paper scenarios run:
WEBRC's equation check (equation-based: one receiver behind a lossy 0.2 s
RTT path) and VLMCC's Fig. 4 (window-based, with a TCP flow on a 1 Mb/s
bottleneck), each for 60 s.  ``--stamp`` runs the stamped demo alone.  A result folder
that already holds a ``summary.json`` is reused, so a run that was stopped
goes on where it was; ``--fresh`` runs everything again.  ``--lock FILE``
holds an exclusive ``flock`` on FILE around each Mininet run (for a machine
where several users build Mininet networks).  With ``--repeat N`` every
engine runs N times (seeds 1..N unless ``--same-seed``) and the table shows
the median with the spread (min-max) of the Mininet runs.

``--target bmv2`` runs Mininet with BMv2 switches (``p4mcc run --target
bmv2``; links shaped as docs/emulation.md says), ``--target builtin`` with
the built-in switch (the default); each target keeps its own result folders
(``mininet-bmv2-N``, ``mininet-N``), so both can sit beside one simulator run.

``--check 0.2`` exits non-zero when a flow's Mininet throughput is not
within 20 % of the simulator's.  ``--docs`` writes the table into
docs/emulation.md's generated section ``engines-<target>``: the rows of the
scenarios it ran replace theirs, the other scenarios' rows stay.

    sudo env PATH=$PATH .venv/bin/python bench/engines.py --target bmv2 --out results/engines --docs
    sudo .venv/bin/python bench/engines.py --stamp --out results/engines --check 0.2 --docs
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "topologies" / "scenarios"
STAMP_SCENARIOS = (str(SCEN / "demo-stamp.yaml"),)
DEFAULT_SCENARIOS = (
    str(SCEN / "demo.yaml"),
    *STAMP_SCENARIOS,
    str(SCEN / "paper" / "webrc-equation.yaml"),
    str(SCEN / "paper" / "vlmcc-fig4.yaml"),
)
ENGINES = {"sim": "sim", "mininet": "run"}


@dataclass
class FlowFigures:
    """One flow's steady-state figures in one run."""

    throughput_bps: float | None
    loss: float | None
    rtt_s: float | None


def flows_of(summary: dict[str, Any]) -> dict[str, FlowFigures]:
    """``session/receiver`` and ``tcp/name`` -> steady-state figures."""
    out: dict[str, FlowFigures] = {}
    for name, s in sorted(summary.get("sessions", {}).items()):
        for node, r in sorted(s.get("receivers", {}).items()):
            out[f"{name}/{node}"] = FlowFigures(r.get("steady_throughput_bps"), r.get("steady_loss"),
                                                r.get("steady_rtt_s"))
    for name, t in sorted(summary.get("tcp_flows", {}).items()):
        out[f"tcp/{name}"] = FlowFigures(t.get("steady_throughput_bps"), t.get("steady_loss"),
                                         t.get("steady_rtt_s"))
    return out


def run_engine(engine: str, scenario: str, out: Path, *, duration: float | None, seed: int,
               lock: str | None, fresh: bool, target: str = "builtin") -> dict[str, Any] | None:
    """Run one engine on one scenario into ``out`` (reused when it has a summary)."""
    summary = out / "summary.json"
    if summary.exists() and not fresh:
        return json.loads(summary.read_text())
    cmd = [sys.executable, "-m", "p4mcc.cli.main", ENGINES[engine], scenario, "--out", str(out),
           "--seed", str(seed)]
    if duration is not None:
        cmd += ["--duration", f"{duration:g}"]
    cmd += ["--quiet"] if engine == "sim" else ["--no-progress", "--target", target]
    if engine == "mininet" and lock:
        cmd = ["flock", lock, *cmd]
    print(f"# {engine}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not summary.exists():
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        print(f"# {engine} {Path(scenario).name} failed ({proc.returncode}): {tail}", file=sys.stderr)
        return None
    return json.loads(summary.read_text())


def _med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _fmt(x: float | None, scale: float = 1.0, spec: str = ".3f") -> str:
    return "-" if x is None else format(x * scale, spec)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def compare(name: str, runs: dict[str, list[dict[str, Any]]]) -> tuple[list[str], list[float]]:
    """Markdown rows of one scenario, and every flow's throughput ratio."""
    per: dict[str, dict[str, list[FlowFigures]]] = {e: {} for e in ENGINES}
    for engine, summaries in runs.items():
        for s in summaries:
            for flow, f in flows_of(s).items():
                per[engine].setdefault(flow, []).append(f)
    rows, ratios = [], []
    for flow in sorted(set(per["sim"]) | set(per["mininet"])):
        cols: list[str] = [name, flow]
        med: dict[str, dict[str, float | None]] = {}
        for engine in ENGINES:
            fs = per[engine].get(flow, [])
            med[engine] = {k: _med([getattr(f, k) for f in fs if getattr(f, k) is not None])
                           for k in ("throughput_bps", "loss", "rtt_s")}
        thr_m = [f.throughput_bps for f in per["mininet"].get(flow, []) if f.throughput_bps is not None]
        spread = f" ({min(thr_m) / 1e6:.2f}-{max(thr_m) / 1e6:.2f})" if len(thr_m) > 1 else ""
        r = _ratio(med["mininet"]["throughput_bps"], med["sim"]["throughput_bps"])
        if r is not None:
            ratios.append(r)
        cols += [_fmt(med["sim"]["throughput_bps"], 1e-6), _fmt(med["mininet"]["throughput_bps"], 1e-6) + spread,
                 _fmt(r, spec=".2f"),
                 _fmt(med["sim"]["loss"], spec=".4f"), _fmt(med["mininet"]["loss"], spec=".4f"),
                 _fmt(_ratio(med["mininet"]["loss"], med["sim"]["loss"]), spec=".2f"),
                 _fmt(med["sim"]["rtt_s"]), _fmt(med["mininet"]["rtt_s"]),
                 _fmt(_ratio(med["mininet"]["rtt_s"], med["sim"]["rtt_s"]), spec=".2f")]
        rows.append("| " + " | ".join(cols) + " |")
    return rows, ratios


HEADER = ("| scenario | flow | sim Mb/s | Mininet Mb/s | thr M/S | sim loss | Mininet loss | loss M/S "
          "| sim RTT s | Mininet RTT s | RTT M/S |\n|---|---|---|---|---|---|---|---|---|---|---|")
DOCS_PAGE = ROOT / "docs" / "emulation.md"
TARGET_NAMES = {"builtin": "the built-in switch", "bmv2": "BMv2 (simple_switch_grpc)"}


def run_dir(engine: str, target: str, i: int) -> str:
    """A run's folder name: the built-in switch's keep the historical ``mininet-N``."""
    if engine == "mininet" and target != "builtin":
        return f"mininet-{target}-{i}"
    return f"{engine}-{i}"


def docs_body(target: str, rows: list[str], ratios: list[float], tol: float) -> str:
    """The generated section: the table, and how many flows sit within the tolerance."""
    inside = sum(1 for r in ratios if abs(r - 1) <= tol)
    return (f"Mininet on {TARGET_NAMES.get(target, target)} against the simulator, steady-state "
            f"figures per flow (M/S: Mininet / simulator).  {inside} of {len(ratios)} flows' "
            f"throughput within ±{tol:.0%}.\n\n" + HEADER + "\n" + "\n".join(rows))


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def merge_rows(old_body: str | None, rows: list[str]) -> list[str]:
    """The section's table rows with those of the scenarios in ``rows`` replaced
    (in place; a scenario new to the table goes last), every other row kept."""
    new: dict[str, list[str]] = {}
    for row in rows:
        new.setdefault(_cells(row)[0], []).append(row)
    out: list[str] = []
    placed: set[str] = set()
    for line in (old_body or "").splitlines():
        if not line.startswith("| ") or line.startswith("| scenario"):
            continue
        name = _cells(line)[0]
        if name not in new:
            out.append(line)
        elif name not in placed:
            out += new[name]
            placed.add(name)
    for name, rs in new.items():
        if name not in placed:
            out += rs
    return out


def row_ratio(row: str) -> float | None:
    """A table row's throughput ratio (thr M/S), None where a figure is missing."""
    cell = _cells(row)[4]
    return None if cell == "-" else float(cell)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", help="scenario files (default: the demo, the stamped demo "
                    "and two paper scenarios)")
    ap.add_argument("--stamp", action="store_true",
                    help="run the demo with the congestion stamp alone (topologies/scenarios/demo-stamp.yaml)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "engines", help="results folder")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds per run (0: the scenario's own)")
    ap.add_argument("--engines", default="sim,mininet", help="comma list of sim, mininet")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine and scenario")
    ap.add_argument("--same-seed", action="store_true", help="every repeat with seed 1")
    ap.add_argument("--lock", help="flock this file around every Mininet run")
    ap.add_argument("--fresh", action="store_true", help="run again even where results exist")
    ap.add_argument("--compare-only", action="store_true", help="run nothing, compare what is in --out")
    ap.add_argument("--check", type=float, metavar="TOL",
                    help="exit 1 unless every flow's throughput ratio is within 1 +- TOL")
    ap.add_argument("--target", choices=["builtin", "bmv2"], default="builtin",
                    help="the switches of the Mininet runs (default builtin)")
    ap.add_argument("--docs", action="store_true",
                    help=f"write the table into {DOCS_PAGE.relative_to(ROOT)} (section engines-TARGET)")
    args = ap.parse_args(argv)
    if args.stamp and args.scenarios:
        print("engines.py: --stamp picks the scenario itself; give no scenario files with it", file=sys.stderr)
        return 2
    scenarios = list(STAMP_SCENARIOS if args.stamp else args.scenarios or DEFAULT_SCENARIOS)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    bad = [e for e in engines if e not in ENGINES]
    if bad:
        print(f"engines.py: unknown engine {bad[0]!r} (sim, mininet)", file=sys.stderr)
        return 2
    duration = args.duration or None
    print(HEADER)
    worst: list[float] = []
    all_rows: list[str] = []
    for scen in scenarios:
        name = Path(scen).stem
        runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
        for i in range(args.repeat):
            seed = 1 if args.same_seed else i + 1
            for engine in ENGINES:
                out = args.out / name / run_dir(engine, args.target, i + 1)
                if args.compare_only or engine not in engines:
                    if (out / "summary.json").exists():
                        runs[engine].append(json.loads((out / "summary.json").read_text()))
                    continue
                s = run_engine(engine, scen, out, duration=duration, seed=seed, lock=args.lock,
                               fresh=args.fresh, target=args.target)
                if s is not None:
                    runs[engine].append(s)
        rows, ratios = compare(name, runs)
        worst += ratios
        all_rows += rows
        print("\n".join(rows), flush=True)
    if args.docs:
        sys.path.insert(0, str(ROOT))
        from bench.docsection import sections, write_section

        cmd = "bench/engines.py " + " ".join(argv if argv is not None else sys.argv[1:])
        section = f"engines-{args.target}"
        rows = merge_rows(sections(DOCS_PAGE.read_text()).get(section), all_rows)
        ratios = [r for r in map(row_ratio, rows) if r is not None]
        write_section(DOCS_PAGE, section, docs_body(args.target, rows, ratios, args.check or 0.2), cmd)
    if args.check is not None:
        off = [r for r in worst if abs(r - 1) > args.check]
        if off or not worst:
            print(f"# {len(off)} of {len(worst)} flows outside 1 +- {args.check}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
