"""Subcommands owned by the switch: ``check``, ``stf`` and ``switch``."""

from __future__ import annotations

import argparse

from topologies.cli import not_built


def register_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="compile a P4_16 program with the built-in front end")
    p.add_argument("program", help="P4_16 source file")
    p.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    p.add_argument("-D", dest="define", action="append", default=[], help="NAME=VALUE")
    p.add_argument("--p4info", help="write P4Info (text protobuf) to this file")
    p.set_defaults(func=not_built("check", "P4_16 front end"))


def register_stf(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stf", help="run an STF packet test against a P4 program")
    p.add_argument("program")
    p.add_argument("stf")
    p.set_defaults(func=not_built("stf", "STF runner"))


def register_switch(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("switch", help="run the built-in v1model switch with P4Runtime")
    p.add_argument("program", nargs="?", help="P4 program (omit with --no-p4)")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--grpc-server-addr", default="127.0.0.1:9559")
    p.add_argument("--cpu-port", type=int)
    p.add_argument("--no-p4", action="store_true")
    p.set_defaults(func=not_built("switch", "switch process with P4Runtime"))
