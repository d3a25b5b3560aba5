"""``p4mcc run``: a scenario in Mininet, with real Linux hosts, P4 switches and TCP.

The run goes: plan (pure, :mod:`emulation.plan`) -> Mininet network
with one switch process per switch -> the controller's desired state pushed
over P4Runtime (the same function the simulator configures its switches with)
-> iperf3 servers -> agents and iperf3 clients started at their scenario times
-> wait for the duration (a progress bar; a component that dies ends the run
and is reported with its last log lines) -> stop everything -> the results
folder, in the same layout as ``p4mcc sim`` writes.

Cleanup is unconditional: on a normal end, on Ctrl-C and on a crashed
component every process is stopped and ``net.stop()`` removes every
namespace and interface; ``make stop`` covers a hard kill of the runner,
from the run's record of its processes and interfaces
(:mod:`emulation.runstate`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from p4mcc.hosts.wire import Stamp
from p4mcc.reporting import results as R
from p4mcc.emulation.plan import AgentPlan, EmulationPlan, TcpPlan, make_plan
from p4mcc.emulation import interrupts, mininet_net, warm
from p4mcc.emulation.mininet_net import (
    ComponentError,
    LoggedProcess,
    build_network,
    prepare_hosts,
    spawn,
)
from p4mcc.emulation.runstate import RunRecord, reclaim_orphans
from p4mcc.scenario.model import Scenario

IPERF_READY = re.compile(r"Server listening on")
SWITCH_READY_TIMEOUT = 90.0
#: ``0`` leaves BMv2's egress queues unlimited (the bottleneck queue then sits
#: in the shaper alone, emulation/bmv2_queue.py), to compare the two.
BMV2_QUEUES_ENV = "P4MCC_BMV2_QUEUES"


class EmulationError(RuntimeError):
    """The run could not go on; the message says which component and why."""


#: Programs a Mininet run calls on the host.
RUN_TOOLS = ("mnexec", "iperf3", "ethtool")


def missing_requirements(extra_tools: tuple[str, ...] = ()) -> str | None:
    """Why this machine cannot run ``p4mcc run`` (None: it can).

    Root, an importable Mininet and :data:`RUN_TOOLS` (plus ``extra_tools``,
    e.g. ``ping`` or ``tshark`` for a caller that uses them).  The Mininet
    tests skip with this reason.
    """
    if os.geteuid() != 0:
        return "p4mcc run needs root (Mininet creates network namespaces)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet is not importable: run `make install`"
    for tool in (*RUN_TOOLS, *extra_tools):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH: run `make install`"
    return None


#: What ``--target bmv2`` needs on PATH: the switch and the compiler of its pipeline.
BMV2_TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")
TARGETS = ("auto", "builtin", "bmv2")
#: How a summary's title names each target.
TARGET_TITLES = {"builtin": "built-in p4mcc", "bmv2": "BMv2 simple_switch_grpc"}


def resolve_target(target: str) -> str:
    """``auto`` -> ``bmv2`` when BMv2 and p4c are on PATH, else ``builtin``;
    a forced ``bmv2`` without them is an :class:`EmulationError` saying what is missing."""
    if target not in TARGETS:
        raise EmulationError(f"--target {target}: one of {', '.join(TARGETS)}")
    missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
    if target == "auto":
        return "builtin" if missing else "bmv2"
    if target == "bmv2" and missing:
        raise EmulationError(f"--target bmv2: {' and '.join(missing)} not on PATH (install p4c and BMv2, "
                             "or run with --target builtin)")
    return target


def check_environment() -> None:
    """Root and Mininet are needed; say which is missing."""
    reason = missing_requirements()
    if reason:
        raise EmulationError(reason)


@dataclass
class _Started:
    plan: AgentPlan | TcpPlan
    process: LoggedProcess
    started_at: float


class LiveController:
    """The run's P4Runtime controller, in a thread with its own event loop.

    It is the controller's long-running :class:`controller.fleet.Controller`:
    it pushes the pipeline and the desired state (the same function the
    simulator configures its switches with), then stays primary for the whole
    run, so membership digests reach its event log, IGMP general queries go
    out when memberships age, and a switch that restarts gets its state back.
    :meth:`start` returns once every switch is synchronised.
    """

    def __init__(self, plan: EmulationPlan, target: str, program: Path | None, log_path: Path,
                 election_id: int = 10) -> None:
        from p4mcc.controller.desired import plan as desired_plan
        from p4mcc.controller.desired import session_from_scenario
        from p4mcc.controller.events import EventLog
        from p4mcc.controller.fleet import Controller, Target, quiet_finsy
        from p4mcc.controller.pipeline import pipeline_for
        from p4mcc.scenario.control import scenario_options

        quiet_finsy()
        sessions = [session_from_scenario(s) for s in plan.scenario.sessions]
        # policing and membership ageing (on by default, as in the simulator) from the scenario
        options, query = scenario_options(plan.scenario)
        want = desired_plan(plan.controller_topology, sessions, options)
        self.names = set(plan.switches)
        self.synced: dict[str, dict[str, int]] = {}
        self.errors: list[str] = []
        self.ready = threading.Event()
        self.log = EventLog(path=log_path, sink=self._on_event, clock=time.monotonic)
        self.controller = Controller(
            [Target(s.name, s.grpc_addr, s.device_id) for s in plan.switches.values()],
            want.switches, pipeline_for(target, source=program), self.log, on_sync=self._on_sync,
            election_id=election_id, query_interval=query, below=want.below)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._main, name="controller", daemon=True)

    def _on_sync(self, switch: str, ops: list[Any]) -> None:
        from p4mcc.controller.diff import summarize

        self.synced.setdefault(switch, summarize(ops))
        if set(self.synced) >= self.names:
            self.ready.set()

    def _on_event(self, rec: dict[str, Any]) -> None:
        if rec.get("event") == "error":
            self.errors.append(f"{rec.get('switch')}: {rec.get('entity', '')}: {rec.get('detail', '')}")
            self.ready.set()

    def _main(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._task = self._loop.create_task(self.controller.run())
            self._loop.run_until_complete(self._task)
        except (asyncio.CancelledError, Exception) as exc:  # noqa: BLE001 - reported through errors
            if not isinstance(exc, asyncio.CancelledError):
                self.errors.append(f"controller: {type(exc).__name__}: {exc}")
        finally:
            self._loop.close()
            self.ready.set()

    def start(self, timeout: float = 60.0) -> dict[str, dict[str, int]]:
        self._thread.start()
        if not self.ready.wait(timeout):
            missing = ", ".join(sorted(self.names - set(self.synced)))
            raise EmulationError(f"controller: switches not configured within {timeout:g} s: {missing}")
        if self.errors:
            raise EmulationError("controller: " + "; ".join(self.errors))
        return dict(self.synced)

    def call(self, make_coro: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run a coroutine on the controller's event loop and return its result.

        grpc's asyncio layer is bound to one event loop per process, so every
        P4Runtime call of the run goes through this loop.
        """
        if self._loop is None or self._loop.is_closed():
            raise EmulationError("controller is not running")
        return asyncio.run_coroutine_threadsafe(make_coro(), self._loop).result(timeout)

    def stop(self) -> None:
        if getattr(self, "_stopped", False):
            return
        self._stopped = True
        if self._loop is not None and self._task is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._task.cancel)
            except RuntimeError:
                pass  # the loop ended on its own
        self._thread.join(timeout=15)
        self.log.close()


