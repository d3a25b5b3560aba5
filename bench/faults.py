"""Every fault type on every protocol, on random trees with TCP cross traffic.

Each draw is a k-ary tree of switches (three levels or more, k 2-3), the
sender at the root, receivers on the leaves, one or two TCP flows from the
root to leaves, link rates and delays drawn per level.  On each draw, every
fault type of :data:`FAULTS` hits one place of that tree (a leaf switch, a
receiver, the sender, a link below the root) once the protocol is past its
start (:data:`WARMUP`), and the run goes on :data:`TAIL_S` after it.  Each
(protocol, fault, draw) runs in the simulator on the P4 switch.

Printed per (protocol, fault) over the draws:

* **within 5 s**: the share of draws where every receiver behind the fault
  (whose path from the sender crosses the faulted switch or link; every
  receiver for a fault of the whole session) was back to 80 % of its own
  pre-fault throughput within 5 s of the fault's end
  (``scenario.faults.recovery_times``, the same rule as ``events.csv``): a
  leaf's receivers are judged on their own, not hidden in the session's mean;
* **median / worst s**: recovery times over the draws (``never``: not back
  by the end of the run);
* **stalls**: the simulator's liveness check (``netsim/liveness.py``) over the
  draws: receivers the session could deliver to that got nothing for 5 s
  outside the fault's own time;
* **lost B** (RLA and MTCP, the reliable ones): the most bytes, over the
  draws, that the sender had sent :data:`DRAIN_S` before the end and a
  surviving receiver never got in order; 0 is what they owe;
* ``disk_full`` instead checks that the results are refused: its row reads
  **refused** when the write failed and the folder has no completion mark.

``--quick`` runs one draw of three faults for every protocol (a few minutes
on 2 shared cores); ``--docs`` writes the table into ``docs/faults.md``.
The runs go on every core (``--jobs``, default one per core) or on a Dask
local cluster (``--dask``); ``--save`` appends each finished run's row to a
JSON-lines file at once, and ``--load`` tabulates such files, so a long
bench can be stopped, resumed on other draws (``--first-draw``) and merged.
``--tail`` shortens the run after the fault (at least the 5 s bound and the
second a recovery must hold).

Run: ``.venv/bin/python bench/faults.py [--quick] [--draws N] [--first-draw D]
[--jobs N] [--dask] [--tail S] [--fault TYPE] [--protocol P] [--save F]
[--load F] [--docs]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
RELIABLE = ("rla", "mtcp")
BOUND_S = 5.0
DRAIN_S = 4.0
#: Seconds the fault lasts (``for``) where the type has a duration.
FOR_S = 2.0
#: Seconds every run goes on after the fault's end.
TAIL_S = 12.0
#: Seconds before the fault for protocols whose start is slow by design:
#: TFMCC doubles once per feedback round (the TFMCC paper sec. 2.6); WEBRC
#: climbs from its 1 packet/s base channel by at most Gamma^3 per two epochs
#: (the WEBRC paper sec. 3.2).  The others are steady within 10 s.
WARMUP = {"tfmcc": 30.0, "webrc": 30.0}
DEFAULT_WARMUP = 10.0

#: fault type -> (what it hits, extra fields)
FAULTS: dict[str, tuple[str, dict]] = {
    "switch_crash": ("leaf_switch", {}),
    "switch_wipe": ("leaf_switch", {}),
    "switch_slow": ("leaf_switch", {"cpu": 0.2}),
    "controller_cut": ("leaf_switch", {}),
    "controller_restart": ("none", {}),
    "receiver_crash": ("receiver", {}),
    "receiver_leave": ("receiver", {}),
    "agent_kill": ("receiver", {}),
    "sender_crash": ("sender", {}),
    "link_down": ("link", {}),
    "link_oneway": ("link_up", {}),
    "link_change": ("link", {"rate": "500kbps", "delay": "40ms"}),
    "link_reorder": ("link", {"fraction": 0.05}),
    "link_duplicate": ("link", {"fraction": 0.05}),
    "link_corrupt": ("link", {"fraction": 0.02}),
    "malformed": ("leaf_port", {"rate": 500}),
    "disk_full": ("none", {"free": 0}),
}
TREE_QUICK = ("switch_crash", "link_oneway", "receiver_crash")


def draw_tree(rng: random.Random) -> dict:
    """A random tree (a ``topology: {generate: ...}`` mapping) and the places faults hit."""
    k = rng.choice((2, 3))
    depth = rng.choice((3, 3, 4)) if k == 2 else 3
    leaves = k ** (depth - 1)
    receivers = rng.randint(leaves, 2 * leaves) if leaves <= 4 else rng.randint(leaves // 2, leaves)
    return {"kind": "kary_tree", "k": k, "depth": depth, "receivers": receivers,
            "rate": f"{rng.choice((20, 50, 100))}Mbps", "delay": f"{rng.randint(2, 10)}ms",
            "leaf_rate": f"{rng.choice((4, 6, 10))}Mbps", "leaf_delay": f"{rng.randint(2, 20)}ms",
            "queue": rng.choice((30, 50, 100)), "tcp_pairs": rng.choice((1, 2))}


def make_scenario(tree: dict, proto: str, kind: str, rng: random.Random, tail: float = TAIL_S):
    """The scenario of one (draw, protocol, fault): the fault at its place, past the warm-up."""
    from p4mcc.scenario.model import scenario_from_dict

    at = WARMUP.get(proto, DEFAULT_WARMUP)
    raw = {"name": f"tree-{proto}-{kind}", "seed": rng.randint(1, 10_000),
           "duration": at + FOR_S + tail, "topology": {"generate": dict(tree)},
           "sessions": [{"name": proto, "protocol": proto, "sender": "snd", "receivers": ["r*"]}],
           "tcp_flows": [{"name": f"tcp{i}", "src": f"tsrc{i}", "dst": f"tdst{i}"}
                         for i in range(1, tree["tcp_pairs"] + 1)]}
    sc = scenario_from_dict(raw)  # the tree's names, to place the fault
    where, extra = FAULTS[kind]
    topo = sc.topology
    parent = {}
    for l in topo.links:
        a, b = l.a.node, l.b.node
        if a in topo.switches and b in topo.switches:
            parent[b] = a  # the generator links parent -> child
    leaves = sorted({l.b.node if l.a.node.startswith("r") else l.a.node for l in topo.links
                     if {l.a.node, l.b.node} & set(sc.sessions[0].receivers)} & set(topo.switches))
    leaf = rng.choice(leaves)
    f: dict = {"type": "link_down" if kind == "link_oneway" else kind, "at": at, **extra}
    if kind not in ("switch_wipe", "receiver_leave", "disk_full"):
        f["for"] = FOR_S
    if where == "leaf_switch":
        f["target"] = leaf
    elif where == "receiver":
        f["target"] = rng.choice(sc.sessions[0].receivers)
    elif where == "sender":
        f["target"] = "snd"
    elif where in ("link", "link_up"):
        f["target"] = [parent[leaf], leaf]
        if where == "link_up":
            f["from"] = leaf  # feedback and joins toward the sender lost, data still flows
    elif where == "leaf_port":
        f["target"] = rng.choice(sc.sessions[0].receivers)
    if kind == "controller_restart":
        f["for"] = FOR_S
    raw["faults"] = [f]
    return scenario_from_dict(raw)


def _buffer(agent):
    """The reliable receiver's in-order buffer (the object with ``cum_ack`` and ``delivered_bytes``)."""
    for v in vars(agent).values():
        if hasattr(v, "cum_ack") and hasattr(v, "delivered_bytes"):
            return v
    return None


