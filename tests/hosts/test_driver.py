"""The asyncio UDP driver on real sockets: loopback multicast between processes."""

from __future__ import annotations

import asyncio
import io
import json
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import warm_agents

from p4mcc.hosts import registry
from p4mcc.hosts.driver import UdpDriver

from fakes import LO, free_port


def _group() -> str:
    rng = random.Random()
    return f"239.{rng.randint(100, 200)}.{rng.randint(0, 255)}.{rng.choice([0, 64, 128])}"


def _host(role: str, proto: str, group: str, port: int, metrics: Path, duration: float,
          *params: str) -> warm_agents.Agent:
    args = ["host", role, "--proto", proto, "--group", group, "--port", str(port), "--local", LO, "--sender", LO,
            "--duration", str(duration), "--metrics", str(metrics)]
    for p in params:
        args += ["--param", p]
    return warm_agents.agent(args)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _summary(path: Path) -> dict:
    (s,) = [r for r in _records(path) if r["state"] == "summary"]
    return s


def test_tfmcc_sender_and_receiver_processes_over_loopback_multicast(tmp_path: Path) -> None:
    port, group = free_port(), _group()
    rm, sm = tmp_path / "recv.jsonl", tmp_path / "send.jsonl"
    # The receiver stops first: its leave notice reaches the running sender.
    recv, send = warm_agents.start([_host("recv", "tfmcc", group, port, rm, 2.5, "packet_size=200"),
                                    _host("send", "tfmcc", group, port, sm, 3.5, "packet_size=200",
                                          "initial_rate_bps=32000")])
    out_s, err_s = send.communicate(timeout=30)
    out_r, err_r = recv.communicate(timeout=30)
    assert send.returncode == 0, err_s
    assert recv.returncode == 0, err_r
    rs, ss = _summary(rm), _summary(sm)
    assert rs["joins"] == 1 and rs["leaves"] == 1
    assert rs["rx"] >= 20  # 20 packets/s for most of 2.5 s
    assert ss["tx"] >= 50 and ss["rx"] >= 1  # feedback (at least the leave notice) arrived
    assert rs["errors"] == ss["errors"] == 0
    rates = [r["rate_bps"] for r in _records(rm) if r["state"] not in ("summary", "traffic")]
    assert rates and max(rates) > 0


def test_webrc_receiver_joins_wave_groups_over_loopback(tmp_path: Path) -> None:
    port, group = free_port(), _group()
    rm, sm = tmp_path / "recv.jsonl", tmp_path / "send.jsonl"
    params = ("session_rate_bps=800000", "base_rate_pps=50", "tsd=2.0", "quiescent_slots=3",
              "packet_length=200")
    recv, send = warm_agents.start([_host("recv", "webrc", group, port, rm, 3.5, *params),
                                    _host("send", "webrc", group, port, sm, 3.0, *params)])
    _, err_s = send.communicate(timeout=30)
    _, err_r = recv.communicate(timeout=30)
    assert send.returncode == 0 and recv.returncode == 0, (err_s, err_r)
    rs = _summary(rm)
    assert rs["joins"] >= 2  # base channel plus wave channels, each a kernel join
    assert rs["leaves"] == rs["joins"]  # everything left by the end
    assert rs["rx"] > 50


def test_malformed_datagrams_are_counted_and_the_driver_keeps_running() -> None:
    port, group = free_port(), _group()
    proto = registry.get("tfmcc")
    cfg = registry.SessionConfig(1, group, port, LO, LO, proto.default_params())
    ep = proto.receiver(cfg)
    metrics = io.StringIO()

    async def main() -> dict:
        driver = UdpDriver(ep, cfg, role="recv", metrics=metrics)
        task = asyncio.create_task(driver.run(duration=1.0))
        await asyncio.sleep(0)  # let the driver open its sockets and join
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(LO))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        for payload in (b"", b"\x00" * 3, b"PM" + b"\xff" * 40, bytes(range(256))):
            for _ in range(3):
                tx.sendto(payload, (group, port))
            await asyncio.sleep(0.05)
        tx.close()
        return await task

    stats = asyncio.run(main())
    assert stats["errors"] == 0
    assert ep.malformed >= 3 * 3  # the empty datagram may be dropped by the kernel
    summary = json.loads(metrics.getvalue().splitlines()[-1])
    assert summary["state"] == "summary" and summary["malformed"] == ep.malformed


def test_cli_rejects_bad_parameters_with_a_clear_message() -> None:
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "host", "recv", "--proto", "webrc",
                          "--sender", LO, "--param", "p=2"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "p must be in (0, 1)" in out.stderr
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "host", "recv", "--proto", "tfmcc"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--sender" in out.stderr


@pytest.mark.parametrize("role", ["send", "recv"])
def test_cli_lists_parameters(role: str) -> None:
    out = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "host", role, "--proto", "tfmcc",
                          "--list-params"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "fb_receivers" in out.stdout and "10000" in out.stdout
