"""Lower the front end's typed IR to Python source, once per program.

Every parser state, control, action, table and function instance becomes a
plain Python function; every header/struct type a class with ``__slots__``.
The per-packet path then runs ordinary Python code: no tree walk, no
dictionary of handlers per node.  ``Lowering.source`` keeps the generated
text so a failure can be read (``p4mcc stf --dump-python``).

This module holds expressions, statements, calls, actions, functions and
block instances; types (``lower_types``), externs (``lower_externs``),
tables (``lower_tables``) and parser states (``lower_parser``) are mixins.

Naming inside the generated code:
  ``E``  frame of the running parser/control instance (a class per instance
         with ``__slots__``, see ``replicas.frame_class``; ``a_<param>`` is the
         same object as ``E.p_<param>`` in an apply function that never rebinds it)
  ``P``  the packet being parsed (``values.PacketIn``)
  ``O``  the deparser output (``values.PacketOut``)
  ``_pk`` per-packet side state (``values.PacketCtx``)
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..frontend import ast as A
from ..frontend import types as T
from ..runtime import bits as B
from ..runtime import externs as X
from ..runtime import hashes as H
from ..runtime.tables import ActionSpec, Table
from . import values as V
from .irutil import FieldList, Fn, UnsupportedError, _Ref, is_aggregate, is_signed, qualify, st, width
from .lower_externs import ExternLowering
from .lower_parser import ParserLowering
from .lower_tables import TableLowering
from .lower_types import TypeLowering
from .replicas import (PLAIN_CONTEXT, context_attrs, frame_class, rebound_params, replica_copy_source,
                       touched_members, written_members)

__all__ = ["Lowering", "UnsupportedError", "FieldList"]

# generated expressions without calls, indexing or operators: a literal, a
# name or a member chain (``E.p_sm.f_egress_port``)
_PURE = re.compile(r"^(?:\d+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")


class Lowering(TypeLowering, ExternLowering, TableLowering, ParserLowering):
    """Generates and loads the Python module for one program."""

    def __init__(self, program: A.Program, seed: int = 0, *, share_code: bool = True) -> None:
        if program.package != "V1Switch" or not program.v1model:
            raise UnsupportedError(f"package {program.package or '?'!r} is not V1Switch")
        self.prog = program
        self.seed = seed
        self.share_code = share_code  # see _compiled
        self.out: list[str] = []
        self.g: dict[str, Any] = {}
        self.classes: dict[int, str] = {}
        self.n = 0
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, X.RegisterArray] = {}
        self.counters: dict[str, X.CounterArray] = {}
        self.meters: dict[str, X.MeterArray] = {}
        self.direct_counters: dict[str, str] = {}  # extern name -> table name
        self.direct_meters: dict[str, str] = {}
        self.digests: dict[str, list[str]] = {}
        self.value_sets: dict[str, set] = {}
        self.action_specs: dict[str, ActionSpec] = {}
        self.field_lists: dict[int, FieldList] = {}
        self.functions: dict[int, str] = {}
        self.global_env: dict[int, str] = {}
        self.global_actions: dict[int, str] = {}
        self.errors = list(program.errors)
        self.meta_type: Any = None
        self.source = ""
        #: whether the generated code reads queue metadata (``QUEUE_READ``)
        self.reads_queue = False
        #: whether egress leaves the packet context alone (set by ``build``)
        self.egress_plain_context = False
        self.egress_sm_written: Optional[set[str]] = None
        self.ctx = V.PacketCtx()
        self.override = {}
        self._setup_globals()

    # ------------------------------------------------------------------ utilities
    def fresh(self, base: str = "t") -> str:
        self.n += 1
        return f"{base}{self.n}"

    def const(self, value: Any, base: str = "K") -> str:
        name = self.fresh(base)
        self.g[name] = value
        return name

    def _setup_globals(self) -> None:
        g = self.g
        g.update(
            _Frame=V.Frame, _Stack=V.Stack, _PErr=V.ParserError, _Exit=V.ExitSignal,
            _Fault=V.P4RuntimeFault, _pk=self.ctx, _s=B.to_signed, _setsl=B.set_slice,
            _sat_add_u=B.sat_add_u, _sat_sub_u=B.sat_sub_u, _sat_add_s=B.sat_add_s,
            _sat_sub_s=B.sat_sub_s, _shl=B.shl, _concat=B.concat_bits, _tobytes=B.bits_to_bytes,
            _hash=self._hash_rt, _csum16_bits=H.csum16_bits,
        )

    # ------------------------------------------------------------------ types -> classes



    # ------------------------------------------------------------------ constants
    def const_eval(self, e: Any, env: dict[int, str]) -> Any:
        """Evaluate a compile-time expression (constructor arguments, table data)."""
        if isinstance(e, A.Argument):
            e = e.value
        if isinstance(e, (A.IntLit, A.BoolLit, A.StringLit)):
            return e.value
        if isinstance(e, A.EnumMember):
            return e.value if e.value is not None else e.member
        if isinstance(e, A.ErrorMember):
            return e.member
        if isinstance(e, A.Cast):
            v = self.const_eval(e.expr, env)
            tt = st(e.type)
            if isinstance(tt, T.BitsType) and isinstance(v, (int, bool)):
                return B.to_signed(int(v), tt.width) if tt.signed else int(v) & ((1 << tt.width) - 1)
            return v
        if isinstance(e, A.PathExpr) and isinstance(e.ref, A.ConstDecl):
            return self.const_eval(e.ref.value, env)
        if isinstance(e, A.PathExpr) and id(e.ref) in env:
            txt = env[id(e.ref)]
            if txt in self.g:
                return self.g[txt]
            try:
                return eval(txt, {})  # literal text of a bound constructor argument
            except Exception:
                pass
        if isinstance(e, A.Unary) and e.op == "-":
            return -self.const_eval(e.expr, env)
        if isinstance(e, A.Binary):
            a, b = self.const_eval(e.left, env), self.const_eval(e.right, env)
            r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b,
                 ">>": lambda: a >> b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b}.get(e.op)
            if r is not None:
                v = r()
                tt = st(e.type)
                if isinstance(tt, T.BitsType):
                    v = B.to_signed(v, tt.width) if tt.signed else v & ((1 << tt.width) - 1)
                return v
        if isinstance(e, (A.ListExpr,)):
            return tuple(self.const_eval(x, env) for x in e.elems)
        raise UnsupportedError(f"expression is not a compile-time constant ({type(e).__name__})", e)

    def lit(self, v: Any) -> str:
        if isinstance(v, (int, bool, str)) or v is None:
            return repr(v)
        return self.const(v)

    # ------------------------------------------------------------------ expressions
    def ex(self, e: Any, env: dict[int, str], fn: Fn) -> str:
        o = self.override.get(id(e))
        if o is not None:
            return o
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise UnsupportedError(f"expression {type(e).__name__} not supported", e)
        return m(e, env, fn)

    def ex_IntLit(self, e: A.IntLit, env: dict, fn: Fn) -> str:
        return repr(e.value)

    def ex_BoolLit(self, e: A.BoolLit, env: dict, fn: Fn) -> str:
        return "True" if e.value else "False"

    def ex_StringLit(self, e: A.StringLit, env: dict, fn: Fn) -> str:
        return repr(e.value)

    def ex_PathExpr(self, e: A.PathExpr, env: dict, fn: Fn) -> str:
        r = e.ref
        if id(r) in env:
            return env[id(r)]
        if id(r) in self.global_env:
            return self.global_env[id(r)]
        if isinstance(r, A.ConstDecl):
            return self.lit(self.const_eval(r.value, env))
        if isinstance(r, A.Instantiation):
            self.global_instance(r)
            return self.global_env[id(r)]
        raise UnsupportedError(f"cannot resolve {e.name!r} ({type(r).__name__})", e)

    def ex_EnumMember(self, e: A.EnumMember, env: dict, fn: Fn) -> str:
        return repr(e.value) if e.value is not None else repr(e.member)

    def ex_ErrorMember(self, e: A.ErrorMember, env: dict, fn: Fn) -> str:
        return repr(e.member)

    def ex_TypeNameExpr(self, e: A.TypeNameExpr, env: dict, fn: Fn) -> str:
        raise UnsupportedError("type name used as a value", e)

    def ex_Member(self, e: A.Member, env: dict, fn: Fn) -> str:
        bt = st(e.expr.type)
        b = self.ex(e.expr, env, fn)
        if isinstance(bt, T.StructLikeType):
            return f"{b}.f_{e.name}"
        if isinstance(bt, T.StackType):
            if e.name == "next":
                return f"{b}.next()"
            if e.name == "last":
                return f"{b}.last()"
            if e.name == "lastIndex":
                return f"(({b}.nxt - 1) & 0xffffffff)"
            if e.name == "size":
                return str(bt.size)
        if isinstance(bt, T.ApplyResultType):
            if e.name == "hit":
                return f"{b}[0]"
            if e.name == "miss":
                return f"(not {b}[0])"
            if e.name == "action_run":
                return f"{b}[1]"
        raise UnsupportedError(f"member {e.name!r} of {bt}", e)

    def ex_Index(self, e: A.Index, env: dict, fn: Fn) -> str:
        b = self.ex(e.expr, env, fn)
        if isinstance(st(e.expr.type), T.TupleType):
            return f"{b}[{self.const_eval(e.index, env)}]"
        if isinstance(e.index, A.IntLit):
            return f"{b}.h[{e.index.value}]"
        # run-time index: out of range reads a blank header, writes go nowhere
        return f"{b}.at({self.ex(e.index, env, fn)})"

    def ex_Slice(self, e: A.Slice, env: dict, fn: Fn) -> str:
        b = self.ex(e.expr, env, fn)
        hi = self.const_eval(e.hi, env)
        lo = self.const_eval(e.lo, env)
        bt = st(e.expr.type)
        m = (1 << (hi - lo + 1)) - 1
        if is_signed(bt) or isinstance(bt, T.IntType):
            b = f"({b} & {(1 << max(width(bt), hi + 1)) - 1})"
        return f"(({b} >> {lo}) & {m})" if lo else f"({b} & {m})"

    def ex_Unary(self, e: A.Unary, env: dict, fn: Fn) -> str:
        x = self.ex(e.expr, env, fn)
        t = st(e.type)
        if e.op == "!":
            return f"(not {x})"
        if e.op == "+":
            return x
        if isinstance(t, T.BitsType):
            w = t.width
            if e.op == "-":
                return f"_s(-{x}, {w})" if t.signed else f"((-{x}) & {(1 << w) - 1})"
            if e.op == "~":
                return f"(~{x})" if t.signed else f"({x} ^ {(1 << w) - 1})"
        if isinstance(t, T.IntType):
            return f"({e.op}{x})"
        raise UnsupportedError(f"unary {e.op} on {t}", e)

    def ex_Binary(self, e: A.Binary, env: dict, fn: Fn) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.ex(e.left, env, fn)
            sub = self._sub(fn)
            b = self.ex(e.right, env, sub)
            if len(sub.lines) == 1:
                return f"({a} {'and' if op == '&&' else 'or'} {b})"
            # the right operand has side effects (calls with out arguments):
            # evaluate it only when the language says so
            t = self.fresh("sc")
            fn.emit(f"{t} = {a}")
            fn.emit(f"if {'' if op == '&&' else 'not '}{t}:")
            fn.lines.extend(sub.lines[1:])
            fn.emit(f"    {t} = {b}")
            return t
        a, b = self.ex_seq([e.left, e.right], env, fn)
        lt = st(e.left.type)
        if op in ("==", "!="):
            if isinstance(lt, (T.StructLikeType, T.StackType)):
                r = f"{a}.eq({b})"
                return r if op == "==" else f"(not {r})"
            if isinstance(lt, T.TupleType) and any(is_aggregate(x) for x in lt.elems):
                raise UnsupportedError("comparison of tuples holding structs", e)
            return f"({a} {op} {b})"
        if op in ("<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        t = st(e.type)
        if isinstance(t, T.IntType) or not isinstance(t, T.BitsType):
            pyop = {"/": "//"}.get(op, op)
            if op in ("|+|", "|-|", "++"):
                raise UnsupportedError(f"{op} on {t}", e)
            return f"({a} {pyop} {b})"
        w = t.width
        M = (1 << w) - 1
        if op == "++":
            rw = width(e.right.type)
            lw = width(e.left.type)
            r = f"((({a} & {(1 << lw) - 1}) << {rw}) | ({b} & {(1 << rw) - 1}))"
            return f"_s({r}, {w})" if t.signed else r
        if not t.signed:
            if op in ("+", "-", "*"):
                return f"(({a} {op} {b}) & {M})"
            if op == "/":
                return f"({a} // {b})"
            if op == "%":
                return f"({a} % {b})"
            if op in ("&", "|", "^"):
                return f"({a} {op} {b})"
            if op == "<<":
                if isinstance(e.right, A.IntLit):
                    return "0" if e.right.value >= w else f"(({a} << {e.right.value}) & {M})"
                if _PURE.match(a) and _PURE.match(b):
                    # names and member reads only: evaluating them twice is harmless
                    return f"((({a} << {b}) & {M}) if {b} < {w} else 0)"
                return f"_shl({a}, {b}, {w})"
            if op == ">>":
                return f"({a} >> {b})"
            if op == "|+|":
                return f"_sat_add_u({a}, {b}, {w})"
            if op == "|-|":
                return f"_sat_sub_u({a}, {b}, {w})"
        else:
            if op in ("+", "-", "*"):
                return f"_s({a} {op} {b}, {w})"
            if op == "/":
                return f"_s(int({a} / {b}), {w})"
            if op == "%":
                return f"_s({a} % {b}, {w})"
            if op in ("&", "|", "^"):
                return f"({a} {op} {b})"
            if op == "<<":
                return f"_s(_shl({a} & {M}, {b}, {w}), {w})"
            if op == ">>":
                return f"({a} >> {b})"
            if op == "|+|":
                return f"_sat_add_s({a}, {b}, {w})"
            if op == "|-|":
                return f"_sat_sub_s({a}, {b}, {w})"
        raise UnsupportedError(f"operator {op} on {t}", e)

    def ex_Cast(self, e: A.Cast, env: dict, fn: Fn) -> str:
        src = st(e.expr.type)
        dst = st(e.type)
        x = self.ex(e.expr, env, fn)
        if isinstance(dst, T.BitsType):
            w = dst.width
            if isinstance(src, T.BoolType):
                return f"int({x})"
            if dst.signed:
                return f"_s({x}, {w})"
            if isinstance(src, T.BitsType) and not src.signed and src.width <= w:
                return x
            return f"({x} & {(1 << w) - 1})"
        if isinstance(dst, T.BoolType):
            if isinstance(src, T.BitsType):
                return f"({x} != 0)"
            return x
        if isinstance(dst, T.EnumType) and dst.underlying is not None:
            return f"({x} & {(1 << dst.underlying.width) - 1})"
        return x

    def ex_Ternary(self, e: A.Ternary, env: dict, fn: Fn) -> str:
        c = self.ex(e.cond, env, fn)
        s1, s2 = self._sub(fn), self._sub(fn)
        a = self.ex(e.then, env, s1)
        b = self.ex(e.els, env, s2)
        if len(s1.lines) == 1 and len(s2.lines) == 1:
            return f"({a} if {c} else {b})"
        t = self.fresh("mx")
        fn.emit(f"if {c}:")
        fn.lines.extend(s1.lines[1:])
        fn.emit(f"    {t} = {a}")
        fn.emit("else:")
        fn.lines.extend(s2.lines[1:])
        fn.emit(f"    {t} = {b}")
        return t

    def ex_seq(self, exprs: list, env: dict, fn: Fn) -> list[str]:
        """Evaluate left to right: when a later operand runs a call with
        side effects, the earlier operands are read into temporaries first."""
        texts: list[str] = []
        for x in exprs:
            sub = Fn("")
            sub.ind = fn.ind
            sub.ret = fn.ret
            t = self.ex(x, env, sub)
            if len(sub.lines) > 1:
                for i, prev in enumerate(texts):
                    if not prev.isidentifier() and not prev.lstrip("-").isdigit():
                        tmp = self.fresh("o")
                        fn.emit(f"{tmp} = {prev}")
                        texts[i] = tmp
                fn.lines.extend(sub.lines[1:])
            texts.append(t)
        return texts

    def _sub(self, fn: Fn) -> Fn:
        """A scratch buffer one level deeper than ``fn`` (for conditional code)."""
        sub = Fn("")
        sub.ind = fn.ind + 1
        sub.ret = fn.ret
        return sub

    def _copy_if_needed(self, e: Any, text: str) -> str:
        if is_aggregate(e.type) and isinstance(e, (A.PathExpr, A.Member, A.Index)):
            return f"{text}.copy()"
        return text

    def ex_ListExpr(self, e: A.ListExpr, env: dict, fn: Fn) -> str:
        t = st(e.type)
        elems = [self._copy_if_needed(x, v) for x, v in zip(e.elems, self.ex_seq(list(e.elems), env, fn))]
        if isinstance(t, T.StructLikeType):
            if isinstance(t, T.HeaderUnionType):
                raise UnsupportedError("list expression for a header union", e)
            return f"{self.cls(t)}.mk({', '.join(elems)})"
        return "(" + "".join(x + ", " for x in elems) + ")"

    def ex_StructExpr(self, e: A.StructExpr, env: dict, fn: Fn) -> str:
        t = st(e.type)
        if not isinstance(t, T.StructLikeType):
            raise UnsupportedError("struct expression of non-struct type", e)
        vals = {n: self._copy_if_needed(x, self.ex(x, env, fn)) for n, x in e.fields}
        args = [vals.get(f.name, self.default(f.type)) for f in t.fields]
        return f"{self.cls(t)}.mk({', '.join(args)})"

    def ex_InvalidHeaderExpr(self, e: A.InvalidHeaderExpr, env: dict, fn: Fn) -> str:
        return self.default(e.type)

    def ex_DefaultExpr(self, e: A.DefaultExpr, env: dict, fn: Fn) -> str:
        return "None"

    def ex_MethodCall(self, e: A.MethodCall, env: dict, fn: Fn) -> str:
        r = self.call(e, env, fn)
        if r is None:
            raise UnsupportedError("void call used as a value", e)
        return r

    # ------------------------------------------------------------------ lvalues
    def lval(self, e: Any, env: dict, fn: Fn) -> str:
        if isinstance(e, A.PathExpr):
            return self.ex_PathExpr(e, env, fn)
        if isinstance(e, A.Member):
            bt = st(e.expr.type)
            if isinstance(bt, T.StructLikeType):
                return f"{self.ex(e.expr, env, fn)}.f_{e.name}"
            if isinstance(bt, T.StackType) and e.name in ("next", "last"):
                b = self.ex(e.expr, env, fn)
                return f"{b}.h[{b}.nxt]" if e.name == "next" else f"{b}.h[{b}.nxt - 1]"
        if isinstance(e, A.Index):
            return self.ex_Index(e, env, fn)
        raise UnsupportedError(f"cannot assign to {type(e).__name__}", e)

    def assign(self, lhs: Any, value: str, env: dict, fn: Fn) -> None:
        if isinstance(lhs, A.DefaultExpr):
            return
        if isinstance(lhs, A.Slice):
            base = lhs.expr
            hi = self.const_eval(lhs.hi, env)
            lo = self.const_eval(lhs.lo, env)
            while isinstance(base, A.Slice):  # x[a:b][c:d] is x[b+c:b+d]
                ilo = self.const_eval(base.lo, env)
                hi, lo = ilo + hi, ilo + lo
                base = base.expr
            b = self.lval(base, env, fn)
            bt = st(base.type)
            if is_signed(bt):
                w = width(bt)
                fn.emit(f"{b} = _s(_setsl({b} & {(1 << w) - 1}, {hi}, {lo}, {value}), {w})")
            else:
                fn.emit(f"{b} = _setsl({b}, {hi}, {lo}, {value})")
            return
        if isinstance(lhs, A.Index) and not isinstance(lhs.index, A.IntLit):
            b = self.ex(lhs.expr, env, fn)
            fn.emit(f"{b}.put({self.ex(lhs.index, env, fn)}, {value})")
            return
        fn.emit(f"{self.lval(lhs, env, fn)} = {value}")

    # ------------------------------------------------------------------ calls
    def call(self, e: A.MethodCall, env: dict, fn: Fn) -> Optional[str]:
        k = e.kind
        if k == "builtin":
            return self.call_builtin(e, env, fn)
        if k == "extern_method":
            return self.call_extern_method(e, env, fn)
        if k == "extern_function":
            return self.call_extern_function(e, env, fn)
        if k == "action":
            name = self.action_fn(e.target, env)
            return self.call_dirs(name, e.target.params, e.args, env, fn, ["E"], None)
        if k == "function":
            name = self.function_fn(e.target)
            return self.call_dirs(name, e.target.params, e.args, env, fn, [], e.target.return_type.resolved)
        if k == "table_apply":
            key = id(e.target)
            if key not in env:
                raise UnsupportedError("table applied outside its control", e)
            return f"{env[key]}(E)"
        if k == "block_apply":
            inst = e.target
            key = id(inst)
            if key not in env:
                raise UnsupportedError("sub-block not instantiated here", e)
            decl = inst.decl if isinstance(inst, A.Instantiation) else getattr(st(inst.type), "decl", None)
            if decl is None:
                raise UnsupportedError("cannot resolve the applied block", e)
            # aggregates go by reference into sub-parsers/controls (as p4c's
            # inlining has it), so a parser error inside keeps what was extracted
            return self.call_dirs(env[key], decl.params, e.args, env, fn, [], None, by_ref=True)
        raise UnsupportedError(f"call kind {k!r}", e)

    def call_dirs(self, name: str, params: list, args: list, env: dict, fn: Fn,
                  lead: list[str], ret_type: Any, by_ref: bool = False,
                  tail: Optional[list[str]] = None) -> Optional[str]:
        """Emit a call with copy-in/copy-out argument passing (``lead`` and
        ``tail`` are argument texts passed as they are before and after)."""
        texts = list(lead)
        outs: list[Any] = []
        for p, a in zip(params, args):
            v = a.value
            d = p.direction
            pt = st(p.type)
            if isinstance(pt, T.ExternType):
                texts.append(self.ex(v, env, fn))
                continue
            if d == "out" and not (by_ref and is_aggregate(v.type)):
                texts.append(self.default(p.type if not isinstance(pt, T.TypeVar) else v.type))
                outs.append(v)
            elif d == "inout":
                if by_ref and is_aggregate(v.type):
                    texts.append(self.ex(v, env, fn))
                else:
                    texts.append(self._copy_if_needed(v, self.ex(v, env, fn)))
                outs.append(v)
            elif d == "out" and by_ref and is_aggregate(v.type):
                texts.append(self.ex(v, env, fn))
                outs.append(v)
            else:
                texts.append(self._copy_if_needed(v, self.ex(v, env, fn)))
        texts.extend(tail or [])
        call = f"{name}({', '.join(texts)})"
        has_ret = ret_type is not None and not isinstance(st(ret_type), T.VoidType)
        if not outs:
            if has_ret:
                return call
            fn.emit(call)
            return None
        tmp = self.fresh("r")
        off = 1 if has_ret else 0
        if not has_ret:
            # an action or control left by ``exit`` still copies out
            fn.emit("try:")
            fn.emit(f"    {tmp} = {call}")
            fn.emit("except _Exit as _x:")
            fn.ind += 1
            fn.emit(f"{tmp} = _x.outs")
            for i, v in enumerate(outs):
                self.assign(v, f"{tmp}[{i + off}]", env, fn)
            fn.emit("raise")
            fn.ind -= 1
        else:
            fn.emit(f"{tmp} = {call}")
        for i, v in enumerate(outs):
            self.assign(v, f"{tmp}[{i + off}]", env, fn)
        return f"{tmp}[0]" if has_ret else None

    def call_builtin(self, e: A.MethodCall, env: dict, fn: Fn) -> Optional[str]:
        name = e.target
        obj = e.func.expr if isinstance(e.func, A.Member) else None
        ot = st(obj.type) if obj is not None else None
        if name == "isValid":
            o = self.ex(obj, env, fn)
            return f"{o}.valid()" if isinstance(ot, T.HeaderUnionType) else f"{o}._v"
        if name == "setValid":
            # BMv2 zeroes the fields of a header that becomes valid
            tmp = self.fresh("h")
            fn.emit(f"{tmp} = {self.ex(obj, env, fn)}")
            fn.emit(f"if not {tmp}._v: {tmp}.reset()")
            self._invalidate_siblings(obj, env, fn)
            return None
        if name == "setInvalid":
            o = self.ex(obj, env, fn)
            fn.emit(f"{o}._v = False")
            return None
        if name in ("push_front", "pop_front"):
            o = self.ex(obj, env, fn)
            n = self.ex(e.args[0].value, env, fn)
            fn.emit(f"{o}.{name}({n})")
            return None
        if name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
            w = width(ot)
            return str(w if "Bits" in name else (w + 7) // 8)
        raise UnsupportedError(f"builtin {name!r}", e)

    def _invalidate_siblings(self, hdr_expr: Any, env: dict, fn: Fn) -> None:
        if isinstance(hdr_expr, A.Member) and isinstance(st(hdr_expr.expr.type), T.HeaderUnionType):
            u = self.ex(hdr_expr.expr, env, fn)
            for f in st(hdr_expr.expr.type).fields:
                if f.name != hdr_expr.name:
                    fn.emit(f"{u}.f_{f.name}._v = False")

    # -- extern objects









    cur_roles: dict[int, int] = {}
    override: dict[int, str] = {}

    def _pin_compound_indices(self, lhs: Any, rhs: Any, env: dict, fn: Fn) -> None:
        """``a[f()] op= v`` arrives as ``a[f()] = a[f()] op v``: evaluate each
        run-time stack index once, as the language requires."""
        if not isinstance(rhs, A.Binary):
            return
        pairs: list[tuple[Any, Any]] = []

        def walk(x: Any, y: Any) -> bool:
            if type(x) is not type(y):
                return False
            if isinstance(x, A.Member):
                return x.name == y.name and walk(x.expr, y.expr)
            if isinstance(x, A.Index):
                if walk(x.expr, y.expr):
                    if not isinstance(x.index, A.IntLit):
                        pairs.append((x.index, y.index))
                    return True
                return False
            if isinstance(x, A.Slice):
                return walk(x.expr, y.expr)
            if isinstance(x, A.PathExpr):
                return x.ref is y.ref
            return False

        if walk(lhs, rhs.left):
            for a, b in pairs:
                t = self.fresh("ix")
                fn.emit(f"{t} = {self.ex(a, env, fn)}")
                self.override[id(a)] = t
                self.override[id(b)] = t

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Any, env: dict, fn: Fn) -> None:
        if isinstance(s, A.AssignStmt):
            self._pin_compound_indices(s.lhs, s.rhs, env, fn)
            sub = Fn("")
            sub.ind = fn.ind
            sub.ret = fn.ret
            v = self._copy_if_needed(s.rhs, self.ex(s.rhs, env, sub))
            if len(sub.lines) > 1:
                # the right side runs calls: the left side's indices are read first
                x = s.lhs
                while isinstance(x, (A.Member, A.Index, A.Slice)):
                    if isinstance(x, A.Index) and not isinstance(x.index, A.IntLit) and id(x.index) not in self.override:
                        t = self.fresh("ix")
                        fn.emit(f"{t} = {self.ex(x.index, env, fn)}")
                        self.override[id(x.index)] = t
                    x = x.expr
                fn.lines.extend(sub.lines[1:])
            self.assign(s.lhs, v, env, fn)
        elif isinstance(s, A.CallStmt):
            r = self.call(s.call, env, fn)
            if r is not None:
                fn.emit(r)
        elif isinstance(s, A.BlockStmt):
            inner = dict(env)
            for x in s.stmts:
                self.stmt(x, inner, fn)
        elif isinstance(s, A.IfStmt):
            c = self.ex(s.cond, env, fn)
            fn.emit(f"if {c}:")
            self.block(s.then, env, fn)
            if s.els is not None:
                fn.emit("else:")
                self.block(s.els, env, fn)
        elif isinstance(s, A.SwitchStmt):
            self.switch(s, env, fn)
        elif isinstance(s, A.ExitStmt):
            fn.emit("raise _Exit()")
        elif type(s).__name__ == "ForStmt":
            inner = dict(env)
            for x in s.init:
                self.stmt(x, inner, fn)
            first = self.fresh("first")
            guard = self.fresh("it")
            fn.emit(f"{first} = True; {guard} = 0")
            fn.emit("while True:")
            fn.ind += 1
            fn.emit(f"{guard} += 1")
            fn.emit(f"if {guard} > 1000000: raise _Fault('loop ran for more than 10**6 iterations')")
            fn.emit(f"if not {first}:")
            fn.ind += 1
            fn.emit("pass")
            for x in s.updates:
                self.stmt(x, inner, fn)
            fn.ind -= 1
            fn.emit(f"{first} = False")
            if s.cond is not None:
                fn.emit(f"if not {self.ex(s.cond, inner, fn)}: break")
            fn.emit("pass")
            self.stmt(s.body, dict(inner), fn)
            fn.ind -= 1
        elif type(s).__name__ == "ForInStmt":
            inner = dict(env)
            var = self.fresh("v")
            inner[id(s.var)] = var
            c = s.collection
            if isinstance(c, A.Range):
                it = f"range({self.ex(c.lo, env, fn)}, ({self.ex(c.hi, env, fn)}) + 1)"
            elif isinstance(st(c.type), T.StackType):
                it = f"[x.copy() for x in {self.ex(c, env, fn)}.h]"
            else:
                it = self.ex(c, env, fn)
            fn.emit(f"for {var} in {it}:")
            fn.ind += 1
            fn.emit("pass")
            self.stmt(s.body, inner, fn)
            fn.ind -= 1
        elif type(s).__name__ == "BreakStmt":
            fn.emit("break")
        elif type(s).__name__ == "ContinueStmt":
            fn.emit("continue")
        elif isinstance(s, A.ReturnStmt):
            if s.value is not None:
                v = self._copy_if_needed(s.value, self.ex(s.value, env, fn))
                fn.emit(fn.ret.replace("@", v))
            else:
                fn.emit(fn.ret)
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, A.DeclStmt):
            d = s.decl
            if isinstance(d, A.ConstDecl):
                env[id(d)] = self.lit(self.const_eval(d.value, env))
            else:
                name = self.fresh("v")
                init = self._copy_if_needed(d.init, self.ex(d.init, env, fn)) if d.init is not None else self.default(d.typeref.resolved)
                fn.emit(f"{name} = {init}")
                env[id(d)] = name
        else:
            raise UnsupportedError(f"statement {type(s).__name__}", s)

    def block(self, s: Any, env: dict, fn: Fn) -> None:
        fn.ind += 1
        fn.emit("pass")
        self.stmt(s, dict(env), fn)
        fn.ind -= 1

    def switch(self, s: A.SwitchStmt, env: dict, fn: Fn) -> None:
        v = self.fresh("sw")
        fn.emit(f"{v} = {self.ex(s.expr, env, fn)}")
        pending: list[str] = []
        first = True
        default_body = None
        for c in s.cases:
            lab = c.label
            if isinstance(lab, A.DefaultExpr):
                if c.body is not None:
                    default_body = (pending, c.body)
                    pending = []
                continue
            if isinstance(lab, A.PathExpr) and isinstance(lab.ref, A.ActionDecl):
                name = self.action_name(lab.ref, env)
                pending.append(repr(name))
            else:
                pending.append(self.ex(lab, env, fn))
            if c.body is None:
                continue
            cond = " or ".join(f"{v} == {p}" for p in pending)
            fn.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            self.block(c.body, env, fn)
            pending = []
        if default_body is not None:
            if first:
                fn.emit("if True:")
            else:
                fn.emit("else:")
            self.block(default_body[1], env, fn)

    # ------------------------------------------------------------------ actions, functions
    def action_name(self, decl: A.ActionDecl, env: dict) -> str:
        names = env.get("__actions__")  # type: ignore[call-overload]
        if names is not None and id(decl) in names:
            return names[id(decl)]
        if id(decl) in self.global_actions:
            return self.global_actions[id(decl)]
        return qualify("", decl)

    def action_fn(self, decl: A.ActionDecl, env: dict) -> str:
        key = id(decl)
        if key in env:
            return env[key]
        if key in self.global_env:
            return self.global_env[key]
        # top-level action: generated once, with the global environment
        name = self.fresh("act_" + decl.name + "_")
        self.global_env[key] = name
        self.global_actions[key] = qualify("", decl)
        self.gen_action(decl, name, dict(self.global_env))
        return name

    def gen_action(self, decl: A.ActionDecl, name: str, env: dict) -> None:
        env = dict(env)
        pnames = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            pnames.append(n)
            env[id(p)] = n
        fn = Fn(f"def {name}(E{''.join(', ' + n for n in pnames)}):")
        outs = [n for p, n in zip(decl.params, pnames) if p.direction in ("out", "inout")]
        fn.ret = f"return ({''.join(o + ', ' for o in outs)})" if outs else "return"
        fn.emit("pass")
        self.body_with_exit(decl.body.stmts, env, fn, outs)
        self.out.append(fn.text())

    def body_with_exit(self, stmts: list, env: dict, fn: Fn, outs: list[str]) -> None:
        """Statements of an action/control; with out parameters, ``exit`` records them."""
        if not outs:
            for s in stmts:
                self.stmt(s, env, fn)
            return
        fn.emit("try:")
        fn.ind += 1
        fn.emit("pass")
        for s in stmts:
            self.stmt(s, env, fn)
        fn.ind -= 1
        fn.emit("except _Exit as _x:")
        fn.emit(f"    _x.outs = ({''.join(o + ', ' for o in outs)})")
        fn.emit("    raise")
        fn.emit(fn.ret)

    def function_fn(self, decl: A.FunctionDecl) -> str:
        key = id(decl)
        if key in self.functions:
            return self.functions[key]
        name = self.fresh("fn_" + decl.name + "_")
        self.functions[key] = name
        env = dict(self.global_env)
        pnames = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            pnames.append(n)
            env[id(p)] = n
        fn = Fn(f"def {name}({', '.join(pnames)}):")
        outs = [n for p, n in zip(decl.params, pnames) if p.direction in ("out", "inout")]
        has_ret = not isinstance(st(decl.return_type.resolved), T.VoidType)
        if outs:
            fn.ret = f"return (@, {''.join(o + ', ' for o in outs)})" if has_ret else f"return ({''.join(o + ', ' for o in outs)})"
        else:
            fn.ret = "return @" if has_ret else "return"
        fn.emit("pass")
        for s in decl.body.stmts:
            self.stmt(s, env, fn)
        if outs and not has_ret:
            fn.emit(fn.ret)
        self.out.append(fn.text())
        return name

    # ------------------------------------------------------------------ extern instances


    # ------------------------------------------------------------------ blocks
    def instantiate(self, decl: Any, prefix: str, ctor_args: list, outer_env: dict) -> str:
        """Generate the functions of one parser/control instance; returns its apply function name."""
        env: dict[Any, Any] = dict(self.global_env)
        actions: dict[int, str] = {}
        env["__actions__"] = actions
        first_out = len(self.out)
        for p, a in zip(decl.ctor_params, ctor_args):
            av = a.value if isinstance(a, A.Argument) else a
            if isinstance(av, A.PathExpr) and isinstance(av.ref, A.Instantiation) and id(av.ref) in outer_env:
                env[id(p)] = outer_env[id(av.ref)]  # a parser/control instance passed in
                continue
            env[id(p)] = self.lit(self.const_eval(a, outer_env))
        for p in decl.ctor_params[len(ctor_args):]:
            if p.default is not None:
                env[id(p)] = self.lit(self.const_eval(p.default, env))
        tag = "".join(c if c.isalnum() else "_" for c in prefix)
        for p in decl.params:
            pt = st(p.type)
            if isinstance(pt, T.ExternType) and pt.name in ("packet_in", "packet_out"):
                env[id(p)] = "P" if pt.name == "packet_in" else "O"
            else:
                env[id(p)] = f"E.p_{p.name}"
        init = Fn("")  # local initialisation lines, run at apply start
        init.ind = 1
        # first pass: names
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                env[id(d)] = self.fresh(f"act_{tag}_{d.name}_")
                actions[id(d)] = qualify(prefix, d)
            elif isinstance(d, A.TableDecl):
                env[id(d)] = self.fresh(f"tbl_{tag}_{d.name}_")
            elif isinstance(d, A.ConstDecl):
                env[id(d)] = self.lit(self.const_eval(d.value, env))
            elif isinstance(d, A.VarDecl):
                env[id(d)] = f"E.l{self.fresh('')}_{d.name}"
            elif isinstance(d, A.Instantiation):
                t = st(d.typeref.resolved)
                if isinstance(t, T.ExternType):
                    env[id(d)] = self.extern_instance(d, qualify(prefix, d), env)
                else:
                    sub = d.decl
                    if not isinstance(sub, (A.ControlDecl, A.ParserDecl)):
                        raise UnsupportedError(f"instance of {type(sub).__name__}", d)
                    env[id(d)] = self.instantiate(sub, qualify(prefix, d), list(d.args), env)
            elif isinstance(d, A.ValueSetDecl):
                vs: set = set()
                self.value_sets[qualify(prefix, d)] = vs
                env[id(d)] = self.const(vs, "VS")
        # second pass: bodies
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.gen_action(d, env[id(d)], env)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.gen_table(d, env[id(d)], qualify(prefix, d), env)
        for d in decl.locals:
            if isinstance(d, A.VarDecl):
                v = self.ex(d.init, env, init) if d.init is not None else self.default(d.typeref.resolved)
                init.emit(f"{env[id(d)]} = {v}")
        fname = self.fresh(("prs_" if isinstance(decl, A.ParserDecl) else "ctl_") + tag + "_")
        def is_packet(p: Any) -> bool:
            pt = st(p.type)
            return isinstance(pt, T.ExternType) and pt.name in ("packet_in", "packet_out")

        args = [env[id(p)] if is_packet(p) else f"a_{p.name}" for p in decl.params]
        fn = Fn(f"def {fname}({', '.join(args)}):")
        frame = self.fresh("F_" + tag + "_")
        fn.emit(f"E = {frame}()")
        if isinstance(decl, A.ParserDecl) and "P" not in args:
            fn.emit("P = None  # a parser without packet_in")
        for p in decl.params:
            if not is_packet(p):
                fn.emit(f"E.p_{p.name} = a_{p.name}")
        fn.lines.extend(init.lines[1:])
        outs = [f"E.p_{p.name}" for p in decl.params if p.direction in ("out", "inout") and not isinstance(st(p.type), T.ExternType)]
        fn.ret = f"return ({''.join(o + ', ' for o in outs)})" if outs else "return"
        if isinstance(decl, A.ParserDecl):
            start = self.gen_states(decl, tag, env)
            fn.emit(f"st = {start}")
            fn.emit("while st is not None:")
            fn.emit("    st = st(E, P)")
            if outs:
                fn.emit(fn.ret)
        else:
            self.body_with_exit(decl.body.stmts, env, fn, outs)
        text = fn.text()
        inst_text = "\n".join(self.out[first_out:]) + "\n" + text
        # A parameter the instance never rebinds is the very object passed
        # in: the apply function reads it from its argument, not the frame.
        rebinds = rebound_params(inst_text)
        text = _alias_params(text, [p.name for p in decl.params if not is_packet(p) and p.name not in rebinds])
        text = _drop_unused_frame(text, frame)
        self.out.append(frame_class(frame, inst_text))
        self.out.append(text)
        return fname




    # ------------------------------------------------------------------ tables



    # ------------------------------------------------------------------ whole program
    def build(self) -> dict[str, Any]:
        prog = self.prog
        roles = prog.v1model
        parser_decl = roles["parser"].decl
        # metadata type (for @field_list) is the parser's third parameter
        if len(parser_decl.params) >= 4:
            self.meta_type = st(parser_decl.params[2].type)
        fnames = {}
        spans: dict[str, tuple[int, int]] = {}
        for role in ("parser", "verify", "ingress", "egress", "compute", "deparser"):
            blk = roles[role]
            decl = blk.decl
            start = len(self.out)
            # top-level parameter roles for field lists (hdr 0, meta 1, sm 2)
            self.cur_roles = {}
            for i, p in enumerate([p for p in decl.params if not isinstance(st(p.type), T.ExternType)]):
                self.cur_roles[id(p)] = i
            fnames[role] = self.instantiate(decl, qualify("", decl), list(blk.args), {})
            spans[role] = (start, len(self.out))
        p = parser_decl.params
        if len(p) < 4:
            raise UnsupportedError("v1model parser needs (packet_in, out H, inout M, inout standard_metadata_t)", parser_decl)
        mk = {"H": self.default(p[1].type), "M": self.default(p[2].type), "SM": self.default(p[3].type)}
        for k, v in mk.items():
            self.out.append(f"def new_{k}():\n    return {v}\n")
        for i, k in enumerate(("H", "M")):
            self.out.append(self._replica_copy(f"rep_copy_{k}", p[1 + i].type, i, roles, spans))
        self.out.append(self._same_output(p[1].type, p[2].type, roles, spans))
        source = "\n".join(self.out)
        a, b = spans["egress"]
        egress_text = "\n".join(self.out[a:b])
        #: egress (with what it calls) reads no per-replica packet context and
        #: requests no clone, recirculation, truncation or digest, so the
        #: switch may run a packet's replicas one after another at once
        self.egress_plain_context = context_attrs(egress_text, source) <= PLAIN_CONTEXT
        eparams = [q for q in roles["egress"].decl.params if not isinstance(st(q.type), T.ExternType)]
        #: standard metadata members egress may assign (None: it escapes as
        #: a whole), so replicas can share one struct and restore just those
        self.egress_sm_written = written_members(egress_text, eparams[2].name) if len(eparams) > 2 else None
        if self.share_code:
            self.source, code, self.reads_queue = _compiled(source)
        else:
            self.source, code, self.reads_queue = _compile(source)
        exec(code, self.g)
        for t in self.tables.values():
            for a in t.actions.values():
                if isinstance(a.fn, _Ref):
                    a.fn = a.fn.resolve()
            if isinstance(t.initial_default.fn, _Ref):
                t.initial_default.fn = t.initial_default.fn.resolve()
            t.default = t.initial_default
            for e in t.entries.values():
                e.fn = t.actions[e.action].fn
        out = {role: self.g[n] for role, n in fnames.items()}
        out.update(new_H=self.g["new_H"], new_M=self.g["new_M"], new_SM=self.g["new_SM"],
                   rep_copy_H=self.g["rep_copy_H"], rep_copy_M=self.g["rep_copy_M"],
                   same_output=self.g.get("same_output"))
        return out

    def _touched(self, index: int, roles: dict, spans: dict, which: tuple[str, ...]) -> Optional[set[str]]:
        """Members of the struct at parameter ``index`` that the ``which``
        blocks' generated code names (None: the struct escapes as a whole)."""
        touched: set[str] = set()
        for role in which:
            params = [q for q in roles[role].decl.params if not isinstance(st(q.type), T.ExternType)]
            if index >= len(params):
                continue
            a, b = spans[role]
            found = touched_members("\n".join(self.out[a:b]), params[index].name)
            if found is None:
                return None
            touched |= found
        return touched

    def _same_output(self, ht: Any, mt: Any, roles: dict, spans: dict) -> str:
        """``same_output(h, m, h0, m0)``: whether a multicast replica's headers
        and metadata after egress give the same computeChecksum + deparser
        output as the replica's pre-egress state ``h0, m0`` (copies made with
        rep_copy_H/M before any replica ran).  Only the members egress or
        computeChecksum can change are compared (the rest are shared with
        ``h0``); of the metadata, those computeChecksum reads.  Not defined
        (no de-duplication) when computeChecksum or the deparser touch
        extern state, the packet context or tables: then their output is not
        a function of headers and metadata alone."""
        ht, mt = st(ht), st(mt)
        impure = re.compile(r"\b(?:X_\w+|_pk|T\d+|_hash)\b")
        for role in ("compute", "deparser"):
            a, b = spans[role]
            if impure.search("\n".join(self.out[a:b])):
                return ""
        if not all(isinstance(t, T.StructType) and not isinstance(t, (T.HeaderType, T.HeaderUnionType))
                   for t in (ht, mt)):
            return ""
        th = self._touched(0, roles, spans, ("egress", "compute"))
        tm = self._touched(1, roles, spans, ("compute",))
        conds: list[str] = []
        for t, touched, a, b in ((ht, th, "h", "h0"), (mt, tm, "m", "m0")):
            for f in getattr(t, "fields", ()):
                if touched is not None and f.name not in touched:
                    continue
                if is_aggregate(f.type):
                    conds.append(f"{a}.f_{f.name}.eq({b}.f_{f.name})")
                else:
                    conds.append(f"{a}.f_{f.name} == {b}.f_{f.name}")
                    if isinstance(st(f.type), T.VarbitType):
                        conds.append(f"{a}.w_{f.name} == {b}.w_{f.name}")
        return "def same_output(h, m, h0, m0):\n    return " + (" and ".join(conds) or "True") + "\n"

    def _replica_copy(self, fname: str, t: Any, index: int, roles: dict, spans: dict) -> str:
        """The copy function multicast replicas use for the struct at
        parameter position ``index`` (0 headers, 1 metadata); see ``replicas``."""
        t = st(t)
        touched: Optional[set[str]] = None
        if isinstance(t, T.StructType) and not isinstance(t, (T.HeaderType, T.HeaderUnionType)):
            touched = self._touched(index, roles, spans, ("egress", "compute"))
        members = [(f.name, is_aggregate(f.type), isinstance(st(f.type), T.VarbitType))
                   for f in getattr(t, "fields", ())]
        shared = False
        if touched is not None and self.share_code:  # fast path: a struct no egress side changes is not copied
            written: Optional[set[str]] = set()
            for role in ("egress", "compute"):
                params = [q for q in roles[role].decl.params if not isinstance(st(q.type), T.ExternType)]
                if index < len(params):
                    a, b = spans[role]
                    w = written_members("\n".join(self.out[a:b]), params[index].name)
                    if w is None:
                        written = None
                        break
                    written |= w
            shared = written == set() and not any(agg and name in touched for name, agg, _ in members)
        return replica_copy_source(fname, self.cls(t) if touched is not None else "", members, touched, shared)

    def new_value(self, t: Any) -> Any:
        return eval(self.default(t), self.g)


