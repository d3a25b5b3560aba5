"""The results layout shared by ``p4mcc sim`` and ``p4mcc run``.

Either engine feeds a :class:`Recorder` with samples taken every metrics
interval -- ``(time, kind, flow, node, metric, value)`` where ``kind`` is
``session``, ``tcp`` or ``link`` -- plus membership events and the raw metric
records of the protocol agents, then calls :meth:`Recorder.write`.  A results
folder holds:

``summary.json``
    scenario name, engine, seed, duration, each session's ``profile`` and
    effective ``rules`` (the list its agents ran), and per flow / per receiver: mean
    throughput (bit/s), coefficient of variation of the per-interval
    throughput, loss, mean RTT, feedback messages at the sender; per session:
    TCP-friendliness ratio (mean receiver throughput over mean competing TCP
    throughput) and Jain's fairness index (over its receivers, and over the
    session's mean throughput together with each TCP flow).  Each figure is
    also given over the steady-state window (``steady_*`` keys; the window,
    ``steady_window_s``, is the scenario's ``steady_window``, by default the
    second half of the run) so a slow start does not hide what a protocol
    does once started.
``timeseries.csv``
    every sample, long format (``time,kind,flow,node,metric,value``).
``events.csv``
    join/leave and other events (``time,node,event,detail``).
``metrics.jsonl``
    the agents' own metric records, one JSON object a line.
``*.png``
    plots (``reporting/plots.py``).

Throughput of a multicast receiver is measured by the engine (UDP payload
bytes reaching the session's port on that host), not taken from the agent,
so every protocol is measured the same way.  Loss and RTT come from the
agent's records (``loss_event_rate``/``loss_rate``, ``rtt_s``) when it
reports them.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from p4mcc.hosts.input_files import parse_json, read_input_text

SUMMARY = "summary.json"
TIMESERIES = "timeseries.csv"
EVENTS = "events.csv"
METRICS = "metrics.jsonl"
COMPLETE = "complete.json"
"""The completion mark, written last: each results file's name and size.  A
folder without it, or whose files no longer match it, is one a run left
half-written (killed, or out of disk) and ``p4mcc report`` refuses it."""
MAX_REPORT_SAMPLES_BYTES = 64 << 20
"""Largest ``timeseries.csv`` that ``p4mcc report`` draws: loading samples
costs about ten times their text in memory, so a larger file is refused with
the advice to sample less often, not read until memory runs out."""

#: Metric names every engine uses in samples.
THROUGHPUT = "throughput_bps"
LOSS = "loss"
RTT = "rtt_s"
FEEDBACK = "feedback_msgs"
#: The congestion stamp a receiver saw (docs/stamp.md), per metrics interval,
#: for sessions with ``assistance: stamp``: the worst queueing delay's lower
#: bound (s) and the tightest spare rate's (bit/s), over the interval's data
#: packets; no sample for an interval with an unstamped packet.
STAMP_QUEUE = "stamp_queue_s"
STAMP_SPARE = "stamp_spare_bps"


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    kind: str
    flow: str
    node: str
    metric: str
    value: float


def jain(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2); None for no values or all zero."""
    xs = [float(v) for v in values]
    sq = sum(x * x for x in xs)
    if not xs or sq == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sq)


def mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def cov(xs: list[float]) -> float | None:
    """Coefficient of variation (population std / mean); None when undefined."""
    m = mean(xs)
    if m is None or m == 0 or len(xs) < 2:
        return None
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) / m


