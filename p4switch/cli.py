"""Subcommands owned by the switch: ``check``, ``stf`` and ``switch``."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from p4mcc.hosts.input_files import input_file_problem


def _checked_inputs(cmd: str, fields: tuple[str, ...], run: Callable[[Any], int]) -> Callable[[Any], int]:
    """``run`` after refusing unreadable input files with one line and exit status 2."""

    def wrapped(args: Any) -> int:
        for f in fields:
            path = getattr(args, f, None)
            problem = input_file_problem(path) if path else None
            if problem:
                print(f"p4mcc {cmd}: {problem}", file=sys.stderr)
                return 2
        return run(args)

    return wrapped


def register_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="compile a P4_16 program with the built-in front end")
    p.add_argument("program", help="P4_16 source file")
    p.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    p.add_argument("-D", dest="define", action="append", default=[], help="NAME=VALUE")
    p.add_argument("--p4info", help="write P4Info (text protobuf) to this file")
    p.add_argument("--target", choices=["bmv2", "builtin"], default=None,
                   help="also check the target's restrictions: bmv2 (p4c-bm2-ss's back end; the "
                   "default for v1model programs) or builtin (the built-in switch: language rules only)")
    from .frontend.check_cmd import run_check

    p.set_defaults(func=_checked_inputs("check", ("program",), run_check))


def register_stf(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stf",
        help="run an STF packet test against a P4 program",
        description="Run a p4c BMv2-style STF test on the built-in switch. Exit status: 0 pass, "
        "1 fail, 3 program uses something the interpreter does not support, 4 compile error.",
    )
    p.add_argument("program", help="P4_16 program (v1model)")
    p.add_argument("stf", help="STF test file")
    p.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    p.add_argument("-v", "--verbose", action="store_true", help="print packets and CLI read results")
    p.add_argument("--dump-python", action="store_true", help="print the generated pipeline code")
    p.add_argument("--pipeline", choices=["native", "interp"], default=None,
                   help="native: the program compiled to C (the default; $P4MCC_PIPELINE sets another); "
                        "interp: the interpreter (reference)")

    def _run(args: argparse.Namespace) -> int:
        from .stf import run_cli

        return run_cli(args)

    p.set_defaults(func=_checked_inputs("stf", ("program", "stf"), _run))


def register_switch(sub: argparse._SubParsersAction) -> None:
    """``p4mcc switch``: the flags ``simple_switch_grpc`` users type, plus link emulation."""
    p = sub.add_parser(
        "switch",
        help="run the built-in v1model switch with P4Runtime",
        description="Run the built-in v1model switch on real interfaces with a P4Runtime server. "
        "Accepts simple_switch_grpc's flags; links are emulated per port (--port-config, --link).",
    )
    p.add_argument("program", nargs="?", help="P4_16 program to load at start (omit with --no-p4)")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach switch port PORT to interface IFACE (repeatable)")
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    p.add_argument("--grpc-server-addr", default="127.0.0.1:9559", metavar="HOST:PORT",
                   help="P4Runtime server address (default 127.0.0.1:9559; port 0 picks a free one)")
    p.add_argument("--cpu-port", type=int, help="port whose traffic becomes PacketIn/PacketOut")
    p.add_argument("--no-p4", action="store_true", help="start without a program; wait for the controller's")
    p.add_argument("--log-console", action="store_true", help="log to stderr (one line per packet at debug level)")
    p.add_argument("--log-file", metavar="FILE", help="log to FILE")
    p.add_argument("-L", "--log-level", default="debug",
                   choices=["trace", "debug", "info", "warn", "error", "off"],
                   help="log level when logging is on (default debug, as BMv2 logs everything)")
    p.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                   help="write <iface>_in.pcap and <iface>_out.pcap per port into DIR (default .)")
    p.add_argument("-I", dest="include", action="append", default=[], help="include directory for the program")
    p.add_argument("-D", dest="define", action="append", default=[], help="NAME=VALUE for the program")
    p.add_argument("--port-config", metavar="FILE", help="per-port link emulation settings (YAML or JSON)")
    p.add_argument("--link", action="append", default=[], metavar="PORT[:DIR]:KEY=VAL,...",
                   help="link emulation for one port, e.g. 2:egress:rate=10Mbps,delay=5ms,queue=100,loss=0.01 "
                   "(DIR egress, ingress or both; repeatable)")
    p.add_argument("--link-control", metavar="SOCKET",
                   help="take link changes while running on this Unix socket (p4switch/linkctl.py)")
    p.add_argument("--p4info", metavar="FILE", help="write the loaded program's P4Info to FILE")
    p.add_argument("--seed", type=int, default=0, help="seed of the loss draws and the random extern")
    p.add_argument("--pipeline", choices=["native", "interp"], default=None,
                   help="native: the program compiled to C (the default; the interpreter, with a "
                        "one-line notice, where it cannot be built); interp: the interpreter, the reference "
                        "($P4MCC_PIPELINE sets the default)")
    p.add_argument("--pipeline-cache", metavar="DIR",
                   help="keep compiled pipelines in DIR and load them at start, so a restarted switch "
                   "does not compile the controller's program again (DIR must be writable only by you)")
    p.add_argument("--standby", action="store_true",
                   help="warm up (compile, load the pipeline cache), then wait for a line 'go' on stdin "
                   "before opening the ports and serving")
    for flag, why in _BMV2_UNSUPPORTED.items():
        p.add_argument(flag, nargs="?", action=_Unsupported, help=argparse.SUPPRESS, why=why)
    p.set_defaults(func=_checked_inputs("switch", ("program", "port_config"), _run_switch))


_BMV2_UNSUPPORTED = {
    "--thrift-port": "the built-in switch has no Thrift server; use P4Runtime (--grpc-server-addr)",
    "--nanolog": "nanomsg event logging is not implemented; use --log-console or --log-file",
    "--debugger": "the BMv2 debugger protocol is not implemented",
    "--debugger-addr": "the BMv2 debugger protocol is not implemented",
    "--notifications-addr": "nanomsg notifications are not implemented; digests arrive on the P4Runtime stream",
    "--restore-state": "state snapshots are not implemented",
    "--dump-packet-data": "use --pcap DIR to record packets",
    "--use-files": "file-backed ports are not implemented; use --pcap and real interfaces",
    "--packet-in": "nanomsg packet-in is not implemented; use --cpu-port and P4Runtime",
    "--json": "the built-in switch loads P4_16 source, not BMv2 JSON: give the .p4 program",
    "--max-port-count": "ports are not limited; omit the flag",
    "--priority-queues": "priority queues are not implemented",
    "--drop-port": "the drop port is 511 as in v1model; omit the flag",
    "--dump-json": "there is no BMv2 JSON to dump",
    "--pipeline-config": "pass the P4 program as a path or through SetForwardingPipelineConfig",
}


class _Unsupported(argparse.Action):
    """Refuses a BMv2 flag the built-in switch does not implement, saying why."""

    def __init__(self, *args, why: str = "", **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kw)
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[no-untyped-def]
        parser.error(f"BMv2 flag {option_string} is not supported: {self.why}")


def _run_switch(args: argparse.Namespace) -> int:
    from .switchd import options_from_args, main_with

    try:
        opts = options_from_args(args)
    except ValueError as e:
        print(f"p4mcc switch: {e}", file=sys.stderr)
        return 2
    return main_with(opts)
