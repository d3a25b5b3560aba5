"""``p4mcc sweep SWEEP.yaml --out DIR``: run a parameter sweep (docs/sweeps.md)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a parameter sweep over a scenario (all cores, or a Dask cluster)")
    p.add_argument("sweep", help="sweep file (YAML or JSON): a base scenario and the axes to vary")
    p.add_argument("--out", help="output folder (default results/sweeps/<sweep name>); "
                                 "points already finished there are not run again")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="Dask scheduler address (tcp://HOST:8786) of an existing cluster; "
                        "'serial' runs the points one by one in this process; "
                        "default: a local cluster with one worker per core")
    p.add_argument("--workers", type=int, metavar="N", help="local cluster size (default: one per core)")
    p.add_argument("--keep-results", action="store_true",
                   help="also write every point's full results folder (DIR/points/<id>/)")
    p.add_argument("--fresh", action="store_true", help="forget finished points in DIR and run everything")
    p.add_argument("--list", action="store_true", help="list the points and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from rich.console import Console

    from p4mcc.sweep.spec import SweepError, load_sweep, validate
    from p4mcc.sweep.store import Store

    try:
        sw = load_sweep(args.sweep)
        if args.keep_results:
            sw = replace(sw, keep_results=True)
        points = validate(sw)
    except SweepError as e:
        print(f"p4mcc sweep: {args.sweep}: invalid sweep:", file=sys.stderr)
        for prob in e.problems:
            print(f"  {prob}", file=sys.stderr)
        return 2
    from p4mcc.sweep.execute import check_scheduler

    problem = check_scheduler(args.scheduler)
    if problem:
        print(f"p4mcc sweep: --scheduler: {problem}", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("p4mcc sweep: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.list:
        for p in points:
            print(p.index, p.id, " ".join(f"{k}={v}" for k, v in p.values.items()))
        return 0
    out = Path(args.out or f"results/sweeps/{sw.name}")
    store = Store(out)
    if args.fresh:
        store.clear()
    console = Console(stderr=True)
    from p4mcc.sweep.execute import run_sweep

    try:
        res = run_sweep(sw, out, scheduler=args.scheduler, workers=args.workers,
                        progress=not args.quiet, console=console)
    except KeyboardInterrupt:
        print(f"p4mcc sweep: stopped; finished points are kept in {out}/points "
              f"(run the same command to resume)", file=sys.stderr)
        return 130
    except OSError as e:  # e.g. the scheduler address does not answer
        print(f"p4mcc sweep: {e}", file=sys.stderr)
        return 1
    if res.table is None:
        return 1
    print(f"{res.points} points: {res.ran} run, {res.skipped} already done, {len(res.failed)} failed; "
          f"{res.wall_s:.1f} s wall" + (f" on {res.workers} workers" if res.workers else ""))
    for p, err in res.failed[:20]:
        print(f"  point {p.index} ({', '.join(f'{k}={v!r}' for k, v in p.values.items())}): {err}",
              file=sys.stderr)
    print(f"table: {res.table} (DuckDB: {out / 'results.duckdb'}); plots: p4mcc report {out}")
    return 1 if res.failed else 0