class Recorder:
    """Collects a run's samples and events and writes the results folder."""

    def __init__(self, scenario: Any, engine: str) -> None:
        self.scenario = scenario
        self.engine = engine
        self.samples: list[Sample] = []
        self.events: list[tuple[float, str, str, str]] = []
        self.records: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}

    def sample(self, time: float, kind: str, flow: str, node: str, metric: str, value: float) -> None:
        self.samples.append(Sample(time, kind, flow, node, metric, float(value)))

    def event(self, time: float, node: str, event: str, detail: str = "") -> None:
        self.events.append((time, node, event, detail))

    def record(self, time: float, label: str, role: str, values: dict[str, float], state: str) -> None:
        self.records.append({"time": time, "label": label, "role": role, "state": state, **values})

    # Summary -------------------------------------------------------------
    def summarize(self) -> dict[str, Any]:
        return summarize(self.samples, self.scenario, self.engine, self.extra)

    def write(self, out: str | Path) -> dict[str, Any]:
        """Write summary, CSVs and metric records into ``out``; returns the summary.

        Atomic per file and marked when whole: the completion mark goes
        first, each file is written under a temporary name and renamed into
        place, and the mark comes back last.  A run killed while writing (or
        a full disk) leaves no mark, so its folder, however mixed with an
        earlier run's files, is refused by ``p4mcc report``.
        """
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        clear_stale_temporaries(d)
        (d / COMPLETE).unlink(missing_ok=True)
        summary = self.summarize()
        sizes = {
            SUMMARY: _write_atomic(d / SUMMARY, lambda f: f.write(json.dumps(summary, indent=2) + "\n")),
            TIMESERIES: _write_atomic(d / TIMESERIES, self._write_samples),
            EVENTS: _write_atomic(d / EVENTS, self._write_events),
            METRICS: _write_atomic(d / METRICS, self._write_records),
        }
        _write_atomic(d / COMPLETE, lambda f: f.write(json.dumps({"files": sizes}, indent=1) + "\n"))
        return summary

    def _write_samples(self, f: Any) -> None:
        w = csv.writer(f)
        w.writerow(["time", "kind", "flow", "node", "metric", "value"])
        for s in self.samples:
            w.writerow([f"{s.time:.6f}", s.kind, s.flow, s.node, s.metric, repr(s.value)])

    def _write_events(self, f: Any) -> None:
        w = csv.writer(f)
        w.writerow(["time", "node", "event", "detail"])
        for e in sorted(self.events):
            w.writerow([f"{e[0]:.6f}", e[1], e[2], e[3]])

    def _write_records(self, f: Any) -> None:
        for r in self.records:
            f.write(json.dumps(r, sort_keys=True) + "\n")


RESULT_FILES = (SUMMARY, TIMESERIES, EVENTS, METRICS, COMPLETE)
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]{1,10})\.tmp$")


