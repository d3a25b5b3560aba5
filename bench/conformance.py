"""Run p4c's v1model STF conformance tests against the built-in switch.

    python bench/conformance.py --p4c-testdata /path/to/p4c/testdata [-j 2] [--markdown FILE]

Selects every ``p4_16_samples/*.p4`` (and ``p4_16_samples/parser-inline/*.p4``)
that includes ``v1model.p4`` and has an ``.stf`` beside it, skips the programs p4c's BMv2 back end lists as expected
to fail (``--xfail-list`` reads them from p4c's ``backends/bmv2/CMakeLists.txt``
when given, else the built-in list below), runs each test in its own process
with a time limit and prints pass / fail / unsupported / compile-error per
test and the pass rate.  p4c's files are read in place and never copied.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import time

# p4c's BMv2 XFAIL_TESTS that are v1model programs (backends/bmv2/CMakeLists.txt).
XFAIL = {
    "issue907-bmv2.p4", "issue986-bmv2.p4", "issue1062-bmv2.p4", "issue1193-bmv2.p4",
    "issue1205-bmv2.p4", "issue692-bmv2.p4", "issue1765-bmv2.p4", "issue1765-1-bmv2.p4",
    "issue1882-bmv2.p4", "issue1882-1-bmv2.p4", "issue2664-bmv2.p4", "hashing-non-tuple-bmv2.p4",
    "issue584-1-bmv2.p4",
}

STATUS = {0: "pass", 1: "fail", 3: "unsupported", 4: "compile-error"}


def read_xfail(cmake: str) -> set[str]:
    text = open(cmake, encoding="utf-8").read()
    m = re.search(r"set \(XFAIL_TESTS(.*?)\n\)", text, re.S)
    if not m:
        return set(XFAIL)
    return {os.path.basename(x) for x in re.findall(r"testdata/p4_16_samples/(\S+\.p4)", m.group(1))}


def select(testdata: str, xfail: set[str]) -> tuple[list[str], list[str]]:
    """p4_16_samples/*.p4 and p4_16_samples/parser-inline/*.p4 (p4c runs both on BMv2)."""
    base = os.path.join(testdata, "p4_16_samples")
    tests, skipped = [], []
    files = [os.path.join(base, f) for f in sorted(os.listdir(base))]
    inline = os.path.join(base, "parser-inline")
    if os.path.isdir(inline):
        files += [os.path.join(inline, f) for f in sorted(os.listdir(inline))]
    for p in files:
        f = os.path.basename(p)
        if not f.endswith(".p4"):
            continue
        if not os.path.isfile(p) or not os.path.isfile(p[:-3] + ".stf"):
            continue
        with open(p, encoding="utf-8", errors="replace") as fh:
            if "v1model.p4" not in fh.read():
                continue
        (skipped if f in xfail else tests).append(p)
    return tests, skipped


def run_one(prog: str, timeout: float) -> tuple[str, str, float, str]:
    t0 = time.time()
    cmd = [sys.executable, "-m", "p4switch.stf", prog, prog[:-3] + ".stf", "-I", os.path.dirname(prog)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        status = STATUS.get(r.returncode, "crash")
        detail = (r.stdout + r.stderr).strip().splitlines()
        if status == "pass":
            why = ""
        elif status == "crash":
            why = detail[-1] if detail else f"exit {r.returncode}"
        else:
            why = next((x for x in detail if not x.startswith("FAIL")), detail[0] if detail else "")
    except subprocess.TimeoutExpired:
        status, why = "timeout", f"> {timeout:.0f} s"
    return os.path.basename(prog), status, time.time() - t0, why[:200]


BUILD_SCRIPT = r"""
import sys
from p4switch.frontend import compile_file, P4Error
from p4switch.interp import Switch, UnsupportedError
try:
    prog = compile_file(sys.argv[1])
except P4Error as e:
    print("compile-error", str(e).splitlines()[0]); sys.exit(0)
try:
    sw = Switch(prog)
except UnsupportedError as e:
    print("unsupported", str(e).split(": ", 1)[-1]); sys.exit(0)
for port in (0, 1, 511):
    for data in (b"", bytes(64), bytes(range(256)) * 4):
        sw.process(port, data)
print("ok" if not sw.stats["errors"] else "runtime-fault", sw.last_error or "")
"""


def build_all(testdata: str, timeout: float) -> int:
    """Lower every v1model program (with or without an STF file) and push a
    few packets through it: how much of the language the interpreter takes."""
    base = os.path.join(testdata, "p4_16_samples")
    progs = []
    for f in sorted(os.listdir(base)):
        p = os.path.join(base, f)
        if f.endswith(".p4") and os.path.isfile(p):
            with open(p, encoding="utf-8", errors="replace") as fh:
                if "v1model.p4" in fh.read():
                    progs.append(p)
    counts: dict[str, int] = {}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for p in progs:
        try:
            r = subprocess.run([sys.executable, "-c", BUILD_SCRIPT, p], capture_output=True, text=True,
                               timeout=timeout, cwd=root)
            line = (r.stdout.strip().splitlines() or [f"crash {r.stderr.strip().splitlines()[-1:]}"])[-1]
        except subprocess.TimeoutExpired:
            line = "timeout"
        status = line.split(" ", 1)[0]
        counts[status] = counts.get(status, 0) + 1
        if status != "ok":
            print(f"{status:14s} {os.path.basename(p):50s} {line.split(' ', 1)[-1][:100]}", flush=True)
    print(f"\n{len(progs)} v1model programs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p4c-testdata", required=True, help="p4c's testdata directory")
    ap.add_argument("--xfail-list", help="p4c's backends/bmv2/CMakeLists.txt")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--markdown", help="write the result table here")
    ap.add_argument("-k", help="only tests whose name contains this")
    ap.add_argument("--build-all", action="store_true",
                    help="instead: lower every v1model program (STF or not) and run a few packets")
    args = ap.parse_args()
    if args.build_all:
        return build_all(args.p4c_testdata, args.timeout)
    xfail = read_xfail(args.xfail_list) if args.xfail_list else set(XFAIL)
    tests, skipped = select(args.p4c_testdata, xfail)
    if args.k:
        tests = [t for t in tests if args.k in os.path.basename(t)]
    results = []
    with cf.ThreadPoolExecutor(max_workers=args.j) as ex:
        for res in ex.map(lambda p: run_one(p, args.timeout), tests):
            results.append(res)
            print(f"{res[1]:14s} {res[0]:50s} {res[2]:6.1f}s  {res[3]}", flush=True)
    counts: dict[str, int] = {}
    for r in results:
        counts[r[1]] = counts.get(r[1], 0) + 1
    n = len(results)
    passed = counts.get("pass", 0)
    rate = 100.0 * passed / n if n else 0.0
    print(f"\n{n} tests ({len(skipped)} expected-to-fail skipped): "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; pass rate {rate:.1f}%")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("| test | result | note |\n|---|---|---|\n")
            for name, status, _, why in results:
                f.write(f"| {name} | {status} | {why.replace('|', '/')} |\n")
            f.write(f"\n{n} tests, {passed} pass ({rate:.1f}%); "
                    + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
