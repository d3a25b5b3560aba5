"""Veth ports in network namespaces for the forwarding benchmarks.

``bench/veth_pps.py`` and ``bench/bmv2_side_by_side.py`` both put a switch's
ports on the root-namespace ends of veth pairs whose other ends sit in a
sender and a receiver namespace.  This module builds and removes that
plumbing, builds the test frames, sends them from the sender namespace
(:func:`send_frames`, the one send loop) and counts them in the receiver's
(:func:`start_receiver`), and stops the switch process a
benchmark started (by its process group, which the benchmark created with
``start_new_session``).  Needs root.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Iterable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from p4mcc.controller.igmp import checksum  # noqa: E402


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command, capturing its output."""
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


def ipv4(src: str, dst: str, proto: int, payload: bytes, ttl: int = 64, options: bytes = b"") -> bytes:
    """An IPv4 packet (identification 1, header checksum filled in) around ``payload``."""
    ihl = 5 + len(options) // 4
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(options) + len(payload), 1, 0, ttl,
                                proto, 0, socket.inet_aton(src), socket.inet_aton(dst)) + options)
    hdr[10:12] = struct.pack("!H", checksum(bytes(hdr)))
    return bytes(hdr) + payload


def eth(dst: str, src: str, payload: bytes) -> bytes:
    """An Ethernet II frame carrying IPv4."""
    return bytes.fromhex(dst.replace(":", "") + src.replace(":", "") + "0800") + payload


# The sender runs under the system Python in its namespace (standard library
# only): it floods ``frame`` for ``seconds`` (pps 0) or paces it at ``pps``,
# stamping each paced frame's last 8 bytes with its send time, and prints how
# many frames it sent.
_SENDER = r"""
import socket, struct, sys, time
iface, seconds, pps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
frame = bytes.fromhex(sys.argv[4])
n, end = 0, time.monotonic() + seconds
if pps > 0:
    gap, nxt = 1.0 / pps, time.monotonic()
    while time.monotonic() < end:
        f = bytearray(frame); f[-8:] = struct.pack("!q", time.time_ns()); s.send(bytes(f)); n += 1
        nxt += gap
        while time.monotonic() < nxt: pass
else:
    while time.monotonic() < end:
        for _ in range(256):
            try:
                s.send(frame); n += 1
            except OSError:
                pass
print(n)
"""


def send_frames(ns: str, iface: str, frame: bytes, seconds: float, pps: float = 0.0) -> int:
    """Send ``frame`` out of ``iface`` in namespace ``ns`` for ``seconds``; returns frames sent."""
    tx = sh("ip", "netns", "exec", ns, "/usr/bin/python3", "-c", _SENDER, iface, str(seconds), str(pps), frame.hex())
    return int(tx.stdout.strip())


# The receiver counts the frames carrying ``mark`` (on ``iface``, or every
# interface of its namespace when empty) until ``seconds`` pass or nothing
# arrives for that long, and prints: count, first-to-last span, and the
# median and 99th-percentile latency (us) of frames stamped by a paced sender.
_RECEIVER = r"""
import select, socket, struct, sys, time
seconds, mark, iface = float(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
if iface: s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 25)
print("ready", flush=True)
n, first, last, lat = 0, None, None, []
end = time.monotonic() + seconds
while True:
    left = end - time.monotonic()
    if left <= 0: break
    r, _, _ = select.select([s], [], [], left)
    if not r: break
    while True:
        try:
            data, addr = s.recvfrom(2048, socket.MSG_DONTWAIT)
        except BlockingIOError:
            break
        if addr[2] == 4 or mark not in data: continue
        now = time.monotonic(); first = first or now; last = now; n += 1
        sent = struct.unpack("!q", data[-8:])[0]
        if sent: lat.append(time.time_ns() - sent)   # only paced frames carry a send time
lat.sort()
med = lat[len(lat) // 2] / 1e3 if lat else 0.0
p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1e3 if lat else 0.0
print(n, (last - first) if first and last and last > first else 0.0, med, p99)
"""


def start_receiver(ns: str, mark: bytes, seconds: float, iface: str = "") -> subprocess.Popen[str]:
    """Start counting ``mark``-ed frames in namespace ``ns``; returns once it listens."""
    rx = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", _RECEIVER, str(seconds),
                           mark.hex(), iface], stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None
    if rx.stdout.readline().strip() != "ready":
        raise RuntimeError("receiver did not start")
    return rx


def received(rx: subprocess.Popen[str], timeout: float) -> tuple[int, float, float, float]:
    """What a receiver counted: (frames, receive span s, median latency us, p99 latency us)."""
    out, _ = rx.communicate(timeout=timeout)
    got, span, med, p99 = out.split()
    return int(got), float(span), float(med), float(p99)


def add_namespace(ns: str) -> None:
    """A namespace with loopback up and IPv6 off (no router solicitations in the counts)."""
    sh("ip", "netns", "add", ns)
    sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
    sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")


def add_veth(ns: str, inner: str, outer: str) -> None:
    """A veth pair: ``inner`` in ``ns``, ``outer`` in the root namespace (a switch port).

    Both ends up, IPv6 off on ``outer`` and checksum offloads off on both, so
    frames carry the checksums the switch verifies.
    """
    sh("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
    sh("ip", "link", "set", inner, "netns", ns)
    sh("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up")
    sh("ip", "link", "set", outer, "up")
    sh("sysctl", "-qw", f"net.ipv6.conf.{outer}.disable_ipv6=1")
    for dev, where in ((inner, ("ip", "netns", "exec", ns)), (outer, ())):
        sh(*where, "ethtool", "-K", dev, "tx", "off", "rx", "off", check=False)


def remove(namespaces: Iterable[str], devices: Iterable[str]) -> None:
    """Delete the benchmark's namespaces and root-side ports (missing ones are fine)."""
    for ns in namespaces:
        sh("ip", "netns", "del", ns, check=False)
    for dev in devices:
        sh("ip", "link", "del", dev, check=False)


def stop_group(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM the process group this benchmark started, SIGKILL it if it lingers."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
