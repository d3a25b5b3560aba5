"""Real Linux hosts through a running ``p4mcc switch`` with p4src/mcc.p4:
receivers join with ``IP_ADD_MEMBERSHIP`` (the kernel's own IGMPv3, and
IGMPv2 on one host forced to it), receive the group, and after a leave the
switch stops sending the group to that host's port.

Hosts are network namespaces on veth pairs (tests/p4switch_p4rt/netlab.py);
the switch is programmed over P4Runtime exactly as docs/p4-program.md says.
Synchronisation is by observation with deadlines (packets seen, counters
read), never by sleeping.
"""

from __future__ import annotations

import asyncio
import os
import select
import socket
import struct
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "p4switch_p4rt"))

from p4src_harness import CPU_PORT, INCLUDE, PROGRAM, ip2int  # noqa: E402

from p4mcc.hosts import wire  # noqa: E402

import finsy as fy  # noqa: E402
import netlab  # noqa: E402
import switchproc  # noqa: E402

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not netlab.have_root(), reason="needs root for network namespaces")]

GROUP = "239.1.2.3"
UDP_PORT = 5001
SESSION = 1


def _ns(ns: str, *cmd: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True, capture_output=True)


def _ip_of(i: int) -> str:
    return f"10.0.0.{i}"


def _receiver(host, i: int) -> socket.socket:
    """A UDP socket in ``host``'s namespace that joined GROUP (the kernel reports it)."""
    with netlab.in_netns(host.ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((GROUP, UDP_PORT))
        mreq = struct.pack("!4s4s", socket.inet_aton(GROUP), socket.inet_aton(_ip_of(i)))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    s.setblocking(False)
    return s


def _leave(sock: socket.socket, host, i: int) -> None:
    with netlab.in_netns(host.ns):
        mreq = struct.pack("!4s4s", socket.inet_aton(GROUP), socket.inet_aton(_ip_of(i)))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, mreq)


def _sender(host) -> socket.socket:
    with netlab.in_netns(host.ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(_ip_of(1)))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    return s


def _data(seq: int) -> bytes:
    return wire.WebrcData(session_id=SESSION, seq=seq, cn=0, psn=seq, tsi=0, payload=b"p" * 64).encode()


def _drain(sock: socket.socket) -> list[int]:
    """Sequence numbers of the p4mcc messages waiting on a UDP socket."""
    seqs = []
    while True:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return seqs
        seqs.append(wire.decode(data).seq)


def _raw_group_seqs(raw: socket.socket) -> list[int]:
    """Sequence numbers of group datagrams seen on a host's interface (any membership)."""
    raw.setblocking(False)
    seqs = []
    while True:
        try:
            frame = raw.recv(65536)
        except BlockingIOError:
            return seqs
        if len(frame) > 42 and frame[12:14] == b"\x08\x00" and frame[23] == 17 \
                and frame[30:34] == socket.inet_aton(GROUP):
            ihl = (frame[14] & 0x0F) * 4
            seqs.append(wire.decode(frame[14 + ihl + 8:]).seq)


@pytest.fixture
def lab():
    lab = netlab.Lab(3)
    try:
        for i, h in enumerate(lab.hosts, 1):
            _ns(h.ns, "ip", "addr", "add", f"{_ip_of(i)}/24", "dev", "eth0")
            _ns(h.ns, "ip", "route", "add", "224.0.0.0/4", "dev", "eth0")
            # veth leaves UDP checksums to "hardware": the switch forwards frames
            # as bytes, so the sender must fill them in itself
            _ns(h.ns, "ethtool", "-K", "eth0", "tx", "off")
        # host 3 speaks IGMPv2, the others the kernel's default IGMPv3
        _ns(lab.hosts[2].ns, "sysctl", "-qw", "net.ipv4.conf.eth0.force_igmp_version=2")
        args = []
        for i, h in enumerate(lab.hosts, 1):
            args += ["-i", f"{i}@{h.switch_if}"]
        lab.switch = switchproc.SwitchProc(*args, "--cpu-port", str(CPU_PORT), "--device-id", "1",
                                          "-I", INCLUDE, PROGRAM)
        yield lab
    finally:
        sw = getattr(lab, "switch", None)
        if sw is not None:
            sw.stop()
        lab.close()


