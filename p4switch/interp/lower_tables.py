"""Tables lowered to a key computation, a runtime lookup and an action call."""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..runtime import externs as X
from ..runtime.tables import ActionCall, ActionSpec, Exact, KeySpec, Optional_, Range, Table, Ternary
from .irutil import Fn, UnsupportedError, _Ref, expr_text, is_signed, qualify, st, width


class TableLowering:
    """Mixin of ``codegen.Lowering``."""

    # attributes provided by Lowering
    g: dict
    out: list

    def gen_table(self, d: A.TableDecl, name: str, fq: str, env: dict) -> None:
        fn = Fn(f"def {name}(E):")
        keyspecs = []
        keytexts = []
        for ke in d.keys:
            if ke.match_kind == "selector":
                # picks a member inside an action-selector group: not a match field
                # (P4Info lists none); tables with an implementation run their
                # default action and direct entries only
                continue
            t = st(ke.expr.type)
            w = width(t)
            kn = None
            for a in ke.annotations:
                if a.name == "name" and a.string_arg():
                    kn = a.string_arg()
            if kn is None:
                kn = expr_text(ke.expr)
            v = self.ex(ke.expr, env, fn)
            if isinstance(t, T.BoolType):
                v, w = f"int({v})", 1
            elif is_signed(t):
                v = f"({v} & {(1 << w) - 1})"
            elif isinstance(t, T.ErrorType):
                # errors match by their number: declaration order, as BMv2 numbers them
                codes = self.const({n: i for i, n in enumerate(self.errors)}, "ERR")
                v, w = f"{codes}.get({v}, 0)", 32
            elif isinstance(t, T.EnumType) and t.underlying is None:
                codes = self.const({n: i for i, n in enumerate(t.members)}, "ENUM")
                v, w = f"{codes}.get({v}, 0)", 32
            if w == 0:
                raise UnsupportedError(f"table key of type {t}", ke)
            keyspecs.append(KeySpec(kn, ke.match_kind, w))
            keytexts.append(v)
        actions: dict[str, ActionSpec] = {}
        for ar in d.actions:
            adecl = ar.decl
            if adecl is None:
                raise UnsupportedError(f"unresolved action {ar.name!r}", ar)
            aname = self.action_name(adecl, env)
            afn = self.action_fn(adecl, env)
            nbound = len(ar.args)
            data_params = adecl.params[nbound:]
            if any(p.direction for p in data_params):
                raise UnsupportedError(f"action {aname} has unbound directional parameters", ar)
            if nbound:
                wname = self.fresh("ta_")
                wenv = dict(env)
                dn = []
                for p in data_params:
                    n = self.fresh("a_")
                    dn.append(n)
                wfn = Fn(f"def {wname}(E{''.join(', ' + x for x in dn)}):")
                # directional arguments bound in the actions list are evaluated
                # here, with copy-in/copy-out; action data passes through
                self.call_dirs(afn, adecl.params[:nbound], ar.args, wenv, wfn, ["E"], None, tail=dn)
                self.out.append(wfn.text())
                afn = wname
            ann = {a.name for a in ar.annotations}
            spec = ActionSpec(aname, [(p.name, width(p.type)) for p in data_params], self.g_fn_ref(afn),
                              table_only="tableonly" in ann, default_only="defaultonly" in ann)
            actions[aname] = spec
            self.action_specs.setdefault(aname, spec)
        # default action
        da = d.default_action
        if da is not None and da.decl is not None:
            dname = self.action_name(da.decl, env)
            if dname not in actions:
                # default action not in the list (allowed for NoAction)
                afn = self.action_fn(da.decl, env)
                actions[dname] = ActionSpec(dname, [(p.name, width(p.type)) for p in da.decl.params], self.g_fn_ref(afn), default_only=True)
            spec = actions[dname]
            nb = len(da.args) - len(spec.params)
            data = tuple(int(self.const_eval(a, env)) & ((1 << w) - 1) for a, (_, w) in zip(da.args[nb:], spec.params))
            default = ActionCall(dname, data, spec.fn)
        else:
            default = ActionCall("NoAction", (), _Ref(lambda E: None))
        dc = d.counters
        dm = d.meters
        meter_factory = None
        if dm is not None:
            mi = self.g.get(env.get(id(dm), ""), None)
            packets = bool(mi[2]) if isinstance(mi, tuple) else False
            meter_factory = lambda packets=packets: X.Meter(packets)  # noqa: E731
            self.direct_meters[qualify(fq.rsplit(".", 1)[0] if "." in fq else "", dm)] = fq
        if dc is not None:
            self.direct_counters[qualify(fq.rsplit(".", 1)[0] if "." in fq else "", dc)] = fq
        table = Table(fq, keyspecs, actions, default, default_const=d.default_action_const,
                      size=d.size, has_direct_counter=dc is not None, meter_factory=meter_factory)
        entries = list(d.entries)
        if not entries and d.prop("entries") is not None:
            entries = list(d.prop("entries").value or [])
        for rank, ent in enumerate(entries):
            mks = []
            for ks, spec in zip(ent.keys, keyspecs):
                mks.append(self.entry_match(ks, spec, env))
            adecl = ent.action.decl
            aname = self.action_name(adecl, env)
            aspec = table.resolve_action(aname)
            nb = len(ent.action.args) - len(aspec.params)
            data = [int(self.const_eval(a, env)) & ((1 << w) - 1) for a, (_, w) in zip(ent.action.args[nb:], aspec.params)]
            prio = ent.priority
            if prio is None and table.needs_priority:
                # p4c's BMv2 rule: rank = @priority(n) or 1-based position, smaller rank wins
                r = rank + 1
                pa = A.find_annotation(ent.annotations, "priority")
                if pa is not None and pa.args:
                    r = int(self.const_eval(pa.args[0], env))
                prio = (1 << 24) - r
            try:
                table.add(mks, aname, data, prio if table.needs_priority else None,
                          is_const=ent.is_const or d.entries_const)
            except Exception as exc:
                raise UnsupportedError(f"entry of table {fq}: {exc}", ent) from None
        self.tables[fq] = table
        tname = self.const(table, "T")
        fn.emit(f"e = {tname}.lookup(({''.join(k + ', ' for k in keytexts)}))")
        fn.emit("if e is None:")
        fn.emit(f"    a = {tname}.default")
        fn.emit("    a.fn(E, *a.params)")
        fn.emit("    return (False, a.action)")
        if dc is not None:
            fn.emit("c = e.counter; c[0] += 1; c[1] += _pk.length")
        if dm is not None:
            fn.emit("_pk.dm_color = e.meter.execute(_pk.now_us, _pk.length)")
        fn.emit("e.fn(E, *e.params)")
        fn.emit("return (True, e.action)")
        self.out.append(fn.text())

    def g_fn_ref(self, name: str) -> "_Ref":
        """A callable that resolves the generated function once the module is loaded."""
        return _Ref(None, name, self.g)

    def entry_match(self, ks: Any, spec: KeySpec, env: dict) -> Any:
        M = (1 << spec.width) - 1
        if isinstance(ks, A.DefaultExpr):
            return None
        if isinstance(ks, A.Mask):
            return Ternary(int(self.const_eval(ks.value, env)) & M, int(self.const_eval(ks.mask, env)) & M)
        if isinstance(ks, A.Range):
            return Range(int(self.const_eval(ks.lo, env)) & M, int(self.const_eval(ks.hi, env)) & M)
        v = self.const_eval(ks, env)
        if isinstance(ks, A.ErrorMember):
            v = self.errors.index(v) if v in self.errors else 0
        elif isinstance(v, str) and isinstance(st(ks.type), T.EnumType):
            v = st(ks.type).members.index(v)
        v = int(v) & M
        if spec.match_kind == "optional":
            return Optional_(v)
        return Exact(v) if spec.match_kind != "ternary" else Ternary(v, M)
