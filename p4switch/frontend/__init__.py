"""The built-in P4_16 front end: preprocessor, lexer, parser and type checker.

``compile_file`` and ``compile_text`` return a checked ``ast.Program`` (the
typed IR described in docs/p4switch-ir.md) or raise ``errors.P4Error``.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional

from . import ast
from .errors import P4Error
from .parser import parse_tokens
from .preprocessor import preprocess, read_source
from .typecheck import check_program

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")

__all__ = ["compile_file", "compile_text", "parse_text", "P4Error", "INCLUDE_DIR", "ast"]


def _pipeline(text: str, filename: str, include_dirs: Iterable[str],
              defines: Optional[Mapping[str, str]], check: bool) -> ast.Program:
    try:
        tokens, files = preprocess(text, filename, list(include_dirs), dict(defines or {}), INCLUDE_DIR)
        program = parse_tokens(tokens)
        program.files = files
        if check:
            check_program(program)
    except RecursionError:
        # Bounded by the parser's nesting limit; kept as a backstop so no
        # input can make the front end fail with anything but P4Error.
        raise P4Error(ast.Span(filename, 0, 0), "program is nested too deeply") from None
    return program


def compile_file(path: str, include_dirs: Iterable[str] = (),
                 defines: Optional[Mapping[str, str]] = None) -> ast.Program:
    """Preprocess, parse and type-check the program in ``path``."""
    text = read_source(path, ast.Span(path, 0, 0))
    return _pipeline(text, path, include_dirs, defines, check=True)


def compile_text(text: str, filename: str = "<input>", include_dirs: Iterable[str] = (),
                 defines: Optional[Mapping[str, str]] = None) -> ast.Program:
    """Like ``compile_file`` for source held in memory: it has no folder of its
    own, so includes resolve only in ``include_dirs`` and the P4 library."""
    return _pipeline(text, filename, include_dirs, defines, check=True)


def parse_text(text: str, filename: str = "<input>", include_dirs: Iterable[str] = (),
               defines: Optional[Mapping[str, str]] = None) -> ast.Program:
    """Preprocess and parse only (no type checking)."""
    return _pipeline(text, filename, include_dirs, defines, check=False)
