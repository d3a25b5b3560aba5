"""Reproduce the five protocols' paper headline results in the simulator.

Runs every scenario in ``topologies/scenarios/paper/`` that belongs to a claim
(RLA, MTCP, VLMCC in depth; WEBRC's equation and coordination results;
TFMCC's fairness to TCP) with model switches -- the claims are about
end-to-end congestion control, not switch assistance -- over several seeds,
extracts the metric each claim is about and prints one table: protocol,
claim, the paper's number and ours (mean +- half the range over seeds) with
a verdict under each profile: ``paper`` (the published algorithm, no named
rule) beside ``default`` (paper plus the rules that earn their place) and
``stamped`` (``default`` plus the rules that read the congestion stamp; the
claims run on model switches, which stamp nothing, so any difference from
``default`` is a stamped rule acting on an empty stamp).  A second table
counts each job's stall episodes per profile (``netsim/liveness.py``).

    .venv/bin/python bench/paper_results.py            # full: 3 seeds, the files' durations
    .venv/bin/python bench/paper_results.py --quick    # 1 seed, shorter runs
    .venv/bin/python bench/paper_results.py --only rla --seeds 1 2
    .venv/bin/python bench/paper_results.py --write-sweeps   # after changing JOBS or a paper scenario
    .venv/bin/python bench/paper_results.py --docs     # also write the table into docs/paper-results.md

No run overrides a protocol parameter: a scenario file sets only what its
paper sets (packet sizes, MTCP's tree, the number of RLA receivers, VLMCC's
leader ACKing every packet, WEBRC's shared MRTT), and everything else is
the profile's.  The sweep varies only what the paper's figure varies
(receivers, a queue the paper leaves open, start offsets) and the profile.

The runs are sweep files, ``bench/sweeps/paper/<job>.yaml`` (generated from
:data:`JOBS` and the scenario files), run as one batch by the sweep executor
(``p4mcc sweep``'s: all cores by default, ``--scheduler`` for a Dask
cluster; finished points are kept under ``--out`` and not run again).  The
claims read each point's table rows and what :func:`probe` collects inside
the run (reliable goodput, sender counters, agents' records).

Every metric is measured after a warm-up (per job, see :data:`JOBS`; the
sweep's steady-state window starts there):
throughput from the engine's own per-interval samples (multicast payload
bytes reaching each receiver's session port; TCP bytes delivered in order),
goodput of the reliable protocols from the bytes their receivers delivered
in order, so every protocol is measured the same way.  Verdicts compare the
mean against bands written next to each claim (docs/paper-results.md says
why each band).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from p4mcc.scenario.model import Scenario, load_scenario  # noqa: E402

PAPER_DIR = ROOT / "topologies" / "scenarios" / "paper"
PKT_BITS = 8000  # 1000-byte payloads: packets per second = payload bit/s / 8000


# Running one scenario ---------------------------------------------------------


@dataclass
class Run:
    """What one simulation leaves for the metric functions (picklable)."""

    name: str
    seed: int
    warmup: float
    duration: float
    #: (kind, flow, node) -> mean payload bit/s over samples after the warm-up.
    thr: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: session name -> sender counters (RLA: signals/cuts; all: packets sent).
    sender: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: TCP flow name -> {"fast_recoveries", "timeouts", "segments_sent"}.
    tcp: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Agents' metric records the claims read (VLMCC sender: leader; WEBRC receivers: ARTT).
    records: list[dict[str, Any]] = field(default_factory=list)
    #: host name -> IPv4 address.
    ips: dict[str, str] = field(default_factory=dict)
    #: The sessions' profile (one of :data:`PROFILES`).
    profile: str = "default"
    #: Stall episodes over the whole run (``netsim/liveness.py``): a receiver of a
    #: session that could deliver went 5 s without delivering.
    stalls: int = 0
    #: session name -> its receivers.
    receivers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: (session, receiver) -> in-order bytes delivered to the application after the warm-up, bit/s.
    goodput: dict[tuple[str, str], float] = field(default_factory=dict)
    cpu_s: float = 0.0

    def session_mean(self, session: str) -> float:
        """Mean receiver payload throughput (bit/s) of a session after the warm-up."""
        xs = [v for (k, f, n), v in self.thr.items() if k == "session" and f == session
              and n in self.receivers.get(session, ())]
        return statistics.fmean(xs) if xs else 0.0

    def session_goodput(self, session: str) -> float:
        """Mean receiver goodput (bit/s) of a reliable session: data delivered in order,
        whether it came by multicast or by a unicast repair."""
        xs = [self.goodput[(session, r)] for r in self.receivers.get(session, ()) if (session, r) in self.goodput]
        return statistics.fmean(xs) if xs else self.session_mean(session)

    def tcp_mean(self, flows: list[str] | None = None) -> float:
        xs = [v for (k, f, _), v in self.thr.items() if k == "tcp" and (flows is None or f in flows)]
        return statistics.fmean(xs) if xs else 0.0


def _rbuf(agent: Any) -> Any:
    """A reliable receiver's in-order buffer (RLA ``buf``, MTCP ``rbuf``), else None."""
    for name in ("rbuf", "buf"):
        b = getattr(agent, name, None)
        if b is not None and hasattr(b, "delivered_bytes"):
            return b
    return None


