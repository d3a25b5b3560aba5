"""``p4mcc host send|recv``: run a protocol agent over real UDP sockets."""

from __future__ import annotations

import argparse

from topologies.cli import not_built


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("host", help="run a protocol agent (sender or receiver) on this host")
    roles = p.add_subparsers(dest="role", metavar="ROLE")
    for role in ("send", "recv"):
        r = roles.add_parser(role, help=f"{role} side of a session")
        r.add_argument("--proto", required=True, choices=["webrc", "tfmcc", "rla", "mtcp", "vlmcc"])
        r.set_defaults(func=not_built(f"host {role}", "protocol agents and UDP driver"))
    p.set_defaults(func=not_built("host", "protocol agents and UDP driver"))
