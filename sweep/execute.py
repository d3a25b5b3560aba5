"""Run a sweep's points: in this process, on a local Dask cluster, or on a remote one.

The default is a Dask ``LocalCluster`` with one single-threaded worker
process per core (the simulator is pure Python, so processes, not threads,
use the cores).  ``scheduler='tcp://HOST:8786'`` submits the same tasks to an
existing cluster; its workers need only ``pip install p4mcc`` because every
task carries its scenario and the P4 program (see :mod:`sweep.point`).
``scheduler='serial'`` runs the points one after another in this process
(what the benchmark compares against, and a way to debug a point).

Each point is one Dask task.  When a worker dies, the scheduler re-runs the
tasks that were running on it elsewhere (Dask's own recovery, up to its
``allowed-failures`` limit), so a death costs only the running point.
Finished points are saved as they arrive; an interrupted sweep resumes from
them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from p4mcc.sweep.point import program_sources, run_point
from p4mcc.sweep.spec import Point, Sweep, validate
from p4mcc.sweep.store import Store, write_outputs


@dataclass
class Outcome:
    """What a sweep did."""

    points: int
    ran: int
    skipped: int
    failed: list[tuple[Point, str]] = field(default_factory=list)
    table: Path | None = None
    wall_s: float = 0.0
    workers: int = 0


def task_for(sweep: Sweep, p: Point, program: dict[str, str] | None) -> dict[str, Any]:
    return {"id": p.id, "scenario": p.scenario, "switch": sweep.switch, "program": program,
            "metrics": sweep.metrics.as_dict(), "keep": sweep.keep_results, "source": sweep.source}


_ADDRESS = re.compile(r"^([a-z]+://)?[^/:\s]+:\d+$")


def check_scheduler(address: str | None) -> str | None:
    """A one-line problem with a ``--scheduler`` value, or None."""
    if address in (None, "", "local", "serial") or _ADDRESS.match(address or ""):
        return None
    return f"expected a Dask scheduler address like tcp://HOST:8786, 'local' or 'serial', got {address!r}"


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_sweep(sweep: Sweep, out: str | Path, *, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True, on_done: Callable[[Point, dict[str, Any]], None] | None = None,
              console: Any = None, points: list[Point] | None = None,
              probe: Callable[[Any], Callable[[], Any]] | None = None, probe_key: str = "") -> Outcome:
    """Run every point of ``sweep`` not already finished in ``out``; write the table.

    ``scheduler``: None (a LocalCluster of ``workers`` processes, default one
    per core), ``'serial'``, or a Dask scheduler address.  ``on_done`` is
    called in this process after each point is saved.  ``points`` restricts
    the run (and the table) to some of the sweep's validated points.
    ``probe`` (see :func:`sweep.point.run_point`) collects more per point;
    ``probe_key`` names what it collects (it is part of each point's id).
    """
    return run_many([(sweep, Path(out), points)], scheduler=scheduler, workers=workers, progress=progress,
                    on_done=on_done, console=console, probe=probe, probe_key=probe_key)[0]


def run_many(jobs: list[tuple[Sweep, Path, list[Point] | None]], *, scheduler: str | None = None,
             workers: int | None = None, progress: bool = True,
             on_done: Callable[[Point, dict[str, Any]], None] | None = None, console: Any = None,
             probe: Callable[[Any], Callable[[], Any]] | None = None, probe_key: str = "") -> list[Outcome]:
    """Several sweeps' points as one batch on one cluster (each sweep keeps its own folder)."""
    items: list[tuple[int, Point]] = []
    states = []
    for j, (sweep, out, pts) in enumerate(jobs):
        pts = validate(sweep) if pts is None else pts
        if probe is not None:
            for p in pts:
                p.id = hashlib.sha256(f"{p.id}/probe/{probe_key}".encode()).hexdigest()[:20]
        store = Store(out)
        done = store.done()
        todo = [p for p in pts if p.id not in done]
        states.append((sweep, pts, store, Outcome(len(pts), 0, len(pts) - len(todo))))
        items += [(j, p) for p in todo]
    needs_p4 = any(jobs[j][0].switch == "p4" for j, _ in items)
    program = program_sources() if needs_p4 else None
    total = sum(o.points for *_, o in states)
    skipped = sum(o.skipped for *_, o in states)
    name = jobs[0][0].name if len(jobs) == 1 else f"{len(jobs)} sweeps"
    t0 = time.perf_counter()
    bar, task_id = _progress(name, total, skipped, progress, console)
    failed = 0

    def finished(j: int, p: Point, res: dict[str, Any] | None, err: str | None) -> None:
        nonlocal failed
        _, _, store, outcome = states[j]
        if err is not None:
            outcome.failed.append((p, err))
            failed += 1
        else:
            store.save(res)
            outcome.ran += 1
            if on_done is not None:
                on_done(p, res)
        if bar is not None:
            bar.update(task_id, advance=1, failed=failed)

    def task(j: int, p: Point) -> dict[str, Any]:
        t = task_for(jobs[j][0], p, None)
        if probe is not None:
            t["probe"] = probe
        return t

    nworkers = 0
    try:
        if bar is not None:
            bar.start()
        if not items:
            pass
        elif scheduler == "serial":
            nworkers = 1
            for j, p in items:
                try:
                    res = _run_with_program(task(j, p), program)
                except Exception as e:  # a point's own failure (bad parameters, ...)
                    finished(j, p, None, f"{type(e).__name__}: {e}")
                else:
                    finished(j, p, res, None)
        else:
            nworkers = _run_dask([(j, p, task(j, p)) for j, p in items], program, scheduler, workers, finished)
    finally:
        if bar is not None:
            bar.stop()
        wall = time.perf_counter() - t0
        for sweep, pts, store, outcome in states:
            outcome.wall_s = wall
            outcome.workers = nworkers
            if outcome.ran + outcome.skipped == 0 and outcome.points:
                continue  # nothing finished (e.g. no cluster at that address): leave no empty table
            outcome.table = write_outputs(sweep, pts, store, complete=outcome.ran + outcome.skipped == len(pts))
            if sweep.keep_results:
                _render_kept(store, pts)
    return [o for *_, o in states]


def _run_dask(items: list[tuple[int, Point, dict[str, Any]]], program: dict[str, str] | None,
              scheduler: str | None, workers: int | None,
              finished: Callable[[int, Point, Any, str | None], None]) -> int:
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler in (None, "", "local"):
        n = workers or default_workers()
        cluster = _warm_local_cluster(n, program)
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="15s")
    futures: dict[Any, tuple[int, Point]] = {}
    try:
        nworkers = len(client.scheduler_info().get("workers", {})) or (workers or 0)
        # One copy of the program per worker instead of one per task.
        program_f = client.scatter(program, broadcast=True, hash=False) if program is not None else None
        for j, p, task in items:
            f = client.submit(_run_with_program, task, program_f, key=f"p4mcc-point-{p.id}", pure=False)
            futures[f] = (j, p)
        for f in as_completed(list(futures)):
            j, p = futures[f]
            if f.status == "finished":
                finished(j, p, f.result(), None)
            else:
                exc = f.exception()
                finished(j, p, None, f"{type(exc).__name__}: {exc}")
            f.release()
        return nworkers
    finally:
        for f in futures:
            if not f.done():
                f.cancel()
        client.close()
        if cluster is not None:
            cluster.close()


