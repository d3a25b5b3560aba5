"""``p4mcc ctl``: manage groups and sessions on a topology's switches.

Every command names its switches with ``--topology FILE`` (a scenario or a
p4lang/tutorials ``topology.json``) and/or ``--switch NAME=ADDR`` (repeatable;
overrides a topology switch's address, or names a switch on its own).

Errors exit with status 2 and print one line per failing switch:
``SWITCH: ENTITY: DETAIL`` where DETAIL is the switch's P4Runtime status and
message.  Read commands take ``--json``.  See docs/controller.md.

This module holds the commands: each reads its switches or pushes state
through the controller library (:mod:`controller.fleet`,
:mod:`controller.desired`, :mod:`controller.intent`).  Arguments are parsed
in :mod:`p4mcc.cli.ctl.args`, the inputs built in :mod:`p4mcc.cli.ctl.context`
and the output shaped in :mod:`p4mcc.cli.ctl.output`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from p4mcc.cli.ctl.context import (EXIT_ERROR, CliError, Ctx, build_ctx, check_group_ports, desired_plan,
                                   fleet_read, pipeline_of, read_counters, read_states, run_async, safe_plan,
                                   selected_targets)
from p4mcc.cli.ctl.output import (faults_exit, fmt_param, fmt_value, format_event, group_rows, index_label,
                                  print_json, text_table)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from p4mcc.controller.intent import Intent
    import finsy as fy


def cmd_apply(ctx: Ctx) -> int:
    from p4mcc.controller import fleet
    from p4mcc.controller.diff import diff, summarize
    from p4mcc.controller.finsy_codec import canonical
    from p4mcc.controller.state import SwitchState

    a = ctx.args
    desired, p = desired_plan(ctx)
    pipeline = pipeline_of(ctx)
    if p is not None:
        for w in p.warnings:
            print(f"warning: {w}", file=sys.stderr)

    async def do(sw: fy.Switch) -> dict[str, Any]:
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

    res = run_async(fleet.for_each(list(ctx.targets.values()), do, pipeline=None if a.dry_run else pipeline,
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
        print_json({"dry_run": a.dry_run, "switches": out, "errors": [str(f) for f in res.faults]})
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
    return faults_exit(res)


def cmd_groups(ctx: Ctx) -> int:
    from p4mcc.controller.intent import load_intent

    a = ctx.args
    if a.action == "list":
        if a.group is not None:
            raise CliError("groups list takes no group id")
        res = read_states(ctx, list(ctx.targets.values()))
        rows = group_rows(res.results)
        if a.json:
            print_json({"groups": rows, "errors": [str(f) for f in res.faults]})
        else:
            print(text_table(["switch", "mgid", "group", "upstream", "ports"],
                         [[r["switch"], r["mgid"], r["group"] or "-",
                           "-" if r["upstream_port"] is None else r["upstream_port"],
                           ",".join(map(str, r["ports"])) or "-"] for r in rows]))
        return faults_exit(res)
    if a.group is None:
        raise CliError(f"groups {a.action}: give the PRE group id")
    intent = load_intent(ctx.intent_path)
    if a.action == "add":
        intent.groups[a.group] = check_group_ports(ctx, a.group, a.ports)
    else:
        if not 1 <= a.group <= 0xFFFF:
            raise CliError(f"group {a.group}: id out of range (1..65535)")
        if a.group not in intent.groups:
            raise CliError(f"group {a.group}: not a hand-made group (see p4mcc ctl groups)")
        del intent.groups[a.group]
    return _save_and_apply(ctx, intent, f"group {a.group} {'added' if a.action == 'add' else 'deleted'}")


def _save_and_apply(ctx: Ctx, intent: "Intent", what: str) -> int:
    """Check the edited intent yields a valid desired state, keep it, apply it."""
    from p4mcc.controller.intent import save_intent

    desired_plan(ctx, intent)  # validate before saving
    save_intent(ctx.intent_path, intent)
    return _apply_quiet(ctx, what)


def _apply_quiet(ctx: Ctx, what: str) -> int:
    ns = argparse.Namespace(**{**vars(ctx.args), "dry_run": False, "keep": False, "json": False})
    code = cmd_apply(replace(ctx, args=ns))
    if code == 0:
        print(what)
    return code


def cmd_sessions(ctx: Ctx) -> int:
    from p4mcc.controller.desired import SessionSpec
    from p4mcc.controller.intent import load_intent
    from p4mcc.controller.program import MCC

    a = ctx.args
    if a.action == "list":
        res = read_states(ctx, list(ctx.targets.values()))
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
            print_json({"sessions": rows, "errors": [str(f) for f in res.faults]})
        else:
            print(text_table(["session", "mode", "protocol", "source", "groups", "switches"],
                         [[r["session_id"], r["mode"], r.get("protocol") or "-", r.get("source") or "-",
                           ",".join(r.get("groups", [])) or "-", ",".join(sorted(r["switches"])) or "-"]
                          for r in rows]))
        return faults_exit(res)
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
    return _save_and_apply(ctx, intent, f"session {a.session} {'added' if a.action == 'add' else 'deleted'}")


def cmd_members(ctx: Ctx) -> int:
    from p4mcc.controller.events import fold_members, read_events

    members = fold_members(read_events(ctx.events_path))
    members = {sw: g for sw, g in members.items() if sw in ctx.targets}
    if ctx.args.json:
        print_json({"members": members, "source": str(ctx.events_path)})
    else:
        rows = [[sw, g, ",".join(map(str, ports))] for sw, groups in members.items() for g, ports in groups.items()]
        print(text_table(["switch", "group", "ports"], rows) if rows else
              f"no memberships reported (log: {ctx.events_path}; run p4mcc ctl events to collect them)")
    return 0


def cmd_counters(ctx: Ctx) -> int:
    a = ctx.args
    targets = selected_targets(ctx, a.only)
    p = safe_plan(ctx)
    res = fleet_read(ctx, targets, read_counters)
    rows = []
    for sw in sorted(res.results):
        for r in res.results[sw]:
            if a.all or r["packets"] or r["bytes"]:
                rows.append({"switch": sw, **r, "label": index_label(ctx, sw, r["counter"], r["index"], p)})
    if a.json:
        print_json({"counters": rows, "errors": [str(f) for f in res.faults]})
    else:
        if rows or a.all:
            print(text_table(["switch", "counter", "index", "packets", "bytes"],
                         [[r["switch"], r["counter"], r["label"], r["packets"], r["bytes"]] for r in rows]))
        elif res.results:
            print("all counters are zero (--all lists them)")
    return faults_exit(res)


def cmd_tables(ctx: Ctx) -> int:
    import finsy as fy

    from p4mcc.controller import fleet

    a = ctx.args

    async def do(sw: fy.Switch) -> list[dict[str, Any]]:
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
                "match": {t.match_fields[k].name: fmt_value(t.match_fields[k].name, t.match_fields[k].bitwidth, v)
                          for k, v in (e.match or {}).items()},
                "action": schema.actions[act.name].name if isinstance(act, fy.P4TableAction) else None,
                "params": ({k: fmt_param(schema, act, k, v) for k, v in act.args.items()}
                           if isinstance(act, fy.P4TableAction) else {}),
                "priority": e.priority,
                "const": e.is_const,
            })
        rows.sort(key=lambda r: (r["table"], not r["default"], json.dumps(r["match"], sort_keys=True)))
        return rows

    res = fleet_read(ctx, selected_targets(ctx, a.only), do)
    if a.json:
        print_json({"tables": {sw: res.results[sw] for sw in sorted(res.results)},
                     "errors": [str(f) for f in res.faults]})
    else:
        rows = []
        for sw in sorted(res.results):
            for r in res.results[sw]:
                match = "(default)" if r["default"] else " ".join(f"{k}={v}" for k, v in r["match"].items())
                params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
                prio = f" prio={r['priority']}" if r["priority"] else ""
                rows.append([sw, r["table"], match + prio, f"{r['action']}({params})"])
        print(text_table(["switch", "table", "match", "action"], rows))
    return faults_exit(res)


def cmd_watch(ctx: Ctx) -> int:
    from rich.live import Live
    from rich.table import Table

    from p4mcc.controller import fleet

    a = ctx.args
    p = safe_plan(ctx)
    targets = list(ctx.targets.values())

    async def loop() -> int:
        opened: dict[str, fy.Switch] = {}
        faults: list[fleet.SwitchFault] = []
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
                            rows = await read_counters(sw)
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
                            table.add_row(name, short, index_label(ctx, name, r["counter"], r["index"], p),
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

    return run_async(loop())


def cmd_events(ctx: Ctx) -> int:
    from p4mcc.controller import fleet
    from p4mcc.controller.events import EventLog, read_events

    a = ctx.args
    if a.once:
        for rec in read_events(ctx.events_path):
            print(json.dumps(rec) if a.json else format_event(rec))
        return 0
    desired, p = desired_plan(ctx)
    pipeline = pipeline_of(ctx)

    def show(rec: dict[str, Any]) -> None:
        print(json.dumps(rec) if a.json else format_event(rec), flush=True)

    log = EventLog(ctx.events_path, sink=show)
    from p4mcc.controller.querier import timings

    query = timings(a.membership_timeout)[0] if a.membership_timeout > 0 else None
    ctl = fleet.Controller(list(ctx.targets.values()), desired, pipeline, log, election_id=a.election_id,
                           query_interval=query, below=p.below if p is not None else {})

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
        run_async(go())
    finally:
        log.close()
    return 0


#: ``p4mcc ctl COMMAND`` -> the function that runs it.
COMMANDS: dict[str, Callable[[Ctx], int]] = {
    "apply": cmd_apply, "groups": cmd_groups, "sessions": cmd_sessions, "members": cmd_members,
    "counters": cmd_counters, "tables": cmd_tables, "watch": cmd_watch, "events": cmd_events,
}


def main(args: argparse.Namespace) -> int:
    """Run one ``p4mcc ctl`` command; every failure is one line, status 2."""
    from p4mcc.controller import fleet
    from p4mcc.controller.desired import DesiredStateError
    from p4mcc.controller.intent import IntentError
    from p4mcc.controller.pipeline import PipelineError
    from p4mcc.controller.topology import TopologyError

    fleet.quiet_finsy(args.verbose)
    if not getattr(args, "ctl_command", None):
        print("p4mcc ctl: give a command (apply, groups, sessions, members, counters, tables, watch, events)",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        ctx = build_ctx(args)
        return int(COMMANDS[args.ctl_command](ctx) or 0)
    except fleet.SwitchFault as f:
        print(str(f), file=sys.stderr)
    except CliError as exc:
        print(str(exc), file=sys.stderr)
    except (TopologyError, DesiredStateError, PipelineError, IntentError) as exc:
        print(f"p4mcc ctl: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        print("p4mcc ctl: a switch ended the session (run with -v for its reason)", file=sys.stderr)
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback unless asked
        if args.verbose:
            raise
        print(f"p4mcc ctl: internal error: {type(exc).__name__}: {exc} (run with -v for details)", file=sys.stderr)
    return EXIT_ERROR
