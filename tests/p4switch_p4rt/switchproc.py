"""Start and stop a real ``p4mcc switch`` process for tests.

Readiness is the switch's own announcement line (printed once the gRPC
server listens), read with a deadline: no sleeps.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"serving P4Runtime on (\S+):(\d+)")


def stop_process(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    """SIGTERM a process this test started, then its exit status (-9 if it had to be killed)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return -9


class SwitchProc:
    def __init__(self, *args: str, netns: str | None = None, timeout: float = 30.0) -> None:
        cmd = [sys.executable, "-m", "p4mcc.cli.main", "switch", "--grpc-server-addr", "127.0.0.1:0", *args]
        if netns:
            cmd = ["ip", "netns", "exec", netns, *cmd]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            if not r:
                break
            ch = self.proc.stdout.read1(4096) if hasattr(self.proc.stdout, "read1") else self.proc.stdout.read(1)
            if not ch:
                break
            line += ch
            m = READY.search(line.decode(errors="replace"))
            if m:
                self.address = f"127.0.0.1:{m.group(2)}"
                # Drain stderr continuously so a chatty switch never blocks on a full pipe.
                self._err: list[bytes] = []
                self._drain = threading.Thread(target=self._read_err, daemon=True)
                self._drain.start()
                return
        self.proc.kill()
        err = self.proc.stderr.read().decode(errors="replace")
        raise RuntimeError(f"switch did not become ready: {line!r} {err}")

    def _read_err(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self._err.append(chunk)

    def stop(self) -> int:
        """SIGTERM, then the exit status (the switch must stop cleanly)."""
        try:
            return stop_process(self.proc)
        finally:
            self._drain.join(timeout=5)
            for f in (self.proc.stdout, self.proc.stderr):
                f.close()

    @property
    def stderr_text(self) -> str:
        """Everything the switch wrote to stderr (complete after ``stop``)."""
        return b"".join(self._err).decode(errors="replace")
