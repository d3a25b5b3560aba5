"""Simulator speed: events per second and simulated seconds per wall second.

(a) a 10 Mb/s dumbbell with 10 TCP NewReno/SACK flows for 60 s;
(b) TFMCC with 1000 receivers behind a 4-ary tree of switches for 60 s
    with model switches, P4 switch nodes (``p4switch`` running
    ``p4src/mcc.p4``) or both side by side (``--switch both``: CPU-time
    ratio P4/model, and whether both give the same results: the run's
    summary and every receiver's packets),
    with CPU time, events per CPU second and peak memory;
(c) the same dumbbell in ns-3 (PyPI ``ns3``, TcpNewReno with SACK) when it
    is installed, and the ratio of wall times.

Usage: python bench/sim_speed.py [--duration S] [--receivers N] [--switch model|p4|both]
                                 [--skip-dumbbell] [--skip-ns3] [--skip-tfmcc] [--progress S]
                                 [--interleave S] [--docs]

``--docs`` also writes what it prints into docs/performance.md.

The P4/model ratio: ``--switch both --no-assistance --interleave 1`` advances
both runs one simulated second at a time in turn, so the machine's drifting
speed weighs on both alike (see ``measure_interleaved``).

10^4 receivers: ``--receivers 10000 --duration 60 --switch both --progress 1``
(``--switch both`` runs the P4 nodes first at that size, then the model).
Beyond the 1024 hosts ``mcc.p4``'s route table holds, the controller
compresses the routes of the tree (``controller/routes.py``); a topology a
switch still cannot hold is reported as not run.

Peak memory is the process's peak RSS so far: with ``--switch both`` the
model run goes first (up to 1000 receivers), so the figure printed after
the P4 run is the P4 run's peak (the larger of the two).  With assistance (the default)
P4 nodes aggregate TFMCC's feedback and the model switch cannot, so the
two runs follow different trajectories; ``--no-assistance`` makes the P4
nodes replicate only, the model's work, for a like-for-like CPU ratio.  ``P4MCC_SIM_FASTPATH=0`` runs P4
nodes without their fast path (docs/performance.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from p4mcc.p4switch.native import PIPELINE_ENV  # noqa: E402
from p4mcc.netsim.run import build_run  # noqa: E402
from p4mcc.netsim.switches import SwitchUnavailable, choose_switch  # noqa: E402
from p4mcc.scenario.model import scenario_from_dict  # noqa: E402


def dumbbell_tcp(duration: float):
    return scenario_from_dict({
        "name": "dumbbell-10tcp", "duration": duration, "seed": 1, "metrics_interval": 1.0,
        "topology": {"generate": {"kind": "dumbbell", "pairs": 0, "tcp_pairs": 10, "rate": "10Mbps",
                                  "delay": "20ms", "queue": 100, "access_rate": "100Mbps"}},
        "tcp_flows": [{"src": f"tsrc{i}", "dst": f"tdst{i}", "start": 0.01 * i} for i in range(1, 11)],
    }, known_protocols=None)


def tfmcc_tree(duration: float, receivers: int, assistance: bool = True):
    return scenario_from_dict({
        "name": f"tfmcc-{receivers}", "duration": duration, "seed": 1, "metrics_interval": 1.0,
        "topology": {"generate": {"kind": "kary_tree", "k": 4, "receivers": receivers, "rate": "100Mbps",
                                  "delay": "2ms", "leaf_rate": "10Mbps", "leaf_delay": "5ms",
                                  "loss_distribution": "tfmcc"}},
        "sessions": [{"name": "tfmcc", "protocol": "tfmcc", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.1.1", "port": 5001, "assistance": assistance}],
    }, known_protocols=None)


def _build(sc: Any, kind: str) -> Any:
    """The run for ``kind``: ``model``, ``p4`` (P4 nodes on the interpreter) or
    ``native`` (P4 nodes on the compiled pipeline)."""
    old = os.environ.get(PIPELINE_ENV)
    os.environ[PIPELINE_ENV] = "native" if kind == "native" else "interp"
    try:
        run = build_run(sc, switch=choose_switch("p4" if kind == "native" else kind, sc))
    finally:
        if old is None:
            os.environ.pop(PIPELINE_ENV, None)
        else:
            os.environ[PIPELINE_ENV] = old
    if kind == "native":
        run.switch_kind = "p4 (native)"
    return run


def _first_node(sc: Any, kind: str) -> float:
    """CPU seconds of building one P4 node of ``kind`` (``p4`` or ``native``)
    before the network: what only the first node pays (compiling the
    program, lowering it, building or loading the native module), so the
    network's setup that follows is what every further node costs.  0 for
    the model switch, or when an earlier run of this process paid it."""
    if kind == "model":
        return 0.0
    from p4mcc.netsim import p4_switch

    old = os.environ.get(PIPELINE_ENV)
    os.environ[PIPELINE_ENV] = "native" if kind == "native" else "interp"
    s0 = time.process_time()
    try:
        p4_switch.new_switch(p4_switch.load_program(), seed=sc.seed)
    finally:
        if old is None:
            os.environ.pop(PIPELINE_ENV, None)
        else:
            os.environ[PIPELINE_ENV] = old
    return time.process_time() - s0


def _setup_text(b: dict[str, Any], model_setup: float | None) -> str:
    """'setup S s CPU', with a P4 run's first node and cost per further node:
    its setup beyond the model switch's (same scenario) over its node count,
    or its whole setup over its node count when the model was not run."""
    text = f"setup {b['setup_cpu_s']:.2f} s CPU"
    if b["switch"] == "model":
        return text
    extra = b["setup_cpu_s"] - (model_setup or 0.0)
    beyond = " beyond the model's" if model_setup is not None else ""
    return (text + f" (first node {b['first_node_cpu_s']:.2f} s before it; "
            f"{extra / max(b['nodes'], 1) * 1e3:.1f} ms per P4 node{beyond})")


def measure(sc, switch: str = "model", progress: float = 0.0) -> dict[str, Any]:
    first = _first_node(sc, switch)
    s0 = time.process_time()
    run = _build(sc, switch)
    setup = time.process_time() - s0
    t0, c0 = time.perf_counter(), time.process_time()
    if progress > 0:  # a long run reports as it goes (simulated time, events, CPU, peak RSS)
        t = 0.0
        while t < sc.duration:
            t = min(sc.duration, t + progress)
            run.sim.run(until=t)
            cpu = time.process_time() - c0
            print(f"    [{switch}] {t:.0f} s simulated: {run.sim.events} events, {cpu:.1f} s CPU "
                  f"({run.sim.events / max(cpu, 1e-9):,.0f} per CPU s), peak RSS {_rss_mib():.0f} MiB", flush=True)
    else:
        run.sim.run(until=sc.duration)
    return _figures(run, sc.duration, time.process_time() - c0, time.perf_counter() - t0, setup, first)


def _figures(run: Any, duration: float, cpu: float, wall: float, setup: float, first: float) -> dict[str, Any]:
    """What ``measure`` reports of one finished run."""
    return {"events": run.sim.events, "wall_s": wall, "cpu_s": cpu, "events_per_s": run.sim.events / cpu,
            "sim_per_wall": duration / wall, "sim_per_cpu": duration / cpu,
            "switch": run.switch_kind, "run": run, "setup_cpu_s": setup, "first_node_cpu_s": first,
            "nodes": len(run.net.switches)}


def measure_interleaved(scs: dict[str, Any], step: float, progress: bool) -> dict[str, dict[str, Any]]:
    """``measure`` for several switch kinds at once: every run is built
    first, then each advances ``step`` simulated seconds in turn, and the
    CPU time of each slice goes to its run.  This machine's speed moved by
    half between runs minutes apart (the model's 60 s took 118-169 CPU s on
    one day), so a ratio of two runs made one after the other measures the
    machine as much as the switches; slices a few CPU seconds long see the
    same machine.  Peak RSS is then both runs' together."""
    runs: dict[str, Any] = {}
    setup: dict[str, float] = {}
    first: dict[str, float] = {}
    for kind, sc in scs.items():
        first[kind] = _first_node(sc, kind)
        s0 = time.process_time()
        runs[kind] = _build(sc, kind)
        setup[kind] = time.process_time() - s0
    duration = next(iter(scs.values())).duration
    cpu = dict.fromkeys(scs, 0.0)
    wall = dict.fromkeys(scs, 0.0)
    t = 0.0
    while t < duration:
        t = min(duration, t + step)
        for kind, run in runs.items():
            t0, c0 = time.perf_counter(), time.process_time()
            run.sim.run(until=t)
            cpu[kind] += time.process_time() - c0
            wall[kind] += time.perf_counter() - t0
        if progress:
            print(f"    {t:.0f} s simulated: " + ", ".join(
                f"[{k}] {r.sim.events} events, {cpu[k]:.1f} s CPU" for k, r in runs.items())
                + (f", P4/model {cpu['p4'] / cpu['model']:.2f}" if {"p4", "model"} <= cpu.keys() else ""),
                flush=True)
    return {k: _figures(r, duration, cpu[k], wall[k], setup[k], first[k]) for k, r in runs.items()}


