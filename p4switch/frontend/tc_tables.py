"""Table checking: keys, action lists, default actions, const entries and priorities.

Part of the type checker (see typecheck.py).
"""

from __future__ import annotations


from . import ast as A
from .types import (
    BitsType,
    BoolType,
    EnumType,
    ErrorType,
    ExternType,
    IntType,
    strip_newtype,
    width_of,
)
from .tcutil import (
    Scope,
    is_constant,
    simple_key,
    same_expr,
    _expr_nodes,
)


class TableChecker:
    """Tables: keys, actions, default action, entries and priorities (mixed into ``Checker``)."""

    def check_table(self, d: A.TableDecl, scope: Scope) -> None:
        seen: set[str] = set()
        for prop in d.properties:
            if prop.name in seen:
                raise self.err(prop, f"table property {prop.name!r} is given twice")
            seen.add(prop.name)
        kp = d.prop("key")
        ep0 = d.prop("entries")
        if ep0 is not None and (kp is None or d.properties.index(ep0) < d.properties.index(kp)):
            raise self.err(ep0, "the entries of a table must come after its key")
        if kp is not None:
            for k in kp.value:
                k.expr = self.rvalue(k.expr, scope)
                if not simple_key(k.expr) and A.find_annotation(k.annotations, "name") is None:
                    raise self.err(k, "a complex key expression needs a @name annotation")
                kt = strip_newtype(k.expr.type)  # type: ignore[arg-type]
                if isinstance(kt, IntType):
                    raise self.err(k.expr, "table keys need a width")
                if k.match_kind not in self.program.match_kinds:
                    raise self.err(k, f"unknown match kind {k.match_kind!r}")
                if not isinstance(kt, (BitsType, BoolType, EnumType, ErrorType)):
                    raise self.err(k.expr, f"a table key cannot have type {k.expr.type}")
                d.keys.append(k)
        ap = d.prop("actions")
        if ap is None:
            raise self.err(d, f"table {d.name} has no actions property")
        dp0 = d.prop("default_action")
        if dp0 is not None and d.properties.index(dp0) < d.properties.index(ap):
            raise self.err(dp0, "default_action must come after the actions list")
        for ar in ap.value:
            self.action_ref(ar, scope, full=False)
            if any(a.name == ar.name for a in d.actions):
                raise self.err(ar, f"action {ar.name} is listed twice")
            d.actions.append(ar)
        dp = d.prop("default_action")
        if dp is not None:
            ref = dp.value
            self.action_ref(ref, scope, full=True)
            listed = next((a for a in d.actions if a.decl is ref.decl), None)
            if listed is None:
                raise self.err(ref, f"default action {ref.name} is not in the table's actions")
            self.same_binding(ref, listed)
            if A.find_annotation(listed.annotations, "tableonly"):
                raise self.err(ref, f"action {ref.name} is marked @tableonly and cannot be the default action")
            for a, p in zip(ref.args, ref.decl.params):  # type: ignore[union-attr]
                if p.direction == "" and not is_constant(a.value):
                    raise self.err(a, "action data arguments must be compile-time constants")
            d.default_action = ref
            d.default_action_const = dp.is_const
        else:
            na = self.globals.lookup("NoAction")
            if isinstance(na, list) and isinstance(na[0], A.ActionDecl):
                ref = A.ActionRef("NoAction", [], span=d.span)
                ref.decl = na[0]
                d.default_action = ref
        ep = d.prop("entries")
        if ep is not None:
            if not d.keys:
                raise self.err(ep, "a table with entries needs a key")
            d.entries_const = ep.is_const
            for e in ep.value:
                self.table_entry(d, e, scope)
                e.is_const = e.is_const or ep.is_const
                d.entries.append(e)
            self.assign_priorities(d, ep)
        for prop in d.properties:
            if prop.name in ("key", "actions", "default_action", "entries"):
                continue
            v = self.expr(prop.value, scope, None)
            prop.value = v
            if prop.name == "size":
                if not isinstance(v, A.IntLit) or v.value < 0:
                    raise self.err(prop, "table size must be a non-negative constant")
                d.size = v.value
            elif prop.name in ("counters", "meters", "implementation"):
                target = v.ref if isinstance(v, A.PathExpr) else v
                if not isinstance(v.type, ExternType):
                    raise self.err(prop, f"{prop.name} must name an extern instance")
                setattr(d, prop.name, target)
            else:
                if prop.name == "largest_priority_wins" and not isinstance(v, A.BoolLit):
                    raise self.err(prop, "largest_priority_wins must be true or false")
                if prop.name == "priority_delta" and not (isinstance(v, A.IntLit) and v.value > 0):
                    raise self.err(prop, "priority_delta must be a positive constant")
                d.other[prop.name] = v

    def action_ref(self, ar: A.ActionRef, scope: Scope, full: bool) -> None:
        found = (self.globals if ar.top_level else scope).lookup(ar.name)
        if not (isinstance(found, list) and isinstance(found[0], A.ActionDecl)):
            raise self.err(ar, f"{ar.name!r} is not an action")
        act = found[0]
        ar.decl = act
        params = act.params
        if len(ar.args) > len(params):
            raise self.err(ar, f"too many arguments for action {ar.name}")
        bound = [p for p in params if p.direction != ""]
        if not full and ar.args and len(ar.args) < len(bound):
            raise self.err(ar, f"action {ar.name} needs arguments for all of its directional parameters")
        if full and len(ar.args) != len(params) and not (not ar.args and not params):
            if ar.args or params:
                raise self.err(ar, f"default action {ar.name} needs {len(params)} arguments")
        if not full and not ar.args and bound:
            raise self.err(ar, f"action {ar.name} needs arguments for its directional parameters")
        if not full and len(ar.args) > len(bound):
            raise self.err(ar.args[len(bound)], f"action data of {ar.name} cannot be bound in the actions list")
        out: list[A.Argument] = []
        for a, p in zip(ar.args, params):
            if a.name is not None and a.name != p.name:
                raise self.err(a, "named arguments are not supported in action references")
            v = self.expr(a.value, scope, p.type)
            v = self.coerce(v, p.type)  # type: ignore[arg-type]
            if any(isinstance(x, A.MethodCall) and x.kind == "table_apply" for x in _expr_nodes(v)):
                raise self.err(a, "a table cannot be applied in an action argument")
            if p.direction in ("out", "inout"):
                self.require_lvalue(v)
            out.append(A.Argument(v, None, span=a.span))
        ar.args = out

    def same_binding(self, ref: A.ActionRef, listed: A.ActionRef) -> None:
        """Arguments bound in the actions list must be repeated unchanged."""
        for a, b in zip(ref.args, listed.args):
            if not same_expr(a.value, b.value):
                raise self.err(a, "argument does not match the one bound in the actions list")

    def table_entry(self, d: A.TableDecl, e: A.TableEntry, scope: Scope) -> None:
        if len(e.keys) != len(d.keys):
            raise self.err(e, f"entry has {len(e.keys)} keys, the table has {len(d.keys)}")
        e.keys = [self.simple_keyset(k, key.expr.type, scope)  # type: ignore[arg-type]
                  for k, key in zip(e.keys, d.keys)]
        for k, key in zip(e.keys, d.keys):
            if not is_constant(k):
                raise self.err(k, "entry keys must be compile-time constants")
            if isinstance(k, A.Range) and key.match_kind != "range":
                raise self.err(k, f"a range needs a range key, not {key.match_kind}")
            if isinstance(k, A.Mask) and key.match_kind not in ("ternary", "lpm"):
                raise self.err(k, f"a mask needs a ternary or lpm key, not {key.match_kind}")
            if isinstance(k, A.DefaultExpr) and key.match_kind == "exact":
                raise self.err(k, "an exact key cannot be a wildcard")
        self.action_ref(e.action, scope, full=True)
        listed = next((a for a in d.actions if a.decl is e.action.decl), None)
        if listed is None:
            raise self.err(e.action, f"action {e.action.name} is not in the table's actions")
        self.same_binding(e.action, listed)
        if A.find_annotation(listed.annotations, "defaultonly"):
            raise self.err(e.action, f"action {e.action.name} is marked @defaultonly and cannot be used in entries")
        for k, key in zip(e.keys, d.keys):
            if isinstance(k, A.Mask) and key.match_kind == "lpm":
                w = width_of(key.expr.type)  # type: ignore[arg-type]
                m = int(getattr(k.mask, "value", 0)) & ((1 << w) - 1)
                inv = ~m & ((1 << w) - 1)
                if inv & (inv + 1):
                    raise self.err(k, "an lpm mask must be a prefix (ones followed by zeros)")
        for a in e.action.args:
            if not is_constant(a.value):
                raise self.err(a, "entry action arguments must be compile-time constants")

    def assign_priorities(self, d: A.TableDecl, ep: A.TableProperty) -> None:
        """Priorities in P4Runtime's sense (larger wins).

        Const entries follow the BMv2 back end: an entry's rank is its
        ``@priority(n)`` or its 1-based position, smaller rank wins; we
        store ``2**24 - rank``.  Mutable entries follow the language's
        ``priority = n`` / ``largest_priority_wins`` / ``priority_delta`` rules.
        """
        needs = any(k.match_kind not in ("exact", "lpm") for k in d.keys)
        explicit = [e for e in d.entries if A.find_annotation(e.annotations, "__priority_expr")]
        for e in d.entries:
            pa = A.find_annotation(e.annotations, "__priority_expr")
            if pa is not None:
                v = self.expr(pa.args[0], Scope(self.globals), None)
                if not isinstance(v, A.IntLit) or v.value < 0:
                    raise self.err(pa, "an entry priority must be a non-negative constant")
                e.priority = v.value
                e.annotations.remove(pa)
        if ep.is_const:
            if explicit:
                raise self.err(explicit[0], "a table with const entries cannot have priorities")
            if not needs:
                return
            for i, e in enumerate(d.entries):
                rank = i + 1
                pa = A.find_annotation(e.annotations, "priority")
                if pa is not None:
                    v = self.expr(pa.args[0], self.globals, None) if pa.args else None
                    if not isinstance(v, A.IntLit):
                        raise self.err(pa, "@priority needs one integer constant")
                    rank = v.value
                e.priority = (1 << 24) - rank
            return
        if not needs:
            if explicit:
                raise self.err(explicit[0], "the table's keys do not use priorities")
            return
        largest = d.prop("largest_priority_wins")
        largest_wins = not (largest is not None and isinstance(largest.value, A.BoolLit) and not largest.value.value)
        delta_p = d.prop("priority_delta")
        delta = delta_p.value.value if delta_p is not None and isinstance(delta_p.value, A.IntLit) else 1
        n = len(d.entries)
        if not explicit:
            prio = 1
            for i in range(n):
                idx = n - i - 1 if largest_wins else i
                d.entries[idx].priority = prio
                prio += delta
        else:
            if d.entries[0].priority is None:
                raise self.err(d.entries[0], "the first entry must have a priority")
            cur = d.entries[0].priority
            for e in d.entries:
                if e.priority is None:
                    cur = cur - delta if largest_wins else cur + delta
                    e.priority = cur
                else:
                    cur = e.priority
                if largest_wins and cur < delta:
                    # p4c computes the next entry's priority in unsigned
                    # arithmetic and rejects the wrap below zero.
                    from .bmv2 import name_span
                    from .errors import P4Error

                    raise P4Error(name_span(d), f"{d.name} Overflow in priority computation")
        if not largest_wins:
            top = max(e.priority or 0 for e in d.entries) + 1
            for e in d.entries:
                e.priority = top - (e.priority or 0)
