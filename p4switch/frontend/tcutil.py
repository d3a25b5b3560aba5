"""Scopes and the helper functions the type checker's parts share."""

from __future__ import annotations

from typing import Any, Optional

from . import ast as A
from .ast import Span
from .types import (
    BitsType,
    BlockType,
    BoolType,
    EnumType,
    ExternType,
    HeaderType,
    HeaderUnionType,
    IntType,
    P4Type,
    StackType,
    StructType,
    TupleType,
    TypeVar,
    strip_newtype,
)

MAX_WIDTH = 1 << 16
MAX_CONST_BITS = 1 << 17  # infinite-precision constants are bounded to keep folding cheap
MAX_STACK = 1 << 16

V1_ROLES = ["parser", "verify", "ingress", "egress", "compute", "deparser"]

_ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|"}
_BITWISE = {"&", "|", "^"}
_COMPARE = {"<", "<=", ">", ">="}
_EQUAL = {"==", "!="}


class Scope:
    """One lexical scope of values and types."""

    __slots__ = ("values", "types", "parent", "kind")

    def __init__(self, parent: Optional["Scope"], kind: str = "block") -> None:
        self.values: dict[str, Any] = {}
        self.types: dict[str, Any] = {}
        self.parent = parent
        self.kind = kind

    def lookup(self, name: str) -> Any:
        s: Optional[Scope] = self
        while s is not None:
            v = s.values.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def lookup_type(self, name: str) -> Any:
        s: Optional[Scope] = self
        while s is not None:
            v = s.types.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def root(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


class Context:
    """Where the checker is: enclosing callable, parser/control, loops."""

    def __init__(self) -> None:
        self.in_parser: Optional[A.ParserDecl] = None
        self.in_control: Optional[A.ControlDecl] = None
        self.in_action: Optional[A.ActionDecl] = None
        self.in_function: Optional[A.FunctionDecl] = None
        self.return_type: Optional[P4Type] = None


def subst(t: Optional[P4Type], bind: dict[str, P4Type]) -> Optional[P4Type]:
    """Replace bound type variables in ``t``."""
    if t is None or not bind:
        return t
    if isinstance(t, TypeVar):
        return bind.get(t.name, t)
    if isinstance(t, TupleType):
        return TupleType(tuple(subst(x, bind) for x in t.elems))  # type: ignore[misc]
    if isinstance(t, ExternType) and t.type_args:
        return ExternType(t.decl, tuple(subst(x, bind) for x in t.type_args))  # type: ignore[misc]
    if isinstance(t, BlockType) and t.type_args:
        return BlockType(t.decl, tuple(subst(x, bind) for x in t.type_args))  # type: ignore[misc]
    if isinstance(t, StackType):
        return StackType(subst(t.elem, bind), t.size)  # type: ignore[arg-type]
    return t

def has_typevar(t: Optional[P4Type]) -> bool:
    if isinstance(t, TypeVar):
        return True
    if isinstance(t, TupleType):
        return any(has_typevar(x) for x in t.elems)
    if isinstance(t, (ExternType, BlockType)):
        return any(has_typevar(x) for x in t.type_args)
    if isinstance(t, StackType):
        return has_typevar(t.elem)
    return False

def unify(pattern: Optional[P4Type], actual: P4Type, bind: dict[str, P4Type]) -> None:
    if isinstance(pattern, TypeVar):
        if pattern.name not in bind:
            bind[pattern.name] = actual
        return
    if isinstance(pattern, BlockType) and isinstance(actual, BlockType) and pattern.decl is not actual.decl:
        # A parser/control declaration passed where a generic prototype is
        # expected: bind the prototype's type arguments from its parameters.
        proto, impl = pattern.decl, actual.decl
        local = dict(zip(getattr(proto, "type_params", []), pattern.type_args))
        for pp, ip in zip(getattr(proto, "params", []), getattr(impl, "params", [])):
            if pp.type is not None and ip.type is not None:
                unify(subst(pp.type, local), ip.type, bind)
        return
    if isinstance(pattern, TupleType) and isinstance(actual, TupleType):
        for p, a in zip(pattern.elems, actual.elems):
            unify(p, a, bind)
    if isinstance(pattern, (ExternType, BlockType)) and isinstance(actual, (ExternType, BlockType)):
        for p, a in zip(pattern.type_args, actual.type_args):
            unify(p, a, bind)

def block_conformance(actual: BlockType, wanted: BlockType) -> Optional[str]:
    """Why a parser/control does not fit a prototype, or None when it does."""
    impl, proto = actual.decl, wanted.decl
    if impl is proto:
        return None  # an instance of the same generic declaration
    kinds = {A.ParserDecl: "parser", A.ParserTypeDecl: "parser", A.ControlDecl: "control",
             A.ControlTypeDecl: "control", A.PackageTypeDecl: "package"}
    if kinds.get(type(impl)) != kinds.get(type(proto)):
        return f"a {kinds.get(type(impl), '?')} is not a {kinds.get(type(proto), '?')}"
    ip, pp = getattr(impl, "params", []), getattr(proto, "params", [])
    if len(ip) != len(pp):
        return f"it has {len(ip)} parameters, {len(pp)} expected"
    local = dict(zip(getattr(proto, "type_params", []), wanted.type_args))
    for a, b in zip(ip, pp):
        if a.direction != b.direction:
            return f"parameter {a.name} has direction {a.direction or 'none'}, {b.direction or 'none'} expected"
        bt = subst(b.type, local)
        if bt is not None and not has_typevar(bt) and not (bt is a.type or bt == a.type):
            if not (isinstance(bt, TupleType) and isinstance(a.type, TupleType)):
                return f"parameter {a.name} has type {a.type}, {bt} expected"
    return None

def is_constant(e: A.Expression) -> bool:
    if isinstance(e, (A.IntLit, A.BoolLit, A.StringLit, A.EnumMember, A.ErrorMember, A.DefaultExpr,
                      A.InvalidHeaderExpr)):
        return True
    if isinstance(e, A.ListExpr):
        return all(is_constant(x) for x in e.elems)
    if isinstance(e, A.StructExpr):
        return all(is_constant(v) for _, v in e.fields)
    if isinstance(e, A.Mask):
        return is_constant(e.value) and is_constant(e.mask)
    if isinstance(e, A.Range):
        return is_constant(e.lo) and is_constant(e.hi)
    if isinstance(e, A.PathExpr) and isinstance(e.ref, A.ValueSetDecl):
        return True
    if isinstance(e, A.Cast):
        return is_constant(e.expr)
    if isinstance(e, A.MethodCall) and e.kind == "extern_function" and getattr(e.target, "name", "") == "static_assert":
        return True  # it was evaluated when checked (and held)
    return False

def literal_key(e: A.Expression) -> Any:
    if isinstance(e, (A.IntLit, A.BoolLit)):
        return ("v", e.value)
    if isinstance(e, A.EnumMember):
        return ("e", e.member)
    if isinstance(e, A.ErrorMember):
        return ("r", e.member)
    return id(e)

def always_returns(s: A.Statement) -> bool:
    if isinstance(s, (A.ReturnStmt, A.ExitStmt)):
        return True
    if isinstance(s, A.BlockStmt):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, A.IfStmt):
        return s.els is not None and always_returns(s.then) and always_returns(s.els)
    if isinstance(s, A.SwitchStmt):
        has_default = any(isinstance(c.label, A.DefaultExpr) for c in s.cases)
        return has_default and all(c.body is None or always_returns(c.body) for c in s.cases)
    return False

