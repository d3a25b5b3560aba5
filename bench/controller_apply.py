"""Time for the controller to configure a 20-switch, 200-host topology.

Starts ``--switches`` real ``p4mcc switch`` processes (no ports: only the
control plane is measured), builds a binary-tree topology with the hosts
spread evenly over the switches and ``--sessions`` multicast sessions, then
prints:

* the desired-state computation time (pure function, no I/O);
* the time to apply it from empty: connect, arbitrate, push the pipeline,
  read back and write every entity, all switches concurrently;
* the time of a second apply that has nothing to write (read back + diff);
* the time to apply a single group change (one session added: its PRE
  groups and group-table entries on the switches of its tree).

Usage::

    python bench/controller_apply.py [--switches 20] [--hosts 200] [--sessions 8]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from p4mcc.controller import fleet  # noqa: E402
from p4mcc.controller.desired import SessionSpec, plan  # noqa: E402
from p4mcc.controller.diff import summarize  # noqa: E402
from p4mcc.controller.pipeline import builtin_pipeline  # noqa: E402
from p4mcc.controller.program import CPU_PORT  # noqa: E402
from p4mcc.controller.topology import from_tutorials_dict  # noqa: E402

PROTOCOLS = ("mtcp", "tfmcc", "vlmcc", "webrc", "rla")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"switch on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"switch on port {port} did not start within {timeout} s")


def build_topology(n_switches: int, n_hosts: int, ports: dict[str, int]) -> dict:
    """Switches in a binary tree (s1 root), hosts spread round-robin."""
    switches = {f"s{i}": {"address": f"127.0.0.1:{ports[f's{i}']}", "device_id": 0} for i in range(1, n_switches + 1)}
    next_port = {s: 1 for s in switches}
    links = []
    for i in range(2, n_switches + 1):
        parent = f"s{i // 2}"
        child = f"s{i}"
        links.append([f"{parent}-p{next_port[parent]}", f"{child}-p{next_port[child]}"])
        next_port[parent] += 1
        next_port[child] += 1
    hosts = {}
    for j in range(1, n_hosts + 1):
        sw = f"s{(j - 1) % n_switches + 1}"
        hosts[f"h{j}"] = {"ip": f"10.0.{j // 250}.{j % 250 + 1}", "mac": "08:00:00:00:%02x:%02x" % (j >> 8, j & 0xFF)}
        links.append([f"h{j}", f"{sw}-p{next_port[sw]}"])
        next_port[sw] += 1
    return {"hosts": hosts, "switches": switches, "links": links}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--switches", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--sessions", type=int, default=8)
    args = ap.parse_args()
    fleet.quiet_finsy()

    procs = {}
    ports = {}
    t0 = time.perf_counter()
    try:
        for i in range(1, args.switches + 1):
            name = f"s{i}"
            ports[name] = free_port()
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "p4mcc.cli.main", "switch", "--no-p4", "--grpc-server-addr",
                 f"127.0.0.1:{ports[name]}", "--cpu-port", str(CPU_PORT)],
                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name, proc in procs.items():
            wait_listening(ports[name], proc)
        start_s = time.perf_counter() - t0

        topo = from_tutorials_dict(build_topology(args.switches, args.hosts, ports))
        hosts = sorted(topo.hosts, key=lambda h: int(h[1:]))
        sessions = [
            SessionSpec(k, hosts[(k * 37) % len(hosts)], (f"239.2.0.{k}",), protocol=PROTOCOLS[k % len(PROTOCOLS)])
            for k in range(1, args.sessions + 1)
        ]
        t = time.perf_counter()
        p = plan(topo, sessions)
        desired_s = time.perf_counter() - t
        entities = sum(len(st) for st in p.switches.values())
        pipe = builtin_pipeline()
        targets = [fleet.Target(s.name, s.address) for s in topo.switches.values()]

        def apply(desired: dict) -> tuple[float, dict[str, int]]:
            async def do(sw):
                return await fleet.sync(sw, desired[sw.name])

            t = time.perf_counter()
            res = asyncio.run(fleet.for_each(targets, do, pipeline=pipe, retry_for=10))
            took = time.perf_counter() - t
            if res.faults:
                raise SystemExit("\n".join(str(f) for f in res.faults))
            total = {"insert": 0, "modify": 0, "delete": 0}
            for ops in res.results.values():
                for k, v in summarize(ops).items():
                    total[k] += v
            return took, total

        empty_s, empty_ops = apply(p.switches)
        again_s, again_ops = apply(p.switches)
        extra = SessionSpec(args.sessions + 1, hosts[1], ("239.2.1.1",), protocol="webrc",
                            receivers=tuple(hosts[2:12]))
        p2 = plan(topo, sessions + [extra])
        change_s, change_ops = apply(p2.switches)
        on_tree = len(p2.trees[extra.session_id])

        print(f"controller apply: {args.switches} switches, {args.hosts} hosts, {args.sessions} sessions "
              f"({entities} entities in the desired state)")
        print(f"  switch processes started         {start_s:8.2f} s")
        print(f"  desired state computed           {desired_s * 1e3:8.1f} ms")
        print(f"  apply from empty                 {empty_s:8.2f} s  "
              f"({empty_ops['insert']} inserts, {empty_ops['modify']} modifies; "
              f"{sum(empty_ops.values()) / empty_s:.0f} writes/s)")
        print(f"  apply again (nothing to do)      {again_s:8.2f} s  ({sum(again_ops.values())} writes)")
        print(f"  single group change              {change_s:8.2f} s  "
              f"({change_ops['insert']} inserts on the {on_tree} switches of its tree, "
              f"{change_ops['modify']} modifies, {change_ops['delete']} deletes)")
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
