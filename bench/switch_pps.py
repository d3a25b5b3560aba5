"""Packets per second of the built-in v1model switch.

    python bench/switch_pps.py [--packets N] [--veth [--seconds S]] [--vs-bmv2]

1. plain IPv4 forwarding (tests/stf/v1model/forward.p4: parse, checksum
   verify, LPM, TTL decrement, checksum update, deparse), 64-byte frames;
2. p4src/mcc.p4 (when it compiles) with a multicast group of 4 ports, so
   each input packet makes 4 egress passes.

Prints packets per CPU-second in and out for each.  ``--veth`` (root) adds
the rate through real veth ports beside the Linux bridge on the same veths
(``bench/veth_pps.py``).  ``--vs-bmv2`` (root; p4c-bm2-ss and
simple_switch_grpc on PATH) measures ``p4mcc switch`` beside BMv2 on the same
veth ports with the same program and offered load, unicast and 4-way
multicast, plus latency at a moderate load (``bench/bmv2_side_by_side.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from p4mcc.p4switch.frontend import P4Error, compile_file  # noqa: E402
from p4mcc.p4switch.interp import Switch, UnsupportedError  # noqa: E402
from p4mcc.p4switch.native import make_switch  # noqa: E402
from p4mcc.p4switch.runtime.tables import Lpm  # noqa: E402


def ipv4_frame(dst: int, size: int = 64) -> bytes:
    def csum(b: bytes) -> int:
        s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return (~s) & 0xFFFF

    total = size - 14
    ip = bytearray(bytes.fromhex("4500") + total.to_bytes(2, "big") + bytes.fromhex("00010000" "4011" "0000")
                   + bytes.fromhex("0a000001") + dst.to_bytes(4, "big"))
    ip[10:12] = csum(bytes(ip)).to_bytes(2, "big")
    eth = bytes.fromhex("000000000001" "000000000002" "0800")
    return eth + bytes(ip) + bytes(total - 20)


def measure(sw: Switch, frames: list[bytes], port: int, n: int) -> tuple[float, float]:
    """Packets in and out per second of CPU time of this process (stable
    when other work shares the machine; on an idle machine it equals wall time)."""
    out = 0
    t0 = time.process_time()
    for i in range(n):
        out += len(sw.process(port, frames[i % len(frames)], now=i * 1e-6))
    dt = time.process_time() - t0
    return n / dt, out / dt


def bench_forward(n: int, pipeline: str = "interp") -> None:
    sw = make_switch(compile_file(os.path.join(ROOT, "tests/stf/v1model/forward.p4")), pipeline)
    for i in range(16):
        sw.table_add("route", {"h.ipv4.dst": Lpm(0x0A000000 + (i << 16), 16)}, "fwd", {"dmac": i, "port": 1 + i % 4})
    frames = [ipv4_frame(0x0A000001 + (i << 16)) for i in range(16)]
    assert len(sw.process(0, frames[0])) == 1, sw.last_error
    pin, pout = measure(sw, frames, 0, n)
    print(f"[{pipeline}] ipv4 forwarding (forward.p4, 64 B): {pin:10.0f} packets/s in, {pout:10.0f} out")


def bench_mcc(n: int, pipeline: str = "interp") -> None:
    path = os.path.join(ROOT, "p4src", "mcc.p4")
    if not os.path.exists(path):
        print("p4src/mcc.p4: not present, skipped")
        return
    try:
        sw = make_switch(compile_file(path, [os.path.join(ROOT, "p4src"), os.path.join(ROOT, "p4src", "include")]),
                         pipeline)
    except (P4Error, UnsupportedError) as exc:
        print(f"p4src/mcc.p4: does not build yet ({str(exc).splitlines()[0]}), skipped")
        return
    # one group G0 = 239.1.1.1 on PRE group 10 over ports 1..5; hosts on ports
    # 1..4 join with IGMPv2, the sender on port 5 sends p4mcc data to G0
    from p4mcc.p4switch.stf import StfRunner

    runner = StfRunner(sw)
    cfg = ["mc_mgrp_create 10", "mc_node_create 0 1 2 3 4 5", "mc_node_associate 10 0"]
    for r in range(4):  # not ``n``: that is the packet count measured below
        cfg.append(f"add MccIngress.record{r}.groups group:0xef010101 MccIngress.record{r}.set_group"
                   "(gidx:0, mgid:10, upstream_port:0, has_upstream:0)")
    for c in cfg:
        runner.command(c)
    join = bytes.fromhex("01005E010101000000000001080046C000200000000001022A150A000001EF010101"
                         "940400001600F9FCEF010101")
    for port in (1, 2, 3, 4):
        sw.process(port, join, now=0.0)
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from p4mcc.hosts import wire

    data = bytes(Ether(src="00:00:00:00:00:64", dst="01:00:5e:01:01:01")
                 / IP(src="10.0.0.100", dst="239.1.1.1", id=1)
                 / UDP(sport=5001, dport=5001)
                 / wire.TfmccData(session_id=7, seq=1, payload=b"x" * 32).encode())
    outs = sw.process(5, data, now=0.001)
    if sorted(o.port for o in outs) != [1, 2, 3, 4]:
        print(f"p4src/mcc.p4: replication setup did not reach 4 ports ({[o.port for o in outs]}), skipped")
        return
    pin, pout = measure(sw, [data], 5, n)
    print(f"[{pipeline}] p4src/mcc.p4, data replicated to 4 ports: {pin:10.0f} packets/s in, {pout:10.0f} out")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000)
    ap.add_argument("--veth", action="store_true",
                    help="also measure through real veth ports beside the Linux bridge (root)")
    ap.add_argument("--seconds", type=float, default=5.0, help="--veth: seconds of offered load")
    ap.add_argument("--vs-bmv2", action="store_true",
                    help="p4mcc switch beside simple_switch_grpc on veth ports (root, real toolchain)")
    ap.add_argument("--pipeline", choices=["interp", "native", "both"], default="both",
                    help="in-process figures for the interpreter, the compiled pipeline or both")
    args = ap.parse_args()
    if args.vs_bmv2:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bmv2_side_by_side

        return bmv2_side_by_side.main(seconds=min(args.seconds, 3.0))
    print(f"python {sys.version.split()[0]}, {args.packets} packets per figure")
    for pipeline in (["interp", "native"] if args.pipeline == "both" else [args.pipeline]):
        bench_forward(args.packets, pipeline)
        bench_mcc(args.packets, pipeline)
    if shutil.which("simple_switch_grpc") is None:
        print("simple_switch_grpc not on PATH: no BMv2 comparison (see --vs-bmv2)")
    if args.veth:
        import veth_pps

        veth_pps.main(seconds=args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
