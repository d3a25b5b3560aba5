"""``p4mcc run SCENARIO``: run a scenario in Mininet emulation (needs root)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from p4mcc.cli.scenario_args import (EXIT_BAD_INPUT, add_pcap_arguments, add_scenario_arguments,
                                     capture_or_none, load_from_args, out_dir)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario in Mininet emulation (root)")
    add_scenario_arguments(p)
    p.add_argument("--target", choices=["auto", "builtin", "bmv2"], default="auto",
                   help="switch implementation: BMv2 simple_switch_grpc, the built-in p4mcc switch, or "
                        "auto (default): BMv2 when simple_switch_grpc and p4c-bm2-ss are on PATH")
    p.add_argument("--program", help="P4 program for the built-in switch (default p4src/mcc.p4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true",
                   help="write the results without their plots (p4mcc report OUT draws them later)")
    add_pcap_arguments(p)
    p.set_defaults(func=main)


def first_line(exc: BaseException) -> str:
    """What the user reads of an error that stops a run: its first line (the
    rest, a component's log tail, is in the run's logs folder)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def main(args: argparse.Namespace) -> int:
    from p4mcc.emulation.interrupts import Terminated, stop_on_terminate
    from p4mcc.emulation.mininet_net import ComponentError
    from p4mcc.emulation.plan import PlanError
    from p4mcc.emulation.run import EmulationError, run_emulation
    from p4mcc.emulation.shaping import ShapingError
    from p4mcc.p4switch.linkemu import LinkConfigError
    from p4mcc.reporting.console import table_console
    from p4mcc.reporting.results import summary_table

    scenario = load_from_args(args, "p4mcc run")
    if scenario is None:
        return EXIT_BAD_INPUT
    out = Path(out_dir(args, scenario))
    ok, capture = capture_or_none(args, scenario, "p4mcc run")
    if not ok:
        return EXIT_BAD_INPUT
    try:
        with stop_on_terminate():
            summary = run_emulation(scenario, out, target=args.target,
                                    program=Path(args.program) if args.program else None,
                                    progress=not args.no_progress, capture=capture,
                                    plots=not args.no_plots)
    except Terminated:
        print(f"p4mcc run: stopped by a signal; the network and its processes are removed (logs: {out}/logs)",
              file=sys.stderr)
        return 143
    except EmulationError as exc:
        # a failed component's log tail is part of the message: it helps, and is no traceback
        print(f"p4mcc run: {exc}", file=sys.stderr)
        return 1
    except (ComponentError, PlanError, ShapingError, LinkConfigError) as exc:
        print(f"p4mcc run: {first_line(exc)} (logs: {out}/logs)", file=sys.stderr)
        return 1
    except OSError as exc:
        # a full disk or a folder we may not write: the folder keeps no completion mark
        print(f"p4mcc run: cannot write the results to {out}: {exc.strerror or exc} (results incomplete)",
              file=sys.stderr)
        return 1
    table_console().print(summary_table(summary))
    print(f"results: {out}/" if args.no_plots else f"results and plots: {out}/")
    return 0
