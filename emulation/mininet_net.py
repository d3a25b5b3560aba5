"""Mininet network for a scenario: Linux hosts, P4 switches, veth cables.

:class:`P4Switch` is a Mininet switch node whose data plane is a separate
process: the built-in ``p4mcc switch`` by default, or BMv2
``simple_switch_grpc`` when asked and installed.  It lives in the root
namespace (as Mininet's OVS and p4lang/tutorials' switches do) and owns the
``sN-ethP`` ends of its cables through raw sockets.

Hosts are plain Mininet hosts, prepared so that unmodified Linux networking
works through a P4 switch: transmit checksum offload off (a veth otherwise
leaves UDP checksums for "hardware" that never fills them, and the receiving
kernel drops the frame), an on-link default route (the switch answers ARP for
every host, so any address is one hop away at layer 2) and no IPv6 chatter.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable, Sequence

from controller.program import CPU_PORT, P4_SOURCE
from emulation.plan import ROOT, EmulationPlan, SwitchPlan

READY = re.compile(r"serving P4Runtime on (\S+):(\d+)")
#: The run's compiled pipelines (p4switch/pipecache.py), under its log folder:
#: a switch restarted during the run loads the controller's program from it.
PIPELINE_CACHE = "pipeline-cache"

#: Called with every process :func:`spawn` starts: the run's record of what
#: ``p4mcc stop`` may end (see :mod:`emulation.runstate`).
spawn_hooks: list[Callable[["LoggedProcess"], None]] = []


class ComponentError(RuntimeError):
    """A process of the run failed; the message carries its last log lines."""


class LoggedProcess:
    """A child process whose output goes to a log file, with its tail kept in memory.

    ``ready`` is set when a line matches ``ready_pattern`` (or at once when
    there is none); ``exited`` when the process ends.  Both are events a
    runner waits on, never sleeps.
    """

    def __init__(self, name: str, popen: subprocess.Popen[bytes], log_path: Path,
                 ready_pattern: re.Pattern[str] | None = None) -> None:
        self.name = name
        self.proc = popen
        self.log_path = log_path
        self.tail: deque[str] = deque(maxlen=30)
        self.ready = threading.Event()
        self.exited = threading.Event()
        self.ready_match: re.Match[str] | None = None
        self._pattern = ready_pattern
        self._log = log_path.open("w")
        if ready_pattern is None:
            self.ready.set()
        self._reader = threading.Thread(target=self._pump, name=f"log:{name}", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode(errors="replace")
            self._log.write(line)
            self._log.flush()
            self.tail.append(line.rstrip("\n"))
            if self._pattern is not None and not self.ready.is_set():
                m = self._pattern.search(line)
                if m:
                    self.ready_match = m
                    self.ready.set()
        self.proc.wait()
        self._log.close()
        self.exited.set()
        self.ready.set()  # wake anyone waiting for readiness: it will not come

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def last_lines(self, n: int = 15) -> str:
        return "\n".join(list(self.tail)[-n:])

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit status."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                self.proc.terminate()
            if not self.exited.wait(timeout):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
                self.exited.wait(5)
        return self.proc.poll()


#: SCHED_FIFO priority of agents and iperf3 in a run: below the switches'
#: link threads (p4switch/linkemu.py, DEFAULT_RT_PRIORITY 10), above every
#: ordinary process, so a busy machine does not stretch their packet gaps
#: and RTT samples.  ``P4MCC_RT_PRIORITY=0`` turns both off.
HOST_RT_PRIORITY = 5


def realtime_prefix() -> list[str]:
    """``chrt -f N`` for a host process, or nothing when it cannot or must not have it."""
    if os.environ.get("P4MCC_RT_PRIORITY", "").strip() == "0":
        return []
    if os.geteuid() != 0 or shutil.which("chrt") is None:
        return []
    return ["chrt", "-f", str(HOST_RT_PRIORITY)]


def spawn(name: str, argv: Sequence[str], log_path: Path, *, node: Any = None,
          ready_pattern: re.Pattern[str] | None = None, realtime: bool = False,
          stdin: bool = False) -> LoggedProcess:
    """Start ``argv`` (inside Mininet ``node``'s namespace when given) in its own
    process group, so stopping it stops everything it started.  ``realtime``
    runs it under SCHED_FIFO when allowed (:func:`realtime_prefix`); ``stdin``
    gives it a pipe to write to (``proc.stdin``)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    kw: dict[str, Any] = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(ROOT),
                              env=env, start_new_session=True)
    if realtime:
        argv = [*realtime_prefix(), *argv]
    if stdin:
        kw["stdin"] = subprocess.PIPE
    if node is not None:
        # mnexec -a PID runs argv in the node's namespaces (what Node.popen does)
        argv = ["mnexec", "-a", str(node.pid), *argv]
    popen = subprocess.Popen(list(argv), **kw)
    proc = LoggedProcess(name, popen, log_path, ready_pattern)
    for hook in spawn_hooks:
        hook(proc)
    return proc