SENDER_COUNTERS = ("congestion_signals", "forced_cuts", "random_cuts", "ignored_signals",
                   "num_trouble_rcvr", "awnd", "packets_sent", "leader_changes",
                   "timeouts", "timer_rexmits", "nack_rexmits", "cwnd_cuts")


def probe(run: Any) -> Callable[[], dict[str, Any]]:
    """What the claims need beyond the sweep table, collected inside the run.

    Called (on whichever worker runs the point) once the network is built:
    snapshots the reliable receivers' in-order bytes at the warm-up (the
    start of the scenario's steady-state window) and returns the function
    that, after the run, reports goodput, sender counters, TCP loss events,
    the metric records the claims read, host addresses and receivers.
    """
    scenario = run.recorder.scenario
    warmup, end = scenario.steady_bounds()
    at_warmup: dict[str, int] = {}

    def snapshot() -> None:
        for label, agent in run.agents.items():
            buf = _rbuf(agent)
            if buf is not None:
                at_warmup[label] = buf.delivered_bytes

    run.sim.at(warmup, snapshot)

    def finish() -> dict[str, Any]:
        from p4mcc.netsim.liveness import count_stalls

        span = end - warmup
        goodput = {}
        for label, agent in run.agents.items():
            buf = _rbuf(agent)
            if buf is not None:
                goodput[label] = (buf.delivered_bytes - at_warmup.get(label, 0)) * 8 / span
        sender = {}
        for s in scenario.sessions:
            agent = run.agents[f"{s.name}/{s.sender}"]
            sender[s.name] = {c: getattr(agent, c) for c in SENDER_COUNTERS if hasattr(agent, c)}
        tcp = {name: {"fast_recoveries": f.sender.stats.fast_recoveries, "timeouts": f.sender.stats.timeouts,
                      "segments_sent": f.sender.stats.segments_sent} for name, f in run.tcp.items()}
        keep = {f"{s.name}/{s.sender}" for s in scenario.sessions if s.protocol == "vlmcc"}
        keep |= {f"{s.name}/{r}" for s in scenario.sessions if s.protocol == "webrc" for r in s.receivers}
        return {
            "goodput": goodput, "sender": sender, "tcp": tcp,
            "records": [r for r in run.recorder.records if r.get("label") in keep],
            "ips": {n: h.ip for n, h in scenario.topology.hosts.items()},
            "receivers": {s.name: list(s.receivers) for s in scenario.sessions},
            "warmup": warmup, "duration": scenario.duration, "name": scenario.name, "seed": scenario.seed,
            "profile": scenario.sessions[0].profile if scenario.sessions else "default",
            "stalls": count_stalls(run.recorder.events),
        }

    return finish


#: Names what :func:`probe` collects (part of each point's id: change it when the probe changes).
PROBE_KEY = "paper_results/3"


def run_from(rows: list[dict[str, Any]], extra: dict[str, Any]) -> Run:
    """A :class:`Run` from one point's table rows (steady window = after the
    warm-up) and its probe."""
    out = Run(extra["name"], extra["seed"], extra["warmup"], extra["duration"])
    for r in rows:
        if r["kind"] in ("receiver", "tcp") and r.get("steady_throughput_bps") is not None:
            out.thr[("session" if r["kind"] == "receiver" else "tcp", r["flow"], r["node"])] = \
                r["steady_throughput_bps"]
    out.goodput = {tuple(k.split("/", 1)): v for k, v in extra["goodput"].items()}  # type: ignore[misc]
    out.sender = extra["sender"]
    out.tcp = extra["tcp"]
    out.records = extra["records"]
    out.ips = extra["ips"]
    out.receivers = {k: tuple(v) for k, v in extra["receivers"].items()}
    out.profile = extra.get("profile", "default")
    out.stalls = int(extra.get("stalls", 0))
    return out


def simulate(scenario: Scenario, warmup: float) -> Run:
    """Run one scenario here (model switches) and measure after ``warmup``:
    the same point function and probe the sweeps use."""
    from p4mcc.netsim.run import run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.sweep.point import rows_from_summary
    from p4mcc.sweep.spec import Metrics

    sc = dataclasses.replace(scenario, steady_window=(warmup, scenario.duration))
    t0 = time.process_time()
    finish: list[Callable[[], dict[str, Any]]] = []
    run = run_scenario(sc, None, switch=choose_switch("model"), before_run=lambda r: finish.append(probe(r)))
    out = run_from(rows_from_summary(run.summary, Metrics()), finish[0]())
    out.cpu_s = time.process_time() - t0
    return out


# Scenario variants --------------------------------------------------------------


def load(name: str) -> Scenario:
    return load_scenario(PAPER_DIR / f"{name}.yaml")


