"""Forwarding rate through real veth ports: ``p4mcc switch`` beside the Linux bridge.

    sudo .venv/bin/python bench/switch_pps.py --veth [--seconds S] [--size B]

Two network namespaces, ``p4mcc-bsrc`` and ``p4mcc-bdst``, each hold one end of
a veth pair; the other ends (``p4mcc-b1``, ``p4mcc-b2``) sit in the root
namespace and become ports 1 and 2 of the device under test:

1. ``p4mcc switch`` running a two-port program (``bench/programs/wire.p4``:
   port 1 <-> port 2, parse Ethernet/IPv4, verify and update the IPv4
   checksum, decrement TTL — the usual per-packet work);
2. a Linux bridge over the same two interfaces.

A sender in ``p4mcc-bsrc`` writes UDP frames to its AF_PACKET socket as fast
as it can for S seconds; a receiver in ``p4mcc-bdst`` counts what arrives.
Each device is measured at the rate it delivers, so the figure is its
forwarding capacity for that offered load (the sender itself takes one of the
machine's cores).  Namespaces and interfaces are removed afterwards, always.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

from vethlab import add_namespace, add_veth, eth, ipv4, received, remove, send_frames, sh, start_receiver, stop_group

ROOT = Path(__file__).resolve().parents[1]
NS_SRC, NS_DST = "p4mcc-bsrc", "p4mcc-bdst"
PORT1, PORT2 = "p4mcc-b1", "p4mcc-b2"
BRIDGE = "p4mcc-bbr"
PROGRAM = ROOT / "bench" / "programs" / "wire.p4"

def bench_frame(size: int) -> bytes:
    """A ``size``-byte UDP frame 10.9.0.1:9000 -> 10.9.0.2:9001 marked for the receiver."""
    total = size - 14
    udp = struct.pack("!HHHH", 9000, 9001, total - 20, 0) + b"p4mccbench" + bytes(total - 38)
    return eth("02:00:00:00:00:02", "02:00:00:00:00:01", ipv4("10.9.0.1", "10.9.0.2", 17, udp))


def setup() -> None:
    teardown()
    for ns, inner, outer in ((NS_SRC, "p4mcc-bs0", PORT1), (NS_DST, "p4mcc-bd0", PORT2)):
        add_namespace(ns)
        add_veth(ns, inner, outer)


def teardown() -> None:
    sh("ip", "link", "del", BRIDGE, check=False)
    remove((NS_SRC, NS_DST), (PORT1, PORT2))


def offer(seconds: float, size: int) -> tuple[int, int, float]:
    """Run receiver and sender; returns (sent, received, receive span s)."""
    rx = start_receiver(NS_DST, b"p4mccbench", seconds + 3, "p4mcc-bd0")
    sent = send_frames(NS_SRC, "p4mcc-bs0", bench_frame(size), seconds)
    got, span, _, _ = received(rx, seconds + 30)
    return sent, got, span


def bench_p4mcc(seconds: float, size: int) -> float:
    cmd = [sys.executable, "-m", "p4mcc.cli.main", "switch", str(PROGRAM), "--grpc-server-addr",
           "127.0.0.1:0", "-i", f"1@{PORT1}", "-i", f"2@{PORT2}"]
    sw = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    try:
        assert sw.stdout is not None
        for line in sw.stdout:
            if re.search(r"serving P4Runtime on", line):
                break
        else:
            raise RuntimeError("p4mcc switch did not start")
        sent, got, span = offer(seconds, size)
    finally:
        stop_group(sw)
    rate = got / span if span else 0.0
    print(f"p4mcc switch  (wire.p4, {size} B): offered {sent / seconds:10.0f} pps, delivered {rate:10.0f} pps")
    return rate


def bench_bridge(seconds: float, size: int) -> float:
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    for dev in (PORT1, PORT2):
        sh("ip", "link", "set", dev, "master", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    try:
        sent, got, span = offer(seconds, size)
    finally:
        sh("ip", "link", "del", BRIDGE, check=False)
    rate = got / span if span else 0.0
    bound = " (bounded by the sender: at least this much)" if got >= 0.98 * sent else ""
    print(f"linux bridge  ({size} B):          offered {sent / seconds:10.0f} pps, delivered {rate:10.0f} pps{bound}")
    return rate


def main(seconds: float = 5.0, size: int = 64) -> int:
    if os.geteuid() != 0:
        print("veth mode needs root (network namespaces): skipped")
        return 0
    setup()
    try:
        ours = bench_p4mcc(seconds, size)
        bridge = bench_bridge(seconds, size)
    finally:
        teardown()
    if bridge:
        print(f"ratio p4mcc switch / linux bridge: {ours / bridge:.4f} (an upper bound when the bridge is sender-bound)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
