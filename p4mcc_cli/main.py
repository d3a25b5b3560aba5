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


if __name__ == "__main__":
    sys.exit(main())