def with_receivers(sc: Scenario, session: str, n: int) -> Scenario:
    """Keep the first ``n`` receivers of ``session`` (and their entries of an MTCP tree)."""
    sessions = []
    for s in sc.sessions:
        if s.name == session:
            keep = s.receivers[:n]
            ips = {sc.topology.hosts[r].ip for r in keep}
            params = dict(s.params)
            if params.get("tree"):
                params["tree"] = ",".join(e for e in params["tree"].split(",") if e.split(">")[0] in ips)
            if params.get("receivers"):
                params["receivers"] = n
            s = dataclasses.replace(s, receivers=tuple(keep), params=params)
        sessions.append(s)
    return dataclasses.replace(sc, sessions=sessions)


@dataclass(frozen=True)
class Job:
    """One sweep file of ``bench/sweeps/paper/``: a scenario, a variant, durations."""

    key: str
    scenario: str
    duration: float
    warmup: float
    quick_duration: float
    quick_warmup: float
    receivers: tuple[str, int] | None = None
    queue: tuple[str, str, int] | None = None
    #: TCP start offsets by seed (cycled), relative to the sessions (negative: sessions later).
    tcp_offsets: tuple[float, ...] = ()

    @property
    def sweep_file(self) -> Path:
        return SWEEP_DIR / f"{self.key}.yaml"

    def sweep_doc(self, seeds: list[int]) -> dict[str, Any]:
        """The sweep file: the scenario file as base, the variant as fixed
        settings, the profiles and the seeds as the axes (every session of a
        point runs the same profile)."""
        import os

        base = load(self.scenario)
        fixed: dict[str, Any] = {"duration": self.duration, "steady_window": [self.warmup, self.duration]}
        if self.receivers:
            i, s = next((i, s) for i, s in enumerate(base.sessions) if s.name == self.receivers[0])
            sub = with_receivers(base, *self.receivers).sessions[i]
            fixed[f"sessions[{i}].receivers"] = list(sub.receivers)
            for k in ("tree", "receivers"):
                if s.params.get(k):
                    fixed[f"sessions[{i}].params.{k}"] = sub.params[k]
        if self.queue:
            a, b, packets = self.queue
            i = next(i for i, l in enumerate(base.topology.links) if {l.a.node, l.b.node} == {a, b})
            fixed[f"topology.links[{i}].queue"] = packets
        profiles = {f"sessions[{i}].profile": list(PROFILES) for i in range(len(base.sessions))}
        axes: dict[str, Any] = {"profile": {"zip": profiles}, "seed": seeds}
        if self.tcp_offsets:
            offs = [self.tcp_offsets[n % len(self.tcp_offsets)] for n in range(len(seeds))]
            group: dict[str, list[Any]] = {"seed": seeds}
            for i in range(len(base.tcp_flows)):
                group[f"tcp_flows[{i}].start"] = [max(0.0, o) for o in offs]
            for i in range(len(base.sessions)):
                group[f"sessions[{i}].start"] = [max(0.0, -o) for o in offs]
            axes = {"profile": {"zip": profiles}, "seed_and_start": {"zip": group}}
        return {
            "name": f"paper-{self.key}",
            "description": f"bench/paper_results.py runs of {self.scenario}.yaml (generated by --write-sweeps)",
            "base": os.path.relpath(PAPER_DIR / f"{self.scenario}.yaml", SWEEP_DIR),
            "switch": "model",
            "set": fixed,
            "axes": axes,
            "metrics": {"kinds": ["session", "receiver", "tcp"], "names": ["throughput_bps", "tcp_friendliness"]},
        }

    def build(self, seed: int = 1, quick: bool = True, profile: str = "default") -> Scenario:
        """The scenario of one seed and profile, as the sweep file builds it (for checks and single runs)."""
        from p4mcc.sweep.spec import validate
        from p4mcc.scenario.model import scenario_from_dict

        sw = self.load_sweep(quick)
        pts = [p for p in validate(sw) if p.scenario.get("seed") == seed
               and p.scenario["sessions"][0].get("profile") == profile]
        return scenario_from_dict(pts[0].scenario, base=sw.base_dir)

    def load_sweep(self, quick: bool) -> Any:
        """The sweep file, with the quick durations when asked."""
        from dataclasses import replace

        from p4mcc.sweep.spec import load_sweep

        sw = load_sweep(self.sweep_file)
        if quick:
            sw = replace(sw, fixed={**sw.fixed, "duration": self.quick_duration,
                                    "steady_window": [self.quick_warmup, self.quick_duration]})
        return sw


SWEEP_DIR = ROOT / "bench" / "sweeps" / "paper"
SWEEP_SEEDS = [1, 2, 3, 4, 5]
#: The profiles every claim is measured under, in the table's column order.
PROFILES = ("paper", "default", "stamped")