def _switch_class() -> type:
    from mininet.node import Switch

    class P4Switch(Switch):
        """A Mininet switch whose data plane is a ``p4mcc switch`` (or BMv2) process."""

        def __init__(self, name: str, plan: SwitchPlan | None = None, log_dir: str = ".",
                     target: str = "builtin", program: str = "", seed: int = 1,
                     pcap_dir: str | None = None, **params: Any) -> None:
            super().__init__(name, **params)
            self.plan = plan
            self.log_dir = Path(log_dir)
            self.target = target
            self.program = program
            self.seed = seed
            self.pcap_dir = Path(pcap_dir) if pcap_dir else None
            self.process: LoggedProcess | None = None

        def start(self, controllers: Any) -> None:  # noqa: ARG002 - P4Runtime, not OpenFlow
            assert self.plan is not None
            for intf in self.intfList():
                if intf.name != "lo":
                    self.cmd(f"sysctl -qw net.ipv6.conf.{intf.name}.disable_ipv6=1")
                    self.cmd(f"ethtool -K {intf.name} tx off rx off >/dev/null 2>&1")
            if self.target == "bmv2":
                argv = bmv2_command(self.plan, self.log_dir, self.pcap_dir)
            else:
                argv = self.plan.command(Path(self.program), seed=self.seed, pcap_dir=self.pcap_dir)
                argv += ["--pipeline-cache", str(self.log_dir / PIPELINE_CACHE)]
            self.process = spawn(f"switch {self.name}", argv, self.log_dir / f"{self.name}.log",
                                 ready_pattern=READY if self.target == "builtin" else None)

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's name
            if self.process is not None:
                self.process.stop()
            super().stop(deleteIntfs)

    return P4Switch


def _shaped(flag: str) -> bool:
    """Whether a ``--link PORT:DIR:PARAMS`` flag asks for more than an
    unshaped veth gives (a rate below the default, a delay or a loss):
    BMv2 can run a scenario only when none does."""
    from p4switch.units import parse_rate
    from scenario.topology import DEFAULT_RATE_BPS

    params = dict(kv.split("=", 1) for kv in flag.split(":", 2)[2].split(",") if "=" in kv)
    if float(params.get("delay", "0ms").removesuffix("ms") or 0) > 0 or float(params.get("loss", 0)) > 0:
        return True
    return "rate" in params and parse_rate(params["rate"]) < DEFAULT_RATE_BPS


def bmv2_command(plan: SwitchPlan, log_dir: Path, pcap_dir: Path | None = None) -> list[str]:
    """``simple_switch_grpc`` for the same ports (link shaping is the builtin switch's)."""
    exe = shutil.which("simple_switch_grpc")
    if exe is None:
        raise ComponentError("--target bmv2: simple_switch_grpc is not on PATH")
    if any(_shaped(flag) for flag in plan.link_flags):
        raise ComponentError(
            f"{plan.name}: BMv2 cannot emulate link rate/delay/loss on its ports and this machine "
            "has no netem; run with --target builtin"
        )
    argv = [exe, "--device-id", str(plan.device_id), "--no-p4"]
    for port, iface in sorted(plan.ports.items()):
        argv += ["-i", f"{port}@{iface}"]
    if pcap_dir is not None:
        argv.append(f"--pcap={pcap_dir}")
    argv += ["--log-file", str(log_dir / f"{plan.name}.bmv2"), "--",
             "--grpc-server-addr", plan.grpc_addr, "--cpu-port", str(CPU_PORT)]
    return argv


def build_network(plan: EmulationPlan, log_dir: Path, *, target: str = "builtin",
                  program: Path | None = None, pcap_dir: Path | None = None) -> Any:
    """Create (but do not start) the Mininet network of ``plan``."""
    from mininet.net import Mininet

    P4Switch = _switch_class()
    net = Mininet(controller=None, switch=P4Switch, autoSetMacs=False, autoStaticArp=False,
                  build=False, waitConnected=False)
    for h in plan.hosts.values():
        net.addHost(h.name, ip=f"{h.ip}/{h.prefix_len}", mac=h.mac or None)
    for s in plan.switches.values():
        net.addSwitch(s.name, cls=P4Switch, plan=s, log_dir=str(log_dir), target=target,
                      program=str(program or P4_SOURCE), seed=plan.scenario.seed,
                      pcap_dir=str(pcap_dir) if pcap_dir else None,
                      dpid=f"{s.device_id + 1:016x}")
    for c in plan.cables:
        net.addLink(c.a, c.b, port1=c.a_port, port2=c.b_port, intfName1=c.a_iface, intfName2=c.b_iface)
    return net


def prepare_hosts(net: Any, plan: EmulationPlan) -> None:
    """Make every host's Linux stack behave through a P4 switch (see module doc)."""
    for h in plan.hosts.values():
        node = net[h.name]
        for cmd in (
            f"ethtool -K {h.iface} tx off rx off >/dev/null 2>&1",
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
            "sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
            f"ip route replace default dev {h.iface}",
            f"ip route replace 224.0.0.0/4 dev {h.iface}",
            # the kernel's own IGMP: version 3 reports, as a stock Linux host sends
            f"sysctl -qw net.ipv4.conf.{h.iface}.force_igmp_version=0",
        ):
            node.cmd(cmd)
