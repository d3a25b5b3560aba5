"""P4 switch nodes' CPU time alone, on the frames a simulation gave them.

    python bench/switch_replay.py [--receivers N] [--duration S] [--order sim|node]
                                  [--variant full|egress-identity|no-replicas] [--keys]
                                  [--repeat K]

Runs ``bench/sim_speed.py``'s TFMCC tree once with P4 switch nodes,
recording every frame each node receives (node, port, bytes, time); then
builds the same network again (configured the same way) and feeds the
recorded frames to the fresh nodes' ``Switch.process`` in the recorded
order, timing only those calls.  A node's forwarding depends only on its
own input frames and state, so the replay reproduces the run's forwarding
exactly, without the rest of the simulator (hosts, links, events) in the
measurement, whose share of the CPU time varies from run to run.

Prints the switch CPU time and a digest of every output frame (port,
instance type, bytes) with every node's stats, counters and registers at
the end: two versions of the interpreter (or ``P4MCC_SIM_FASTPATH=0`` and
``=1``) must print the same digest.

``--order node`` replays each node's frames together (the same outputs per
node, another interleaving): how much of the cost is interleaving with other
nodes.  ``--variant`` gives upper bounds on what skipping work could save
(outputs then differ): ``egress-identity`` replaces the egress control by
one that changes nothing, ``no-replicas`` emits each replica's pre-egress
bytes without copies or egress passes.  ``--keys`` counts the egress runs
whose inputs (everything ``mcc.p4``'s egress reads: metadata fields, the
port, the length and the two membership registers' cells) repeat an
earlier run's on the same node, with and without ``meta.now``: the hit rate
an outcome cache keyed on exact read values could reach.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from p4mcc.netsim import p4_switch as P  # noqa: E402
from p4mcc.netsim.run import build_run  # noqa: E402
from p4mcc.netsim.switches import choose_switch  # noqa: E402
from p4mcc.p4switch.interp import switch as S  # noqa: E402
from sim_speed import tfmcc_tree  # noqa: E402


def record(sc: Any) -> list[tuple[str, int, bytes, float]]:
    """Every frame the P4 nodes receive in one run of ``sc``, in order."""
    log: list[tuple[str, int, bytes, float]] = []
    orig = P.P4SwitchNode.receive

    def receive(self: P.P4SwitchNode, port: int, frame: bytes) -> None:
        log.append((self.name, port, bytes(frame), self.sim.now))
        orig(self, port, frame)

    P.P4SwitchNode.receive = receive  # type: ignore[method-assign]
    try:
        run = build_run(sc, switch=choose_switch("p4", sc))
        run.sim.run(until=sc.duration)
    finally:
        P.P4SwitchNode.receive = orig  # type: ignore[method-assign]
    return log


def p4_nodes(run: Any) -> dict[str, P.P4SwitchNode]:
    return {name: n for name, n in run.net.switches.items() if isinstance(n, P.P4SwitchNode)}


def apply_variant(variant: str) -> None:
    if variant == "egress-identity":
        init = S.Switch.__init__

        def patched(self: S.Switch, *a: Any, **k: Any) -> None:
            init(self, *a, **k)
            self._egress = lambda h, m, s: (h, m, s)

        S.Switch.__init__ = patched  # type: ignore[method-assign]
    elif variant == "no-replicas":
        def multicast(self: S.Switch, mgid: int, roots: tuple, payload: bytes, length: int,
                      egress_q: Any, truncate: int, at_once: Any = None) -> None:
            reps = self.pre.replicas(mgid)
            if reps:
                data = self._emit(roots[0], payload)
                self.bench_extra.extend(S.Egress(port, data, 5) for port, _ in reps)

        S.Switch._multicast = multicast  # type: ignore[method-assign]


def count_keys(nodes: dict[str, P.P4SwitchNode]) -> dict[str, int]:
    """Wrap each node's egress control to count repeated read sets (mcc.p4)."""
    stats = {"egress_runs": 0, "repeats": 0, "repeats_without_now": 0}
    for node in nodes.values():
        sw = node.sw
        seen: set = set()
        seen_wo: set = set()
        bitmap = sw.registers[S.resolve_name(sw.registers, "member_bitmap", "register")]
        stamps = sw.registers[S.resolve_name(sw.registers, "member_ts", "register")]
        egress, ctx = sw._egress, sw._ctx

        def keyed(h: Any, m: Any, s: Any, egress: Any = egress, ctx: Any = ctx, seen: set = seen,
                  seen_wo: set = seen_wo, bitmap: Any = bitmap, stamps: Any = stamps) -> Any:
            port, g = s.f_egress_port, m.f_gidx
            k = (m.f_kind, m.f_in_port, g, m.f_membership_timeout, m.f_punt_reason, port, ctx.length,
                 bitmap.read(g), stamps.read(g * 64 + port))
            stats["egress_runs"] += 1
            stats["repeats"] += (k, m.f_now) in seen
            stats["repeats_without_now"] += k in seen_wo
            seen.add((k, m.f_now))
            seen_wo.add(k)
            return egress(h, m, s)

        sw._egress = keyed
    return stats