def _temporary(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: hidden, and
    named by the writer's process id, so a later writer can tell whether the
    process that left it is gone."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def clear_stale_temporaries(d: Path) -> list[Path]:
    """Remove the temporaries of results files in ``d`` whose writer is gone
    (a run killed while writing: SIGKILL leaves no ``finally`` to clean up),
    so they neither pile up next to a later run's files (a ``timeseries.csv``
    can be tens of MB) nor outlive the folder's next complete write.  A
    temporary of a live writer and every other file are left alone."""
    removed = []
    for f in d.iterdir():
        m = _TEMPORARY.match(f.name)
        if m is None or m["name"] not in RESULT_FILES:
            continue
        pid = int(m["pid"])
        if pid != os.getpid() and _alive(pid):
            continue
        f.unlink(missing_ok=True)
        removed.append(f)
    return removed


def _write_atomic(path: Path, fill: Any) -> int:
    """Write ``path`` through a temporary file renamed into place; its size."""
    tmp = _temporary(path)
    try:
        with tmp.open("w", newline="") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.stat().st_size


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


def summarize(samples: list[Sample], scenario: Any, engine: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``summary.json`` content computed from samples (both engines share it)."""
    series: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    steady: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    lo, hi = _steady_bounds(scenario)
    for s in samples:
        series[(s.kind, s.flow, s.node)][s.metric].append(s.value)
        if lo < s.time <= hi + 1e-9:
            steady[(s.kind, s.flow, s.node)][s.metric].append(s.value)
    sessions_out: dict[str, Any] = {}
    tcp_out: dict[str, Any] = {}
    links_out: dict[str, Any] = {}
    sess_defs = {s.name: s for s in getattr(scenario, "sessions", [])}
    for (kind, flow, node), m in sorted(series.items()):
        thr = m.get(THROUGHPUT, [])
        entry = {
            "throughput_bps": _r(mean(thr), 1),
            "throughput_cov": _r(cov(thr), 4),
            "loss": _r(mean(m[LOSS]), 6) if m.get(LOSS) else None,
            "rtt_s": _r(mean(m[RTT]), 6) if m.get(RTT) else None,
            "feedback_msgs": int(sum(m[FEEDBACK])) if m.get(FEEDBACK) else None,
        }
        for k, v in m.items():
            if k not in (THROUGHPUT, LOSS, RTT, FEEDBACK):
                entry[k] = _r(mean(v), 6)
        ss = steady.get((kind, flow, node), {})
        entry["steady_throughput_bps"] = _r(mean(ss.get(THROUGHPUT, [])), 1)
        entry["steady_throughput_cov"] = _r(cov(ss.get(THROUGHPUT, [])), 4)
        for k, v in ss.items():
            if k not in (THROUGHPUT, FEEDBACK):
                entry[f"steady_{k}"] = _r(mean(v), 6)
        if kind == "session":
            sd = sess_defs.get(flow)
            s = sessions_out.setdefault(flow, {
                "protocol": getattr(sd, "protocol", ""),
                "sender": getattr(sd, "sender", ""),
                "assistance": getattr(sd, "assistance", None),
                "profile": getattr(sd, "profile", None),
                "rules": session_rules(sd),
                "receivers": {},
            })
            if sd is not None and node == sd.sender:
                s["sender_stats"] = entry
            else:
                s["receivers"][node] = entry
        elif kind == "tcp":
            tcp_out[flow] = {"node": node, **entry}
        else:
            links_out[flow] = entry
    tcp_thr = [t["throughput_bps"] for t in tcp_out.values() if t["throughput_bps"] is not None]
    tcp_mean = mean(tcp_thr)
    for name, s in sessions_out.items():
        rthr = [r["throughput_bps"] for r in s["receivers"].values() if r["throughput_bps"] is not None]
        s["mean_receiver_throughput_bps"] = _r(mean(rthr), 1)
        s["min_receiver_throughput_bps"] = _r(min(rthr), 1) if rthr else None
        s["jain_receivers"] = _r(jain(rthr), 4)
        sm = mean(rthr)
        s["tcp_friendliness"] = _r(sm / tcp_mean, 4) if sm is not None and tcp_mean else None
        s["jain_with_tcp"] = _r(jain([sm, *tcp_thr]), 4) if sm is not None and tcp_thr else None
        fb = s.get("sender_stats", {}).get("feedback_msgs")
        s["feedback_msgs_at_sender"] = fb
        _steady_session(s, tcp_out)
    out = {
        "scenario": getattr(scenario, "name", ""),
        "engine": engine,
        "seed": getattr(scenario, "seed", None),
        "duration_s": getattr(scenario, "duration", None),
        "metrics_interval_s": getattr(scenario, "metrics_interval", None),
        "steady_window_s": [lo, hi],
        "sessions": sessions_out,
        "tcp_flows": tcp_out,
        "links": links_out,
    }
    if extra:
        out.update(extra)
    return out


def session_rules(session: Any) -> list[str] | None:
    """The session's effective rule list (what its agents ran), or None
    when it has none to give (a session object without a rule book)."""
    resolve = getattr(session, "effective_rules", None)
    if not callable(resolve):
        return None
    try:
        return list(resolve())
    except (ValueError, ImportError, AttributeError):  # unknown or broken: its agents were never built
        return None


def _steady_bounds(scenario: Any) -> tuple[float, float]:
    """The scenario's steady-state window (the second half when it says nothing)."""
    bounds = getattr(scenario, "steady_bounds", None)
    if callable(bounds):
        return bounds()
    d = float(getattr(scenario, "duration", 0.0) or 0.0)
    return (d / 2, d)


def _steady_session(s: dict[str, Any], tcp_out: dict[str, Any]) -> None:
    """The session's aggregate figures over the steady-state window only."""
    rthr = [r["steady_throughput_bps"] for r in s["receivers"].values()
            if r.get("steady_throughput_bps") is not None]
    tcp_thr = [t["steady_throughput_bps"] for t in tcp_out.values()
               if t.get("steady_throughput_bps") is not None]
    sm, tm = mean(rthr), mean(tcp_thr)
    s["steady_mean_receiver_throughput_bps"] = _r(sm, 1)
    s["steady_min_receiver_throughput_bps"] = _r(min(rthr), 1) if rthr else None
    s["steady_jain_receivers"] = _r(jain(rthr), 4)
    s["steady_tcp_friendliness"] = _r(sm / tm, 4) if sm is not None and tm else None
    s["steady_jain_with_tcp"] = _r(jain([sm, *tcp_thr]), 4) if sm is not None and tcp_thr else None


# Reading back ----------------------------------------------------------------


def load_summary(d: str | Path) -> dict[str, Any]:
    return json.loads((Path(d) / SUMMARY).read_text())


#: The columns of ``timeseries.csv`` that :func:`load_samples` reads.
SAMPLE_COLUMNS = ("time", "kind", "flow", "node", "metric", "value")


def load_samples(d: str | Path) -> list[Sample]:
    """Every sample of a run; ValueError names the line that is not one."""
    out = []
    with (Path(d) / TIMESERIES).open() as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                out.append(Sample(float(row["time"]), row["kind"], row["flow"], row["node"],
                                  row["metric"], float(row["value"])))
            except (TypeError, ValueError):
                raise ValueError(f"{TIMESERIES} line {line}: not a sample") from None
    return out


def results_folder_problem(d: str | Path) -> str | None:
    """Why ``d`` is not a run's results folder that can be drawn, or None:
    a folder a run left half-written (killed) or one that is something else
    gets a line, not a traceback from the plotting code."""
    p = Path(d)
    for name in (SUMMARY, TIMESERIES):
        if not (p / name).is_file():
            return f"no {name} (not a results folder)"
    if (why := completion_problem(p)) is not None:
        return why
    size = (p / TIMESERIES).stat().st_size
    if size > MAX_REPORT_SAMPLES_BYTES:
        return (f"{TIMESERIES} is {size >> 20} MiB, more than the {MAX_REPORT_SAMPLES_BYTES >> 20} MiB "
                "p4mcc report draws; run with a larger metrics_interval")
    try:
        summary = parse_json(read_input_text(p / SUMMARY))
    except (OSError, ValueError) as e:
        return f"{SUMMARY}: {e}"
    if not isinstance(summary, dict):
        return f"{SUMMARY} holds a {type(summary).__name__}, not a run's summary"
    try:
        with (p / TIMESERIES).open(newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError) as e:
        return f"{TIMESERIES}: {e}"
    missing = [c for c in SAMPLE_COLUMNS if c not in header]
    if missing:
        return f"{TIMESERIES} has no {', '.join(missing)} column"
    return None


def completion_problem(d: Path) -> str | None:
    """Why the run's writing of ``d`` did not finish, or None."""
    try:
        mark = parse_json(read_input_text(d / COMPLETE))
        files = mark["files"]
        sizes = {str(k): int(v) for k, v in files.items()}
    except FileNotFoundError:
        return f"incomplete: no {COMPLETE} (the run stopped while writing its results)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"incomplete: {COMPLETE} is not a completion mark"
    for name, size in sizes.items():
        try:
            now = (d / name).stat().st_size
        except OSError:
            return f"incomplete: {name} is missing"
        if now != size:
            return f"incomplete: {name} has {now} bytes, the run wrote {size}"
    return None


def load_events(d: str | Path) -> list[tuple[float, str, str, str]]:
    p = Path(d) / EVENTS
    if not p.exists():
        return []
    with p.open() as f:
        return [(float(r["time"]), r["node"], r["event"], r["detail"]) for r in csv.DictReader(f)]


# Printing --------------------------------------------------------------------


def _fmt(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def rules_caption(summary: dict[str, Any]) -> str:
    """Each session's profile and effective rules, for the table's caption
    (the label names the profile; the rules a session ran are spelled out here)."""
    parts = []
    for name, s in summary.get("sessions", {}).items():
        rules = s.get("rules")
        if rules is None:
            continue
        parts.append(f"{name} ({s.get('profile')}): {', '.join(rules) if rules else 'no rule'}")
    return ("\nrules: " + "; ".join(parts)) if parts else ""


def summary_table(summary: dict[str, Any], max_receivers: int = 12) -> Any:
    """A rich Table of the summary (receivers beyond ``max_receivers`` folded)."""
    from rich.table import Table

    def mbps(x: float | None) -> str:
        return "-" if x is None else f"{x / 1e6:.3f}"

    win = summary.get("steady_window_s") or [None, None]
    ss = "-" if win[0] is None else f"{win[0]:g}-{win[1]:g} s"
    t = Table(title=f"{summary.get('scenario', '')}: {summary.get('engine', '')}"
                    f"{' (' + summary['switch'] + ' switches)' if summary.get('switch') else ''}, "
                    f"seed {summary.get('seed')}, {summary.get('duration_s')} s",
              caption="Mb/s: mean throughput over the run; ss: over the steady-state window "
                      f"({ss}); fb: feedback messages at the sender; "
                      "TCP-fr: session mean / TCP mean; Jain: over receivers"
                      + rules_caption(summary))
    for col in ("flow", "node", "Mb/s", "ss Mb/s", "CoV", "loss", "RTT s", "fb", "TCP-fr", "ss TCP-fr", "Jain"):
        t.add_column(col, justify="left" if col in ("flow", "node") else "right")
    for name, s in summary.get("sessions", {}).items():
        label = f"{name} {s.get('protocol')}/{'assist' if s.get('assistance') else 'no-assist'}"
        if s.get("profile"):
            label += f" {s['profile']}"
        t.add_row(label, "(mean)", mbps(s.get("mean_receiver_throughput_bps")),
                  mbps(s.get("steady_mean_receiver_throughput_bps")), "", "", "",
                  _fmt(s.get("feedback_msgs_at_sender"), "d"), _fmt(s.get("tcp_friendliness"), ".2f"),
                  _fmt(s.get("steady_tcp_friendliness"), ".2f"), _fmt(s.get("jain_receivers"), ".3f"))
        recv = sorted(s.get("receivers", {}).items())
        for node, r in recv[:max_receivers]:
            t.add_row("", node, mbps(r.get("throughput_bps")), mbps(r.get("steady_throughput_bps")),
                      _fmt(r.get("throughput_cov"), ".2f"),
                      _fmt(r.get("loss"), ".4f"), _fmt(r.get("rtt_s"), ".3f"), "", "", "", "")
        if len(recv) > max_receivers:
            t.add_row("", f"+{len(recv) - max_receivers} more", "", "", "", "", "", "", "", "", "")
    for name, f in summary.get("tcp_flows", {}).items():
        t.add_row(f"{name} (tcp)", f.get("node", ""), mbps(f.get("throughput_bps")),
                  mbps(f.get("steady_throughput_bps")),
                  _fmt(f.get("throughput_cov"), ".2f"), _fmt(f.get("loss"), ".4f"),
                  _fmt(f.get("rtt_s"), ".3f"), "", "", "", "")
    return t