#: The congestion control iperf3 asks the kernel for: Reno, as the simulator's
#: TCP model (netsim/tcp.py), rather than the kernel's default (CUBIC, or BBR,
#: which does not back off on loss and takes most of a drop-tail bottleneck).
TCP_CONGESTION = "reno"
#: iperf3 runs as an ordinary process, not under SCHED_FIFO like the agents.
#: iperf3 3.12 can poll select() with a zero timeout while it waits on its
#: peer (esnet/iperf issues 1213 and 2018), and a polling process under FIFO
#: keeps its core from every process at or below its priority, its own
#: server included: two such clients on 2 cores held the run for minutes.
#: The kernel paces and times TCP; iperf3 only refills a socket buffer of the
#: flow's window, which an ordinary process does in time.
IPERF_REALTIME = False


def _iperf_client_argv(t: TcpPlan, interval: float) -> list[str]:
    return ["iperf3", "-c", t.dst_ip, "-p", str(t.flow.port), "-t", f"{t.stop - t.start:.3f}",
            "-i", f"{interval:g}", "-M", str(t.flow.mss), "-w", str(t.flow.rwnd), "-J",
            "--get-server-output", "-C", TCP_CONGESTION]


@contextmanager
def emulated_network(scenario: Scenario, out: Path, *, target: str = "builtin",
                     program: Path | None = None,
                     pcap_dir: Path | None = None) -> Iterator[tuple[Any, EmulationPlan, dict[str, Any]]]:
    """The running network of ``scenario``: switches up and configured by the
    controller.  Yields (Mininet net, plan, controller op counts); always
    stops the switches and removes every namespace and interface."""
    check_environment()
    target = resolve_target(target)
    logs = out / "logs"
    for d in (out, logs, out / "agents", out / "tcp"):
        d.mkdir(parents=True, exist_ok=True)
    if pcap_dir is not None:
        pcap_dir.mkdir(parents=True, exist_ok=True)
    plan = make_plan(scenario, out)
    reclaim_orphans()  # a run killed hard before this one must not block it
    _check_no_leftovers(plan)
    try:
        record = RunRecord.create(out)  # what `p4mcc stop` ends if this run is killed hard
    except OSError as e:
        raise EmulationError(f"cannot write the run's record of its processes: {e}") from None

    def remember(proc: LoggedProcess) -> None:
        record.add_process(proc.proc.pid, proc.name, group=True)

    mininet_net.spawn_hooks.append(remember)
    mininet_net.interface_hooks.append(record.add_interfaces)
    net = build_network(plan, logs, target=target, program=program, pcap_dir=pcap_dir)
    try:
        net.build()
        for node in [*net.hosts, *net.switches]:
            if node.shell is not None:
                record.add_process(node.pid, f"mininet {node.name}")
        record.add_interfaces(sorted({c.a_iface for c in plan.cables} | {c.b_iface for c in plan.cables}))
        plan.shapings = _plan_shaping(plan, net, target)  # type: ignore[attr-defined]
        net.start()
        prepare_hosts(net, plan)
        _apply_tc(plan.shapings, net)  # type: ignore[attr-defined]
        for s in plan.switches.values():
            net[s.name].await_links()
            proc = net[s.name].process
            if proc is None or not proc.ready.wait(SWITCH_READY_TIMEOUT) or not proc.alive:
                tail = proc.last_lines() if proc else ""
                raise EmulationError(f"switch {s.name} did not start:\n{tail}")
        _await_queues(plan, net)
        ctl = LiveController(plan, target, program, out / "controller-events.jsonl")
        try:
            ops = ctl.start()
            plan.controller = ctl
            plan.controller_factory = lambda n: LiveController(  # type: ignore[attr-defined]
                plan, target, program, out / f"controller-events.{n}.jsonl", election_id=10 + n)
            yield net, plan, ops
        finally:
            current, plan.controller = plan.controller, None
            if current is not None and current is not ctl:
                current.stop()
            ctl.stop()
    finally:
        for sw in net.switches:
            sw.begin_stop()
        net.stop()
        mininet_net.spawn_hooks.remove(remember)
        mininet_net.interface_hooks.remove(record.add_interfaces)
        record.close()