def replay(sc: Any, log: list, keys_wanted: bool) -> tuple[float, str, int, Any]:
    """Feed ``log`` to a freshly built and configured network's P4 nodes:
    (switch CPU seconds, digest, node count, egress-key counts or None)."""
    nodes = p4_nodes(build_run(sc, switch=choose_switch("p4", sc)))
    keys = count_keys(nodes) if keys_wanted else None
    gc.collect()
    gc.freeze()  # as Simulator.run does: the network's objects are not the collector's work
    per_node = {name: hashlib.sha256() for name in nodes}  # each node's outputs in its own order
    for node in nodes.values():
        node.sw.bench_extra = []  # no-replicas: what _multicast emitted
    c0 = time.process_time()
    for name, port, frame, now in log:
        sw = nodes[name].sw
        out = sw.process(port, frame, now)
        if sw.bench_extra:
            out += sw.bench_extra
            sw.bench_extra.clear()
        update = per_node[name].update
        for e in out:
            update(b"%d %d " % (e.port, e.instance_type))
            update(e.data)
    cpu = time.process_time() - c0
    gc.unfreeze()
    digest = hashlib.sha256()
    for name in sorted(nodes):
        sw = nodes[name].sw
        digest.update(per_node[name].digest())
        digest.update(repr(sorted(sw.stats.items())).encode())
        for cname, c in sorted(sw.counters.items()):
            digest.update(repr((cname, [c.read(i) for i in range(c.size)])).encode())
        for rname, r in sorted(sw.registers.items()):
            digest.update(repr((rname, [r.read(i) for i in range(r.size)])).encode())
    return cpu, digest.hexdigest()[:16], len(nodes), keys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--receivers", type=int, default=256)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--order", choices=["sim", "node"], default="sim")
    ap.add_argument("--variant", choices=["full", "egress-identity", "no-replicas"], default="full")
    ap.add_argument("--keys", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="replay this many times into fresh nodes; prints the median and the spread")
    args = ap.parse_args()
    sc = tfmcc_tree(args.duration, args.receivers)
    log = record(sc)
    if args.order == "node":
        log.sort(key=lambda r: r[0])  # stable: each node's frames keep their order
    apply_variant(args.variant)
    runs = [replay(sc, log, args.keys) for _ in range(args.repeat)]
    cpus = sorted(r[0] for r in runs)
    digests = {r[1] for r in runs}
    _, digest, nodes, keys = runs[0]
    spread = (f" (min {cpus[0]:.2f}, median {cpus[len(cpus) // 2]:.2f}, max {cpus[-1]:.2f} of {len(cpus)} replays)"
              if len(cpus) > 1 else "")
    cpu = cpus[len(cpus) // 2]
    print(f"{len(log)} frames into {nodes} P4 nodes ({args.receivers} receivers, {args.duration:g} s, "
          f"order {args.order}, {args.variant}, fast path {'on' if P.fast_path() else 'off'}): "
          f"switch CPU {cpu:.2f} s{spread}, {cpu / max(len(log), 1) * 1e6:.1f} us per frame in, "
          f"digest {digest}")
    if len(digests) > 1:
        print(f"replays disagree: digests {sorted(digests)}")
        return 1
    if keys is not None:
        n = max(keys["egress_runs"], 1)
        print(f"egress runs {keys['egress_runs']}: inputs seen before on the node {keys['repeats']} "
              f"({100 * keys['repeats'] / n:.1f} %), without meta.now {keys['repeats_without_now']} "
              f"({100 * keys['repeats_without_now'] / n:.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
