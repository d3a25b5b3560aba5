"""Fault injection in virtual time, and the simulator's stand-in controller.

:class:`SimControl` plays the part the controller plays in emulation: it
holds each switch's desired state, runs the IGMP querier when memberships
age, and after a switch restart writes the state back and re-queries the
hosts (so memberships come back without waiting for the next periodic
query) after :data:`RESTORE_DELAY_S`, the time a controller needs to see the
switch come back and write it (``docs/faults.md`` has the measured value in
emulation).  While the controller is down (``controller_restart``) nothing
is restored and no query goes out.

:class:`FaultInjector` schedules every instance of every fault of a
scenario (``scenario/faults.py``) and records what it did in the run's
events: ``switch_down``/``switch_up``/``restored``, ``link_down``/``link_up``,
``link_change``, ``crash``/``restart``/``kill``/``graceful_leave``, ``rogue_start``/
``rogue_stop``, ``malformed`` (with the frame count),
``controller_down``/``controller_up``, ``impair_start``/``impair_end`` (with
the frames hit), ``controller_cut``/``controller_reconnect``, ``wiped`` and
``slow_start``/``slow_end`` (with the frames a starved switch dropped).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from p4mcc.netsim import packets as pk

if TYPE_CHECKING:
    from p4mcc.hosts.core import Endpoint
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.network import Network
    from p4mcc.reporting.results import Recorder
    from p4mcc.scenario.faults import Fault
    from p4mcc.scenario.model import Scenario


class SimRun(Protocol):
    """What faults use of a run (:class:`netsim.run.SimRun`, which imports this module)."""

    sim: Simulator
    net: Network
    recorder: Recorder
    agents: dict[str, Endpoint]
    scenario: Scenario

#: Seconds from a switch's restart to the controller's restored state and query.
RESTORE_DELAY_S = 0.5
DEFAULT_DOWN_S = 1.0
#: Period of the stand-in controller's read-back of every switch (run when a
#: scenario has a ``switch_wipe``): a switch that lost its tables while
#: running is found and written again within this time.
AUDIT_S = 1.0
#: A starved switch (``switch_slow``) runs ``cpu`` of every period: the
#: scheduler quantum of a cgroup CPU limit (``cpu.max``'s default period).
SLOW_PERIOD_S = 0.1
#: Frames a stopped switch's ports hold (its sockets' buffers); more are dropped.
SLOW_BACKLOG_FRAMES = 1000


def _query_frame(max_resp_ds: int) -> bytes:
    from p4mcc.controller.querier import general_query

    return general_query(max_resp_ds=max_resp_ds)


@dataclass
class SimControl:
    """The controller's part in a simulation (see the module doc)."""

    run: "SimRun"
    states: dict[str, Any] = field(default_factory=dict)
    query_interval: float | None = None
    up: bool = True
    #: switches restarted while the controller was down: restored when it is back
    waiting: set[str] = field(default_factory=set)
    queries_sent: int = 0
    #: switch -> the switches whose proxied joins climb through it (``Plan.below``)
    below: dict[str, Any] = field(default_factory=dict)
    #: switches whose stream to the controller is cut (``controller_cut``)
    cut: set[str] = field(default_factory=set)
    #: switches in a rejoin window (their eager state is meant; the audit leaves them)
    rejoining: set[str] = field(default_factory=set)

    def start(self) -> None:
        if self.query_interval:
            self.run.sim.after(self.query_interval, self._periodic)

    def _periodic(self) -> None:
        if self.up:
            from p4mcc.controller.querier import max_response_ds

            self.query_all(max_response_ds(self.query_interval))  # type: ignore[arg-type]
        self.run.sim.after(self.query_interval, self._periodic)  # type: ignore[arg-type]

    def query(self, switch: str, max_resp_ds: int) -> None:
        """Flood a general query out of ``switch``'s host ports (what a PacketOut with flood does)."""
        node = self.run.net.switches[switch]
        if getattr(node, "down", False) or switch in self.cut:
            return
        frame = _query_frame(max_resp_ds)
        for port, peer in sorted(self.run.net.adjacency.get(switch, {}).items()):
            if peer in self.run.net.hosts:
                ch = node.ports.get(port)
                if ch is not None:
                    ch.send(frame)
                    self.queries_sent += 1

    def query_all(self, max_resp_ds: int) -> None:
        for sw in self.run.net.switches:
            self.query(sw, max_resp_ds)

    def restore(self, switch: str) -> None:
        """Write ``switch``'s desired state back and re-query its hosts."""
        node = self.run.net.switches[switch]
        if getattr(node, "down", False):
            return
        if not self.up or switch in self.cut:
            self.waiting.add(switch)
            return
        st = self.states.get(switch)
        if st is not None and hasattr(node, "sw"):
            from p4mcc.controller.local import LocalApplier

            LocalApplier(node.sw, switch).sync(st)
        elif hasattr(node, "upstream"):
            from p4mcc.netsim.switches import _configure_model

            _configure_model(self.run.net, self.run.scenario)
        self.run.recorder.event(self.run.sim.now, switch, "restored", "tables written, hosts re-queried")
        self._requery(switch)
        for child in sorted(self.below.get(switch, ())):
            self._rejoin(child)

    def _requery(self, switch: str) -> None:
        """The restore's general queries to ``switch``'s hosts (``controller.querier.REQUERY_*``)."""
        from p4mcc.controller.querier import REQUERY_COUNT, REQUERY_GAP_S, REQUERY_MAX_RESP_DS

        for i in range(REQUERY_COUNT):
            self.run.sim.after(i * REQUERY_GAP_S, self.query, switch, REQUERY_MAX_RESP_DS)

    def _rejoin(self, switch: str) -> None:
        """Have ``switch`` proxy its hosts' joins again, toward a restored switch above it
        (``controller.querier.rejoin_state``): every report proxied for a while, and its hosts queried."""
        from p4mcc.controller.local import LocalApplier
        from p4mcc.controller.querier import REJOIN_WINDOW_S, rejoin_state

        node = self.run.net.switches[switch]
        st = self.states.get(switch)
        if st is None or not hasattr(node, "sw") or getattr(node, "down", False):
            return
        LocalApplier(node.sw, switch).sync(rejoin_state(st))
        self.run.recorder.event(self.run.sim.now, switch, "rejoin", "every report proxied, hosts re-queried")
        self._requery(switch)
        self.rejoining.add(switch)

        def settle() -> None:
            self.rejoining.discard(switch)
            if not getattr(node, "down", False):
                LocalApplier(node.sw, switch).sync(st)

        self.run.sim.after(REJOIN_WINDOW_S, settle)

    def controller_down(self) -> None:
        self.up = False

    def controller_up(self) -> None:
        self.up = True
        for sw in sorted(self.waiting - self.cut):
            self.restore(sw)
        self.waiting &= self.cut

    def reconnect(self, switch: str) -> None:
        """A cut stream comes back: the controller's ready handler reads the
        switch back, writes the diff and re-queries (``Controller._ready``)."""
        self.cut.discard(switch)
        self.waiting.discard(switch)
        self.restore(switch)

    def start_audit(self) -> None:
        """Read every switch back each :data:`AUDIT_S` and write what it lost."""
        self.run.sim.after(AUDIT_S, self._audit)

    def _audit(self) -> None:
        from p4mcc.controller.local import LocalApplier

        for name, node in sorted(self.run.net.switches.items()):
            st = self.states.get(name)
            if (st is None or not hasattr(node, "sw") or getattr(node, "down", False) or not self.up
                    or name in self.cut or name in self.rejoining):
                continue
            # the interpreter does not read digest configs back: those are rewritten, not lost
            ops = LocalApplier(node.sw, name).sync(st)
            if any(type(o.entity).__name__ != "DigestConfig" for o in ops):
                self.run.recorder.event(self.run.sim.now, name, "restored", "audit: lost tables written")
                self._requery(name)
                for child in sorted(self.below.get(name, ())):
                    self._rejoin(child)
        self.run.sim.after(AUDIT_S, self._audit)