def _plan_shaping(plan: EmulationPlan, net: Any, target: str) -> list[Any]:
    """How each link direction is shaped here (emulation/shaping.py); on BMv2 the
    kernel's disciplines are probed on one of the run's own interfaces, and the
    switches learn which ports go through a link process."""
    from p4mcc.emulation import shaping

    have: frozenset[str] = frozenset()
    if target == "bmv2" and any(d.shaped for d in shaping.directions(plan)):
        sw = next(iter(plan.switches.values()))
        have = shaping.probe_qdiscs(sw.ports[min(sw.ports)])
        for name, ports in shaping.linkproc_ports(plan, have).items():
            net[name].linkproc_ports = set(ports)
    try:
        rows = shaping.shapings(plan, target, have)
    except shaping.ShapingError as exc:
        raise EmulationError(str(exc)) from None
    if target == "bmv2" and os.environ.get(BMV2_QUEUES_ENV, "1") == "0":
        rows = [dataclasses.replace(r, bmv2_queue=None) for r in rows]
    if target == "bmv2":
        from p4mcc.emulation.bmv2_queue import QueueSetting

        for row in rows:
            if row.bmv2_queue is not None:
                q = QueueSetting(**row.bmv2_queue)  # type: ignore[arg-type]
                net[q.switch].bmv2_queues.append(q)
    return rows


def _await_queues(plan: EmulationPlan, net: Any) -> None:
    """Wait until every BMv2 switch has its egress queues configured (emulation/bmv2_queue.py)."""
    from p4mcc.emulation.mininet_net import QUEUE_SETUP_TIMEOUT

    for name in plan.switches:
        node = net[name]
        if not node.queues_set.wait(QUEUE_SETUP_TIMEOUT + 5):
            raise EmulationError(f"switch {name}: its egress queues were not configured in time")
        if node.queue_error:
            raise EmulationError(f"switch {name}: cannot configure its egress queues: {node.queue_error}")


