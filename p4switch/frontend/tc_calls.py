"""Call checking: which declaration a call names, its arguments and type arguments.

Part of the type checker (see typecheck.py).
"""

from __future__ import annotations

from typing import Any, Optional

from . import ast as A
from .errors import P4Error
from .types import (
    BOOL,
    DONT_CARE,
    INT,
    VOID,
    ApplyResultType,
    BitsType,
    BlockType,
    BoolType,
    CallableType,
    DontCareType,
    ExternType,
    HeaderType,
    HeaderUnionType,
    IntType,
    P4Type,
    StackType,
    StringType,
    StructLikeType,
    TableType,
    TupleType,
    TypeNameType,
    TypeVar,
    VarbitType,
    strip_newtype,
    width_of,
)
from .tcutil import (
    Scope,
    subst,
    has_typevar,
    unify,
    is_constant,
    emittable,
    _expr_nodes,
    contains_int,
    visible_names,
    suggest,
)


class CallChecker:
    """Calls: overload resolution, argument checking, type-argument inference (mixed into ``Checker``)."""

    def e_MethodCall(self, e: A.MethodCall, scope: Scope, expected: Optional[P4Type]) -> A.Expression:
        f = e.func
        targs = [self.resolve_type(t, scope, allow_void=True, allow_dontcare=True) for t in e.type_args]
        if isinstance(f, A.PathExpr):
            found = (self.globals if f.top_level else scope).lookup(f.name)
            if found is None:
                t = scope.lookup_type(f.name)
                if t is not None:
                    raise self.err(f, f"{f.name} is a type; to instantiate it write {f.name}(...) name;")
                raise self.err(f, f"{f.name!r} is not declared{suggest(f.name, visible_names(scope))}")
            if not isinstance(found, list):
                raise self.err(f, f"{f.name!r} is not a function, action or method")
            decl, args, bind = self.match_in_scopes(e, f, found, scope, targs)
            f.ref = decl
            f.type = CallableType(decl)
            e.target = decl
            e.args = args
            e.params = self._params_for(decl, e)
            if isinstance(decl, A.ActionDecl):
                e.kind = "action"
                if any(isinstance(x, A.MethodCall) and x.kind == "table_apply" for x in _expr_nodes(args)):
                    raise self.err(e, "a table cannot be applied in an action argument")
                if self.ctx.in_function is not None:
                    raise self.err(e, "actions cannot be called from functions")
                if self.ctx.in_parser is not None and self.ctx.in_action is None:
                    raise self.err(e, "actions cannot be called from parsers")
                e.type = VOID
            elif isinstance(decl, A.FunctionDecl):
                e.kind = "function"
                e.type = subst(decl.return_type.resolved, bind)
            else:
                e.kind = "extern_function"
                e.type = subst(decl.return_type.resolved, bind)
                if decl.name == "verify" and self.ctx.in_parser is None:
                    raise self.err(e, "verify may only be called in parsers")
                if decl.name == "static_assert" and isinstance(decl.return_type.resolved, BoolType):
                    cond = e.args[0].value
                    if not is_constant(cond):
                        raise self.err(e.args[0], "static_assert needs a compile-time condition")
                    if isinstance(cond, A.BoolLit) and not cond.value:
                        msg = e.args[1].value if len(e.args) > 1 else None
                        text = msg.value if isinstance(msg, A.StringLit) else "static assertion failed"
                        raise self.err(e, text)
            e.resolved_type_args = [bind.get(tp, DONT_CARE) for tp in getattr(decl, "type_params", [])]
            return e
        if isinstance(f, A.Member):
            obj = self.expr(f.expr, scope, None)
            f.expr = obj
            ot = obj.type
            name = f.name
            if isinstance(ot, ExternType):
                methods = ot.decl.methods_named(name)
                if not methods:
                    raise self.err(f.name_span or f.span, f"extern {ot.name} has no method {name!r}")
                bind0 = dict(zip(ot.decl.type_params, ot.type_args)) if ot.type_args else {}
                decl, args, bind = self.match_call(e, methods, e.args, scope, bind0, what=f"{ot.name}.{name}",
                                                   targs=targs)
                e.kind, e.target, e.args = "extern_method", decl, args
                e.params = self._params_for(decl, e)
                e.type = subst(decl.return_type.resolved, bind)
                e.resolved_type_args = [bind.get(tp, DONT_CARE) for tp in decl.type_params]
                f.type = CallableType(decl)
                self.check_extern_use(e, ot, obj)
                return e
            if isinstance(ot, TableType) and name == "apply":
                if e.args:
                    raise self.err(e, "table apply takes no arguments")
                if self.ctx.in_action is not None or self.ctx.in_function is not None:
                    raise self.err(e, "tables cannot be applied from actions or functions")
                e.kind, e.target, e.type = "table_apply", ot.decl, ApplyResultType(ot.decl)
                f.type = CallableType(ot.decl)
                return e
            direct = isinstance(ot, TypeNameType) and isinstance(ot.named, BlockType)
            if (isinstance(ot, BlockType) or direct) and name == "apply":
                if direct:
                    ot = ot.named  # type: ignore[union-attr]
                assert isinstance(ot, BlockType)
                decl = ot.decl
                if not isinstance(decl, (A.ParserDecl, A.ControlDecl, A.ParserTypeDecl, A.ControlTypeDecl)):
                    raise self.err(e, f"{decl.name} cannot be applied")  # type: ignore[attr-defined]
                if self.ctx.in_action is not None or self.ctx.in_function is not None:
                    raise self.err(e, "apply cannot be called from actions or functions")
                if self.ctx.in_control is not None and isinstance(decl, (A.ParserDecl, A.ParserTypeDecl)):
                    raise self.err(e, "a parser cannot be applied in a control")
                if self.ctx.in_parser is not None and isinstance(decl, (A.ControlDecl, A.ControlTypeDecl)):
                    raise self.err(e, "a control cannot be applied in a parser")
                inst: Any = obj.ref if isinstance(obj, A.PathExpr) else None
                if isinstance(obj, A.TypeNameExpr):
                    inst = self.direct_instance(e, decl, scope)
                fake = A.Method("apply", A.BaseTypeRef("void", span=e.span, resolved=VOID), [],
                                decl.params, span=e.span)  # type: ignore[attr-defined]
                _, args, _ = self.match_call(e, [fake], e.args, scope, {}, what=f"{decl.name}.apply")  # type: ignore[attr-defined]
                e.kind, e.target, e.args, e.type = "block_apply", inst, args, VOID
                e.params = list(decl.params)  # type: ignore[attr-defined]
                f.type = CallableType(decl)
                return e
            if name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                t = ot.named if isinstance(ot, TypeNameType) else ot
                if e.args:
                    raise self.err(e, f"{name} takes no arguments")
                bits = width_of(t)  # type: ignore[arg-type]
                if name.startswith("max"):
                    bits += sum(strip_newtype(fi.type).max_width for fi in getattr(t, "fields", [])  # type: ignore[attr-defined]
                                if isinstance(strip_newtype(fi.type), VarbitType))
                val = bits if name.endswith("Bits") else (bits + 7) // 8
                return A.IntLit(val, span=e.span, type=INT)
            if isinstance(ot, (HeaderType, HeaderUnionType)) and name in ("isValid", "setValid", "setInvalid"):
                if e.args:
                    raise self.err(e, f"{name} takes no arguments")
                if isinstance(ot, HeaderUnionType) and name != "isValid":
                    raise self.err(e, f"header unions have no {name} method")
                if name != "isValid" and not self.is_lvalue(obj):
                    raise self.err(e, f"{name} needs a header that can be written")
                e.kind, e.target = "builtin", name
                e.type = BOOL if name == "isValid" else VOID
                f.type = CallableType(A.Decl(name, span=e.span))
                return e
            if isinstance(ot, StackType) and name in ("push_front", "pop_front"):
                if len(e.args) != 1:
                    raise self.err(e, f"{name} takes one argument")
                n = self.expr(e.args[0].value, scope, None)
                if not isinstance(n, A.IntLit) or n.value < 0:
                    raise self.err(e.args[0], f"the argument of {name} must be a non-negative constant")
                e.args = [A.Argument(A.IntLit(n.value, span=n.span, type=INT), span=e.args[0].span)]
                if not self.is_lvalue(obj):
                    raise self.err(e, f"{name} needs a stack that can be written")
                e.kind, e.target, e.type = "builtin", name, VOID
                f.type = CallableType(A.Decl(name, span=e.span))
                return e
            raise self.err(f.name_span or f.span, f"a value of type {ot} has no method {name!r}")
        raise self.err(e, "this expression cannot be called")

    def match_in_scopes(self, e: A.MethodCall, f: A.PathExpr, found: list[Any], scope: Scope,
                        targs: list[P4Type]) -> tuple[Any, list[A.Argument], dict[str, P4Type]]:
        """Resolve an overloaded name: the nearest declarations first, then
        enclosing scopes when none of the nearer ones takes these arguments
        (a local action ``hash()`` does not hide the extern ``hash(...)``)."""
        first_error: Optional[P4Error] = None
        s: Optional[Scope] = self.globals if f.top_level else scope
        while s is not None:
            cands = s.values.get(f.name)
            if isinstance(cands, list):
                try:
                    return self.match_call(e, cands, e.args, scope, {}, what=f.name, targs=targs)
                except P4Error as err:
                    if first_error is None:
                        first_error = err
                    if not err.message.startswith("no overload"):
                        raise
            s = s.parent
        assert first_error is not None
        raise first_error

    def check_extern_use(self, e: A.MethodCall, ot: ExternType, obj: A.Expression) -> None:
        """Restrictions of the packet_in/packet_out methods on their type argument."""
        name = e.target.name
        if ot.name == "packet_in" and name == "extract":
            t = e.args[0].value.type if e.args else None
            if not isinstance(t, HeaderType):
                raise self.err(e.args[0] if e.args else e, "the argument of extract must be a header")
            has_varbit = any(isinstance(strip_newtype(f.type), VarbitType) for f in t.fields)
            if len(e.args) == 1 and has_varbit:
                raise self.err(e.args[0], "extracting a header with a varbit field needs its size in bits")
            if len(e.args) == 2 and not has_varbit:
                raise self.err(e.args[0], "only headers with a varbit field take a size argument")
        elif ot.name == "packet_in" and name == "lookahead":
            t = e.type
            if isinstance(t, StructLikeType) and any(
                    isinstance(strip_newtype(f.type), VarbitType) for f in t.fields):
                raise self.err(e, "lookahead cannot read a type with varbit fields")
            if not isinstance(strip_newtype(t), (BitsType, BoolType, StructLikeType, TupleType)):  # type: ignore[arg-type]
                raise self.err(e, f"lookahead cannot read a value of type {t}")
        elif ot.name == "packet_out" and name == "emit":
            t = e.args[0].value.type if e.args else None
            if not emittable(t):
                raise self.err(e.args[0] if e.args else e, f"cannot emit a value of type {t}")

    def direct_instance(self, e: A.MethodCall, decl: Any, scope: Scope) -> A.Instantiation:
        """``C.apply(...)`` without instantiating C: create the implicit instance
        in the enclosing parser/control (P4_16's direct type invocation)."""
        owner = self.ctx.in_control or self.ctx.in_parser
        if owner is None:
            raise self.err(e, "direct invocation is only allowed inside parsers and controls")
        if decl is owner:
            raise self.err(e, f"{decl.name} cannot apply itself")
        if decl.ctor_params if hasattr(decl, "ctor_params") else False:
            raise self.err(e, f"{decl.name} has constructor parameters and must be instantiated")
        self.direct_count += 1
        inst = A.Instantiation(f"{decl.name}_{self.direct_count}",
                               A.NamedTypeRef(decl.name, span=e.span, resolved=BlockType(decl)), [], span=e.span)
        inst.decl = decl
        owner.locals.append(inst)
        return inst

    def _params_for(self, decl: Any, e: A.MethodCall) -> list[A.Param]:
        """The parameters the last ``match_call`` paired with arguments."""
        return list(self.last_params)

    def match_call(self, node: A.Node, candidates: list[Any], args: list[A.Argument], scope: Scope,
                   bind0: dict[str, P4Type], what: str,
                   targs: Optional[list[P4Type]] = None) -> tuple[Any, list[A.Argument], dict[str, P4Type]]:
        """Pick the overload that fits ``args`` and check the arguments.

        Returns (declaration, arguments in parameter order, type bindings).
        Leaves the parameters matched, in argument order, in ``last_params``."""
        named = any(a.name is not None for a in args)
        viable = []
        for c in candidates:
            params = c.params
            if named:
                names = {p.name for p in params}
                if not all(a.name in names for a in args):
                    continue
                given = {a.name for a in args}
                if any(p.name not in given and p.default is None and not p.optional for p in params):
                    continue
                viable.append(c)
            else:
                required = sum(1 for p in params if p.default is None and not p.optional)
                if required <= len(args) <= len(params):
                    viable.append(c)
        if not viable:
            raise self.err(node, f"no overload of {what} takes {len(args)} arguments")
        if len(viable) > 1:
            exact = [c for c in viable if len(c.params) == len(args)]
            if len(exact) > 1 and not named:
                raise self.err(node, f"call of {what} is ambiguous: {len(exact)} overloads take {len(args)} arguments")
            viable = exact or viable
        decl = viable[0]
        params: list[A.Param] = decl.params
        bind = dict(bind0)
        tparams = list(getattr(decl, "type_params", []))
        if targs:
            if len(targs) != len(tparams):
                raise self.err(node, f"{what} expects {len(tparams)} type arguments, got {len(targs)}")
            for tp, ta in zip(tparams, targs):
                if not isinstance(ta, DontCareType):
                    bind[tp] = ta
        # Order arguments by parameter.
        if named:
            by_name = {a.name: a for a in args}
            pairs = []
            for p in params:
                if p.name in by_name:
                    pairs.append((p, by_name[p.name]))
                elif p.default is not None:
                    pairs.append((p, A.Argument(A.clone(p.default), p.name, span=node.span)))
        else:
            pairs = list(zip(params, args))
            for p in params[len(args):]:
                if p.default is not None:
                    pairs.append((p, A.Argument(A.clone(p.default), None, span=node.span)))
        # First pass: check args whose parameter type is known, and bind type vars.
        checked: list[Optional[A.Expression]] = [None] * len(pairs)
        order = sorted(range(len(pairs)), key=lambda i: self._needs_binding(pairs[i][0].type, bind))
        for i in order:
            p, a = pairs[i]
            pt = subst(p.type, bind)
            exp = None if has_typevar(pt) else pt
            if isinstance(a.value, A.DefaultExpr):
                if exp is None:
                    raise self.err(a, f"cannot infer a type for '_' passed to {p.name}")
                if p.direction not in ("out",):
                    if p.direction != "":
                        raise self.err(a, f"'_' can only be passed to an out parameter ({p.name})")
                a.value.type = exp or DONT_CARE
                checked[i] = a.value
                continue
            v = self.expr(a.value, scope, exp)
            if exp is None:
                if isinstance(v.type, IntType) and p.direction in ("out", "inout"):
                    raise self.err(a, f"argument {p.name} needs a width")
                unify(pt, v.type, bind)  # type: ignore[arg-type]
                pt = subst(p.type, bind)
                if not has_typevar(pt):
                    v = self.coerce(v, pt)
            else:
                v = self.coerce(v, exp)
            if p.direction in ("out", "inout"):
                if not self.is_lvalue(v):
                    raise self.err(a, f"argument {p.name} must be something that can be written")
            vt = v.type
            if isinstance(vt, TableType) or (isinstance(vt, (BlockType, ExternType)) and isinstance(p.type, TypeVar)):
                raise self.err(a, f"argument {p.name} cannot have type {vt}")
            if isinstance(pt, DontCareType):
                raise self.err(a, f"could not infer a type for argument {p.name}")
            if isinstance(vt, StringType) and p.direction and has_typevar(p.type):
                raise self.err(a, f"argument {p.name} of type string cannot have a direction")
            checked[i] = v
        for i, (p, a) in enumerate(pairs):
            pt = p.type
            if has_typevar(pt) and contains_int(subst(pt, bind)):
                raise self.err(a, f"could not infer a width for argument {p.name}; give the value a width")
            if has_typevar(subst(pt, bind)) and not isinstance(checked[i], A.DefaultExpr):
                raise self.err(a, f"could not infer the type of argument {p.name}")
        out = [A.Argument(v, p.name if named else None, span=a.span)  # type: ignore[arg-type]
               for (p, a), v in zip(pairs, checked)]
        self.last_params = [p for p, _ in pairs]
        return decl, out, bind

    @staticmethod
    def _needs_binding(t: Optional[P4Type], bind: dict[str, P4Type]) -> int:
        return 1 if t is not None and has_typevar(subst(t, bind)) and not isinstance(t, TypeVar) else 0