def run_tree(draw: int, proto: str, kind: str, seed: int = 1, tail: float = TAIL_S,
             profile: str | None = None, rules: dict[str, bool] | None = None) -> dict:
    """One (draw, protocol, fault) run: recovery time, bytes lost, or whether the results were refused;
    ``profile``/``rules`` put the session on that profile with those rules switched (a rule's trial)."""
    from p4mcc.netsim.liveness import count_stalls
    from p4mcc.netsim.run import build_run, run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import recovery_times

    rng = random.Random(seed * 1_000_003 + draw)
    tree = draw_tree(rng)
    sc = make_scenario(tree, proto, kind, random.Random(f"{seed}/{draw}/{kind}"), tail)
    out: dict = {"draw": draw, "protocol": proto, "fault": kind, "tree": tree, "wall_s": 0.0}
    if profile is not None or rules:
        from p4mcc.scenario.faults import with_rules

        sc = with_rules(sc, profile or "default", rules)
        out["variant"] = {"profile": profile or "default", "rules": dict(rules or {})}
    t0 = time.perf_counter()
    if kind == "disk_full":
        from p4mcc.reporting.results import results_folder_problem

        with tempfile.TemporaryDirectory() as d:
            try:
                run_scenario(sc, Path(d), switch=choose_switch("p4", sc))
                out["refused"] = False
            except OSError:
                out["refused"] = results_folder_problem(Path(d)) is not None
        out["wall_s"] = time.perf_counter() - t0
        return out
    run = build_run(sc, switch=choose_switch("p4", sc))
    s = sc.sessions[0]
    cut: dict[str, int] = {}
    if proto in RELIABLE:
        def mark() -> None:
            snd = run.agents.get(f"{s.name}/{s.sender}")
            cut["seq"] = getattr(snd, "next_seq", 1) - 1
        run.sim.at(sc.duration - DRAIN_S, mark)
    run.sim.run(until=sc.duration)
    f = sc.faults[0]
    times = list(recovery_times(run.recorder.samples, sc, f, f.at).values())
    out["recover_s"] = None if not times or any(t is None for t in times) else max(times)
    out["affected"] = bool(times)
    out["stalls"] = count_stalls(run.recorder.events)
    if proto in RELIABLE and "seq" in cut:
        gone = {f.target} if f.kind in ("receiver_crash", "receiver_leave", "agent_kill") else set()
        size = getattr(getattr(run.agents[f"{s.name}/{s.sender}"], "p", None), "packet_size", 1000)
        lost = 0
        for r in s.receivers:
            agent = run.agents.get(f"{s.name}/{r}")
            buf = _buffer(agent) if agent is not None and r not in gone else None
            if buf is not None:
                lost += max(0, cut["seq"] - buf.cum_ack) * size
        out["lost_bytes"] = lost
    out["wall_s"] = time.perf_counter() - t0
    return out


