"""``p4mcc sim SCENARIO``: run a scenario in virtual time."""

from __future__ import annotations

import argparse
import sys

from p4mcc.cli.scenario_args import (EXIT_BAD_INPUT, add_pcap_arguments, add_scenario_arguments,
                                     capture_or_none, load_from_args, out_dir)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="run a scenario in the discrete-event simulator")
    add_scenario_arguments(p)
    p.add_argument("--switch", choices=["p4", "model"], default="p4",
                   help="switch nodes: the P4 program (p4, the default: compiled to native code where "
                        "it builds, else interpreted; $P4MCC_PIPELINE chooses) "
                        "or the Python model switch (model: replication only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    add_pcap_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from p4mcc.controller.desired import DesiredStateError
    from p4mcc.netsim.run import SimError, run_scenario
    from p4mcc.netsim.switches import SwitchUnavailable, choose_switch
    from p4mcc.reporting import results as R
    from p4mcc.reporting.console import table_console

    console = table_console()
    sc = load_from_args(args, "p4mcc sim")
    if sc is None:
        return EXIT_BAD_INPUT
    try:
        choice = choose_switch(args.switch, sc)
    except SwitchUnavailable as e:
        print(f"p4mcc sim: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = out_dir(args, sc)
    ok, capture = capture_or_none(args, sc, "p4mcc sim")
    if not ok:
        return EXIT_BAD_INPUT
    try:
        run = run_scenario(sc, out, progress=not args.quiet, switch=choice, capture=capture)
    except (SimError, DesiredStateError, SwitchUnavailable) as e:
        print(f"p4mcc sim: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:
        # a full disk or a folder we may not write: the folder keeps no completion mark
        print(f"p4mcc sim: cannot write the results to {out}: {e.strerror or e} (results incomplete)",
              file=sys.stderr)
        return 1
    if not args.quiet:
        console.print(R.summary_table(run.summary))
        console.print(f"{run.sim.events} events in {run.wall_s:.1f} s wall "
                      f"({sc.duration / max(run.wall_s, 1e-9):.1f} simulated s per wall s); "
                      f"results and plots in {out}/")
        if capture is not None:
            console.print(f"captures in {out}/pcaps/ (docs/captures.md: reading them in Wireshark)")
    return 0
