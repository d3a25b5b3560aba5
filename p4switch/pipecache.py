"""Compiled pipelines kept across switch restarts (``p4mcc switch --pipeline-cache DIR``).

A controller pushes the same device config to a switch that restarts, and
compiling it with the built-in front end, then lowering it to Python, takes
about a second of CPU (more on a loaded machine) while the switch forwards
nothing.  A real switch keeps its compiled program; this cache does the
same: the first switch that compiles a device config stores the compiled
program (a pickle) under the hash of the config bytes, and a switch started
with the same directory loads it before it serves P4Runtime and builds a
spare, never-used pipeline instance from it.  When the controller then
pushes that config, the switch takes the cached program and the spare
instead of compiling.

The key also hashes the front end's own files (name, size, mtime), so a
program compiled by another version of the front end is never loaded.  The
directory must be writable only by the switch's user: it holds pickles,
which run code when loaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

LOG = logging.getLogger("p4mcc.p4switch")
SUFFIX = ".pipeline.pickle"


def _code_fingerprint() -> bytes:
    """What the compiled form depends on: the front end's and the interpreter's modules."""
    base = Path(__file__).parent
    h = hashlib.sha256()
    for d in ("frontend", "interp"):
        for p in sorted((base / d).glob("*.py")):
            st = p.stat()
            h.update(f"{d}/{p.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.digest()


class PipelineCache:
    """Compiled programs by device config, in memory and (optionally) in a directory."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.dir = Path(directory) if directory else None
        self._fp = _code_fingerprint()
        self._programs: dict[str, Any] = {}
        self._spares: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)

    def key(self, blob: bytes) -> str:
        return hashlib.sha256(self._fp + blob).hexdigest()[:32]

    def program(self, blob: bytes, compile_blob: Callable[[bytes], Any]) -> tuple[str, Any]:
        """(key, compiled program) for ``blob``: cached, or compiled now and stored."""
        k = self.key(blob)
        with self._lock:
            prog = self._programs.get(k)
        if prog is not None:
            self.hits += 1
            return k, prog
        prog = compile_blob(blob)
        with self._lock:
            self._programs[k] = prog
        self._store(k, prog)
        return k, prog

    def take_spare(self, key: str) -> Any:
        """A pipeline instance built ahead for ``key`` and never used, or None (taken once)."""
        with self._lock:
            return self._spares.pop(key, None)

    def preload(self, build: Callable[[Any], Any]) -> int:
        """Load every compiled program of the directory and build one spare
        instance of each with ``build(program)``; returns how many."""
        if self.dir is None:
            return 0
        n = 0
        for path in sorted(self.dir.glob(f"*{SUFFIX}")):
            k = path.name[: -len(SUFFIX)]
            try:
                with path.open("rb") as f:
                    prog = pickle.load(f)
                spare = build(prog)
            except Exception as e:  # noqa: BLE001 - a bad or stale file is skipped, never fatal
                LOG.warning("pipeline cache: %s not loaded (%s: %s)", path.name, type(e).__name__, e)
                continue
            with self._lock:
                self._programs[k] = prog
                self._spares[k] = spare
            n += 1
        return n

    def _store(self, key: str, prog: Any) -> None:
        if self.dir is None:
            return
        path = self.dir / f"{key}{SUFFIX}"
        if path.exists():
            return
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                pickle.dump(prog, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # atomic: two switches storing the same key at once is fine
            tmp = None
        except Exception as e:  # noqa: BLE001 - the cache is an optimisation only
            LOG.warning("pipeline cache: cannot store %s (%s: %s)", path.name, type(e).__name__, e)
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