def _apply_tc(shapings: list[Any], net: Any) -> None:
    """Run the kernel shaping's tc commands, each in the namespace of the node named in ``where``."""
    from p4mcc.emulation.shaping import KERNEL

    for sh in shapings:
        if sh.how != KERNEL:
            continue
        node = net[sh.where.split()[0]]
        for cmd in sh.commands:
            out = node.cmd(f"{cmd} 2>&1; echo rc=$?")
            if not out.rstrip().endswith("rc=0"):
                err = out.rstrip().rsplit("rc=", 1)[0].strip().replace("\n", " ")
                raise EmulationError(f"{sh.link} ({sh.sender} -> {sh.receiver}): tc refused `{cmd}`: {err}")


def _check_no_leftovers(plan: EmulationPlan) -> None:
    """Refuse to start over interfaces of another run (or of one killed hard),
    the cables' and the link processes' pairs (emulation/shaping.py) alike."""
    from p4mcc.emulation.shaping import BMV2_SUFFIX, LINKPROC_SUFFIX

    existing = set(os.listdir("/sys/class/net"))
    ours = {c.a_iface for c in plan.cables} | {c.b_iface for c in plan.cables}
    ours |= {i + sfx for s in plan.switches.values() for i in s.ports.values()
             for sfx in (BMV2_SUFFIX, LINKPROC_SUFFIX)}
    clash = sorted(ours & existing)
    clash = [i for i in clash if i in existing]
    if clash:
        raise EmulationError(
            f"interfaces {', '.join(clash[:4])} already exist: another emulation is running, "
            "or one was killed; stop it or run `make stop`")


Observer = Callable[[float, Any, EmulationPlan], None]


def run_emulation(scenario: Scenario, out: str | Path, *, target: str = "builtin",
                  program: Path | None = None, progress: bool = True,
                  observe: Observer | None = None, capture: Any = None,
                  plots: bool = True) -> dict[str, Any]:
    """Run ``scenario`` in Mininet and write its results folder; returns the summary.

    ``plots=False`` leaves the plots out of the folder (``p4mcc report`` draws
    them from it later): they are seconds of CPU a run that only wants
    numbers, a sweep's or a test's, need not spend.

    ``observe(elapsed_s, net, plan)``, when given, is called at least every
    half second while the run goes on (tests read switch counters with it).
    ``capture`` (default the scenario's ``capture:``) has the switches write
    pcaps, turned into ``out/pcaps`` with run-relative times (scenario/capture.py).
    """
    out = Path(out)
    target = resolve_target(target)
    from p4mcc.emulation.faults import check_supported

    try:
        check_supported(scenario, target)
    except ValueError as exc:
        raise EmulationError(str(exc)) from None
    logs = out / "logs"
    started: list[_Started] = []
    servers: list[LoggedProcess] = []
    gates: dict[AgentPlan, LoggedProcess] = {}
    died = threading.Event()
    rec = R.Recorder(scenario, "mininet")
    t0 = 0.0
    t0_wall = time.time()
    capture = capture or scenario.capture
    raw_pcaps = logs / "switch-pcaps" if capture is not None else None
    faults = None
    with emulated_network(scenario, out, target=target, program=program,
                          pcap_dir=raw_pcaps) as (net, plan, ops):
        try:
            for t in plan.tcp:
                srv = spawn(f"iperf3 server {t.flow.name}",
                            ["iperf3", "-s", "-p", str(t.flow.port), "-1", "--forceflush",
                             "-i", f"{scenario.metrics_interval:g}"],
                            logs / f"iperf3-server-{t.flow.name}.log", node=net[t.flow.dst],
                            ready_pattern=IPERF_READY, realtime=IPERF_REALTIME)
                servers.append(srv)
                if not srv.ready.wait(15) or not srv.alive:
                    raise EmulationError(f"iperf3 server for {t.flow.name} did not start:\n{srv.last_lines()}")
            actions: list[tuple[float, AgentPlan | TcpPlan]] = sorted(
                [(a.start, a) for a in plan.agents] + [(t.start, t) for t in plan.tcp],
                key=lambda x: (x[0], isinstance(x[1], TcpPlan), getattr(x[1], "role", "") != "recv"))
            faults = _fault_injector(plan, net, started, died, logs, scenario, rec)
            faults.prepare()  # standby switches warm before the clock starts
            gates = warm.warm_all(plan.agents, net, logs)  # and the agents (emulation/warm.py)
            t0, t0_wall = time.monotonic(), time.time()
            _drive(plan, net, actions, started, died, t0, logs, scenario, rec, progress, observe, faults, gates)
        except KeyboardInterrupt:
            rec.extra["interrupted"] = True
            raise
        finally:
            if faults is not None:
                faults.stop()
            for g in gates.values():
                warm.end(g)  # agents whose start time the run did not reach
            for s in started:
                s.process.stop(timeout=5)
            for srv in servers:
                srv.stop(timeout=5)
    killed = faults.killed if faults is not None else set()
    failed = [s for s in started if s.process.proc.returncode not in (0, None)
              and isinstance(s.plan, AgentPlan) and s.process.proc.pid not in killed]
    _collect(plan, started, t0, rec, out)
    if raw_pcaps is not None:
        rec.extra["captures"] = _finish_captures(plan, capture, raw_pcaps, t0_wall, out)
    if scenario.faults:
        from p4mcc.scenario.faults import recovery_events

        for e in recovery_events(rec.samples, scenario, scenario.duration):
            rec.event(*e)
    rec.extra.update({"target": target, "switch": TARGET_TITLES[target], "controller_ops": ops,
                      "links": [sh.as_dict() for sh in getattr(plan, "shapings", [])],
                      "failed_components": [s.process.name for s in failed]})
    rec.extra["link_timing_warnings"] = _link_timing(plan, logs, t0_wall, rec)
    summary = rec.write(out)
    if plots:
        from p4mcc.reporting.plots import render

        render(out)
    if failed:
        names = ", ".join(s.process.name for s in failed)
        raise EmulationError(f"components failed: {names}\n" + "\n".join(
            f"--- {s.process.name} ---\n{s.process.last_lines()}" for s in failed))
    return summary