def table(rows: list[dict]) -> list[tuple]:
    """(protocol, fault, draws, share within 5 s, median, worst, lost B, stalls) per (protocol, fault)."""
    out = []
    keys = sorted({(r["protocol"], r["fault"]) for r in rows}, key=lambda k: (PROTOCOLS.index(k[0]), k[1]))
    for proto, kind in keys:
        rs = [r for r in rows if r["protocol"] == proto and r["fault"] == kind]
        if kind == "disk_full":
            ok = sum(r["refused"] for r in rs)
            out.append((proto, kind, len(rs), ok / len(rs), "refused" if ok == len(rs) else "accepted", "-", "-", "-"))
            continue
        rs = [r for r in rs if r["affected"]] or rs
        rec = [r["recover_s"] for r in rs]
        within = sum(t is not None and t <= BOUND_S for t in rec) / len(rec)
        done = sorted(t for t in rec if t is not None)
        med = "never" if len(done) * 2 <= len(rec) and len(done) < len(rec) else (
            f"{statistics.median(done):.1f}" if done else "never")
        worst = "never" if None in rec else f"{max(done):.1f}"
        lost = "-" if proto not in RELIABLE else str(max(r.get("lost_bytes", 0) or 0 for r in rs))
        out.append((proto, kind, len(rs), within, med, worst, lost, str(sum(r.get("stalls", 0) for r in rs))))
    return out


