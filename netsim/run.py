"""Run a whole scenario in the simulator and write the results folder.

:func:`run_scenario` builds the network, creates every session's agents
through ``hosts.registry`` (the same factories the UDP driver uses), starts
TCP flows, samples throughput/loss/RTT/feedback every metrics interval into a
:class:`reporting.results.Recorder`, and writes the shared results layout.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from p4mcc.hosts.core import Delivered, Endpoint, Metric
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.host import HostNode
from p4mcc.netsim.network import Network, build_network
from p4mcc.netsim.switches import SwitchChoice, model_choice
from p4mcc.netsim.tcp import TcpReceiver, TcpSender
from p4mcc.reporting import results as R
from p4mcc.scenario.model import (SEND_PATH_AUTO, SEND_PATH_FLOOR, SEND_PATH_MAX, Scenario, Session,
                            fit_sessions_to_links)

#: agent_factory(session, role, host_name, host_ip, sender_ip, seed) -> Endpoint
AgentFactory = Callable[[Session, str, str, str, str, int], Endpoint]


class SimError(RuntimeError):
    """A scenario that cannot run (unknown protocol, bad parameters, ...)."""


def registry_factory(sess: Session, role: str, host: str, ip: str, sender_ip: str, seed: int,
                     *, switch_assists: bool = True) -> Endpoint:
    """Build an agent through ``hosts.registry`` (the shared way).

    ``switch_assists`` False: the switches only replicate (the model switch),
    so no session is assisted whatever its ``assistance`` says.  The agent
    runs the session's effective rule list (its ``profile`` with its
    ``rules`` switched), the list ``summary.json`` records.
    """
    from p4mcc.hosts import registry

    try:
        proto = registry.get(sess.protocol)
        params = proto.parse_params(sess.params)
        cfg = registry.SessionConfig(session_id=sess.session_id, group=sess.group, port=sess.port,
                                     sender=sender_ip, local=ip, params=params, seed=seed,
                                     assisted=switch_assists and proto.assisted(sess.assistance),
                                     rules=proto.resolve_rules(sess.profile, sess.rules))
        return proto.sender(cfg) if role == "sender" else proto.receiver(cfg)
    except (registry.ParamError, ImportError, AttributeError) as e:
        raise SimError(f"session {sess.name!r} ({sess.protocol}): {e}") from e


def _seed_for(seed: int, label: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/agent/{label}".encode()).digest()[:4], "big")


@dataclass
class _Flow:
    name: str
    sender: TcpSender
    receiver: TcpReceiver
    last_bytes: int = 0
    last_sent: int = 0
    last_retx: int = 0


@dataclass
class SimRun:
    """Everything a finished run leaves behind (for tests and benchmarks)."""

    sim: Simulator
    net: Network
    recorder: R.Recorder
    agents: dict[str, Endpoint] = field(default_factory=dict)
    tcp: dict[str, _Flow] = field(default_factory=dict)
    wall_s: float = 0.0
    switch_kind: str = "model"
    summary: dict[str, Any] = field(default_factory=dict)
    #: the stand-in controller and the fault injector (netsim/faults.py)
    control: Any = None
    faults: Any = None
    #: the liveness check (netsim/liveness.py): ``stall`` events and counts
    liveness: Any = None


#: The frame whose service time ``auto`` takes (bits): a full Ethernet payload.
AUTO_FRAME_BITS = 1500 * 8


def send_path_time(value: float | str, link_rates_bps: list[float]) -> float:
    """A send-path time in seconds; ``auto`` (``scenario.model.SEND_PATH_AUTO``)
    is one 1500-byte frame's service time on the slowest link, Floyd and
    Jacobson's size, kept between the 0.5 ms floor (``SEND_PATH_FLOOR``) and 100 ms."""
    if value != SEND_PATH_AUTO:
        return float(value)
    slowest = min((r for r in link_rates_bps if r > 0), default=0.0)
    if slowest <= 0:
        return SEND_PATH_FLOOR
    return min(SEND_PATH_MAX, max(SEND_PATH_FLOOR, AUTO_FRAME_BITS / slowest))