_LINK_TIMING = re.compile(r"link timing: (?:link (\S+ \S+): )?(.*?)(?: at ([0-9.]+))?$")


def _link_timing(plan: EmulationPlan, logs: Path, t0_wall: float, rec: R.Recorder) -> int:
    """The switches' warnings that their emulated links ran late, as ``link_timing`` events.

    A switch warns when more than 5 % (and at least 5) of a link's frames in a 5 s period
    left later than max(1 ms, 10 % of the link's delay) after the instant
    the emulation gave them (p4switch/linkemu.py, ``TimingWatch``), or when
    it could not get real-time priority.  Returns how many warnings there were.
    """
    n = 0
    for name in plan.switches:
        for path in (logs / f"{name}.log", logs / f"{name}-links.log"):  # the switch's, or its link process's
            n += _link_timing_file(path, name, t0_wall, rec)
    return n


def _link_timing_file(path: Path, name: str, t0_wall: float, rec: R.Recorder) -> int:
    n = 0
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            m = _LINK_TIMING.search(line)
            if m is None:
                continue
            n += 1
            t = float(m.group(3)) - t0_wall if m.group(3) else 0.0
            rec.event(max(0.0, t), f"{name}:{m.group(1) or 'links'}", "link_timing", m.group(2))
    return n


def _finish_captures(plan: EmulationPlan, spec: Any, raw: Path, t0_wall: float, out: Path) -> dict[str, int]:
    """The switches' own pcaps, filtered and re-stamped from the run's start, into ``out/pcaps``."""
    from p4mcc.scenario import capture as C

    from p4mcc.emulation.shaping import BMV2_SUFFIX

    port_of = {iface: (s.name, port) for s in plan.switches.values() for port, iface in s.ports.items()}
    # BMv2 behind a link process captures on its own side of that process's veth
    port_of |= {iface + BMV2_SUFFIX: where for iface, where in list(port_of.items())}
    for old in (out / C.PCAP_DIR).glob("*.pcap"):
        old.unlink()
    files = C.rebase(raw, out / C.PCAP_DIR, spec, C.FrameFilter.for_scenario(spec, plan.scenario),
                     t0_wall, port_of)
    for f in raw.glob("*.pcap"):
        f.unlink()
    return {"files": len(files), "frames": sum(1 for f in files for _ in C.read_frames(f))}


