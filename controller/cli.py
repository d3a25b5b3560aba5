"""``p4mcc ctl``: manage groups and sessions on a topology's switches."""

from __future__ import annotations

import argparse

from topologies.cli import not_built


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ctl", help="P4Runtime controller for a topology's switches")
    p.add_argument("--topology", help="scenario or topology.json")
    p.add_argument("--switch", action="append", default=[], metavar="NAME=ADDR")
    p.add_argument("action", nargs="?", help="apply | groups | sessions | members | ...")
    p.set_defaults(func=not_built("ctl", "P4Runtime controller"))
