"""An interface deleted under a running switch: that port is lost, the rest carry on.

Mininet's ``net.stop()`` deletes veth pairs while switches still run; the
switch must log one line naming the port and the error, stop using the
port, keep forwarding between the others and serving P4Runtime, and exit 0
on SIGTERM without a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import re
import select
import socket
import subprocess
import time
from pathlib import Path

import finsy as fy
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from netlab import Lab, have_root, recv_matching
from switchproc import SwitchProc

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.p4rt.device import make_bundle
from p4mcc.p4switch.p4rt.p4info import build_p4info
from p4mcc.p4switch.ports import Port

pytestmark = [pytest.mark.root, pytest.mark.skipif(not have_root(), reason="needs root for network namespaces")]

PROGRAM = Path(__file__).parent / "programs" / "l2.p4"
LOST_LINE = re.compile(r"port 2 \(p4mcc\S+\) lost: .*(gone|removed)")


def mac(i: int) -> int:
    return 0x020000000000 + i


def frame(src: int, dst: int, seq: int) -> bytes:
    pkt = Ether(dst=mac(dst).to_bytes(6, "big").hex(":"), src=mac(src).to_bytes(6, "big").hex(":")) / IP(
        src=f"10.0.0.{src}", dst=f"10.0.0.{dst}") / UDP(sport=4000, dport=5000) / seq.to_bytes(4, "big")
    return bytes(pkt)


def seq_is(n: int):
    def want(data: bytes) -> bool:
        p = Ether(data)
        return UDP in p and p[UDP].dport == 5000 and bytes(p[UDP].payload)[:4] == n.to_bytes(4, "big")

    return want


def opts() -> fy.SwitchOptions:
    return fy.SwitchOptions(p4info=build_p4info(compile_file(str(PROGRAM))), p4blob=make_bundle(str(PROGRAM)),
                            device_id=1)


async def program_forwarding(address: str, ports: range) -> None:
    async with fy.Switch("s1", address, opts()) as sw:
        await sw.insert([fy.P4TableEntry("MyIngress.fwd", match=fy.Match({"hdr.ethernet.dstAddr": mac(i)}),
                                         action=fy.Action("MyIngress.forward", port=i)) for i in ports])


async def count_fwd_entries(address: str) -> int:
    async with fy.Switch("s1", address, opts()) as sw:
        return len([e async for e in sw.read(fy.P4TableEntry("MyIngress.fwd"))])


def wait_for(cond, timeout: float) -> bool:
    """Poll ``cond`` (the switch's stderr arrives through a pipe) until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_deleted_interface_is_lost_and_the_switch_carries_on():
    lab = Lab(3)
    sp = None
    socks = []
    try:
        args = [a for i, h in enumerate(lab.hosts, 1) for a in ("-i", f"{i}@{h.switch_if}")]
        sp = SwitchProc(*args, "--device-id", "1", str(PROGRAM))
        asyncio.run(program_forwarding(sp.address, range(1, 4)))
        socks = [h.socket() for h in lab.hosts]
        h1, h2, h3 = socks

        # Every port forwards before the deletion.
        h1.send(frame(1, 2, 1))
        assert recv_matching(h2, seq_is(1), time.monotonic() + 5) is not None
        h1.send(frame(1, 3, 2))
        assert recv_matching(h3, seq_is(2), time.monotonic() + 5) is not None

        # Delete port 2's interface under the running switch (both veth ends go).
        subprocess.run(["ip", "link", "del", lab.hosts[1].switch_if], check=True, capture_output=True)
        lab._links.remove(lab.hosts[1].switch_if)
        # A frame for port 2 reaches the send path too (ENXIO once the device is gone).
        h1.send(frame(1, 2, 3))
        assert wait_for(lambda: LOST_LINE.search(sp.stderr_text), 10), sp.stderr_text

        # The other ports still forward, both ways, and P4Runtime still answers.
        for n in range(10, 20):
            h1.send(frame(1, 3, n))
            assert recv_matching(h3, seq_is(n), time.monotonic() + 5) is not None
            h3.send(frame(3, 1, 100 + n))
            assert recv_matching(h1, seq_is(100 + n), time.monotonic() + 5) is not None
        assert asyncio.run(count_fwd_entries(sp.address)) == 3
        assert sp.proc.poll() is None
    finally:
        for s in socks:
            s.close()
        rc = sp.stop() if sp is not None else None
        lab.close()
    err = sp.stderr_text
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert len(LOST_LINE.findall(err)) == 1 and len(re.findall(r"\blost:", err)) == 1, err


@pytest.fixture
def veth():
    """A veth pair in this namespace, ``(a, b)``; whatever is left is deleted afterwards."""
    a, b = "p4mcc-lossa", "p4mcc-lossb"
    subprocess.run(["ip", "link", "del", a], capture_output=True)
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True, capture_output=True)
    try:
        for i in (a, b):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1"], capture_output=True)
            subprocess.run(["ip", "link", "set", i, "up"], check=True, capture_output=True)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def test_send_on_a_deleted_interface_loses_the_port_once(veth, caplog):
    port = Port(1, veth[0])
    try:
        subprocess.run(["ip", "link", "del", veth[0]], check=True, capture_output=True)
        with caplog.at_level(logging.INFO, logger="p4mcc.p4switch.ports"):
            assert port.send(bytes(60)) is False
            assert port.send(bytes(60)) is False
        assert port.lost is not None and "gone" in port.lost
        assert port.tx_lost == 2 and port.tx_errors == 0 and port.tx_packets == 0
        lines = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith(f"port 1 ({veth[0]}) lost:"), lines
    finally:
        port.close()


def test_recv_on_a_deleted_interface_loses_the_port(veth):
    port = Port(2, veth[0])
    try:
        subprocess.run(["ip", "link", "del", veth[0]], check=True, capture_output=True)
        # The socket reports "Network is down"; the interface is gone, so the port is lost.
        assert port.recv() is None
        assert port.lost is not None and "Network is down" in port.lost
        assert port.recv() is None and port.send(bytes(60)) is False and port.tx_lost == 1
    finally:
        port.close()


def test_link_down_and_up_keeps_the_port(veth):
    """A down link is not a lost port: the kernel re-attaches the socket when it comes back."""
    port = Port(3, veth[0])
    peer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    peer.bind((veth[1], 3))
    try:
        subprocess.run(["ip", "link", "set", veth[0], "down"], check=True, capture_output=True)
        assert port.recv() is None
        assert port.link_down and port.lost is None
        port.check_down()  # still present: stays merely down
        assert port.lost is None
        subprocess.run(["ip", "link", "set", veth[0], "up"], check=True, capture_output=True)
        # The peer transmits only once the kernel has processed its carrier-on
        # event (deferred work, up to a second): wait for that, and resend
        # in case the frame met the last instant of the carrier-off queue.
        assert wait_for(lambda: Path(f"/sys/class/net/{veth[1]}/operstate").read_text().strip() == "up", 5)
        f = bytes.fromhex("020000000003020000000004") + b"\x88\xb5" + bytes(50)
        got = None
        deadline = time.monotonic() + 5
        while got != f and time.monotonic() < deadline:
            peer.send(f)
            until = min(deadline, time.monotonic() + 0.5)
            while got != f and select.select([port], [], [], max(0.0, until - time.monotonic()))[0]:
                got = port.recv()  # skips the kernel's own chatter
        assert got == f
        assert not port.link_down and port.lost is None
    finally:
        peer.close()
        port.close()
