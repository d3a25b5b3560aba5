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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``p4mcc`` parser; with ``argv`` naming a command, only that command's.

    Loading a command imports its package (the P4 front end, the controller,
    the plots), and an agent started in a host pays for all of them before its
    first packet.  So a command line that names a registered command loads
    that one alone; any other (none, ``--help``, a typo) loads them all, so
    the help lists every command and argparse names the valid choices.
    """
    parser = argparse.ArgumentParser(
        prog="p4mcc",
        description="Switch-assisted multicast congestion control on P4 switches.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = sorted(entry_points(group="p4mcc.commands"), key=lambda e: e.name)
    named = [ep for ep in commands if argv and ep.name == argv[0]]
    for ep in named or commands:
        ep.load()(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(args_in)
    args = parser.parse_args(args_in)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
