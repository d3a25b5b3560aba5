"""How much faster a sweep runs on a local Dask cluster than point by point.

Runs the 40 points of ``bench/sweeps/speed.yaml`` twice: serially in this
process (what a loop over ``p4mcc sim`` runs do, without the start-up cost of
each process), then through ``p4mcc sweep``'s default executor, a local
cluster with one worker per core (its start-up included in the time).  Prints
both wall times, the speed-up, and whether the two tables are equal (they
must be, bit for bit).  The machine's load average and the CPU seconds the
points took are printed too: on a shared machine other processes take the
cores, and the CPU-over-wall ratio shows how much of them the sweep got.

    .venv/bin/python bench/sweep_speed.py              # 40 points
    .venv/bin/python bench/sweep_speed.py --points 8   # the first 8 only
    .venv/bin/python bench/sweep_speed.py --duration 30  # longer points, as real sweeps have
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SWEEP = ROOT / "bench" / "sweeps" / "speed.yaml"


def main(argv: list[str] | None = None) -> int:
    import pyarrow.parquet as pq

    from p4mcc.sweep.execute import default_workers, run_sweep
    from p4mcc.sweep.spec import load_sweep, validate
    from p4mcc.sweep.store import RESULTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, help="run only the first N points")
    ap.add_argument("--workers", type=int, default=default_workers(), help="local cluster size")
    ap.add_argument("--duration", type=float, help="simulated seconds per point (default: the file's 10 s)")
    args = ap.parse_args(argv)
    sw = load_sweep(SWEEP)
    if args.duration:
        sw.base["duration"] = args.duration
    points = validate(sw)
    if args.points:
        points = points[: args.points]
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="p4mcc-sweep-speed-") as d:
        times: dict[str, float] = {}
        cpu: dict[str, float] = {}
        busy: dict[str, float] = {}
        for mode, sched in (("serial", "serial"), ("local cluster", None)):
            out = Path(d) / mode.replace(" ", "-")
            t0 = time.perf_counter()
            res = run_sweep(sw, out, scheduler=sched, workers=args.workers, progress=False, points=points)
            times[mode] = time.perf_counter() - t0
            from p4mcc.sweep.store import Store

            st = Store(out)
            cpu[mode] = sum(st.load(p.id).get("cpu_s", 0.0) for p in points)
            busy[mode] = sum(st.load(p.id).get("wall_s", 0.0) for p in points)
            if res.failed:
                print(f"{mode}: {len(res.failed)} points failed: {res.failed[0][1]}", file=sys.stderr)
                return 1
        same = pq.read_table(Path(d) / "serial" / RESULTS).equals(pq.read_table(Path(d) / "local-cluster" / RESULTS))
    print(f"{len(points)} points of {SWEEP.relative_to(ROOT)} on {os.cpu_count()} cores "
          f"(load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print(f"  serial, one process:          {times['serial']:7.1f} s wall, "
          f"{cpu['serial']:6.1f} s CPU in the points")
    print(f"  local cluster, {args.workers} workers:     {times['local cluster']:7.1f} s wall, "
          f"{cpu['local cluster']:6.1f} s CPU in the points (cluster start-up included in wall)")
    print(f"  speed-up: {times['serial'] / times['local cluster']:.2f}x; tables equal: {same}")
    print(f"  points running at once on average: serial {busy['serial'] / times['serial']:.2f}, "
          f"cluster {busy['local cluster'] / times['local cluster']:.2f}; cores the run got: "
          f"serial {cpu['serial'] / times['serial']:.2f}, cluster {cpu['local cluster'] / times['local cluster']:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
