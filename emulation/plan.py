"""What a Mininet run builds, computed from a scenario without touching the system.

The plan is a pure function of the scenario: interface names, port numbers
(the controller's numbering, :func:`controller.topology.from_scenario_topology`,
so emulation, simulation and the controller agree), the ``p4mcc switch``
command line of every switch with its link emulation, and the agent and
iperf3 command lines of every host.  Keeping it pure lets the tests check the
exact commands without root, and keeps :mod:`emulation.run` about
processes and time only.

Where each direction of a link is shaped (the machine may have no netem):

* switch -- switch: each switch shapes its own egress port, so each
  direction is shaped once, by the switch that sends into it;
* host -- switch: the switch shapes its port's egress (switch to host) and
  its port's ingress (host to switch).

So every direction of every link sees exactly the scenario's rate, delay,
loss and queue once, whichever pair of nodes it joins.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4mcc.controller.program import CPU_PORT, P4_SOURCE
from p4mcc.scenario.model import GilbertElliott, Link, Scenario, Session, TcpFlow, fit_sessions_to_links

ROOT = Path(__file__).resolve().parents[1]
GRPC_BASE_PORT = 50051
#: A BMv2 switch's Thrift port is its P4Runtime port plus this.
THRIFT_PORT_OFFSET = 1000


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def switch_ports(count: int, base: int = GRPC_BASE_PORT) -> list[int]:
    """``count`` P4Runtime ports from ``base`` up, each free on loopback with
    its Thrift port (``+ THRIFT_PORT_OFFSET``): a port still held by another
    program, or by the switch of a run that is just ending, is skipped
    instead of failing the switch that would bind it."""
    ports: list[int] = []
    port = base
    while len(ports) < count:
        if port >= base + THRIFT_PORT_OFFSET:
            raise PlanError(f"no {count} free P4Runtime ports on 127.0.0.1 from {base}")
        if _port_free(port) and _port_free(port + THRIFT_PORT_OFFSET):
            ports.append(port)
        port += 1
    return ports


class PlanError(ValueError):
    """A scenario that cannot be emulated as written; names the field."""


@dataclass(frozen=True)
class SwitchPlan:
    name: str
    device_id: int
    grpc_addr: str
    #: switch port number -> interface name (``s1-eth2`` for port 2)
    ports: dict[int, str]
    #: ``--link`` values, one per shaped port direction
    link_flags: tuple[str, ...]

    def command(self, program: Path = P4_SOURCE, log_file: Path | None = None,
                seed: int = 1, pcap_dir: Path | None = None, link_control: Path | None = None) -> list[str]:
        """The ``p4mcc switch`` command line (run in the root namespace);
        ``link_control``: the socket its link emulation takes changes on."""
        cmd = [sys.executable, "-m", "p4mcc.cli.main", "switch", str(program),
               "--device-id", str(self.device_id), "--grpc-server-addr", self.grpc_addr,
               "--cpu-port", str(CPU_PORT), "--seed", str(seed)]
        for port, iface in sorted(self.ports.items()):
            cmd += ["-i", f"{port}@{iface}"]
        for flag in self.link_flags:
            cmd += ["--link", flag]
        if log_file is not None:
            cmd += ["--log-file", str(log_file), "-L", "info"]
        if pcap_dir is not None:
            cmd += ["--pcap", str(pcap_dir)]
        if link_control is not None:
            cmd += ["--link-control", str(link_control)]
        return cmd


@dataclass(frozen=True)
class HostPlan:
    name: str
    ip: str
    prefix_len: int
    mac: str
    iface: str
    switch: str
    switch_port: int


@dataclass(frozen=True)
class CablePlan:
    """One veth pair: node a's interface and node b's interface."""

    a: str
    a_iface: str
    a_port: int
    b: str
    b_iface: str
    b_port: int


@dataclass(frozen=True)
class AgentPlan:
    """One protocol agent process on a host."""

    session: str
    host: str
    role: str  # "send" | "recv"
    start: float
    stop: float
    argv: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.session}/{self.host}"


@dataclass(frozen=True)
class TcpPlan:
    flow: TcpFlow
    src_ip: str
    dst_ip: str
    start: float
    stop: float


@dataclass
class EmulationPlan:
    scenario: Scenario
    switches: dict[str, SwitchPlan]
    hosts: dict[str, HostPlan]
    cables: list[CablePlan]
    agents: list[AgentPlan] = field(default_factory=list)
    tcp: list[TcpPlan] = field(default_factory=list)
    #: the controller's topology object (port numbering, desired state)
    controller_topology: Any = None
    #: the run's live controller while the network is up (set by the runner)
    controller: Any = None


def _fmt_rate(bps: float) -> str:
    return f"{bps:.0f}bps"


def link_params(link: Link, where: str) -> str:
    """``rate=...,delay=...,queue=...,loss=...`` for the switch's ``--link`` flag."""
    if isinstance(link.loss, GilbertElliott):
        raise PlanError(
            f"{where}.loss: bursty (Gilbert-Elliott) loss is simulated only; the switch's port "
            "emulation draws Bernoulli losses (use a plain loss rate for emulation)"
        )
    parts = [f"rate={_fmt_rate(link.rate_bps)}", f"delay={link.delay_s * 1e3:.6g}ms"]
    parts.append(f"queue={link.queue_packets}" if link.queue_packets is not None else "queue=none")
    if link.queue_bytes is not None:
        parts.append(f"queue_bytes={link.queue_bytes}")
    if link.loss:
        parts.append(f"loss={float(link.loss):.6g}")
    return ",".join(parts)