def _results(run: Any) -> dict[str, Any]:
    """What must not depend on the kind of switch: the run's summary (no
    wall time in it) and each receiver's count of data packets."""
    return {"summary": run.recorder.summarize(),
            "packets": {n: getattr(a, "packets", None) for n, a in sorted(run.agents.items())}}


def _same_results(a: dict[str, Any], b: dict[str, Any]) -> str:
    """'yes', or what differs first between two runs' ``_results``."""
    if a == b:
        return "yes (summary and every receiver's packets)"
    differ = [n for n in a["packets"] if a["packets"][n] != b["packets"].get(n)]
    if differ:
        n = differ[0]
        return f"no: {len(differ)} receivers' packets differ ({n}: {a['packets'][n]} against {b['packets'][n]})"
    return "no: the summaries differ"


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


NS3_SCRIPT = r'''
import sys, time
from ns import ns
dur = float(sys.argv[1])
ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
left = ns.NodeContainer(); left.Create(10)
right = ns.NodeContainer(); right.Create(10)
routers = ns.NodeContainer(); routers.Create(2)
stack = ns.InternetStackHelper(); stack.InstallAll()
bott = ns.PointToPointHelper()
bott.SetDeviceAttribute("DataRate", ns.StringValue("10Mbps"))
bott.SetChannelAttribute("Delay", ns.StringValue("20ms"))
bott.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("100p"))
acc = ns.PointToPointHelper()
acc.SetDeviceAttribute("DataRate", ns.StringValue("100Mbps"))
acc.SetChannelAttribute("Delay", ns.StringValue("1ms"))
addr = ns.Ipv4AddressHelper()
def link(h, a, b, net):
    d = h.Install(a, b)
    addr.SetBase(ns.Ipv4Address(net), ns.Ipv4Mask("255.255.255.0"))
    ifs = addr.Assign(d)
    # no queue disc above the device: its 100-packet DropTail is the queue, as in netsim
    ns.TrafficControlHelper().Uninstall(d)
    return ifs
link(bott, routers.Get(0), routers.Get(1), "10.100.0.0")
rights = []
sinks = []
for i in range(10):
    link(acc, left.Get(i), routers.Get(0), f"10.1.{i}.0")
    rights.append(link(acc, right.Get(i), routers.Get(1), f"10.2.{i}.0"))
ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
for i in range(10):
    sinkaddr = ns.InetSocketAddress(rights[i].GetAddress(0), 5000 + i)
    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", sinkaddr.ConvertTo())
    app = sink.Install(right.Get(i))
    app.Start(ns.Seconds(0))
    sinks.append(app.Get(0))
    src = ns.BulkSendHelper("ns3::TcpSocketFactory", sinkaddr.ConvertTo())
    src.SetAttribute("MaxBytes", ns.UintegerValue(0))
    src.Install(left.Get(i)).Start(ns.Seconds(0.01 * (i + 1)))
ns.Simulator.Stop(ns.Seconds(dur))
t0 = time.process_time()
ns.Simulator.Run()
cpu = time.process_time() - t0
total = sum(ns.cppyy.gbl.ns3.DynamicCast[ns.PacketSink](a).GetTotalRx() for a in sinks)
print(cpu, total * 8 / dur)
ns.Simulator.Destroy()
'''


