"""Helpers shared by the lowering modules: type queries, names, the code buffer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..frontend import ast as A
from ..frontend import types as T


class UnsupportedError(Exception):
    """The program uses a construct the interpreter does not implement."""

    def __init__(self, message: str, node: Any = None) -> None:
        span = getattr(node, "span", None)
        super().__init__(f"{span}: {message}" if span else message)
        self.span = span


def st(t: Any) -> Any:
    """Strip ``type`` declarations to the representation type."""
    return T.strip_newtype(t) if t is not None else t


def width(t: Any) -> int:
    t = st(t)
    if isinstance(t, T.BitsType):
        return t.width
    if isinstance(t, T.BoolType):
        return 1
    if isinstance(t, T.EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, T.StructLikeType):
        return T.width_of(t)
    return 0


def is_signed(t: Any) -> bool:
    t = st(t)
    return isinstance(t, T.BitsType) and t.signed


def is_aggregate(t: Any) -> bool:
    return isinstance(st(t), (T.StructLikeType, T.StackType))


def decl_name(d: Any) -> tuple[str, bool]:
    """A declaration's control-plane name and whether it is absolute (``@name(".x")``)."""
    for a in getattr(d, "annotations", []) or []:
        if a.name == "name":
            s = a.string_arg()
            if s:
                if s.startswith("."):
                    return s[1:], True
                return s, False
    return d.name, False


def qualify(prefix: str, d: Any) -> str:
    n, absolute = decl_name(d)
    if absolute or not prefix:
        return n
    return f"{prefix}.{n}"


def expr_text(e: Any) -> str:
    """Source-like text of a key expression (P4Info key names)."""
    if isinstance(e, A.PathExpr):
        return e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.IntLit):
        return str(e.value)
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.MethodCall) and isinstance(e.func, A.Member) and e.func.name == "isValid":
        return f"{expr_text(e.func.expr)}.isValid()"  # P4Info's spelling (BMv2's JSON says $valid$)
    if isinstance(e, A.Cast):
        return expr_text(e.expr)
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    return type(e).__name__


class Fn:
    """A Python function being generated: lines plus indentation."""

    def __init__(self, header: str) -> None:
        self.lines = [header]
        self.ind = 1
        self.ret = "return"

    def emit(self, s: str) -> None:
        self.lines.append("    " * self.ind + s)

    def text(self) -> str:
        if len(self.lines) == 1:
            self.lines.append("    pass")
        return "\n".join(self.lines) + "\n"


@dataclass
class FieldList:
    """Fields to carry over to a resubmitted/recirculated/cloned packet:
    (root role index, attribute path) pairs; roles: 0 hdr, 1 meta, 2 sm."""

    paths: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)


@dataclass
class _Leaf:
    """A scalar field of a header, reached through ``path`` (struct fields flattened)."""

    path: str
    type: Any


@dataclass
class _Flat:
    fields: list


class _Ref:
    """Late-bound reference to a generated function (the module is compiled last)."""

    def __init__(self, fn: Any, name: str = "", g: Optional[dict] = None) -> None:
        self.fn, self.name, self.g = fn, name, g

    def resolve(self) -> Any:
        if self.fn is not None:
            return self.fn
        return self.g[self.name]  # type: ignore[index]
