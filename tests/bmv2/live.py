"""p4src/mcc.p4 on a running switch process, driven like the in-process one.

``LiveSwitch`` offers the control-plane and packet calls of
``p4switch.interp.Switch`` that the STF runner and the Scapy packet tests use
(``process``, ``table_add``, ``table_set_default``, the PRE calls,
``counter_read``), and carries them out on a real switch process:

* ``bmv2``: BMv2 ``simple_switch_grpc`` running p4c-bm2-ss's JSON, configured
  through P4Runtime with p4c's P4Info;
* ``builtin``: ``p4mcc switch`` running the same source, configured through
  P4Runtime with its own P4Info.

Ports are veth pairs (tests/p4switch_p4rt/netlab.py): the switch owns one end,
a raw socket in a host namespace the other.  Every call is also applied to an
in-process reference switch (the built-in interpreter), which says how many
frames a packet should produce; ``process`` waits, with a deadline, until the
live switch has produced that many (an event, not a sleep), then a short
grace period catches any extra frame the live switch sends.  The frames
returned are the live switch's own, so tests compare exact bytes.
"""

from __future__ import annotations

import asyncio
import functools
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import finsy as fy

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "p4switch_p4rt"))

import netlab  # noqa: E402
from p4mcc.controller.program import CPU_PORT, P4_INCLUDE, P4_SOURCE  # noqa: E402
import switchproc  # noqa: E402

PROGRAM = P4_SOURCE
INCLUDE = P4_INCLUDE
DEVICE_ID = 1
OUTPUT_DEADLINE = 5.0  # s: a busy 2-core machine still forwards well within this
GRACE = 0.05  # s: extra frames after the expected ones arrive within this


class Lab(netlab.Lab):
    """netlab's hosts on veth pairs, named so that the labs of one process
    (one per target) never collide: ``p4mcc-<tag>-hN`` / ``p4mcc<tag>sN``."""

    _count = 0

    def __init__(self, n: int) -> None:  # noqa: D107 - same wiring as netlab.Lab
        Lab._count += 1
        tag = f"{os.getpid() % 10000}{Lab._count % 10}"
        self.hosts = []
        self._ns, self._links = [], []
        ip = netlab._ip
        try:
            for i in range(1, n + 1):
                ns, sw_if, peer = f"p4mcc-{tag}-h{i}", f"p4mcc{tag}s{i}", f"p4mcc{tag}h{i}"
                ip("netns", "add", ns)
                self._ns.append(ns)
                ip("link", "add", sw_if, "type", "veth", "peer", "name", peer)
                self._links.append(sw_if)
                ip("link", "set", peer, "netns", ns)
                ip("-n", ns, "link", "set", peer, "name", "eth0")
                # quiet interfaces: no IPv6 autoconfiguration traffic into the switch
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1"], capture_output=True)
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                               capture_output=True)
                ip("-n", ns, "link", "set", "eth0", "up")
                ip("link", "set", sw_if, "up")
                mac = bytes([0x02, 0, 0, 0, 0, i])
                ip("-n", ns, "link", "set", "eth0", "address", mac.hex(":"))
                self.hosts.append(netlab.Host(ns, sw_if, mac))
        except BaseException:
            self.close()
            raise


@dataclass
class Out:
    """One frame the switch sent: egress port and bytes (like ``interp.Egress``)."""

    port: int
    data: bytes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bmv2Proc:
    """``simple_switch_grpc`` on the given ports; ready when its gRPC port accepts."""

    def __init__(self, ports: dict[int, str], log: Path, timeout: float = 30.0,
                 device_id: Optional[int] = DEVICE_ID) -> None:
        exe = shutil.which("simple_switch_grpc")
        assert exe, "simple_switch_grpc not on PATH"
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        argv = [exe, "--no-p4"]
        if device_id is not None:  # None: BMv2's own default (0)
            argv += ["--device-id", str(device_id)]
        for num, ifname in sorted(ports.items()):
            argv += ["-i", f"{num}@{ifname}"]
        argv += ["--", "--grpc-server-addr", self.address, "--cpu-port", str(CPU_PORT)]
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"simple_switch_grpc exited {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                select.select([], [], [], 0.05)  # the server has not bound yet: poll again
        self.stop()
        raise RuntimeError("simple_switch_grpc did not open its gRPC port")

    def stop(self) -> int:
        try:
            return switchproc.stop_process(self.proc)
        finally:
            self._log.close()