class FaultInjector:
    """Schedules a scenario's faults on a built :class:`~netsim.run.SimRun`."""

    def __init__(self, run: "SimRun", scenario: "Scenario", control: SimControl,
                 make_agent: Callable[[Any, str, str], Any]) -> None:
        self.run = run
        self.scenario = scenario
        self.control = control
        self.make_agent = make_agent
        self.rng = run.sim.rng("faults")
        self.malformed_sent = 0
        self.rogues: list[Any] = []

    # helpers ---------------------------------------------------------------
    def _ev(self, node: str, what: str, detail: str = "") -> None:
        self.run.recorder.event(self.run.sim.now, node, what, detail)

    def _sessions(self, f: "Fault", host: str, *, sender_too: bool = False) -> list[Any]:
        return [s for s in self.scenario.sessions if (f.session is None or s.name == f.session)
                and (host in s.receivers or (sender_too and host == s.sender))]

    def _slots(self, host: str, port: int) -> list[Any]:
        return [sl for sl in self.run.net.hosts[host]._udp.get(port, []) if sl.running]

    def _channels(self, f: "Fault") -> list[Any]:
        """The link's directions the fault hits: both, or with ``from`` the one leaving that end."""
        a, b = f.target
        src = f.params.get("from")
        for l in self.run.net.links.values():
            names = {getattr(l.a, "name", None), getattr(l.b, "name", None)}
            if names == {a, b}:
                if src is None:
                    return [l.ab, l.ba]
                return [l.ab if getattr(l.a, "name", None) == src else l.ba]
        return []

    def _link_name(self, f: "Fault") -> str:
        src = f.params.get("from")
        if src is None:
            return "--".join(f.target)
        return f"{src}->{f.target[1] if f.target[0] == src else f.target[0]}"

    def schedule(self) -> None:
        end = self.scenario.duration
        if any(f.kind == "switch_wipe" for f in self.scenario.faults):
            self.control.start_audit()
        for f in self.scenario.faults:
            if f.kind == "disk_full":
                from p4mcc.scenario.faults import fill_disk

                fill_disk(self.run.recorder, f.params.get("free", 0))
        for i, f in enumerate(self.scenario.faults):
            fn = getattr(self, f"_{f.kind}")
            for t in f.times(end):
                self.run.sim.at(t, fn, f)

    # hosts and agents ------------------------------------------------------
    def _restart_agents(self, f: "Fault", host: str, sessions: list[Any]) -> None:
        for s in sessions:
            role = "sender" if host == s.sender else "receiver"
            agent = self.make_agent(s, role, host)
            label = f"{s.name}/{host}"
            stop = s.stop if role == "sender" else s.leave_at.get(host, s.stop)
            self.run.net.hosts[host].add_endpoint(agent, s.port, label=label, start_at=self.run.sim.now,
                                                  stop_at=stop)
            self.run.agents[label] = agent
        self._ev(host, "restart", ",".join(s.name for s in sessions))

    def _receiver_crash(self, f: "Fault") -> None:
        """The host dies: agents stop silently, no leave, no IGMP, frames dropped."""
        self._crash(f, self._sessions(f, f.target))

    def _sender_crash(self, f: "Fault") -> None:
        """The sender's host dies as a receiver's does (:meth:`_receiver_crash`);
        after ``for`` it reboots and a fresh sender starts its session again."""
        self._crash(f, [s for s in self.scenario.sessions
                        if (f.session is None or s.name == f.session) and s.sender == f.target])

    def _crash(self, f: "Fault", sessions: list[Any]) -> None:
        host = self.run.net.hosts[f.target]
        for s in sessions:
            for sl in self._slots(f.target, s.port):
                sl.running = False
                sl.token += 1
        host.crashed = True
        saved = host.receive
        host.receive = lambda port, frame: None  # type: ignore[method-assign]
        self._ev(f.target, "crash", ",".join(s.name for s in sessions))
        if f.duration is not None:
            def back() -> None:
                host.receive = saved  # type: ignore[method-assign]
                host.crashed = False
                host.groups.clear()  # a rebooted kernel holds no memberships
                host._pending.clear()
                self._restart_agents(f, f.target, sessions)
            self.run.sim.after(f.duration, back)

    def _receiver_leave(self, f: "Fault") -> None:
        """Graceful: the core's own leave (``close``), then the kernel's."""
        host = self.run.net.hosts[f.target]
        sessions = self._sessions(f, f.target)
        for s in sessions:
            for sl in self._slots(f.target, s.port):
                host.stop_endpoint(sl)
        self._ev(f.target, "graceful_leave", ",".join(s.name for s in sessions))

    def _agent_kill(self, f: "Fault") -> None:
        """SIGKILL: no protocol leave; the kernel closes the socket and leaves its groups."""
        host = self.run.net.hosts[f.target]
        sessions = self._sessions(f, f.target, sender_too=True)
        for s in sessions:
            for sl in self._slots(f.target, s.port):
                host.stop_endpoint(sl, graceful=False)
        self._ev(f.target, "kill", ",".join(s.name for s in sessions))
        if f.duration is not None:
            self.run.sim.after(f.duration, self._restart_agents, f, f.target, sessions)

    def _rogue(self, f: "Fault", mode: str) -> None:
        from p4mcc.hosts.rogue import Rogue

        s = next(x for x in self.scenario.sessions if x.name == f.session)
        host = self.run.net.hosts[f.target]
        sender_ip = self.run.net.hosts[s.sender].ip
        stop = self.run.sim.now + (f.duration if f.duration is not None else self.scenario.duration)
        victim = f.params.get("victim")
        r = Rogue(mode, s.protocol, s.session_id, s.group, sender_ip, host.ip, s.port,
                  rate=f.params.get("rate"), claim_bps=f.params.get("claim", 8_000.0), stop_at=stop,
                  victim=self.run.net.hosts[victim].ip if victim else None,
                  fold=f.params.get("fold", False), ahead=f.params.get("ahead", 0))
        # its own port, so the host's honest agent keeps its socket; a forged
        # ACK needs the data's sequence numbers, so it shares the session's
        # port as the Mininet rogue does (both sockets get the group's data)
        port = s.port if mode == "forged_ack" else 40_000 + len(self.rogues)
        host.add_endpoint(r, port, label=f"{s.name}/{f.target}/rogue",
                          start_at=self.run.sim.now, stop_at=min(stop, self.scenario.duration))
        self.rogues.append(r)
        self._ev(f.target, "rogue_start", f"{mode} {s.name}")
        self.run.sim.at(min(stop, self.scenario.duration), lambda: self._ev(
            f.target, "rogue_stop", f"{mode} {s.name} sent={r.sent}"))

    def _feedback_flood(self, f: "Fault") -> None:
        self._rogue(f, "flood")

    def _false_report(self, f: "Fault") -> None:
        self._rogue(f, "false_report")

    def _spoof_clr(self, f: "Fault") -> None:
        self._rogue(f, "spoof_clr")

    def _forged_ack(self, f: "Fault") -> None:
        self._rogue(f, "forged_ack")

    # switches and the controller -------------------------------------------
    def _switch_crash(self, f: "Fault") -> None:
        """Down for ``for`` seconds; back empty (tables, registers, membership lost)."""
        name = f.target
        node = self.run.net.switches[name]
        node.down = True
        saved = node.receive
        node.receive = lambda port, frame: None
        self._ev(name, "switch_down", "tables and data-plane state lost")

        def up() -> None:
            node.down = False
            node.receive = saved
            if hasattr(node, "reset"):
                node.reset()
            elif hasattr(node, "members"):
                node.members.clear()
                node.last_report.clear()
                node.upstream.clear()
                node.routes.clear()
                self.run.net.install_routes()
            self._ev(name, "switch_up", "empty")
            self.run.sim.after(RESTORE_DELAY_S, self.control.restore, name)

        self.run.sim.after(f.duration if f.duration is not None else DEFAULT_DOWN_S, up)

    def _controller_restart(self, f: "Fault") -> None:
        take = bool(f.params.get("takeover"))
        self.control.controller_down()
        self._ev("controller", "controller_down", "takeover by a second controller" if take else "restart")

        def up() -> None:
            self.control.controller_up()
            self._ev("controller", "controller_up", "second controller primary" if take else "restarted")

        self.run.sim.after(f.duration if f.duration is not None else DEFAULT_DOWN_S, up)

    # links -----------------------------------------------------------------
    def _link_down(self, f: "Fault") -> None:
        chans = self._channels(f)
        for ch in chans:
            ch.set_up(False)
        name = self._link_name(f)
        self._ev(name, "link_down")
        if f.duration is not None:
            def up() -> None:
                for ch in chans:
                    ch.set_up(True)
                self._ev(name, "link_up")
            self.run.sim.after(f.duration, up)

    def _link_change(self, f: "Fault") -> None:
        from p4mcc.netsim.link import make_loss

        chans = self._channels(f)
        name = self._link_name(f)
        saved = [(ch.rate_bps, ch.delay_s, ch.loss, ch.queue_packets) for ch in chans]
        for ch in chans:
            if "rate" in f.params:
                ch.set_rate(f.params["rate"])
            if "delay" in f.params:
                ch.delay_s = f.params["delay"]
            if "loss" in f.params:
                ch.set_loss(make_loss(f.params["loss"], self.run.sim.rng(f"fault/{ch.name}/{self.run.sim.now}")))
            if "queue" in f.params:
                ch.queue_packets = f.params["queue"]
        self._ev(name, "link_change", " ".join(f"{k}={v:g}" for k, v in sorted(f.params.items())))
        if f.duration is not None:
            def back() -> None:
                for ch, (rate, delay, loss, q) in zip(chans, saved):
                    ch.set_rate(rate)
                    ch.delay_s = delay
                    ch.set_loss(loss)
                    ch.queue_packets = q
                self._ev(name, "link_change", "restored")
            self.run.sim.after(f.duration, back)

    def _impair(self, f: "Fault") -> None:
        chans = self._channels(f)
        name = self._link_name(f)
        mode = f.kind.removeprefix("link_")
        rng = random.Random(self.rng.random())
        proxies = []
        for ch in chans:
            proxy = Impairment(self.run.sim, ch.dst, mode, f.params["fraction"], rng, f.params.get("delay", 0.0))
            ch.dst = proxy
            proxies.append((ch, proxy))
        self._ev(name, "impair_start", f"{mode} {f.params['fraction']:g}")
        if f.duration is not None:
            def back() -> None:
                for ch, proxy in proxies:
                    proxy.remove_from(ch)
                self._ev(name, "impair_end", f"{mode} frames={sum(p.hit for _, p in proxies)}")
            self.run.sim.after(f.duration, back)

    _link_reorder = _link_duplicate = _link_corrupt = _impair

    # the controller's stream, a switch's tables and CPU ----------------------
    def _controller_cut(self, f: "Fault") -> None:
        """The stream to one switch is reset and cannot come back for ``for``
        seconds; the switch keeps forwarding with what it holds."""
        self.control.cut.add(f.target)
        self._ev(f.target, "controller_cut", "stream reset")

        def back() -> None:
            self._ev(f.target, "controller_reconnect")
            self.control.reconnect(f.target)

        self.run.sim.after(f.duration if f.duration is not None else DEFAULT_DOWN_S, back)

    def _switch_wipe(self, f: "Fault") -> None:
        """The switch keeps running with its tables and PRE groups gone
        (registers kept); the stand-in controller's audit finds it."""
        node = self.run.net.switches[f.target]
        if hasattr(node, "sw"):
            from p4mcc.controller.local import LocalApplier
            from p4mcc.controller.state import SwitchState

            n = len(LocalApplier(node.sw, f.target).sync(SwitchState()))
        else:
            n = len(node.routes) + len(node.upstream)
            node.routes.clear()
            node.upstream.clear()
        self._ev(f.target, "wiped", f"entities={n}")

    def _switch_slow(self, f: "Fault") -> None:
        """The switch runs ``cpu`` of every :data:`SLOW_PERIOD_S`; frames that
        arrive while it is stopped wait (up to :data:`SLOW_BACKLOG_FRAMES`)."""
        node = self.run.net.switches[f.target]
        saved = node.receive
        sim = self.run.sim
        run_s = f.params["cpu"] * SLOW_PERIOD_S
        end = sim.now + (f.duration if f.duration is not None else self.scenario.duration)
        backlog: list[tuple[int, bytes]] = []
        state = {"awake": True, "dropped": 0, "on": True}

        def receive(port: int, frame: bytes) -> None:
            if state["awake"] or not state["on"]:
                saved(port, frame)
            elif len(backlog) < SLOW_BACKLOG_FRAMES:
                backlog.append((port, frame))
            else:
                state["dropped"] += 1

        t0 = sim.now

        def wake(k: int) -> None:
            state["awake"] = True
            while backlog:
                saved(*backlog.pop(0))
            if sim.now + 1e-9 >= end:
                state["on"] = False
                node.receive = saved
                self._ev(f.target, "slow_end", f"dropped={state['dropped']}")
                return
            sim.at(min(t0 + k * SLOW_PERIOD_S + run_s, end), sleep, k)

        def sleep(k: int) -> None:
            state["awake"] = False
            sim.at(min(t0 + (k + 1) * SLOW_PERIOD_S, end), wake, k + 1)

        node.receive = receive
        self._ev(f.target, "slow_start", f"cpu={f.params['cpu']:g}")
        sim.at(min(t0 + run_s, end), sleep, 0)

    def _disk_full(self, f: "Fault") -> None:
        self._ev("disk", "disk_full", f"free={f.params.get('free', 0)} bytes for the results")

    # malformed frames --------------------------------------------------------
    def _malformed(self, f: "Fault") -> None:
        rate = f.params.get("rate", 1000.0)
        dur = f.duration if f.duration is not None else 1.0
        n = max(1, int(rate * dur))
        size = int(f.params.get("size", 64))
        if isinstance(f.target, tuple):
            sw, port = f.target
            node = self.run.net.switches[sw]
            src_mac, src_ip = b"\x02\x00\x00\x00\xee\x01", pk.ip_int("10.255.0.1")
            inject = lambda fr: node.receive(port, fr)  # noqa: E731 - one-liner target
            where = f"{sw}-p{port}"
        else:
            host = self.run.net.hosts[f.target]
            src_mac, src_ip = host.mac, host.ip_int
            inject = host.send_frame
            where = f.target
        any_host = next(iter(self.run.net.hosts.values()))
        rng = random.Random(self.rng.random())
        from p4mcc.hosts.rogue import malformed_frames

        def one(i: int) -> None:
            inject(malformed_frames(rng, src_mac, any_host.mac, src_ip, any_host.ip_int, size))
            self.malformed_sent += 1
            if i + 1 == n:
                self._ev(where, "malformed_end", f"frames={n}")

        self._ev(where, "malformed", f"frames={n} over {dur:g}s")
        for i in range(n):
            self.run.sim.after(i / rate, one, i)


