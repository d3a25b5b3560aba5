"""Measure the front end against a local copy of p4c's test programs.

    python -m p4mcc.p4switch.frontend.samples --p4c-testdata DIR [-v]

``DIR`` is p4c's ``testdata`` folder (from a checkout of p4lang/p4c; its
files are not part of this project).  Two numbers are printed:

* accepted: v1model programs in ``p4_16_samples`` that have an ``.stf``
  test and compile without error (these must all be accepted); also for
  all v1model programs there and for those that include only core.p4;
* rejected: v1model/core programs in ``p4_16_errors`` that p4c rejects and
  that we reject too (some of those errors are only detected by p4c's back
  end or P4Info generation, so 100% is not expected).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import sys
import time

from . import compile_file
from .errors import P4Error

_OTHER_ARCHS = ("psa.p4", "ebpf_model.p4", "ubpf_model.p4", "tna.p4", "pna.p4", "dpdk", "xdp_model.p4")


def v1model_stf_programs(testdata: str) -> list[str]:
    out = []
    for stf in sorted(glob.glob(os.path.join(testdata, "p4_16_samples", "*.stf"))):
        p4 = stf[:-4] + ".p4"
        if os.path.exists(p4):
            with open(p4, encoding="utf-8", errors="replace") as f:
                if "v1model.p4" in f.read():
                    out.append(p4)
    return out


def sample_programs(testdata: str, wanted: str) -> list[str]:
    """All ``p4_16_samples`` programs for ``v1model`` (include v1model.p4) or
    ``core`` (include core.p4 and nothing else)."""
    out = []
    for p4 in sorted(glob.glob(os.path.join(testdata, "p4_16_samples", "*.p4"))):
        if not os.path.isfile(p4):
            continue
        with open(p4, encoding="utf-8", errors="replace") as f:
            text = f.read()
        includes = set(re.findall(r'#include\s*[<"]([^>"]+)[>"]', text))
        if wanted == "v1model" and "v1model.p4" in text:
            out.append(p4)
        elif wanted == "core" and includes and includes <= {"core.p4"}:
            out.append(p4)
    return out


def count_accepted(programs: list[str], samples_dir: str) -> int:
    ok = 0
    for p in programs:
        try:
            compile_file(p, [samples_dir])
            ok += 1
        except P4Error:
            pass
    return ok


def error_programs(testdata: str) -> list[str]:
    out = []
    for p4 in sorted(glob.glob(os.path.join(testdata, "p4_16_errors", "*.p4"))):
        with open(p4, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if not any(a in text for a in _OTHER_ARCHS):
            out.append(p4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4c-testdata", required=True, help="p4c's testdata directory")
    ap.add_argument("-v", action="store_true", help="list every failure")
    args = ap.parse_args(argv)
    samples_dir = os.path.join(args.p4c_testdata, "p4_16_samples")

    good = v1model_stf_programs(args.p4c_testdata)
    t0 = time.perf_counter()
    reasons: collections.Counter[str] = collections.Counter()
    ok = 0
    for p in good:
        try:
            compile_file(p, [samples_dir])
            ok += 1
        except P4Error as e:
            reasons[e.message] += 1
            if args.v:
                print(f"  rejected {e.format(with_source=False)}")
    dt = time.perf_counter() - t0
    print(f"p4_16_samples (v1model, with .stf): {ok}/{len(good)} accepted "
          f"({100.0 * ok / max(len(good), 1):.1f}%) in {dt:.1f} s")
    for msg, n in reasons.most_common():
        print(f"  {n:3d} x {msg}")

    for wanted in ("v1model", "core"):
        progs = sample_programs(args.p4c_testdata, wanted)
        n = count_accepted(progs, samples_dir)
        print(f"p4_16_samples (all {wanted} programs): {n}/{len(progs)} accepted")

    bad = error_programs(args.p4c_testdata)
    rejected = 0
    for p in bad:
        try:
            compile_file(p, [os.path.dirname(p), samples_dir])
            if args.v:
                print(f"  accepted {p}")
        except P4Error:
            rejected += 1
    print(f"p4_16_errors (core/v1model): {rejected}/{len(bad)} rejected "
          f"({100.0 * rejected / max(len(bad), 1):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
