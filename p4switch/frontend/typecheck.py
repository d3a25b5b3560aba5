"""Name resolution and type checking: turns the parsed tree into the typed IR.

The checker walks declarations in source order (P4_16 requires declaration
before use), keeps lexical scopes of values and types, and annotates nodes in
place (see ast.py and docs/p4switch-ir.md): expression types, resolved
references, folded constants, explicit implicit-casts, resolved tables and
the ``main`` package's blocks.

This module holds declarations, parsers, controls, statements and ``main``;
the ``Checker`` class gets expressions from ``tc_exprs``, calls from
``tc_calls`` and tables from ``tc_tables`` (mixins sharing its state), and
scopes and shared helpers come from ``tcutil``.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from . import ast as A
from .ast import Span
from .errors import P4Error
from .types import (
    BOOL,
    DONT_CARE,
    ERROR,
    INT,
    MATCH_KIND,
    STRING,
    VOID,
    ActionEnumType,
    BitsType,
    BlockType,
    BoolType,
    DontCareType,
    EnumType,
    ErrorType,
    ExternType,
    FieldInfo,
    HeaderType,
    HeaderUnionType,
    IntType,
    MatchKindType,
    NewType,
    P4Type,
    SetType,
    StackType,
    StringType,
    StructType,
    TableType,
    TupleType,
    TypeVar,
    VarbitType,
    VoidType,
    strip_newtype,
)
from .tcutil import (
    Scope,
    Context,
    MAX_WIDTH,
    MAX_STACK,
    V1_ROLES,
    subst,
    is_constant,
    literal_key,
    always_returns,
    flat_bits_struct,
)
from .tc_calls import CallChecker
from .tc_exprs import ExprChecker
from .tc_tables import TableChecker


class Checker(ExprChecker, CallChecker, TableChecker):
    """Walks a program's declarations in order and annotates them in place."""

    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.globals = Scope(None, "global")
        self.ctx = Context()
        self.direct_count = 0
        self.loop_depth = 0
        self.generic_cache: dict[tuple[int, tuple[P4Type, ...]], P4Type] = {}
        self.last_params: list[A.Param] = []

    @staticmethod
    def err(node: Union[A.Node, Span, None], msg: str) -> P4Error:
        span = node if isinstance(node, Span) or node is None else node.span
        return P4Error(span, msg)

    def run(self) -> None:
        for d in self.program.decls:
            self.top_decl(d, self.globals)
        self.resolve_main()

    def declare_value(self, scope: Scope, d: A.Decl, overload: bool = False) -> None:
        if d.name in scope.types:
            raise self.err(d, f"{d.name!r} is already declared as a type")
        if overload:
            lst = scope.values.get(d.name)
            if isinstance(lst, list):
                if isinstance(d, A.ActionDecl):
                    raise self.err(d, f"action {d.name!r} is already declared")
                for other in lst:
                    if type(other) is not type(d):
                        raise self.err(d, f"{d.name!r} is already declared as a different kind of object")
                    if not isinstance(d, A.ExternFunctionDecl) and len(other.params) == len(d.params):  # type: ignore[attr-defined]
                        raise self.err(d, f"{d.name!r} is already declared with {len(d.params)} parameters")  # type: ignore[attr-defined]
                lst.append(d)
                return
            if lst is not None:
                raise self.err(d, f"{d.name!r} is already declared")
            scope.values[d.name] = [d]
            return
        if d.name in scope.values:
            raise self.err(d, f"{d.name!r} is already declared in this scope")
        scope.values[d.name] = d

    def declare_type(self, scope: Scope, name: str, what: Any, node: A.Node) -> None:
        if name in scope.types or name in scope.values:
            raise self.err(node, f"type {name!r} is already declared")
        scope.types[name] = what

    def check_annotations(self, annos: list[A.Annotation]) -> None:
        """The few annotations whose body the language defines."""
        for a in annos:
            if a.name in ("name", "deprecated", "brief", "description") and a.raw:
                if len(a.args) != 1 or not isinstance(a.args[0], A.StringLit):
                    raise self.err(a, f"@{a.name} must contain one string")

    def top_decl(self, d: A.Decl, scope: Scope) -> None:
        self.check_annotations(d.annotations)
        if d.name == "main" and not isinstance(d, A.Instantiation):
            raise self.err(d, "main must be a package instance")
        if isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.program.errors:
                    raise self.err(d, f"error member {m!r} is declared twice")
                self.program.errors.append(m)
        elif isinstance(d, A.MatchKindDecl):
            for m in d.members:
                if m in self.program.match_kinds:
                    raise self.err(d, f"match_kind member {m!r} is declared twice")
                self.program.match_kinds.append(m)
                # Match kinds are also constants of type match_kind.
                value = A.EnumMember("match_kind", m, span=d.span, type=MATCH_KIND)
                self.declare_value(scope, A.ConstDecl(m, A.BaseTypeRef("match_kind", span=d.span,
                                                                      resolved=MATCH_KIND),
                                                      value, span=d.span))
        elif isinstance(d, A.StructDecl):
            self.struct_decl(d, scope)
        elif isinstance(d, A.EnumDecl):
            self.enum_decl(d, scope)
        elif isinstance(d, A.TypedefDecl):
            t = self.resolve_type(d.typeref, scope)
            if d.new_type and not isinstance(t, (BitsType, BoolType, NewType)):
                raise self.err(d, f"'type' can only be applied to bit<W>, int<W>, bool or another 'type', not {t}")
            if isinstance(t, VarbitType) or isinstance(t, StringType):
                pass
            self.declare_type(scope, d.name, NewType(d.name, t, d) if d.new_type else t, d)
        elif isinstance(d, A.ExternDecl):
            self.declare_type(scope, d.name, d, d)
            self.check_extern(d, scope)
        elif isinstance(d, A.ExternFunctionDecl):
            self.check_signature(d.type_params, d.params, d.return_type, scope, "extern")
            self.declare_value(scope, d, overload=True)
        elif isinstance(d, (A.ParserTypeDecl, A.ControlTypeDecl, A.PackageTypeDecl)):
            self.declare_type(scope, d.name, d, d)
            self.check_signature(d.type_params, d.params, None, scope,
                                 "package" if isinstance(d, A.PackageTypeDecl) else "apply")
        elif isinstance(d, A.ParserDecl):
            self.declare_type(scope, d.name, d, d)
            self.check_parser(d, scope)
        elif isinstance(d, A.ControlDecl):
            self.declare_type(scope, d.name, d, d)
            self.check_control(d, scope)
        elif isinstance(d, A.ActionDecl):
            self.declare_value(scope, d, overload=True)
            self.check_action(d, scope)
        elif isinstance(d, A.FunctionDecl):
            # Declared after its body: P4_16 functions cannot recurse.
            self.check_function(d, scope)
            self.declare_value(scope, d, overload=True)
        elif isinstance(d, A.ConstDecl):
            self.const_decl(d, scope)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, scope)
        elif isinstance(d, A.VarDecl):
            raise self.err(d, "variables cannot be declared at top level")
        elif isinstance(d, A.ValueSetDecl):
            raise self.err(d, "value sets may only be declared in parsers")
        else:  # pragma: no cover - parser produces nothing else
            raise self.err(d, f"unexpected declaration {type(d).__name__}")

    def resolve_type(self, tr: A.TypeRef, scope: Scope, allow_void: bool = False,
                     allow_dontcare: bool = False) -> P4Type:
        t = self._resolve_type(tr, scope)
        if isinstance(t, VoidType) and not allow_void:
            raise self.err(tr, "void is not allowed here")
        if isinstance(t, DontCareType) and not allow_dontcare:
            raise self.err(tr, "'_' is only allowed as a type argument")
        tr.resolved = t
        return t

    def _resolve_type(self, tr: A.TypeRef, scope: Scope) -> P4Type:
        if isinstance(tr, A.BaseTypeRef):
            n = tr.name
            if n in ("bit", "int", "varbit"):
                if tr.width is None:
                    return INT
                w = self.const_int(tr.width, scope, "a width")
                tr.width = A.IntLit(w, span=tr.width.span, type=INT)
                if w < 0 or w > MAX_WIDTH:
                    raise self.err(tr, f"width {w} is out of range")
                if n == "int" and w == 0:
                    raise self.err(tr, "int<0> is not allowed")
                if n == "varbit":
                    return VarbitType(w)
                return BitsType(w, n == "int")
            return {"bool": BOOL, "error": ERROR, "string": STRING, "void": VOID,
                    "match_kind": MATCH_KIND}[n]
        if isinstance(tr, A.DontCareTypeRef):
            return DONT_CARE
        if isinstance(tr, A.TupleTypeRef):
            elems = tuple(self.resolve_type(e, scope) for e in tr.elems)
            for e, et in zip(tr.elems, elems):
                if isinstance(et, (ExternType, BlockType, TableType)):
                    raise self.err(e, f"{et} is not allowed as a tuple element")
            return TupleType(elems)
        if isinstance(tr, A.StackTypeRef):
            elem = self.resolve_type(tr.elem, scope)
            size = self.const_int(tr.size, scope, "a stack size")
            tr.size = A.IntLit(size, span=tr.size.span, type=INT)
            if size < 0 or size > MAX_STACK:
                raise self.err(tr, f"stack size {size} is out of range")
            if not isinstance(elem, (HeaderType, HeaderUnionType)):
                raise self.err(tr, f"stack elements must be headers or header unions, not {elem}")
            return StackType(elem, size)
        if isinstance(tr, A.NamedTypeRef):
            found = (self.globals if tr.top_level else scope).lookup_type(tr.name)
            if found is None:
                raise self.err(tr, f"unknown type {tr.name!r}")
            args = tuple(self.resolve_type(a, scope, allow_dontcare=True) for a in tr.args)
            if isinstance(found, A.ExternDecl):
                if args and len(args) != len(found.type_params):
                    raise self.err(tr, f"{tr.name} expects {len(found.type_params)} type arguments")
                return ExternType(found, args)
            if isinstance(found, (A.ParserDecl, A.ControlDecl, A.ParserTypeDecl,
                                  A.ControlTypeDecl, A.PackageTypeDecl)):
                if args and len(args) != len(found.type_params):
                    raise self.err(tr, f"{tr.name} expects {len(found.type_params)} type arguments")
                return BlockType(found, args)
            if isinstance(found, A.StructDecl):
                return self.instantiate_struct(found, args, tr, scope)
            if args:
                raise self.err(tr, f"{tr.name} is not generic")
            return found
        raise self.err(tr, "unsupported type")  # pragma: no cover

    def struct_decl(self, d: A.StructDecl, scope: Scope) -> None:
        if d.name in scope.types or d.name in scope.values:
            raise self.err(d, f"type {d.name!r} is already declared")
        if len(set(d.type_params)) != len(d.type_params):
            raise self.err(d, f"{d.name} has a duplicate type parameter")
        if d.type_params:
            # A generic struct/header is a template; each use with type
            # arguments makes (and caches) a concrete type.
            self.struct_fields(d, scope, {})
            self.declare_type(scope, d.name, d, d)
            return
        t = self.struct_fields(d, scope, {})
        d.resolved = t
        self.declare_type(scope, d.name, t, d)

    def instantiate_struct(self, d: A.StructDecl, args: tuple[P4Type, ...], tr: A.TypeRef,
                           scope: Scope) -> P4Type:
        if len(args) != len(d.type_params):
            raise self.err(tr, f"{d.name} expects {len(d.type_params)} type arguments")
        key = (id(d), args)
        t = self.generic_cache.get(key)
        if t is None:
            t = self.struct_fields(d, scope, dict(zip(d.type_params, args)),
                                   name=f"{d.name}<{', '.join(map(str, args))}>")
            self.generic_cache[key] = t
        return t

    def struct_fields(self, d: A.StructDecl, scope: Scope, bind: dict[str, P4Type],
                      name: Optional[str] = None) -> Any:
        """Resolve the fields of a struct-like declaration into its type;
        ``bind`` gives the type arguments of a generic one (unbound type
        parameters stay ``TypeVar``s, which is how the template is checked)."""
        cls = {"header": HeaderType, "header_union": HeaderUnionType, "struct": StructType}[d.kind]
        t = cls(name or d.name, [], d)
        inner = Scope(scope, "struct")
        for tp in d.type_params:
            inner.types[tp] = bind.get(tp) or TypeVar(tp)
        scope = inner
        names: set[str] = set()
        for f in d.fields:
            ft = self.resolve_type(f.typeref, scope)
            if f.name in names:
                raise self.err(f, f"field {f.name!r} is declared twice")
            names.add(f.name)
            if isinstance(ft, TypeVar):
                pass  # checked when the template is instantiated
            elif d.kind == "header":
                self.check_header_field(f, ft)
            elif d.kind == "header_union" and not isinstance(ft, HeaderType):
                raise self.err(f, f"header union fields must be headers, not {ft}")
            elif d.kind == "struct" and isinstance(ft, (ExternType, BlockType, VoidType, StringType)):
                raise self.err(f, f"struct fields cannot have type {ft}")
            if isinstance(ft, TupleType) and any(isinstance(x, (ExternType, BlockType)) for x in ft.elems):
                raise self.err(f, f"field {f.name} cannot have type {ft}")
            t.fields.append(FieldInfo(f.name, ft, f.annotations))
        if d.kind == "header" and sum(isinstance(strip_newtype(f.type), VarbitType) for f in t.fields) > 1:
            raise self.err(d, f"header {d.name} has more than one varbit field")
        return t

    def check_header_field(self, f: A.FieldDecl, ft: P4Type) -> None:
        base = strip_newtype(ft)
        if isinstance(base, (BitsType, VarbitType, BoolType)):
            return
        if isinstance(base, EnumType) and base.underlying is not None:
            return
        if isinstance(base, StructType) and flat_bits_struct(base):
            return
        raise self.err(f, f"header field {f.name!r} cannot have type {ft}")

    def enum_decl(self, d: A.EnumDecl, scope: Scope) -> None:
        if len(set(d.members)) != len(d.members):
            raise self.err(d, f"enum {d.name} has a duplicate member")
        underlying = None
        if d.underlying is not None:
            u = self.resolve_type(d.underlying, scope)
            if not isinstance(u, BitsType):
                raise self.err(d.underlying, "a serializable enum needs a bit<W> or int<W> type")
            underlying = u
        t = EnumType(d.name, list(d.members), underlying, {}, d)
        if underlying is not None:
            for m, v in zip(d.members, d.values):
                if v is None:
                    raise self.err(d, f"member {m} of serializable enum {d.name} needs a value")
                e = self.coerce(self.expr(v, scope, underlying), underlying)
                if not isinstance(e, A.IntLit):
                    raise self.err(v, "enum values must be compile-time constants")
                t.values[m] = e.value
        elif any(v is not None for v in d.values):
            raise self.err(d, "only serializable enums (enum bit<W> ...) have member values")
        d.resolved = t
        self.declare_type(scope, d.name, t, d)

    def check_signature(self, tparams: list[str], params: list[A.Param],
                        ret: Optional[A.TypeRef], scope: Scope, kind: str = "apply",
                        n_apply: Optional[int] = None) -> Scope:
        """Resolve and check parameter lists.

        ``kind`` is what declares them: ``apply`` (parser/control apply
        parameters, the first ``n_apply`` ones when constructor parameters
        follow), ``package``, ``action``, ``function``, ``extern`` (extern
        functions and methods) or ``ctor`` (extern constructors)."""
        inner = Scope(scope, "signature")
        if len(set(tparams)) != len(tparams):
            raise self.err(params[0] if params else None, "duplicate type parameter name")
        for tp in tparams:
            if scope.lookup_type(tp) is not None and scope.root().types.get(tp) is not None:
                raise self.err(params[0] if params else None,
                               f"type parameter {tp!r} has the name of a declared type")
            inner.types[tp] = TypeVar(tp)
        if ret is not None:
            rt = self.resolve_type(ret, inner, allow_void=True)
            if isinstance(rt, IntType) and kind == "extern":
                raise self.err(ret, "int is not a valid return type; use bit<W> or int<W>")
        seen: set[str] = set()
        for i, p in enumerate(params):
            if p.name in seen:
                raise self.err(p, f"parameter {p.name!r} is declared twice")
            seen.add(p.name)
            t = self.resolve_type(p.typeref, inner)
            if p.name in tparams:
                raise self.err(p, f"parameter {p.name!r} has the name of a type parameter")
            is_ctor = kind == "package" or (n_apply is not None and i >= n_apply)
            if p.direction and isinstance(t, (ExternType, StringType, IntType, BlockType, MatchKindType)):
                raise self.err(p, f"a parameter of type {t} cannot have a direction")
            if isinstance(t, BlockType) and not is_ctor:
                raise self.err(p, f"parameter {p.name} cannot have type {t}")
            if isinstance(t, BlockType) and isinstance(t.decl, (A.ParserDecl, A.ControlDecl)):
                raise self.err(p, f"parameter {p.name} cannot have type {t}: use a parser/control type prototype")
            if kind == "action" and isinstance(t, (ExternType, BlockType)):
                raise self.err(p, f"action parameters cannot have type {t}")
            if kind == "action" and p.direction == "" and not isinstance(
                    strip_newtype(t), (BitsType, BoolType, EnumType)):
                raise self.err(p, f"action data parameter {p.name} cannot have type {t}")
            if p.optional and kind not in ("extern", "ctor", "package"):
                raise self.err(p, "optional parameters are only allowed in extern declarations")
            if p.default is not None:
                if p.direction in ("out", "inout"):
                    raise self.err(p, f"{p.direction} parameter {p.name} cannot have a default value")
                if p.optional:
                    raise self.err(p, f"optional parameter {p.name} cannot have a default value")
                p.default = self.coerce(self.expr(p.default, inner, t), t)
                if not is_constant(p.default):
                    raise self.err(p.default, "default values must be compile-time constants")
        return inner

    def check_extern(self, d: A.ExternDecl, scope: Scope) -> None:
        inner = Scope(scope, "extern")
        for tp in d.type_params:
            inner.types[tp] = TypeVar(tp)
        sigs: set[tuple[str, int]] = set()
        for m in d.methods:
            if m.return_type is not None and m.name == d.name:
                raise self.err(m, f"constructor {m.name} cannot have a return type")
            key = (m.name, len(m.params))
            if key in sigs:
                raise self.err(m, f"{m.name} is declared twice with {len(m.params)} parameters")
            sigs.add(key)
            if m.return_type is None and m.name != d.name:
                raise self.err(m, f"constructor {m.name} must be named {d.name}")
            self.check_signature(m.type_params, m.params, m.return_type, inner,
                                 "ctor" if m.return_type is None else "extern")

    def const_int(self, e: A.Expression, scope: Scope, what: str) -> int:
        v = self.expr(e, scope, None)
        if isinstance(v, A.IntLit):
            return v.value
        raise self.err(e, f"{what} must be a compile-time integer constant")

    def const_decl(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.typeref, scope)
        v = self.coerce(self.expr(d.value, scope, t), t)
        if not is_constant(v):
            raise self.err(d.value, f"the value of constant {d.name!r} is not a compile-time constant")
        d.value = v
        self.declare_value(scope, d)

    def params_scope(self, params: list[A.Param], scope: Scope, kind: str) -> Scope:
        inner = Scope(scope, kind)
        for p in params:
            if p.name in inner.values:
                raise self.err(p, f"parameter {p.name!r} is declared twice")
            inner.values[p.name] = p
        return inner

    def check_parser(self, d: A.ParserDecl, scope: Scope) -> None:
        sig = self.check_signature(d.type_params, d.params + d.ctor_params, None, scope, "apply",
                                   n_apply=len(d.params))
        inner = self.params_scope(d.params + d.ctor_params, sig, "parser")
        saved = self.ctx
        self.ctx = Context()
        self.ctx.in_parser = d
        try:
            for loc in d.locals:
                self.local_decl(loc, inner, d)
            names = set()
            for st in d.states:
                if st.name in names:
                    raise self.err(st, f"state {st.name!r} is declared twice")
                if st.name in ("accept", "reject"):
                    raise self.err(st, f"state {st.name!r} is predefined")
                names.add(st.name)
            if "start" not in names:
                raise self.err(d, f"parser {d.name} has no start state")
            for st in d.states:
                s_scope = Scope(inner, "state")
                for stmt in st.stmts:
                    self.stmt(stmt, s_scope)
                tr = st.transition
                if tr is None:
                    # A state without transition goes to reject (P4_16 spec).
                    st.transition = A.Transition("reject", span=st.span)
                    st.transition.next_state = "reject"
                elif tr.select is None:
                    tr.next_state = self.state_target(d, tr.state or "", tr)
                else:
                    self.select(tr.select, s_scope, d)
        finally:
            self.ctx = saved

    def state_target(self, d: A.ParserDecl, name: str, node: A.Node) -> Any:
        if name in ("accept", "reject"):
            return name
        st = d.state(name)
        if st is None:
            raise self.err(node, f"unknown state {name!r}")
        return st

    def select(self, sel: A.SelectExpr, scope: Scope, d: A.ParserDecl) -> None:
        exprs = [self.rvalue(e, scope) for e in sel.exprs]
        sel.exprs = exprs
        for e in exprs:
            if isinstance(e.type, IntType):
                raise self.err(e, "select expressions need a width (cast the integer)")
            if not isinstance(strip_newtype(e.type), (BitsType, BoolType, EnumType, ErrorType)):  # type: ignore[arg-type]
                raise self.err(e, f"a value of type {e.type} cannot be used in select")
        key_types = [e.type for e in exprs]
        sel.type = TupleType(tuple(key_types))  # type: ignore[arg-type]
        for case in sel.cases:
            case.keyset = self.keyset_for(case.keyset, key_types, scope)
            if not is_constant(case.keyset):
                raise self.err(case.keyset, "select keysets must be compile-time constants")
            case.next_state = self.state_target(d, case.state, case)

    def keyset_for(self, ks: A.Expression, key_types: list[Optional[P4Type]], scope: Scope) -> A.Expression:
        if isinstance(ks, A.DefaultExpr):
            ks.type = DONT_CARE
            return ks
        if len(key_types) == 1:
            if isinstance(ks, A.ListExpr) and len(ks.elems) == 1:
                ks = ks.elems[0]
            return self.simple_keyset(ks, key_types[0], scope)  # type: ignore[arg-type]
        if isinstance(ks, A.ListExpr):
            if len(ks.elems) != len(key_types):
                raise self.err(ks, f"keyset has {len(ks.elems)} components, the select has {len(key_types)}")
            ks.elems = [self.simple_keyset(k, t, scope) for k, t in zip(ks.elems, key_types)]  # type: ignore[arg-type]
            ks.type = SetType(TupleType(tuple(key_types)))  # type: ignore[arg-type]
            return ks
        # A value set over a struct/tuple covers all components at once.
        e = self.expr(ks, scope, None)
        if isinstance(e.type, SetType):
            return e
        raise self.err(ks, f"keyset must have {len(key_types)} components")

    def simple_keyset(self, ks: A.Expression, t: P4Type, scope: Scope) -> A.Expression:
        if isinstance(ks, A.DefaultExpr):
            ks.type = DONT_CARE
            return ks
        if isinstance(ks, A.Mask):
            mt = t
            if isinstance(t, EnumType) and t.underlying is not None:
                mt = t.underlying
            ks.value = self.coerce(self.expr(ks.value, scope, t), t)
            ks.mask = self.coerce(self.expr(ks.mask, scope, mt), mt)
            ks.type = SetType(t)
            return ks
        if isinstance(ks, A.Range):
            ks.lo = self.coerce(self.expr(ks.lo, scope, t), t)
            ks.hi = self.coerce(self.expr(ks.hi, scope, t), t)
            ks.type = SetType(t)
            return ks
        e = self.expr(ks, scope, t)
        if isinstance(e.type, SetType):
            elem = e.type.elem
            if isinstance(elem, StructType) and len(elem.fields) == 1:
                elem = elem.fields[0].type
            if not self.same_type(elem, t):
                raise self.err(ks, f"value set of {e.type.elem} cannot match a key of type {t}")
            return e
        return self.coerce(e, t)

    def check_control(self, d: A.ControlDecl, scope: Scope) -> None:
        sig = self.check_signature(d.type_params, d.params + d.ctor_params, None, scope, "apply",
                                   n_apply=len(d.params))
        inner = self.params_scope(d.params + d.ctor_params, sig, "control")
        saved = self.ctx
        self.ctx = Context()
        self.ctx.in_control = d
        try:
            for loc in list(d.locals):
                self.local_decl(loc, inner, d)
            self.block(d.body, Scope(inner, "apply"))
        finally:
            self.ctx = saved

    def local_decl(self, loc: A.Decl, scope: Scope, owner: A.Decl) -> None:
        self.check_annotations(loc.annotations)
        if isinstance(loc, A.ConstDecl):
            self.const_decl(loc, scope)
        elif isinstance(loc, A.VarDecl):
            self.var_decl(loc, scope)
        elif isinstance(loc, A.Instantiation):
            self.instantiation(loc, scope)
        elif isinstance(loc, A.ValueSetDecl):
            if not isinstance(owner, A.ParserDecl):
                raise self.err(loc, "value sets may only be declared in parsers")
            et = self.resolve_type(loc.elem, scope)
            if not isinstance(strip_newtype(et), (BitsType, BoolType, EnumType, StructType, TupleType)):
                raise self.err(loc.elem, f"a value set cannot hold values of type {et}")
            loc.size = A.IntLit(self.const_int(loc.size, scope, "a value set size"), span=loc.size.span, type=INT)
            self.declare_value(scope, loc)
        elif isinstance(loc, A.ActionDecl):
            self.declare_value(scope, loc, overload=True)
            self.check_action(loc, scope)
        elif isinstance(loc, A.TableDecl):
            if not isinstance(owner, A.ControlDecl):
                raise self.err(loc, "tables may only be declared in controls")
            self.declare_value(scope, loc)
            self.check_table(loc, scope)
        else:
            raise self.err(loc, f"{type(loc).__name__} is not allowed here")

    def check_action(self, d: A.ActionDecl, scope: Scope) -> None:
        self.check_signature([], d.params, None, scope, "action")
        seen_directionless = False
        for p in d.params:
            if p.direction == "":
                seen_directionless = True
            elif seen_directionless:
                raise self.err(p, "directionless action parameters must come last")
        inner = self.params_scope(d.params, scope, "action")
        saved_a, saved_r = self.ctx.in_action, self.ctx.return_type
        saved_f = self.ctx.in_function
        self.ctx.in_action, self.ctx.return_type, self.ctx.in_function = d, VOID, None
        try:
            self.block(d.body, inner)
        finally:
            self.ctx.in_action, self.ctx.return_type, self.ctx.in_function = saved_a, saved_r, saved_f

    def check_function(self, d: A.FunctionDecl, scope: Scope) -> None:
        sig = self.check_signature(d.type_params, d.params, d.return_type, scope, "function")
        inner = self.params_scope(d.params, sig, "function")
        saved = self.ctx
        self.ctx = Context()
        self.ctx.in_function = d
        self.ctx.return_type = d.return_type.resolved
        try:
            self.block(d.body, inner)
        finally:
            self.ctx = saved
        rt = d.return_type.resolved
        if not isinstance(rt, VoidType) and not always_returns(d.body):
            raise self.err(d, f"function {d.name} does not return a value on every path")

    def var_decl(self, d: A.VarDecl, scope: Scope) -> None:
        t = self.resolve_type(d.typeref, scope)
        if isinstance(t, (ExternType, BlockType)):
            raise self.err(d, f"a variable cannot have type {t}; instantiate it with {t}(...) {d.name};")
        if isinstance(t, IntType):
            raise self.err(d, "variables need a width: use bit<W> or int<W>")
        if d.init is not None:
            d.init = self.coerce(self.expr(d.init, scope, t), t)
        self.declare_value(scope, d)

    def instantiation(self, d: A.Instantiation, scope: Scope) -> None:
        t = self.resolve_type(d.typeref, scope)
        owner = self.ctx.in_control or self.ctx.in_parser
        if isinstance(t, BlockType):
            decl = t.decl
            if isinstance(decl, (A.ParserTypeDecl, A.ControlTypeDecl)):
                raise self.err(d, f"{decl.name} is a type prototype and cannot be instantiated")
            if owner is None and not isinstance(decl, A.PackageTypeDecl):
                raise self.err(d, f"{decl.name} cannot be instantiated at top level")
            if owner is not None and isinstance(decl, A.PackageTypeDecl):
                raise self.err(d, "packages can only be instantiated at top level")
            if decl is owner:
                raise self.err(d, f"{decl.name} cannot instantiate itself")
            if isinstance(owner, A.ControlDecl) and isinstance(decl, A.ParserDecl):
                raise self.err(d, "parsers cannot be instantiated in controls")
            if isinstance(owner, A.ParserDecl) and isinstance(decl, A.ControlDecl):
                raise self.err(d, "controls cannot be instantiated in parsers")
            if d.initializer:
                raise self.err(d, "initializers are only allowed for extern instances")
        elif not isinstance(t, ExternType):
            raise self.err(d, f"cannot instantiate {t}")
        elif self.ctx.in_action is not None or self.ctx.in_function is not None:
            raise self.err(d, "instances cannot be declared in actions or functions")
        if d.name == "main" and not (isinstance(t, BlockType) and isinstance(t.decl, A.PackageTypeDecl)):
            raise self.err(d, "main must be an instance of a package")
        d.args = self.constructor_args(d, t, d.args, scope)
        if isinstance(t, ExternType):
            d.decl = t.decl
            self.abstract_methods(d, t, scope)
        else:
            d.decl = t.decl
        self.declare_value(scope, d)

    def abstract_methods(self, d: A.Instantiation, t: ExternType, scope: Scope) -> None:
        """Check the implementations of an extern's abstract methods."""
        abstract = [m for m in t.decl.methods if m.abstract]
        if not abstract and not d.initializer:
            return
        inner = Scope(scope, "initializer")
        inner.values["this"] = d
        bind = dict(zip(t.decl.type_params, t.type_args))
        done: set[str] = set()
        for m in d.initializer:
            if not isinstance(m, A.FunctionDecl):
                raise self.err(m, "an extern initializer may only implement abstract methods")
            want = next((a for a in abstract if a.name == m.name and len(a.params) == len(m.params)), None)
            if want is None:
                raise self.err(m, f"{m.name}: no matching abstract method in {t.name}")
            self.check_function(m, inner)
            if not self.same_type(m.return_type.resolved, subst(want.return_type.resolved, bind)):  # type: ignore[union-attr]
                raise self.err(m, f"{m.name} must return {subst(want.return_type.resolved, bind)}")  # type: ignore[union-attr]
            for a, b in zip(m.params, want.params):
                if a.direction != b.direction or not self.same_type(a.type, subst(b.type, bind)):
                    raise self.err(a, f"parameter {a.name} does not match the abstract method's")
            done.add(m.name)
        for a in abstract:
            if a.name not in done:
                raise self.err(d, f"abstract method {a.name} of {t.name} is not implemented")

    def constructor_args(self, node: A.Node, t: P4Type, args: list[A.Argument],
                         scope: Scope) -> list[A.Argument]:
        """Check constructor arguments of an extern/parser/control/package."""
        if isinstance(t, ExternType):
            ctors = t.decl.constructors()
            if not ctors:
                raise self.err(node, f"extern {t.name} has no constructor")
            bind = dict(zip(t.decl.type_params, t.type_args)) if t.type_args else {}
            out = self.match_call(node, ctors, args, scope, bind, what=f"{t.name} constructor")[1]
            self.require_ctor_constants(out)
            return out
        if isinstance(t, BlockType):
            decl = t.decl
            if isinstance(decl, (A.ParserDecl, A.ControlDecl)):
                params = decl.ctor_params
            elif isinstance(decl, A.PackageTypeDecl):
                params = decl.params
            else:
                params = []
            bind = dict(zip(getattr(decl, "type_params", []), t.type_args)) if t.type_args else {}
            fake = A.Method(decl.name, None, [], params, span=decl.span)  # type: ignore[attr-defined]
            out = self.match_call(node, [fake], args, scope, bind, what=f"{decl.name}")[1]  # type: ignore[attr-defined]
            self.require_ctor_constants(out)
            return out
        raise self.err(node, f"cannot construct {t}")

    def require_ctor_constants(self, args: list[A.Argument]) -> None:
        for a in args:
            v = a.value
            if is_constant(v) or isinstance(v, A.ConstructorCall):
                continue
            if isinstance(v, A.PathExpr) and isinstance(v.ref, A.Instantiation):
                continue
            if isinstance(v, A.PathExpr) and isinstance(v.ref, A.Param) and v.ref.direction == "":
                continue
            raise self.err(a, "constructor arguments must be compile-time constants")

    def resolve_main(self) -> None:
        main = self.globals.values.get("main")
        if main is None:
            return
        if not isinstance(main, A.Instantiation) or not isinstance(main.decl, A.PackageTypeDecl):
            raise self.err(main, "main must be an instance of a package")
        pkg = main.decl
        self.program.main = main
        self.program.package = pkg.name
        for p, a in zip(pkg.params, main.args):
            v = a.value
            decl: Optional[A.Node] = None
            args: list[A.Argument] = []
            if isinstance(v, A.ConstructorCall):
                decl, args = v.decl, v.args
            elif isinstance(v, A.PathExpr) and isinstance(v.ref, A.Instantiation):
                decl, args = v.ref.decl, v.ref.args
            if decl is None:
                raise self.err(a, f"argument {p.name} of {pkg.name} must be a parser or control instance")
            self.program.blocks[p.name] = A.PipelineBlock(p.name, decl, args)
        if pkg.name == "V1Switch" and len(pkg.params) == 6:
            for role, p in zip(V1_ROLES, pkg.params):
                self.program.v1model[role] = self.program.blocks[p.name]

    def block(self, b: A.BlockStmt, scope: Scope) -> None:
        for s in b.stmts:
            self.stmt(s, scope)

    def stmt(self, s: A.Statement, scope: Scope) -> None:
        if isinstance(s, A.AssignStmt):
            lhs = self.expr(s.lhs, scope, None)
            self.require_lvalue(lhs)
            s.lhs = lhs
            s.rhs = self.coerce(self.expr(s.rhs, scope, lhs.type), lhs.type)  # type: ignore[arg-type]
        elif isinstance(s, A.CallStmt):
            c = self.expr(s.call, scope, None)
            if not isinstance(c, A.MethodCall):
                raise self.err(s, "expected a call")
            s.call = c
        elif isinstance(s, A.BlockStmt):
            self.block(s, Scope(scope))
        elif isinstance(s, A.IfStmt):
            s.cond = self.coerce(self.expr(s.cond, scope, BOOL), BOOL)
            self.stmt_scoped(s.then, scope)
            if s.els is not None:
                self.stmt_scoped(s.els, scope)
        elif isinstance(s, A.SwitchStmt):
            self.switch(s, scope)
        elif isinstance(s, A.ExitStmt):
            if self.ctx.in_function is not None:
                raise self.err(s, "exit is not allowed in functions")
        elif isinstance(s, A.ReturnStmt):
            rt = self.ctx.return_type
            if self.ctx.in_parser is not None and self.ctx.in_function is None:
                raise self.err(s, "return is not allowed in parsers")
            if s.value is not None:
                if rt is None or isinstance(rt, VoidType):
                    raise self.err(s, "this return cannot have a value")
                s.value = self.coerce(self.expr(s.value, scope, rt), rt)
            elif rt is not None and not isinstance(rt, VoidType):
                raise self.err(s, f"return needs a value of type {rt}")
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, A.ForStmt):
            inner = Scope(scope)
            for st in s.init:
                self.stmt(st, inner)
            if s.cond is not None:
                s.cond = self.coerce(self.expr(s.cond, inner, BOOL), BOOL)
            for st in s.updates:
                self.stmt(st, inner)
            self.loop_body(s.body, inner)
        elif isinstance(s, A.ForInStmt):
            inner = Scope(scope)
            t = self.resolve_type(s.var.typeref, inner)
            c = s.collection
            if isinstance(c, A.Range):
                c.lo = self.coerce(self.expr(c.lo, inner, t), t)
                c.hi = self.coerce(self.expr(c.hi, inner, t), t)
                if not isinstance(strip_newtype(t), BitsType):
                    raise self.err(s.var, "a range loop variable needs a bit<W> or int<W> type")
                c.type = SetType(t)
            else:
                c = self.rvalue(c, inner)
                ct = c.type
                elems: tuple[Any, ...] = ()
                if isinstance(ct, TupleType):
                    elems = ct.elems
                elif isinstance(ct, StackType):
                    elems = (ct.elem,) * ct.size
                else:
                    raise self.err(c, f"cannot iterate over a value of type {ct}")
                for et in elems:
                    if not self.same_type(et, t) and not isinstance(et, IntType):
                        raise self.err(c, f"elements of type {et} cannot be assigned to {s.var.name} of type {t}")
                s.collection = c
            self.var_decl(s.var, inner)
            self.loop_body(s.body, inner)
        elif isinstance(s, (A.BreakStmt, A.ContinueStmt)):
            if self.loop_depth == 0:
                raise self.err(s, f"{'break' if isinstance(s, A.BreakStmt) else 'continue'} outside a loop")
        elif isinstance(s, A.DeclStmt):
            if isinstance(s.decl, A.ConstDecl):
                self.const_decl(s.decl, scope)
            else:
                self.var_decl(s.decl, scope)
        else:  # pragma: no cover
            raise self.err(s, f"unexpected statement {type(s).__name__}")

    def loop_body(self, body: A.Statement, scope: Scope) -> None:
        if self.ctx.in_parser is not None and self.ctx.in_action is None and self.ctx.in_function is None:
            raise self.err(body, "loops are not allowed in parsers")
        self.loop_depth += 1
        try:
            self.stmt_scoped(body, scope)
        finally:
            self.loop_depth -= 1

    def stmt_scoped(self, s: A.Statement, scope: Scope) -> None:
        self.stmt(s, scope if isinstance(s, A.BlockStmt) else Scope(scope))

    def switch(self, s: A.SwitchStmt, scope: Scope) -> None:
        e = self.expr(s.expr, scope, None)
        s.expr = e
        labels: set[Any] = set()
        if isinstance(e.type, ActionEnumType):
            table = e.type.table
            for c in s.cases:
                if isinstance(c.label, A.DefaultExpr):
                    c.label.type = DONT_CARE
                    key: Any = "default"
                else:
                    if not isinstance(c.label, A.PathExpr):
                        raise self.err(c.label, "switch labels on action_run must be action names")
                    ref = next((a for a in table.actions if a.name == c.label.name), None)
                    if ref is None:
                        raise self.err(c.label, f"{c.label.name} is not an action of table {table.name}")
                    c.label.ref = ref.decl
                    c.label.type = e.type
                    key = c.label.name
                if key in labels:
                    raise self.err(c.label, "duplicate switch label")
                labels.add(key)
                if c.body is not None:
                    self.block(c.body, Scope(scope))
        else:
            t = strip_newtype(e.type)  # type: ignore[arg-type]
            if not isinstance(t, (BitsType, EnumType, ErrorType)):
                raise self.err(e, f"cannot switch on a value of type {e.type}")
            for c in s.cases:
                if isinstance(c.label, A.DefaultExpr):
                    c.label.type = DONT_CARE
                    key = "default"
                else:
                    c.label = self.coerce(self.expr(c.label, scope, e.type), e.type)  # type: ignore[arg-type]
                    if not is_constant(c.label):
                        raise self.err(c.label, "switch labels must be compile-time constants")
                    key = literal_key(c.label)
                if key in labels:
                    raise self.err(c.label, "duplicate switch label")
                labels.add(key)
                if c.body is not None:
                    self.block(c.body, Scope(scope))
        for c in s.cases[:-1]:
            if isinstance(c.label, A.DefaultExpr):
                raise self.err(c.label, "default must be the last switch label")


def check_program(program: A.Program) -> None:
    """Type-check ``program`` in place (raises ``P4Error``)."""
    try:
        Checker(program).run()
    except RecursionError:
        raise P4Error(program.span, "program is nested too deeply") from None
