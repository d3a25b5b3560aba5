"""What a run started, written down, so ``p4mcc stop`` ends exactly that.

A ``p4mcc run`` keeps one record file in the state directory while it runs:
its own process id, every process it spawned (switches, agents, iperf3,
Mininet's node shells) and every interface it created, each with what
identifies it beyond its number -- a process's start time (process ids are
reused) and an interface's index (names are reused).  A run that ends
normally removes its record; a run killed hard leaves it behind.

A new run first ends the records whose runner is gone (``reclaim_orphans``),
so a hard-killed run does not block the next one.  ``p4mcc stop`` (what
``make stop`` calls) reads the records and, for each,
sends SIGTERM and then SIGKILL to the recorded processes that are still the
same processes, deletes the recorded interfaces that still have the recorded
index, and removes the record.  It never looks processes or interfaces up by
name, so nothing it did not start is touched.  The runner itself is not
signalled (it may be any program that called the emulation, a test runner
for one); a runner still going sees its components end, reports them and
cleans up as after any component failure.

The state directory is ``$P4MCC_STATE_DIR`` when set, else ``/run/p4mcc`` for
root and ``$XDG_RUNTIME_DIR/p4mcc`` (or ``/tmp/p4mcc-<uid>``) otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

STOP_GRACE_S = 5.0
"""SIGTERM to SIGKILL: switches and agents shut down cleanly well within this."""


def state_dir() -> Path:
    env = os.environ.get("P4MCC_STATE_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/run/p4mcc")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "p4mcc" if runtime else Path(f"/tmp/p4mcc-{os.geteuid()}")


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc), None if gone.

    With the pid it names one process for good: a new process that reuses the
    pid has a later start time.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def if_index(name: str) -> int | None:
    """The interface's index in this network namespace, None if it does not exist here."""
    try:
        return int(Path(f"/sys/class/net/{name}/ifindex").read_text())
    except (OSError, ValueError):
        return None


@dataclass
class ProcessEntry:
    pid: int
    start: int
    name: str
    group: bool = False  # the process leads its own process group (started with a new session)


@dataclass
class InterfaceEntry:
    name: str
    index: int


