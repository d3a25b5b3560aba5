"""Veth ports in network namespaces for the forwarding benchmarks.

``bench/veth_pps.py`` and ``bench/bmv2_side_by_side.py`` both put a switch's
ports on the root-namespace ends of veth pairs whose other ends sit in a
sender and a receiver namespace.  This module builds and removes that
plumbing, and stops the switch process a benchmark started (by its process
group, which the benchmark created with ``start_new_session``).  Needs root.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Iterable


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command, capturing its output."""
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


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
