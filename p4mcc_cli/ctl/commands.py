"""``p4mcc ctl``: manage groups and sessions on a topology's switches.

Every command names its switches with ``--topology FILE`` (a scenario or a
p4lang/tutorials ``topology.json``) and/or ``--switch NAME=ADDR`` (repeatable;
overrides a topology switch's address, or names a switch on its own).

Errors exit with status 2 and print one line per failing switch:
``SWITCH: ENTITY: DETAIL`` where DETAIL is the switch's P4Runtime status and
message.  Read commands take ``--json``.  See docs/controller.md.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

EXIT_ERROR = 2
DEFAULT_STATE_DIR = Path(".p4mcc")


class CliError(Exception):
    """A one-line error for the user (exit status 2)."""


# ---------------------------------------------------------------------------
# Argument parsing


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ctl",
        help="P4Runtime controller for a topology's switches",
        description="Push and inspect the multicast state of a topology's switches over P4Runtime.",
    )
    p.add_argument("--topology", metavar="FILE", help="scenario (YAML/JSON) or p4lang/tutorials topology.json")
    p.add_argument("--switch", action="append", default=[], metavar="NAME=ADDR[@DEVICE]",
                   help="a switch's P4Runtime address (repeatable; overrides the topology's)")
    p.add_argument("--target", choices=["builtin", "bmv2"], default="builtin",
                   help="pipeline format to push: builtin (P4 source) or bmv2 (p4c JSON + P4Info)")
    p.add_argument("--p4", metavar="FILE", help="P4 program for the builtin target (default p4src/mcc.p4)")
    p.add_argument("--bmv2-json", metavar="FILE", help="p4c BMv2 JSON (default build/mcc.json)")
    p.add_argument("--p4info", metavar="FILE", help="P4Info text for bmv2 (default build/mcc.p4info.txtpb)")
    p.add_argument("--election-id", type=int, default=10, help="election id for writes (default 10)")
    p.add_argument("--retry", type=float, default=5.0, metavar="SECONDS",
                   help="keep retrying unreachable switches this long (default 5)")
    p.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR), metavar="DIR",
                   help="where the intent file and event log live (default .p4mcc)")
    p.add_argument("--feedback-pps", default="auto", metavar="auto|N|off",
                   help="feedback each host port may send, packets/s (default auto: sized per host from "
                   "the scenario's sessions, 20000 for hosts in none; off: no policing)")
    p.add_argument("--membership-timeout", type=float, default=0.0, metavar="SECONDS",
                   help="age memberships after this long without a report (0: never); "
                   "events then sends IGMP queries")
    p.add_argument("-v", "--verbose", action="store_true", help="show finsy's log and tracebacks")
    cmds = p.add_subparsers(dest="ctl_command", metavar="COMMAND")

    def cmd(name: str, helptext: str, fn: Callable[[argparse.Namespace], int], read: bool = True) -> argparse.ArgumentParser:
        c = cmds.add_parser(name, help=helptext, description=helptext)
        if read:
            c.add_argument("--json", action="store_true", help="print JSON instead of text")
        c.set_defaults(ctl_func=fn)
        return c

    c = cmd("apply", "push the pipeline and the desired state (only the difference)", cmd_apply)
    c.add_argument("--dry-run", action="store_true", help="print the difference, write nothing")
    c.add_argument("--keep", action="store_true", help="keep state the desired state does not mention")

    c = cmd("groups", "list PRE groups; add or delete a hand-made group", cmd_groups)
    c.add_argument("action", nargs="?", choices=["list", "add", "del"], default="list")
    c.add_argument("group", nargs="?", type=int, help="PRE group id (1..65535)")
    c.add_argument("--ports", nargs="+", default=[], metavar="SWITCH-pN",
                   help="ports of the group, e.g. s1-p2 s1-p3 s2-p1")

    c = cmd("sessions", "list sessions; add or delete one", cmd_sessions)
    c.add_argument("action", nargs="?", choices=["list", "add", "del"], default="list")
    c.add_argument("session", nargs="?", type=int, help="session id")
    c.add_argument("--source", help="sending host")
    c.add_argument("--group", action="append", default=[], help="group address (repeatable)")
    c.add_argument("--receivers", nargs="+", default=[], help="receiving hosts (default: all)")
    c.add_argument("--mode", choices=["auto", "aggregate", "filter", "off"], default="auto")
    c.add_argument("--protocol", default="", help="protocol name (picks the mode when --mode auto)")

    cmd("members", "group memberships as the switches reported them (event log)", cmd_members)
    c = cmd("counters", "read counters", cmd_counters)
    c.add_argument("--switch", dest="only", metavar="NAME", help="one switch")
    c.add_argument("--all", action="store_true", help="include zero counters")
    c = cmd("tables", "dump table entries by name", cmd_tables)
    c.add_argument("--switch", dest="only", metavar="NAME", help="one switch")
    c = cmd("watch", "live rates per port and group", cmd_watch, read=False)
    c.add_argument("--interval", type=float, default=1.0, metavar="SECONDS")
    c.add_argument("--count", type=int, default=0, help="stop after N refreshes (0: run until ^C)")
    c = cmd("events", "run the controller and follow its event log", cmd_events)
    c.add_argument("--once", action="store_true", help="print the log so far and exit")
    c.add_argument("--duration", type=float, default=0.0, metavar="SECONDS", help="stop after this long")
    p.set_defaults(func=main)


# ---------------------------------------------------------------------------
# Context: topology, switches, desired state


@dataclass
class Ctx:
    args: argparse.Namespace
    topo: Any = None
    sessions: list[Any] = field(default_factory=list)
    targets: dict[str, Any] = field(default_factory=dict)
    scenario: Any = None

    @property
    def state_dir(self) -> Path:
        return Path(self.args.state_dir)

    @property
    def intent_path(self) -> Path:
        return self.state_dir / "ctl-intent.json"

    @property
    def events_path(self) -> Path:
        return self.state_dir / "ctl-events.jsonl"


def _parse_switch_arg(text: str) -> tuple[str, str, int | None]:
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
    from controller.desired import session_from_scenario
    from controller.fleet import Target
    from scenario.control import load_scenario_topology

    ctx = Ctx(args)
    if args.topology:
        ctx.topo, scn = load_scenario_topology(args.topology)
        ctx.scenario = scn
        ctx.sessions = [session_from_scenario(s) for s in getattr(scn, "sessions", [])]
        for s in ctx.topo.switches.values():
            ctx.targets[s.name] = Target(s.name, s.address, s.device_id)
    for text in args.switch:
        name, addr, dev = _parse_switch_arg(text)
        if ctx.topo is not None and name not in ctx.topo.switches:
            raise CliError(f"{name}: switch: not in the topology (known: {', '.join(sorted(ctx.topo.switches))})")
        old = ctx.targets.get(name)
        ctx.targets[name] = Target(name, addr, dev if dev is not None else (old.device_id if old else 0))
    if not ctx.targets:
        raise CliError("no switches: give --topology FILE or --switch NAME=ADDR")
    return ctx


def _selected(ctx: Ctx, only: str | None) -> list[Any]:
    if only is None:
        return list(ctx.targets.values())
    if only not in ctx.targets:
        raise CliError(f"{only}: switch: unknown switch (known: {', '.join(sorted(ctx.targets))})")
    return [ctx.targets[only]]


def _pipeline(ctx: Ctx) -> Any:
    from controller.pipeline import pipeline_for

    a = ctx.args
    return pipeline_for(a.target, source=Path(a.p4) if a.p4 else None,
                        bmv2_json=Path(a.bmv2_json) if a.bmv2_json else None,
                        p4info=Path(a.p4info) if a.p4info else None)


def desired_plan(ctx: Ctx, intent: Any = None) -> tuple[dict[str, Any], Any]:
    """switch -> desired SwitchState (sessions of the scenario and the intent,
    hand-made groups), and the plan it came from (None without a topology)."""
    from controller.desired import DesiredStateError, plan
    from controller.intent import load_intent
    from controller.program import MCC
    from controller.state import MulticastGroup, SwitchState

    intent = intent if intent is not None else load_intent(ctx.intent_path)
    p = None
    states: dict[str, Any] = {name: SwitchState() for name in ctx.targets}
    if ctx.topo is not None:
        ids = {s.session_id for s in ctx.sessions}
        extra = [s for sid, s in sorted(intent.sessions.items()) if sid not in ids]
        p = plan(ctx.topo, ctx.sessions + extra, _options(ctx))
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


def _options(ctx: Ctx) -> Any:
    from controller.desired import DesiredOptions

    from controller.querier import timings

    timeout = float(getattr(ctx.args, "membership_timeout", 0.0) or 0.0)
    if timeout < 0:
        raise CliError("--membership-timeout must not be negative")
    ageing = {}
    if timeout > 0:
        ageing = {"membership_timeout_us": int(timeout * 1e6), "proxy_refresh_us": int(timings(timeout)[1] * 1e6)}
    text = str(getattr(ctx.args, "feedback_pps", "auto")).lower()
    if text in ("off", "none", "0"):
        return DesiredOptions(feedback_pps=None, **ageing)
    if text == "auto":
        scn = ctx.scenario
        by_host = None
        if scn is not None and getattr(scn, "sessions", None) and hasattr(scn.topology, "links"):
            from controller.policing import host_budgets

            by_host = {h: b for h, b in host_budgets(scn.topology, scn.sessions).items()
                       if any(h in s.receivers for s in scn.sessions)}
        return DesiredOptions(feedback_pps=20_000, feedback_burst=2_000, feedback_by_host=by_host, **ageing)
    try:
        pps = int(text)
    except ValueError:
        raise CliError(f"--feedback-pps {text!r}: give packets per second or off") from None
    return DesiredOptions(feedback_pps=pps, feedback_burst=max(1, pps // 10), **ageing)


def _check_group_ports(ctx: Ctx, mgid: int, ports: list[str]) -> dict[str, list[int]]:
    from controller.program import MCC
    from controller.topology import parse_endpoint

    if not 1 <= mgid <= 0xFFFF:
        raise CliError(f"group {mgid}: id out of range (1..65535)")
    if mgid == MCC.flood_mgid:
        raise CliError(f"group {mgid}: reserved for flooding")
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


# ---------------------------------------------------------------------------
# Output helpers


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    cols = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cols]
    return "\n".join(lines)


def _faults_exit(res: Any) -> int:
    for f in res.faults:
        print(str(f), file=sys.stderr)
    return EXIT_ERROR if res.faults else 0


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _fleet_read(ctx: Ctx, targets: list[Any], fn: Callable[[Any], Any]) -> Any:
    from controller import fleet

    return _run(fleet.for_each(targets, fn, pipeline=None, election_id=1, need_primary=False,
                               retry_for=ctx.args.retry))


# ---------------------------------------------------------------------------
# Commands


def cmd_apply(ctx: Ctx) -> int:
    from controller import fleet
    from controller.diff import diff, summarize
    from controller.finsy_codec import canonical
    from controller.state import SwitchState

    a = ctx.args
    desired, p = desired_plan(ctx)
    pipeline = _pipeline(ctx)
    if p is not None:
        for w in p.warnings:
            print(f"warning: {w}", file=sys.stderr)

    async def do(sw: Any) -> Any:
        want = desired[sw.name]
        if a.dry_run:
            import finsy as fy

            schema = sw.p4info if sw.p4info.exists else fy.P4Schema(pipeline.p4info)
            try:
                want_c = canonical(want, schema)
            except ValueError as exc:
                raise fleet.SwitchFault(sw.name, "pipeline", str(exc)) from None
            actual = await fleet.read_state(sw, want_c) if sw.p4info.exists else SwitchState()
            same = sw.p4info.exists and sw.p4info.has_p4info(pipeline.p4info)
            return {"ops": diff(want_c, actual, prune=not a.keep), "pipeline_current": same}
        ops = await fleet.sync(sw, want, prune=not a.keep)
        return {"ops": ops}

    res = _run(fleet.for_each(list(ctx.targets.values()), do, pipeline=None if a.dry_run else pipeline,
                              election_id=a.election_id if not a.dry_run else 1,
                              need_primary=not a.dry_run, retry_for=a.retry))
    out = {}
    for name in sorted(res.results):
        r = res.results[name]
        out[name] = {
            **summarize(r["ops"]),
            **({"pipeline_current": r["pipeline_current"]} if "pipeline_current" in r else {}),
            "ops": [{"op": o.kind, "entity": o.entity.describe()} for o in r["ops"]],
        }
    if a.json:
        _print_json({"dry_run": a.dry_run, "switches": out, "errors": [str(f) for f in res.faults]})
    else:
        verb = "would write" if a.dry_run else "wrote"
        for name, r in out.items():
            extra = ""
            if a.dry_run and not r.get("pipeline_current", True):
                extra = f"; pipeline {pipeline.origin} would be pushed (switch state is then rebuilt)"
            print(f"{name}: {verb} {r['insert']} inserts, {r['modify']} modifies, {r['delete']} deletes{extra}")
            if a.dry_run:
                for o in res.results[name]["ops"]:
                    print(f"  {o.describe()}")
    return _faults_exit(res)


def _group_rows(ctx: Ctx, states: dict[str, Any]) -> list[dict[str, Any]]:
    from controller.program import MCC

    rows = []
    for sw in sorted(states):
        st = states[sw]
        addr: dict[int, tuple[str, int, int]] = {}
        for e in st.entries.values():
            if e.table == MCC.group_tables[0]:
                prm = dict(e.params)
                g = str(ipaddress.IPv4Address(dict(e.match)[MCC.group_key]))
                addr[prm[MCC.group_mgid]] = (g, prm[MCC.group_upstream], prm[MCC.group_has_upstream])
        for g in sorted(st.groups.values(), key=lambda g: g.group_id):
            group, up, has_up = addr.get(g.group_id, ("", None, 0))
            if g.group_id == MCC.flood_mgid and not group:
                group = "(flood)"
            rows.append({"switch": sw, "mgid": g.group_id, "group": group or None,
                         "upstream_port": up if has_up else None, "ports": g.ports})
    return rows


def _read_states(ctx: Ctx, targets: list[Any]) -> Any:
    from controller import fleet

    async def do(sw: Any) -> Any:
        if not sw.p4info.exists:
            raise fleet.SwitchFault(sw.name, "pipeline", "switch has no pipeline (run p4mcc ctl apply)")
        return await fleet.read_state(sw)

    return _fleet_read(ctx, targets, do)


def cmd_groups(ctx: Ctx) -> int:
    from controller.intent import load_intent, save_intent

    a = ctx.args
    if a.action == "list":
        if a.group is not None:
            raise CliError("groups list takes no group id")
        res = _read_states(ctx, list(ctx.targets.values()))
        rows = _group_rows(ctx, res.results)
        if a.json:
            _print_json({"groups": rows, "errors": [str(f) for f in res.faults]})
        else:
            print(_table(["switch", "mgid", "group", "upstream", "ports"],
                         [[r["switch"], r["mgid"], r["group"] or "-",
                           "-" if r["upstream_port"] is None else r["upstream_port"],
                           ",".join(map(str, r["ports"])) or "-"] for r in rows]))
        return _faults_exit(res)
    if a.group is None:
        raise CliError(f"groups {a.action}: give the PRE group id")
    intent = load_intent(ctx.intent_path)
    if a.action == "add":
        intent.groups[a.group] = _check_group_ports(ctx, a.group, a.ports)
    else:
        if not 1 <= a.group <= 0xFFFF:
            raise CliError(f"group {a.group}: id out of range (1..65535)")
        if a.group not in intent.groups:
            raise CliError(f"group {a.group}: not a hand-made group (see p4mcc ctl groups)")
        del intent.groups[a.group]
    desired_plan(ctx, intent)  # validate before saving
    save_intent(ctx.intent_path, intent)
    return _apply_quiet(ctx, f"group {a.group} {'added' if a.action == 'add' else 'deleted'}")


def _apply_quiet(ctx: Ctx, what: str) -> int:
    ns = argparse.Namespace(**{**vars(ctx.args), "dry_run": False, "keep": False, "json": False})
    code = cmd_apply(replace(ctx, args=ns))
    if code == 0:
        print(what)
    return code


def cmd_sessions(ctx: Ctx) -> int:
    from controller.desired import SessionSpec
    from controller.intent import load_intent, save_intent
    from controller.program import MCC

    a = ctx.args
    if a.action == "list":
        res = _read_states(ctx, list(ctx.targets.values()))
        modes = {MCC.aggregate_action: "aggregate", MCC.filter_action: "filter", MCC.none_action: "off"}
        sessions: dict[int, dict[str, Any]] = {}
        for sw in sorted(res.results):
            for e in res.results[sw].entries.values():
                if e.table != MCC.session_table:
                    continue
                sid = dict(e.match)[MCC.session_key]
                rec = sessions.setdefault(sid, {"session_id": sid, "mode": modes.get(e.action, e.action),
                                                "switches": {}})
                rec["switches"][sw] = dict(e.params)
        known = {s.session_id: s for s in ctx.sessions}
        known.update(load_intent(ctx.intent_path).sessions)
        for sid, s in known.items():
            rec = sessions.setdefault(sid, {"session_id": sid, "mode": s.effective_mode, "switches": {}})
            rec.update(source=s.source, groups=list(s.groups), protocol=s.protocol)
        rows = [sessions[k] for k in sorted(sessions)]
        if a.json:
            _print_json({"sessions": rows, "errors": [str(f) for f in res.faults]})
        else:
            print(_table(["session", "mode", "protocol", "source", "groups", "switches"],
                         [[r["session_id"], r["mode"], r.get("protocol") or "-", r.get("source") or "-",
                           ",".join(r.get("groups", [])) or "-", ",".join(sorted(r["switches"])) or "-"]
                          for r in rows]))
        return _faults_exit(res)
    if a.session is None:
        raise CliError(f"sessions {a.action}: give the session id")
    intent = load_intent(ctx.intent_path)
    if a.action == "add":
        if ctx.topo is None:
            raise CliError("sessions add needs a topology: give --topology FILE")
        if any(s.session_id == a.session for s in ctx.sessions):
            raise CliError(f"session {a.session}: already defined by the scenario")
        if not a.source or not a.group:
            raise CliError(f"session {a.session}: give --source HOST and --group ADDRESS")
        intent.sessions[a.session] = SessionSpec(a.session, a.source, tuple(a.group), a.protocol,
                                                 tuple(a.receivers), a.mode)
    else:
        if a.session not in intent.sessions:
            raise CliError(f"session {a.session}: not added by hand (scenario sessions change with the scenario)")
        del intent.sessions[a.session]
    desired_plan(ctx, intent)  # validate before saving
    save_intent(ctx.intent_path, intent)
    return _apply_quiet(ctx, f"session {a.session} {'added' if a.action == 'add' else 'deleted'}")


def cmd_members(ctx: Ctx) -> int:
    from controller.events import fold_members, read_events

    members = fold_members(read_events(ctx.events_path))
    members = {sw: g for sw, g in members.items() if sw in ctx.targets}
    if ctx.args.json:
        _print_json({"members": members, "source": str(ctx.events_path)})
    else:
        rows = [[sw, g, ",".join(map(str, ports))] for sw, groups in members.items() for g, ports in groups.items()]
        print(_table(["switch", "group", "ports"], rows) if rows else
              f"no memberships reported (log: {ctx.events_path}; run p4mcc ctl events to collect them)")
    return 0


def _index_label(ctx: Ctx, sw: str, counter: str, index: int, p: Any) -> str:
    short = counter.rsplit(".", 1)[-1]
    if short.startswith("port_") and ctx.topo is not None and sw in ctx.topo.switches:
        peer = ctx.topo.port_map(sw).get(index)
        return f"p{index}" + (f" ({peer})" if peer else "")
    if short.startswith("group_") and p is not None:
        for g, gi in p.gidx.items():
            if gi == index:
                return g
    if short.startswith("session_") and p is not None:
        for sid, si in p.sidx.items():
            if si == index:
                return f"session {sid}"
    return str(index)


async def _read_counters(sw: Any) -> list[dict[str, Any]]:
    from controller import fleet

    return await fleet.read_counters(sw)


def _safe_plan(ctx: Ctx) -> Any:
    try:
        return desired_plan(ctx)[1]
    except Exception:  # noqa: BLE001 - labels are a nicety; reading counters must not depend on them
        return None


def cmd_counters(ctx: Ctx) -> int:
    a = ctx.args
    targets = _selected(ctx, a.only)
    p = _safe_plan(ctx)
    res = _fleet_read(ctx, targets, _read_counters)
    rows = []
    for sw in sorted(res.results):
        for r in res.results[sw]:
            if a.all or r["packets"] or r["bytes"]:
                rows.append({"switch": sw, **r, "label": _index_label(ctx, sw, r["counter"], r["index"], p)})
    if a.json:
        _print_json({"counters": rows, "errors": [str(f) for f in res.faults]})
    else:
        if rows or a.all:
            print(_table(["switch", "counter", "index", "packets", "bytes"],
                         [[r["switch"], r["counter"], r["label"], r["packets"], r["bytes"]] for r in rows]))
        elif res.results:
            print("all counters are zero (--all lists them)")
    return _faults_exit(res)


def cmd_tables(ctx: Ctx) -> int:
    import finsy as fy

    from controller import fleet

    a = ctx.args

    async def do(sw: Any) -> list[dict[str, Any]]:
        if not sw.p4info.exists:
            raise fleet.SwitchFault(sw.name, "pipeline", "switch has no pipeline (run p4mcc ctl apply)")
        schema = sw.p4info
        ents = await fleet._read_all(sw, fy.P4TableEntry())
        for t in schema.tables:
            ents += await fleet._read_all(sw, fy.P4TableEntry(t.alias, is_default_action=True))
        rows = []
        for e in ents:
            t = schema.tables[e.table_id]
            act = e.action
            rows.append({
                "table": t.name,
                "default": e.is_default_action,
                "match": {t.match_fields[k].name: _fmt_value(t.match_fields[k].name, t.match_fields[k].bitwidth, v)
                          for k, v in (e.match or {}).items()},
                "action": schema.actions[act.name].name if isinstance(act, fy.P4TableAction) else None,
                "params": ({k: _fmt_param(schema, act, k, v) for k, v in act.args.items()}
                           if isinstance(act, fy.P4TableAction) else {}),
                "priority": e.priority,
                "const": e.is_const,
            })
        rows.sort(key=lambda r: (r["table"], not r["default"], json.dumps(r["match"], sort_keys=True)))
        return rows

    res = _fleet_read(ctx, _selected(ctx, a.only), do)
    if a.json:
        _print_json({"tables": {sw: res.results[sw] for sw in sorted(res.results)},
                     "errors": [str(f) for f in res.faults]})
    else:
        rows = []
        for sw in sorted(res.results):
            for r in res.results[sw]:
                match = "(default)" if r["default"] else " ".join(f"{k}={v}" for k, v in r["match"].items())
                params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
                prio = f" prio={r['priority']}" if r["priority"] else ""
                rows.append([sw, r["table"], match + prio, f"{r['action']}({params})"])
        print(_table(["switch", "table", "match", "action"], rows))
    return _faults_exit(res)


_ADDR_WORDS = ("addr", "group", "tpa", "spa", "ip")


def _fmt_value(name: str, width: int, value: Any) -> str:
    """Addresses as addresses (32-bit address fields, 48-bit MACs), the rest in decimal."""
    from controller.finsy_codec import _norm_match

    v = _norm_match(value)
    base, suffix = (v[0], f"/{v[1]}") if isinstance(v, tuple) else (v, "")
    if suffix == f"/{width}":
        suffix = ""
    low = name.rsplit(".", 1)[-1].lower()
    if width == 32 and any(w in low for w in _ADDR_WORDS):
        return f"{ipaddress.IPv4Address(base)}{suffix}"
    if width == 48 and "mac" in low:
        return ":".join(f"{(base >> s) & 0xFF:02x}" for s in range(40, -8, -8)) + suffix
    return f"{base}{suffix}"


def _fmt_param(schema: Any, act: Any, name: str, value: Any) -> str:
    try:
        return _fmt_value(name, schema.actions[act.name].params[name].bitwidth, value)
    except Exception:  # noqa: BLE001 - fall back to the raw value
        return str(value)


def cmd_watch(ctx: Ctx) -> int:
    from rich.live import Live
    from rich.table import Table

    from controller import fleet

    a = ctx.args
    p = _safe_plan(ctx)
    targets = list(ctx.targets.values())

    async def loop() -> int:
        opened = {}
        faults = []
        for t in targets:
            try:
                opened[t.name] = await fleet.open_switch(t, None, election_id=1, need_primary=False,
                                                         retry_for=a.retry)
            except fleet.SwitchFault as f:
                faults.append(f)
        for f in faults:
            print(str(f), file=sys.stderr)
        if not opened:
            return EXIT_ERROR
        prev: dict[tuple[str, str, int], tuple[float, int, int]] = {}
        n = 0
        try:
            with Live(refresh_per_second=4, transient=False) as live:
                while True:
                    table = Table(title=f"p4mcc ctl watch  (every {a.interval:g} s)")
                    for h in ("switch", "counter", "index", "pkt/s", "Mbit/s", "packets"):
                        table.add_column(h, justify="right" if h in ("pkt/s", "Mbit/s", "packets") else "left")
                    now = time.monotonic()
                    for name, sw in sorted(opened.items()):
                        try:
                            rows = await _read_counters(sw)
                        except fleet.SwitchFault as f:
                            table.add_row(name, f"error: {f.detail}", "", "", "", "")
                            continue
                        for r in rows:
                            short = r["counter"].rsplit(".", 1)[-1]
                            if not (short.startswith("port_") or short.startswith("group_")):
                                continue
                            key = (name, r["counter"], r["index"])
                            t0, p0, b0 = prev.get(key, (now, r["packets"], r["bytes"]))
                            prev[key] = (now, r["packets"], r["bytes"])
                            dt = now - t0
                            pps = (r["packets"] - p0) / dt if dt > 0 else 0.0
                            mbps = (r["bytes"] - b0) * 8 / dt / 1e6 if dt > 0 else 0.0
                            if r["packets"] == 0:
                                continue
                            table.add_row(name, short, _index_label(ctx, name, r["counter"], r["index"], p),
                                          f"{pps:.1f}", f"{mbps:.3f}", str(r["packets"]))
                    live.update(table)
                    n += 1
                    if a.count and n >= a.count:
                        break
                    await asyncio.sleep(a.interval)
        finally:
            for sw in opened.values():
                await fleet.close_switch(sw)
        return EXIT_ERROR if faults else 0

    return _run(loop())


def _format_event(rec: dict[str, Any]) -> str:
    t = time.strftime("%H:%M:%S", time.localtime(rec.get("time", 0)))
    rest = " ".join(f"{k}={v}" for k, v in rec.items() if k not in ("time", "switch", "event"))
    return f"{t} {rec.get('switch')} {rec.get('event')} {rest}".rstrip()


def cmd_events(ctx: Ctx) -> int:
    from controller import fleet
    from controller.events import EventLog, read_events

    a = ctx.args
    if a.once:
        for rec in read_events(ctx.events_path):
            print(json.dumps(rec) if a.json else _format_event(rec))
        return 0
    desired, p = desired_plan(ctx)
    pipeline = _pipeline(ctx)

    def show(rec: dict[str, Any]) -> None:
        print(json.dumps(rec) if a.json else _format_event(rec), flush=True)

    log = EventLog(ctx.events_path, sink=show)
    from controller.querier import timings

    query = timings(a.membership_timeout)[0] if a.membership_timeout > 0 else None
    ctl = fleet.Controller(list(ctx.targets.values()), desired, pipeline, log, election_id=a.election_id,
                           query_interval=query)

    async def go() -> None:
        task = asyncio.create_task(ctl.run())
        try:
            if a.duration > 0:
                await asyncio.wait_for(asyncio.shield(task), a.duration)
            else:
                await task
        except asyncio.TimeoutError:
            pass
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    try:
        _run(go())
    finally:
        log.close()
    return 0


# ---------------------------------------------------------------------------
# Entry point


def main(args: argparse.Namespace) -> int:
    """Run one ``p4mcc ctl`` command; every failure is one line, status 2."""
    from controller import fleet
    from controller.desired import DesiredStateError
    from controller.intent import IntentError
    from controller.pipeline import PipelineError
    from controller.topology import TopologyError

    fleet.quiet_finsy(args.verbose)
    if not getattr(args, "ctl_func", None):
        print("p4mcc ctl: give a command (apply, groups, sessions, members, counters, tables, watch, events)",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        ctx = build_ctx(args)
        return int(args.ctl_func(ctx) or 0)
    except fleet.SwitchFault as f:
        print(str(f), file=sys.stderr)
    except CliError as exc:
        print(str(exc), file=sys.stderr)
    except (TopologyError, DesiredStateError, PipelineError, IntentError) as exc:
        print(f"p4mcc ctl: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback unless asked
        if args.verbose:
            raise
        print(f"p4mcc ctl: internal error: {type(exc).__name__}: {exc} (run with -v for details)", file=sys.stderr)
    return EXIT_ERROR
