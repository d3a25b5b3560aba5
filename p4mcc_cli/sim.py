"""``p4mcc sim SCENARIO``: run a scenario in virtual time."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="run a scenario in the discrete-event simulator")
    p.add_argument("scenario", help="scenario file (YAML or JSON)")
    p.add_argument("--out", help="results directory (default results/<scenario name>)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--duration", type=float, help="override the scenario's duration (s)")
    p.add_argument("--steady-window", metavar="W",
                   help="steady-state window reported beside the whole run: a fraction of the run "
                        "(0.5: the second half, the default) or START:END seconds")
    p.add_argument("--switch", choices=["p4", "model"], default="p4",
                   help="switch nodes: the P4 program through the interpreter (p4, default) "
                        "or the Python model switch (model: faster, replication only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    from scenario.capture import add_pcap_arguments

    add_pcap_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from controller.desired import DesiredStateError
    from netsim.run import SimError, run_scenario
    from netsim.switches import SwitchUnavailable, choose_switch
    from reporting import results as R
    from scenario.model import ScenarioError, load_scenario, parse_steady_window

    console = Console(stderr=False)
    try:
        steady = None if args.steady_window is None else parse_steady_window(args.steady_window)
    except ValueError as e:
        print(f"p4mcc sim: --steady-window: {e}", file=sys.stderr)
        return 2
    try:
        sc = load_scenario(args.scenario).with_overrides(seed=args.seed, duration=args.duration,
                                                         steady_window=steady)
    except ScenarioError as e:
        print(f"p4mcc sim: {args.scenario}: invalid scenario:", file=sys.stderr)
        for prob in e.problems:
            print(f"  {prob}", file=sys.stderr)
        return 2
    try:
        choice = choose_switch(args.switch, sc)
    except SwitchUnavailable as e:
        print(f"p4mcc sim: {e}", file=sys.stderr)
        return 2
    from scenario.capture import capture_from_args

    out = args.out or f"results/{sc.name}"
    try:
        capture = capture_from_args(args, sc)
    except ValueError as e:
        print(f"p4mcc sim: {e}", file=sys.stderr)
        return 2
    try:
        run = run_scenario(sc, out, progress=not args.quiet, switch=choice, capture=capture)
    except (SimError, DesiredStateError) as e:
        print(f"p4mcc sim: {e}", file=sys.stderr)
        return 2
    if not args.quiet:
        console.print(R.summary_table(run.summary))
        console.print(f"{run.sim.events} events in {run.wall_s:.1f} s wall "
                      f"({sc.duration / max(run.wall_s, 1e-9):.1f} simulated s per wall s); "
                      f"results and plots in {out}/")
        if capture is not None:
            console.print(f"captures in {out}/pcaps/ (docs/captures.md: reading them in Wireshark)")
    return 0