#: a read of queue metadata in generated code: ``<name>.f_<field>`` other
#: than the standard_metadata class's own ``self.``/``n.``/``o.`` accessors
QUEUE_READ = re.compile(r"\b(?!(?:self|n|o)\.)\w+\.f_(?:enq_timestamp|enq_qdepth|deq_timedelta|deq_qdepth"
                        r"|egress_global_timestamp)\b")

#: generated source -> (the same text, its code object, whether it reads queue
#: metadata).  Lowering is deterministic, so every switch built from one
#: program (a simulation's hundreds of nodes) gets the same text: it is
#: compiled and searched once (searching 4,000 lines again for each of 5,461
#: nodes took 14 s of set-up CPU) and the nodes share the code objects and
#: the text; each still execs them into its own globals (its own tables,
#: registers and packet context).
_CODE_CACHE: dict[str, tuple[str, Any, bool]] = {}
_CODE_CACHE_MAX = 8


def _compile(source: str) -> tuple[str, Any, bool]:
    return source, compile(source, "<p4switch-generated>", "exec"), QUEUE_READ.search(source) is not None


def _compiled(source: str) -> tuple[str, Any, bool]:
    hit = _CODE_CACHE.get(source)
    if hit is None:
        if len(_CODE_CACHE) >= _CODE_CACHE_MAX:
            _CODE_CACHE.pop(next(iter(_CODE_CACHE)))
        hit = _CODE_CACHE[source] = _compile(source)
    return hit