#: Every simulation the claims read: (key, scenario, full duration, warm-up, quick duration, warm-up, variant).
JOBS: list[Job] = [
    Job("rla-tcp", "rla-tcp-sharing", 300.0, 50.0, 120.0, 30.0),
    Job("rla-two", "rla-two-sessions", 300.0, 50.0, 120.0, 30.0),
    Job("mtcp-tree30", "mtcp-scaling-tree", 120.0, 20.0, 40.0, 10.0),
    Job("mtcp-tree5", "mtcp-scaling-tree", 120.0, 20.0, 40.0, 10.0, receivers=("mtcp", 5)),
    Job("mtcp-flat30", "mtcp-scaling-flat", 120.0, 20.0, 40.0, 10.0),
    Job("mtcp-loss30", "mtcp-independent-loss", 120.0, 20.0, 40.0, 10.0),
    Job("mtcp-fair4", "mtcp-interfairness-4", 120.0, 20.0, 40.0, 10.0),
    Job("mtcp-fair12", "mtcp-interfairness-12", 120.0, 20.0, 40.0, 10.0),
    Job("vlmcc-fig4", "vlmcc-fig4", 120.0, 20.0, 60.0, 20.0, tcp_offsets=(5.0, -5.0, 15.0, -15.0, 0.0)),
    Job("vlmcc-fig4-q5", "vlmcc-fig4", 120.0, 20.0, 60.0, 20.0, queue=("router1", "router2", 5),
        tcp_offsets=(5.0, -5.0, 15.0, -15.0, 0.0)),
    Job("vlmcc-fig5", "vlmcc-fig5-6", 60.0, 0.0, 60.0, 0.0),
    Job("webrc-eq", "webrc-equation", 500.0, 250.0, 300.0, 150.0),
    Job("webrc-fig3", "webrc-fig3", 150.0, 120.0, 150.0, 120.0),
    Job("tfmcc-fig9", "tfmcc-fig9", 200.0, 50.0, 120.0, 50.0),
    Job("tfmcc-fig10", "tfmcc-fig10", 200.0, 50.0, 120.0, 50.0),
]


def write_sweeps() -> list[Path]:
    """(Re)write ``bench/sweeps/paper/*.yaml`` from :data:`JOBS` and the scenario files."""
    import yaml

    SWEEP_DIR.mkdir(parents=True, exist_ok=True)
    out = []
    for job in JOBS:
        head = (f"# {job.key}: runs of topologies/scenarios/paper/{job.scenario}.yaml for the paper claims\n"
                f"# of bench/paper_results.py (generated by its --write-sweeps; do not edit by hand).\n"
                f"# Run: p4mcc sweep bench/sweeps/paper/{job.key}.yaml --out results/sweeps/paper-{job.key}\n")
        job.sweep_file.write_text(head + yaml.safe_dump(job.sweep_doc(SWEEP_SEEDS), sort_keys=False, width=120))
        out.append(job.sweep_file)
    return out


def run_sweeps(jobs: list[Job], quick: bool, seeds: list[int], out: Path, scheduler: str | None,
               workers: int | None, progress: bool = True,
               profiles: tuple[str, ...] = PROFILES) -> dict[str, dict[str, list[Run]]]:
    """Run the jobs' sweep files (the chosen seeds and profiles) as one batch
    through the sweep executor; returns profile -> job key -> one :class:`Run`
    per seed, read back from the tables."""
    import json

    import cloudpickle
    import pyarrow.parquet as pq

    from p4mcc.sweep.execute import run_many
    from p4mcc.sweep.spec import validate
    from p4mcc.sweep.store import PROBES, RESULTS

    if __name__ != "__main__":  # workers cannot import this file: ship the probe by value
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    batch = []
    for job in jobs:
        sw = job.load_sweep(quick)
        pts = [p for p in validate(sw) if p.scenario.get("seed") in seeds
               and p.scenario["sessions"][0].get("profile") in profiles]
        batch.append((sw, out / ("quick" if quick else "full") / job.key, pts))
    outcomes = run_many(batch, scheduler=scheduler, workers=workers, progress=progress,
                        probe=probe, probe_key=PROBE_KEY)
    runs: dict[str, dict[str, list[Run]]] = {p: {} for p in profiles}
    for job, (_, d, _), res in zip(jobs, batch, outcomes):
        for p, err in res.failed:
            print(f"{job.key} point {p.index}: {err}", file=sys.stderr)
        rows = pq.read_table(d / RESULTS).to_pylist()
        if not (d / PROBES).exists():
            continue
        for pr in pq.read_table(d / PROBES).to_pylist():
            mine = [r for r in rows if r["point"] == pr["point"]]
            run = run_from(mine, json.loads(pr["probe"]))
            runs.setdefault(run.profile, {}).setdefault(job.key, []).append(run)
    return runs


# Metrics: one function per claim, over the runs of its job key -------------------


def rla_tcp_ratio(r: Run) -> float:
    """RLA throughput over the mean TCP throughput on the soft-bottleneck branches."""
    return r.session_goodput("rla") / r.tcp_mean()


def rla_cut_fraction(r: Run) -> float:
    """Window cuts (random + forced) per congestion signal."""
    s = r.sender["rla"]
    return (s["random_cuts"] + s["forced_cuts"]) / max(1, s["congestion_signals"])


