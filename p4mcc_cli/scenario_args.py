"""The arguments every scenario-running command shares, and reading the scenario they name.

``p4mcc sim`` and ``p4mcc run`` take the same scenario file, overrides and
capture flags and report a bad one the same way; this module is the one place
that does it, so the two engines cannot drift in what they accept.
"""

from __future__ import annotations

import argparse
import sys

from p4mcc.scenario.capture import CaptureSpec, add_pcap_arguments, capture_from_args

__all__ = ["EXIT_BAD_INPUT", "add_pcap_arguments", "add_scenario_arguments", "capture_or_none",
           "load_from_args", "out_dir"]
from p4mcc.scenario.model import Scenario, ScenarioError, load_scenario, parse_steady_window

#: Exit status of a command given bad input (argparse uses 2 too).
EXIT_BAD_INPUT = 2


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """The scenario file, its overrides (``--out``, ``--seed``, ``--duration``, ``--steady-window``)
    and the capture flags (``--pcap`` and its filters, owned by :mod:`scenario.capture`)."""
    p.add_argument("scenario", help="scenario file (YAML or JSON)")
    p.add_argument("--out", help="results directory (default results/<scenario name>)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--duration", type=float, help="override the scenario's duration (s)")
    p.add_argument("--steady-window", metavar="W",
                   help="steady-state window reported beside the whole run: a fraction of the run "
                        "(0.5: the second half, the default) or START:END seconds")


def load_from_args(args: argparse.Namespace, prog: str) -> Scenario | None:
    """The scenario named on the command line with its overrides applied.

    A bad file or override prints one clear message (a header and one line
    per problem, with its field path) and returns None.
    """
    try:
        steady = None if args.steady_window is None else parse_steady_window(args.steady_window)
    except ValueError as e:
        print(f"{prog}: --steady-window: {e}", file=sys.stderr)
        return None
    try:
        return load_scenario(args.scenario).with_overrides(seed=args.seed, duration=args.duration,
                                                           steady_window=steady)
    except ScenarioError as e:
        print(f"{prog}: {args.scenario}: invalid scenario:", file=sys.stderr)
        for prob in e.problems:
            print(f"  {prob}", file=sys.stderr)
        return None
    except OSError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


def out_dir(args: argparse.Namespace, sc: Scenario) -> str:
    """``--out``, or ``results/<scenario name>``."""
    return str(args.out or f"results/{sc.name}")


def capture_or_none(args: argparse.Namespace, sc: Scenario, prog: str) -> tuple[bool, CaptureSpec | None]:
    """The capture the flags and the scenario ask for: (ok, spec); a bad flag prints why and gives (False, None)."""
    try:
        return True, capture_from_args(args, sc)
    except ValueError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return False, None
