"""``p4mcc switch`` beside BMv2 ``simple_switch_grpc``: same program, same
veth ports, same offered load (``bench/switch_pps.py --vs-bmv2``).

Both switches run p4src/mcc.p4 (BMv2 the JSON p4c-bm2-ss builds from it)
and are configured over P4Runtime the same way.  A sender namespace holds
port 1; a receiver namespace holds ports 2-5.  For each switch:

1. unicast: the sender writes UDP frames to 10.9.0.2 (``ipv4_fwd`` -> port 2)
   as fast as it can for S seconds; the receiver counts what arrives;
2. 4-way multicast: four hosts on ports 2-5 join 239.1.1.1 with IGMPv2, the
   sender writes p4mcc data frames to the group; the receiver counts copies
   and reports packets in per second (copies / 4) and out;
3. latency at a moderate load (measured first, on the idle switch): 200
   unicast packets/s for 2 s, each carrying its send time; the receiver
   reports the median and 99th percentile of the one-way delay (both
   namespaces share the machine's clock).

Run as root (it builds veth ports and namespaces):
    sudo .venv/bin/python bench/switch_pps.py --vs-bmv2
"""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4mcc.controller.igmp import checksum  # noqa: E402
from p4mcc.controller.program import CPU_PORT, P4_INCLUDE, P4_SOURCE  # noqa: E402
from vethlab import add_namespace, add_veth, eth, ipv4, received, remove, send_frames, sh, start_receiver, stop_group  # noqa: E402
NS_SRC, NS_DST = "p4mcc-vsrc", "p4mcc-vdst"
SW_PORTS = {1: "p4mcc-v1", 2: "p4mcc-v2", 3: "p4mcc-v3", 4: "p4mcc-v4", 5: "p4mcc-v5"}
INNER = {1: "p4mcc-vs1", 2: "p4mcc-vd2", 3: "p4mcc-vd3", 4: "p4mcc-vd4", 5: "p4mcc-vd5"}
GROUP = "239.1.1.1"
PROGRAM = P4_SOURCE
INCLUDE = P4_INCLUDE


def setup() -> None:
    teardown()
    add_namespace(NS_SRC)
    add_namespace(NS_DST)
    for port, outer in SW_PORTS.items():
        add_veth(NS_SRC if port == 1 else NS_DST, INNER[port], outer)


def teardown() -> None:
    remove((NS_SRC, NS_DST), SW_PORTS.values())


# ----------------------------------------------------------------------------- frames

MARK = b"p4mccvs"


def unicast_frame(size: int = 64) -> bytes:
    body = MARK + bytes(max(0, size - 14 - 20 - 8 - len(MARK) - 8)) + bytes(8)
    udp = struct.pack("!HHHH", 9000, 9001, 8 + len(body), 0) + body
    return eth("02:00:00:00:00:02", "02:00:00:00:00:01", ipv4("10.9.0.1", "10.9.0.2", 17, udp))


def mcast_frame() -> bytes:
    from p4mcc.hosts import wire

    msg = wire.WebrcData(session_id=7, seq=1, cn=0, psn=1, tsi=0, payload=MARK + bytes(8)).encode()
    udp = struct.pack("!HHHH", 5001, 5001, 8 + len(msg), 0) + msg
    return eth("01:00:5e:01:01:01", "02:00:00:00:00:01", ipv4("10.9.0.1", GROUP, 17, udp))


def igmpv2_report(src: str) -> bytes:
    igmp = bytearray(struct.pack("!BBH4s", 0x16, 0, 0, socket.inet_aton(GROUP)))
    igmp[2:4] = struct.pack("!H", checksum(bytes(igmp)))
    return eth("01:00:5e:01:01:01", "02:00:00:00:00:09", ipv4(src, GROUP, 2, bytes(igmp), ttl=1,
                                                            options=bytes.fromhex("94040000")))


