"""The ``p4mcc`` command: a dispatcher over subcommands registered by packages.

Each package that owns a subcommand exposes a ``register(subparsers)``
function and lists it under the ``p4mcc.commands`` entry-point group in
``pyproject.toml``.  The dispatcher only discovers and calls them, so a new
command never edits this file.  A registered function adds its parser and sets
``func`` (taking the parsed namespace, returning an exit status).
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Sequence

#: Exit status of a command line that names no command (argparse uses 2 too).
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p4mcc",
        description="Switch-assisted multicast congestion control on P4 switches.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for ep in sorted(entry_points(group="p4mcc.commands"), key=lambda e: e.name):
        ep.load()(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


def register_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario in Mininet emulation (root)")
    p.add_argument("scenario", help="scenario file (YAML or JSON)")
    p.add_argument("--target", choices=["builtin", "bmv2"], default="builtin",
                   help="switch implementation: built-in p4mcc switch or BMv2 simple_switch_grpc")
    p.add_argument("--duration", type=float, help="override the scenario's duration (s)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--steady-window", metavar="W",
                   help="steady-state window reported beside the whole run: a fraction of the run "
                        "(0.5: the second half, the default) or START:END seconds")
    p.add_argument("--out", help="results directory (default results/<scenario name>)")
    p.add_argument("--program", help="P4 program for the built-in switch (default p4src/mcc.p4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from scenario.capture import add_pcap_arguments

    add_pcap_arguments(p)
    p.set_defaults(func=_run_command)


def _run_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from emulation.run import EmulationError, run_emulation
    from emulation.plan import PlanError
    from scenario.model import ScenarioError, load_scenario, parse_steady_window

    try:
        steady = None if args.steady_window is None else parse_steady_window(args.steady_window)
    except ValueError as e:
        print(f"p4mcc run: --steady-window: {e}", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(args.scenario).with_overrides(seed=args.seed, duration=args.duration,
                                                               steady_window=steady)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(f"{args.scenario}: {problem}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"p4mcc run: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or f"results/{scenario.name}")
    from scenario.capture import capture_from_args

    try:
        capture = capture_from_args(args, scenario)
    except ValueError as exc:
        print(f"p4mcc run: {exc}", file=sys.stderr)
        return 2
    try:
        summary = run_emulation(scenario, out, target=args.target,
                                program=Path(args.program) if args.program else None,
                                progress=not args.no_progress, capture=capture)
    except (EmulationError, PlanError) as exc:
        print(f"p4mcc run: {exc}", file=sys.stderr)
        return 1
    from rich.console import Console

    from reporting.results import summary_table

    Console().print(summary_table(summary))
    print(f"results and plots: {out}/")
    return 0


def register_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="re-render a results folder, compare two, or draw a sweep")
    p.add_argument("dirs", nargs="+", help="one results folder, or two to compare, or a sweep's folder")
    sw = p.add_argument_group("sweep folders (p4mcc sweep)")
    sw.add_argument("--metric", help="table column to draw (default steady_tcp_friendliness)")
    sw.add_argument("--kind", default="session", choices=["session", "receiver", "tcp", "link"],
                    help="which rows (default session)")
    sw.add_argument("--x", metavar="AXIS", help="axis for the line plot (default: every numeric axis)")
    sw.add_argument("--heatmap", nargs=2, metavar=("X", "Y"),
                    help="axes of the heatmap (default: the first two numeric axes)")

    def run(args: argparse.Namespace) -> int:
        from reporting.report import main as report_main

        return report_main(args)

    p.set_defaults(func=run)


if __name__ == "__main__":
    sys.exit(main())
