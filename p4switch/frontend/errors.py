"""The front end's one error type.

Every problem the front end finds in a program (preprocessor, lexer, parser,
type checker) is raised as ``P4Error`` carrying the position in the original
source, so ``p4mcc check`` can print ``file:line:col: error: message`` with
the offending line and a caret, and a fuzzer can assert that nothing else
escapes.
"""

from __future__ import annotations

from typing import Optional

from .ast import Span


class P4Error(Exception):
    """A diagnostic at a source position."""

    def __init__(self, span: Optional[Span], message: str) -> None:
        self.span = span
        self.message = message
        super().__init__(self.format(with_source=False))

    def format(self, with_source: bool = True, source_text: Optional[str] = None) -> str:
        """``file:line:col: error: message`` plus, when the file can be read,
        the source line and a caret under the column."""
        if self.span is None or self.span.line <= 0:
            where = self.span.file if self.span else "<input>"
            return f"{where}: error: {self.message}"
        head = f"{self.span}: error: {self.message}"
        if not with_source:
            return head
        line = _source_line(self.span, source_text)
        if line is None:
            return head
        caret_col = max(self.span.col - 1, 0)
        # Keep tabs so the caret lines up under the same glyphs.
        pad = "".join(c if c == "\t" else " " for c in line[:caret_col])
        return f"{head}\n{line}\n{pad}^"


def _source_line(span: Span, source_text: Optional[str]) -> Optional[str]:
    text = source_text
    if text is None:
        try:
            with open(span.file, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
    lines = text.splitlines()
    if 1 <= span.line <= len(lines):
        return lines[span.line - 1].rstrip("\n")
    return None
