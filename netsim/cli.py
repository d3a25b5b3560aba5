"""``p4mcc sim SCENARIO``: run a scenario in virtual time."""

from __future__ import annotations

import argparse

from topologies.cli import not_built


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="run a scenario in the discrete-event simulator")
    p.add_argument("scenario")
    p.add_argument("--out", help="results directory")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=not_built("sim", "discrete-event simulator"))
