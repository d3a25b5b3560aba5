"""Faults in a Mininet run, and a runner that survives its components dying.

:class:`EmuFaults` is called by ``emulation/run._drive`` every time
the runner wakes up.  It

* supervises: an agent that dies is recorded (``agent_died``) and the run
  goes on; a switch process that dies is recorded (``switch_died``) and
  started again with the same command line (the controller then restores it
  and re-queries its hosts) -- a ``SIGKILL`` of one component no longer ends
  the run without results;
* injects the scenario's faults on time, each by the run's own records (the
  process objects it started, by process id; interfaces by the names the
  plan gave them):

  ``agent_kill``      SIGKILL to the agent's process group; restarted after ``for``
  ``receiver_crash``  the host's interface goes down (so its kernel sends no
                      IGMP leave), then SIGKILL; after ``for`` the interface
                      comes up and the agent starts again
  ``receiver_leave``  SIGTERM: the agent's driver runs the core's ``close``,
                      then leaves its groups
  ``switch_crash``    SIGKILL to the switch process; restarted after ``for``
                      (default 1 s) with empty tables and registers
  ``controller_restart`` the run's controller stops and a new one starts
                      after ``for``; with ``takeover`` a second controller
                      with a higher election id starts first, then the old
                      one stops
  ``link_down``       ``ip link set down`` on both ends of the link's veth
                      pair (the switch side in the root namespace, a host
                      side in the host's), ``up`` after ``for``
  ``feedback_flood``, ``false_report``, ``spoof_clr``, ``forged_ack``
                      ``python -m p4mcc.hosts.rogue`` in the host for ``for`` seconds
  ``malformed``       ``python -m p4mcc.hosts.rogue malformed`` on a raw socket of
                      the host attached to the port

  ``link_change``    where p4mcc emulates the link (the built-in switch, or
                      BMv2's link process): the new values, exactly, to that
                      emulation over its control socket (p4switch/linkctl.py),
                      back to the start-up values after ``for``.  Otherwise
                      (BMv2 shaped by tc): a lower ``rate`` is tc's token
                      bucket (``tbf``) on both veth ends; a longer delay or
                      more loss is netem, which adds to the link's shaping
                      (emulation/netem_faults.py); the rest is refused by
                      :func:`check_supported` before the network is built
  ``link_reorder``, ``link_duplicate``, ``link_corrupt``
                      netem on the veth ends (emulation/netem_faults.py); a
                      kernel without netem: refused in one line before the
                      run's clock starts (:meth:`EmuFaults.prepare`)
  ``link_down`` with ``from``  one direction only: a ``matchall`` filter
                      dropping every frame on the egress of that end's veth
                      (:func:`oneway_commands`; ``ip link`` would take both)
  ``sender_crash``    as ``receiver_crash``, for the sender's host
  ``controller_cut``  iptables rejects the switch's P4Runtime port with TCP
                      resets for ``for`` seconds (:func:`cut_commands`): the
                      streams reset, reconnecting fails, the switch runs on
  ``switch_slow``     SIGSTOP/SIGCONT of the switch process on a
                      ``cpu`` duty cycle (:func:`duty_cycle`)
  ``disk_full``       the results files share ``free`` bytes
                      (``scenario.faults.fill_disk``)

  Refused by :func:`check_supported`, with the reason: ``switch_wipe``
  (nothing but the switch's primary controller can drop its tables, and
  the controller does not read switches back while they run).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: Fault types a Mininet run can inject.
#: (``link_reorder``, ``link_duplicate`` and ``link_corrupt`` need the kernel's
#: netem, and so does a ``link_change`` of delay or loss on a link tc shapes:
#: emulation/netem_faults.py.)
SUPPORTED = {"agent_kill", "receiver_crash", "receiver_leave", "switch_crash", "controller_restart",
             "link_down", "link_change", "feedback_flood", "false_report", "spoof_clr", "forged_ack", "malformed",
             "sender_crash", "controller_cut", "switch_slow", "disk_full",
             "link_reorder", "link_duplicate", "link_corrupt"}
#: Why a Mininet run cannot inject the others (``check_supported``'s one line).
UNSUPPORTED_WHY = {
    "switch_wipe": "only the switch's primary controller may drop its tables, and the controller does not "
                   "read a running switch back",
}
#: Period of a starved switch's duty cycle (``netsim.faults.SLOW_PERIOD_S`` in the simulator).
SLOW_PERIOD_S = 0.1
#: tc's token bucket (a lower rate) shapes the veth below the switch's own link emulation.
TBF_BURST_BYTES = 10_000
TBF_LATENCY_MS = 50
DEFAULT_DOWN_S = 1.0
#: A switch process that dies more often than this is left down.
MAX_SWITCH_RESTARTS = 5
#: How long :meth:`EmuFaults.prepare` waits for the standby switches to warm up.
STANDBY_WARM_S = 90.0
_STANDBY_READY = re.compile(r"standby, waiting|serving P4Runtime")


def check_supported(scenario: Any, target: str = "builtin") -> None:
    """Raise ValueError naming the first fault Mininet cannot inject on ``target``.

    The built-in switch changes its own link emulation to any values; on
    BMv2 a ``link_change`` is held to what tc and netem can add.
    """
    for i, f in enumerate(getattr(scenario, "faults", ()) or ()):
        if f.kind not in SUPPORTED:
            why = UNSUPPORTED_WHY.get(f.kind, "not implemented")
            raise ValueError(f"faults[{i}]: {f.kind} cannot be injected in Mininet ({why}); use p4mcc sim")
        if f.kind == "link_change" and target == "builtin":
            continue
        if f.kind == "link_change":
            from p4mcc.emulation.netem_faults import change_problem

            link = next(l for l in scenario.topology.links if {l.a.node, l.b.node} == set(f.target))
            why = change_problem(f, link)
            if why:
                raise ValueError(f"faults[{i}]: link_change in Mininet: {why}; use p4mcc sim")
        if f.kind == "link_change" and "rate" in f.params:
            if f.params["rate"] > link.rate_bps:
                raise ValueError(f"faults[{i}].rate: Mininet can only lower a link's rate "
                                 f"(below {link.rate_bps:g} bit/s, the switch's own emulation)")


def oneway_commands(iface: str, down: bool) -> list[str]:
    """tc commands that drop (or stop dropping) every frame leaving ``iface``:
    one direction of a veth pair, the other still carries frames."""
    if down:
        return [f"tc qdisc replace dev {iface} root handle 1: prio",
                f"tc filter add dev {iface} parent 1: protocol all matchall action drop"]
    return [f"tc qdisc del dev {iface} root"]


def cut_commands(grpc_addr: str, on: bool) -> list[str]:
    """iptables commands that reset (``on``) every TCP segment to or from a
    switch's P4Runtime port, or remove that rule: its streams end with a
    reset and new ones are refused while the processes keep running."""
    port = grpc_addr.rsplit(":", 1)[1]
    op = "-I" if on else "-D"
    return [f"iptables {op} INPUT -p tcp --{way} {port} -m comment --comment p4mcc-cut -j REJECT "
            f"--reject-with tcp-reset" for way in ("dport", "sport")]


def duty_cycle(pid: int, cpu: float, duration: float, stop: threading.Event, *,
               kill: Callable[[int, int], None] = os.killpg, period: float = SLOW_PERIOD_S,
               clock: Callable[[], float] = time.monotonic) -> int:
    """Run the process group ``pid`` ``cpu`` of every ``period`` for
    ``duration`` seconds (SIGSTOP, then SIGCONT), ending continued; returns
    the number of stops.  ``stop`` ends it early (the run's end)."""
    end = clock() + duration
    stops = 0
    try:
        while clock() < end and not stop.wait(cpu * period):
            kill(pid, signal.SIGSTOP)
            stops += 1
            if stop.wait((1.0 - cpu) * period):
                break
            kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        return stops
    finally:
        try:
            kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    return stops


@dataclass
class _Action:
    at: float
    order: int
    fn: Callable[[], None] = field(compare=False)

    def __lt__(self, other: "_Action") -> bool:
        return (self.at, self.order) < (other.at, other.order)


class EmuFaults:
    """See the module doc.  ``env`` gives the runner's objects (net, plan, ...)."""

    def __init__(self, *, plan: Any, net: Any, started: list[Any], rec: Any, logs: Path,
                 scenario: Any, spawn_agent: Callable[..., Any],
                 restart_controller: Callable[[bool], None] | None = None,
                 wake: Callable[[], None] | None = None) -> None:
        self.plan, self.net, self.started, self.rec = plan, net, started, rec
        self.logs, self.scenario = logs, scenario
        self.spawn_agent = spawn_agent
        self.restart_controller = restart_controller
        self.wake = wake
        self.now = 0.0
        #: switch -> a warm replacement process waiting for "go" (see :meth:`prepare`)
        self.standby: dict[str, Any] = {}
        #: killed agent's process id -> its warm replacement (p4mcc_cli/agent_gate.py)
        self.gates: dict[int, Any] = {}
        self._standbys_made = 0
        self.actions: list[_Action] = []
        self._order = 0
        self.killed: set[int] = set()  # pids we ended on purpose
        self.reported: set[int] = set()
        self.switch_restarts: dict[str, int] = {}
        self.expected_down: set[str] = set()  # switches we keep down on purpose
        self.rogues: list[Any] = []
        #: set at the run's end: a starved switch is continued at once
        self.ending = threading.Event()
        self.cut_rules: list[str] = []
        #: fault index -> the (node, interface) ends its netem goes on (:meth:`_check_netem`)
        self.netem_ends: dict[int, list[tuple[str, str]]] = {}
        for f in scenario.faults:
            if f.kind == "disk_full":
                from p4mcc.scenario.faults import fill_disk

                fill_disk(rec, f.params.get("free", 0))
        for i, f in enumerate(scenario.faults):
            for t in f.times(scenario.duration):
                self._at(t, lambda f=f, i=i: self._inject(f, i))

    def prepare(self) -> None:
        """Before the run's clock starts: watch every switch process (its death
        wakes the runner at once), and warm a standby replacement for each
        switch a ``switch_crash`` targets, so a restart costs no process start."""
        for name in self.plan.switches:
            proc = self.net[name].process
            if proc is not None:
                self._watch(proc)
        crashed = sorted({f.target for f in self.scenario.faults if f.kind == "switch_crash"})
        for name in crashed:
            if getattr(self.net[name], "target", "builtin") == "builtin":
                self._spawn_standby(name)
        for name in crashed:
            p = self.standby.get(name)
            if p is not None and not (p.ready.wait(STANDBY_WARM_S) and p.alive):
                self.standby.pop(name, None)  # restarts start a process then; say why in its log
                self.rec.event(0.0, name, "error", f"standby did not warm up:\n{p.last_lines(5)}")
        self._check_netem()

    def _check_netem(self) -> None:
        """Refuse, in one line, a fault that needs netem where there is none
        (probed once on an interface of this run) or where it would replace
        p4mcc's own shaping (emulation/netem_faults.py)."""
        from p4mcc.emulation import netem_faults
        from p4mcc.emulation.mininet_net import ComponentError

        shaped = netem_faults.kernel_shaped(getattr(self.plan, "shapings", ()) or ())
        have: bool | None = None
        for i, f in enumerate(self.scenario.faults):
            if not netem_faults.needs_netem(f) or (f.kind == "link_change" and self._link_controls(f)):
                continue
            ends = netem_faults.fault_ends(f, self._link_ifaces(f.target), shaped)
            if ends and have is None:
                have = self._probe_netem(*ends[0])
            why = netem_faults.refusal(i, f, bool(have), ends)
            if why:
                raise ComponentError(why)
            self.netem_ends[i] = ends

    def _probe_netem(self, node: str, iface: str) -> bool:
        """The kernel attaches netem to ``iface`` (added and deleted again)."""
        out = self.net[node].cmd(f"tc qdisc add dev {iface} root netem delay 1ms 2>&1 && "
                                 f"tc qdisc del dev {iface} root && echo NETEM_OK")
        return "NETEM_OK" in out

    def _watch(self, proc: Any) -> None:
        if self.wake is not None:
            threading.Thread(target=lambda: (proc.exited.wait(), self.wake()), daemon=True,  # type: ignore[misc]
                             name=f"watch:{proc.name}").start()

    def _switch_argv(self, name: str) -> list[str]:
        """The switch's own command line for a restart: no program (the
        controller pushes it), the run's pipeline cache (it loads the
        compiled program instead of compiling it)."""
        from p4mcc.emulation.mininet_net import PIPELINE_CACHE

        node = self.net[name]
        argv = node.plan.command(Path(node.program), seed=node.seed, link_control=node.link_control)
        argv[argv.index(str(Path(node.program)))] = "--no-p4"
        return argv + ["--pipeline-cache", str(Path(node.log_dir) / PIPELINE_CACHE)]

    def _spawn_standby(self, name: str) -> None:
        from p4mcc.emulation.mininet_net import spawn

        self._standbys_made += 1
        self.standby[name] = spawn(f"switch {name}", self._switch_argv(name) + ["--standby"],
                                   self.logs / f"{name}.standby{self._standbys_made}.log",
                                   ready_pattern=_STANDBY_READY, stdin=True)

    # scheduling ------------------------------------------------------------
    def _at(self, t: float, fn: Callable[[], None]) -> None:
        import bisect

        self._order += 1
        bisect.insort(self.actions, _Action(t, self._order, fn))

    def next_time(self) -> float | None:
        return self.actions[0].at if self.actions else None

    def poll(self, now: float) -> None:
        """Run what is due, then look for components that died."""
        self.now = now
        while self.actions and self.actions[0].at <= now:
            self.actions.pop(0).fn()
        self._supervise(now)

    def _ev(self, node: str, what: str, detail: str = "") -> None:
        self.rec.event(self.now, node, what, detail)

    # supervision -----------------------------------------------------------
    def _supervise(self, now: float) -> None:
        for s in self.started:
            p = s.process
            pid = p.proc.pid
            if p.exited.is_set() and pid not in self.reported and p.proc.returncode not in (0, None):
                self.reported.add(pid)
                if pid not in self.killed and hasattr(s.plan, "role"):
                    self._ev(s.plan.host, "agent_died", f"{p.name} exit {p.proc.returncode}")
        for name in self.plan.switches:
            node = self.net[name]
            proc = node.process
            if proc is None or not proc.exited.is_set() or name in self.expected_down:
                continue
            if proc.proc.pid not in self.killed:
                self._ev(name, "switch_died", f"exit {proc.proc.returncode}")
            if self.switch_restarts.get(name, 0) >= MAX_SWITCH_RESTARTS:
                self.expected_down.add(name)  # one that keeps dying stays down; the run goes on
                self._ev(name, "switch_given_up", f"{MAX_SWITCH_RESTARTS} restarts:\n{proc.last_lines(5)}")
                continue
            self._start_switch(name)

    def _start_switch(self, name: str) -> None:
        node = self.net[name]
        n = self.switch_restarts.get(name, 0) + 1
        self.switch_restarts[name] = n
        spare = self.standby.pop(name, None)
        if spare is not None and spare.alive:
            # the warm standby takes the ports and the address at once
            try:
                spare.proc.stdin.write(b"go\n")
                spare.proc.stdin.close()
            except (BrokenPipeError, OSError):
                spare = None
        else:
            spare = None
        if spare is not None:
            node.process = spare
            how = "standby"
        elif getattr(node, "target", "builtin") == "builtin":
            from p4mcc.emulation.mininet_net import READY, spawn

            log = self.logs / f"{name}.log"
            if log.exists():
                log.rename(self.logs / f"{name}.log.{n}")
            # start without the program: the controller pushes it, and the
            # pipeline cache has it compiled already
            node.process = spawn(f"switch {name}", self._switch_argv(name), log, ready_pattern=READY)
            how = "started"
        else:
            node.start([])
            node.await_links()
            how = "started"
        self._watch(node.process)
        self._ev(name, "switch_up", f"process restarted (pid {node.process.proc.pid}, {how})")
        if how == "standby" and self._more_crashes(name):
            self._spawn_standby(name)

    def _more_crashes(self, name: str) -> bool:
        return any(f.kind == "switch_crash" and f.target == name and any(t > self.now for t in
                   f.times(self.scenario.duration)) for f in self.scenario.faults)

    # helpers ---------------------------------------------------------------
    def _agents(self, f: Any, *, sender_too: bool = False) -> list[Any]:
        out = []
        for s in self.started:
            a = s.plan
            if not hasattr(a, "role") or a.host != f.target or not s.process.alive:
                continue
            if f.session is not None and a.session != f.session:
                continue
            if a.role == "send" and not sender_too:
                continue
            out.append(s)
        return out

    def _kill(self, s: Any, sig: int = signal.SIGKILL) -> None:
        pid = s.process.proc.pid
        self.killed.add(pid)
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            pass

    def _gate(self, items: list[Any]) -> None:
        """Start the killed agents' replacements now, warm by their restart
        (a Python process takes seconds to start on a busy machine)."""
        from p4mcc.emulation import warm

        for s in items:
            a = s.plan
            self.gates[s.process.proc.pid] = warm.gate(
                s.process.name, a.argv, self.logs / f"agent-{a.session}-{a.host}.restart{len(self.gates) + 1}.log",
                self.net[a.host])

    def _restart(self, items: list[Any]) -> None:
        for s in items:
            a = s.plan
            gate = self.gates.pop(s.process.proc.pid, None)
            if self.now < a.stop - 0.5:
                self.spawn_agent(a, self.now, gate if gate is not None and gate.alive else None)
                self._ev(a.host, "restart", a.session)
            elif gate is not None:
                self._end_gate(gate)

    @staticmethod
    def _end_gate(gate: Any) -> None:
        from p4mcc.emulation import warm

        warm.end(gate)

    def _iface_cmd(self, node: str, iface: str, up: bool) -> None:
        # a switch's node runs commands in the root namespace, a host's in its own
        self.net[node].cmd(f"ip link set dev {iface} {'up' if up else 'down'}")

    # faults ----------------------------------------------------------------
    def _inject(self, f: Any, i: int) -> None:
        # the "fault" row itself comes from scenario.faults.recovery_events, as in the simulator
        getattr(self, f"_{f.kind}")(f)

    def _agent_kill(self, f: Any) -> None:
        items = self._agents(f, sender_too=True)
        for s in items:
            self._kill(s)
        self._ev(f.target, "kill", ",".join(s.plan.session for s in items))
        if f.duration is not None:
            self._gate(items)
            self._at(self.now + f.duration, lambda: self._restart(items))

    def _receiver_crash(self, f: Any, *, senders: bool = False) -> None:
        iface = self.plan.hosts[f.target].iface
        self._iface_cmd(f.target, iface, up=False)  # silent: no IGMP leave gets out
        items = self._agents(f, sender_too=senders)
        for s in items:
            self._kill(s)
        self._ev(f.target, "crash", ",".join(s.plan.session for s in items))
        if f.duration is not None:
            self._gate(items)
            def back() -> None:
                self._iface_cmd(f.target, iface, up=True)
                self.net[f.target].cmd(f"ip route replace default dev {iface}")
                self.net[f.target].cmd(f"ip route replace 224.0.0.0/4 dev {iface}")
                self._restart(items)
            self._at(self.now + f.duration, back)

    def _sender_crash(self, f: Any) -> None:
        self._receiver_crash(f, senders=True)

    def _receiver_leave(self, f: Any) -> None:
        items = self._agents(f)
        for s in items:
            self._kill(s, signal.SIGTERM)
        self._ev(f.target, "graceful_leave", ",".join(s.plan.session for s in items))

    def _switch_crash(self, f: Any) -> None:
        node = self.net[f.target]
        proc = node.process
        self.expected_down.add(f.target)
        self.killed.add(proc.proc.pid)
        try:
            os.killpg(proc.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._ev(f.target, "switch_down", "SIGKILL; tables and data-plane state lost")

        def up() -> None:
            proc.exited.wait(5)
            self.expected_down.discard(f.target)
            self._start_switch(f.target)

        self._at(self.now + (f.duration if f.duration is not None else DEFAULT_DOWN_S), up)

    def _controller_restart(self, f: Any) -> None:
        take = bool(f.params.get("takeover"))
        if self.restart_controller is None:
            return
        if take:
            self.restart_controller(True)
            self._ev("controller", "controller_up", "second controller primary")
            return
        self.restart_controller(False)  # stop
        self._ev("controller", "controller_down", "restart")

        def up() -> None:
            self.restart_controller(True)
            self._ev("controller", "controller_up", "restarted")

        self._at(self.now + (f.duration if f.duration is not None else DEFAULT_DOWN_S), up)

    def _link_down(self, f: Any) -> None:
        if "from" in f.params:
            self._link_oneway(f)
            return
        ends = self._link_ifaces(f.target)
        for node, iface in ends:
            self._iface_cmd(node, iface, up=False)
        name = "--".join(f.target)
        self._ev(name, "link_down")
        if f.duration is not None:
            def up() -> None:
                for node, iface in ends:
                    self._iface_cmd(node, iface, up=True)
                self._ev(name, "link_up")
            self._at(self.now + f.duration, up)

    def _netem(self, f: Any) -> None:
        """Reorder, duplicate, corrupt or a change of delay/loss/queue: netem on
        the ends :meth:`_check_netem` chose, taken off after ``for``."""
        from p4mcc.emulation import netem_faults

        ends = self.netem_ends[self.scenario.faults.index(f)]
        link = next((l for l in self.scenario.topology.links if {l.a.node, l.b.node} == set(f.target)), None)
        args = netem_faults.netem_args(f, link)
        for node, iface in ends:
            for c in netem_faults.commands(iface, args, on=True):
                self.net[node].cmd(c)
        name = "--".join(f.target)
        kind = f.kind.removeprefix("link_")
        self._ev(name, "link_change" if f.kind == "link_change" else "impair_start", f"netem {args}")
        if f.duration is not None:
            def back() -> None:
                for node, iface in ends:
                    for c in netem_faults.commands(iface, args, on=False):
                        self.net[node].cmd(c)
                self._ev(name, "link_change" if f.kind == "link_change" else "impair_end",
                         "restored" if f.kind == "link_change" else kind)
            self._at(self.now + f.duration, back)

    _link_reorder = _link_duplicate = _link_corrupt = _netem

    def _link_controls(self, f: Any) -> list[tuple[Path, str]]:
        """``(socket, "PORT:DIR")`` of every direction the fault changes, when
        p4mcc's own link emulation carries each of them (the built-in switch;
        BMv2's link process); empty when one of them is the kernel's."""
        wanted = []
        for c in self.plan.cables:
            if {c.a, c.b} != set(f.target):
                continue
            for src, sport, dst, dport in ((c.a, c.a_port, c.b, c.b_port), (c.b, c.b_port, c.a, c.a_port)):
                if f.params.get("from", src) != src:
                    continue
                sw, port, way = (src, sport, "egress") if src in self.plan.switches else (dst, dport, "ingress")
                node = self.net[sw]
                if getattr(node, "target", "builtin") != "builtin" and port not in node.linkproc_ports:
                    return []
                wanted.append((node.link_control, f"{port}:{way}"))
        return wanted

    def _link_change(self, f: Any) -> None:
        """p4mcc's link emulation: the new values over its control socket, the
        start-up values back after ``for``.  A link tc shapes: a lower rate is
        tc's token bucket on both veth ends (see :data:`TBF_BURST_BYTES`);
        delay or loss netem (:meth:`_netem`)."""
        from p4mcc.emulation import netem_faults

        controls = self._link_controls(f)
        if controls:
            self._link_change_controlled(f, controls)
            return
        if netem_faults.needs_netem(f):
            self._netem(f)
            return
        ends = [e for e in self._link_ifaces(f.target) if e[0] == f.params.get("from", e[0])]
        rate = int(f.params["rate"])
        for node, iface in ends:
            self.net[node].cmd(f"tc qdisc replace dev {iface} root tbf rate {rate}bit "
                               f"burst {TBF_BURST_BYTES} latency {TBF_LATENCY_MS}ms")
        name = "--".join(f.target)
        self._ev(name, "link_change", f"rate={rate:g}")
        if f.duration is not None:
            def back() -> None:
                for node, iface in ends:
                    self.net[node].cmd(f"tc qdisc del dev {iface} root")
                self._ev(name, "link_change", "restored")
            self._at(self.now + f.duration, back)

    def _link_change_controlled(self, f: Any, controls: list[tuple[Path, str]]) -> None:
        from p4mcc.p4switch.linkctl import INITIAL, LinkControlError, request

        p = f.params
        keys = {"rate": lambda v: f"{v:.0f}bps", "delay": lambda v: f"{v * 1e6:.0f}us",
                "loss": lambda v: f"{v:.6g}", "queue": lambda v: str(int(v))}
        change = ",".join(f"{k}={fmt(p[k])}" for k, fmt in keys.items() if k in p)
        name = "--".join(f.target)

        def send(settings: str) -> str:
            errors = []
            for path, where in controls:
                try:
                    request(path, f"{where}:{settings}")
                except LinkControlError as e:
                    errors.append(str(e))
            return "; ".join(errors)

        err = send(change)
        self._ev(name, "link_change", change + (f" (not applied: {err})" if err else ""))
        if f.duration is not None:
            def back() -> None:
                err = send(INITIAL)
                self._ev(name, "link_change", "restored" + (f" (not applied: {err})" if err else ""))
            self._at(self.now + f.duration, back)

    def _link_oneway(self, f: Any) -> None:
        src = f.params["from"]
        node, iface = next(e for e in self._link_ifaces(f.target) if e[0] == src)
        dst = f.target[1] if f.target[0] == src else f.target[0]
        name = f"{src}->{dst}"
        for c in oneway_commands(iface, down=True):
            self.net[node].cmd(c)
        self._ev(name, "link_down")
        if f.duration is not None:
            def up() -> None:
                for c in oneway_commands(iface, down=False):
                    self.net[node].cmd(c)
                self._ev(name, "link_up")
            self._at(self.now + f.duration, up)

    def _controller_cut(self, f: Any) -> None:
        addr = self.plan.switches[f.target].grpc_addr
        node = self.net[f.target]
        for c in cut_commands(addr, on=True):
            node.cmd(c)
        self.cut_rules += cut_commands(addr, on=False)
        self._ev(f.target, "controller_cut", "stream reset")

        def back() -> None:
            for c in cut_commands(addr, on=False):
                node.cmd(c)
                self.cut_rules.remove(c)
            self._ev(f.target, "controller_reconnect")

        self._at(self.now + (f.duration if f.duration is not None else DEFAULT_DOWN_S), back)

    def _switch_slow(self, f: Any) -> None:
        pid = self.net[f.target].process.proc.pid
        dur = f.duration if f.duration is not None else self.scenario.duration - self.now
        cpu = f.params["cpu"]
        threading.Thread(target=duty_cycle, args=(pid, cpu, dur, self.ending), daemon=True,
                         name=f"slow:{f.target}").start()
        self._ev(f.target, "slow_start", f"cpu={cpu:g}")

    def _disk_full(self, f: Any) -> None:
        self._ev("disk", "disk_full", f"free={f.params.get('free', 0)} bytes for the results")

    def _link_ifaces(self, pair: tuple[str, str]) -> list[tuple[str, str]]:
        for c in self.plan.cables:
            if {c.a, c.b} == set(pair):
                return [(c.a, c.a_iface), (c.b, c.b_iface)]
        return []

    @staticmethod
    def _rogue_end(dur: float) -> list[str]:
        """The rogue's end as the fault's: ``dur`` from now on the machine's monotonic clock, which
        every Mininet host shares, so a rogue that starts late (its interpreter and imports on a
        loaded host) does not lie past the fault's end."""
        return ["--until", f"{time.monotonic() + dur:.6f}"]

    def _rogue(self, f: Any, mode: str) -> None:
        from p4mcc.emulation.mininet_net import spawn

        s = next(x for x in self.scenario.sessions if x.name == f.session)
        h = self.plan.hosts[f.target]
        dur = f.duration if f.duration is not None else self.scenario.duration - self.now
        argv = [sys.executable, "-m", "p4mcc.hosts.rogue", mode, "--proto", s.protocol, "--group", s.group,
                "--port", str(s.port), "--session", str(s.session_id), "--local", h.ip,
                "--sender", self.plan.hosts[s.sender].ip, *self._rogue_end(dur)]
        if "rate" in f.params:
            argv += ["--rate", str(f.params["rate"])]
        if "claim" in f.params:
            argv += ["--claim", str(f.params["claim"])]
        if "victim" in f.params:
            argv += ["--victim", self.plan.hosts[f.params["victim"]].ip]
        if f.params.get("fold"):
            argv += ["--fold"]
        if f.params.get("ahead"):
            argv += ["--ahead", str(f.params["ahead"])]
        p = spawn(f"rogue {mode} {f.target}", argv, self.logs / f"rogue-{f.target}-{len(self.rogues)}.log",
                  node=self.net[f.target])
        self.rogues.append(p)
        self._ev(f.target, "rogue_start", f"{mode} {s.name}")

    def _feedback_flood(self, f: Any) -> None:
        self._rogue(f, "flood")

    def _false_report(self, f: Any) -> None:
        self._rogue(f, "false_report")

    def _spoof_clr(self, f: Any) -> None:
        self._rogue(f, "spoof_clr")

    def _forged_ack(self, f: Any) -> None:
        self._rogue(f, "forged_ack")

    def _malformed(self, f: Any) -> None:
        from p4mcc.emulation.mininet_net import spawn

        if isinstance(f.target, tuple):
            sw, port = f.target
            host = next((h for h in self.plan.hosts.values() if h.switch == sw and h.switch_port == port), None)
            if host is None:
                self._ev(f"{sw}-p{port}", "error", "malformed: no host on that port to send from")
                return
        else:
            host = self.plan.hosts[f.target]
        dur = f.duration if f.duration is not None else 1.0
        argv = [sys.executable, "-m", "p4mcc.hosts.rogue", "malformed", "--local", host.ip, "--iface", host.iface,
                "--rate", str(f.params.get("rate", 1000.0)), *self._rogue_end(dur)]
        p = spawn(f"malformed {host.name}", argv, self.logs / f"malformed-{host.name}-{len(self.rogues)}.log",
                  node=self.net[host.name])
        self.rogues.append(p)
        self._ev(host.name, "malformed", f"{dur:g}s")

    def stop(self) -> None:
        self.ending.set()  # a starved switch runs again
        for c in list(self.cut_rules):
            node = next(iter(self.plan.switches))
            self.net[node].cmd(c)
        self.cut_rules.clear()
        for p in self.rogues:
            p.stop(timeout=3)
        for p in [*self.standby.values(), *self.gates.values()]:
            self._end_gate(p)  # a standby told nothing ends on its own
        self.standby.clear()
        self.gates.clear()


def wait_s(now: float, faults: "EmuFaults | None") -> float | None:
    """Seconds until the next fault action (None: none pending)."""
    if faults is None:
        return None
    t = faults.next_time()
    return None if t is None else max(0.0, t - now)