HEADER = ["| protocol | fault | draws | within 5 s | median s | worst s | lost B | stalls |",
          "|---|---|---|---|---|---|---|---|"]


def render(rows: list[tuple]) -> str:
    lines = list(HEADER)
    for proto, kind, n, share, med, worst, lost, stalls in rows:
        lines.append(f"| {proto} | `{kind}` | {n} | {share:.0%} | {med} | {worst} | {lost} | {stalls} |")
    return "\n".join(lines)


def _row_key(line: str) -> tuple[int, str]:
    """(protocol's place, fault) of one table row: the order :func:`table` writes."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != HEADER[1].count("---") or cells[0] not in PROTOCOLS:
        raise ValueError(f"not a row of the fault table: {line!r}")
    return PROTOCOLS.index(cells[0]), cells[1].strip("`")


def merged(old_body: str, new_table: str) -> str:
    """``new_table`` with the rows of ``old_body``'s table that it does not cover, in table order.

    So a bench run on some (protocol, fault) pairs updates their rows of a
    section and keeps the others (``--merge``)."""
    old = [ln for ln in old_body.splitlines() if ln.startswith("| ") and ln not in HEADER]
    new = [ln for ln in new_table.splitlines() if ln.startswith("| ") and ln not in HEADER]
    rows = {_row_key(ln): ln for ln in old}
    rows.update({_row_key(ln): ln for ln in new})
    return "\n".join(HEADER + [rows[k] for k in sorted(rows)])


# The fault scenarios of topologies/scenarios/faults/, one case each: the
# fault rows of ``bench/friendliness.py --ablate --faults`` (a rule's
# ablation counts the rows it makes fail).

SCENARIOS = ROOT / "topologies" / "scenarios" / "faults"
#: the scenario files the ablation's ``--quick`` runs
QUICK = ("switch-crash", "link-flap", "agent-kill", "sender-crash")
#: Seconds a scenario file's run goes on past its own end.
FILE_TAIL_S = 10.0


def run_one(name: str, proto: str, control: bool = False, profile: str | None = None,
            rules: dict[str, bool] | None = None) -> dict:
    """One (fault, protocol) row; ``profile``/``rules`` put every session on
    that profile with those rules switched (None: as the scenario says)."""
    from p4mcc.scenario.faults import faults_later, with_protocol, with_rules
    from p4mcc.scenario.model import load_scenario

    sc = faults_later(with_protocol(load_scenario(SCENARIOS / f"{name}.yaml"), proto), WARMUP.get(proto, 0.0), FILE_TAIL_S)
    if profile is not None or rules:
        sc = with_rules(sc, profile or "default", rules)
    ctrl = _worst_recovery(_run_quiet(sc), sc) if control else "-"
    run = _build(sc)
    s = sc.sessions[0]
    cut: dict[str, int] = {}
    if proto in RELIABLE:
        def mark() -> None:
            snd = run.agents.get(f"{s.name}/{s.sender}")
            cut["seq"] = getattr(snd, "next_seq", 1) - 1
        run.sim.at(sc.duration - DRAIN_S, mark)
    t0 = time.perf_counter()
    run.sim.run(until=sc.duration)
    wall = time.perf_counter() - t0
    worst = _worst_recovery(run, sc)
    lost = None
    if proto in RELIABLE and "seq" in cut:
        gone = {f.target for f in sc.faults if f.kind in ("receiver_crash", "receiver_leave", "agent_kill")}
        # the protocol's own packet size (its parameters' default unless the scenario sets it)
        size = getattr(getattr(run.agents[f"{s.name}/{s.sender}"], "p", None), "packet_size", 1000)
        lost = 0
        for r in s.receivers:
            if r in gone:
                continue
            buf = _buffer(run.agents[f"{s.name}/{r}"])
            if buf is not None:
                lost += max(0, cut["seq"] - buf.cum_ack) * size
    restored = [e[0] for e in run.recorder.events if e[2] == "restored"]
    first = min((t for f in sc.faults for t in f.times(sc.duration)), default=None)
    before = None if first is None else _mean_throughput(run, s, first - 5.0, first)
    fb = sum(x.value for x in run.recorder.samples if x.metric == "feedback_msgs")
    return {"fault": name, "protocol": proto, "recover_s": worst, "lost_bytes": lost,
            "restored": restored, "feedback": int(fb), "wall_s": wall, "control_s": ctrl,
            "before_bps": before, "stalls": sum(1 for e in run.recorder.events if e[2] == "stall")}


def _mean_throughput(run, session, t0: float, t1: float) -> float | None:
    """The session's receivers' mean throughput sample in [t0, t1) (bit/s)."""
    vals = [x.value for x in run.recorder.samples
            if x.kind == "session" and x.flow == session.name and x.node in session.receivers
            and x.metric == "throughput_bps" and t0 <= x.time < t1]
    return sum(vals) / len(vals) if vals else None


def _build(sc):
    """The scenario set up in the simulator on the P4 switch."""
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch

    return build_run(sc, switch=choose_switch("p4", sc))


def _run_quiet(sc):
    """The scenario run to its end with no fault injected (the control)."""
    quiet = dataclasses.replace(sc, faults=())
    run = _build(quiet)
    run.sim.run(until=quiet.duration)
    return run


def _worst_recovery(run, sc) -> float | None | str:
    """The worst recovery time over every instance of ``sc``'s faults in
    ``run``'s samples (None: never; "-": no session was affected)."""
    from p4mcc.scenario.faults import recovery_times

    worst: float | None = 0.0
    affected = False
    for f in sc.faults:
        for t in f.times(sc.duration):
            for rt in recovery_times(run.recorder.samples, sc, f, t).values():
                affected = True
                worst = None if rt is None or worst is None else max(worst, rt)
    return worst if affected else "-"


