"""``p4mcc host send/recv --proto rla|mtcp|vlmcc`` over real UDP sockets on loopback.

Each agent is its own process, as on a Mininet host.  Linux routes all of
127.0.0.0/8 to ``lo``, so every agent gets its own address and can bind the
session port for unicast (MTCP agents receive their children's ACKs there).
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
from pathlib import Path

import pytest
import warm_agents

SENDER = "127.0.0.1"


def _loopback_multicast() -> bool:
    """Whether this kernel delivers multicast over ``lo`` (a one-datagram probe)."""
    group, port = "239.255.77.77", 47999
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        rx.bind((group, port))
        rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                      struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("127.0.0.1")))
        rx.settimeout(1.0)
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        tx.sendto(b"probe", (group, port))
        return rx.recv(16) == b"probe"
    except OSError:
        return False
    finally:
        rx.close()
        tx.close()


pytestmark = pytest.mark.skipif(not _loopback_multicast(), reason="no multicast on loopback here")


def _agent(role: str, proto: str, local: str, port: int, group: str, metrics: Path, duration: float,
           params: list[str]) -> warm_agents.Agent:
    cmd = ["host", role, "--proto", proto, "--group", group,
           "--port", str(port), "--local", local, "--sender", SENDER, "--duration", str(duration),
           "--metrics", str(metrics), "--seed", "3"]
    for p in params:
        cmd += ["--param", p]
    return warm_agents.agent(cmd)


def _summary(path: Path) -> dict:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return next(x for x in reversed(lines) if x.get("state") == "summary")


def _launch(tmp_path: Path, proto: str, port: int, rparams: list[str], sparams: list[str],
            duration: float, receivers: int = 2) -> tuple[tuple[Path, subprocess.Popen[str]], list]:
    group = "239.77.0.%d" % (port % 200 + 1)
    # The sender first, so the receivers' hellos find it listening.
    ms = tmp_path / f"{proto}-s.jsonl"
    sender = _agent("send", proto, SENDER, port, group, ms, duration, sparams)
    receivers_ = []
    for i in range(receivers):
        m = tmp_path / f"{proto}-r{i}.jsonl"
        receivers_.append((m, _agent("recv", proto, f"127.0.0.{i + 2}", port, group, m, duration, rparams)))
    warm_agents.start([sender, *(a for _m, a in receivers_)])
    return (ms, sender[0]), [(m, a[0]) for m, a in receivers_]


TREE = "127.0.0.2>127.0.0.1,127.0.0.3>127.0.0.2"  # 127.0.0.2 is the other's agent


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[dict, list[dict]]]:
    """All three protocols at once (separate ports and groups), to keep the folder fast."""
    tmp = tmp_path_factory.mktemp("loopback")
    launched = {
        "rla": _launch(tmp, "rla", 47311, ["receivers=2"], ["total_packets=300", "receivers=2"], 5.0),
        "mtcp": _launch(tmp, "mtcp", 47312, [f"tree={TREE}"], ["total_packets=300", f"tree={TREE}"], 5.0),
        "vlmcc": _launch(tmp, "vlmcc", 47313, [], [], 2.5),
    }
    out = {}
    for proto, ((ms, sp), procs) in launched.items():
        for p in [sp, *(p for _m, p in procs)]:
            _o, err = p.communicate(timeout=60)
            assert p.returncode == 0, f"{proto}: {err}"
        out[proto] = (_summary(ms), [_summary(m) for m, _p in procs])
    return out


def test_rla_over_loopback(runs):
    s, rs = runs["rla"]
    assert [r["delivered"] for r in rs] == [300, 300]
    assert s["errors"] == 0 and all(r["errors"] == 0 and r["malformed"] == 0 for r in rs)


def test_mtcp_tree_over_loopback(runs):
    s, rs = runs["mtcp"]
    assert [r["delivered"] for r in rs] == [300, 300]
    assert s["errors"] == 0 and all(r["errors"] == 0 for r in rs)


def test_vlmcc_over_loopback(runs):
    s, rs = runs["vlmcc"]
    assert s["tx"] > 100 and s["rx"] > 50  # probes, then ACKs from the leader
    assert all(r["rx"] > 100 and r["errors"] == 0 for r in rs)
