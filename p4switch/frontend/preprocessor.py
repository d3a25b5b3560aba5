"""The C-style preprocessor P4_16 programs rely on.

Supported: ``#include "f"`` / ``#include <f>``, object-like ``#define``,
function-like ``#define F(a, b)`` (invocations on one line), ``#undef``,
``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif`` with C integer
expressions and ``defined``, ``#error``; ``#pragma``, ``#line`` and
``#warning`` are accepted and ignored.

Instead of producing text for a separate lexer, this preprocessor produces
tokens directly: each surviving line is lexed with its original file, line
and column, and tokens substituted from a macro take the position of the
macro's use. So every later diagnostic points at the original source.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from .ast import Span
from .errors import P4Error
from .lexer import Token, lex_line, strip_comments

MAX_INCLUDE_DEPTH = 64
MAX_SOURCE_BYTES = 4 * 1024 * 1024
"""The largest source file the front end reads (the program or one include),
checked before reading: p4mcc's own program and the P4 library are well under
a tenth of it, and a larger file is far more likely a mistake or an attack
(a pipeline naming a huge file) than a program."""

# Included files (core.p4, v1model.p4, project headers) are read again for
# every program; their comment-free lines and tokens are kept here, keyed by
# name and full text so an edited file is never served stale.
_LEX_CACHE: dict[tuple[str, str], tuple[list[str], dict[int, list[Token]]]] = {}
_LEX_CACHE_SIZE = 32
MAX_EXPANSION_TOKENS = 1_000_000

_DIRECTIVE_RE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]*)")


@dataclass
class _FuncMacro:
    params: list[str]
    body: list[Token]


@dataclass
class _Cond:
    parent_active: bool
    taken: bool  # some branch already taken
    active: bool
    seen_else: bool
    span: Span


class Preprocessor:
    """Holds the macro table and include search path across included files."""

    def __init__(self, include_dirs: list[str], builtin_dir: Optional[str],
                 defines: dict[str, str], main_dir: Optional[str] = None) -> None:
        self.include_dirs = include_dirs
        self.builtin_dir = builtin_dir
        # The only folders an #include may read from: the program's own
        # folder, the -I folders and the P4 library.  A program held in
        # memory (a pipeline pushed over P4Runtime) has no folder of its own.
        roots = [main_dir] if main_dir else []
        roots += include_dirs + ([builtin_dir] if builtin_dir else [])
        self.roots = [os.path.realpath(r) for r in roots]
        self.macros: dict[str, object] = {}
        self.out: list[Token] = []
        self.files: list[str] = []
        self.depth = 0
        for name, value in defines.items():
            span = Span("<command-line>", 1, 1)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise P4Error(span, f"invalid macro name {name!r} in -D")
            self.macros[name] = lex_line(str(value), "<command-line>", 1)

    # ------------------------------------------------------------------
    def run_file(self, text: str, filename: str) -> None:
        self.files.append(filename)
        self.depth += 1
        if self.depth > MAX_INCLUDE_DEPTH:
            raise P4Error(Span(filename, 1, 1), "#include nested too deeply (include cycle?)")
        cached = _LEX_CACHE.get((filename, text)) if self.depth > 1 else None
        if cached is None:
            clean = strip_comments(text, filename)
            cached = (clean.split("\n"), {})
            if self.depth > 1:
                if len(_LEX_CACHE) >= _LEX_CACHE_SIZE:
                    _LEX_CACHE.pop(next(iter(_LEX_CACHE)))
                _LEX_CACHE[(filename, text)] = cached
        lines, lexed = cached
        stack: list[_Cond] = []
        active = True
        i = 0
        n = len(lines)
        while i < n:
            line = lines[i]
            lineno = i + 1
            i += 1
            m = _DIRECTIVE_RE.match(line)
            if m is None:
                if active and line.strip():
                    toks = lexed.get(lineno)
                    if toks is None:
                        toks = lexed[lineno] = lex_line(line, filename, lineno)
                    self._emit(toks)
                continue
            # Join continuation lines of a directive.
            while line.endswith("\\") and i < n:
                line = line[:-1] + " " + lines[i]
                i += 1
            name = m.group(1)
            rest_col = m.end()
            span = Span(filename, lineno, line.index("#") + 1)
            if name in ("if", "ifdef", "ifndef"):
                if active:
                    cond = self._condition(name, line, rest_col, filename, lineno, span)
                else:
                    cond = False
                stack.append(_Cond(active, cond, active and cond, False, span))
                active = active and cond
            elif name == "elif":
                if not stack or stack[-1].seen_else:
                    raise P4Error(span, "#elif without matching #if")
                top = stack[-1]
                if top.parent_active and not top.taken:
                    cond = self._condition("if", line, rest_col, filename, lineno, span)
                    top.active = cond
                    top.taken = cond
                else:
                    top.active = False
                active = top.active
            elif name == "else":
                if not stack or stack[-1].seen_else:
                    raise P4Error(span, "#else without matching #if")
                top = stack[-1]
                top.seen_else = True
                top.active = top.parent_active and not top.taken
                top.taken = True
                active = top.active
            elif name == "endif":
                if not stack:
                    raise P4Error(span, "#endif without matching #if")
                active = stack.pop().parent_active
            elif not active:
                continue
            elif name == "define":
                self._define(line, rest_col, filename, lineno, span)
            elif name == "undef":
                toks = lex_line(line, filename, lineno, rest_col)
                if len(toks) != 1 or toks[0].kind != "id":
                    raise P4Error(span, "#undef expects a macro name")
                self.macros.pop(str(toks[0].value), None)
            elif name == "include":
                self._include(line, rest_col, filename, lineno, span)
            elif name == "error":
                raise P4Error(span, "#error " + line[rest_col:].strip())
            elif name in ("pragma", "line", "warning", ""):
                pass
            else:
                raise P4Error(span, f"unknown preprocessor directive #{name}")
        if stack:
            raise P4Error(stack[-1].span, "unterminated conditional directive")
        self.depth -= 1

    # ------------------------------------------------------------------
    def _define(self, line: str, col: int, filename: str, lineno: int, span: Span) -> None:
        m = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]*)").match(line, col)
        if m is None:
            raise P4Error(span, "#define expects a macro name")
        name = m.group(1)
        pos = m.end()
        if pos < len(line) and line[pos] == "(":
            close = line.find(")", pos)
            if close < 0:
                raise P4Error(Span(filename, lineno, pos + 1), "unterminated macro parameter list")
            params = [p.strip() for p in line[pos + 1:close].split(",") if p.strip()]
            for p in params:
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p):
                    raise P4Error(Span(filename, lineno, pos + 1), f"bad macro parameter {p!r}")
            self.macros[name] = _FuncMacro(params, lex_line(line, filename, lineno, close + 1))
        else:
            self.macros[name] = lex_line(line, filename, lineno, pos)

    def _include(self, line: str, col: int, filename: str, lineno: int, span: Span) -> None:
        rest = line[col:].strip()
        m = re.fullmatch(r'"([^"]+)"|<([^>]+)>', rest)
        if m is None:
            raise P4Error(span, '#include expects "file" or <file>')
        here = [os.path.dirname(os.path.abspath(filename))] if not filename.startswith("<") else []
        builtin = [self.builtin_dir] if self.builtin_dir else []
        if m.group(1) is not None:
            target = m.group(1)
            search = here + self.include_dirs + builtin
        else:
            target = m.group(2)
            search = builtin + self.include_dirs
        # Candidates outside the allowed folders are dropped before the file
        # system is asked about them, so no answer depends on whether such a
        # file exists (a pipeline cannot probe the switch's host).
        inside = [p for p in (os.path.realpath(os.path.join(d, target)) for d in search) if self._allowed(p)]
        if not inside:
            raise P4Error(span, f"cannot include {target!r}: a program may include only files in its "
                                "own folder, its include folders (-I) and the P4 library")
        for path in inside:
            if os.path.isfile(path):
                text = read_source(path, span)
                shown = os.path.relpath(path) if not os.path.isabs(filename) else path
                self.run_file(text, shown)
                return
        raise P4Error(span, f"cannot find included file {target!r}")

    def _allowed(self, path: str) -> bool:
        return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    def _condition(self, kind: str, line: str, col: int, filename: str, lineno: int,
                   span: Span) -> bool:
        toks = lex_line(line, filename, lineno, col)
        if kind in ("ifdef", "ifndef"):
            if len(toks) != 1 or toks[0].kind != "id":
                raise P4Error(span, f"#{kind} expects a macro name")
            defined = str(toks[0].value) in self.macros
            return defined if kind == "ifdef" else not defined
        if not toks:
            raise P4Error(span, "#if with no expression")
        # Replace ``defined X`` / ``defined(X)`` before macro expansion.
        resolved: list[Token] = []
        j = 0
        while j < len(toks):
            t = toks[j]
            if t.kind == "id" and t.value == "defined":
                if j + 1 < len(toks) and toks[j + 1].value == "(":
                    if j + 3 >= len(toks) or toks[j + 2].kind != "id" or toks[j + 3].value != ")":
                        raise P4Error(t.span, "malformed defined(...)")
                    name = str(toks[j + 2].value)
                    j += 4
                elif j + 1 < len(toks) and toks[j + 1].kind == "id":
                    name = str(toks[j + 1].value)
                    j += 2
                else:
                    raise P4Error(t.span, "defined expects a macro name")
                resolved.append(Token("int", (None, False, int(name in self.macros), 10), t.span, t.end))
                continue
            resolved.append(t)
            j += 1
        expanded = self._expand(resolved)
        return _CondExpr(expanded, span).evaluate() != 0

    # ------------------------------------------------------------------
    def _emit(self, toks: list[Token]) -> None:
        if any(t.kind == "id" and t.value in self.macros for t in toks):
            toks = self._expand(toks)
        self.out.extend(toks)
        if len(self.out) > MAX_EXPANSION_TOKENS:
            raise P4Error(toks[0].span if toks else None, "program too large after macro expansion")

    def _expand(self, toks: list[Token], hidden: frozenset[str] = frozenset()) -> list[Token]:
        out: list[Token] = []
        j = 0
        n = len(toks)
        while j < n:
            t = toks[j]
            j += 1
            if t.kind != "id" or t.value in hidden or t.value not in self.macros:
                out.append(t)
                continue
            name = str(t.value)
            macro = self.macros[name]
            if isinstance(macro, _FuncMacro):
                if j >= n or toks[j].value != "(":
                    out.append(t)
                    continue
                args, j = _collect_args(toks, j, t.span)
                if len(args) != len(macro.params) and not (not macro.params and args == [[]]):
                    raise P4Error(t.span, f"macro {name} expects {len(macro.params)} arguments, got {len(args)}")
                binding = {p: self._expand(a, hidden) for p, a in zip(macro.params, args)}
                body: list[Token] = []
                for b in macro.body:
                    if b.kind == "id" and b.value in binding:
                        body.extend(_relocate(x, t) for x in binding[str(b.value)])
                    else:
                        body.append(_relocate(b, t))
            else:
                body = [_relocate(b, t) for b in macro]  # type: ignore[union-attr]
            out.extend(self._expand(body, hidden | {name}))
            if len(out) > MAX_EXPANSION_TOKENS:
                raise P4Error(t.span, "macro expansion too large")
        return out


def _relocate(tok: Token, use: Token) -> Token:
    """A macro body token placed at the macro's use site."""
    return Token(tok.kind, tok.value, use.span, use.end)