def _respan(e: A.Node, span: Span) -> None:
    """Give a copied constant the position of its use."""
    e.span = span
    for v in vars(e).values():
        if isinstance(v, A.Node):
            _respan(v, span)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, A.Node):
                    _respan(x, span)
                elif isinstance(x, tuple):
                    for y in x:
                        if isinstance(y, A.Node):
                            _respan(y, span)

def simple_key(e: A.Expression) -> bool:
    """Key expressions P4Info can name without ``@name``: paths, fields,
    stack elements, slices and ``isValid()`` of those."""
    if isinstance(e, A.PathExpr):
        return True
    if isinstance(e, A.Member):
        return simple_key(e.expr)
    if isinstance(e, A.Index):
        return simple_key(e.expr)
    if isinstance(e, A.Slice):
        return simple_key(e.expr)
    if isinstance(e, A.Binary) and e.op == "&" and isinstance(e.right, A.IntLit):
        return simple_key(e.left)  # a field under a constant mask
    if isinstance(e, A.MethodCall) and e.kind == "builtin" and e.target == "isValid":
        return isinstance(e.func, A.Member) and simple_key(e.func.expr)
    return False

def same_expr(a: Any, b: Any) -> bool:
    """Structural equality of checked expressions (spans ignored)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    if isinstance(a, A.Node):
        va, vb = vars(a), vars(b)
        for k, v in va.items():
            if k in ("span", "name_span", "type", "target", "params", "resolved"):
                continue
            if k in ("ref", "decl"):
                if v is not vb.get(k):
                    return False
                continue
            if not same_expr(v, vb.get(k)):
                return False
        return True
    return bool(a == b)

def emittable(t: Optional[P4Type]) -> bool:
    """Headers, header unions, stacks, and structs/tuples made of those."""
    if isinstance(t, (HeaderType, HeaderUnionType, StackType)):
        return True
    if isinstance(t, StructType):
        return all(emittable(f.type) for f in t.fields)
    if isinstance(t, TupleType):
        return all(emittable(x) for x in t.elems)
    return False

def flat_bits_struct(t: StructType) -> bool:
    """A struct that may sit inside a header: only fixed-width scalar fields
    (bit/int/bool/serializable enum) and structs of those."""
    for f in t.fields:
        ft = strip_newtype(f.type)
        if isinstance(ft, (BitsType, BoolType)):
            continue
        if isinstance(ft, EnumType) and ft.underlying is not None:
            continue
        if isinstance(ft, StructType) and flat_bits_struct(ft):
            continue
        return False
    return True

def _expr_nodes(e: Any) -> list[Any]:
    """Every expression node under ``e`` (not following references)."""
    out: list[Any] = []
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend(n)
        elif isinstance(n, A.Expression):
            out.append(n)
            for k, v in vars(n).items():
                if k not in ("type", "ref", "target", "params", "decl"):
                    stack.append(v)
        elif isinstance(n, A.Argument):
            stack.append(n.value)
    return out

def contains_int(t: Optional[P4Type]) -> bool:
    """Whether an inferred type still holds an infinite-precision integer."""
    if isinstance(t, IntType):
        return True
    if isinstance(t, TupleType):
        return any(contains_int(x) for x in t.elems)
    if isinstance(t, StructType):
        return any(contains_int(f.type) for f in t.fields)
    return False

def visible_names(scope: Scope) -> list[str]:
    out: list[str] = []
    s: Optional[Scope] = scope
    while s is not None:
        out.extend(s.values)
        s = s.parent
    return out

def suggest(name: str, candidates: Any) -> str:
    """``"; did you mean 'x'?"`` when a candidate is a close spelling."""
    import difflib

    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
