"""Mininet network for a scenario: Linux hosts, P4 switches, veth cables.

:class:`P4Switch` is a Mininet switch node whose data plane is a separate
process: the built-in ``p4mcc switch`` by default, or BMv2
``simple_switch_grpc`` when asked and installed.  It lives in the root
namespace (as Mininet's OVS and p4lang/tutorials' switches do) and owns the
``sN-ethP`` ends of its cables through raw sockets.  On BMv2 a port whose
link the kernel cannot shape is opened on an extra veth pair with a link
process between it and the cable (emulation/shaping.py, emulation/linkproc.py).

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
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable, Sequence

from p4mcc.controller.program import CPU_PORT, P4_SOURCE
from p4mcc.emulation.plan import ROOT, THRIFT_PORT_OFFSET, EmulationPlan, SwitchPlan

READY = re.compile(r"serving P4Runtime on (\S+):(\d+)")
#: The run's compiled pipelines (p4switch/pipecache.py), under its log folder:
#: a switch restarted during the run loads the controller's program from it.
PIPELINE_CACHE = "pipeline-cache"

#: Called with every process :func:`spawn` starts: the run's record of what
#: ``p4mcc stop`` may end (see :mod:`emulation.runstate`).
spawn_hooks: list[Callable[["LoggedProcess"], None]] = []
#: Called with the names of every interface pair a switch creates beyond
#: Mininet's cables (BMv2's link-process veths): the run's record of them.
interface_hooks: list[Callable[[list[str]], None]] = []
#: What a link process prints once its ports are open (emulation/linkproc.py).
LINKPROC_READY = re.compile(r"link emulation ready")
LINKPROC_READY_TIMEOUT = 30.0
#: How long a BMv2 switch's Thrift service may take to answer after it starts (s).
QUEUE_SETUP_TIMEOUT = 30.0


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

    def terminate(self) -> None:
        """SIGTERM to its process group, without waiting (:meth:`stop` waits)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                self.proc.terminate()

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit status."""
        if self.proc.poll() is None:
            self.terminate()
            if not self.exited.wait(timeout):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
                self.exited.wait(5)
        return self.proc.poll()


#: SCHED_FIFO priority of the agents in a run: below the switches'
#: link threads (p4switch/linkemu.py, DEFAULT_RT_PRIORITY 10), above every
#: ordinary process, so a busy machine does not stretch their packet gaps
#: and RTT samples (iperf3 stays ordinary: emulation/run.py, IPERF_REALTIME).
#: ``P4MCC_RT_PRIORITY=0`` turns it off.
HOST_RT_PRIORITY = 5


#: SCHED_FIFO priority of BMv2: that of the built-in switch's link and port
#: threads (p4switch/linkemu.py, DEFAULT_RT_PRIORITY), so on a busy machine
#: both targets forward ahead of ordinary processes alike.  BMv2's threads
#: block on their queues between packets, so they take only what traffic needs.
BMV2_RT_PRIORITY = 10


def realtime_prefix(priority: int = HOST_RT_PRIORITY) -> list[str]:
    """``chrt -f N`` for a process of the run, or nothing when it cannot or must not have it."""
    if os.environ.get("P4MCC_RT_PRIORITY", "").strip() == "0":
        return []
    if os.geteuid() != 0 or shutil.which("chrt") is None:
        return []
    return ["chrt", "-f", str(priority)]


def spawn(name: str, argv: Sequence[str], log_path: Path, *, node: Any = None,
          ready_pattern: re.Pattern[str] | None = None, realtime: bool | int = False,
          stdin: bool = False) -> LoggedProcess:
    """Start ``argv`` (inside Mininet ``node``'s namespace when given) in its own
    process group, so stopping it stops everything it started.  ``realtime``
    runs it under SCHED_FIFO when allowed (:func:`realtime_prefix`; an int is
    the priority, True the hosts'); ``stdin``
    gives it a pipe to write to (``proc.stdin``)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    kw: dict[str, Any] = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(ROOT),
                              env=env, start_new_session=True)
    if realtime:
        prio = HOST_RT_PRIORITY if realtime is True else int(realtime)
        argv = [*realtime_prefix(prio), *argv]
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
            #: BMv2: the ports whose traffic goes through a link process
            #: (emulation/shaping.py), set by the runner before the network starts
            self.linkproc_ports: set[int] = set()
            self.links: LoggedProcess | None = None
            self.link_ifaces: list[str] = []
            #: BMv2: its egress queues' depth and rate per shaped port
            #: (emulation/bmv2_queue.py), set by the runner before the network starts
            self.bmv2_queues: list[Any] = []
            #: set once this process's queues are configured; ``queue_error`` says why not
            self.queues_set = threading.Event()
            self.queue_error: str | None = None
            self._control_dir: str | None = None

        @property
        def link_control(self) -> Path:
            """The Unix socket its link emulation takes changes on (p4switch/linkctl.py):
            the built-in switch's own, or BMv2's link process's.  In a directory of
            this node's own (socket paths are short), removed when it stops."""
            if self._control_dir is None:
                import tempfile

                self._control_dir = tempfile.mkdtemp(prefix="p4mcc-links-")
            return Path(self._control_dir) / f"{self.name}.sock"

        def start(self, controllers: Any) -> None:  # noqa: ARG002 - P4Runtime, not OpenFlow
            assert self.plan is not None
            _quiet_ifaces(self, [intf.name for intf in self.intfList() if intf.name != "lo"])
            if self.target == "bmv2":
                self._start_links()
                argv = bmv2_command(self.plan, self.log_dir, self.pcap_dir, via_links=self.linkproc_ports)
            else:
                argv = self.plan.command(Path(self.program), seed=self.seed, pcap_dir=self.pcap_dir,
                                         link_control=self.link_control)
                argv += ["--pipeline-cache", str(self.log_dir / PIPELINE_CACHE)]
            self.process = spawn(f"switch {self.name}", argv, self.log_dir / f"{self.name}.log",
                                 ready_pattern=READY if self.target == "builtin" else None,
                                 realtime=BMV2_RT_PRIORITY if self.target == "bmv2" else False)
            self.queues_set = threading.Event()
            self.queue_error = None
            if self.target == "bmv2" and self.bmv2_queues:
                # in a thread: a BMv2 restarted after a crash needs them again, and
                # its Thrift server comes up a moment after the process starts
                threading.Thread(target=self._set_queues, args=(self.process, self.queues_set),
                                 name=f"{self.name}-queues", daemon=True).start()
            else:
                self.queues_set.set()

        def _set_queues(self, proc: LoggedProcess, done: threading.Event) -> None:
            """BMv2's egress queue depth and rate for every shaped port, over its Thrift
            service (P4Runtime port + THRIFT_PORT_OFFSET), once the service answers."""
            import time

            from p4mcc.emulation.bmv2_queue import Bmv2QueueError, apply

            assert self.plan is not None
            host, grpc_port = self.plan.grpc_addr.rsplit(":", 1)
            thrift = int(grpc_port) + THRIFT_PORT_OFFSET
            deadline = time.monotonic() + QUEUE_SETUP_TIMEOUT
            try:
                for q in self.bmv2_queues:
                    while True:
                        try:
                            apply(q, host, thrift)
                            break
                        except Bmv2QueueError as e:
                            if "Connection refused" not in str(e) or time.monotonic() > deadline or not proc.alive:
                                raise
                            time.sleep(0.1)
            except Bmv2QueueError as e:
                self.queue_error = str(e)
            finally:
                done.set()

        def _start_links(self) -> None:
            """BMv2's link processes: a veth pair per port that goes through one, and
            the process (once: a BMv2 restarted after a crash finds both in place)."""
            from p4mcc.emulation.shaping import bmv2_iface, linkproc_iface

            assert self.plan is not None
            if not self.linkproc_ports or (self.links is not None and self.links.alive):
                return
            argv = [sys.executable, "-m", "p4mcc.emulation.linkproc", "--name", self.name, "--seed", str(self.seed),
                    "--control", str(self.link_control)]
            for port in sorted(self.linkproc_ports):
                iface = self.plan.ports[port]
                bm, le = bmv2_iface(iface), linkproc_iface(iface)
                if not Path(f"/sys/class/net/{bm}").exists():
                    r = subprocess.run(["ip", "link", "add", bm, "type", "veth", "peer", "name", le],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        raise ComponentError(f"{self.name}: cannot create the veth pair {bm}/{le} for "
                                             f"port {port}'s link process: {r.stderr.strip()}")
                    self.link_ifaces.append(bm)
                    for hook in interface_hooks:
                        hook([bm, le])
                    self.cmd(f"ip link set {bm} up; ip link set {le} up")
                    _quiet_ifaces(self, [bm, le])
                argv += ["--wire", f"{port}@{le}={iface}"]
            for flag in self.plan.link_flags:
                if int(flag.split(":", 1)[0]) in self.linkproc_ports:
                    argv += ["--link", flag]
            self.links = spawn(f"links {self.name}", argv, self.log_dir / f"{self.name}-links.log",
                               ready_pattern=LINKPROC_READY)

        def await_links(self) -> None:
            """Wait for the link process :meth:`start` spawned (none: at once).

            Not waited for inside :meth:`start`, so a network's link processes
            import and open their sockets together rather than one switch after
            another.  BMv2 only opens its veth ends, which exist before the
            process starts."""
            if self.links is None:
                return
            if not self.links.ready.wait(LINKPROC_READY_TIMEOUT) or not self.links.alive:
                raise ComponentError(f"{self.name}: its link process did not start:\n{self.links.last_lines()}")

        def begin_stop(self) -> None:
            """Ask its switch and link processes to end, without waiting: a
            network's switches then shut down together, and :meth:`stop`
            (Mininet's, one switch after another) finds them ending or gone."""
            for proc in (self.process, self.links):
                if proc is not None:
                    proc.terminate()

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's name
            if self.process is not None:
                self.process.stop()
            if self.links is not None:
                self.links.stop()
            for name in self.link_ifaces:  # the pairs this switch created (the peer goes with it)
                subprocess.run(["ip", "link", "del", "dev", name], capture_output=True)
            self.link_ifaces.clear()
            if self._control_dir is not None:
                import shutil

                shutil.rmtree(self._control_dir, ignore_errors=True)
                self._control_dir = None
            super().stop(deleteIntfs)

    return P4Switch


def _quiet_ifaces(node: Any, names: Sequence[str]) -> None:
    """No IPv6 chatter and no offloads on switch-side interfaces (see module doc),
    in one command line: each of a node's commands is a round trip to its shell."""
    if names:
        node.cmd("; ".join(f"sysctl -qw net.ipv6.conf.{n}.disable_ipv6=1; ethtool -K {n} tx off rx off >/dev/null 2>&1"
                           for n in names))


def bmv2_command(plan: SwitchPlan, log_dir: Path, pcap_dir: Path | None = None,
                 via_links: set[int] | frozenset[int] = frozenset()) -> list[str]:
    """``simple_switch_grpc`` for the same ports.

    A port in ``via_links`` is opened on its link process's veth
    (``<iface>-bm``, emulation/shaping.py) instead of the cable; the kernel's
    shaping, where used, sits on the cable's interfaces and needs nothing here.
    BMv2 logs at ``warn``: its per-packet trace costs more than the switch forwards.
    """
    from p4mcc.emulation.shaping import bmv2_iface

    exe = shutil.which("simple_switch_grpc")
    if exe is None:
        raise ComponentError(f"{plan.name}: --target bmv2 needs simple_switch_grpc on PATH "
                             "(install BMv2, or run with --target builtin)")
    # each switch its own Thrift port (BMv2's default, 9090, would clash from the second switch on)
    thrift = int(plan.grpc_addr.rsplit(":", 1)[1]) + THRIFT_PORT_OFFSET
    argv = [exe, "--device-id", str(plan.device_id), "--no-p4", "--thrift-port", str(thrift)]
    for port, iface in sorted(plan.ports.items()):
        argv += ["-i", f"{port}@{bmv2_iface(iface) if port in via_links else iface}"]
    if pcap_dir is not None:
        argv.append(f"--pcap={pcap_dir}")
    argv += ["--log-file", str(log_dir / f"{plan.name}.bmv2"), "--log-level", "warn", "--",
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
        # one command line: each of a node's commands is a round trip to its shell
        net[h.name].cmd("; ".join((
            f"ethtool -K {h.iface} tx off rx off >/dev/null 2>&1",
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
            "sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
            f"ip route replace default dev {h.iface}",
            f"ip route replace 224.0.0.0/4 dev {h.iface}",
            # the kernel's own IGMP: version 3 reports, as a stock Linux host sends
            f"sysctl -qw net.ipv4.conf.{h.iface}.force_igmp_version=0",
        )))