def _collect_args(toks: list[Token], j: int, span: Span) -> tuple[list[list[Token]], int]:
    depth = 0
    args: list[list[Token]] = [[]]
    j += 1  # skip "("
    while j < len(toks):
        t = toks[j]
        j += 1
        if t.value in ("(", "[", "{") and t.kind == "op":
            depth += 1
        elif t.value in (")", "]", "}") and t.kind == "op":
            if depth == 0 and t.value == ")":
                return args, j
            depth -= 1
        elif t.value == "," and t.kind == "op" and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    raise P4Error(span, "unterminated macro invocation (arguments must be on one line)")


class _CondExpr:
    """Evaluates a ``#if`` expression with C precedence; unknown names are 0."""

    _BINARY = [
        ["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
        ["<<", ">>"], ["+", "-"], ["*", "/", "%"],
    ]

    def __init__(self, toks: list[Token], span: Span) -> None:
        self.toks = _merge_shift(toks)
        self.pos = 0
        self.span = span

    def _peek(self) -> Optional[Token]:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def _error(self, msg: str) -> P4Error:
        t = self._peek()
        return P4Error(t.span if t else self.span, msg)

    def evaluate(self) -> int:
        v = self._ternary()
        if self._peek() is not None:
            raise self._error(f"unexpected {self._peek().text()} in #if expression")  # type: ignore[union-attr]
        return v

    def _ternary(self) -> int:
        c = self._binary(0)
        t = self._peek()
        if t is not None and t.value == "?":
            self.pos += 1
            a = self._ternary()
            t2 = self._peek()
            if t2 is None or t2.value != ":":
                raise self._error("expected ':' in #if expression")
            self.pos += 1
            b = self._ternary()
            return a if c else b
        return c

    def _binary(self, level: int) -> int:
        if level == len(self._BINARY):
            return self._unary()
        left = self._binary(level + 1)
        ops = self._BINARY[level]
        while True:
            t = self._peek()
            if t is None or t.kind != "op" or t.value not in ops:
                return left
            self.pos += 1
            right = self._binary(level + 1)
            left = _apply(str(t.value), left, right, t.span)

    def _unary(self) -> int:
        t = self._peek()
        if t is None:
            raise self._error("incomplete #if expression")
        self.pos += 1
        if t.kind == "op" and t.value in ("!", "-", "+", "~"):
            v = self._unary()
            return {"!": int(not v), "-": -v, "+": v, "~": ~v}[str(t.value)]
        if t.kind == "op" and t.value == "(":
            v = self._ternary()
            t2 = self._peek()
            if t2 is None or t2.value != ")":
                raise self._error("expected ')' in #if expression")
            self.pos += 1
            return v
        if t.kind == "int":
            return int(t.value[2])  # type: ignore[index]
        if t.kind == "id":
            return 0
        raise P4Error(t.span, f"unexpected {t.text()} in #if expression")


def _merge_shift(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in toks:
        if (t.kind == "op" and t.value == ">" and out and out[-1].kind == "op"
                and out[-1].value == ">" and out[-1].end == t.span.col):
            prev = out.pop()
            out.append(Token("op", ">>", prev.span, t.end))
        else:
            out.append(t)
    return out


def _apply(op: str, a: int, b: int, span: Span) -> int:
    if op in ("/", "%") and b == 0:
        raise P4Error(span, "division by zero in #if expression")
    if op in ("<<", ">>") and (b < 0 or b > 4096):
        raise P4Error(span, "shift amount out of range in #if expression")
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
        "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a - b * int(a / b),
    }[op]()


def read_source(path: str, span: Span) -> str:
    """A source file's text, refused unread when larger than :data:`MAX_SOURCE_BYTES`."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_SOURCE_BYTES:
                raise P4Error(span, f"{os.path.basename(path)}: larger than {MAX_SOURCE_BYTES} bytes")
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise P4Error(span, f"cannot read file {os.path.basename(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise P4Error(span, f"{os.path.basename(path)}: larger than {MAX_SOURCE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise P4Error(span, f"{os.path.basename(path)}: not UTF-8 text") from None


def preprocess(text: str, filename: str, include_dirs: list[str], defines: dict[str, str],
               builtin_dir: Optional[str] = None) -> tuple[list[Token], list[str]]:
    """Tokens of the whole program (ending with an ``eof`` token) and the
    list of files read.

    Includes resolve only inside ``filename``'s folder (when it names a real
    file, not ``<...>``), ``include_dirs`` and ``builtin_dir``."""
    main_dir = None if filename.startswith("<") else os.path.dirname(os.path.abspath(filename))
    pp = Preprocessor(include_dirs, builtin_dir, defines, main_dir)
    pp.run_file(text, filename)
    lines = text.count("\n") + 1
    pp.out.append(Token("eof", None, Span(filename, lines, 1), 1))
    return pp.out, pp.files
