"""Expressions of the C emitter (a mixin of ``cgen.CProgram``)."""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..interp.irutil import st
from .cbase import STOP_FAULT, STOP_PERR, Body, NativeUnsupported, _pure


class ExprMixin:
    """Expressions: each returns a side-effect-free C expression; calls are
    hoisted into statements (temporaries) in evaluation order."""

    def ex(self, e: Any, env: dict, b: Body) -> str:
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise NativeUnsupported(f"expression {type(e).__name__}", e)
        return m(e, env, b)

    def tmp(self, ct: str, val: str, b: Body) -> str:
        t = self.fresh("t")
        b.emit(f"{ct} {t} = {val};")
        return t

    def ex_IntLit(self, e: A.IntLit, env: dict, b: Body) -> str:
        if isinstance(st(e.type), T.IntType):
            if e.value < 0:
                raise NativeUnsupported("negative int literal", e)
            return self.lit(e.value, T.BitsType(128) if e.value >= 1 << 64 else T.BitsType(64))
        return self.lit(e.value, e.type)

    def ex_BoolLit(self, e: A.BoolLit, env: dict, b: Body) -> str:
        return "1" if e.value else "0"

    def ex_EnumMember(self, e: A.EnumMember, env: dict, b: Body) -> str:
        t = st(e.type)
        if e.value is not None:
            return self.lit(e.value, t.underlying if isinstance(t, T.EnumType) and t.underlying is not None else e.type)
        if isinstance(t, T.EnumType):
            return str(t.members.index(e.member))
        raise NativeUnsupported("enum value", e)

    def ex_ErrorMember(self, e: A.ErrorMember, env: dict, b: Body) -> str:
        return str(self.err_code(e.member))

    def ex_PathExpr(self, e: A.PathExpr, env: dict, b: Body) -> str:
        r = e.ref
        v = env.get(id(r))
        if v is None:
            v = self.global_env.get(id(r))
        if v is None and isinstance(r, A.ConstDecl):
            return self.lit(self.const_eval(r.value, env), r.value.type)
        if v is None and isinstance(r, A.Instantiation):
            self.global_instance(r)
            v = self.global_env[id(r)]
        if isinstance(v, str):
            return v
        if isinstance(v, tuple) and v[0] == "const":
            return self.lit(v[1], e.type)
        raise NativeUnsupported(f"cannot resolve {e.name!r}", e)

    def ex_Member(self, e: A.Member, env: dict, b: Body) -> str:
        bt = st(e.expr.type)
        if isinstance(bt, T.ApplyResultType):
            r = self.ex(e.expr, env, b)
            if e.name == "hit":
                return f"(({r} >> 32) & 1)"
            if e.name == "miss":
                return f"(!(({r} >> 32) & 1))"
            if e.name == "action_run":
                return f"({r} & 0xffffffffULL)"
        if isinstance(bt, T.StructLikeType):
            return f"({self.ex(e.expr, env, b)}).f_{e.name}"
        if isinstance(bt, T.StackType):
            x = self.ex(e.expr, env, b)
            if e.name == "lastIndex":
                return f"((({x}).nxt - 1) & 0xffffffffULL)"
            if e.name == "size":
                return f"{bt.size}ULL"
            return self.stack_elem(x, e.name, bt, b, e)
        raise NativeUnsupported(f"member {e.name!r} of {bt}", e)

    def stack_elem(self, x: str, which: str, t: Any, b: Body, node: Any) -> str:
        """``x.next`` (a parser error past the end) or ``x.last`` (a fault when empty)."""
        if which == "next":
            b.emit(f"if (({x}).nxt >= {t.size}) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('StackOutOfBounds')}; {b.ret} }}")
            return f"({x}).h[({x}).nxt]"
        if which == "last":
            b.emit(f"if (({x}).nxt == 0) {{ W->stop |= {STOP_FAULT}; {b.ret} }}")
            return f"({x}).h[({x}).nxt - 1]"
        raise NativeUnsupported(f"stack member {which}", node)

    def ex_Index(self, e: A.Index, env: dict, b: Body) -> str:
        bt = st(e.expr.type)
        if not isinstance(bt, T.StackType) or not isinstance(e.index, A.IntLit) or not 0 <= e.index.value < bt.size:
            raise NativeUnsupported("index other than a constant into a header stack", e)
        return f"({self.ex(e.expr, env, b)}).h[{e.index.value}]"

    def ex_Slice(self, e: A.Slice, env: dict, b: Body) -> str:
        x = self.ex(e.expr, env, b)
        hi = self.const_eval(e.hi, env)
        lo = self.const_eval(e.lo, env)
        w = hi - lo + 1
        sh = f"(({x}) >> {lo})" if lo else f"({x})"
        if w <= 64 and self.w_of(e.expr.type) > 64:
            sh = f"((u64){sh})"
        return self.mask(sh, w)

    def ex_Unary(self, e: A.Unary, env: dict, b: Body) -> str:
        t = st(e.type)
        if isinstance(t, T.IntType):
            return self.lit(self.const_eval(e, env), T.BitsType(64))
        x = self.ex(e.expr, env, b)
        if e.op == "!":
            return f"(!{x})"
        if e.op == "+":
            return x
        if isinstance(t, T.BitsType):
            zero = "(u128)0" if t.width > 64 else "(u64)0"
            if e.op == "-":
                return self.mask(f"{zero} - ({x})", t.width)
            if e.op == "~":
                return self.mask(f"~({x})", t.width)
        raise NativeUnsupported(f"unary {e.op} on {t}", e)

    def ex_seq(self, exprs: list, env: dict, b: Body) -> list[str]:
        texts: list[str] = []
        for x in exprs:
            sb = Body(b.ind)
            sb.ret = b.ret
            t = self.ex(x, env, sb)
            if sb.lines:
                for i, prev in enumerate(texts):
                    if not _pure(prev):
                        texts[i] = self.tmp(self.ctype(exprs[i].type).name if not isinstance(st(exprs[i].type), T.IntType) else "u128", prev, b)
                b.lines.extend(sb.lines)
            texts.append(t)
        return texts

    def ex_Binary(self, e: A.Binary, env: dict, b: Body) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.ex(e.left, env, b)
            sb = b.sub()
            r = self.ex(e.right, env, sb)
            if not sb.lines:
                return f"({a} {op} {r})"
            t = self.tmp("u64", a, b)
            b.emit(f"if ({'' if op == '&&' else '!'}{t}) {{")
            b.lines.extend(sb.lines)
            b.emit(f"    {t} = {r};")
            b.emit("}")
            return t
        if isinstance(st(e.type), T.IntType):
            return self.lit(self.const_eval(e, env), T.BitsType(64))
        lt = st(e.left.type)
        if op in ("<<", ">>"):
            a = self.ex(e.left, env, b)
            sb = Body(b.ind)
            sb.ret = b.ret
            n = self.ex(e.right, env, sb)
            if sb.lines:
                if not _pure(a):
                    a = self.tmp(self.ctype(lt).name, a, b)
                b.lines.extend(sb.lines)
            return self.shift(op, a, n, e)
        a, r = self.ex_seq([e.left, e.right], env, b)
        if op in ("==", "!="):
            if isinstance(lt, (T.StructLikeType, T.StackType)):
                raise NativeUnsupported("comparison of aggregates", e)
            return f"({a} {op} {r})"
        if op in ("<", "<=", ">", ">="):
            if self.signed(lt):
                return f"({self.sval(a, lt)} {op} {self.sval(r, lt)})"
            return f"({a} {op} {r})"
        t = st(e.type)
        if not isinstance(t, T.BitsType):
            raise NativeUnsupported(f"operator {op} on {t}", e)
        w = t.width
        ctn = "u128" if w > 64 else "u64"
        if op == "++":
            rw = self.w_of(e.right.type)
            return f"((({ctn}){a} << {rw}) | ({ctn}){r})"
        if op in ("+", "-", "*"):
            return self.mask(f"({ctn})({a}) {op} ({ctn})({r})", w)
        if op in ("&", "|", "^"):
            return f"({a} {op} {r})"
        if op in ("/", "%"):
            if t.signed:
                raise NativeUnsupported("signed division", e)
            if not _pure(r):
                r = self.tmp(ctn, r, b)
            b.emit(f"if (!{r}) {{ W->stop |= {STOP_FAULT}; {b.ret} }}")
            return f"(({a}) {op} ({r}))"
        if op in ("|+|", "|-|") and t.signed:
            if w > 64:
                raise NativeUnsupported("signed saturating arithmetic above 64 bits", e)
            sop = "+" if op == "|+|" else "-"
            return f"sat_s((__int128){self.sval(a, t)} {sop} (__int128){self.sval(r, t)}, {w})"
        if op in ("|+|", "|-|") and not t.signed:
            if not _pure(a):
                a = self.tmp(ctn, a, b)
            if not _pure(r):
                r = self.tmp(ctn, r, b)
            if op == "|-|":
                return f"({a} > {r} ? {a} - {r} : 0)"
            full = "(~(u128)0)" if w > 64 else "(~(u64)0)"
            m = full if w in (64, 128) else self.mask(full, w)
            return f"(({a} + {r} < {a} || {a} + {r} > {m}) ? {m} : {a} + {r})"
        raise NativeUnsupported(f"operator {op} on {t}", e)

    def shift(self, op: str, a: str, n: str, e: A.Binary) -> str:
        t = st(e.type)
        w = self.w_of(t)
        ctn = "u128" if w > 64 else "u64"
        if op == "<<":
            if n.endswith("ULL") and n[:-3].isdigit():
                k = int(n[:-3])
                return "0" if k >= w else self.mask(f"({ctn}){a} << {k}", w)
            return f"(({n}) >= {w} ? 0 : {self.mask(f'({ctn}){a} << ({n})', w)})"
        if self.signed(t):
            sv = self.sval(a, t)
            return self.mask(f"({ctn})({sv} >> (({n}) >= {w} ? {w - 1} : ({n})))", w)
        return f"(({n}) >= {w} ? 0 : ({a}) >> ({n}))"

    def ex_Cast(self, e: A.Cast, env: dict, b: Body) -> str:
        src, dst = st(e.expr.type), st(e.type)
        if isinstance(src, T.IntType):
            return self.lit(self.const_eval(e.expr, env), dst if not isinstance(dst, T.BoolType) else T.BitsType(1))
        x = self.ex(e.expr, env, b)
        if isinstance(dst, T.NewType):
            dst = st(dst.base)
        if isinstance(src, T.NewType):
            src = st(src.base)
        if isinstance(dst, T.BoolType):
            return f"(({x}) != 0)" if isinstance(src, T.BitsType) else x
        if isinstance(dst, T.EnumType) and dst.underlying is not None:
            dst = dst.underlying
        if isinstance(src, T.EnumType) and src.underlying is not None:
            src = src.underlying
        if isinstance(dst, T.BitsType):
            w = dst.width
            if isinstance(src, T.BoolType):
                return x
            if not isinstance(src, T.BitsType):
                raise NativeUnsupported(f"cast from {src} to {dst}", e)
            ws = src.width
            if src.signed and w > ws:
                x = f"sx128({x}, {ws})" if w > 64 else f"sx64({x}, {ws})"
            if w <= 64 and ws > 64:
                x = f"(u64)({x})"
            elif w > 64 and ws <= 64:
                x = f"(u128)({x})"
            return x if (w >= ws and not src.signed) else self.mask(x, w)
        return x

    def ex_Ternary(self, e: A.Ternary, env: dict, b: Body) -> str:
        c = self.ex(e.cond, env, b)
        s1, s2 = b.sub(), b.sub()
        x = self.ex(e.then, env, s1)
        y = self.ex(e.els, env, s2)
        if not s1.lines and not s2.lines:
            return f"({c} ? {x} : {y})"
        t = self.fresh("mx")
        b.emit(f"{self.ctype(e.type).name} {t};")
        b.emit(f"if ({c}) {{")
        b.lines.extend(s1.lines)
        b.emit(f"    {t} = {x};")
        b.emit("} else {")
        b.lines.extend(s2.lines)
        b.emit(f"    {t} = {y};")
        b.emit("}")
        return t

    def aggregate_value(self, e: Any, pairs: list, env: dict, b: Body) -> str:
        ct = self.ctype(e.type, e)
        t = self.fresh("ag")
        b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
        if ct.kind == "header":
            b.emit(f"{t}._v = 1;")
        names = [n for n, _ in pairs]
        vals = self.ex_seq([x for _, x in pairs], env, b)
        for n, v in zip(names, vals):
            b.emit(f"{t}.f_{n} = {v};")
        return t

    def ex_StructExpr(self, e: A.StructExpr, env: dict, b: Body) -> str:
        return self.aggregate_value(e, list(e.fields), env, b)

    def ex_ListExpr(self, e: A.ListExpr, env: dict, b: Body) -> str:
        t = st(e.type)
        if not isinstance(t, T.StructLikeType):
            raise NativeUnsupported("tuple value", e)
        return self.aggregate_value(e, [(f.name, x) for f, x in zip(t.fields, e.elems)], env, b)

    def ex_InvalidHeaderExpr(self, e: A.InvalidHeaderExpr, env: dict, b: Body) -> str:
        ct = self.ctype(e.type, e)
        t = self.fresh("ih")
        b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
        return t

    def ex_MethodCall(self, e: A.MethodCall, env: dict, b: Body) -> str:
        r = self.call(e, env, b)
        if r is None:
            raise NativeUnsupported("void call used as a value", e)
        return r