@dataclass
class RunRecord:
    """The record of one run, saved to ``path`` on every change."""

    path: Path
    runner: ProcessEntry  # for the reader: which run this was
    out: str = ""
    processes: list[ProcessEntry] = field(default_factory=list)
    interfaces: list[InterfaceEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        # each entry's JSON, encoded once: the record is saved on every change and a
        # run of 30 switches adds hundreds of entries, so re-encoding all of them
        # each time cost seconds of the runner's start (entries are only appended)
        self._encoded: dict[str, list[str]] = {"processes": [], "interfaces": []}

    @classmethod
    def create(cls, out: str | Path = "", directory: Path | None = None) -> "RunRecord":
        d = directory or state_dir()
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        pid = os.getpid()
        rec = cls(d / f"run-{pid}.json", ProcessEntry(pid, start_time(pid) or 0, "runner"), str(out))
        rec.save()
        return rec

    def add_process(self, pid: int, name: str, group: bool = False) -> None:
        st = start_time(pid)
        if st is None:
            return  # already gone: nothing to stop later
        with self._lock:
            self.processes.append(ProcessEntry(pid, st, name, group))
            self.save()

    def add_interfaces(self, names: Iterable[str]) -> None:
        with self._lock:
            for n in names:
                idx = if_index(n)
                if idx is not None and all(i.name != n for i in self.interfaces):
                    self.interfaces.append(InterfaceEntry(n, idx))
            self.save()

    def _entries_json(self, key: str, entries: list[Any]) -> str:
        done = self._encoded[key]
        done.extend(json.dumps(asdict(e)) for e in entries[len(done):])
        return "[" + ",\n ".join(done) + "]"

    def save(self) -> None:
        head = json.dumps({"runner": asdict(self.runner), "out": self.out})[:-1]
        text = (f'{head},\n "processes": {self._entries_json("processes", self.processes)},'
                f'\n "interfaces": {self._entries_json("interfaces", self.interfaces)}}}\n')
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)  # a reader never sees half a record

    def close(self) -> None:
        """The run cleaned up after itself: forget it."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    @classmethod
    def load(cls, path: Path) -> "RunRecord":
        data = json.loads(path.read_text())
        return cls(path, ProcessEntry(**data["runner"]), data.get("out", ""),
                   [ProcessEntry(**p) for p in data.get("processes", [])],
                   [InterfaceEntry(**i) for i in data.get("interfaces", [])])


# ---------------------------------------------------------------------------
# Stopping


def _same(p: ProcessEntry) -> bool:
    return p.start != 0 and start_time(p.pid) == p.start


def _signal(p: ProcessEntry, sig: int) -> None:
    if not _same(p):
        return
    try:
        if p.group and os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, sig)  # its children too (an agent's helpers), all of its own group
        else:
            os.kill(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(procs: list[ProcessEntry], timeout: float) -> list[ProcessEntry]:
    end = time.monotonic() + timeout
    left = [p for p in procs if _same(p)]
    while left and time.monotonic() < end:
        time.sleep(0.05)  # polling /proc: a process we did not fork cannot be waited on
        left = [p for p in left if _same(p)]
    return left


@dataclass
class StopReport:
    runs: int = 0
    terminated: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def stop_run(rec: RunRecord, report: StopReport, grace: float = STOP_GRACE_S) -> None:
    """End what one record lists (see the module doc), then remove the record."""
    report.runs += 1
    alive = [p for p in rec.processes if _same(p)]
    for p in alive:
        _signal(p, signal.SIGTERM)
        report.terminated.append(f"{p.name} ({p.pid})")
    for p in _wait_gone(alive, grace):
        _signal(p, signal.SIGKILL)
        report.killed.append(f"{p.name} ({p.pid})")
    _wait_gone(alive, 2.0)
    for i in rec.interfaces:
        if if_index(i.name) != i.index:
            continue  # gone with its namespace, or a different interface now holds the name
        r = subprocess.run(["ip", "link", "del", "dev", i.name], capture_output=True, text=True)
        if r.returncode == 0:
            report.interfaces.append(i.name)
        elif if_index(i.name) == i.index:
            report.problems.append(f"cannot delete interface {i.name}: {r.stderr.strip()}")
    rec.close()


def _records(directory: Path | None, report: StopReport) -> Iterator[RunRecord]:
    """The run records in the state directory; an unreadable one is reported
    in ``report`` and left in place."""
    d = directory or state_dir()
    for path in sorted(d.glob("run-*.json")) if d.is_dir() else []:
        try:
            yield RunRecord.load(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            report.problems.append(f"{path}: unreadable record ({type(e).__name__}); left in place")


def stop_all(directory: Path | None = None, grace: float = STOP_GRACE_S) -> StopReport:
    """Stop every recorded run in the state directory."""
    report = StopReport()
    for rec in _records(directory, report):
        stop_run(rec, report, grace)
    return report


def reclaim_orphans(directory: Path | None = None, grace: float = STOP_GRACE_S) -> StopReport:
    """Stop the recorded runs whose runner is gone, and only those.

    A runner that died without cleaning up (killed with -9, or its machine
    or container restarted mid-run) leaves its record, its switches and
    agents if they outlived it, and its veth pairs, whose names the next run
    needs.  Such a record names things p4mcc started for a run that can no
    longer use them, so a new run ends them itself instead of failing on the
    name clash; a record whose runner is still the same process belongs to a
    live run and is left alone (``p4mcc stop`` is how a user ends that one).
    """
    report = StopReport()
    for rec in _records(directory, report):  # an unreadable record stays: the new run does not guess
        if not _same(rec.runner):
            stop_run(rec, report, grace)
    return report


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop what p4mcc runs started (after a hard kill, too)",
                       description="Stop the processes and delete the interfaces that p4mcc runs recorded "
                       f"in their state directory ({state_dir()}); nothing else is touched.")
    p.set_defaults(func=_stop_command)


def _stop_command(_args: Any) -> int:
    report = stop_all()
    if not report.runs:
        print(f"p4mcc stop: no p4mcc run recorded in {state_dir()}")
        return 0
    print(f"p4mcc stop: {report.runs} run(s); stopped {len(report.terminated)} process(es)"
          f"{f' ({len(report.killed)} needed SIGKILL)' if report.killed else ''}; "
          f"deleted {len(report.interfaces)} interface(s)")
    for p in report.problems:
        print(f"p4mcc stop: {p}", file=sys.stderr)
    return 1 if report.problems else 0
