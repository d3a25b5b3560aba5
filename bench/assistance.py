"""Benefit of switch assistance, measured in the simulator through the P4 program.

For TFMCC (report filtering), VLMCC (challenge filtering) and MTCP (summary
aggregation) the same scenario runs twice through P4 switch nodes
(``p4src/mcc.p4`` in the interpreter, configured by the controller's
desired-state function): once with the session's ``assistance`` on and once
off (the switches then only replicate).  The topology is a 4-ary tree of
switches (``scenario.shapes.kary_tree``) with ``n`` receivers; receiver links
carry the TFMCC paper's heterogeneous loss mix (MTCP: none, and 1 % in the
``mtcp-loss1`` variant).  Printed side by side, as means over the seeds:

* feedback datagrams reaching the sender (all, per second, and the kind
  assistance acts on: TFMCC reports per feedback round, with and without the
  CLR's; VLMCC challenges and probes; MTCP summaries per 20 ms ACK round);
* mean and minimum receiver throughput (engine-measured payload bytes), the
  sender's sending rate, the receivers' mean loss event rate (TFMCC);
* MTCP: the children the sender tracks, packets sent, how far every receiver
  is complete; VLMCC: receivers that obtained an RTT and when the last did;
* what the switches absorbed (``session_feedback_absorbed``), and on/off ratios.

RLA and WEBRC have no assistance; they run once through the same switches
(assistance off) as a check that replication alone delivers end to end.  The
exit status is 1 when a run with assistance off left a receiver without data.

Usage (``--docs`` also writes the tables into docs/assistance.md)::

    .venv/bin/python bench/assistance.py --n 16 --seeds 3 --no-check
    .venv/bin/python bench/assistance.py --n 64 --seeds 2
    .venv/bin/python bench/assistance.py --n 256 --no-check
    .venv/bin/python bench/assistance.py --quick      # n in {16, 64}
    .venv/bin/python bench/assistance.py --n 16 --proto tfmcc --seeds 1 --duration 20

The interpreter handles on the order of 10^4 packets per second, so runs are
tens of simulated seconds; each table gives its wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from p4mcc.hosts import wire  # noqa: E402
from p4mcc.hosts.core import Endpoint  # noqa: E402
from p4mcc.netsim.run import SimRun, registry_factory, run_scenario  # noqa: E402
from p4mcc.netsim.switches import choose_switch  # noqa: E402
from p4mcc.scenario.model import Scenario, Session, scenario_from_dict  # noqa: E402

GROUP, PORT = "239.1.1.1", 5001

#: variant -> (protocol, receiver-link loss: "tfmcc" = the TFMCC paper's mix, or a probability)
VARIANTS: dict[str, tuple[str, Any]] = {
    "tfmcc": ("tfmcc", "tfmcc"),
    "vlmcc": ("vlmcc", "tfmcc"),
    # MTCP is reliable: lossless receiver links for the headline figures, and
    # 1 % on every receiver link to show how the fold behaves under loss.
    "mtcp": ("mtcp", 0.0),
    "mtcp-loss1": ("mtcp", 0.01),
    "rla": ("rla", "tfmcc"),
    "webrc": ("webrc", "tfmcc"),
}
ASSISTED = ("tfmcc", "vlmcc", "mtcp", "mtcp-loss1")
REPLICATION_ONLY = ("rla", "webrc")


def tree_topology(n: int, k: int, loss: Any = "tfmcc") -> dict[str, Any]:
    """The generator arguments of the benchmark tree (one place, so tests share it).

    Switch-to-switch links 20 Mb/s, 5 ms; receiver links 2 Mb/s, 10 ms (low
    rates keep the interpreter's packet count, and so the wall time, small).
    """
    topo = {"kind": "kary_tree", "k": k, "receivers": n, "rate": "20Mbps", "delay": "5ms",
            "leaf_rate": "2Mbps", "leaf_delay": "10ms", "loss_seed": 1, "queue": 100}
    if loss == "tfmcc":
        topo["loss_distribution"] = "tfmcc"
    else:
        topo["leaf_loss"] = float(loss)
    return topo


def session_params(proto: str, n: int, assistance: bool) -> dict[str, Any]:
    """Protocol parameters for one run: MTCP's sender mode must match the switch mode."""
    if proto == "mtcp":
        return {"assisted": True} if assistance else {"receivers": n}
    if proto == "rla":
        return {"receivers": n}
    if proto == "webrc":
        return {"session_rate_bps": 1_000_000.0}
    return {}


def build_scenario(variant: str, n: int, k: int, assistance: bool, duration: float, seed: int = 1) -> Scenario:
    proto, loss = VARIANTS[variant]
    return scenario_from_dict({
        "name": f"assist-{variant}-n{n}-{'on' if assistance else 'off'}",
        "topology": {"generate": tree_topology(n, k, loss)},
        "sessions": [{"name": "s", "protocol": proto, "sender": "snd", "receivers": ["r*"],
                      "group": GROUP, "port": PORT, "assistance": assistance,
                      "params": session_params(proto, n, assistance)}],
        "duration": duration, "seed": seed, "metrics_interval": 1.0,
    })


@dataclass
class FeedbackLog:
    """What reached the sender's protocol core, by message type and round."""

    by_type: Counter = field(default_factory=Counter)
    #: TFMCC: reports per fb_round value carried in the report
    per_round: Counter = field(default_factory=Counter)
    #: TFMCC: the same, counting only reports from receivers that are not the CLR
    per_round_nonclr: Counter = field(default_factory=Counter)


def _tap(agent: Endpoint, log: FeedbackLog) -> None:
    """Record every datagram the sender core is handed (then let it act as usual)."""
    inner = agent.on_datagram

    def on_datagram(data: bytes, src: Any, now: float) -> None:
        try:
            msg = wire.decode(data)
        except wire.WireError:
            msg = None
        if msg is not None:
            log.by_type[type(msg).__name__] += 1
            if isinstance(msg, wire.TfmccReport):
                log.per_round[msg.fb_round] += 1
                if not msg.rflags & (wire.TfmccReportFlags.IS_CLR | wire.TfmccReportFlags.LEAVING):
                    log.per_round_nonclr[msg.fb_round] += 1
        inner(data, src, now)

    agent.on_datagram = on_datagram  # type: ignore[method-assign]


@dataclass
class Result:
    variant: str
    proto: str
    n: int
    assistance: bool
    switches: int
    duration: float
    wall_s: float
    feedback: int
    by_type: dict[str, int]
    per_round: list[int]
    per_round_nonclr: list[int]
    rounds: int
    mean_thr: float | None
    min_thr: float | None
    receivers_with_data: int
    sender_rate: float | None
    loss: float | None
    absorbed: int
    extra: dict[str, Any]


def absorbed_by_switches(run: SimRun) -> int:
    """Sum of ``session_feedback_absorbed`` over every switch (slot 0: one session)."""
    total = 0
    for node in run.net.switches.values():
        sw = getattr(node, "sw", None)
        if sw is not None:
            total += sw.counter_read("session_feedback_absorbed", 0)[0]
    return total


def _tap_start(agent: Endpoint, starts: list[float]) -> None:
    """VLMCC receivers: record when the sender's Start (their first RTT) arrived."""
    inner = agent._on_start_msg  # type: ignore[attr-defined]

    def on_start_msg(m: Any, now: float) -> None:
        had = agent.rtt is not None  # type: ignore[attr-defined]
        inner(m, now)
        if not had and agent.rtt is not None:  # type: ignore[attr-defined]
            starts.append(now)

    agent._on_start_msg = on_start_msg  # type: ignore[attr-defined]


def run_one(variant: str, n: int, k: int, assistance: bool, duration: float, seed: int = 1) -> Result:
    """Run one protocol/mode through P4 switch nodes and collect the figures."""
    proto = VARIANTS[variant][0]
    sc = build_scenario(variant, n, k, assistance, duration, seed)
    log = FeedbackLog()
    starts: list[float] = []

    def factory(sess: Session, role: str, host: str, ip: str, sender_ip: str, s: int) -> Endpoint:
        agent = registry_factory(sess, role, host, ip, sender_ip, s)
        if role == "sender":
            _tap(agent, log)
        elif proto == "vlmcc":
            _tap_start(agent, starts)
        return agent

    t0 = time.perf_counter()
    run = run_scenario(sc, agent_factory=factory, switch=choose_switch("p4", sc))
    wall = time.perf_counter() - t0
    assert run.switch_kind == "p4"
    ss = run.summary["sessions"]["s"]
    recv = ss["receivers"]
    losses = [r["loss"] for r in recv.values() if r.get("loss") is not None]
    snd = run.agents["s/snd"]
    extra: dict[str, Any] = {}
    rounds = 0
    if proto == "tfmcc":
        rounds = len(log.per_round)
        extra["final_rate_bps"] = snd.rate
    elif proto == "mtcp":
        extra["children"] = len(snd._acking())
        extra["summaries_in"] = snd.summaries_in
        extra["packets_sent"] = snd.next_seq - 1
        extra["timeouts"] = snd.timeouts
        extra["receivers_complete_to"] = min(a.rbuf.cum_ack for lbl, a in run.agents.items() if lbl != "s/snd")
    elif proto == "vlmcc":
        extra["challenges"] = snd.challenges
        extra["leader_changes"] = snd.leader_changes
        started = [a for lbl, a in run.agents.items() if lbl != "s/snd" and a.rtt is not None]
        extra["receivers_started"] = len(started)
        extra["last_start_s"] = round(max(starts), 2) if len(starts) == n else None
        extra["challenges_sent"] = sum(a.challenges_sent for lbl, a in run.agents.items() if lbl != "s/snd")
    nz = [r["throughput_bps"] for r in recv.values() if r.get("throughput_bps")]
    return Result(
        variant=variant, proto=proto, n=n, assistance=assistance, switches=len(run.net.switches), duration=duration,
        wall_s=wall, feedback=int(ss.get("feedback_msgs_at_sender") or 0), by_type=dict(log.by_type),
        per_round=[log.per_round[r] for r in sorted(log.per_round)],
        per_round_nonclr=[log.per_round_nonclr[r] for r in sorted(log.per_round)], rounds=rounds,
        mean_thr=ss.get("mean_receiver_throughput_bps"), min_thr=ss.get("min_receiver_throughput_bps"),
        receivers_with_data=len(nz), sender_rate=(ss.get("sender_stats") or {}).get("throughput_bps"),
        loss=sum(losses) / len(losses) if losses else None, absorbed=absorbed_by_switches(run), extra=extra,
    )


# Figures and printing -------------------------------------------------------------

#: MTCP receivers delay their ACKs by ``ack_delay`` (20 ms): one ACK round.
MTCP_ACK_ROUND_S = 0.02


def figures(r: Result) -> dict[str, float | None]:
    """The numbers one run contributes to the table (None: not applicable)."""
    f: dict[str, float | None] = {
        "feedback at sender (all)": r.feedback,
        "  per second": r.feedback / r.duration,
    }
    if r.proto == "tfmcc":
        rounds = max(1, len(r.per_round))
        f["  reports"] = r.by_type.get("TfmccReport", 0)
        f["  reports per round"] = sum(r.per_round) / rounds
        f["  max reports in a round"] = max(r.per_round, default=0)
        f["  non-CLR reports per round"] = sum(r.per_round_nonclr) / rounds
        f["  max non-CLR in a round"] = max(r.per_round_nonclr, default=0)
        f["feedback rounds"] = len(r.per_round)
    elif r.proto == "vlmcc":
        f["  challenges (incl. probes)"] = r.by_type.get("VlmccChallenge", 0)
        f["  ACKs from the leader"] = r.by_type.get("VlmccAck", 0)
        f["challenges sent by receivers"] = r.extra.get("challenges_sent")
        f["receivers with an RTT (Start)"] = r.extra.get("receivers_started")
        f["last receiver's Start at (s)"] = r.extra.get("last_start_s")
        f["leader changes"] = r.extra.get("leader_changes")
    elif r.proto == "mtcp":
        summ = r.by_type.get("MtcpAck", 0) + r.by_type.get("MtcpWindowUpdate", 0)
        f["  summaries (ACK + update)"] = summ
        f["  per ACK round (20 ms)"] = summ / (r.duration / MTCP_ACK_ROUND_S)
        f["  NACKs"] = r.by_type.get("MtcpNack", 0)
        f["children the sender tracks"] = r.extra.get("children")
        f["data packets sent"] = r.extra.get("packets_sent")
        f["all receivers complete to"] = r.extra.get("receivers_complete_to")
        f["sender timeouts"] = r.extra.get("timeouts")
    f["absorbed by switches"] = r.absorbed
    f["mean receiver kb/s"] = None if r.mean_thr is None else r.mean_thr / 1e3
    f["min receiver kb/s"] = None if r.min_thr is None else r.min_thr / 1e3
    f["sender kb/s"] = None if r.sender_rate is None else r.sender_rate / 1e3
    f["receivers' mean loss"] = r.loss
    f["receivers with data"] = r.receivers_with_data
    return f


def _mean(xs: list[float | None]) -> float | None:
    ys = [x for x in xs if x is not None]
    return sum(ys) / len(ys) if ys else None


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if abs(x - round(x)) < 1e-9 and abs(x) >= 1:
        return f"{x:.0f}"
    return f"{x:.4f}" if abs(x) < 0.1 else f"{x:.2f}" if abs(x) < 100 else f"{x:.0f}"


def table(ons: list[Result], offs: list[Result]) -> list[tuple[str, str, str, str]]:
    """Rows (figure, on, off, on/off) with means over the seeds."""
    fon, foff = [figures(r) for r in ons], [figures(r) for r in offs]
    rows = []
    for key in fon[0]:
        a = _mean([f.get(key) for f in fon])
        b = _mean([f.get(key) for f in foff])
        ratio = "-" if a is None or not b else f"{a / b:.2f}"
        rows.append((key, _fmt(a), _fmt(b), ratio))
    return rows


def print_pair(ons: list[Result], offs: list[Result]) -> None:
    on = ons[0]
    seeds = len(ons)
    print(f"\n{on.variant.upper()}  n={on.n}  switches={on.switches}  {on.duration:.0f} s simulated, "
          f"mean of {seeds} seed{'s' if seeds > 1 else ''}  "
          f"(wall {sum(r.wall_s for r in ons):.0f} s on, {sum(r.wall_s for r in offs):.0f} s off)")
    print(f"  {'':32s} {'on':>10s} {'off':>10s} {'on/off':>7s}")
    for name, a, b, rt in table(ons, offs):
        print(f"  {name:32s} {a:>10s} {b:>10s} {rt:>7s}")
    if seeds > 1:
        per = [f"{x.mean_thr / y.mean_thr:.2f}" for x, y in zip(ons, offs) if x.mean_thr and y.mean_thr]
        print(f"  {'mean receiver kb/s on/off by seed':32s} {', '.join(per)}")


def markdown_pair(ons: list[Result], offs: list[Result]) -> str:
    """The pair's table for docs/assistance.md: figure, on, off, on/off."""
    on = ons[0]
    seeds = len(ons)
    lines = [f"**{on.variant.upper()}**, n = {on.n}, {on.switches} switches, {on.duration:.0f} s simulated, "
             f"mean of {seeds} seed{'s' if seeds > 1 else ''}", "",
             "| figure | on | off | on/off |", "|---|---|---|---|"]
    lines += [f"| {name} | {a} | {b} | {rt} |" for name, a, b, rt in table(ons, offs)]
    return "\n".join(lines)


def markdown_check(r: Result) -> str:
    ok = r.receivers_with_data == r.n
    return (f"- {r.variant.upper()}, n = {r.n}, {r.switches} switches, replication only: "
            f"{r.receivers_with_data}/{r.n} receivers got data, mean {r.mean_thr / 1e3:.0f} kb/s, "
            f"min {r.min_thr / 1e3:.0f} kb/s: {'OK' if ok else 'FAIL'}")


def print_check(r: Result) -> None:
    ok = r.receivers_with_data == r.n
    print(f"\n{r.variant.upper()} n={r.n} switches={r.switches} assistance off (replication only): "
          f"{r.receivers_with_data}/{r.n} receivers got data, mean {r.mean_thr / 1e3:.0f} kb/s, "
          f"min {r.min_thr / 1e3:.0f} kb/s, sender {(r.sender_rate or 0) / 1e3:.0f} kb/s, "
          f"feedback at sender {r.feedback} -> {'OK' if ok else 'FAIL'} (wall {r.wall_s:.0f} s)")


# The congestion stamp: paper, default and stamped profiles ----------------------------

#: Stamp cases: the issue's 10 Mb/s, 50 ms dumbbell with one TCP flow, the
#: friendliness bench's quick cells, and the multicast-only case (two
#: sessions of the protocol on the 10 Mb/s dumbbell, no TCP).
STAMP_PROTOS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
#: The cases the docs table runs: the dumbbell with TCP, the multicast-only
#: case and a tree with TCP on both branches (the quick cells and the other
#: tree corner by ``--stamp-case``).
STAMP_DEFAULT_CASES = ("d10", "mc", "t1")
STAMP_CASES: dict[str, dict[str, Any]] = {
    "d10": {"rate_mbps": 10.0, "rtt_ms": 50.0, "queue": 42, "tcp": 1, "receivers": 2, "sessions": 1},
    "q1": {"rate_mbps": 1.0, "rtt_ms": 20.0, "queue": 10, "tcp": 1, "receivers": 2, "sessions": 1},
    "q2": {"rate_mbps": 1.0, "rtt_ms": 200.0, "queue": 33, "tcp": 2, "receivers": 8, "sessions": 1},
    "q3": {"rate_mbps": 4.0, "rtt_ms": 40.0, "queue": 27, "tcp": 1, "receivers": 4, "sessions": 1},
    "q4": {"rate_mbps": 10.0, "rtt_ms": 100.0, "queue": 42, "tcp": 4, "receivers": 2, "sessions": 1},
    "mc": {"rate_mbps": 10.0, "rtt_ms": 50.0, "queue": 42, "tcp": 0, "receivers": 2, "sessions": 2},
    # Trees (scenario.shapes.tree): one bottleneck per branch; measured on the
    # limiting branch, the one with the lowest fair share rate / (TCP + 1).
    # t1: the slow branch has the short round trip; t2: the slow branch the long one.
    "t1": {"sessions": 1, "branches": [
        {"rate_mbps": 4.0, "rtt_ms": 20.0, "queue": 14, "tcp": 1, "receivers": 2},
        {"rate_mbps": 20.0, "rtt_ms": 150.0, "queue": 125, "tcp": 2, "receivers": 3}]},
    "t2": {"sessions": 1, "branches": [
        {"rate_mbps": 10.0, "rtt_ms": 30.0, "queue": 25, "tcp": 1, "receivers": 2},
        {"rate_mbps": 3.0, "rtt_ms": 120.0, "queue": 30, "tcp": 1, "receivers": 2}]},
}
STAMP_PROFILES = ("default", "stamped")
#: Every profile ``--stamp-profile`` may name.
ALL_STAMP_PROFILES = ("paper", "default", "stamped")
#: Access links of the dumbbell generator (one each side), as bench/friendliness.py.
_ACCESS_DELAY = 0.001
#: Offsets in a frame on the bottleneck: IPv4 protocol, source address, and the
#: p4mcc session id (Ethernet 14 + IPv4 20 + UDP 8, then 8 bytes of the common header).
_IP_PROTO, _IP_SRC, _SESSION_AT = 23, 26, 50
#: Throughput bins and the moving average that time-to-80 % reads (as friendliness: 2 s).
_BIN_S, _T80_WINDOW_S = 0.5, 2.0


def limiting_branch(case: str) -> tuple[int, dict[str, Any]]:
    """The measured bottleneck of a case: (switch index i of the s1 -> s<i> link, its spec).
    A dumbbell's is s1 -> s2; a tree's the branch with the lowest fair share."""
    c = STAMP_CASES[case]
    if "branches" not in c:
        return 2, c
    i, br = min(enumerate(c["branches"]), key=lambda x: x[1]["rate_mbps"] / (x[1]["tcp"] + 1))
    return i + 2, br


def _tree_scenario(proto: str, profile: str, case: str, seed: int, duration: float) -> Scenario:
    from p4mcc.scenario.shapes import tree_layout

    c = STAMP_CASES[case]
    branches = [{"rate": int(b["rate_mbps"] * 1e6), "delay": round(b["rtt_ms"] / 2e3 - 2 * _ACCESS_DELAY, 5),
                 "queue": b["queue"], "tcp_pairs": b["tcp"], "receivers": b["receivers"]} for b in c["branches"]]
    layout = tree_layout(branches)
    top = max(b["rate"] for b in branches)
    return scenario_from_dict({
        "name": f"stamp-{proto}-{profile}-{case}",
        "topology": {"generate": {"kind": "tree", "branches": branches}},
        "sessions": [{"name": "mc1", "protocol": proto, "sender": "snd1",
                      "receivers": [r for br in layout for r in br["receivers"]],
                      "group": "239.1.1.1", "port": PORT + 1, "assistance": "stamp", "profile": profile,
                      "params": {"session_rate_bps": 2 * top} if proto == "webrc" else {}}],
        "tcp_flows": [{"name": dst.replace("tdst", "tcp"), "src": src, "dst": dst}
                      for br in layout for src, dst in br["tcp"]],
        "duration": duration, "seed": seed, "metrics_interval": 1.0,
    })


def stamp_scenario(proto: str, profile: str, case: str, seed: int = 1, duration: float = 30.0) -> Scenario:
    """One stamp case: every session asks for the stamp; only ``stamped`` rules read it."""
    c = STAMP_CASES[case]
    if "branches" in c:
        return _tree_scenario(proto, profile, case, seed, duration)
    rate = int(c["rate_mbps"] * 1e6)
    n = c["sessions"]
    sessions = [{"name": f"mc{i}", "protocol": proto, "sender": f"snd{i}", "receivers": ["r*"],
                 "group": f"239.1.{i}.1", "port": PORT + i, "assistance": "stamp", "profile": profile,
                 "params": {"session_rate_bps": 2 * rate} if proto == "webrc" else {}}
                for i in range(1, n + 1)]
    return scenario_from_dict({
        "name": f"stamp-{proto}-{profile}-{case}",
        "topology": {"generate": {"kind": "dumbbell", "senders": n, "receivers": c["receivers"],
                                  "tcp_pairs": c["tcp"], "rate": rate,
                                  "delay": round(c["rtt_ms"] / 2e3 - 2 * _ACCESS_DELAY, 5),
                                  "queue": c["queue"]}},
        "sessions": sessions,
        "tcp_flows": [{"name": f"tcp{i}", "src": f"tsrc{i}", "dst": f"tdst{i}"} for i in range(1, c["tcp"] + 1)],
        "duration": duration, "seed": seed, "metrics_interval": 1.0,
    })


def _bottleneck(run: SimRun, far: str = "s2") -> Any:
    """The s1 -> ``far`` channel (the direction data crosses): the dumbbell's
    bottleneck, or a tree's branch."""
    link = next(l for l in run.net.links.values()
                if {getattr(l.a, "name", None), getattr(l.b, "name", None)} == {"s1", far})
    return link.ab if getattr(link.b, "name", None) == far else link.ba


def bottleneck_frames(sc: Scenario, far: str = "s2") -> list[tuple[float, Any, int, float]]:
    """Run ``sc`` through the P4 program; (time, flow, bytes, queueing delay) of every frame the
    s1 -> ``far`` queue accepts: a session's flow is ("s", its p4mcc session id), a TCP flow's
    ("tcp", its source address), the delay the wait before the frame starts on the wire."""
    frames: list[tuple[float, Any, int, float]] = []

    def before(run: SimRun) -> None:
        ch = _bottleneck(run, far)

        def tap(now: float, _ch: Any, frame: bytes, what: str) -> None:
            if what != "enqueue":
                return
            if frame[_IP_PROTO] == 6:
                flow: Any = ("tcp", frame[_IP_SRC:_IP_SRC + 4])
            elif len(frame) > _SESSION_AT + 4:
                flow = ("s", int.from_bytes(frame[_SESSION_AT:_SESSION_AT + 4], "big"))
            else:
                return
            start = ch._inflight[-1][0] - len(frame) * ch._sec_per_byte
            frames.append((now, flow, len(frame), max(0.0, start - now)))

        ch.taps.append(tap)

    run_scenario(sc, switch=choose_switch("p4", sc), before_run=before)
    return frames


def stamp_run(proto: str, profile: str, case: str, seed: int = 1, duration: float = 30.0) -> dict[str, Any]:
    """Run one stamp case and measure it at the bottleneck (a tree: its limiting branch).

    Every frame the bottleneck's queue accepts is attributed to its flow (a
    session by its p4mcc session id, a TCP flow by its source address) and
    its queueing delay is the wait before it starts on the wire.  Returned:
    ``t80`` (first time a session's 2 s moving average reaches 80 % of the
    fair share, the latest over the sessions; None: never), and over the
    second half of the run ``ratio`` (mean session over mean TCP flow),
    ``util``, ``jain`` (over every flow), ``q50_ms``/``q99_ms``.
    """
    sc = stamp_scenario(proto, profile, case, seed, duration)
    far, c = limiting_branch(case)
    rate = c["rate_mbps"] * 1e6
    frames = bottleneck_frames(sc, f"s{far}")
    flows = sorted({f for _, f, _, _ in frames}, key=str)
    sess = [f for f in flows if f[0] == "s"]
    tcp = [f for f in flows if f[0] == "tcp"]
    nbins = int(duration / _BIN_S) + 1
    bins: dict[Any, list[float]] = {f: [0.0] * nbins for f in flows}
    half = duration / 2
    steady: dict[Any, float] = dict.fromkeys(flows, 0.0)
    waits = []
    for t, f, size, w in frames:
        bins[f][int(t / _BIN_S)] += size * 8 / _BIN_S
        if t >= half:
            steady[f] += size * 8 / (duration - half)
            waits.append(w)
    fair = rate / max(1, STAMP_CASES[case]["sessions"] + c["tcp"])
    k = int(_T80_WINDOW_S / _BIN_S)
    t80s: list[float | None] = []
    for f in sess:
        hit = None
        for i in range(nbins):
            lo = max(0, i - k + 1)
            if sum(bins[f][lo:i + 1]) / (i + 1 - lo) >= 0.8 * fair:
                hit = (i + 1) * _BIN_S
                break
        t80s.append(hit)
    xs = [steady[f] for f in flows]
    waits.sort()

    def pct(p: float) -> float | None:
        return 1e3 * waits[min(len(waits) - 1, int(p * len(waits)))] if waits else None

    mean_s = sum(steady[f] for f in sess) / len(sess) if sess else 0.0
    mean_t = sum(steady[f] for f in tcp) / len(tcp) if tcp else None
    return {
        "t80": None if not t80s or None in t80s else max(t80s),  # type: ignore[type-var]
        "ratio": mean_s / mean_t if mean_t else None,
        "util": sum(xs) / rate,
        "jain": sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else None,
        "q50_ms": pct(0.5), "q99_ms": pct(0.99),
        "session_mbps": [steady[f] / 1e6 for f in sess],
    }


def stamp_table(protos: list[str], cases: list[str], seeds: int, duration: float,
                profiles: tuple[str, ...] = STAMP_PROFILES) -> str:
    """Run every (protocol, case, profile) over ``seeds`` seeds; the Markdown table of medians."""
    import statistics

    def med(xs: list[Any]) -> str:
        ys = [x for x in xs if x is not None]
        if not ys:
            return "-"
        return f"{statistics.median(ys):.2f}" + ("" if len(ys) == len(xs) else f" ({len(xs) - len(ys)} never)")

    lines = ["| protocol | case | profile | t80 s (median) | ratio to TCP | utilisation | "
             "queue p50 ms | queue p99 ms | Jain |", "|---|---|---|---|---|---|---|---|---|"]
    for proto in protos:
        for case in cases:
            for prof in profiles:
                rs = [stamp_run(proto, prof, case, s, duration) for s in range(1, seeds + 1)]
                row = [med([r[k] for r in rs]) for k in ("t80", "ratio", "util", "q50_ms", "q99_ms", "jain")]
                lines.append(f"| {proto} | {case} | {prof} | " + " | ".join(row) + " |")
                print(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n in {16, 64} only")
    ap.add_argument("--n", type=int, action="append", help="receiver counts (repeatable)")
    ap.add_argument("--k", type=int, default=4, help="tree arity (default 4)")
    ap.add_argument("--proto", action="append", choices=list(VARIANTS),
                    help="variants (repeatable; default all; mtcp-loss1 only at the smallest n)")
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--large-duration", type=float, default=30.0, help="simulated seconds when n > 64")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per configuration when n <= 64")
    ap.add_argument("--mtcp-duration", type=float, default=20.0,
                    help="simulated seconds for MTCP runs (reliable bulk transfer: steady within seconds)")
    ap.add_argument("--check-n", type=int, default=64, help="n for the RLA/WEBRC replication check")
    ap.add_argument("--no-check", action="store_true", help="skip the RLA/WEBRC replication check")
    ap.add_argument("--stamp", action="store_true",
                    help="compare the paper, default and stamped profiles on the stamp cases instead")
    ap.add_argument("--stamp-proto", action="append", choices=list(STAMP_PROTOS),
                    help="protocol to compare (repeatable; default: all five)")
    ap.add_argument("--stamp-case", action="append", choices=list(STAMP_CASES),
                    help=f"case to run (repeatable; default: {', '.join(STAMP_DEFAULT_CASES)})")
    ap.add_argument("--stamp-profile", action="append", choices=list(ALL_STAMP_PROFILES),
                    help="profile to compare (repeatable; default: default and stamped)")
    ap.add_argument("--harm", action="store_true",
                    help="with --stamp: also the two-TCP case's harm (bench/harm.py)")
    ap.add_argument("--docs", action="store_true", help="also write the tables into docs/assistance.md")
    a = ap.parse_args(argv)
    if a.stamp:
        protos = a.stamp_proto or list(STAMP_PROTOS)
        profiles = tuple(a.stamp_profile or STAMP_PROFILES)
        body = stamp_table(protos, a.stamp_case or list(STAMP_DEFAULT_CASES), a.seeds, a.duration, profiles)
        if a.harm:
            from bench import harm

            body += "\n\n" + harm.harm_table(protos, profiles, a.seeds, a.duration)
        if a.docs:
            from bench import docsection

            docsection.write_section(ROOT / "docs" / "assistance.md", "assistance-stamp", body,
                                     docsection.command_line("bench/assistance.py", argv))
        return 0
    parts: list[str] = []
    ns = a.n or ([16, 64] if a.quick else [16, 64, 256])
    variants = a.proto or list(VARIANTS)
    failed = False
    for n in ns:
        big = n > 64
        seeds = range(1, 2 if big else a.seeds + 1)
        for v in (v for v in variants if v in ASSISTED):
            if v == "mtcp-loss1" and n > 16 and not a.proto:
                continue  # the fold's failure under loss shows at the smallest tree
            dur = a.large_duration if big else a.duration
            if VARIANTS[v][0] == "mtcp":
                dur = min(dur, a.mtcp_duration)
            ons = [run_one(v, n, a.k, True, dur, s) for s in seeds]
            offs = [run_one(v, n, a.k, False, dur, s) for s in seeds]
            print_pair(ons, offs)
            parts.append(markdown_pair(ons, offs))
            failed |= any(r.receivers_with_data != n for r in offs)
            sys.stdout.flush()
    for v in (v for v in variants if v in REPLICATION_ONLY and not a.no_check):
        r = run_one(v, a.check_n, a.k, False, a.duration / 2, 1)
        print_check(r)
        parts.append(markdown_check(r))
        failed |= r.receivers_with_data != r.n
        sys.stdout.flush()
    if a.docs:
        from bench import docsection

        docsection.write_section(ROOT / "docs" / "assistance.md", "assistance", "\n\n".join(parts),
                                 docsection.command_line("bench/assistance.py", argv))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