def _options():
    from p4mcc.p4switch.frontend import compile_file
    from p4mcc.p4switch.p4rt.device import make_bundle
    from p4mcc.p4switch.p4rt.p4info import build_p4info

    return fy.SwitchOptions(p4info=build_p4info(compile_file(PROGRAM, [INCLUDE])),
                            p4blob=make_bundle(PROGRAM, [INCLUDE]), device_id=1)


def _desired() -> list:
    """docs/p4-program.md, items 2-4, for one switch with hosts on ports 1-3."""
    ports = [1, 2, 3]
    entities = [fy.P4MulticastGroupEntry(1, replicas=ports), fy.P4MulticastGroupEntry(10, replicas=ports)]
    for n in range(4):
        entities.append(fy.P4TableEntry(
            f"MccIngress.record{n}.groups", match=fy.Match({"group": ip2int(GROUP)}),
            action=fy.Action(f"MccIngress.record{n}.set_group", gidx=0, mgid=10,
                             upstream_port=0, has_upstream=0)))
    return entities


async def _state(sw) -> dict:
    """Counters that explain a failure."""
    names = ["port_rx", "port_data_tx", "port_pruned", "port_joins", "port_leaves"]
    state = {n: [await _counter(sw, n, i) for i in (1, 2, 3)] for n in names}
    state["drop_reasons"] = [await _counter(sw, "drop_reasons", i) for i in range(16)]
    return state


async def _counter(sw, name: str, index: int) -> int:
    (entry,) = [e async for e in sw.read(fy.P4CounterEntry(name, index=index))]
    return entry.data.packet_count if entry.data else 0


async def _scenario(address: str, lab) -> None:
    h1, h2, h3 = lab.hosts
    async with fy.Switch("s1", address, _options()) as sw:
        await sw.insert(_desired())
        await sw.modify([fy.P4TableEntry(
            "MccIngress.switch_config", is_default_action=True,
            action=fy.Action("MccIngress.set_config", flood_mgid=1, membership_timeout_us=0,
                             proxy_refresh_us=0))])
        sender = _sender(h1)
        r2, r3 = _receiver(h2, 2), _receiver(h3, 3)
        raw2 = h2.socket()
        try:
            # 1. both receivers get the group once their kernels' reports went through
            got2: set[int] = set()
            got3: set[int] = set()
            seq = 0
            deadline = time.monotonic() + 10
            while not (got2 and got3):
                if time.monotonic() > deadline:
                    pytest.fail(f"no delivery: h2 {got2}, h3 {got3}; switch {await _state(sw)}")
                seq += 1
                sender.sendto(_data(seq), (GROUP, UDP_PORT))   # one packet per 50 ms
                next_send = time.monotonic() + 0.05
                while (left := next_send - time.monotonic()) > 0:
                    select.select([r2, r3], [], [], left)
                    got2.update(_drain(r2))
                    got3.update(_drain(r3))
            assert await _counter(sw, "port_joins", 2) >= 1
            assert await _counter(sw, "port_joins", 3) >= 1

            # 2. h2 leaves; wait until the switch has seen its leave record
            _leave(r2, h2, 2)
            deadline = time.monotonic() + 10
            while await _counter(sw, "port_leaves", 2) < 1:
                assert time.monotonic() < deadline, "the switch never saw h2's leave"
                select.select([], [], [], 0.02)
            _raw_group_seqs(raw2)
            _drain(r3)

            # 3. after the leave only h3's port carries the group
            first = seq + 1
            for k in range(first, first + 10):
                sender.sendto(_data(k), (GROUP, UDP_PORT))
            got3 = set()
            deadline = time.monotonic() + 10
            while not set(range(first, first + 10)) <= got3:
                if time.monotonic() > deadline:
                    pytest.fail(f"h3 lost packets {sorted(got3)} of {first}..; "
                                f"switch {await _state(sw)}")
                select.select([r3], [], [], 0.05)
                got3.update(_drain(r3))
            assert [s for s in _raw_group_seqs(raw2) if s >= first] == []
            assert await _counter(sw, "port_pruned", 2) >= 10
        finally:
            for s in (sender, r2, r3, raw2):
                s.close()


def test_linux_receivers_join_receive_and_leave(lab):
    asyncio.run(_scenario(lab.switch.address, lab))
