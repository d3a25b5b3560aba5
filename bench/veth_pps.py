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
import subprocess
import sys
from pathlib import Path

from vethlab import add_namespace, add_veth, remove, sh, stop_group

ROOT = Path(__file__).resolve().parents[1]
NS_SRC, NS_DST = "p4mcc-bsrc", "p4mcc-bdst"
PORT1, PORT2 = "p4mcc-b1", "p4mcc-b2"
BRIDGE = "p4mcc-bbr"
PROGRAM = ROOT / "bench" / "programs" / "wire.p4"

# Sender and receiver run under the system Python in the namespaces: they only
# need the standard library.
SENDER = r"""
import socket, struct, sys, time
iface, seconds, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
def csum(b):
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF
total = size - 14
ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 1, 0, 64, 17, 0,
               socket.inet_aton("10.9.0.1"), socket.inet_aton("10.9.0.2")))
ip[10:12] = struct.pack("!H", csum(bytes(ip)))
udp = struct.pack("!HHHH", 9000, 9001, total - 20, 0)
frame = bytes.fromhex("020000000002" "020000000001" "0800") + bytes(ip) + udp + b"p4mccbench" + bytes(total - 38)
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(256):
        try:
            s.send(frame); n += 1
        except OSError:
            pass
print(n)
"""

RECEIVER = r"""
import select, socket, sys, time
iface, seconds = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
print("ready", flush=True)
n, first, last = 0, None, None
end = time.monotonic() + seconds
while True:
    left = end - time.monotonic()
    if left <= 0: break
    r, _, _ = select.select([s], [], [], left)
    if not r: break
    while True:
        try:
            data = s.recv(2048, socket.MSG_DONTWAIT)
        except BlockingIOError:
            break
        if b"p4mccbench" in data:
            now = time.monotonic()
            first = first or now
            last = now
            n += 1
print(n, (last - first) if first and last and last > first else 0.0)
"""


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
    rx = subprocess.Popen(["ip", "netns", "exec", NS_DST, "/usr/bin/python3", "-c", RECEIVER,
                           "p4mcc-bd0", str(seconds + 3)], stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None
    if rx.stdout.readline().strip() != "ready":
        raise RuntimeError("receiver did not start")
    tx = sh("ip", "netns", "exec", NS_SRC, "/usr/bin/python3", "-c", SENDER, "p4mcc-bs0",
            str(seconds), str(size))
    out, _ = rx.communicate(timeout=seconds + 30)
    got, span = out.split()
    return int(tx.stdout.strip()), int(got), float(span)


def bench_p4mcc(seconds: float, size: int) -> float:
    cmd = [sys.executable, "-m", "p4mcc_cli.main", "switch", str(PROGRAM), "--grpc-server-addr",
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