def rla_signal_frequency_ratio(r: Run) -> float:
    """Congestion signals per RLA receiver over congestion events per TCP flow (paper Fig. 8)."""
    s = r.sender["rla"]
    per_rcvr = s["congestion_signals"] / len(r.receivers["rla"])
    tcp = statistics.fmean(t["fast_recoveries"] + t["timeouts"] for t in r.tcp.values())
    return per_rcvr / max(1.0, tcp)


def rla_two_session_ratio(r: Run) -> float:
    a, b = r.session_goodput("rla"), r.session_goodput("rla2")
    return min(a, b) / max(a, b)


def rla_two_tcp_ratio(r: Run) -> float:
    return statistics.fmean([r.session_goodput("rla"), r.session_goodput("rla2")]) / r.tcp_mean()


def mtcp_mbps(r: Run) -> float:
    return r.session_goodput("mtcp") / 1e6


def jain_sessions(r: Run) -> float:
    xs = [r.session_goodput(s) for s in r.receivers]
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


#: Goodput of the loss-free tree per seed, filled by :func:`evaluate` for the loss ratio.
_NO_LOSS: dict[int, float] = {}


def mtcp_loss_ratio(r: Run) -> float:
    """Goodput with 1 % independent receiver loss over the same tree without it (same seed)."""
    return r.session_goodput("mtcp") / _NO_LOSS[r.seed]


def record_mean(r: Run, nodes: set[str], key: str, lo: float, hi: float) -> float:
    """Mean of ``key`` in the metric records of ``nodes`` (``session/node`` labels) in [lo, hi]."""
    xs = [rec[key] for rec in r.records if rec["label"].partition("/")[2] in nodes
          and lo <= rec["time"] <= hi and rec.get(key)]
    return statistics.fmean(xs) if xs else float("nan")


def webrc_ratio_b_a(r: Run) -> float:
    return r.thr[("session", "webrc", "B")] / r.thr[("session", "webrc", "A")]


def aggregate_mbps(r: Run) -> float:
    """Sum over sessions of the mean receiver goodput, Mb/s."""
    return sum(r.session_goodput(s) for s in r.receivers) / 1e6


def vlmcc_tcp_ratio(r: Run) -> float:
    return r.session_mean("vlmcc") / r.tcp_mean()


def _leader_hosts(r: Run) -> list[tuple[float, str]]:
    from p4mcc.hosts.core import id_to_ip

    by_ip = {ip: n for n, ip in r.ips.items()}
    out = []
    for rec in sorted(r.records, key=lambda x: x["time"]):
        lid = rec.get("leader")
        if lid:
            out.append((rec["time"], by_ip.get(id_to_ip(int(lid)), "?")))
    return out


def leader_move_delay(r: Run, after: float, hosts: set[str], until: float) -> float:
    """Seconds from ``after`` until the leader is one of ``hosts`` (``until - after`` if never)."""
    for t, h in _leader_hosts(r):
        if after <= t <= until and h in hosts:
            return t - after
    return until - after


def leader_share(r: Run, lo: float, hi: float, hosts: set[str]) -> float:
    xs = [h in hosts for t, h in _leader_hosts(r) if lo <= t <= hi]
    return sum(xs) / len(xs) if xs else 0.0


# Claims -------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One headline claim: the runs it needs, its metric, and how to judge it."""

    protocol: str
    text: str
    paper: str
    job: str  # key of the jobs (one per seed) whose runs it reads
    metric: Callable[[Run], float]
    fmt: str
    #: (low, high) for "reproduced"; (low, high) for "partly"; None: open end.
    ok: tuple[float | None, float | None]
    partly: tuple[float | None, float | None] | None = None


def _inside(x: float, band: tuple[float | None, float | None] | None) -> bool:
    if band is None:
        return False
    lo, hi = band
    return (lo is None or x >= lo) and (hi is None or x <= hi)


def verdict(claim: Claim, value: float) -> str:
    if _inside(value, claim.ok):
        return "reproduced"
    if _inside(value, claim.partly):
        return "partly"
    return "not reproduced"