def _warm_local_cluster(n: int, program: dict[str, str] | None) -> Any:
    """A LocalCluster whose workers start warm: forked from this process.

    Dask spawns its worker processes by default, so every worker imports the
    simulator and compiles the P4 program again before its first point.  Here
    this process imports
    and compiles once, then the workers are forked from it and inherit both:
    the compiled program sits in :data:`sweep.point._PROGRAMS` under the hash
    of its sources, which is how each task finds it.  Forking is only
    possible where the platform has it; elsewhere the workers spawn as usual.
    """
    import multiprocessing

    import dask
    from distributed import LocalCluster

    from p4mcc.sweep.point import warm_up

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    if method == "fork":
        warm_up(program)
    # Dask's statistical profiler samples every worker thread 100 times a
    # second; a sweep never reads its profiles, and the sampling took about a
    # tenth of each point's CPU time.
    with dask.config.set({"distributed.worker.multiprocessing-method": method,
                          "distributed.worker.profile.enabled": False}):
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.ERROR)


def _run_with_program(task: dict[str, Any], program: dict[str, str] | None) -> dict[str, Any]:
    if program is not None and task["switch"] == "p4":
        task = {**task, "program": program}
    return run_point(task)


def _progress(name: str, total: int, done: int, enabled: bool, console: Any) -> tuple[Any, Any]:
    if not enabled:
        return None, None
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    bar = Progress(TextColumn("[bold]sweep[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("points, {task.fields[failed]} failed"), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)
    task_id = bar.add_task(name, total=total, completed=done, failed=0)
    return bar, task_id


def _render_kept(store: Store, points: list[Point]) -> None:
    """Plots for the kept per-point results folders (drawn here, not on the workers)."""
    from p4mcc.reporting import plots

    for p in points:
        d = store.points / p.id
        if d.is_dir() and not any(d.glob("*.png")):
            plots.render(d)
