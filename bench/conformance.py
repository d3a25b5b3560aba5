"""Run p4c's v1model STF conformance tests against the built-in switch.

    python bench/conformance.py --p4c-testdata /path/to/p4c/testdata [-j 2] [--markdown FILE]

Selects every ``p4_16_samples/*.p4`` (and ``p4_16_samples/parser-inline/*.p4``)
that includes ``v1model.p4`` and has an ``.stf`` beside it, skips the programs p4c's BMv2 back end lists as expected
to fail (``--xfail-list`` reads them from p4c's ``backends/bmv2/CMakeLists.txt``
when given, else the built-in list below), runs each test in its own process
with a time limit and prints pass / fail / unsupported / compile-error per
test and the pass rate.  p4c's files are read in place and never copied.

    python bench/conformance.py --p4c-testdata DIR --errors [--markdown FILE]

measures ``p4mcc check --target bmv2`` against ``p4c-bm2-ss`` (when on PATH):
which programs of p4c's BMv2 error corpus each rejects, whether p4mcc points
at a position p4c points at, and that p4mcc rejects none of the v1model STF
programs p4c accepts.
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
from p4mcc.p4switch.frontend import compile_file, P4Error
from p4mcc.p4switch.interp import Switch, UnsupportedError
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


CHECK_SCRIPT = r"""
import sys
from p4mcc.p4switch.frontend import compile_file, P4Error
from p4mcc.p4switch.frontend.bmv2 import bmv2_errors
try:
    errs = bmv2_errors(compile_file(sys.argv[1], [sys.argv[2]]))
except P4Error as e:
    errs = [e]
for e in errs:
    print("%s:%d:%d: %s" % (e.span.file if e.span else "", e.span.line if e.span else 0,
                             e.span.col if e.span else 0, e.message))