N_RLA = 9
CLAIMS: list[Claim] = [
    Claim("RLA", "essential fairness: RLA / TCP throughput on the soft bottleneck (sec. 5.1, Fig. 7)",
          "measured in [1, 3]; proven in [1/4, 2n]", "rla-tcp", rla_tcp_ratio, ".2f",
          ok=(1.0, 3.0), partly=(0.25, 2 * N_RLA)),
    Claim("RLA", "window cuts per congestion signal ~ 1/n, all n receivers troubled (Fig. 7)",
          f"~1/27 (n=27); here n={N_RLA}: 1/{N_RLA} = {1 / N_RLA:.3f}", "rla-tcp", rla_cut_fraction, ".3f",
          ok=(0.7 / N_RLA, 1.3 / N_RLA), partly=(0.5 / N_RLA, 2.0 / N_RLA)),
    Claim("RLA", "RLA and TCP see the same congestion frequency: signals per RLA receiver / TCP loss events (Fig. 8)",
          "'roughly the same' (~1)", "rla-tcp", rla_signal_frequency_ratio, ".2f",
          ok=(0.67, 1.5), partly=(0.5, 2.0)),
    Claim("RLA", "two RLA sessions share equally: slower / faster session (sec. 5.2)",
          "65.1 / 65.9 pkt/s = 0.988", "rla-two", rla_two_session_ratio, ".3f",
          ok=(0.9, None), partly=(0.75, None)),
    Claim("RLA", "two RLA sessions with TCP: mean RLA / TCP throughput (sec. 5.2 set-up)",
          "~1 (each session's window ~20 = the TCP share, footnote 11)", "rla-two", rla_two_tcp_ratio, ".2f",
          ok=(1.0, 3.0), partly=(0.25, 2 * N_RLA)),
    Claim("MTCP", "multilevel tree (k=5), 30 receivers: data throughput on 1.5 Mb/s links, Mb/s (Fig. 9)",
          "~1.0 Mb/s (100 receivers)", "mtcp-tree30", mtcp_mbps, ".3f",
          ok=(0.8, 1.2), partly=(0.6, 1.6)),
    Claim("MTCP", "multilevel tree, 5 receivers (one level): data throughput, Mb/s (Fig. 9)",
          "~1.0 Mb/s (3-100 receivers)", "mtcp-tree5", mtcp_mbps, ".3f",
          ok=(0.8, 1.2), partly=(0.6, 1.6)),
    Claim("MTCP", "one-level (flat) tree, 30 receivers: data throughput, Mb/s (Fig. 9)",
          "falls 'drastically' beyond 25 receivers (sender CPU load)", "mtcp-flat30", mtcp_mbps, ".3f",
          ok=(None, 0.6), partly=(None, 0.8)),
    Claim("MTCP", "1 % independent loss at every receiver: goodput / goodput without loss (Figs. 18/19)",
          "'slightly reduced, but not significantly' (~12 KBps both)", "mtcp-loss30", mtcp_loss_ratio, ".3f",
          ok=(0.85, None), partly=(0.7, None)),
    Claim("MTCP", "inter-fairness, 4 sessions on a 1 Mb/s bottleneck: Jain's index (Table 1, exp. 1)",
          "0.9998", "mtcp-fair4", jain_sessions, ".4f", ok=(0.99, None), partly=(0.95, None)),
    Claim("MTCP", "inter-fairness, 12 sessions: Jain's index (Table 1, exp. 3)",
          "0.9558", "mtcp-fair12", jain_sessions, ".4f", ok=(0.94, None), partly=(0.9, None)),
    Claim("MTCP", "12 sessions: aggregate goodput through the 1 Mb/s bottleneck, Mb/s (Table 1, exp. 3)",
          "0.928 (sum of Table 1's 12 throughputs)", "mtcp-fair12", aggregate_mbps, ".3f",
          ok=(0.75, None), partly=(0.6, None)),
    Claim("VLMCC", "one VLMCC and one TCP on a single bottleneck: VLMCC / TCP throughput (Fig. 4a), queue 50",
          "~1 ('equitably share')", "vlmcc-fig4", vlmcc_tcp_ratio, ".2f",
          ok=(0.7, 1.43), partly=(0.5, 2.0)),
    Claim("VLMCC", "same, bottleneck queue 5 packets (sensitivity; the paper gives no queue size)",
          "~1", "vlmcc-fig4-q5", vlmcc_tcp_ratio, ".2f", ok=(0.7, 1.43), partly=(0.5, 2.0)),
    Claim("VLMCC", "leader moves under router 3 after TCP 2 starts at 27 s: delay, s (Fig. 6)",
          "'quickly' (vertical line at ~27 s)", "vlmcc-fig5",
          lambda r: leader_move_delay(r, 27.0, {"v3", "v4"}, 41.0), ".2f", ok=(0.0, 2.0), partly=(0.0, 5.0)),
    Claim("VLMCC", "leader back under router 2 after TCP 2 stops at 45 s: delay, s (Fig. 6)",
          "'quickly' (vertical line at ~45 s)", "vlmcc-fig5",
          lambda r: leader_move_delay(r, 45.0, {"v1", "v2"}, 60.0), ".2f", ok=(0.0, 2.0), partly=(0.0, 5.0)),
    Claim("VLMCC", "leader under router 2 while only its branch has TCP, [12, 25] s: share of samples (Fig. 6)",
          "1 (no change needed at 10 s)", "vlmcc-fig5",
          lambda r: leader_share(r, 12.0, 25.0, {"v1", "v2"}), ".2f", ok=(0.9, None), partly=(0.6, None)),
]


