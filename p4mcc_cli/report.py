"""``p4mcc report DIR [DIR2]``: re-render a results folder, compare two, or draw a sweep's folder.

Which of the two it is decides here, at the top: a run's folder is drawn by
:mod:`reporting.report`, a sweep's by :mod:`sweep.report` (the sweep layer
sits above the results layer, so the results layer never calls it).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="re-render a results folder, compare two, or draw a sweep")
    p.add_argument("dirs", nargs="+", help="one results folder, or two to compare, or a sweep's folder")
    sw = p.add_argument_group("sweep folders (p4mcc sweep)")
    sw.add_argument("--metric", help="table column to draw (default steady_tcp_friendliness)")
    sw.add_argument("--kind", default="session", choices=["session", "receiver", "tcp", "link"],
                    help="which rows (default session)")
    sw.add_argument("--x", metavar="AXIS", help="axis for the line plot (default: every numeric axis)")
    sw.add_argument("--heatmap", nargs=2, metavar=("X", "Y"),
                    help="axes of the heatmap (default: the first two numeric axes)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from p4mcc.reporting.report import report
    from p4mcc.sweep.report import is_sweep_dir, report_sweep

    dirs = list(args.dirs)
    if len(dirs) == 1 and is_sweep_dir(dirs[0]):
        return report_sweep(dirs[0], metric=args.metric, x=args.x, heatmap=args.heatmap, kind=args.kind)
    return report(dirs)