# ----------------------------------------------------------------------------- switches

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switch(kind: str, exe: str | None = None) -> tuple[subprocess.Popen, str]:
    addr = f"127.0.0.1:{free_port()}"
    ifs = [x for p, dev in sorted(SW_PORTS.items()) for x in ("-i", f"{p}@{dev}")]
    if kind == "p4mcc":
        cmd = [sys.executable, "-m", "p4mcc.cli.main", "switch", str(PROGRAM), "-I", str(INCLUDE),
               "--grpc-server-addr", addr, "--cpu-port", str(CPU_PORT), *ifs]
    else:
        cmd = [exe or "simple_switch_grpc", "--no-p4", *ifs, "--", "--grpc-server-addr", addr, "--cpu-port", str(CPU_PORT)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    host, port = addr.split(":")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} switch exited {proc.returncode}")
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
            return proc, addr
        except OSError:
            select.select([], [], [], 0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError(f"{kind} switch did not open its P4Runtime port")


def stop_switch(proc: subprocess.Popen) -> None:
    stop_group(proc)


async def configure(addr: str, kind: str, build: Path) -> None:
    """The same entries on both switches (docs/p4-program.md)."""
    import finsy as fy

    if kind == "p4mcc":
        from p4mcc.p4switch.frontend import compile_file
        from p4mcc.p4switch.p4rt.device import make_bundle
        from p4mcc.p4switch.p4rt.p4info import build_p4info

        opts = fy.SwitchOptions(p4info=build_p4info(compile_file(str(PROGRAM), [str(INCLUDE)])),
                                p4blob=make_bundle(str(PROGRAM), [str(INCLUDE)]), device_id=0)
    else:
        opts = fy.SwitchOptions(p4info=build / "mcc.p4info.txtpb", p4blob=build / "mcc.json", device_id=0)
    g = int.from_bytes(socket.inet_aton(GROUP), "big")
    async with fy.Switch("s1", addr, opts) as sw:
        ents = [fy.P4MulticastGroupEntry(1, replicas=[1, 2, 3, 4, 5]),
                fy.P4MulticastGroupEntry(10, replicas=[1, 2, 3, 4, 5]),
                fy.P4TableEntry("MccIngress.ipv4_fwd", match=fy.P4TableMatch(dst_addr=(0x0A090002, 32)),
                                action=fy.P4TableAction("MccIngress.forward", port=2))]
        for n in range(4):
            ents.append(fy.P4TableEntry(
                f"MccIngress.record{n}.groups", match=fy.P4TableMatch(group=g),
                action=fy.P4TableAction(f"MccIngress.record{n}.set_group", gidx=0, mgid=10,
                                        upstream_port=0, has_upstream=0)))
        await sw.insert(ents)
        await sw.modify([fy.P4TableEntry(
            "MccIngress.switch_config", is_default_action=True,
            action=fy.P4TableAction("MccIngress.set_config", flood_mgid=1, membership_timeout_us=0,
                                    proxy_refresh_us=0))])


def join_all() -> None:
    """Hosts behind ports 2-5 join GROUP (IGMPv2 reports written on each port)."""
    for port in (2, 3, 4, 5):
        f = igmpv2_report(f"10.9.0.{port}").hex()
        sh("ip", "netns", "exec", NS_DST, "/usr/bin/python3", "-c",
           "import socket,sys\ns=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind((sys.argv[2],0))\n"
           "s.send(bytes.fromhex(sys.argv[1]))", f, INNER[port])


def offer(frame: bytes, seconds: float, pps: float = 0.0) -> tuple[int, int, float, float, float]:
    """(sent, received, receive span s, median latency us, p99 latency us)."""
    rx = start_receiver(NS_DST, MARK, seconds + 3)
    sent = send_frames(NS_SRC, INNER[1], frame, seconds, pps)
    return (sent, *received(rx, seconds + 30))


def measure(kind: str, exe: str | None, build: Path, seconds: float) -> dict[str, float]:
    proc, addr = start_switch(kind, exe)
    try:
        asyncio.run(configure(addr, kind, build))
        join_all()
        res: dict[str, float] = {}
        # latency first, on an idle switch: a flood leaves a backlog in its queues
        _, got, _, med, p99 = offer(unicast_frame(), 2.0, pps=200)
        res["lat_med_us"], res["lat_p99_us"], res["lat_got"] = med, p99, got
        sent, got, span, _, _ = offer(unicast_frame(), seconds)
        res["offered"] = sent / seconds
        res["unicast"] = got / span if span else 0.0
        sent, got, span, _, _ = offer(mcast_frame(), seconds)
        res["mcast_in"] = got / 4 / span if span else 0.0
        res["mcast_out"] = got / span if span else 0.0
        res["mcast_offered"] = sent / seconds
        return res
    finally:
        stop_switch(proc)


def p4c_build() -> Path:
    from p4mcc.controller.pipeline import p4c_build as build

    if not build():
        raise RuntimeError("p4c-bm2-ss is not on PATH")
    return ROOT / "build"


def main(seconds: float = 3.0) -> int:
    if os.geteuid() != 0:
        print("--vs-bmv2 needs root (network namespaces): skipped")
        return 0
    bmv2s = [(n, shutil.which(n)) for n in ("simple_switch_grpc", "simple_switch_grpc_perf")]
    bmv2s = [(n, p) for n, p in bmv2s if p]
    if not bmv2s or shutil.which("p4c-bm2-ss") is None:
        print("p4c-bm2-ss and simple_switch_grpc must be on PATH for --vs-bmv2: skipped")
        return 0
    build = p4c_build()
    setup()
    results: dict[str, dict[str, float]] = {}
    try:
        results["p4mcc switch"] = measure("p4mcc", None, build, seconds)
        for name, exe in bmv2s:
            results[name] = measure("bmv2", exe, build, seconds)
    finally:
        teardown()
    print(f"p4src/mcc.p4 on veth ports, {seconds:g} s per figure, 64-byte unicast frames, "
          "p4mcc data to a 4-member group")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures scale with what is free)")
    print(f"{'switch':26s} {'offered pps':>11s} {'unicast pps':>11s} {'mcast in pps':>12s} "
          f"{'mcast out pps':>13s} {'lat med us':>10s} {'lat p99 us':>10s}")
    for name, r in results.items():
        print(f"{name:26s} {r['offered']:11.0f} {r['unicast']:11.0f} {r['mcast_in']:12.0f} "
              f"{r['mcast_out']:13.0f} {r['lat_med_us']:10.0f} {r['lat_p99_us']:10.0f}")
    ours = results["p4mcc switch"]
    for name, _ in bmv2s:
        r = results[name]
        print(f"ratio p4mcc switch / {name}: unicast {ours['unicast'] / max(r['unicast'], 1):.2f}, "
              f"4-way multicast {ours['mcast_in'] / max(r['mcast_in'], 1):.2f}, "
              f"median latency {ours['lat_med_us'] / max(r['lat_med_us'], 1):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
