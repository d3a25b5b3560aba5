"""The README's quick start, regenerated: the demo in the simulator, its table and one plot.

Runs ``p4mcc sim topologies/scenarios/demo.yaml`` in process (seed 1, as the
scenario says), puts the table it prints into README.md's generated section
``demo`` and copies its throughput plot to ``docs/img/demo-throughput.png``,
so the quick start shows what a newcomer's own run prints.

    .venv/bin/python bench/demo.py --docs     # what `make docs` runs
    .venv/bin/python bench/demo.py            # print only
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import docsection  # noqa: E402

SCENARIO = "topologies/scenarios/demo.yaml"
PLOT = ROOT / "docs" / "img" / "demo-throughput.png"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "demo-sim"), help="results folder of the run")
    ap.add_argument("--docs", action="store_true", help="write README.md's section and docs/img/demo-throughput.png")
    args = ap.parse_args(argv)
    from p4mcc.cli.main import main as p4mcc

    command = ["sim", SCENARIO, "--out", args.out]
    with docsection.Tee() as out:
        status = p4mcc(command)
    if status != 0:
        return status
    if args.docs:
        # The run's own folder is the reader's, not the doc's: show the one the quick start uses.
        table = out.text().replace(str(Path(args.out).resolve()), "results/demo-sim").replace(args.out,
                                                                                             "results/demo-sim")
        docsection.write_section(ROOT / "README.md", "demo", docsection.fenced(table),
                                 docsection.command_line("bench/demo.py", argv))
        PLOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(args.out) / "throughput.png", PLOT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