@functools.lru_cache(maxsize=1)
def program() -> Any:
    """p4src/mcc.p4 compiled by the built-in front end (once)."""
    from p4mcc.p4switch.frontend import compile_file

    return compile_file(str(PROGRAM), [str(INCLUDE)])


def options(target: str, p4c_json: Optional[Path] = None, p4c_p4info: Optional[Path] = None) -> fy.SwitchOptions:
    """The pipeline a controller pushes to ``target`` (p4c's for bmv2)."""
    if target == "bmv2":
        return fy.SwitchOptions(p4info=p4c_p4info, p4blob=p4c_json, device_id=DEVICE_ID)
    from p4mcc.p4switch.p4rt.device import make_bundle
    from p4mcc.p4switch.p4rt.p4info import build_p4info

    return fy.SwitchOptions(p4info=build_p4info(program()),
                            p4blob=make_bundle(str(PROGRAM), [str(INCLUDE)]), device_id=DEVICE_ID)


class LiveSwitch:
    """See the module docstring.  ``ports``: the switch port numbers to wire."""

    def __init__(self, target: str, ports: Sequence[int], tmp: Path,
                 p4c_json: Optional[Path] = None, p4c_p4info: Optional[Path] = None) -> None:
        from p4mcc.p4switch.interp import Switch

        self.target = target
        self.ref = Switch(program(), cpu_port=CPU_PORT)
        self.mismatches: list[str] = []
        self.port_nums = sorted(ports)
        self.lab = Lab(len(self.port_nums))
        self.proc: Any = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.sw: Any = None
        try:
            wiring = {p: h.switch_if for p, h in zip(self.port_nums, self.lab.hosts)}
            if target == "bmv2":
                self.proc = Bmv2Proc(wiring, tmp / "bmv2.log")
            else:
                args = []
                for p, ifname in sorted(wiring.items()):
                    args += ["-i", f"{p}@{ifname}"]
                self.proc = switchproc.SwitchProc(*args, "--cpu-port", str(CPU_PORT), "--device-id",
                                                  str(DEVICE_ID), "-I", str(INCLUDE), str(PROGRAM))
            self.socks = {p: h.socket() for p, h in zip(self.port_nums, self.lab.hosts)}
            for s in self.socks.values():
                s.setblocking(False)
            self.sw = fy.Switch("s1", self.proc.address, options(target, p4c_json, p4c_p4info))
            self._call(self.sw.__aenter__())
        except BaseException:
            self.close()
            raise
        self._nodes: dict[int, tuple[int, list[int]]] = {}
        self._groups: dict[int, list[int]] = {}
        self._next_node = 0

    def reset(self) -> "LiveSwitch":
        """Fresh state for the next test: the PRE groups written so far are
        deleted, the pipeline is pushed again (which clears tables, registers
        and counters on both targets), and queued frames are dropped."""
        from p4mcc.p4switch.interp import Switch

        sw = self.sw
        # PRE groups first: BMv2 keeps its replication nodes across a pipeline
        # push, and a group written again afterwards would replicate twice.
        if self._groups:
            self._call(sw.delete([fy.P4MulticastGroupEntry(mgid) for mgid in self._groups]))
        self._call(sw._set_pipeline_config_request(config=sw.p4info.get_pipeline_config()))
        self._groups.clear()
        self._nodes.clear()
        self.ref = Switch(program(), cpu_port=CPU_PORT)
        self.mismatches = []
        self._drain()
        return self

    # ------------------------------------------------------------------ plumbing
    def _call(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _read_all(self, ent: Any) -> list[Any]:
        return [e async for e in self.sw.read(ent)]

    def close(self) -> None:
        if self.sw is not None:
            try:
                self._call(self.sw.__aexit__(None, None, None), timeout=20)
            except Exception:
                pass
            self.sw = None
        for s in getattr(self, "socks", {}).values():
            s.close()
        if self.proc is not None:
            self.proc.stop()
            self.proc = None
        self.lab.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ control plane
    def _table(self, name: str) -> Any:
        return self.ref._table(name)

    @staticmethod
    def _match(keys: dict[str, Any]) -> dict[str, Any]:
        from p4mcc.p4switch.runtime.tables import Lpm, Ternary

        out: dict[str, Any] = {}
        for k, v in keys.items():
            if isinstance(v, Lpm):
                if v.prefix_len:
                    out[k] = (v.value, v.prefix_len)
            elif isinstance(v, Ternary):
                if v.mask:
                    out[k] = (v.value, v.mask)
            else:
                out[k] = v
        return out

    def table_add(self, table: str, keys: Any, action: str, params: Any = (),
                  priority: Optional[int] = None) -> int:
        handle = self.ref.table_add(table, keys, action, params, priority)
        spec = self.ref._table(table)
        aname = spec.resolve_action(action).name
        self._call(self.sw.insert([fy.P4TableEntry(
            spec.name, match=fy.P4TableMatch(self._match(dict(keys))),
            action=fy.P4TableAction(aname, **dict(params)),
            priority=priority if spec.needs_priority else None)]))
        return handle

    def table_set_default(self, table: str, action: str, params: Any = ()) -> None:
        self.ref.table_set_default(table, action, params)
        spec = self.ref._table(table)
        aname = spec.resolve_action(action).name
        self._call(self.sw.modify([fy.P4TableEntry(
            spec.name, is_default_action=True, action=fy.P4TableAction(aname, **dict(params)))]))

    def set_multicast_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        self.ref.set_multicast_group(mgid, replicas)
        ent = fy.P4MulticastGroupEntry(mgid, replicas=[(p, r) for p, r in replicas])
        if mgid in self._groups:
            self._call(self.sw.modify([ent]))
        else:
            self._groups[mgid] = []
            self._call(self.sw.insert([ent]))

    def mc_group_create(self, mgid: int) -> None:
        self.ref.mc_group_create(mgid)
        self._groups.setdefault(mgid, [])

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        handle = self.ref.mc_node_create(rid, ports)
        self._nodes[handle] = (rid, list(ports))
        return handle

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        self.ref.mc_node_associate(mgid, handle)
        first = not self._groups.get(mgid)
        self._groups.setdefault(mgid, []).append(handle)
        reps = [(p, self._nodes[h][0]) for h in self._groups[mgid] for p in self._nodes[h][1]]
        ent = fy.P4MulticastGroupEntry(mgid, replicas=reps)
        self._call(self.sw.insert([ent]) if first else self.sw.modify([ent]))

    def _live_counter(self, name: str, index: int) -> tuple[int, int]:
        (e,) = self._call(self._read_all(fy.P4CounterEntry(name, index=index)))
        return (e.data.packet_count, e.data.byte_count) if e.data else (0, 0)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """The live switch's counter, once it agrees with the reference or the
        deadline passed (counters lag the frames by a few microseconds)."""
        want = self.ref.counter_read(name, index)
        deadline = time.monotonic() + OUTPUT_DEADLINE
        while True:
            got = self._live_counter(name, index)
            if got == want or time.monotonic() > deadline:
                return got
            select.select([], [], [], 0.01)

    # ------------------------------------------------------------------ packets
    def _drain(self) -> list[Out]:
        out = []
        for p, s in self.socks.items():
            while True:
                try:
                    data, _anc, _flags, addr = s.recvmsg(65536, 64)
                except (BlockingIOError, InterruptedError):
                    break
                if addr[2] != 4:  # not our own transmission
                    out.append(Out(p, data))
        return out

    def process(self, port: int, data: bytes, now: float = 0.0) -> list[Out]:
        """Sends ``data`` into ``port``; the frames the live switch sends."""
        expected = self.ref.process(port, data, now)
        want = sum(1 for o in expected if o.port != CPU_PORT)
        rx_before = self._live_counter("port_rx", port)[0]
        self.socks[port].send(data)
        got: list[Out] = []
        deadline = time.monotonic() + OUTPUT_DEADLINE
        # ingress has run once port_rx counted the packet
        while self._live_counter("port_rx", port)[0] == rx_before and time.monotonic() < deadline:
            got += self._drain()
        while len(got) < want and time.monotonic() < deadline:
            select.select(list(self.socks.values()), [], [], deadline - time.monotonic())
            got += self._drain()
        end = time.monotonic() + GRACE
        while (left := end - time.monotonic()) > 0:
            select.select(list(self.socks.values()), [], [], left)
            got += self._drain()
        mine = sorted((o.port, bytes(o.data)) for o in expected if o.port != CPU_PORT)
        theirs = sorted((o.port, o.data) for o in got)
        if mine != theirs:
            self.mismatches.append(f"packet into port {port}: built-in interpreter sent "
                                   f"{[(p, d.hex()) for p, d in mine]}, {self.target} sent "
                                   f"{[(p, d.hex()) for p, d in theirs]}")
        return got
