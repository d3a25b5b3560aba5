"""``p4mcc host send|recv``: run a protocol agent over real UDP sockets.

Parameters come from the protocol's dataclass (``hosts.registry``): give them
as ``--param NAME=VALUE`` (repeatable) or in a JSON/TOML file with
``--params FILE`` (flags override the file).  ``--list-params`` prints every
parameter with its default.  ``--profile`` picks the protocol's profile
(``paper``, ``default``, ``stamped``) and ``--rule NAME=on|off`` switches one
named rule; ``--list-rules`` prints the rules and what each profile holds.  Metrics go to ``--metrics FILE`` as JSON lines
(``-`` for stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import sys
from typing import IO, Iterator

from p4mcc.hosts import registry
from p4mcc.hosts.addresses import group_problem
from p4mcc.hosts.core import node_id
from p4mcc.hosts.rules import DEFAULT, PROFILE_NAMES

EXIT_USAGE = 2


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("host", help="run a protocol agent (sender or receiver) on this host")
    roles = p.add_subparsers(dest="role", metavar="ROLE")
    for role, what in (("send", "sender"), ("recv", "receiver")):
        r = roles.add_parser(role, help=f"run the {what} of a session",
                             description=f"Run the {what} of a multicast session over UDP.")
        r.add_argument("--proto", required=True, choices=registry.names(),
                       help="protocol (registered in hosts/registry.py)")
        r.add_argument("--group", default="239.1.1.1", help="session multicast group (default %(default)s)")
        r.add_argument("--port", type=int, default=5000, help="session UDP port (default %(default)s)")
        r.add_argument("--session", type=int, default=1, help="session id (default %(default)s)")
        r.add_argument("--sender", help="sender's unicast address (feedback goes there); "
                       "for 'send' defaults to --local")
        r.add_argument("--local", default="127.0.0.1", help="this host's address (default %(default)s)")
        r.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="protocol parameter (repeatable)")
        r.add_argument("--params", metavar="FILE", help="protocol parameters from a JSON or TOML file")
        r.add_argument("--duration", type=float, help="stop after this many seconds")
        r.add_argument("--metrics", metavar="FILE", help="write JSON-lines metrics here ('-' = stdout)")
        r.add_argument("--traffic-interval", type=float, default=0.5, metavar="SECONDS",
                       help="seconds between cumulative byte/message counter records (0: none)")
        r.add_argument("--seed", type=int, default=0, help="seed of the agent's random choices")
        r.add_argument("--assistance", action="store_true",
                       help="the switches assist this session as its protocol's mode says "
                            "(the scenario's 'assistance'; the core is told, e.g. MTCP's folds)")
        r.add_argument("--profile", default=DEFAULT, choices=PROFILE_NAMES,
                       help="the protocol's profile: paper (the published algorithm), default "
                            "(paper plus the rules that earn their place) or stamped (default %(default)s)")
        r.add_argument("--rule", action="append", default=[], metavar="NAME=on|off",
                       help="switch one of the protocol's named rules on or off (repeatable)")
        r.add_argument("--list-params", action="store_true", help="list the protocol's parameters and exit")
        r.add_argument("--list-rules", action="store_true",
                       help="list the protocol's rules and profiles and exit")
        r.add_argument("--explain", action="store_true",
                       help="print each hook with the rules that run for it (outermost first) under "
                            "--profile and --rule, and exit")
        r.set_defaults(func=run_host)
    p.set_defaults(func=lambda _a: (p.print_help(), EXIT_USAGE)[1])


@contextlib.contextmanager
def _metrics_file(path: str | None) -> Iterator[IO[str] | None]:
    if path is None:
        yield None
    elif path == "-":
        yield sys.stdout
    else:
        with open(path, "a", encoding="utf-8") as fh:
            yield fh


def rule_switches(pairs: list[str]) -> dict[str, str]:
    """``--rule NAME=on|off`` flags as a mapping (raises ParamError)."""
    switches: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise registry.ParamError(f"--rule {pair!r} is not NAME=on|off")
        switches[name.strip()] = value.strip()
    return switches


def build_config(args: argparse.Namespace) -> tuple[registry.Protocol, registry.SessionConfig]:
    """Resolve protocol and parameters from parsed flags (raises ParamError)."""
    proto = registry.get(args.proto)
    values: dict[str, object] = {}
    if args.params:
        values.update(registry.load_params_file(args.params))
    values.update(registry.parse_pairs(args.param))
    params = proto.parse_params(values)
    sender = args.sender or (args.local if args.role == "send" else None)
    if sender is None:
        raise registry.ParamError("--sender is required for 'recv'")
    for name, ip in (("--local", args.local), ("--sender", sender), ("--group", args.group)):
        try:
            node_id(ip)
        except ValueError:
            raise registry.ParamError(f"{name}: {ip!r} is not an IPv4 address") from None
        multicast = ipaddress.IPv4Address(ip).is_multicast
        if name == "--group" and (why := group_problem(ip)):
            raise registry.ParamError(f"--group {why}")
        if name != "--group" and multicast:
            raise registry.ParamError(f"{name} {ip} is a multicast address; give a host's unicast address")
    if not 0 < args.port < 65536:
        raise registry.ParamError(f"--port {args.port} is not a UDP port")
    if not 0 < args.session < 2**32:
        raise registry.ParamError(f"--session {args.session} is outside 1..{2**32 - 1} (the wire's 32-bit session id)")
    if args.duration is not None and not args.duration > 0:
        raise registry.ParamError(f"--duration {args.duration:g} must be a positive number of seconds")
    if not args.traffic_interval >= 0:
        raise registry.ParamError(f"--traffic-interval {args.traffic_interval:g} must be 0 or more")
    rules = proto.resolve_rules(args.profile, rule_switches(args.rule))
    cfg = registry.SessionConfig(session_id=args.session, group=args.group, port=args.port,
                                 sender=sender, local=args.local, params=params, seed=args.seed,
                                 assisted=proto.assisted(args.assistance), rules=rules)
    return proto, cfg


def list_rules(proto: registry.Protocol) -> list[str]:
    """``--list-rules``: each rule (name, summary, reason), then each profile's rule list."""
    book = proto.rules
    lines = [f"{r.name:24} {r.summary} ({r.reason})" for r in book.rules] or [f"{proto.name} has no named rule"]
    for name, members in book.profiles.items():
        lines.append(f"profile {name}: {', '.join(members) if members else 'no rule'}")
    return lines