"""

P4C_ERROR = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\):(?: \[--W\w+=[\w-]+\])? ?(?:error|syntax error)")


def p4c_verdict(p4c: str, prog: str, timeout: float) -> tuple[bool, list[tuple[str, int, int]]]:
    """(rejected, error positions) of ``p4c-bm2-ss --arch v1model`` on ``prog``.
    A position's column is the first caret under the quoted source line."""
    out = os.path.join("/tmp", f"p4mcc-conformance-{os.getpid()}.json")
    try:
        r = subprocess.run([p4c, "--arch", "v1model", "-I", os.path.dirname(prog), "-o", out, prog],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return True, []
    finally:
        if os.path.exists(out):
            os.remove(out)
    lines = (r.stderr + r.stdout).splitlines()
    where = []
    for i, line in enumerate(lines):
        m = P4C_ERROR.match(line)
        if not m:
            continue
        col = 0
        if i + 2 < len(lines) and "^" in lines[i + 2]:
            col = lines[i + 2].index("^") + 1
        where.append((os.path.basename(m.group("file")), int(m.group("line")), col))
    return r.returncode != 0, where


def ours_verdict(prog: str, timeout: float) -> tuple[bool, list[tuple[str, int, int]], str]:
    """(rejected, error positions, first message) of ``p4mcc check --target bmv2``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        r = subprocess.run([sys.executable, "-c", CHECK_SCRIPT, prog, os.path.dirname(prog)],
                           capture_output=True, text=True, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return False, [], "timeout"
    where, first = [], ""
    for line in r.stdout.splitlines():
        m = re.match(r"^(.*?):(\d+):(\d+): (.*)$", line)
        if m:
            where.append((os.path.basename(m.group(1)), int(m.group(2)), int(m.group(3))))
            first = first or m.group(4)
    if r.returncode != 0:
        return False, [], "crash: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return bool(where), where, first


def error_corpus(testdata: str) -> list[tuple[str, str]]:
    """(set, program): all of p4_16_bmv_errors, and the v1model programs of
    p4_16_errors (the part of the language error corpus BMv2 compiles)."""
    out = []
    for sub, v1_only in (("p4_16_bmv_errors", False), ("p4_16_errors", True)):
        base = os.path.join(testdata, sub)
        for f in sorted(os.listdir(base)):
            p = os.path.join(base, f)
            if not f.endswith(".p4") or not os.path.isfile(p):
                continue
            if v1_only:
                with open(p, encoding="utf-8", errors="replace") as fh:
                    if "v1model.p4" not in fh.read():
                        continue
            out.append((sub, p))
    return out


def errors_mode(testdata: str, jobs: int, timeout: float, markdown: str | None) -> int:
    """``p4mcc check --target bmv2`` against p4c-bm2-ss: on the error corpus
    (must reject what p4c rejects, at the same file:line:col) and on the
    v1model STF programs (must accept what p4c accepts)."""
    import shutil

    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        print("p4c-bm2-ss is not on PATH: the error corpus is taken as rejected by p4c", flush=True)
    corpus = error_corpus(testdata)
    stf, _ = select(testdata, set(XFAIL))

    def judge(item: tuple[str, str]) -> tuple[str, str, bool, bool, bool, str]:
        sub, prog = item
        if p4c:
            ref_rej, ref_where = p4c_verdict(p4c, prog, 300)
        else:
            ref_rej, ref_where = sub != "samples", []
        rej, where, msg = ours_verdict(prog, timeout)
        same = bool(ref_where) and bool(set(ref_where) & set(where))
        return sub, os.path.basename(prog), ref_rej, rej, same, msg

    rows = []
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        for row in ex.map(judge, corpus + [("samples", p) for p in stf]):
            rows.append(row)
            sub, name, ref, ours, same, msg = row
            flag = "" if ref == ours else "  <-- differs"
            print(f"{sub:17s} {name:50s} p4c {'rejects' if ref else 'accepts'}, "
                  f"p4mcc {'rejects' if ours else 'accepts'}{' (same place)' if same else ''}{flag}"
                  f"  {msg[:80]}", flush=True)
    summary = []
    for sub in ("p4_16_bmv_errors", "p4_16_errors", "samples"):
        part = [r for r in rows if r[0] == sub]
        ref_rej = [r for r in part if r[2]]
        both = [r for r in ref_rej if r[3]]
        same = [r for r in both if r[4]]
        false_rej = [r for r in part if not r[2] and r[3]]
        summary.append((sub, len(part), len(ref_rej), len(both), len(same), len(false_rej)))
    print()
    lines = ["| set | programs | p4c rejects | p4mcc rejects too | at p4c's first-error position or another p4c error position | p4mcc rejects, p4c accepts |",
             "|---|---|---|---|---|---|"]
    for sub, n, ref, both, same, false_rej in summary:
        pct = f" ({100.0 * both / ref:.1f}%)" if ref else ""
        lines.append(f"| {sub} | {n} | {ref} | {both}{pct} | {same} | {false_rej} |")
    err = [x for x in summary if x[0] != "samples"]
    ref_t, both_t = sum(x[2] for x in err), sum(x[3] for x in err)
    lines.append(f"\nerror corpus: p4mcc rejects {both_t} of the {ref_t} programs p4c-bm2-ss rejects "
                 f"({100.0 * both_t / max(ref_t, 1):.1f}%)")
    print("\n".join(lines))
    if markdown:
        with open(markdown, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n\n| set | program | p4c | p4mcc | same place | p4mcc's first message |\n"
                    "|---|---|---|---|---|---|\n")
            for sub, name, ref, ours, same, msg in rows:
                if sub == "samples" and not ours:
                    continue
                f.write(f"| {sub} | {name} | {'rejects' if ref else 'accepts'} | "
                        f"{'rejects' if ours else 'accepts'} | {'yes' if same else ''} | "
                        f"{msg[:90].replace('|', '/')} |\n")
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
    ap.add_argument("--errors", action="store_true",
                    help="instead: p4mcc check --target bmv2 against p4c-bm2-ss on p4c's BMv2 error "
                    "corpus and on the v1model STF programs")
    args = ap.parse_args()
    if args.errors:
        return errors_mode(args.p4c_testdata, args.j, args.timeout, args.markdown)
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
