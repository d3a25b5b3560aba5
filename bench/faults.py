"""Each fault in each protocol, in the simulator: time to recover and data lost.

For every scenario of ``topologies/scenarios/faults/`` (one fault type each)
and every protocol, the session's protocol is swapped and the scenario runs
in the simulator on the P4 switch.  Printed per (fault, protocol):

* **recover s**: seconds from the end of the fault (its ``for``) until the
  mean throughput of the surviving receivers is back to 80 % of its value
  in the 5 s before the fault and holds there for a second
  (``scenario.faults.recovery_times``; the worst instance when a fault
  repeats); ``0`` when throughput never fell below 80 %, ``never`` when it
  had not come back by the end of the run (the scenario's own end plus
  :data:`TAIL_S`, so a recovery slower than the scenario's bound still shows
  its time);
* **lost B** (RLA and MTCP, the reliable ones): bytes the sender had sent
  :data:`DRAIN_S` seconds before the end that some surviving receiver never
  got in order -- 0 is what a reliable protocol owes;
* **before Mb/s**: the session's mean receiver throughput over the 5 s
  before the (first) fault: the level recovery is measured against, so a
  session that was not running shows here (a WEBRC session whose default
  rate overran its sender's link once gave "recovered" rows from nothing);
* the switch's ``restored`` time and the feedback the sender saw;
* with ``--control``, **control s**: the same recovery analysis over the
  same run with no fault injected -- the protocol's own dips at that time
  (WEBRC's rate moves by more than 20 % within a few seconds on these
  paths), so a figure no larger than its control is not the fault's.

TFMCC's and WEBRC's faults come :data:`WARMUP` seconds later than the
scenario says, so that they hit a session past its (slow by design) start.

``--quick`` runs three faults (switch crash, link flap, agent kill).
``docs/faults.md`` holds the numbers of a full run.

``--docs`` also writes the table into ``docs/faults.md`` (its generated
section).  ``--jobs N`` runs N simulations at once (each its own process; the rows
print in the same order).

Run: ``.venv/bin/python bench/faults.py [--quick] [--jobs N] [--fault NAME] [--protocol P] [--control]``
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = ROOT / "topologies" / "scenarios" / "faults"
PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
RELIABLE = ("rla", "mtcp")
QUICK = ("switch-crash", "link-flap", "agent-kill")
DRAIN_S = 4.0


#: Seconds added before every fault for protocols whose start is slow by
#: design, so that the fault hits a session in its steady state: TFMCC
#: doubles once per feedback round (the TFMCC paper sec. 2.6); WEBRC climbs
#: from its 1 packet/s base channel by at most Gamma^3 per two epochs (the
#: WEBRC paper sec. 3.2), about 9 s to the scenarios' 4 Mb/s bottleneck, so
#: a fault at 6 s hit its start-up and measured the start-up's own dips.
WARMUP = {"tfmcc": 30.0, "webrc": 30.0}

#: Seconds every run goes on past the scenario's own end: a recovery slower
#: than the scenario's 5 s bound is then measured instead of "never".
TAIL_S = 10.0


def _buffer(agent):
    """The reliable receiver's in-order buffer (the object with ``cum_ack`` and ``delivered_bytes``)."""
    for v in vars(agent).values():
        if hasattr(v, "cum_ack") and hasattr(v, "delivered_bytes"):
            return v
    return None


def run_one(name: str, proto: str, control: bool = False) -> dict:
    from scenario.faults import faults_later, with_protocol
    from scenario.model import load_scenario

    sc = faults_later(with_protocol(load_scenario(SCENARIOS / f"{name}.yaml"), proto), WARMUP.get(proto, 0.0), TAIL_S)
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
            "before_bps": before}


def _mean_throughput(run, session, t0: float, t1: float) -> float | None:
    """The session's receivers' mean throughput sample in [t0, t1) (bit/s)."""
    vals = [x.value for x in run.recorder.samples
            if x.kind == "session" and x.flow == session.name and x.node in session.receivers
            and x.metric == "throughput_bps" and t0 <= x.time < t1]
    return sum(vals) / len(vals) if vals else None