def _session_argv(s: Session, role: str, host: HostPlan, sender: HostPlan, duration: float,
                  metrics: str, seed: int, interval: float) -> tuple[str, ...]:
    argv = [sys.executable, "-m", "p4mcc.cli.main", "host", role, "--proto", s.protocol,
            "--group", s.group, "--port", str(s.port), "--session", str(s.session_id),
            "--local", host.ip, "--sender", sender.ip, "--duration", f"{duration:.3f}",
            "--metrics", metrics, "--seed", str(seed), "--traffic-interval", f"{interval:g}"]
    if s.assistance:
        argv.append("--assistance")
    argv += ["--profile", s.profile]
    for name, on in sorted(s.rules.items()):
        argv += ["--rule", f"{name}={'on' if on else 'off'}"]
    for k, v in sorted(s.params.items()):
        argv += ["--param", f"{k}={v}"]
    return tuple(argv)


def make_plan(scenario: Scenario, out_dir: Path) -> EmulationPlan:
    """Everything the emulation will create, for ``scenario``, logging into ``out_dir``."""
    from p4mcc.controller.topology import TopologyError, from_scenario_topology

    scenario, _ = fit_sessions_to_links(scenario)  # loading warned about what does not fit

    try:
        ctopo = from_scenario_topology(scenario.topology)
    except TopologyError as exc:
        raise PlanError(f"topology: {exc}") from None
    if len(ctopo.links) != len(scenario.topology.links):
        raise PlanError("topology.links: the controller's numbering lost a link")

    ifaces: dict[tuple[str, int], str] = {}
    for name, h in ctopo.hosts.items():
        ifaces[(name, 0)] = f"{name}-eth0"
    cables: list[CablePlan] = []
    flags: dict[str, list[str]] = {s: [] for s in ctopo.switches}
    for i, (slink, clink) in enumerate(zip(scenario.topology.links, ctopo.links)):
        where = f"topology.links[{i}]"
        ends = []
        for node, port in ((clink.a, clink.a_port), (clink.b, clink.b_port)):
            iface = f"{node}-eth{port}"
            ifaces[(node, port)] = iface
            ends.append((node, iface, port))
        cables.append(CablePlan(ends[0][0], ends[0][1], ends[0][2], ends[1][0], ends[1][1], ends[1][2]))
        params = link_params(slink, where)
        a_sw, b_sw = clink.a in ctopo.switches, clink.b in ctopo.switches
        if a_sw:
            flags[clink.a].append(f"{clink.a_port}:egress:{params}")
        if b_sw:
            flags[clink.b].append(f"{clink.b_port}:egress:{params}")
        if a_sw and not b_sw:
            flags[clink.a].append(f"{clink.a_port}:ingress:{params}")
        if b_sw and not a_sw:
            flags[clink.b].append(f"{clink.b_port}:ingress:{params}")
        if not a_sw and not b_sw:
            raise PlanError(f"{where}: a host-to-host link has no switch to emulate it")

    switches: dict[str, SwitchPlan] = {}
    grpc_ports = switch_ports(len(ctopo.switches))
    for i, (name, sw) in enumerate(ctopo.switches.items()):
        ports = {p: ifaces[(name, p)] for p in ctopo.port_map(name)}
        switches[name] = SwitchPlan(name, sw.device_id or i, f"127.0.0.1:{grpc_ports[i]}",
                                    ports, tuple(flags[name]))

    hosts: dict[str, HostPlan] = {}
    for name, h in scenario.topology.hosts.items():
        sw, port = ctopo.attachment(name)
        hosts[name] = HostPlan(name, h.ip, h.prefix_len, ctopo.hosts[name].mac or h.mac,
                               f"{name}-eth0", sw, port)

    plan = EmulationPlan(scenario, switches, hosts, cables, controller_topology=ctopo)
    dur = scenario.duration
    for si, s in enumerate(scenario.sessions):
        stop = min(s.stop if s.stop is not None else dur, dur)
        sender = hosts[s.sender]
        plan.agents.append(AgentPlan(
            s.name, s.sender, "send", s.start, stop,
            _session_argv(s, "send", sender, sender, stop - s.start,
                          str(out_dir / "agents" / f"{s.name}-{s.sender}.jsonl"),
                          scenario.seed * 1000 + si * 100, scenario.metrics_interval)))
        for ri, r in enumerate(s.receivers):
            start = max(s.start, s.join_at.get(r, s.start))
            rstop = min(stop, s.leave_at.get(r, stop))
            if rstop <= start:
                continue
            plan.agents.append(AgentPlan(
                s.name, r, "recv", start, rstop,
                _session_argv(s, "recv", hosts[r], sender, rstop - start,
                              str(out_dir / "agents" / f"{s.name}-{r}.jsonl"),
                              scenario.seed * 1000 + si * 100 + ri + 1, scenario.metrics_interval)))
    for f in scenario.tcp_flows:
        stop = min(f.stop if f.stop is not None else dur, dur)
        if stop > f.start:
            plan.tcp.append(TcpPlan(f, hosts[f.src].ip, hosts[f.dst].ip, f.start, stop))
    return plan
