"""Real ``p4mcc switch`` processes for the controller's tests.

``switches(n)`` starts n switch processes (no program; the controller pushes
it) on free loopback ports and waits until each accepts TCP connections.
Tests that need them skip, naming the reason, when the switch command is not
available.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from p4mcc.controller.program import CPU_PORT

REPO = Path(__file__).resolve().parents[2]
P4MCC = [sys.executable, "-m", "p4mcc.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """Block until ``port`` accepts a connection (or the process died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise RuntimeError(f"switch exited with {proc.returncode}: {out[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"switch did not listen on {port} within {timeout} s")


@dataclass
class SwitchProc:
    name: str
    port: int
    args: list[str]
    proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [*P4MCC, "switch", "--no-p4", "--grpc-server-addr", self.address, "--cpu-port", str(CPU_PORT), *self.args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        wait_listening(self.port, self.proc)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def switch_pair() -> Iterator[list[SwitchProc]]:
    """Two switch processes shared by a module's tests (reset by ``net``)."""
    sws = [SwitchProc(f"s{i}", free_port(), []) for i in (1, 2)]
    try:
        for sp in sws:
            sp.start()
        yield sws
    finally:
        for sp in sws:
            sp.stop()


@pytest.fixture
def switches() -> Iterator[Callable[..., list[SwitchProc]]]:
    started: list[SwitchProc] = []

    def make(n: int, extra: dict[int, list[str]] | None = None) -> list[SwitchProc]:
        out = []
        for i in range(1, n + 1):
            sp = SwitchProc(f"s{i}", free_port(), (extra or {}).get(i, []))
            sp.start()
            started.append(sp)
            out.append(sp)
        return out

    yield make
    for sp in started:
        sp.stop()


def write_topology(path: Path, sws: list[SwitchProc], hosts: dict, links: list, sessions: list | None = None) -> Path:
    """A scenario file naming the switch processes' addresses."""
    doc = {
        "name": "ctl-test",
        "topology": {
            "hosts": hosts,
            "switches": {s.name: {"address": s.address, "device_id": 0} for s in sws},
            "links": links,
        },
        "sessions": sessions or [],
        "duration": 1,
    }
    path.write_text(json.dumps(doc))
    return path


def run_ctl(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """``p4mcc ctl ARGS`` in this process (as the dispatcher runs it), output captured."""
    import contextlib
    import io

    from p4mcc.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["ctl", *args])
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(["p4mcc", "ctl", *args], code, out.getvalue(), err.getvalue())


def run_ctl_process(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """``p4mcc ctl ARGS`` as a separate process."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([*P4MCC, "ctl", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def reset_switches(sws: list[SwitchProc]) -> None:
    """Push the pipeline again (forced): the switch starts from empty state."""
    import asyncio

    import finsy as fy

    from p4mcc.controller.fleet import quiet_finsy
    from p4mcc.controller.pipeline import builtin_pipeline

    quiet_finsy()
    pipe = builtin_pipeline()

    async def one(sp: SwitchProc) -> None:
        opts = fy.SwitchOptions(p4info=pipe.p4info, p4blob=pipe.device_config, p4force=True, device_id=0,
                                initial_election_id=1)
        async with fy.Switch(sp.name, sp.address, opts):
            pass

    async def all_() -> None:
        await asyncio.gather(*(one(sp) for sp in sws))

    asyncio.run(all_())


@pytest.fixture
def h():
    """Helpers for the tests (test modules cannot import this file)."""
    import types

    return types.SimpleNamespace(run_ctl=run_ctl, run_ctl_process=run_ctl_process, write_topology=write_topology,
                                 free_port=free_port, reset_switches=reset_switches, SwitchProc=SwitchProc,
                                 P4MCC=P4MCC)
