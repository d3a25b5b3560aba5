"""One-way delay of timestamped packets over each way Mininet runs emulate a link (root).

On one machine every namespace reads the same clock, so a packet's one-way
delay is its receive stamp minus its send stamp.  A packet may arrive later
than the link's delay (a queue, a late scheduler) but never earlier (both
emulations let a frame the token bucket covers through without serialising
it, so the delay itself is the bound).  Two emulations, each on a veth pair between
two network namespaces, 20 ms at 10 Mbit/s with a 50-packet queue:

* ``tc``: the kernel's disciplines on the sender's interface, the commands
  of :func:`emulation.shaping.tc_commands` (netem, htb, pfifo), as BMv2 runs get them;
* ``linkproc``: p4mcc's link emulation in its own process
  (:mod:`emulation.linkproc`, the built-in switch's ``Link``) between two
  veth pairs, as BMv2 runs on a kernel without netem get it.

The sender stamps each datagram with the wall clock just before ``sendto``;
the receiver takes the kernel's receive stamp (``SO_TIMESTAMPNS``), the
earliest instant the datagram can be said to have arrived.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from p4mcc.emulation.shaping import Direction, probe_qdiscs, tc_commands

pytestmark = pytest.mark.root

DELAY_S = 0.020
RATE_BPS = 10e6
QUEUE = 50
PACKETS = 200
GAP_S = 0.004  # 4 ms apart: 1000-byte datagrams at 2 Mbit/s, below the rate
SIZE = 1000
PORT = 47123

SENDER = textwrap.dedent("""
    import socket, struct, sys, time
    dst, port, n, gap, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = bytes(size - 12)
    nxt = time.monotonic()
    for i in range(n):
        s.sendto(struct.pack("!Iq", i, time.time_ns()) + pad, (dst, port))
        nxt += gap
        time.sleep(max(0.0, nxt - time.monotonic()))
""")

RECEIVER = textwrap.dedent("""
    import socket, struct, sys
    port, n = int(sys.argv[1]), int(sys.argv[2])
    SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("", port))
    s.settimeout(10.0)
    print("ready", flush=True)
    for _ in range(n):
        try:
            data, anc, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        at = next(struct.unpack_from("qq", raw) for lvl, kind, raw in anc if kind == SO_TIMESTAMPNS)
        seq, sent = struct.unpack_from("!Iq", data)
        print(seq, at[0] * 10**9 + at[1] - sent, flush=True)
""")


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    """Namespaces and interface names of this test alone (other runs may share the machine)."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "tc", "ethtool")):
        pytest.skip("needs root, ip, tc and ethtool (network namespaces, veth pairs, qdiscs)")
    tag = f"{os.getpid() % 100000:05d}"
    n = {"a": f"owda{tag}", "b": f"owdb{tag}", "l": f"owdl{tag}",
         "va": f"oa{tag}", "vb": f"ob{tag}", "la": f"ola{tag}", "lb": f"olb{tag}"}
    for ns in (n["a"], n["b"], n["l"]):
        sh("ip", "netns", "add", ns)
    try:
        yield n
    finally:
        for ns in (n["a"], n["b"], n["l"]):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def veth(a: str, ns_a: str, b: str, ns_b: str) -> None:
    """A veth pair, its ends in two namespaces, up, with no checksum offload: a
    frame relayed through a packet socket carries the checksum it was sent with,
    as Mininet runs set their interfaces (emulation/mininet_net.py)."""
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    for dev, ns in ((a, ns_a), (b, ns_b)):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "rx", "off")


def address(ns: str, dev: str, ip: str) -> None:
    sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
    sh("ip", "-n", ns, "link", "set", "lo", "up")


@contextmanager
def receiving(ns: str) -> Iterator[subprocess.Popen]:
    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", RECEIVER, str(PORT), str(PACKETS)],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield p
    finally:
        p.kill()
        p.wait()


def one_way_delays(n: dict[str, str]) -> list[float]:
    """Send PACKETS stamped datagrams from namespace a to b; their one-way delays (s)."""
    with receiving(n["b"]) as rx:
        subprocess.run(["ip", "netns", "exec", n["a"], sys.executable, "-c", SENDER, "10.231.0.2", str(PORT),
                        str(PACKETS), str(GAP_S), str(SIZE)], check=True, timeout=30)
        out, _ = rx.communicate(timeout=15)
    return [int(line.split()[1]) / 1e9 for line in out.splitlines() if line.strip()]


def check(delays: list[float]) -> None:
    assert len(delays) >= 0.95 * PACKETS  # the first may wait for ARP; none is dropped by the queue
    early = [d for d in delays if d < DELAY_S]
    assert not early, f"{len(early)} of {len(delays)} packets arrived before the link's {DELAY_S * 1e3:.0f} ms " \
                      f"(earliest {min(delays) * 1e3:.3f} ms)"
    delays = sorted(delays)
    # late by the scheduler is allowed (a shared machine), but not as a rule
    assert delays[len(delays) // 2] <= 2 * DELAY_S, delays[len(delays) // 2]


def test_tc_shaping_never_delivers_before_the_configured_delay(names: dict[str, str]) -> None:
    n = names
    veth(n["va"], n["a"], n["vb"], n["b"])
    address(n["a"], n["va"], "10.231.0.1")
    address(n["b"], n["vb"], "10.231.0.2")
    d = Direction("a--b", "a", "b", "s", 1, n["va"], "egress", RATE_BPS, DELAY_S, QUEUE, None, 0.0)
    missing = d.needs() - probe_qdiscs(n["va"], run=lambda cmd, **kw: subprocess.run(
        ["ip", "netns", "exec", n["a"], *cmd], **kw))
    if missing:
        pytest.skip(f"this kernel lacks {', '.join(sorted(missing))} (runs here shape with the link process)")
    for cmd in tc_commands(d, n["va"]):
        sh("ip", "netns", "exec", n["a"], *cmd.split())
    check(one_way_delays(n))


def test_the_link_process_never_delivers_before_the_configured_delay(names: dict[str, str]) -> None:
    n = names
    veth(n["va"], n["a"], n["la"], n["l"])
    veth(n["lb"], n["l"], n["vb"], n["b"])
    address(n["a"], n["va"], "10.231.0.1")
    address(n["b"], n["vb"], "10.231.0.2")
    link = f"1:egress:rate={RATE_BPS:.0f}bps,delay={DELAY_S * 1e3:.0f}ms,queue={QUEUE}"
    proc = subprocess.Popen(["ip", "netns", "exec", n["l"], sys.executable, "-m", "p4mcc.emulation.linkproc",
                             "--name", "owd", "--wire", f"1@{n['la']}={n['lb']}", "--link", link],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "link emulation ready" in line:
                break
        check(one_way_delays(n))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
