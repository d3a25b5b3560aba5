"""``p4mcc ctl``: its arguments.

Parsing only: each command's options, no imports of the controller (so
``p4mcc --help`` stays fast).  :func:`run_command` hands the parsed namespace
to :mod:`p4mcc.cli.ctl.commands`.
"""

from __future__ import annotations

import argparse

from p4mcc.cli.ctl.context import DEFAULT_STATE_DIR


def _election_id(text: str) -> int:
    """P4Runtime's election_id is an unsigned 128-bit number; the controller
    writes, so it must be able to become primary: at least 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value < 1 << 128:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..2^128-1 (an unsigned 128-bit number)")
    return value


def _membership_timeout(text: str) -> float:
    """0 (no ageing) or a timeout whose IGMP query interval is longer than
    the shortest response time a query can ask for (``controller.querier``)."""
    from p4mcc.controller.querier import MIN_QUERY_INTERVAL_S, timings

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value == 0:
        return 0.0
    if not 0 < value < float("inf") or timings(value)[0] <= MIN_QUERY_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{text}: 0 (no ageing) or a timeout whose query interval is longer than "
            f"{MIN_QUERY_INTERVAL_S:g} s (a timeout above {MIN_QUERY_INTERVAL_S / timings(1.0)[0]:.2f} s)")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``p4mcc ctl`` and its commands; the chosen one is ``args.ctl_command``."""
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
    p.add_argument("--election-id", type=_election_id, default=10,
                   help="election id for writes, 1..2^128-1 (default 10)")
    p.add_argument("--retry", type=float, default=5.0, metavar="SECONDS",
                   help="keep retrying unreachable switches this long (default 5)")
    p.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR), metavar="DIR",
                   help="where the intent file and event log live (default .p4mcc)")
    p.add_argument("--feedback-pps", default="auto", metavar="auto|N|off",
                   help="feedback each host port may send, packets/s (default auto: sized per host from "
                   "the scenario's sessions, 20000 for hosts in none; off: no policing)")
    p.add_argument("--membership-timeout", type=_membership_timeout, default=0.0, metavar="SECONDS",
                   help="age memberships after this long without a report (0: never); "
                   "events then sends IGMP queries")
    p.add_argument("-v", "--verbose", action="store_true", help="show finsy's log and tracebacks")
    cmds = p.add_subparsers(dest="ctl_command", metavar="COMMAND")

    def cmd(name: str, helptext: str, read: bool = True) -> argparse.ArgumentParser:
        c = cmds.add_parser(name, help=helptext, description=helptext)
        if read:
            c.add_argument("--json", action="store_true", help="print JSON instead of text")
        return c

    c = cmd("apply", "push the pipeline and the desired state (only the difference)")
    c.add_argument("--dry-run", action="store_true", help="print the difference, write nothing")
    c.add_argument("--keep", action="store_true", help="keep state the desired state does not mention")

    c = cmd("groups", "list PRE groups; add or delete a hand-made group")
    c.add_argument("action", nargs="?", choices=["list", "add", "del"], default="list")
    c.add_argument("group", nargs="?", type=int, help="PRE group id (1..65535)")
    c.add_argument("--ports", nargs="+", default=[], metavar="SWITCH-pN",
                   help="ports of the group, e.g. s1-p2 s1-p3 s2-p1")

    c = cmd("sessions", "list sessions; add or delete one")
    c.add_argument("action", nargs="?", choices=["list", "add", "del"], default="list")
    c.add_argument("session", nargs="?", type=int, help="session id")
    c.add_argument("--source", help="sending host")
    c.add_argument("--group", action="append", default=[], help="group address (repeatable)")
    c.add_argument("--receivers", nargs="+", default=[], help="receiving hosts (default: all)")
    c.add_argument("--mode", choices=["auto", "aggregate", "filter", "off"], default="auto")
    c.add_argument("--protocol", default="", help="protocol name (picks the mode when --mode auto)")

    cmd("members", "group memberships as the switches reported them (event log)")
    c = cmd("counters", "read counters")
    c.add_argument("--switch", dest="only", metavar="NAME", help="one switch")
    c.add_argument("--all", action="store_true", help="include zero counters")
    c = cmd("tables", "dump table entries by name")
    c.add_argument("--switch", dest="only", metavar="NAME", help="one switch")
    c = cmd("watch", "live rates per port and group", read=False)
    c.add_argument("--interval", type=float, default=1.0, metavar="SECONDS")
    c.add_argument("--count", type=int, default=0, help="stop after N refreshes (0: run until ^C)")
    c = cmd("events", "run the controller and follow its event log")
    c.add_argument("--once", action="store_true", help="print the log so far and exit")
    c.add_argument("--duration", type=float, default=0.0, metavar="SECONDS", help="stop after this long")
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed ``p4mcc ctl`` command (imports the controller only now)."""
    from p4mcc.cli.ctl.commands import main

    return main(args)