_BINDING = re.compile(r"^(\s*)a_(\w+) = a_\2$", re.M)
_FRAME_BINDING = re.compile(r"^\s*E\.p_(\w+) = a_\1$")
_FRAME_USE = re.compile(r"\bE\b")


def _drop_unused_frame(text: str, frame: str) -> str:
    """``text`` (an apply function) without its frame when nothing uses it.

    Once parameters are read from the arguments (``_alias_params``), an
    apply function whose body names no action, table, local or parser
    state (mcc.p4's egress, checksum and deparser controls) builds the
    frame and binds its parameters only to drop them: half a million
    frames every 2 simulated seconds with 10^4 receivers.  The frame is a
    fresh object that only ``E`` refers to, so leaving it out changes
    nothing else; any other ``E`` in the text (also in a string) keeps it.
    """
    lines = text.split("\n")
    create = f"E = {frame}()"
    keep = [ln for ln in lines if ln.strip() != create and not _FRAME_BINDING.match(ln)]
    if (len(keep) == len(lines) or any(_FRAME_USE.search(ln) for ln in keep)
            or not any(ln.strip() for ln in keep[1:])):  # a body must stay
        return text
    return "\n".join(keep)


def _alias_params(text: str, names: list[str]) -> str:
    """``text`` (an apply function) with ``E.p_<name>`` read from its
    argument ``a_<name>`` for each of ``names``; the binding lines
    ``E.p_<name> = a_<name>`` stay, for the actions and tables that reach
    the parameters through the frame."""
    if not names:
        return text
    use = re.compile(r"\bE\.p_(" + "|".join(re.escape(n) for n in names) + r")\b")
    return _BINDING.sub(r"\1E.p_\2 = a_\2", use.sub(r"a_\1", text))
