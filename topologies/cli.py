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
from typing import Callable, Sequence

EXIT_NOT_BUILT = 2


def not_built(name: str, issue: str) -> Callable[[argparse.Namespace], int]:
    """A command body for a subcommand whose implementation has not landed."""

    def run(_args: argparse.Namespace) -> int:
        print(f"p4mcc {name}: not built yet ({issue})", file=sys.stderr)
        return EXIT_NOT_BUILT

    return run


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
        return EXIT_NOT_BUILT
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


def register_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario in Mininet emulation")
    p.add_argument("scenario", help="scenario file (YAML or JSON)")
    p.add_argument("--target", choices=["builtin", "bmv2"], default="builtin")
    p.add_argument("--duration", type=float, help="override the scenario's duration (s)")
    p.add_argument("--out", help="results directory")
    p.set_defaults(func=not_built("run", "Mininet emulation"))


def register_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="re-render a results folder, or compare two")
    p.add_argument("dirs", nargs="+", help="one results folder, or two to compare")
    p.set_defaults(func=not_built("report", "results and plots"))


if __name__ == "__main__":
    sys.exit(main())