def _fault_injector(plan: EmulationPlan, net: Any, started: list[_Started], died: threading.Event,
                    logs: Path, scenario: Scenario, rec: R.Recorder) -> Any:
    """The run's supervisor and fault injector (emulation/faults.py)."""
    from p4mcc.emulation.faults import EmuFaults

    def spawn_agent(a: AgentPlan, now: float, gate: LoggedProcess | None = None) -> None:
        argv = list(a.argv)
        i = argv.index("--duration")
        argv[i + 1] = f"{max(0.1, a.stop - now):.3f}"
        if gate is not None and not warm.hand_over(gate, argv):
            gate = None
        _start(AgentPlan(a.session, a.host, a.role, now, a.stop, tuple(argv)), net, started, died, logs,
               scenario, rec, now, proc=gate)

    generation = [0]

    def restart_controller(start: bool) -> None:
        old = plan.controller
        if not start:
            plan.controller = None
            if old is not None:
                old.stop()
            return
        generation[0] += 1
        new = plan.controller_factory(generation[0])  # type: ignore[attr-defined]
        new.start()
        plan.controller = new
        if old is not None:
            old.stop()

    return EmuFaults(plan=plan, net=net, started=started, rec=rec, logs=logs, scenario=scenario,
                     spawn_agent=spawn_agent, restart_controller=restart_controller, wake=died.set)


def _drive(plan: EmulationPlan, net: Any, actions: list[tuple[float, Any]], started: list[_Started],
           died: threading.Event, t0: float, logs: Path, scenario: Scenario, rec: R.Recorder,
           progress: bool, observe: Observer | None = None, faults: Any = None,
           gates: dict[AgentPlan, LoggedProcess] | None = None) -> None:
    """Start components on time and wait for the end, or for a component to die.

    An agent with a warm gate in ``gates`` runs in it (and leaves ``gates``)."""
    gates = {} if gates is None else gates
    duration = scenario.duration
    pending = list(actions)
    bar = None
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("[bold]mininet[/] {task.description}"), BarColumn(),
                       TextColumn("{task.completed:.0f}/{task.total:.0f} s"), TimeElapsedColumn(),
                       transient=True)
        bar.start()
        task = bar.add_task(scenario.name, total=duration)
    try:
        while True:
            now = time.monotonic() - t0
            while pending and pending[0][0] <= now:
                _, item = pending.pop(0)
                g = gates.pop(item, None) if isinstance(item, AgentPlan) else None
                if g is not None and not (g.alive and warm.hand_over(g, item.argv)):
                    warm.end(g)
                    g = None
                _start(item, net, started, died, logs, scenario, rec, now, proc=g)
            if faults is not None:
                # a component that dies is recorded (a switch restarted); the run goes on
                faults.poll(now)
            if observe is not None:
                observe(now, net, plan)
            if now >= duration:
                break
            if bar is not None:
                bar.update(task, completed=now)
            nxt = min([pending[0][0] if pending else duration, duration, now + 0.5,
                       faults.next_time() if faults is not None and faults.next_time() is not None else duration])
            interrupts.wait(died, max(0.0, nxt - now))
            died.clear()
        # let agents that end exactly at the duration finish on their own
        for s in started:
            interrupts.wait(s.process.exited, 3.0)
    finally:
        if bar is not None:
            bar.stop()


def _start(item: AgentPlan | TcpPlan, net: Any, started: list[_Started], died: threading.Event,
           logs: Path, scenario: Scenario, rec: R.Recorder, now: float,
           proc: LoggedProcess | None = None) -> None:
    if isinstance(item, AgentPlan):
        if proc is None:
            proc = spawn(f"{item.role} {item.label}", list(item.argv),
                         logs / f"agent-{item.session}-{item.host}.log", node=net[item.host], realtime=True)
        if item.role == "recv":
            sess = next(s for s in scenario.sessions if s.name == item.session)
            rec.event(now, item.host, "join", sess.group)
    else:
        proc = spawn(f"iperf3 {item.flow.name}", _iperf_client_argv(item, scenario.metrics_interval),
                     logs / f"iperf3-{item.flow.name}.json", node=net[item.flow.src],
                     realtime=IPERF_REALTIME)
    threading.Thread(target=lambda: (proc.exited.wait(), died.set()), daemon=True).start()
    started.append(_Started(item, proc, now))


# ---------------------------------------------------------------------------
# Results


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a record cut by a kill is not a result
    return out


