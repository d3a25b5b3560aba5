"""A sweep on a real Dask cluster, started as a cluster user would.

The scheduler and the workers are ``dask scheduler`` / ``dask worker``
processes on free local ports, working in a folder with no scenario files:
every task carries its scenario and the P4 program.  The table must equal
the serial run's bit for bit, also after a worker is killed mid-point.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq
import pytest
from sweeplib import sweep_doc

from p4mcc.sweep.execute import run_sweep
from p4mcc.sweep.spec import sweep_from_dict
from p4mcc.sweep.store import RESULTS

DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen[bytes]] = []
        port = self.address.rsplit(":", 1)[1]
        self.scheduler = self._start("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", port,
                                                   "--dashboard-address", ":0", "--no-show"])

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")
        p = subprocess.Popen(argv, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        return self._start(name, [DASK, "worker", self.address, "--name", name, "--nthreads", "1",
                                  "--nworkers", "1", "--no-nanny", "--dashboard-address", ":0",
                                  "--local-directory", str(self.workdir / name)])

    def wait_for(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout="60s") as c:
            c.wait_for_workers(n, timeout=120)

    def stop(self) -> None:
        """Workers first, then the scheduler: a worker told to stop closes by
        telling its scheduler, and retries for its whole timeout when the
        scheduler has gone first."""
        workers = [p for p in self.procs if p is not self.scheduler]
        for group in (workers, [self.scheduler]):
            for p in group:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
            for p in group:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if DASK is None:
        pytest.fail("the dask command is not installed (pip install 'dask[distributed]')")
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.worker("w1")
        c.worker("w2")
        c.wait_for(2)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def serial_p4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serial-p4")
    res = run_sweep(sweep_from_dict(sweep_doc(switch="p4", seeds=(1,))), out, scheduler="serial",
                    progress=False)
    assert res.failed == []
    return out


def test_cluster_table_equals_serial_runs(cluster: Cluster, serial_p4: Path, tmp_path: Path) -> None:
    from distributed import Client

    res = run_sweep(sweep_from_dict(sweep_doc(switch="p4", seeds=(1,))), tmp_path, scheduler=cluster.address,
                    progress=False)
    assert (res.ran, res.failed, res.workers) == (4, [], 2)
    assert pq.read_table(tmp_path / RESULTS).equals(pq.read_table(serial_p4 / RESULTS))
    with Client(cluster.address) as c:  # the workers compiled the program they were sent
        from p4mcc.sweep import point

        compiled = c.run(lambda: len(point._PROGRAMS))
    assert sum(compiled.values()) >= 1


def test_killing_a_worker_mid_point_still_completes_the_sweep(cluster: Cluster, tmp_path: Path) -> None:
    from distributed import Client

    serial = tmp_path / "serial"
    doc = sweep_doc(seeds=(1, 2, 3))  # 12 points, model switches
    run_sweep(sweep_from_dict(doc), serial, scheduler="serial", progress=False)
    victim = cluster.worker("victim")
    cluster.wait_for(3)
    killed: list[str] = []
    watcher = Client(cluster.address)

    def kill_when_busy(p: object, r: object) -> None:
        if killed:
            return
        info = watcher.scheduler_info()["workers"]
        busy = {info[a]["name"]: keys for a, keys in watcher.processing().items() if a in info}
        if busy.get("victim"):
            os.killpg(victim.pid, signal.SIGKILL)
            killed.append(str(busy["victim"][0]))

    try:
        res = run_sweep(sweep_from_dict(doc), tmp_path / "cluster", scheduler=cluster.address,
                        progress=False, on_done=kill_when_busy)
    finally:
        watcher.close()
    assert killed, "the victim never ran a point while others finished"
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert (res.ran, res.failed) == (12, [])
    assert pq.read_table(tmp_path / "cluster" / RESULTS).equals(pq.read_table(serial / RESULTS))