def _send_jitters(scenario: Scenario) -> dict[str, float]:
    """Each host's send-path time: TCP flows' hosts ``tcp_jitter``, sessions' ``agent_jitter``.

    A host that is both gets the larger, as one kernel serves both.
    """
    rates = [l.rate_bps for l in scenario.topology.links]
    tcp_jitter = send_path_time(scenario.tcp_jitter, rates)
    agent_jitter = send_path_time(scenario.agent_jitter, rates)
    out: dict[str, float] = {}
    for f in scenario.tcp_flows:
        for h in (f.src, f.dst):
            out[h] = max(out.get(h, 0.0), tcp_jitter)
    for s in scenario.sessions:
        for h in (s.sender, *s.receivers):
            out[h] = max(out.get(h, 0.0), agent_jitter)
    return out


def _sample_links(net: Network, limit: int = 64) -> list[str]:
    """Links worth a queue time series: switch-to-switch links (at most ``limit``)."""
    names = [n for n, l in net.links.items()
             if not isinstance(l.a, HostNode) and not isinstance(l.b, HostNode)]
    return names[:limit]


def build_run(scenario: Scenario, *, agent_factory: AgentFactory | None = None,
              switch: SwitchChoice | None = None) -> SimRun:
    """Set up (but do not run) a scenario.

    The cyclic garbage collector is off while the run is built: setting up
    allocates the network's long-lived objects (a P4 node's tables hold an
    entry per host), nearly none of them garbage, and each collection the
    allocations trigger would scan every object built so far (half the
    setup CPU of a 200-receiver tree of P4 nodes went there)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _build_run(scenario, agent_factory=agent_factory, switch=switch)
    finally:
        if was:
            gc.enable()


def _build_run(scenario: Scenario, *, agent_factory: AgentFactory | None,
               switch: SwitchChoice | None) -> SimRun:
    scenario, _ = fit_sessions_to_links(scenario)  # loading warned about what does not fit
    sim = Simulator(scenario.seed)
    rec = R.Recorder(scenario, "netsim")

    def sink(host: HostNode, label: str, ev: Any) -> None:
        if isinstance(ev, Metric):
            rec.record(ev.time, label, ev.role, ev.values, ev.state)
            sess, _, node = label.partition("/")
            v = ev.values
            loss = v.get("loss_event_rate", v.get("loss_rate"))
            if loss is not None:
                rec.sample(ev.time, "session", sess, node, R.LOSS, loss)
            if v.get("rtt_s") is not None and v["rtt_s"] > 0:
                rec.sample(ev.time, "session", sess, node, R.RTT, v["rtt_s"])
        elif isinstance(ev, Delivered):
            pass  # delivered bytes show in the engine's own throughput counters

    switch = switch or model_choice()
    net = build_network(sim, scenario.topology, sink=sink, switch_factory=switch.factory)
    switch.configure(net, scenario)
    run = SimRun(sim, net, rec)
    run.scenario = scenario  # type: ignore[attr-defined]
    run.switch_kind = switch.kind
    factory = agent_factory or functools.partial(registry_factory, switch_assists=switch.kind != "model")
    for s in scenario.sessions:
        sender_ip = net.hosts[s.sender].ip
        stop = s.stop  # None: runs to the end (no leave events at the very end)
        label = f"{s.name}/{s.sender}"
        agent = factory(s, "sender", s.sender, sender_ip, sender_ip, _seed_for(scenario.seed, label))
        if switch.kind == "model":
            # Model switches need each group's upstream port; a sender using
            # several groups (WEBRC's channels) lists them in ``groups``, and
            # an empty list means the session's group alone (Endpoint.groups).
            # Without it a join reached the first switch only, and the
            # session's traffic reached nobody until a later query's reports.
            for g in agent.groups or (s.group,):
                if isinstance(g, str):
                    net.set_group_source(g, s.sender)
        net.hosts[s.sender].add_endpoint(agent, s.port, label=label, start_at=s.start, stop_at=stop)
        run.agents[label] = agent
        for r in s.receivers:
            label = f"{s.name}/{r}"
            ip = net.hosts[r].ip
            agent = factory(s, "receiver", r, ip, sender_ip, _seed_for(scenario.seed, label))
            net.hosts[r].add_endpoint(agent, s.port, label=label, start_at=s.join_at.get(r, s.start),
                                      stop_at=s.leave_at.get(r, stop))
            run.agents[label] = agent
    for host, jitter in sorted(_send_jitters(scenario).items()):
        if jitter:
            net.set_send_jitter(host, jitter)
    for i, f in enumerate(scenario.tcp_flows):
        recv = TcpReceiver(sim, net.hosts[f.dst], f.port, mss=f.mss, label=f.name)
        snd = TcpSender(sim, net.hosts[f.src], net.hosts[f.dst].ip, f.port, 40000 + i,
                        mss=f.mss, rwnd=f.rwnd, rto=f.rto, recovery=f.recovery, label=f.name)
        sim.at(f.start, snd.start)
        sim.at(f.stop if f.stop is not None else scenario.duration, snd.stop)
        run.tcp[f.name] = _Flow(f.name, snd, recv)
    _install_sampler(run, scenario)
    _install_faults(run, scenario, factory)
    from p4mcc.netsim import liveness

    run.liveness = liveness.install(run, scenario)
    return run


def _install_faults(run: SimRun, scenario: Scenario, factory: AgentFactory) -> None:
    """The stand-in controller (restores, querier) and the scenario's faults (netsim/faults.py)."""
    from p4mcc.scenario.control import scenario_options
    from p4mcc.netsim.faults import FaultInjector, SimControl

    _, query = scenario_options(scenario)
    run.control = SimControl(run, getattr(run.net, "desired_states", {}), query,
                             below=getattr(run.net, "desired_below", {}))
    run.control.start()

    def make_agent(s: Session, role: str, host: str) -> Endpoint:
        label = f"{s.name}/{host}"
        ip = run.net.hosts[host].ip
        seed = _seed_for(scenario.seed, f"{label}/restart{run.sim.now:.6f}")
        return factory(s, role, host, ip, run.net.hosts[s.sender].ip, seed)

    run.faults = FaultInjector(run, scenario, run.control, make_agent)
    run.faults.schedule()


def _install_sampler(run: SimRun, scenario: Scenario) -> None:
    sim, net, rec = run.sim, run.net, run.recorder
    dt = scenario.metrics_interval
    links = _sample_links(net)
    last: dict[tuple[str, str], int] = {}
    active = {s.name: (s.start, s.stop if s.stop is not None else scenario.duration)
              for s in scenario.sessions}
    tcp_active = {f.name: (f.start, f.stop if f.stop is not None else scenario.duration)
                  for f in scenario.tcp_flows}

    def tick() -> None:
        now = sim.now
        for s in scenario.sessions:
            lo, hi = active[s.name]
            in_window = lo < now <= hi + 1e-9
            snd = net.hosts[s.sender]
            fb = snd.rx_ucast_msgs.get(s.port, 0)
            tx = snd.tx_udp_bytes.get(s.port, 0)
            k1, k2 = (s.name, f"fb:{s.sender}"), (s.name, f"tx:{s.sender}")
            if in_window:
                rec.sample(now, "session", s.name, s.sender, R.FEEDBACK, fb - last.get(k1, 0))
                rec.sample(now, "session", s.name, s.sender, R.THROUGHPUT, (tx - last.get(k2, 0)) * 8 / dt)
            last[k1], last[k2] = fb, tx
            for r in s.receivers:
                b = net.hosts[r].rx_mcast_bytes.get(s.port, 0)
                k = (s.name, r)
                jl = s.join_at.get(r, lo)
                lv = s.leave_at.get(r, hi)
                if jl < now <= lv + 1e-9:
                    rec.sample(now, "session", s.name, r, R.THROUGHPUT, (b - last.get(k, 0)) * 8 / dt)
                    if s.assistance == "stamp":
                        sample_stamp(rec, now, s.name, r, net.hosts[r].rx_mcast_stamps.get(s.port))
                last[k] = b
        for name, f in run.tcp.items():
            lo, hi = tcp_active[name]
            b = f.receiver.delivered_bytes
            sent, retx = f.sender.stats.segments_sent, f.sender.stats.retransmits
            if lo < now <= hi + 1e-9:
                node = f.receiver.host.name
                rec.sample(now, "tcp", name, node, R.THROUGHPUT, (b - f.last_bytes) * 8 / dt)
                ds = sent - f.last_sent
                if ds > 0:
                    rec.sample(now, "tcp", name, node, R.LOSS, (retx - f.last_retx) / ds)
                if f.sender.srtt is not None:
                    rec.sample(now, "tcp", name, node, R.RTT, f.sender.srtt)
                rec.sample(now, "tcp", name, node, "cwnd", f.sender.cwnd)
            f.last_bytes, f.last_sent, f.last_retx = b, sent, retx
        for ln in links:
            l = net.links[ln]
            for ch in (l.ab, l.ba):
                q, _ = ch.backlog(now)
                rec.sample(now, "link", ch.name, "", "queue_pkts", q)
        if run.liveness is not None:
            run.liveness.check(now)
        if now + dt <= scenario.duration + 1e-9:
            sim.at(now + dt, tick)

    sim.at(dt, tick)


