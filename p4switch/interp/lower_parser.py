"""Parser states lowered to functions that return the next state."""

from __future__ import annotations

from typing import Any, Callable

from ..frontend import ast as A
from ..frontend import types as T
from .irutil import Fn, UnsupportedError, is_signed, st, width


class ParserLowering:
    """Mixin of ``codegen.Lowering``."""

    # attributes provided by Lowering
    g: dict
    out: list

    def gen_states(self, decl: A.ParserDecl, tag: str, env: dict) -> str:
        names = {s.name: self.fresh(f"ps_{tag}_{s.name}_") for s in decl.states}

        def target(ns: Any) -> str:
            if ns == "accept" or (hasattr(ns, "name") and ns.name == "accept" and ns.name not in names):
                return "None"
            if ns == "reject" or (hasattr(ns, "name") and ns.name == "reject" and ns.name not in names):
                return "REJECT"
            return names[ns.name]

        for s in decl.states:
            fn = Fn(f"def {names[s.name]}(E, P):")
            senv = dict(env)
            for x in s.stmts:
                self.stmt(x, senv, fn)
            tr = s.transition
            if tr is None:
                fn.emit("raise _PErr('NoError')")
            elif tr.select is None:
                t = target(tr.next_state if tr.next_state is not None else tr.state)
                fn.emit("raise _PErr('NoError')" if t == "REJECT" else f"return {t}")
            else:
                self.gen_select(tr.select, senv, fn, target)
            self.out.append(fn.text())
        if "start" not in names:
            raise UnsupportedError("parser has no start state", decl)
        return names["start"]

    def gen_select(self, sel: A.SelectExpr, env: dict, fn: Fn, target: Callable) -> None:
        keys = []
        for x in sel.exprs:
            k = self.fresh("k")
            v = self.ex(x, env, fn)
            t = st(x.type)
            if is_signed(t):
                v = f"({v} & {(1 << t.width) - 1})"
            elif isinstance(t, T.BoolType):
                v = f"int({v})"
            fn.emit(f"{k} = {v}")
            keys.append((k, t))
        for c in sel.cases:
            ks = c.keyset
            parts = ks.elems if (len(keys) > 1 and isinstance(ks, A.ListExpr)) else [ks]
            if len(keys) > 1 and not isinstance(ks, A.ListExpr):
                parts = [ks] * len(keys) if isinstance(ks, A.DefaultExpr) else [ks]
            conds = []
            if len(parts) == 1 and len(keys) > 1 and isinstance(parts[0], A.PathExpr) and isinstance(parts[0].ref, A.ValueSetDecl):
                vs = self.ex_PathExpr(parts[0], env, fn)
                conds.append(f"({', '.join(k for k, _ in keys)},) in {vs}")
            else:
                for (k, t), p in zip(keys, parts):
                    c1 = self.keyset_cond(k, t, p, env, fn)
                    if c1 != "True":
                        conds.append(c1)
            t = target(c.next_state if c.next_state is not None else c.state)
            action = "raise _PErr('NoError')" if t == "REJECT" else f"return {t}"
            fn.emit(f"if {' and '.join(conds) if conds else 'True'}: {action}")
        fn.emit("raise _PErr('NoMatch')")

    def keyset_cond(self, k: str, t: Any, p: Any, env: dict, fn: Fn) -> str:
        w = width(t)
        M = (1 << w) - 1 if w else -1
        if isinstance(p, A.DefaultExpr):
            return "True"
        if isinstance(p, A.Mask):
            v = self.ex(p.value, env, fn)
            m = self.ex(p.mask, env, fn)
            return f"({k} & {m} & {M}) == ({v} & {m} & {M})"
        if isinstance(p, A.Range):
            return f"(({self.ex(p.lo, env, fn)}) & {M}) <= {k} <= (({self.ex(p.hi, env, fn)}) & {M})"
        if isinstance(p, A.PathExpr) and isinstance(p.ref, A.ValueSetDecl):
            return f"{k} in {self.ex_PathExpr(p, env, fn)}"
        v = self.ex(p, env, fn)
        if isinstance(st(p.type), T.BoolType):
            v = f"int({v})"
        elif is_signed(p.type):
            v = f"({v} & {M})"
        return f"{k} == {v}"