def ns3_dumbbell(duration: float) -> tuple[float, float] | str:
    # looked up, not imported: loading ns-3 here would add its half a gigabyte
    # to this process's peak memory, which the bench reports for the simulator
    if importlib.util.find_spec("ns") is None:
        return "ns-3 not installed (make bench-peers)"
    out = subprocess.run([sys.executable, "-c", NS3_SCRIPT, str(duration)], capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        return "ns-3 run failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    cpu, goodput = out.stdout.strip().splitlines()[-1].split()
    return float(cpu), float(goodput)


def dumbbell(args: argparse.Namespace) -> None:
        a = measure(dumbbell_tcp(args.duration))
        run = a["run"]
        thr = sum(f.receiver.delivered_bytes for f in run.tcp.values()) * 8 / args.duration
        print(f"(a) dumbbell, 10 TCP flows, {args.duration:.0f} s: {a['events']} events in {a['wall_s']:.2f} s wall "
              f"({a['cpu_s']:.2f} s CPU) -> {a['events_per_s']:,.0f} events per CPU s, "
              f"{a['sim_per_wall']:.1f} simulated s per wall s ({a['sim_per_cpu']:.1f} per CPU s) "
              f"(aggregate goodput {thr / 1e6:.2f} Mb/s of 10)")
        if not args.skip_ns3:
            ns3 = ns3_dumbbell(args.duration)
            if isinstance(ns3, tuple):
                cpu, goodput = ns3
                print(f"    ns-3 same dumbbell (TcpNewReno + SACK): {cpu:.2f} s CPU -> {args.duration / cpu:.1f} "
                      f"simulated s per CPU s (aggregate goodput {goodput / 1e6:.2f} Mb/s); "
                      f"netsim/ns-3 CPU-time ratio {a['cpu_s'] / cpu:.1f}")
            else:
                print(f"    ns-3: {ns3}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--receivers", type=int, default=1000)
    ap.add_argument("--switch", default="model", choices=["model", "p4", "native", "both", "all"],
                    help="p4: P4 nodes on the interpreter; native: on the compiled pipeline; "
                         "both: model and p4 (--pipeline picks which P4); all: model, p4 and native")
    ap.add_argument("--pipeline", default="native", choices=["interp", "native"],
                    help="the P4 nodes' pipeline for --switch both")
    ap.add_argument("--skip-dumbbell", action="store_true")
    ap.add_argument("--skip-tfmcc", action="store_true")
    ap.add_argument("--demo", action="store_true",
                    help="also run the demo scenario (topologies/scenarios/demo.yaml) on each --switch kind")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--no-assistance", action="store_true",
                    help="TFMCC session without switch assistance: P4 nodes only replicate, as the model "
                         "switch does, so both kinds run the same trajectory and their CPU times compare "
                         "like for like")
    ap.add_argument("--progress", type=float, default=0.0, metavar="S",
                    help="TFMCC runs: print progress every S simulated seconds")
    ap.add_argument("--interleave", type=float, default=0.0, metavar="S",
                    help="with --switch both: build both runs, then advance them S simulated seconds "
                         "in turn, so the machine's drifting speed weighs on both alike")
    ap.add_argument("--docs", action="store_true", help="also write the printed figures into docs/performance.md")
    args = ap.parse_args()
    if args.docs:
        from bench import docsection

        with docsection.Tee() as out:
            status = _run(args)
        docsection.write_section(ROOT / "docs" / "performance.md", "sim-speed", docsection.fenced(out.text()),
                                 docsection.command_line("bench/sim_speed.py"))
        return status
    return _run(args)


