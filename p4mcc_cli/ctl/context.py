"""``p4mcc ctl``: what a command works on, built from its arguments.

The topology and scenario a command names, the switches it talks to, the
desired state the controller library computes for them (scenario sessions,
hand-added sessions and groups from the intent file) and the options that
state is built with.  Every decision here calls a library function
(:mod:`scenario.control`, :mod:`controller.desired`, :mod:`controller.fleet`);
nothing prints.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, TypeVar

if TYPE_CHECKING:  # pragma: no cover - annotations only; the commands import these lazily
    import finsy as fy

    from p4mcc.controller.desired import DesiredOptions, Plan, SessionSpec
    from p4mcc.controller.fleet import FleetResult, Target
    from p4mcc.controller.intent import Intent
    from p4mcc.controller.pipeline import PipelineSpec
    from p4mcc.controller.state import SwitchState
    from p4mcc.controller.topology import Topology
    from p4mcc.scenario.model import Scenario

T = TypeVar("T")

EXIT_ERROR = 2
DEFAULT_STATE_DIR = Path(".p4mcc")


class CliError(Exception):
    """A one-line error for the user (exit status 2)."""


@dataclass
class Ctx:
    args: argparse.Namespace
    topo: Topology | None = None
    sessions: list[SessionSpec] = field(default_factory=list)
    targets: dict[str, Target] = field(default_factory=dict)
    scenario: Scenario | None = None

    @property
    def state_dir(self) -> Path:
        return Path(self.args.state_dir)

    @property
    def intent_path(self) -> Path:
        return self.state_dir / "ctl-intent.json"

    @property
    def events_path(self) -> Path:
        return self.state_dir / "ctl-events.jsonl"


def parse_switch_arg(text: str) -> tuple[str, str, int | None]:
    if "=" not in text:
        raise CliError(f"--switch {text!r}: write NAME=HOST:PORT (e.g. s1=127.0.0.1:9559)")
    name, addr = text.split("=", 1)
    dev: int | None = None
    if "@" in addr:
        addr, d = addr.rsplit("@", 1)
        try:
            dev = int(d)
        except ValueError:
            raise CliError(f"--switch {text!r}: device id {d!r} is not an integer") from None
    if not name or ":" not in addr:
        raise CliError(f"--switch {text!r}: write NAME=HOST:PORT (e.g. s1=127.0.0.1:9559)")
    return name, addr, dev


def build_ctx(args: argparse.Namespace) -> Ctx:
    from p4mcc.controller.desired import session_from_scenario
    from p4mcc.controller.fleet import Target
    from p4mcc.scenario.control import load_scenario_topology

    ctx = Ctx(args)
    if args.topology:
        ctx.topo, scn = load_scenario_topology(args.topology)
        ctx.scenario = scn
        ctx.sessions = [session_from_scenario(s) for s in getattr(scn, "sessions", [])]
        for s in ctx.topo.switches.values():
            ctx.targets[s.name] = Target(s.name, s.address, s.device_id)
    for text in args.switch:
        name, addr, dev = parse_switch_arg(text)
        if ctx.topo is not None and name not in ctx.topo.switches:
            raise CliError(f"{name}: switch: not in the topology (known: {', '.join(sorted(ctx.topo.switches))})")
        old = ctx.targets.get(name)
        ctx.targets[name] = Target(name, addr, dev if dev is not None else (old.device_id if old else 0))
    if not ctx.targets:
        raise CliError("no switches: give --topology FILE or --switch NAME=ADDR")
    return ctx


def selected_targets(ctx: Ctx, only: str | None) -> list[Target]:
    if only is None:
        return list(ctx.targets.values())
    if only not in ctx.targets:
        raise CliError(f"{only}: switch: unknown switch (known: {', '.join(sorted(ctx.targets))})")
    return [ctx.targets[only]]


def pipeline_of(ctx: Ctx) -> PipelineSpec:
    from p4mcc.controller.pipeline import pipeline_for

    a = ctx.args
    return pipeline_for(a.target, source=Path(a.p4) if a.p4 else None,
                        bmv2_json=Path(a.bmv2_json) if a.bmv2_json else None,
                        p4info=Path(a.p4info) if a.p4info else None)


def desired_plan(ctx: Ctx, intent: Intent | None = None) -> tuple[dict[str, SwitchState], Plan | None]:
    """switch -> desired SwitchState (sessions of the scenario and the intent,
    hand-made groups), and the plan it came from (None without a topology)."""
    from p4mcc.controller.desired import DesiredStateError, plan
    from p4mcc.controller.intent import load_intent
    from p4mcc.controller.program import MCC
    from p4mcc.controller.state import MulticastGroup, SwitchState

    intent = intent if intent is not None else load_intent(ctx.intent_path)
    p = None
    states: dict[str, SwitchState] = {name: SwitchState() for name in ctx.targets}
    if ctx.topo is not None:
        ids = {s.session_id for s in ctx.sessions}
        extra = [s for sid, s in sorted(intent.sessions.items()) if sid not in ids]
        p = plan(ctx.topo, ctx.sessions + extra, desired_options(ctx))
        for name, st in p.switches.items():
            if name in states:
                states[name] = st
    elif intent.sessions:
        raise CliError("sessions need a topology: give --topology FILE")
    used = set(p.mgids.values()) if p else set()
    for mgid, per in sorted(intent.groups.items()):
        if mgid in used or mgid == MCC.flood_mgid:
            raise DesiredStateError(f"group {mgid} is also allocated by the controller (flood or session group)")
        for sw, ports in per.items():
            if sw in states:
                states[sw].add(MulticastGroup.of_ports(mgid, ports))
    return states, p


def desired_options(ctx: Ctx) -> DesiredOptions:
    from p4mcc.controller.desired import DesiredOptions
    from p4mcc.controller.querier import timings

    timeout = float(getattr(ctx.args, "membership_timeout", 0.0) or 0.0)
    if timeout < 0:
        raise CliError("--membership-timeout must not be negative")
    ageing: dict[str, int] = {}
    if timeout > 0:
        ageing = {"membership_timeout_us": int(timeout * 1e6), "proxy_refresh_us": int(timings(timeout)[1] * 1e6)}
    text = str(getattr(ctx.args, "feedback_pps", "auto")).lower()
    if text in ("off", "none", "0"):
        return DesiredOptions(feedback_pps=None, **ageing)
    if text == "auto":
        scn = ctx.scenario
        by_host = None
        if scn is not None and getattr(scn, "sessions", None) and hasattr(scn.topology, "links"):
            from p4mcc.controller.policing import host_budgets

            by_host = {h: b for h, b in host_budgets(scn.topology, scn.sessions).items()
                       if any(h in s.receivers for s in scn.sessions)}
        return DesiredOptions(feedback_pps=20_000, feedback_burst=2_000, feedback_by_host=by_host, **ageing)
    try:
        pps = int(text)
    except ValueError:
        raise CliError(f"--feedback-pps {text!r}: give packets per second or off") from None
    return DesiredOptions(feedback_pps=pps, feedback_burst=max(1, pps // 10), **ageing)


def check_group_ports(ctx: Ctx, mgid: int, ports: list[str]) -> dict[str, list[int]]:
    from p4mcc.controller.desired import PORT_SET_BASE
    from p4mcc.controller.program import MCC
    from p4mcc.controller.topology import parse_endpoint

    if not 1 <= mgid <= 0xFFFF:
        raise CliError(f"group {mgid}: id out of range (1..65535)")
    if mgid == MCC.flood_mgid:
        raise CliError(f"group {mgid}: reserved for flooding")
    if MCC.port_sets_table and mgid >= PORT_SET_BASE:
        raise CliError(f"group {mgid}: ids from {PORT_SET_BASE} up are the controller's port-set groups")
    if not ports:
        raise CliError(f"group {mgid}: give --ports SWITCH-pN ...")
    per: dict[str, list[int]] = {}
    for text in ports:
        for item in text.split(","):
            if not item:
                continue
            try:
                sw, port = parse_endpoint(item)
            except ValueError as exc:
                raise CliError(f"group {mgid}: {exc}") from None
            if sw not in ctx.targets:
                raise CliError(f"{sw}: group {mgid}: unknown switch (known: {', '.join(sorted(ctx.targets))})")
            if port < 0:
                raise CliError(f"{sw}: group {mgid}: write the port as {sw}-pN")
            if ctx.topo is not None and sw in ctx.topo.switches:
                known = ctx.topo.port_map(sw)
                if port not in known:
                    raise CliError(
                        f"{sw}: group {mgid}: port {sw}-p{port} is not in the topology "
                        f"({sw} has ports {', '.join(str(p) for p in sorted(known))})"
                    )
            elif not 0 <= port <= 511:
                raise CliError(f"{sw}: group {mgid}: port {port} out of range (0..511)")
            per.setdefault(sw, []).append(port)
    return {sw: sorted(set(p)) for sw, p in per.items()}


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion (each command is one event loop)."""
    return asyncio.run(coro)


def fleet_read(ctx: Ctx, targets: list[Target], fn: Callable[[fy.Switch], Awaitable[Any]]) -> FleetResult:
    """``fn`` on every target, read-only (no pipeline, no primary), retrying unreachable ones."""
    from p4mcc.controller import fleet

    return run_async(fleet.for_each(targets, fn, pipeline=None, election_id=1, need_primary=False,
                               retry_for=ctx.args.retry))


def read_states(ctx: Ctx, targets: list[Target]) -> FleetResult:
    """Each target's current :class:`~controller.state.SwitchState`."""
    from p4mcc.controller import fleet

    async def do(sw: fy.Switch) -> SwitchState:
        if not sw.p4info.exists:
            raise fleet.SwitchFault(sw.name, "pipeline", "switch has no pipeline (run p4mcc ctl apply)")
        return await fleet.read_state(sw)

    return fleet_read(ctx, targets, do)


async def read_counters(sw: fy.Switch) -> list[dict[str, Any]]:
    from p4mcc.controller import fleet

    return await fleet.read_counters(sw)


def safe_plan(ctx: Ctx) -> Plan | None:
    try:
        return desired_plan(ctx)[1]
    except Exception:  # noqa: BLE001 - labels are a nicety; reading counters must not depend on them
        return None