def _progress(r: dict) -> None:
    """One line per finished run on stderr, so a long bench shows where it is."""
    fig = r.get("refused", r.get("recover_s"))
    print(f"  draw {r['draw']} {r['protocol']:<6} {r['fault']:<18} {fig!s:>8} "
          f"lost={r.get('lost_bytes', '-')} ({r['wall_s']:.0f} s)", file=sys.stderr, flush=True)


def run_cases(cases: list[tuple], jobs: int, dask: bool = False, save: Path | None = None) -> list[dict]:
    """Every case through :func:`run_tree`: in this process (``jobs`` 1), on
    ``jobs`` worker processes, or on a Dask local cluster of ``jobs`` workers.
    The runs share nothing, so the order they finish in does not matter;
    each finished row is appended to ``save`` at once, so a stopped bench
    keeps what it ran (``--load`` tabulates it)."""
    def done(r: dict) -> None:
        _progress(r)
        if save is not None:
            with save.open("a") as f:
                f.write(json.dumps(r) + "\n")

    if dask:
        from dask.distributed import Client, LocalCluster, as_completed as dask_done

        with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            futures = [client.submit(run_tree, *c, pure=False) for c in cases]
            results = []
            for fut in dask_done(futures):
                results.append(fut.result())
                done(results[-1])
            return results
    if jobs == 1:
        results = []
        for c in cases:
            results.append(run_tree(*c))
            done(results[-1])
        return results
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(jobs) as pool:
        results = []
        for fut in as_completed([pool.submit(run_tree, *c) for c in cases]):
            results.append(fut.result())
            done(results[-1])
        return results