def _collect(plan: EmulationPlan, started: list[_Started], t0: float, rec: R.Recorder, out: Path) -> None:
    """Turn agent metric logs and iperf3 reports into the shared results layout."""
    scenario = plan.scenario
    dt = scenario.metrics_interval
    from p4mcc.controller.events import membership_change, read_events

    evs = [ev for path in sorted(out.glob("controller-events*.jsonl")) for ev in read_events(path)]
    for ev in evs:  # the run's controller and any that replaced it (faults)
        change = membership_change(ev)
        if change is not None:
            switch, group, port, joined = change
            rec.event(float(ev["time"]) - t0, f"{switch}-p{port}", "switch_join" if joined else "switch_leave",
                      group)
        elif ev.get("event") in ("restarted", "restored", "requeried", "rejoin", "primary_lost", "disconnected", "error"):
            rec.event(float(ev["time"]) - t0, str(ev.get("switch")), str(ev["event"]), str(ev.get("detail", "")))
    seen: set[str] = set()
    for s in started:
        if isinstance(s.plan, AgentPlan):
            if s.plan.label in seen:
                continue  # a restarted agent appends to the same metrics file
            seen.add(s.plan.label)
            _collect_agent(s, t0, dt, rec, out, scenario)
        else:
            _collect_tcp(s, rec, out)


def _collect_agent(s: _Started, t0: float, dt: float, rec: R.Recorder, out: Path, scenario: Scenario) -> None:
    a: AgentPlan = s.plan  # type: ignore[assignment]
    path = out / "agents" / f"{a.session}-{a.host}.jsonl"
    last: dict[str, float] = {}
    for r in _read_jsonl(path):
        t = float(r.get("time", 0.0)) - t0
        state = str(r.get("state", ""))
        if state == "traffic":
            # driver counters, cumulative: per-interval differences are the
            # engine's own throughput and feedback measurements
            span = t - last.get("time", s.started_at)
            if span <= 0:
                continue
            if float(r.get("rx_bytes", 0)) < last.get("rxb", 0.0) or float(r.get("tx_bytes", 0)) < last.get("tx", 0.0):
                last = {"time": t}  # a restarted agent: its counters start again from 0
            last["rxb"] = float(r.get("rx_bytes", 0))
            if a.role == "recv":
                rx = float(r.get("rx_mcast_bytes", 0))
                rec.sample(t, "session", a.session, a.host, R.THROUGHPUT, (rx - last.get("rx", 0.0)) * 8 / span)
                last["rx"] = rx
                if isinstance(r.get("stamp"), int) and Stamp.stamped(r["stamp"]):
                    rec.sample(t, "session", a.session, a.host, R.STAMP_QUEUE, Stamp.queue_delay_s(r["stamp"]))
                    rec.sample(t, "session", a.session, a.host, R.STAMP_SPARE, Stamp.spare_bps(r["stamp"]))
            else:
                tx = float(r.get("tx_bytes", 0))
                fb = float(r.get("rx_msgs", 0))
                rec.sample(t, "session", a.session, a.host, R.THROUGHPUT, (tx - last.get("tx", 0.0)) * 8 / span)
                rec.sample(t, "session", a.session, a.host, R.FEEDBACK, fb - last.get("fb", 0.0))
                last["tx"], last["fb"] = tx, fb
            last["time"] = t
            continue
        if state == "summary":
            if a.role == "recv":
                sess = next(x for x in scenario.sessions if x.name == a.session)
                rec.event(t, a.host, "leave", sess.group)
            continue
        values = {k: float(v) for k, v in r.items()
                  if k not in ("time", "role", "state") and isinstance(v, (int, float)) and not isinstance(v, bool)}
        rec.record(t, f"{a.session}/{a.host}", str(r.get("role", a.role)), values, state)
        loss = values.get("loss_event_rate", values.get("loss_rate"))
        if loss is not None:
            rec.sample(t, "session", a.session, a.host, R.LOSS, loss)
        if values.get("rtt_s", 0) > 0:
            rec.sample(t, "session", a.session, a.host, R.RTT, values["rtt_s"])


