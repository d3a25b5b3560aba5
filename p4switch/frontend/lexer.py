"""P4_16 tokens.

The lexer works one source line at a time (the preprocessor feeds it the
lines that survive conditional compilation, after comments have been blanked
out), so every token's span is its position in the original file.
Keywords are not distinguished here: P4_16 has contextual keywords (``key``,
``apply``, ``state``, ``type`` ... may also be names), so the parser decides.
"""

from __future__ import annotations

import re
from typing import Optional

from .ast import Span
from .errors import P4Error


class Token:
    """One token. ``kind`` is ``id``, ``int``, ``str``, ``op`` or ``eof``.

    For ``int`` tokens ``value`` is ``(width or None, signed, value, base)``.
    ``end`` is the column just past the token on its line, so the parser can
    tell ``>>`` (shift) from ``> >`` (two closing angle brackets).
    """

    __slots__ = ("kind", "value", "span", "end")

    def __init__(self, kind: str, value: object, span: Span, end: int) -> None:
        self.kind = kind
        self.value = value
        self.span = span
        self.end = end

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Token({self.kind}, {self.value!r}, {self.span})"

    def text(self) -> str:
        """The token as it would be written (for messages and raw annotations)."""
        if self.kind == "str":
            return '"' + str(self.value).replace("\\", "\\\\").replace('"', '\\"') + '"'
        if self.kind == "int":
            w, s, v, _ = self.value  # type: ignore[misc]
            return f"{w}{'s' if s else 'w'}{v}" if w is not None else str(v)
        if self.kind == "eof":
            return "end of input"
        return str(self.value)


_OPS = [
    "{#}", "|+|=", "|-|=", "<<=", ">>=", "&&&", "...", "|+|", "|-|",
    "..", "<<", "&&", "||", "==", "!=", ">=", "<=", "++", "+=", "-=", "*=",
    "/=", "%=", "&=", "|=", "^=", "+:",
    "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "?",
    ":", ";", ",", ".", "(", ")", "[", "]", "{", "}", "@", "#", "'", "`",
]

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<int>(?:[0-9]+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<op>"""
    + "|".join(re.escape(o) for o in _OPS)
    + r""")
    """,
    re.VERBOSE,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


MAX_LITERAL_DIGITS = 1024
"""The longest integer literal: 1024 binary digits already exceed any width a
v1model target carries (p4c-bm2-ss caps bit<W> far below), and Python's own
int() refuses very long decimal strings with an error of its own."""


def parse_int(text: str) -> tuple[Optional[int], bool, int, int]:
    """Decode an integer literal: ``(width, signed, value, base)``."""
    width: Optional[int] = None
    signed = False
    m = re.match(r"([0-9]+)([ws])(.*)$", text)
    if m and not text.startswith(("0x", "0X", "0b", "0B", "0o", "0O", "0d", "0D")):
        width = int(m.group(1))
        signed = m.group(2) == "s"
        text = m.group(3)
    body = text.replace("_", "")
    base = 10
    if len(body) > 1 and body[0] == "0" and body[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[body[1].lower()]
        body = body[2:]
    if len(body) > MAX_LITERAL_DIGITS:
        raise ValueError(f"integer literal of {len(body)} digits (at most {MAX_LITERAL_DIGITS})")
    value = int(body, base) if body else 0
    return width, signed, value, base


def _unescape(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def lex_line(line: str, file: str, lineno: int, start_col: int = 0) -> list[Token]:
    """Tokens of one physical line (comments already removed)."""
    out: list[Token] = []
    pos = start_col
    n = len(line)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(line, pos)
        if m is None:
            ch = line[pos]
            raise P4Error(Span(file, lineno, pos + 1), f"unexpected character {ch!r}")
        kind = m.lastgroup
        end = m.end()
        if kind != "ws":
            text = m.group()
            span = Span(file, lineno, pos + 1)
            if kind == "int":
                # A literal running straight into letters (``12ab``) is malformed.
                if end < n and (line[end].isalnum() or line[end] == "_"):
                    raise P4Error(span, f"malformed integer literal {line[pos:end + 1]!r}")
                try:
                    value = parse_int(text)
                except ValueError as exc:
                    raise P4Error(span, str(exc)) from None
                out.append(Token("int", value, span, end + 1))
            elif kind == "str":
                out.append(Token("str", _unescape(text[1:-1]), span, end + 1))
            else:
                out.append(Token(kind, text, span, end + 1))  # type: ignore[arg-type]
        pos = end
    return out


def strip_comments(text: str, file: str) -> str:
    """Replace ``//`` and ``/* */`` comments by spaces, keeping newlines and
    string literals, so positions in the result equal positions in ``text``."""
    if "/" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    line = 1
    line_start = 0
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j < n and text[j] == '"':
                j += 1
            j = min(j, n)
            out.append(text[i:j])
            i = j
            continue
        if c == "/" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "/":
                j = text.find("\n", i)
                if j < 0:
                    j = n
                out.append(" " * (j - i))
                i = j
                continue
            if nxt == "*":
                j = text.find("*/", i + 2)
                if j < 0:
                    raise P4Error(Span(file, line, i - line_start + 1), "unterminated comment")
                chunk = text[i:j + 2]
                out.append("".join("\n" if ch == "\n" else " " for ch in chunk))
                nl = chunk.count("\n")
                if nl:
                    line += nl
                    line_start = i + chunk.rfind("\n") + 1
                i = j + 2
                continue
        if c == "\n":
            line += 1
            line_start = i + 1
        out.append(c)
        i += 1
    return "".join(out)