def loaded_rows(files: list[Path]) -> list[dict]:
    """The rows ``--save`` wrote to ``files``; a (protocol, fault, draw) saved more than once (a
    bench resumed over a run that had already ended) counts once, as its last row."""
    rows: dict[tuple, dict] = {}
    for f in files:
        for line in f.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["protocol"], r["fault"], r["draw"])] = r
    return list(rows.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"one draw of {', '.join(TREE_QUICK)}")
    ap.add_argument("--draws", type=int, default=20, help="random trees per (protocol, fault) (default 20)")
    ap.add_argument("--first-draw", type=int, default=0, help="the first draw's number (default 0)")
    ap.add_argument("--fault", action="append", choices=sorted(FAULTS))
    ap.add_argument("--protocol", action="append", choices=PROTOCOLS)
    ap.add_argument("--jobs", type=int, default=0, help="simulations run at once (default 0: one per core)")
    ap.add_argument("--dask", action="store_true", help="run them on a Dask local cluster of --jobs workers")
    ap.add_argument("--tail", type=float, default=TAIL_S,
                    help=f"seconds each run goes on after the fault (default {TAIL_S:g}; "
                         f"at least {BOUND_S + 1:g}, the bound and the second a recovery must hold)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the draws (default 1)")
    ap.add_argument("--profile", help="the session's profile (default: the protocol's default)")
    ap.add_argument("--rule", action="append", metavar="NAME=on|off",
                    help="switch one of the session's rules (repeatable): a rule's trial, never the docs table")
    ap.add_argument("--save", type=Path, help="append every run's row to this JSON-lines file")
    ap.add_argument("--load", type=Path, action="append", default=[],
                    help="tabulate the rows of these JSON-lines files (no run)")
    ap.add_argument("--docs", action="store_true", help="write the table into docs/faults.md")
    ap.add_argument("--merge", action="store_true",
                    help="with --docs, keep the section's rows of (protocol, fault) pairs these rows do not cover")
    ap.add_argument("--section", default="fault-bench", choices=("fault-bench", "fault-bench-draws"),
                    help="with --docs, the generated section of docs/faults.md to write (default fault-bench, "
                         "the make docs one; fault-bench-draws: make docs-faults): rows run at different "
                         "times keep their own stamps")
    a = ap.parse_args(argv)
    if a.jobs < 0 or a.draws < 1 or a.first_draw < 0:
        ap.error("--jobs and --first-draw must be 0 or more and --draws at least 1")
    if a.merge and not a.docs:
        ap.error("--merge goes with --docs")
    if (a.profile or a.rule) and a.docs:
        ap.error("--profile and --rule try a variant: its rows never go into docs/faults.md (save them with --save)")
    from bench.trees import rule_switches

    try:
        variant = rule_switches(a.rule)
    except ValueError as e:
        ap.error(str(e))
    if a.tail < BOUND_S + 1:
        ap.error(f"--tail must be at least {BOUND_S + 1:g} s: a recovery within {BOUND_S:g} s holds for a second")
    jobs = a.jobs or os.cpu_count() or 1
    if a.save is not None:
        a.save.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if a.load:
        results = loaded_rows(a.load)
        tried = sorted({json.dumps(r["variant"], sort_keys=True) for r in results if "variant" in r})
        if a.docs and tried:
            ap.error(f"--load: rows of a variant ({', '.join(tried)}) never go into docs/faults.md")
    else:
        faults = a.fault or (list(TREE_QUICK) if a.quick else list(FAULTS))
        draws = 1 if a.quick else a.draws
        protos = a.protocol or list(PROTOCOLS)
        # draw by draw, so a bench stopped early has every row on its first draws
        cases = [(d, p, k, a.seed, a.tail, a.profile, variant or None)
                 for d in range(a.first_draw, a.first_draw + draws) for p in protos for k in faults]
        results = run_cases(cases, jobs, a.dask, a.save)
    body = render(table(results))
    print(body)
    print(f"{len(results)} runs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if a.docs:
        from bench.docsection import sections, write_section

        page = ROOT / "docs" / "faults.md"
        cmd = " ".join(["bench/faults.py", *(argv if argv is not None else sys.argv[1:])])
        if a.merge:
            body = merged(sections(page.read_text()).get(a.section, ""), body)
        write_section(page, a.section, body, cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
