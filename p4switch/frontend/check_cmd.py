"""``p4mcc check PROG.p4 [-I DIR] [-D NAME[=VAL]] [--p4info FILE] [--target T]``.

Compiles a program with the built-in front end. On success it prints
nothing and exits 0 (like a compiler); on an error in the program it prints
``file:line:col: error: message``, the source line and a caret, and exits 1.

``--target bmv2`` (the default for v1model programs: BMv2 is the reference
target) also applies the BMv2 back end's restrictions (``bmv2.py``) and
prints every one the program breaks; ``--target builtin`` checks only what
the built-in switch needs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import compile_file
from .errors import P4Error

EXIT_OK = 0
EXIT_PROGRAM_ERROR = 1
EXIT_USAGE = 2


def parse_defines(items: Sequence[str]) -> dict[str, str]:
    """``-D NAME=VAL`` / ``-D NAME`` (value 1), as a C preprocessor takes them."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        out[name.strip()] = value if sep else "1"
    return out


def run_check(args: argparse.Namespace) -> int:
    try:
        program = compile_file(args.program, args.include, parse_defines(args.define))
    except P4Error as e:
        print(e.format(), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    target = getattr(args, "target", None) or ("bmv2" if program.package == "V1Switch" else "builtin")
    if target == "bmv2":
        from .bmv2 import bmv2_errors

        found = bmv2_errors(program)
        for err in found:
            print(err.format(), file=sys.stderr)
        if found:
            return EXIT_PROGRAM_ERROR
    if getattr(args, "p4info", None):
        try:
            from ..p4rt.p4info import write_p4info
        except ImportError as exc:
            print(f"p4mcc check: --p4info: P4Info generation is not available ({exc})", file=sys.stderr)
            return EXIT_USAGE
        try:
            write_p4info(program, args.p4info)
        except OSError as exc:
            print(f"p4mcc check: cannot write {args.p4info}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except ValueError as exc:
            print(f"{args.program}: error: {exc}", file=sys.stderr)
            return EXIT_PROGRAM_ERROR
        except Exception as exc:  # a fault in the generator, not in the program
            print(f"p4mcc check: P4Info generation failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK
