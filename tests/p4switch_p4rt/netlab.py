"""Network namespaces and veth pairs for switch tests (names start with ``p4mcc-``).

Each host is a network namespace holding one end of a veth pair (named
``eth0`` inside); the other end stays in the test's namespace for the switch.
Raw sockets are opened *inside* a host's namespace by switching the calling
thread there with setns(2) and back: a socket keeps the namespace it was
created in, so the test reads and writes host interfaces without spawning
processes.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

CLONE_NEWNET = 0x40000000
SO_TIMESTAMPNS = 35
ETH_P_ALL = 0x0003
_libc = ctypes.CDLL(None, use_errno=True)


def have_root() -> bool:
    return os.geteuid() == 0


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Run the block with this thread in namespace ``name``."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns({name})")
        yield
    finally:
        _libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


@dataclass
class Host:
    ns: str
    switch_if: str
    mac: bytes

    def socket(self) -> socket.socket:
        """A raw socket on the host's eth0 (created inside its namespace)."""
        with in_netns(self.ns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind(("eth0", ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return s


class Lab:
    """``n`` hosts, each wired to a switch-side interface in this namespace."""

    def __init__(self, n: int) -> None:
        tag = f"{os.getpid() % 100000}"
        self.hosts: list[Host] = []
        self._ns: list[str] = []
        self._links: list[str] = []
        try:
            for i in range(1, n + 1):
                ns = f"p4mcc-{tag}-h{i}"
                sw_if = f"p4mcc{tag}s{i}"
                _ip("netns", "add", ns)
                self._ns.append(ns)
                _ip("link", "add", sw_if, "type", "veth", "peer", "name", f"p4mcc{tag}h{i}")
                self._links.append(sw_if)
                _ip("link", "set", f"p4mcc{tag}h{i}", "netns", ns)
                _ip("-n", ns, "link", "set", f"p4mcc{tag}h{i}", "name", "eth0")
                # Quiet interfaces: no IPv6 autoconfiguration traffic into the switch.
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1"], capture_output=True)
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                               capture_output=True)
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("link", "set", sw_if, "up")
                mac = bytes([0x02, 0, 0, 0, 0, i])
                _ip("-n", ns, "link", "set", "eth0", "address", mac.hex(":"))
                self.hosts.append(Host(ns, sw_if, mac))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in self._ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._links, self._ns = [], []


def recv_matching(s: socket.socket, want, deadline: float) -> tuple[bytes, float] | None:
    """The next frame for which ``want(frame)`` holds, with the kernel's arrival
    time (``time.time()`` clock, so a frame queued in the socket keeps the
    instant it arrived); None when ``deadline`` (monotonic) passes."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            data, anc, _flags, addr = s.recvmsg(65536, 64)
        except (socket.timeout, BlockingIOError):
            return None
        if addr[2] == 4:  # PACKET_OUTGOING: our own transmission
            continue
        t = time.time()
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", payload[:16])
                t = sec + nsec / 1e9
        if want(data):
            return data, t