CLAIMS += [
    Claim("WEBRC", "steady-state reception rate, one receiver, 1 % loss, RTT 0.2 s, kbit/s (sec. 5)",
          "403 (8 trials); eq. 1 with eq. 7: 428", "webrc-eq", lambda r: r.session_mean("webrc") / 1e3, ".0f",
          ok=(403 * 0.85, 403 * 1.15), partly=(403 * 0.7, 403 * 1.3)),
    Claim("WEBRC", "Fig. 3: A alone, MRTT average (ARTT) over [40, 60] s, s (Fig. 10)",
          "X + Y = 0.25", "webrc-fig3", lambda r: record_mean(r, {"A"}, "rtt_s", 40.0, 60.0), ".3f",
          ok=(0.2, 0.3), partly=(0.15, 0.35)),
    Claim("WEBRC", "Fig. 3: A and B together, ARTT over [120, 150] s, s (Fig. 10)",
          "(X + Y + Z) / 2 = 0.175", "webrc-fig3", lambda r: record_mean(r, {"A", "B"}, "rtt_s", 120.0, 150.0),
          ".3f", ok=(0.14, 0.21), partly=(0.105, 0.245)),
    Claim("WEBRC", "Fig. 3: B / A reception rate over [120, 150] s (Fig. 10)",
          "1 (equal rates)", "webrc-fig3", webrc_ratio_b_a, ".2f", ok=(0.8, 1.25), partly=(0.6, 1.67)),
]

CLAIMS += [
    Claim("TFMCC", "one TFMCC and 15 TCP flows on an 8 Mb/s drop-tail bottleneck: TFMCC / TCP (sec. 4.1, Fig. 9)",
          "~1 ('closely matches the average TCP throughput')", "tfmcc-fig9",
          lambda r: r.session_mean("tfmcc") / r.tcp_mean(), ".2f", ok=(0.7, 1.43), partly=(0.5, 2.0)),
    Claim("TFMCC", "16 receivers on separate 1 Mb/s tail circuits, one TCP each: TFMCC / TCP (sec. 4.1, Fig. 10)",
          "0.70", "tfmcc-fig10", lambda r: r.session_mean("tfmcc") / r.tcp_mean(), ".2f",
          ok=(0.56, 0.84), partly=(0.35, 1.0)),
]


@dataclass
class Row:
    claim: Claim
    values: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def spread(self) -> float:
        return (max(self.values) - min(self.values)) / 2 if len(self.values) > 1 else 0.0

    @property
    def verdict(self) -> str:
        return verdict(self.claim, self.mean)


def evaluate(runs: dict[str, list[Run]], claims: list[Claim] = CLAIMS) -> list[Row]:
    _NO_LOSS.clear()
    _NO_LOSS.update({r.seed: r.session_goodput("mtcp") for r in runs.get("mtcp-tree30", [])})
    if not _NO_LOSS:
        claims = [c for c in claims if c.job != "mtcp-loss30"]
    return [Row(c, [c.metric(r) for r in runs[c.job]]) for c in claims if runs.get(c.job)]


def side_by_side(by_profile: dict[str, list[Row]]) -> list[tuple[Claim, dict[str, Row]]]:
    """Each claim with its row under every profile that measured it, in :data:`CLAIMS` order."""
    out: dict[int, tuple[Claim, dict[str, Row]]] = {}
    for profile, rows in by_profile.items():
        for r in rows:
            out.setdefault(id(r.claim), (r.claim, {}))[1][profile] = r
    order = {id(c): i for i, c in enumerate(CLAIMS)}
    return sorted(out.values(), key=lambda x: order.get(id(x[0]), len(order)))


def _cell(row: Row | None) -> tuple[str, str]:
    if row is None:
        return "-", "-"
    f = row.claim.fmt
    return f"{format(row.mean, f)} ± {format(row.spread, f)}", row.verdict


def table_header(profiles: tuple[str, ...]) -> list[str]:
    cols = ["protocol", "claim", "paper"]
    for p in profiles:
        cols += [f"{p}: ours", f"{p}: verdict"]
    return cols


def table_rows(by_profile: dict[str, list[Row]], profiles: tuple[str, ...]) -> list[list[str]]:
    """The table: per claim, ours and the verdict under each profile (``paper`` first)."""
    out = []
    for claim, rows in side_by_side(by_profile):
        line = [claim.protocol, claim.text, claim.paper]
        for p in profiles:
            line += list(_cell(rows.get(p)))
        out.append(line)
    return out


def markdown_table(by_profile: dict[str, list[Row]], profiles: tuple[str, ...] = PROFILES) -> str:
    head = table_header(profiles)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(x.replace("|", "/") for x in r) + " |" for r in table_rows(by_profile, profiles)]
    return "\n".join(lines)


def print_table(by_profile: dict[str, list[Row]], seeds: list[int], quick: bool,
                profiles: tuple[str, ...] = PROFILES) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"Paper headline results in the simulator ({'quick' if quick else 'full'}, "
                    f"seeds {', '.join(map(str, seeds))}; ours = mean ± half range; "
                    f"profiles {' and '.join(profiles)})")
    for col in table_header(profiles):
        t.add_column(col, overflow="fold")
    for r in table_rows(by_profile, profiles):
        t.add_row(*r)
    Console(width=220).print(t)


def stall_rows(runs: dict[str, dict[str, list[Run]]], profiles: tuple[str, ...]) -> list[list[str]]:
    """Per job, the stall episodes summed over its seeds under each profile (``-``: not run)."""
    keys = [j.key for j in JOBS if any(j.key in runs.get(p, {}) for p in profiles)]
    out = []
    for key in keys:
        line = [key]
        for p in profiles:
            rs = runs.get(p, {}).get(key)
            line.append("-" if not rs else str(sum(r.stalls for r in rs)))
        out.append(line)
    return out


