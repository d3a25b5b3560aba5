"""Expression checking: types, implicit casts and constant folding.

Part of the type checker (see typecheck.py); the methods run on a
``Checker`` instance and use its scopes, context and error helper.
"""

from __future__ import annotations

from typing import Optional

from . import ast as A
from . import consteval as C
from .ast import Span
from .errors import P4Error
from .types import (
    BOOL,
    DONT_CARE,
    ERROR,
    INT,
    STRING,
    ActionEnumType,
    ApplyResultType,
    BitsType,
    BlockType,
    BoolType,
    CallableType,
    DontCareType,
    EnumType,
    ErrorType,
    ExternType,
    FieldInfo,
    HeaderType,
    HeaderUnionType,
    IntType,
    NewType,
    P4Type,
    SetType,
    StackType,
    StringType,
    StructLikeType,
    StructType,
    TableType,
    TupleType,
    TypeNameType,
    TypeVar,
    VoidType,
    strip_newtype,
)
from .tcutil import (
    Scope,
    MAX_WIDTH,
    MAX_CONST_BITS,
    _ARITH,
    _BITWISE,
    _COMPARE,
    _EQUAL,
    block_conformance,
    _respan,
    visible_names,
    suggest,
)


class ExprChecker:
    """Typing, implicit conversion and folding of expressions (mixed into ``Checker``)."""

    def require_lvalue(self, e: A.Expression) -> None:
        if not self.is_lvalue(e):
            raise self.err(e, "cannot assign to this expression")

    def is_lvalue(self, e: A.Expression) -> bool:
        if isinstance(e, A.PathExpr):
            r = e.ref
            if isinstance(r, A.VarDecl):
                return True
            if isinstance(r, A.Param):
                return r.direction in ("out", "inout")
            return False
        if isinstance(e, A.Member):
            if isinstance(e.expr.type, StackType):
                return e.name in ("next", "last")
            return isinstance(e.expr.type, StructLikeType) and self.is_lvalue(e.expr)
        if isinstance(e, (A.Index, A.Slice)):
            return self.is_lvalue(e.expr)
        if isinstance(e, A.DefaultExpr):
            return True
        return False

    def same_type(self, a: Optional[P4Type], b: Optional[P4Type]) -> bool:
        if a is b or a == b:
            return True
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            return len(a.elems) == len(b.elems) and all(self.same_type(x, y) for x, y in zip(a.elems, b.elems))
        return False

    def coerce(self, e: A.Expression, t: Optional[P4Type]) -> A.Expression:
        """Make ``e`` have type ``t``, inserting the implicit conversions P4_16
        allows (integer literal to a sized type, serializable enum to its
        underlying type), or raise."""
        if t is None or e.type is None:
            return e
        st = e.type
        if self.same_type(st, t) or isinstance(t, DontCareType):
            return e
        if isinstance(e, A.DefaultExpr):
            e.type = t
            return e
        tt = t
        if isinstance(st, IntType) and isinstance(tt, BitsType):
            if isinstance(e, A.IntLit):
                return A.IntLit(C.wrap(e.value, tt), tt.width, tt.signed, e.base, span=e.span, type=tt)
            return A.Cast(A.BaseTypeRef("int" if tt.signed else "bit", span=e.span, resolved=tt),
                          e, True, span=e.span, type=tt)
        if isinstance(st, IntType) and isinstance(tt, NewType) and isinstance(strip_newtype(tt), BitsType):
            inner = self.coerce(e, strip_newtype(tt))
            return A.Cast(A.NamedTypeRef(tt.name, span=e.span, resolved=tt), inner, True, span=e.span, type=tt)
        if isinstance(st, EnumType) and st.underlying is not None and self.same_type(st.underlying, tt):
            if isinstance(e, A.EnumMember) and e.value is not None:
                return A.IntLit(e.value, st.underlying.width, st.underlying.signed, span=e.span, type=st.underlying)
            return A.Cast(A.BaseTypeRef("bit", span=e.span, resolved=tt), e, True, span=e.span, type=tt)
        if isinstance(e, A.ListExpr) and isinstance(tt, (StructType, HeaderType, TupleType)):
            return self.list_to(e, tt)
        if isinstance(e, A.StructExpr) and e.typeref is None and isinstance(tt, (StructType, HeaderType)):
            return self.struct_expr_to(e, tt)
        if isinstance(e, A.InvalidHeaderExpr) and isinstance(tt, (HeaderType, HeaderUnionType)):
            e.type = tt
            return e
        if isinstance(st, TupleType) and isinstance(tt, TupleType) and isinstance(e, A.ListExpr):
            return self.list_to(e, tt)
        if isinstance(st, BlockType) and isinstance(tt, BlockType):
            problem = block_conformance(st, tt)
            if problem is None:
                return e
            raise self.err(e, f"{st} does not match {tt}: {problem}")
        raise self.err(e, f"expected a value of type {t}, found {st}")

    def list_to(self, e: A.ListExpr, t: P4Type) -> A.Expression:
        if isinstance(t, TupleType):
            if len(e.elems) != len(t.elems):
                raise self.err(e, f"expected {len(t.elems)} elements, found {len(e.elems)}")
            e.elems = [self.coerce(x, et) for x, et in zip(e.elems, t.elems)]
            e.type = t
            return e
        assert isinstance(t, StructLikeType)
        if len(e.elems) != len(t.fields):
            raise self.err(e, f"{t.name} has {len(t.fields)} fields, the list has {len(e.elems)}")
        e.elems = [self.coerce(x, f.type) for x, f in zip(e.elems, t.fields)]
        e.type = t
        return e

    def struct_expr_to(self, e: A.StructExpr, t: StructLikeType) -> A.Expression:
        given = dict(e.fields)
        if len(given) != len(e.fields):
            raise self.err(e, "a field is initialised twice")
        for name in given:
            if t.field(name) is None:
                raise self.err(e, f"{t.name} has no field {name!r}")
        missing = [f.name for f in t.fields if f.name not in given]
        if missing:
            raise self.err(e, f"field {missing[0]!r} of {t.name} is not initialised")
        e.fields = [(f.name, self.coerce(given[f.name], f.type)) for f in t.fields]
        e.type = t
        return e

    def unify_operands(self, node: A.Node, a: A.Expression, b: A.Expression,
                       op: str) -> tuple[A.Expression, A.Expression]:
        ta, tb = a.type, b.type
        if self.same_type(ta, tb):
            return a, b
        if isinstance(ta, IntType):
            return self.coerce(a, tb), b
        if isinstance(tb, IntType):
            return a, self.coerce(b, ta)
        if isinstance(ta, EnumType) and isinstance(tb, EnumType) and ta.underlying is not None \
                and tb.underlying is not None and self.same_type(ta.underlying, tb.underlying):
            return self.coerce(a, ta.underlying), self.coerce(b, tb.underlying)
        if isinstance(ta, EnumType) and ta.underlying is not None and self.same_type(ta.underlying, tb):
            return self.coerce(a, tb), b
        if isinstance(tb, EnumType) and tb.underlying is not None and self.same_type(tb.underlying, ta):
            return a, self.coerce(b, ta)
        if isinstance(a, (A.ListExpr, A.StructExpr, A.InvalidHeaderExpr)) and tb is not None:
            return self.coerce(a, tb), b
        if isinstance(b, (A.ListExpr, A.StructExpr, A.InvalidHeaderExpr)) and ta is not None:
            return a, self.coerce(b, ta)
        raise self.err(node, f"operands of {op!r} have different types: {ta} and {tb}")

    def rvalue(self, e: A.Expression, scope: Scope) -> A.Expression:
        v = self.expr(e, scope, None)
        if isinstance(v.type, (TypeNameType, CallableType, TableType, VoidType)) or v.type is None:
            raise self.err(e, "expected a value")
        return v

    def expr(self, e: A.Expression, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        """Check ``e`` and return it (or its folded replacement) with ``type`` set.
        ``expected`` only guides list/struct initialisers; callers coerce."""
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise self.err(e, f"{type(e).__name__} is not allowed here")
        out = m(e, scope, expected)
        assert out.type is not None, type(e).__name__
        return out

    def e_IntLit(self, e: A.IntLit, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        if e.width is not None:
            if e.width > MAX_WIDTH:
                raise self.err(e, "literal width is too large")
            if e.signed and e.width == 0:
                raise self.err(e, "int<0> literal is not allowed")
            t: P4Type = BitsType(e.width, e.signed)
            e.value = C.wrap(e.value, t)
        else:
            t = INT
        e.type = t
        return e

    def e_BoolLit(self, e: A.BoolLit, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        e.type = BOOL
        return e

    def e_StringLit(self, e: A.StringLit, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        e.type = STRING
        return e

    def e_DefaultExpr(self, e: A.DefaultExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        e.type = DONT_CARE
        return e

    def e_InvalidHeaderExpr(self, e: A.InvalidHeaderExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        if not isinstance(expected, (HeaderType, HeaderUnionType)):
            raise self.err(e, "{#} needs a header type from its context")
        e.type = expected
        return e

    def e_PathExpr(self, e: A.PathExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        found = (self.globals if e.top_level else scope).lookup(e.name)
        if found is None:
            t = scope.lookup_type(e.name)
            if t is not None:
                return self.e_TypeNameExpr(A.TypeNameExpr(A.NamedTypeRef(e.name, span=e.span), span=e.span),
                                           scope, expected)
            raise self.err(e, f"{e.name!r} is not declared{suggest(e.name, visible_names(scope))}")
        if isinstance(found, list):
            e.ref = found[0]
            e.type = CallableType(found[0])
            return e
        e.ref = found
        if isinstance(found, A.ConstDecl):
            v = A.clone(found.value)
            _respan(v, e.span)
            return v
        if isinstance(found, (A.Param, A.VarDecl)):
            e.type = found.typeref.resolved
        elif isinstance(found, A.Instantiation):
            e.type = found.typeref.resolved
        elif isinstance(found, A.TableDecl):
            e.type = TableType(found)
        elif isinstance(found, A.ValueSetDecl):
            e.type = SetType(found.elem.resolved)  # type: ignore[arg-type]
        else:
            raise self.err(e, f"{e.name!r} cannot be used as a value")
        if e.type is None:  # pragma: no cover - declared names are resolved first
            raise self.err(e, f"{e.name!r} has no type")
        return e

    def e_TypeNameExpr(self, e: A.TypeNameExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        t = self.resolve_type(e.typeref, scope)
        e.type = TypeNameType(t)
        return e

    def e_ConstructorCall(self, e: A.ConstructorCall, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        t = self.resolve_type(e.typeref, scope)
        if isinstance(t, ExternType) and any(m.abstract for m in t.decl.methods):
            raise self.err(e, f"extern {t.name} has abstract methods: declare an instance with an initializer")
        if isinstance(t, (ExternType, BlockType)):
            e.args = self.constructor_args(e, t, e.args, scope)
            e.decl = t.decl
            e.type = t
            return e
        raise self.err(e, f"{t} cannot be constructed")

    def e_Member(self, e: A.Member, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        base = self.expr(e.expr, scope, None)
        e.expr = base
        bt = base.type
        if isinstance(bt, TypeNameType):
            named = bt.named
            if isinstance(named, EnumType):
                if e.name not in named.members:
                    raise self.err(e.name_span or e.span, f"{named.name} has no member {e.name!r}")
                return A.EnumMember(named.name, e.name, named.values.get(e.name), span=base.span, type=named)
            if isinstance(named, ErrorType):
                if e.name not in self.program.errors:
                    raise self.err(e.name_span or e.span,
                                   f"error.{e.name} is not declared{suggest(e.name, self.program.errors)}")
                return A.ErrorMember(e.name, span=base.span, type=ERROR)
            raise self.err(e.name_span or e.span, f"type {named} has no member {e.name!r}")
        if isinstance(bt, StructLikeType):
            f = bt.field(e.name)
            if f is None:
                if e.name in ("isValid", "setValid", "setInvalid", "minSizeInBits",
                              "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                    raise self.err(e.name_span or e.span, f"{e.name} must be called")
                raise self.err(e.name_span or e.span,
                               f"{bt.name} has no field {e.name!r}{suggest(e.name, [x.name for x in bt.fields])}")
            e.type = f.type
            return e
        if isinstance(bt, StackType):
            if e.name in ("next", "last"):
                if self.ctx.in_parser is None:
                    raise self.err(e, f"stack .{e.name} is only available in parsers")
                e.type = bt.elem
                return e
            if e.name == "size":
                return A.IntLit(bt.size, 32, False, span=e.span, type=BitsType(32))
            if e.name == "lastIndex":
                if self.ctx.in_parser is None:
                    raise self.err(e, "stack .lastIndex is only available in parsers")
                e.type = BitsType(32)
                return e
            raise self.err(e, f"header stacks have no member {e.name!r}")
        if isinstance(bt, ApplyResultType):
            if e.name in ("hit", "miss"):
                e.type = BOOL
                return e
            if e.name == "action_run":
                e.type = ActionEnumType(bt.table)
                return e
            raise self.err(e.name_span or e.span, f"a table apply result has no member {e.name!r}")
        raise self.err(e.name_span or e.span, f"a value of type {bt} has no member {e.name!r}")

    def e_Index(self, e: A.Index, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        base = self.expr(e.expr, scope, None)
        e.expr = base
        idx = self.rvalue(e.index, scope)
        if isinstance(base.type, StackType):
            if isinstance(idx, A.IntLit):
                if idx.value < 0 or idx.value >= base.type.size:
                    raise self.err(e.index, f"index {idx.value} is out of bounds for a stack of size {base.type.size}")
                idx = A.IntLit(idx.value, 32, False, span=idx.span, type=BitsType(32))
            elif not isinstance(strip_newtype(idx.type), BitsType) and not (  # type: ignore[arg-type]
                    isinstance(idx.type, EnumType) and idx.type.underlying is not None):
                raise self.err(e.index, f"a stack index must be an integer, not {idx.type}")
            e.index = idx
            e.type = base.type.elem
            return e
        if isinstance(base.type, TupleType):
            if not isinstance(idx, A.IntLit):
                raise self.err(e.index, "tuple indices must be constant")
            if not 0 <= idx.value < len(base.type.elems):
                raise self.err(e.index, "tuple index out of range")
            e.index = idx
            e.type = base.type.elems[idx.value]
            return e
        raise self.err(e, f"cannot index a value of type {base.type}")

    def e_Slice(self, e: A.Slice, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        base = self.rvalue(e.expr, scope)
        e.expr = base
        hi = self.expr(e.hi, scope, None)
        lo = self.expr(e.lo, scope, None)
        if not isinstance(hi, A.IntLit) or not isinstance(lo, A.IntLit):
            raise self.err(e, "slice bounds must be compile-time constants")
        bt = strip_newtype(base.type)  # type: ignore[arg-type]
        if isinstance(bt, IntType):
            if not isinstance(base, A.IntLit):
                raise self.err(e, "cannot slice an integer of unknown width")
        elif not isinstance(bt, BitsType):
            raise self.err(e, f"cannot slice a value of type {base.type}")
        if lo.value < 0 or hi.value < lo.value:
            raise self.err(e, f"invalid slice [{hi.value}:{lo.value}]")
        if isinstance(bt, BitsType) and hi.value >= bt.width:
            raise self.err(e, f"slice [{hi.value}:{lo.value}] is out of range for {base.type}")
        w = hi.value - lo.value + 1
        t = BitsType(w)
        if w > MAX_WIDTH:
            raise self.err(e, "slice is too wide")
        e.hi = A.IntLit(hi.value, span=hi.span, type=INT)
        e.lo = A.IntLit(lo.value, span=lo.span, type=INT)
        e.type = t
        if isinstance(base, A.IntLit):
            return A.IntLit((base.value >> lo.value) & ((1 << w) - 1), w, False, span=e.span, type=t)
        return e

    def e_Unary(self, e: A.Unary, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        v = self.rvalue(e.expr, scope)
        t = v.type
        if e.op == "+":
            if not isinstance(t, (BitsType, IntType)):
                raise self.err(e, f"unary + needs a number, not {t}")
            return v
        if e.op == "!":
            v = self.coerce(v, BOOL) if not isinstance(t, BoolType) else v
            if isinstance(v, A.BoolLit):
                return A.BoolLit(not v.value, span=e.span, type=BOOL)
            e.expr, e.type = v, BOOL
            return e
        if e.op == "-":
            if not isinstance(t, (BitsType, IntType)):
                raise self.err(e, f"unary - needs a number, not {t}")
            if isinstance(v, A.IntLit):
                return self._lit(C.wrap(-v.value, t), t, e.span)  # type: ignore[arg-type]
            e.expr, e.type = v, t
            return e
        if e.op == "~":
            if not isinstance(t, BitsType):
                raise self.err(e, f"~ needs a bit<W> or int<W> operand, not {t}")
            if isinstance(v, A.IntLit):
                return self._lit(C.wrap(~v.value, t), t, e.span)
            e.expr, e.type = v, t
            return e
        raise self.err(e, f"unknown operator {e.op}")  # pragma: no cover

    @staticmethod
    def _lit(value: int, t: P4Type, span: Span) -> A.IntLit:
        if value.bit_length() > MAX_CONST_BITS:
            raise P4Error(span, f"constant is too large (more than {MAX_CONST_BITS} bits)")
        if isinstance(t, BitsType):
            return A.IntLit(value, t.width, t.signed, span=span, type=t)
        return A.IntLit(value, span=span, type=t)

    def e_Binary(self, e: A.Binary, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        op = e.op
        if op in ("&&", "||"):
            a = self.coerce(self.rvalue(e.left, scope), BOOL)
            b = self.coerce(self.rvalue(e.right, scope), BOOL)
            if isinstance(a, A.BoolLit) and isinstance(b, A.BoolLit):
                val = (a.value and b.value) if op == "&&" else (a.value or b.value)
                return A.BoolLit(val, span=e.span, type=BOOL)
            e.left, e.right, e.type = a, b, BOOL
            return e
        a = self.rvalue(e.left, scope)
        b_exp = a.type if op not in ("<<", ">>", "++") else None
        b = self.expr(e.right, scope, b_exp)
        if b_exp is None or not isinstance(b, (A.ListExpr, A.StructExpr)):
            b = self.rvalue(b, scope) if b.type is None else b
        if isinstance(a, (A.ListExpr, A.StructExpr)) and isinstance(b, (A.ListExpr, A.StructExpr)) \
                and op in _EQUAL and (getattr(a, "typeref", None) is None and getattr(b, "typeref", None) is None):
            raise self.err(e, "cannot infer the type of the compared initialisers; cast one of them")
        if isinstance(a, (A.ListExpr, A.StructExpr)) and b.type is not None and op in _EQUAL:
            a = self.coerce(a, b.type)
        if op in ("<<", ">>"):
            return self.shift(e, a, b)
        if op == "++":
            return self.concat(e, a, b)
        if op in ("/", "%"):
            for x in (a, b):
                if isinstance(x, A.IntLit) and x.value < 0:
                    raise self.err(e, f"{op!r} is not defined on negative numbers")
        a, b = self.unify_operands(e, a, b, op)
        t = a.type
        nt = strip_newtype(t)  # type: ignore[arg-type]
        if op in _EQUAL:
            if isinstance(nt, (ExternType, BlockType, TableType, CallableType, TypeNameType, VoidType,
                               StringType, TypeVar)):
                raise self.err(e, f"values of type {t} cannot be compared")
            e.left, e.right, e.type = a, b, BOOL
            if isinstance(a, (A.IntLit, A.BoolLit)) and isinstance(b, (A.IntLit, A.BoolLit)):
                return A.BoolLit(C.compare(op, int(a.value), int(b.value)), span=e.span, type=BOOL)
            if isinstance(a, (A.EnumMember, A.ErrorMember)) and type(a) is type(b):
                return A.BoolLit((a.member == b.member) == (op == "=="), span=e.span, type=BOOL)  # type: ignore[attr-defined]
            return e
        if op in _COMPARE:
            if not isinstance(nt, (BitsType, IntType)):
                raise self.err(e, f"{op!r} needs numbers, not {t}")
            e.left, e.right, e.type = a, b, BOOL
            if isinstance(a, A.IntLit) and isinstance(b, A.IntLit):
                return A.BoolLit(C.compare(op, a.value, b.value), span=e.span, type=BOOL)
            return e
        if op in _ARITH or op in _BITWISE:
            if not isinstance(nt, (BitsType, IntType)):
                raise self.err(e, f"{op!r} needs numbers, not {t}")
            if isinstance(nt, IntType) and op in _BITWISE | {"|+|", "|-|"} and not (
                    isinstance(a, A.IntLit) and isinstance(b, A.IntLit)):
                raise self.err(e, f"{op!r} needs operands with a width")
            if op in ("/", "%") and isinstance(nt, BitsType) and nt.signed:
                raise self.err(e, f"{op!r} is not defined on signed int<W> values")
            if isinstance(nt, IntType) and op in ("|+|", "|-|"):
                raise self.err(e, f"{op!r} needs operands with a width")
            if op in ("/", "%"):
                if isinstance(b, A.IntLit) and b.value == 0:
                    raise self.err(e, "division by zero")
                for x in (a, b):
                    if isinstance(x, A.IntLit) and x.value < 0:
                        raise self.err(e, f"{op!r} is not defined on negative numbers")
            e.left, e.right, e.type = a, b, t
            if isinstance(a, A.IntLit) and isinstance(b, A.IntLit):
                if op in ("/", "%") and b.value == 0:
                    raise self.err(e, "division by zero")
                v = C.binary(op, a.value, b.value, nt)
                if v is None:
                    raise self.err(e, f"{op!r} of negative values is not defined")
                return self._lit(v, nt, e.span)
            return e
        raise self.err(e, f"unknown operator {op}")  # pragma: no cover

    def shift(self, e: A.Binary, a: A.Expression, b: A.Expression) -> A.Expression:
        ta, tb = strip_newtype(a.type), strip_newtype(b.type)  # type: ignore[arg-type]
        if not isinstance(ta, (BitsType, IntType)):
            raise self.err(e, f"cannot shift a value of type {a.type}")
        if isinstance(tb, BitsType):
            if tb.signed and not (isinstance(b, A.IntLit) and b.value >= 0):
                raise self.err(e.right, "shift amounts must be unsigned")
        elif isinstance(tb, IntType):
            if not isinstance(b, A.IntLit) or b.value < 0:
                raise self.err(e.right, "shift amounts must be non-negative")
        else:
            raise self.err(e.right, f"shift amounts must be numbers, not {b.type}")
        if isinstance(ta, IntType) and not (isinstance(a, A.IntLit) and isinstance(b, A.IntLit)):
            raise self.err(e, "shifting an integer of unknown width needs a constant amount")
        if isinstance(a, A.IntLit) and isinstance(b, A.IntLit):
            if isinstance(ta, IntType) and b.value > MAX_WIDTH:
                raise self.err(e, "shift amount is too large")
            return self._lit(C.binary(e.op, a.value, b.value, ta) or 0, ta, e.span)
        e.left, e.right, e.type = a, b, a.type
        return e

    def concat(self, e: A.Binary, a: A.Expression, b: A.Expression) -> A.Expression:
        ta, tb = strip_newtype(a.type), strip_newtype(b.type)  # type: ignore[arg-type]
        if isinstance(ta, IntType) or isinstance(tb, IntType):
            raise self.err(e, "++ needs operands with a width")
        if not isinstance(ta, BitsType) or not isinstance(tb, BitsType):
            raise self.err(e, f"++ needs bit<W>/int<W> operands, not {a.type} and {b.type}")
        t = BitsType(ta.width + tb.width, ta.signed)
        if isinstance(a, A.IntLit) and isinstance(b, A.IntLit):
            ua = a.value & ((1 << ta.width) - 1)
            ub = b.value & ((1 << tb.width) - 1)
            return self._lit(C.wrap((ua << tb.width) | ub, t), t, e.span)
        e.left, e.right, e.type = a, b, t
        return e

    def e_Ternary(self, e: A.Ternary, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        c = self.coerce(self.rvalue(e.cond, scope), BOOL)
        a = self.expr(e.then, scope, expected)
        b = self.expr(e.els, scope, expected if a.type is None else a.type)
        a, b = self.unify_operands(e, a, b, "?:")
        if isinstance(c, A.BoolLit):
            return a if c.value else b
        if isinstance(a.type, IntType):
            raise self.err(e, "the branches of ?: need a width when the condition is not constant")
        e.cond, e.then, e.els, e.type = c, a, b, a.type
        return e

    def e_Cast(self, e: A.Cast, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        t = self.resolve_type(e.target, scope)
        v = self.expr(e.expr, scope, t)
        if isinstance(v, (A.ListExpr, A.StructExpr, A.InvalidHeaderExpr)):
            return self.coerce(v, t)
        st = v.type
        e.expr = v
        e.type = t
        if self.same_type(st, t):
            return v
        src, dst = strip_newtype(st), strip_newtype(t)  # type: ignore[arg-type]
        ok = False
        if isinstance(dst, BitsType):
            if isinstance(src, BitsType):
                # Width and signedness may not change in one cast.
                ok = src.signed == dst.signed or src.width == dst.width
            elif isinstance(src, IntType):
                ok = True
            elif isinstance(src, BoolType) and dst.width == 1 and not dst.signed:
                ok = True
            elif isinstance(src, EnumType) and src.underlying is not None:
                ok = True
        elif isinstance(dst, BoolType):
            if isinstance(src, BitsType) and src.width == 1 and not src.signed:
                ok = True
            elif isinstance(src, IntType) and isinstance(v, A.IntLit) and v.value in (0, 1):
                return A.BoolLit(bool(v.value), span=e.span, type=BOOL)
        elif isinstance(dst, EnumType) and dst.underlying is not None:
            ok = isinstance(src, (BitsType, IntType))
        elif isinstance(dst, IntType):
            ok = isinstance(src, (BitsType, IntType)) and isinstance(v, A.IntLit)
        if isinstance(t, NewType):
            # only from its own representation (or an integer constant)
            ok = self.same_type(st, t.base) or isinstance(st, IntType)
        elif isinstance(st, NewType):
            ok = self.same_type(st.base, t)
        if not ok:
            raise self.err(e, f"cannot cast {st} to {t}")
        # Fold constant casts.
        if isinstance(v, A.IntLit) and isinstance(t, BitsType):
            val = v.value
            if isinstance(src, BitsType) and not src.signed:
                val &= (1 << src.width) - 1
            return self._lit(C.wrap(val, t), t, e.span)
        if isinstance(v, A.IntLit) and isinstance(t, IntType):
            return self._lit(v.value, t, e.span)
        if isinstance(v, A.BoolLit) and isinstance(t, BitsType):
            return self._lit(int(v.value), t, e.span)
        if isinstance(v, A.IntLit) and isinstance(t, BoolType):
            return A.BoolLit(bool(v.value), span=e.span, type=BOOL)
        if isinstance(v, A.IntLit) and isinstance(dst, EnumType) and not isinstance(t, NewType):
            val = C.wrap(v.value, dst.underlying)  # type: ignore[arg-type]
            for name, num in dst.values.items():
                if num == val:
                    return A.EnumMember(dst.name, name, num, span=e.span, type=dst)
        if isinstance(v, A.EnumMember) and v.value is not None and isinstance(t, BitsType):
            return self._lit(C.wrap(v.value, t), t, e.span)
        return e

    def e_ListExpr(self, e: A.ListExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        exp_elems: list[Optional[P4Type]] = [None] * len(e.elems)
        if isinstance(expected, TupleType) and len(expected.elems) == len(e.elems):
            exp_elems = list(expected.elems)
        elif isinstance(expected, StructLikeType) and len(expected.fields) == len(e.elems):
            exp_elems = [f.type for f in expected.fields]
        e.elems = [self.expr(x, scope, t) for x, t in zip(e.elems, exp_elems)]
        e.type = TupleType(tuple(x.type for x in e.elems))  # type: ignore[misc]
        if isinstance(expected, (StructType, HeaderType, TupleType)):
            return self.coerce(e, expected)
        return e

    def e_StructExpr(self, e: A.StructExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        t: Optional[P4Type] = None
        if e.typeref is not None:
            t = self.resolve_type(e.typeref, scope)
            if not isinstance(t, (StructType, HeaderType)):
                raise self.err(e, f"{t} is not a struct or header type")
        elif isinstance(expected, (StructType, HeaderType)):
            t = expected
        fields = []
        for name, v in e.fields:
            ft = t.field(name).type if isinstance(t, StructLikeType) and t.field(name) else None
            fields.append((name, self.expr(v, scope, ft)))
        e.fields = fields
        if t is None:
            # An untyped {f = v} whose type comes from where it is used.
            e.type = StructType("anonymous struct", [FieldInfo(n, v.type) for n, v in fields])  # type: ignore[arg-type]
            return e
        return self.struct_expr_to(e, t)  # type: ignore[arg-type]

    def e_Mask(self, e: A.Mask, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        raise self.err(e, "&&& is only allowed in keysets")

    def e_Range(self, e: A.Range, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        raise self.err(e, ".. is only allowed in keysets")

    def e_SelectExpr(self, e: A.SelectExpr, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        raise self.err(e, "select is only allowed in transitions")