def _build(sc):
    """The scenario set up in the simulator on the P4 switch."""
    from netsim.run import build_run
    from netsim.switches import choose_switch

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
    from scenario.faults import recovery_times

    worst: float | None = 0.0
    affected = False
    for f in sc.faults:
        for t in f.times(sc.duration):
            for rt in recovery_times(run.recorder.samples, sc, f, t).values():
                affected = True
                worst = None if rt is None or worst is None else max(worst, rt)
    return worst if affected else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--fault", action="append", help="scenario name(s) under topologies/scenarios/faults")
    ap.add_argument("--protocol", action="append", choices=PROTOCOLS)
    ap.add_argument("--jobs", type=int, default=1, help="simulations run at once (default 1)")
    ap.add_argument("--control", action="store_true",
                    help="also run each case with no fault and print its recovery figure (control s)")
    ap.add_argument("--docs", action="store_true", help="also write the table into docs/faults.md")
    a = ap.parse_args(argv)
    if a.jobs < 1:
        ap.error("--jobs must be at least 1")
    names = a.fault or (list(QUICK) if a.quick else sorted(p.stem for p in SCENARIOS.glob("*.yaml")
                                                           if p.stem != "processes"))
    protos = a.protocol or list(PROTOCOLS)
    print(f"{'fault':<20} {'protocol':<7} {'recover s':>9} {'control s':>9} {'before Mb/s':>11} {'lost B':>9} "
          f"{'restored at':>12} "
          f"{'fb msgs':>8} {'wall s':>7}")
    cases = [(n, p) for n in names for p in protos]
    if a.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(a.jobs)
        results = pool.map(run_one, *zip(*cases), [a.control] * len(cases))
    else:
        results = (run_one(n, p, a.control) for n, p in cases)
    rows: list[dict] = []
    for r in results:
        rows.append(r)
        n, p = r["fault"], r["protocol"]
        rec_s, ctrl_s = _figure(r["recover_s"]), _figure(r["control_s"])
        lost = "-" if r["lost_bytes"] is None else str(r["lost_bytes"])
        restored = ",".join(f"{t:.1f}" for t in r["restored"]) or "-"
        before = "-" if r["before_bps"] is None else f"{r['before_bps'] / 1e6:.2f}"
        print(f"{n:<20} {p:<7} {rec_s:>9} {ctrl_s:>9} {before:>11} {lost:>9} {restored:>12} {r['feedback']:>8} "
              f"{r['wall_s']:>7.1f}", flush=True)
    if a.docs:
        from bench import docsection

        docsection.write_section(ROOT / "docs" / "faults.md", "faults", markdown(rows, protos, a.control),
                                 docsection.command_line("bench/faults.py", argv))
    return 0


def markdown(rows: list[dict], protos: list[str], control: bool) -> str:
    """One row per fault, one column per protocol: recovery s (control s), lost bytes for the reliable ones."""
    cell: dict[tuple[str, str], str] = {}
    for r in rows:
        text = _figure(r["recover_s"])
        if control:
            text += f" ({_figure(r['control_s'])})"
        if r["lost_bytes"] is not None:
            text += f", {r['lost_bytes']} B lost"
        cell[r["fault"], r["protocol"]] = text
    faults = list(dict.fromkeys(r["fault"] for r in rows))
    head = "| fault | " + " | ".join(protos) + " |"
    lines = [head, "|---|" + "---|" * len(protos)]
    lines += ["| " + f + " | " + " | ".join(cell.get((f, p), "") for p in protos) + " |" for f in faults]
    legend = ("Seconds from the fault's end until the surviving receivers' mean throughput is back to 80 % of "
              "its level before it; `-`: the fault did not touch the session; `never`: not back by the end"
              + ("; in brackets the same figure over the same run with no fault (the control)" if control else "")
              + "; bytes lost: data some surviving receiver never got (RLA and MTCP).")
    return "\n".join(lines) + "\n\n" + legend


def _figure(rec: float | None | str) -> str:
    return "never" if rec is None else (rec if isinstance(rec, str) else f"{rec:.1f}")


if __name__ == "__main__":
    sys.exit(main())