def run_host(args: argparse.Namespace) -> int:
    from p4mcc.hosts.driver import UdpDriver

    try:
        proto = registry.get(args.proto)
        if args.list_params:
            for name, typ, default in registry.describe_params(proto.params_type):
                print(f"{name:24} {typ:8} {default}")
            return 0
        if args.list_rules:
            print("\n".join(list_rules(proto)))
            return 0
        if args.explain:
            from p4mcc.hosts.explain import explain_lines

            rules = proto.resolve_rules(args.profile, rule_switches(args.rule))
            print("\n".join(explain_lines(proto.name, args.profile, rules)))
            return 0
        proto, cfg = build_config(args)
        ep = proto.sender(cfg) if args.role == "send" else proto.receiver(cfg)
    except (registry.ParamError, OSError) as exc:
        print(f"p4mcc host {args.role}: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def main(metrics: IO[str] | None) -> None:
        driver = UdpDriver(ep, cfg, role=args.role, metrics=metrics, traffic_interval=args.traffic_interval)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, driver.stop)
        await driver.run(args.duration)

    try:
        with _metrics_file(args.metrics) as fh:
            asyncio.run(main(fh))
    except OSError as exc:
        print(f"p4mcc host {args.role}: {exc}", file=sys.stderr)
        return 1
    return 0
