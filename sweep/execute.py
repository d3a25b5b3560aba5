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

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sweep.point import program_sources, run_point
from sweep.spec import Point, Sweep, validate
from sweep.store import Store, write_outputs


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


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_sweep(sweep: Sweep, out: str | Path, *, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True, on_done: Callable[[Point, dict[str, Any]], None] | None = None,
              console: Any = None, points: list[Point] | None = None) -> Outcome:
    """Run every point of ``sweep`` not already finished in ``out``; write the table.

    ``scheduler``: None (a LocalCluster of ``workers`` processes, default one
    per core), ``'serial'``, or a Dask scheduler address.  ``on_done`` is
    called in this process after each point is saved.  ``points`` restricts
    the run (and the table) to some of the sweep's validated points.
    """
    points = validate(sweep) if points is None else points
    store = Store(out)
    done = store.done()
    todo = [p for p in points if p.id not in done]
    outcome = Outcome(len(points), 0, len(points) - len(todo))
    program = program_sources() if sweep.switch == "p4" and todo else None
    t0 = time.perf_counter()
    bar, task_id = _progress(sweep, len(points), outcome.skipped, progress, console)

    def finished(p: Point, res: dict[str, Any] | None, err: str | None) -> None:
        if err is not None:
            outcome.failed.append((p, err))
        else:
            store.save(res)
            outcome.ran += 1
            if on_done is not None:
                on_done(p, res)
        if bar is not None:
            bar.update(task_id, advance=1, failed=len(outcome.failed))

    complete = False
    try:
        if bar is not None:
            bar.start()
        if not todo:
            pass
        elif scheduler == "serial":
            outcome.workers = 1
            for p in todo:
                try:
                    res = run_point(task_for(sweep, p, program))
                except Exception as e:  # a point's own failure (bad parameters, ...)
                    finished(p, None, f"{type(e).__name__}: {e}")
                else:
                    finished(p, res, None)
        else:
            outcome.workers = _run_dask(sweep, todo, program, scheduler, workers, finished)
        complete = not outcome.failed
    finally:
        if bar is not None:
            bar.stop()
        outcome.wall_s = time.perf_counter() - t0
        outcome.table = write_outputs(sweep, points, store, complete=complete and True)
        if sweep.keep_results:
            _render_kept(store, points)
    return outcome


def _run_dask(sweep: Sweep, todo: list[Point], program: dict[str, str] | None, scheduler: str | None,
              workers: int | None, finished: Callable[[Point, Any, str | None], None]) -> int:
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler in (None, "", "local"):
        n = workers or default_workers()
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="30s")
    futures: dict[Any, Point] = {}
    try:
        nworkers = len(client.scheduler_info().get("workers", {})) or (workers or 0)
        if program is not None:
            # One copy of the program per worker instead of one per task.
            program_f = client.scatter(program, broadcast=True, hash=False)
        else:
            program_f = None
        for p in todo:
            task = task_for(sweep, p, None)
            f = client.submit(_run_with_program, task, program_f, key=f"p4mcc-point-{p.id}", pure=False)
            futures[f] = p
        for f in as_completed(list(futures)):
            p = futures[f]
            if f.status == "finished":
                finished(p, f.result(), None)
            else:
                exc = f.exception()
                finished(p, None, f"{type(exc).__name__}: {exc}")
            f.release()
        return nworkers
    finally:
        for f in futures:
            if not f.done():
                f.cancel()
        client.close()
        if cluster is not None:
            cluster.close()


def _run_with_program(task: dict[str, Any], program: dict[str, str] | None) -> dict[str, Any]:
    if program is not None:
        task = {**task, "program": program}
    return run_point(task)


def _progress(sweep: Sweep, total: int, done: int, enabled: bool, console: Any) -> tuple[Any, Any]:
    if not enabled:
        return None, None
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    bar = Progress(TextColumn("[bold]sweep[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("points, {task.fields[failed]} failed"), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)
    task_id = bar.add_task(sweep.name, total=total, completed=done, failed=0)
    return bar, task_id


def _render_kept(store: Store, points: list[Point]) -> None:
    """Plots for the kept per-point results folders (drawn here, not on the workers)."""
    from topologies import plots

    for p in points:
        d = store.points / p.id
        if d.is_dir() and not any(d.glob("*.png")):
            plots.render(d)
