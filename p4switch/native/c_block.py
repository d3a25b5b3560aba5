"""Parser/control instances, tables and extern instances of the C emitter (a mixin of ``cgen.CProgram``)."""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..interp.irutil import qualify, st
from .cbase import KINDS, STOP_PERR, Body, NativeUnsupported


class BlockMixin:
    """Parser/control instances, tables, extern instances, the whole program."""

    def extern_instance(self, inst: A.Instantiation, fq: str, env: dict) -> tuple:
        t = st(inst.typeref.resolved)
        if not isinstance(t, T.ExternType):
            raise NativeUnsupported(f"instance of {t}", inst)
        args = [self.const_eval(a, env) for a in inst.args]
        if t.name == "register":
            et = st(t.type_args[0]) if t.type_args else T.BitsType(32)
            if not isinstance(et, (T.BitsType, T.BoolType)) or self.w_of(et) > 128:
                raise NativeUnsupported(f"register of {et}", inst)
            k = len(self.registers)
            self.registers.append((fq, int(args[0]), self.w_of(et), self.signed(et)))
            return ("reg", k, int(args[0]), self.w_of(et))
        if t.name == "counter":
            k = len(self.counters)
            self.counters.append((fq, int(args[0])))
            return ("ctr", k, int(args[0]))
        if t.name == "meter":
            k = len(self.meters)
            self.meters.append(fq)
            return ("meter", k)
        if t.name in ("direct_counter", "direct_meter"):
            return (t.name,)
        raise NativeUnsupported(f"extern {t.name!r}", inst)

    def global_instance(self, inst: A.Instantiation) -> None:
        self.global_env[id(inst)] = self.extern_instance(inst, qualify("", inst), {})

    def frame_param(self, p: Any) -> tuple[str, str]:
        """(C member declaration, expression inside the instance) for one block parameter."""
        ct = self.ctype(p.type, p)
        if p.direction in ("out", "inout"):
            return f"{ct.name} *p_{p.name};", f"(*E->p_{p.name})"
        return f"{ct.name} p_{p.name};", f"E->p_{p.name}"

    def instantiate(self, decl: Any, prefix: str, ctor_args: list, outer_env: dict) -> tuple[str, str]:
        """C functions of one parser/control instance; returns (apply function, frame type)."""
        self.depth += 1
        try:
            return self._instantiate(decl, prefix, ctor_args, outer_env)
        finally:
            self.depth -= 1

    def _instantiate(self, decl: Any, prefix: str, ctor_args: list, outer_env: dict) -> tuple[str, str]:
        env: dict[Any, Any] = dict(self.global_env)
        actions: dict[int, str] = {}
        env["__actions__"] = actions
        for p, a in zip(decl.ctor_params, ctor_args):
            env[id(p)] = ("const", self.const_eval(a, outer_env))
        for p in decl.ctor_params[len(ctor_args):]:
            if p.default is not None:
                env[id(p)] = ("const", self.const_eval(p.default, env))
        tag = "".join(c if c.isalnum() else "_" for c in prefix)
        frame = self.fresh(f"F_{tag}_")
        members: list[str] = []
        for p in decl.params:
            pt = st(p.type)
            if isinstance(pt, T.ExternType):
                if pt.name not in ("packet_in", "packet_out"):
                    raise NativeUnsupported(f"extern parameter {pt.name}", p)
                env[id(p)] = ("packet", pt.name)
                continue
            m, x = self.frame_param(p)
            members.append(m)
            env[id(p)] = x
        inits = Body()
        local_vars = []
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                env[id(d)] = ("action", self.fresh(f"act_{tag}_{d.name}_"), True)
                actions[id(d)] = qualify(prefix, d)
                self.aid(actions[id(d)])
            elif isinstance(d, A.TableDecl):
                env[id(d)] = ("table", self.fresh(f"tbl_{tag}_{d.name}_"))
            elif isinstance(d, A.ConstDecl):
                env[id(d)] = ("const", self.const_eval(d.value, env))
            elif isinstance(d, A.VarDecl):
                n = self.fresh("l")
                members.append(f"{self.ctype(d.typeref.resolved, d).name} {n};")
                env[id(d)] = f"E->{n}"
                local_vars.append(d)
            elif isinstance(d, A.Instantiation):
                t = st(d.typeref.resolved)
                if isinstance(t, T.ExternType):
                    env[id(d)] = self.extern_instance(d, qualify(prefix, d), env)
                else:
                    sub = d.decl
                    if not isinstance(sub, (A.ControlDecl, A.ParserDecl)):
                        raise NativeUnsupported(f"instance of {type(sub).__name__}", d)
                    fname, fr = self.instantiate(sub, qualify(prefix, d), list(d.args), env)
                    env[id(d)] = ("inst", fname, fr, sub)
            else:
                raise NativeUnsupported(f"local {type(d).__name__}", d)
        self.typedefs.append(f"typedef struct {{\n    {' '.join(members) or 'int _dummy;'}\n}} {frame};\n")
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.gen_action(d, env[id(d)][1], env, frame)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.gen_table(d, env[id(d)][1], qualify(prefix, d), env, frame)
        for d in local_vars:
            if d.init is not None:
                v = self.ex(d.init, env, inits)
                inits.emit(f"{env[id(d)]} = {v};")
            else:
                inits.emit(f"memset(&{env[id(d)]}, 0, sizeof {env[id(d)]});")
        fname = self.fresh(("prs_" if isinstance(decl, A.ParserDecl) else "ctl_") + tag + "_")
        sig = f"static void {fname}(sw_t *W, {frame} *E)"
        self.protos.append(sig + ";")
        b = Body()
        b.lines.extend(inits.lines)
        if isinstance(decl, A.ParserDecl):
            self.gen_states(decl, env, b)
        else:
            for s in decl.body.stmts:
                self.stmt(s, env, b)
        self.funcs.append(sig + " {\n    (void)E;\n" + "\n".join(b.lines) + "\n}\n")
        return fname, frame

    def gen_states(self, decl: A.ParserDecl, env: dict, b: Body) -> None:
        names = {s.name: self.fresh(f"st_{s.name}_") for s in decl.states}
        if "start" not in names:
            raise NativeUnsupported("parser has no start state", decl)

        def goto(ns: Any) -> str:
            n = ns if isinstance(ns, str) else getattr(ns, "name", None)
            if n == "accept" and n not in names:
                return "return;"
            if n == "reject" and n not in names:
                return f"{{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('NoError')}; return; }}"
            return f"goto {names[n]};"

        b.emit(f"goto {names['start']};")
        for s in decl.states:
            b.emit(f"{names[s.name]}: {{")
            b.ind += 1
            senv = dict(env)
            for x in s.stmts:
                self.stmt(x, senv, b)
            tr = s.transition
            if tr is None:
                b.emit(goto("reject"))
            elif tr.select is None:
                b.emit(goto(tr.next_state if tr.next_state is not None else tr.state))
            else:
                self.gen_select(tr.select, senv, b, goto)
            b.ind -= 1
            b.emit("}")

    def gen_select(self, sel: A.SelectExpr, env: dict, b: Body, goto: Any) -> None:
        keys = []
        for x in sel.exprs:
            t = st(x.type)
            ctn = self.ctype(t, x).name
            keys.append((self.tmp(ctn, self.ex(x, env, b), b), t))
        for c in sel.cases:
            ks = c.keyset
            parts = ks.elems if (len(keys) > 1 and isinstance(ks, A.ListExpr)) else [ks]
            if len(keys) > 1 and not isinstance(ks, A.ListExpr):
                if not isinstance(ks, A.DefaultExpr):
                    raise NativeUnsupported("select case", ks)
                parts = [ks] * len(keys)
            conds = []
            for (k, t), p in zip(keys, parts):
                w = self.w_of(t)
                if isinstance(p, A.DefaultExpr):
                    continue
                if isinstance(p, A.Mask):
                    v, m = self.ex(p.value, env, b), self.ex(p.mask, env, b)
                    conds.append(f"(({k} & {m}) == ({v} & {m}))")
                elif isinstance(p, A.Range):
                    conds.append(f"({self.ex(p.lo, env, b)} <= {k} && {k} <= {self.ex(p.hi, env, b)})")
                elif isinstance(p, A.PathExpr) and isinstance(p.ref, A.ValueSetDecl):
                    raise NativeUnsupported("value set", p)
                else:
                    conds.append(f"({k} == {self.mask(self.ex(p, env, b), w)})")
            b.emit(f"if ({' && '.join(conds) or '1'}) {goto(c.next_state if c.next_state is not None else c.state)}")
        b.emit(f"W->stop |= {STOP_PERR}; W->perr = {self.err_code('NoMatch')}; return;")

    def gen_table(self, d: A.TableDecl, name: str, fq: str, env: dict, frame: str) -> None:
        if d.prop("implementation") is not None:
            raise NativeUnsupported("table implementation", d)
        b = Body()
        b.ret = "return 0;"
        keys = []
        kinds = []
        for ke in d.keys:
            if ke.match_kind not in KINDS:
                raise NativeUnsupported(f"match kind {ke.match_kind}", ke)
            t = st(ke.expr.type)
            if not isinstance(t, (T.BitsType, T.BoolType, T.ErrorType, T.EnumType)):
                raise NativeUnsupported(f"table key of type {t}", ke)
            keys.append(self.ex(ke.expr, env, b))
            kinds.append(KINDS[ke.match_kind])
        self.max_keys = max(self.max_keys, len(keys))
        ix = len(self.tables)
        alist: list[str] = []
        cases = []
        for ar in d.actions:
            adecl = ar.decl
            if adecl is None or ar.args:
                raise NativeUnsupported("table action with bound arguments", ar)
            aname = self.action_name(adecl, env)
            v = env.get(id(adecl)) or self.global_env.get(id(adecl)) or self.global_action(adecl)
            params = adecl.params
            if any(p.direction for p in params):
                raise NativeUnsupported("action with directional parameters in a table", ar)
            self.max_params = max(self.max_params, len(params))
            args = ", ".join(f"({self.ctype(p.type).name})p[{i}]" for i, p in enumerate(params))
            cases.append(f"    case {len(alist)}: {v[1]}(W, {'E' if v[2] else '0'}{', ' + args if args else ''}); break;")
            alist.append(aname)
            self.aid(aname)
        da = d.default_action
        if da is not None and da.decl is not None:
            dname = self.action_name(da.decl, env)
            if dname not in alist:
                v = env.get(id(da.decl)) or self.global_env.get(id(da.decl)) or self.global_action(da.decl)
                if da.decl.params:
                    raise NativeUnsupported("default action outside the action list with parameters", d)
                cases.append(f"    case {len(alist)}: {v[1]}(W, {'E' if v[2] else '0'}); break;")
                alist.append(dname)
                self.aid(dname)
        self.tables.append((fq, d, alist))
        self.table_ix[fq] = ix
        b.emit("u128 k[NK > 0 ? NK : 1];")
        for i, (k, kd) in enumerate(zip(keys, kinds)):
            b.emit(f"k[{i}] = (u128)({k});")
        b.emit(f"tbl_t *t = &W->t[{ix}];")
        b.emit("ent_t *e = tbl_find(t, k); int a, gid; u64 hit; u128 *p;")
        b.emit("if (e) { a = e->act; gid = e->gid; p = e->p; hit = 1; } else { a = t->def_act; gid = t->def_gid; p = t->def_p; hit = 0; }")
        if d.counters is not None:
            b.emit("if (e) { e->cpk += 1; e->cby += W->length; }")
        if d.meters is not None:
            b.emit(f"if (e) W->dm_color = W->meter_cb({-1 - ix}, e->handle, W->now_us, W->length);")
        self.direct.append((fq, d.counters is not None, d.meters is not None))
        b.emit("(void)p;")
        b.emit("switch (a) {")
        b.lines.extend(cases)
        b.emit("    default: break;")
        b.emit("}")
        b.emit("return (hit << 32) | (u64)gid;")
        sig = f"static u64 {name}(sw_t *W, {frame} *E)"
        self.protos.append(sig + ";")
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")