_SERVER_LINE = re.compile(
    r"^\[\s*\d+\]\s+([0-9.]+)-([0-9.]+)\s+sec\s+[0-9.]+\s+\w?Bytes\s+([0-9.]+)\s+(\w?)bits/sec\s*$")
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def server_intervals(text: str) -> list[tuple[float, float]]:
    """(interval end s, bit/s) of an iperf3 server's text report (the receiver's view).

    The summary line (``receiver``/``sender`` suffix) does not match.  A
    last interval much shorter than the others (the tail after the client
    stopped) is left out: its rate is the receive buffer draining, not the
    path.
    """
    rows = []
    for line in text.splitlines():
        m = _SERVER_LINE.match(line.strip())
        if m:
            start, end = float(m.group(1)), float(m.group(2))
            rows.append((end - start, end, float(m.group(3)) * _SI.get(m.group(4), 1.0)))
    if not rows:
        return []
    typical = sorted(r[0] for r in rows)[len(rows) // 2]
    return [(end, bps) for length, end, bps in rows if length >= 0.5 * typical]


def tcp_loss_samples(intervals: list[dict[str, Any]], server: list[tuple[float, float]],
                     mss: int) -> list[tuple[float, float]]:
    """(interval end s, retransmitted / sent segments) of an iperf3 client report.

    The sent segments are the receiver's delivered segments in the same
    interval (``server``, from :func:`server_intervals`) plus the
    retransmissions, as the simulator counts its TCP sender's segments.  The
    client's own ``bytes`` cannot be the denominator: they are what iperf3
    handed to its socket in 128 KiB writes, so an interval can hold none
    while TCP sends all along.  Counted that way (intervals without writes
    dropped, the others dividing by a burst of writes), the demo's TCP flow
    showed a fifth of its retransmissions (0.1 % against the kernel's 0.4-0.6 %
    of segments).  Without a server report, the client's bytes are all there is.
    """
    out = []
    for iv in intervals:
        summ = iv.get("sum", {})
        streams = iv.get("streams") or []
        if not streams or "retransmits" not in streams[0]:
            continue
        st = streams[0]
        end, length = float(summ.get("end", st.get("end", 0.0))), float(summ.get("seconds", st.get("seconds", 0.0)))
        retx = float(st["retransmits"])
        if server:
            got_end, bps = min(server, key=lambda row: abs(row[0] - end))
            if abs(got_end - end) > length / 2:
                continue  # no receiver interval for this one (the tail after the client stopped)
            sent = bps * length / 8.0 / mss + retx
        else:
            sent = float(st.get("bytes", 0)) / max(1, mss)
        if sent > 0:
            out.append((end, retx / sent))
    return out


def _collect_tcp(s: _Started, rec: R.Recorder, out: Path) -> None:
    t: TcpPlan = s.plan  # type: ignore[assignment]
    path = s.process.log_path
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        rec.event(s.started_at, t.flow.src, "tcp_error", f"{t.flow.name}: no iperf3 report")
        return
    shutil.copy(path, out / "tcp" / f"{t.flow.name}.json")
    # Throughput is what the receiver got (the server's intervals): the
    # client's own intervals count bytes handed to its socket buffer.
    server = server_intervals(report.get("server_output_text", ""))
    for end_s, bps in server:
        rec.sample(s.started_at + end_s, "tcp", t.flow.name, t.flow.dst, R.THROUGHPUT, bps)
    for iv in report.get("intervals", []):
        summ = iv.get("sum", {})
        end = s.started_at + float(summ.get("end", 0.0))
        if not server:
            rec.sample(end, "tcp", t.flow.name, t.flow.dst, R.THROUGHPUT, float(summ.get("bits_per_second", 0.0)))
        streams = iv.get("streams") or []
        if streams:
            st = streams[0]
            if st.get("rtt"):
                rec.sample(end, "tcp", t.flow.name, t.flow.dst, R.RTT, float(st["rtt"]) / 1e6)
            if st.get("snd_cwnd"):
                rec.sample(end, "tcp", t.flow.name, t.flow.dst, "cwnd", float(st["snd_cwnd"]) / t.flow.mss)
    for end_s, loss in tcp_loss_samples(report.get("intervals", []), server, t.flow.mss):
        rec.sample(s.started_at + end_s, "tcp", t.flow.name, t.flow.dst, R.LOSS, loss)


__all__ = ["ComponentError", "EmulationError", "check_environment", "emulated_network", "run_emulation"]


def read_counters(plan: EmulationPlan, switch: str) -> dict[str, dict[int, tuple[int, int]]]:
    """A switch's indexed counters over P4Runtime: name -> index -> (packets, bytes).

    Reads through the run's live controller (its connection and its event
    loop), so it can be called from an ``observe`` callback during a run.
    """
    import finsy as fy

    from p4mcc.controller import fleet

    ctl: LiveController | None = plan.controller
    if ctl is None:
        raise EmulationError("read_counters needs a running emulation")

    async def read() -> dict[str, dict[int, tuple[int, int]]]:
        sw = ctl.controller.switches[switch]
        out: dict[str, dict[int, tuple[int, int]]] = {}
        for c in sw.p4info.counters:
            for e in await fleet._read_all(sw, fy.P4CounterEntry(c.alias)):
                if e.index is not None:
                    out.setdefault(c.alias, {})[e.index] = (e.packet_count or 0, e.byte_count or 0)
        return out

    return ctl.call(read)