class Impairment:
    """A link direction's receiving end that reorders, duplicates or corrupts
    a ``fraction`` of the frames that arrive (``link_reorder``,
    ``link_duplicate``, ``link_corrupt``), in place of the channel's
    destination while the fault lasts.

    * reorder: the frame is held ``delay`` seconds; later frames overtake it;
    * duplicate: the frame arrives twice;
    * corrupt: one random bit of its UDP payload (or, for a frame that is not
      UDP, of everything after the Ethernet header) is flipped.  p4mcc
      messages carry no checksum of their own and the simulator's UDP
      checksum is zero (RFC 768), so the damaged bytes reach the P4 program
      and the receiving core: a damaged p4mcc header is dropped and counted
      by the core's codec (``malformed``), a damaged body field arrives as a
      wrong value.
    """

    def __init__(self, sim: "Simulator", inner: Any, mode: str, fraction: float, rng: random.Random,
                 delay: float = 0.0) -> None:
        self.sim, self.inner, self.mode = sim, inner, mode
        self.fraction, self.rng, self.delay = fraction, rng, delay
        self.hit = 0
        self.active = True

    def receive(self, port: int, frame: bytes) -> None:
        if not self.active or self.rng.random() >= self.fraction:
            self.inner.receive(port, frame)
            return
        self.hit += 1
        if self.mode == "duplicate":
            self.inner.receive(port, frame)
            self.inner.receive(port, frame)
        elif self.mode == "reorder":
            self.sim.after(self.delay, self.inner.receive, port, frame)
        else:
            self.inner.receive(port, corrupt(frame, self.rng))

    def remove_from(self, ch: Any) -> None:
        """Take this impairment out of ``ch``'s chain of destinations (frames it holds still arrive)."""
        self.active = False
        if ch.dst is self:
            ch.dst = self.inner
            return
        node = ch.dst
        while isinstance(node, Impairment):
            if node.inner is self:
                node.inner = self.inner
                return
            node = node.inner


def corrupt(frame: bytes, rng: random.Random) -> bytes:
    """``frame`` with one random bit flipped in its UDP payload (see :class:`Impairment`)."""
    p = pk.parse(frame)
    if p is not None and p.proto == pk.PROTO_UDP and p.payload:
        start = 14 + (frame[14] & 0xF) * 4 + 8  # after Ethernet, IPv4 and UDP headers
        span = len(p.payload)
    else:
        start, span = 14, max(0, len(frame) - 14)
    if span <= 0:
        return frame
    bit = rng.randrange(span * 8)
    b = bytearray(frame)
    b[start + bit // 8] ^= 1 << (bit % 8)
    return bytes(b)