def sample_stamp(rec: R.Recorder, now: float, session: str, node: str, window: Any) -> None:
    """One interval's stamp samples of a receiver (R.STAMP_QUEUE, R.STAMP_SPARE),
    when every data packet of the interval was stamped; the window starts again."""
    if window is None:
        return
    if window.stamped:
        rec.sample(now, "session", session, node, R.STAMP_QUEUE, window.queue_s())
        rec.sample(now, "session", session, node, R.STAMP_SPARE, window.spare_bps())
    window.reset()


def run_scenario(scenario: Scenario, out: str | Path | None = None, *, progress: bool = False,
                 agent_factory: AgentFactory | None = None,
                 switch: SwitchChoice | None = None, capture: Any = None,
                 before_run: Callable[[SimRun], None] | None = None) -> SimRun:
    """Run ``scenario`` to its duration; write results into ``out`` if given.

    ``capture`` (a :class:`scenario.capture.CaptureSpec`, default the
    scenario's ``capture:``) writes per-port pcaps into ``out/pcaps``.
    ``before_run(run)`` is called once the network is built and before time
    starts (a sweep's probe schedules its own samples there).
    """
    run = build_run(scenario, agent_factory=agent_factory, switch=switch)
    capture = capture or scenario.capture
    pcaps = None
    if capture is not None and out is not None:
        from p4mcc.netsim import capture as C
        from p4mcc.scenario.capture import FrameFilter

        pcaps = C.attach(run.net, capture, FrameFilter.for_scenario(capture, scenario), Path(out),
                         end=scenario.duration)
    if before_run is not None:
        before_run(run)
    t0 = _time.perf_counter()
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]sim[/] {task.description}"), BarColumn(),
                      TextColumn("{task.completed:.1f}/{task.total:.0f} s simulated"),
                      TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task(scenario.name, total=scenario.duration)
            run.sim.run(until=scenario.duration,
                        progress=lambda t: bar.update(task, completed=t), progress_every=0.25)
    else:
        run.sim.run(until=scenario.duration)
    run.wall_s = _time.perf_counter() - t0
    rec = run.recorder
    captured = pcaps.close() if pcaps is not None else None
    for h in run.net.hosts.values():
        for t, what, group in h.membership_log:
            rec.event(t, h.name, what, group)
    lc = {}
    for name, l in run.net.links.items():
        for ch in (l.ab, l.ba):
            c = ch.counters
            if c.queue_drops or c.loss_drops:
                lc[ch.name] = {"queue_drops": c.queue_drops, "loss_drops": c.loss_drops,
                               "delivered": c.delivered_packets, "max_queue_pkts": c.max_queue_packets}
    bad = {h.name: {"rx_bad_checksum": h.counters.rx_bad_checksum}
           for h in run.net.hosts.values() if h.counters.rx_bad_checksum}
    if scenario.faults:
        from p4mcc.scenario.faults import recovery_events

        for e in recovery_events(rec.samples, scenario, scenario.duration):
            rec.event(*e)
    rec.extra = {
        "switch": run.switch_kind,
        "wall_time_s": round(run.wall_s, 3),
        "events": run.sim.events,
        "link_drops": lc,
        "stalls": dict(run.liveness.stalls),
    }
    if bad:
        rec.extra["host_drops"] = bad
    if captured is not None:
        rec.extra["captures"] = captured
    run.summary = rec.write(out) if out is not None else rec.summarize()
    if out is not None:
        from p4mcc.reporting import plots

        plots.render(out)
    return run
