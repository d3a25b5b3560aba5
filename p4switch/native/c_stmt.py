"""Statements, assignments and calls of the C emitter (a mixin of ``cgen.CProgram``)."""

from __future__ import annotations

from typing import Any, Optional

from ..frontend import ast as A
from ..frontend import types as T
from ..interp.irutil import qualify, st
from .cbase import STOP_EXIT, Body, NativeUnsupported


class StmtMixin:
    """Statements, assignments and calls with the language's copy-in/copy-out."""

    def lval(self, e: Any, env: dict, b: Body) -> str:
        if isinstance(e, A.PathExpr):
            v = self.ex_PathExpr(e, env, b)
            return v
        if isinstance(e, A.Member):
            bt = st(e.expr.type)
            if isinstance(bt, T.StructLikeType):
                return f"({self.lval(e.expr, env, b)}).f_{e.name}"
            if isinstance(bt, T.StackType) and e.name in ("next", "last"):
                return self.stack_elem(self.lval(e.expr, env, b), e.name, bt, b, e)
        if isinstance(e, A.Index):
            return self.ex_Index(e, env, b)
        raise NativeUnsupported(f"cannot assign to {type(e).__name__}", e)

    def assign(self, lhs: Any, value: str, env: dict, b: Body) -> None:
        if isinstance(lhs, A.DefaultExpr):
            return
        if isinstance(lhs, A.Slice):
            hi = self.const_eval(lhs.hi, env)
            lo = self.const_eval(lhs.lo, env)
            base = lhs.expr
            while isinstance(base, A.Slice):
                ilo = self.const_eval(base.lo, env)
                hi, lo = ilo + hi, ilo + lo
                base = base.expr
            x = self.lval(base, env, b)
            w = self.w_of(base.type)
            ctn = "u128" if w > 64 else "u64"
            sw = hi - lo + 1
            m = f"(({ctn})M128({sw}) << {lo})" if ctn == "u128" else f"((u64){hex((1 << sw) - 1)}ULL << {lo})"
            b.emit(f"{x} = ({x} & ~{m}) | ((({ctn})({value}) << {lo}) & {m});")
            return
        b.emit(f"{self.lval(lhs, env, b)} = {value};")

    def stop_check(self, b: Body) -> None:
        b.emit(f"if (W->stop) {b.ret}")

    def call(self, e: A.MethodCall, env: dict, b: Body) -> Optional[str]:
        k = e.kind
        if k == "builtin":
            return self.call_builtin(e, env, b)
        if k == "extern_method":
            return self.call_extern_method(e, env, b)
        if k == "extern_function":
            return self.call_extern_function(e, env, b)
        if k == "action":
            v = env.get(id(e.target)) or self.global_env.get(id(e.target))
            if v is None:
                v = self.global_action(e.target)
            return self.call_dirs(v[1], e.target.params, e.args, env, b, ["W", "E" if v[2] else "0"], None)
        if k == "function":
            name = self.function_fn(e.target)
            return self.call_dirs(name, e.target.params, e.args, env, b, ["W"], e.target.return_type.resolved)
        if k == "table_apply":
            v = env.get(id(e.target))
            if v is None:
                raise NativeUnsupported("table applied outside its control", e)
            r = self.tmp("u64", f"{v[1]}(W, E)", b)
            self.stop_check(b)
            return r
        if k == "block_apply":
            v = env.get(id(e.target))
            if v is None:
                raise NativeUnsupported("sub-block not instantiated here", e)
            _, fname, frame, decl = v
            return self.call_block(fname, frame, decl, e.args, env, b)
        raise NativeUnsupported(f"call kind {k!r}", e)

    def call_block(self, fname: str, frame: str, decl: Any, args: list, env: dict, b: Body) -> None:
        f = self.fresh("f")
        b.emit(f"{frame} {f};")
        outs: list[tuple[Any, str]] = []
        for p, a in zip(decl.params, args):
            v = a.value
            pt = st(p.type)
            if isinstance(pt, T.ExternType):
                continue
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                if ct.kind in ("header", "struct"):
                    lv = self.lval(v, env, b)  # by reference, as the interpreter passes it
                    b.emit(f"{f}.p_{p.name} = &{lv};")
                else:
                    t = self.fresh("io")
                    init = self.ex(v, env, b) if p.direction == "inout" else "0"
                    b.emit(f"{ct.name} {t} = {init};")
                    b.emit(f"{f}.p_{p.name} = &{t};")
                    outs.append((v, t))
            else:
                b.emit(f"{f}.p_{p.name} = {self.ex(v, env, b)};")
        b.emit(f"{fname}(W, &{f});")
        for v, t in outs:
            self.assign(v, t, env, b)
        self.stop_check(b)
        return None

    def call_dirs(self, name: str, params: list, args: list, env: dict, b: Body,
                  lead: list[str], ret_type: Any, tail: Optional[list[str]] = None) -> Optional[str]:
        texts = list(lead)
        outs: list[tuple[Any, str]] = []
        vals: list[tuple[Any, Any]] = []
        for p, a in zip(params, args):
            if isinstance(st(p.type), T.ExternType):
                raise NativeUnsupported("extern argument", p)
            vals.append((p, a.value))
        evald = self.ex_seq([v for p, v in vals if p.direction != "out"], env, b)
        it = iter(evald)
        for p, v in vals:
            ct = self.ctype(v.type if isinstance(st(p.type), T.TypeVar) else p.type, p)
            if p.direction in ("out", "inout"):
                t = self.fresh("io")
                if p.direction == "inout":
                    b.emit(f"{ct.name} {t} = {next(it)};")
                else:
                    b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
                texts.append(f"&{t}")
                outs.append((v, t))
            else:
                texts.append(next(it))
        texts.extend(tail or [])
        call = f"{name}({', '.join(texts)})"
        has_ret = ret_type is not None and not isinstance(st(ret_type), T.VoidType)
        r = None
        if has_ret:
            r = self.tmp(self.ctype(ret_type).name, call, b)
        else:
            b.emit(call + ";")
        for v, t in outs:
            self.assign(v, t, env, b)
        self.stop_check(b)
        return r

    def stmt(self, s: Any, env: dict, b: Body) -> None:
        if isinstance(s, A.AssignStmt):
            sb = Body(b.ind)
            sb.ret = b.ret
            v = self.ex(s.rhs, env, sb)
            b.lines.extend(sb.lines)
            self.assign(s.lhs, v, env, b)
        elif isinstance(s, A.CallStmt):
            r = self.call(s.call, env, b)
            if r is not None:
                b.emit(f"(void){r};")
        elif isinstance(s, A.BlockStmt):
            b.emit("{")
            inner = dict(env)
            b.ind += 1
            for x in s.stmts:
                self.stmt(x, inner, b)
            b.ind -= 1
            b.emit("}")
        elif isinstance(s, A.IfStmt):
            c = self.ex(s.cond, env, b)
            b.emit(f"if ({c}) {{")
            self.block(s.then, env, b)
            if s.els is not None:
                b.emit("} else {")
                self.block(s.els, env, b)
            b.emit("}")
        elif isinstance(s, A.SwitchStmt):
            self.switch(s, env, b)
        elif isinstance(s, A.ExitStmt):
            b.emit(f"W->stop |= {STOP_EXIT}; {b.ret}")
        elif isinstance(s, A.ReturnStmt):
            if s.value is not None:
                v = self.ex(s.value, env, b)
                b.emit(f"return {v};")
            else:
                b.emit(b.ret if not b.ret.startswith("return (") else "return;")
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, A.DeclStmt):
            d = s.decl
            if isinstance(d, A.ConstDecl):
                env[id(d)] = ("const", self.const_eval(d.value, env))
                return
            ct = self.ctype(d.typeref.resolved, d)
            name = self.fresh("v")
            if d.init is not None:
                init = self.ex(d.init, env, b)
                b.emit(f"{ct.name} {name} = {init};")
            else:
                b.emit(f"{ct.name} {name}; memset(&{name}, 0, sizeof {name});")
            env[id(d)] = name
        else:
            raise NativeUnsupported(f"statement {type(s).__name__}", s)

    def block(self, s: Any, env: dict, b: Body) -> None:
        b.ind += 1
        self.stmt(s, dict(env), b)
        b.ind -= 1

    def switch(self, s: A.SwitchStmt, env: dict, b: Body) -> None:
        v = self.tmp("u64", self.ex(s.expr, env, b), b)
        pending: list[str] = []
        first = True
        default_body = None
        for c in s.cases:
            lab = c.label
            if isinstance(lab, A.DefaultExpr):
                if c.body is not None:
                    default_body = c.body
                    pending = []
                continue
            if isinstance(lab, A.PathExpr) and isinstance(lab.ref, A.ActionDecl):
                pending.append(str(self.aid(self.action_name(lab.ref, env))))
            else:
                pending.append(self.ex(lab, env, b))
            if c.body is None:
                continue
            cond = " || ".join(f"{v} == {p}" for p in pending)
            b.emit(f"{'if' if first else '} else if'} ({cond}) {{")
            first = False
            self.block(c.body, env, b)
            pending = []
        if default_body is not None:
            b.emit("{" if first else "} else {")
            self.block(default_body, env, b)
            b.emit("}")
        elif not first:
            b.emit("}")

    def action_name(self, decl: A.ActionDecl, env: dict) -> str:
        names = env.get("__actions__")
        if names is not None and id(decl) in names:
            return names[id(decl)]
        return qualify("", decl)

    def global_action(self, decl: A.ActionDecl) -> tuple:
        name = self.fresh("act_" + decl.name + "_")
        v = ("action", name, False)
        self.global_env[id(decl)] = v
        self.gen_action(decl, name, dict(self.global_env), "void")
        return v

    def gen_action(self, decl: A.ActionDecl, name: str, env: dict, frame: str) -> None:
        env = dict(env)
        ps = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                ps.append(f"{ct.name} *{n}")
                env[id(p)] = f"(*{n})"
            else:
                ps.append(f"{ct.name} {n}")
                env[id(p)] = n
        sig = f"static void {name}(sw_t *W, {frame} *E{''.join(', ' + x for x in ps)})"
        self.protos.append(sig + ";")
        b = Body()
        b.emit("(void)E;")
        self.in_action = True
        for s in decl.body.stmts:
            self.stmt(s, env, b)
        self.in_action = False
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")

    def function_fn(self, decl: A.FunctionDecl) -> str:
        key = id(decl)
        if key in self.functions:
            return self.functions[key]
        name = self.fresh("fn_" + decl.name + "_")
        self.functions[key] = name
        env = dict(self.global_env)
        ps = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                ps.append(f"{ct.name} *{n}")
                env[id(p)] = f"(*{n})"
            else:
                ps.append(f"{ct.name} {n}")
                env[id(p)] = n
        rt = st(decl.return_type.resolved)
        rct = "void" if isinstance(rt, T.VoidType) else self.ctype(rt).name
        sig = f"static {rct} {name}(sw_t *W{''.join(', ' + x for x in ps)})"
        self.protos.append(sig + ";")
        b = Body()
        b.ret = "return;" if rct == "void" else f"return ({rct}){{0}};" if rct.startswith(("S_", "H_")) else "return 0;"
        for s in decl.body.stmts:
            self.stmt(s, env, b)
        if rct != "void":
            b.emit(b.ret)
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")
        return name
