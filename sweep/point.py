"""Run one sweep point: what a worker executes.

A task is plain data (a dict): the point's raw scenario document (topology
files already inlined), the switch kind, the P4 program's source files when
the switch is ``p4``, and the metric selection.  So a worker needs nothing
but an installed p4mcc: no scenario files, no source tree.  The result is
plain data too: the point's table rows (and optional throughput series and
results files), computed from the same :class:`reporting.results.Recorder`
summary that ``p4mcc sim`` writes, so a sweep row and a single run agree.

Nothing here depends on where it runs; a point computed by a remote worker,
a local worker or in the calling process is the same, bit for bit (the
simulator is seeded by the scenario only).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

from p4mcc.sweep.spec import Metrics

#: Compiled P4 programs of this process, by the hash of their sources.
_PROGRAMS: dict[str, Any] = {}


def program_sources(main: Path | None = None) -> dict[str, str]:
    """The P4 program's files (main file first, then its include folder) as text."""
    from p4mcc.controller.program import P4_SOURCE

    main = main or P4_SOURCE
    out = {main.name: main.read_text()}
    inc = main.parent / "include"
    if inc.is_dir():
        for f in sorted(inc.rglob("*")):
            if f.is_file():
                out[str(f.relative_to(main.parent))] = f.read_text()
    return out


def _compiled(sources: dict[str, str]) -> Any:
    """Compile the shipped program once per process (written to a private temp folder)."""
    key = hashlib.sha256(repr(sorted(sources.items())).encode()).hexdigest()
    prog = _PROGRAMS.get(key)
    if prog is None:
        from p4mcc.netsim import p4_switch

        with tempfile.TemporaryDirectory(prefix="p4mcc-sweep-p4-") as d:
            for rel, text in sources.items():
                f = Path(d) / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text)
            prog = p4_switch.load_program(Path(d) / next(iter(sources)))
        _PROGRAMS[key] = prog
    return prog


def warm_up(sources: dict[str, str] | None) -> None:
    """Import what a point runs and compile ``sources`` into this process's cache.

    Called before worker processes are forked from this one, so they start
    with the simulator imported and the program compiled.
    """
    import p4mcc.netsim.run  # noqa: F401  (the import is the warm-up)
    import p4mcc.scenario.model  # noqa: F401

    if sources:
        _compiled(sources)


def _switch(kind: str, sources: dict[str, str] | None, seed: int) -> Any:
    """The switch choice ``p4mcc sim`` makes, with the sweep's program when it has one."""
    from p4mcc.netsim.switches import model_choice, p4_choice

    if kind == "model":
        return model_choice()
    return p4_choice(seed, _compiled(sources) if sources else None)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Simulate one point; returns ``{"id", "rows", "series", "files", "probe", "events"}``.

    ``task["probe"]``, when a program (not a sweep file) asks for more than the
    table holds, is a function called with the built run before time starts;
    it returns a function called after the run whose JSON-able result is
    kept beside the point's rows (the ``probes`` table)."""
    from p4mcc.netsim.run import run_scenario
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict(task["scenario"], source=task.get("source", ""))
    metrics = Metrics(**{k: tuple(v) if isinstance(v, list) else v for k, v in task["metrics"].items()})
    t0, c0 = time.perf_counter(), time.process_time()
    probe = task.get("probe")
    finish: list[Any] = []

    def before(run: Any) -> None:
        finish.append(probe(run))

    run = run_scenario(sc, None, switch=_switch(task["switch"], task.get("program"), sc.seed),
                       before_run=before if probe is not None else None)
    out: dict[str, Any] = {
        "id": task["id"],
        "rows": rows_from_summary(run.summary, metrics),
        "series": series_rows(run.recorder.samples, sc) if metrics.series else [],
        "events": run.sim.events,
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
    }
    if finish:
        out["probe"] = finish[0]()
    if task.get("keep"):
        with tempfile.TemporaryDirectory(prefix="p4mcc-sweep-point-") as d:
            run.recorder.write(d)
            out["files"] = {f.name: f.read_text() for f in Path(d).iterdir() if f.is_file()}
    return out


# Rows ------------------------------------------------------------------------


def rows_from_summary(summary: dict[str, Any], metrics: Metrics) -> list[dict[str, Any]]:
    """One row per session, receiver, TCP flow and link of a run summary.

    Columns: ``kind, flow, node, protocol, assistance, profile, rules`` (the
    session's profile and effective rule list; None on TCP and link rows) and
    the selected metrics (``name`` for the whole run, ``steady_name`` for the window).
    """
    cols = metrics.columns()
    rows: list[dict[str, Any]] = []

    def add(kind: str, flow: str, node: str, proto: str | None, assist: bool | None,
            values: dict[str, Any], profile: str | None = None, rules: list[str] | None = None) -> None:
        if kind not in metrics.kinds:
            return
        row: dict[str, Any] = {"kind": kind, "flow": flow, "node": node, "protocol": proto,
                               "assistance": assist, "profile": profile, "rules": rules}
        for c in cols:
            row[c] = values.get(c)
        rows.append(row)

    for name, s in summary.get("sessions", {}).items():
        proto, assist = s.get("protocol"), s.get("assistance")
        snd = s.get("sender_stats", {}) or {}
        vals = {
            "throughput_bps": s.get("mean_receiver_throughput_bps"),
            "feedback_msgs": s.get("feedback_msgs_at_sender"),
            "sender_throughput_bps": snd.get("throughput_bps"),
            "steady_sender_throughput_bps": snd.get("steady_throughput_bps"),
            "steady_throughput_bps": s.get("steady_mean_receiver_throughput_bps"),
            "stalls": (summary.get("stalls") or {}).get(name),  # netsim/liveness.py (None: not measured)
        }
        for k in ("min_receiver_throughput_bps", "jain_receivers", "tcp_friendliness", "jain_with_tcp"):
            vals[k] = s.get(k)
            vals[f"steady_{k}"] = s.get(f"steady_{k}")
        profile, rules = s.get("profile"), s.get("rules")
        add("session", name, "", proto, assist, vals, profile, rules)
        for node, r in sorted(s.get("receivers", {}).items()):
            add("receiver", name, node, proto, assist, r, profile, rules)
    for name, f in summary.get("tcp_flows", {}).items():
        add("tcp", name, f.get("node", ""), None, None, f)
    drops = summary.get("link_drops", {}) or {}
    link_names = sorted(set(summary.get("links", {})) | set(drops))
    for name in link_names:
        vals = dict(summary.get("links", {}).get(name, {}))
        d = drops.get(name, {})
        vals["queue_drops"] = d.get("queue_drops", 0)
        vals["loss_drops"] = d.get("loss_drops", 0)
        vals["delivered_packets"] = d.get("delivered")
        add("link", name, "", None, None, vals)
    return rows


def series_rows(samples: list[Any], scenario: Any) -> list[dict[str, Any]]:
    """Throughput over time: each session's mean over its receivers, each TCP flow."""
    senders = {s.name: s.sender for s in scenario.sessions}
    acc: dict[tuple[float, str, str], list[float]] = {}
    for s in samples:
        if s.metric != "throughput_bps" or s.kind not in ("session", "tcp"):
            continue
        if s.kind == "session" and s.node == senders.get(s.flow):
            continue
        acc.setdefault((s.time, s.kind, s.flow), []).append(s.value)
    return [{"time": t, "kind": k, "flow": f, "throughput_bps": sum(v) / len(v)}
            for (t, k, f), v in sorted(acc.items())]