def demo(kinds: list[str]) -> None:
    """The demo scenario (as ``p4mcc sim`` runs it, without the plots) on each kind."""
    from p4mcc.scenario.model import load_scenario

    results: dict[str, Any] = {}
    cpu: dict[str, float] = {}
    setups: dict[str, float] = {}
    for kind in kinds:
        sc = load_scenario(ROOT / "topologies" / "scenarios" / "demo.yaml")
        b = measure(sc, kind)
        cpu[kind] = b["cpu_s"]
        setups[kind] = b["setup_cpu_s"]
        results[kind] = _results(b["run"])
        print(f"(c) demo ({sc.duration:.0f} s), {b['switch']} switches: {b['events']} events, {b['cpu_s']:.1f} s CPU "
              f"-> {b['events_per_s']:,.0f} events per CPU s, {_setup_text(b, setups.get('model'))}", flush=True)
    if "p4" in cpu and "native" in cpu:
        print(f"    demo interpreted/native CPU-time ratio {cpu['p4'] / cpu['native']:.2f}; "
              f"same results: {_same_results(results['p4'], results['native'])}")


def _run(args: argparse.Namespace) -> int:

    if not args.skip_dumbbell:
        dumbbell(args)
    if args.demo:
        p4 = "native" if args.pipeline == "native" else "p4"
        demo({"both": ["model", p4], "all": ["model", "p4", "native"]}.get(args.switch, [args.switch]))
    if not args.skip_tfmcc:
        p4 = "native" if args.pipeline == "native" else "p4"
        kinds = {"both": ["model", p4], "all": ["model", "p4", "native"]}.get(args.switch, [args.switch])
        if args.switch == "both" and args.receivers > 1000:
            kinds.reverse()  # the P4 attempt (or its refusal) first, not after hours of the model
        cpu: dict[str, float] = {}
        setups: dict[str, float] = {}
        events: dict[str, int] = {}
        results: dict[str, dict[str, Any]] = {}
        together: dict[str, dict[str, Any]] = {}
        scs: dict[str, Any] = {}
        if args.interleave > 0 and len(kinds) >= 2:
            scs = {k: tfmcc_tree(args.duration, args.receivers, assistance=not args.no_assistance) for k in kinds}
            try:
                together = measure_interleaved(scs, args.interleave, args.progress > 0)
            except SwitchUnavailable as e:
                print(f"(b) TFMCC, {args.receivers} receivers: not run: {e}", flush=True)
                return 0
        for kind in kinds:
            sc = scs[kind] if together else tfmcc_tree(args.duration, args.receivers,
                                                      assistance=not args.no_assistance)
            try:
                b = together.pop(kind) if together else measure(sc, kind, args.progress)
            except SwitchUnavailable as e:  # e.g. more routes than a switch's table holds
                print(f"(b) TFMCC, {args.receivers} receivers, {len(sc.topology.switches)} {kind} switches: "
                      f"not run: {e}", flush=True)
                continue
            rss = _rss_mib()
            snd = b["run"].agents.get("tfmcc/snd")
            rate = getattr(snd, "rate", float("nan"))
            cpu[kind], events[kind] = b["cpu_s"], b["events"]
            setups[kind] = b["setup_cpu_s"]
            results[kind] = _results(b["run"])
            print(f"(b) TFMCC, {args.receivers} receivers, {len(sc.topology.switches)} {b['switch']} switches, "
                  f"{args.duration:.0f} s: {b['events']} events in {b['wall_s']:.1f} s wall ({b['cpu_s']:.1f} s CPU) -> "
                  f"{b['events_per_s']:,.0f} events per CPU s, {b['sim_per_wall']:.2f} simulated s per wall s "
                  f"({b['sim_per_cpu']:.2f} per CPU s), {_setup_text(b, setups.get('model'))}, "
                  f"peak RSS {rss:.0f} MiB, final sender rate {rate / 1e3:.0f} kb/s", flush=True)
            del b, sc
        how = f", interleaved every {args.interleave:g} simulated s" if args.interleave > 0 else ""
        for k in ("p4", "native"):
            if "model" in cpu and k in cpu:
                per_event = (cpu[k] / events[k]) / (cpu["model"] / events["model"])
                name = "P4" if k == "p4" else "P4 native"
                print(f"    {name}/model CPU-time ratio {cpu[k] / cpu['model']:.2f} (per event {per_event:.2f}{how})")
                print(f"    same results ({name}, model): {_same_results(results['model'], results[k])}"
                      + ("" if args.no_assistance else " (with assistance the P4 nodes aggregate feedback and "
                                                         "the model cannot: the runs need not agree)"))
        if "p4" in cpu and "native" in cpu:
            print(f"    interpreted/native CPU-time ratio {cpu['p4'] / cpu['native']:.2f}; "
                  f"same results: {_same_results(results['p4'], results['native'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