def stall_table(runs: dict[str, dict[str, list[Run]]], profiles: tuple[str, ...] = PROFILES) -> str:
    head = ["job", *profiles]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in stall_rows(runs, profiles)]
    return "\n".join(lines)


#: The generated section of docs/paper-results.md that ``--docs`` writes.
DOCS_PAGE = ROOT / "docs" / "paper-results.md"
DOCS_SECTION = "paper-results"


def write_docs(by_profile: dict[str, list[Row]], seeds: list[int], quick: bool, command: str,
               page: Path = DOCS_PAGE, profiles: tuple[str, ...] = PROFILES,
               runs: dict[str, dict[str, list[Run]]] | None = None) -> None:
    """The tables into ``page`` between the ``paper-results`` markers (``bench/docsection.py``):
    the claims, then (given ``runs``) the stall episodes per job and profile."""
    from bench.docsection import write_section

    body = (f"{'Quick' if quick else 'Full'} runs, seeds {', '.join(map(str, seeds))}, model switches; "
            f"ours = mean ± half the range over seeds, under each profile: `paper` (the published "
            f"algorithm, no named rule), `default` and `stamped`.\n\n" + markdown_table(by_profile, profiles))
    if runs is not None:
        body += ("\n\nStall episodes over the whole run, summed over the seeds (a receiver of a session "
                 "that could deliver went 5 s without delivering; `netsim/liveness.py`):\n\n"
                 + stall_table(runs, profiles))
    write_section(page, DOCS_SECTION, body, command)

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one seed, shorter runs")
    ap.add_argument("--seeds", type=int, nargs="*", help=f"seeds (default 1 2 3; --quick: 1; at most {SWEEP_SEEDS})")
    ap.add_argument("--only", choices=["rla", "mtcp", "vlmcc", "webrc", "tfmcc"], help="one protocol's claims")
    ap.add_argument("--workers", type=int, help="local cluster size (default: one per core)")
    ap.add_argument("--scheduler", help="Dask scheduler address of an existing cluster, or 'serial'")
    ap.add_argument("--out", default=str(ROOT / "results" / "sweeps" / "paper"),
                    help="where the sweeps keep their tables (finished points are reused)")
    ap.add_argument("--details", action="store_true", help="print per-run numbers as well")
    ap.add_argument("--write-sweeps", action="store_true", help="regenerate bench/sweeps/paper/*.yaml")
    ap.add_argument("--profile", action="append", choices=PROFILES,
                    help="measure under this profile only (repeatable; default: all three)")
    ap.add_argument("--docs", action="store_true",
                    help="write the table into docs/paper-results.md (its generated:paper-results section)")
    args = ap.parse_args(argv)
    if args.write_sweeps:
        files = write_sweeps()
        print(f"wrote {len(files)} sweep files in {SWEEP_DIR.relative_to(ROOT)}")
        return 0
    seeds = args.seeds or ([1] if args.quick else [1, 2, 3])
    claims = [c for c in CLAIMS if not args.only or c.protocol.lower() == args.only]
    needed = {c.job for c in claims}
    if "mtcp-loss30" in needed:
        needed.add("mtcp-tree30")  # the loss ratio's reference
    jobs = [j for j in JOBS if j.key in needed]
    t0 = time.perf_counter()
    profiles = tuple(p for p in PROFILES if p in (args.profile or PROFILES))
    runs = run_sweeps(jobs, args.quick, seeds, Path(args.out), args.scheduler, args.workers, profiles=profiles)
    if args.details:
        for key, rs in ((f"{p} {k}", rs) for p, by_job in runs.items() for k, rs in by_job.items()):
            for run in rs:
                print(f"{key} seed {run.seed}: "
                      + ", ".join(f"{f}/{n}={v / PKT_BITS:.1f} pkt/s" for (k, f, n), v in sorted(run.thr.items())
                                  if k == "tcp" or n in ("r1", "sink11", "v1")),
                      {k: v for k, v in run.sender.items()}, run.tcp or "",
                      {k: round(v / PKT_BITS, 1) for k, v in sorted(run.goodput.items()) if k[1] in ("r1", "r9")})
    by_profile = {p: evaluate(runs.get(p, {}), claims) for p in profiles}
    print_table(by_profile, seeds, args.quick, profiles)
    print("stall episodes per job (summed over seeds):")
    for line in stall_rows(runs, profiles):
        print("  " + "  ".join(f"{x:>14}" for x in line))
    if args.docs:
        write_docs(by_profile, seeds, args.quick, "bench/paper_results.py " + " ".join(
            sys.argv[1:] if argv is None else argv), profiles=profiles, runs=runs)
        print(f"wrote the {DOCS_SECTION} section of {DOCS_PAGE.relative_to(ROOT)}")
    print(f"{sum(len(r) for by_job in runs.values() for r in by_job.values())} simulations (sweeps in {args.out}) "
          f"in {time.perf_counter() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
