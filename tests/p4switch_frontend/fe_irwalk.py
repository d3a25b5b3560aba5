"""Invariants every checked program's IR must satisfy (docs/p4switch-ir.md)."""

from __future__ import annotations

from typing import Any, Iterator

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import types as T


def nodes(root: Any, seen: set[int] | None = None) -> Iterator[A.Node]:
    """Every node reachable from ``root`` through syntax (not through
    resolved references)."""
    seen = set() if seen is None else seen
    stack = [root]
    while stack:
        n = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend(n)
            continue
        if isinstance(n, dict):
            stack.extend(n.values())
            continue
        if not isinstance(n, A.Node) or id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        for k, v in vars(n).items():
            if k in ("ref", "decl", "target", "next_state", "resolved", "type"):
                if not (k == "decl" and isinstance(n, A.DeclStmt)):
                    continue
            if k == "params" and isinstance(n, A.MethodCall):
                continue
            if isinstance(n, A.Annotation):
                continue
            stack.append(v)


def same(a: Any, b: Any) -> bool:
    return a is b or a == b


def ir_problems(program: A.Program) -> list[str]:
    """Describe every violation of the IR contract found in ``program``."""
    out: list[str] = []
    for n in nodes(program.decls):
        where = f"{n.span} {type(n).__name__}"
        if isinstance(n, A.Annotation):
            continue
        if isinstance(n, A.TypeRef):
            if n.resolved is None:
                out.append(f"{where}: unresolved type")
            continue
        if isinstance(n, A.Expression):
            if n.type is None:
                out.append(f"{where}: no type")
            if isinstance(n, A.PathExpr) and n.ref is None:
                out.append(f"{where}: unresolved name {n.name}")
            if isinstance(n, A.MethodCall) and not n.kind:
                out.append(f"{where}: call without kind")
            if isinstance(n, A.Binary):
                if n.op in ("<<", ">>", "++", "&&", "||"):
                    continue
                if not same(n.left.type, n.right.type):
                    out.append(f"{where}: operands {n.left.type} and {n.right.type} of {n.op}")
                if n.op in ("==", "!=", "<", "<=", ">", ">=") and n.type != T.BOOL:
                    out.append(f"{where}: comparison is not bool")
            if isinstance(n, A.IntLit) and isinstance(n.type, T.BitsType):
                from p4mcc.p4switch.frontend.consteval import fits
                if not fits(n.value, n.type):
                    out.append(f"{where}: literal {n.value} does not fit {n.type}")
        if isinstance(n, A.AssignStmt):
            if not same(n.lhs.type, n.rhs.type) and not isinstance(n.lhs, A.DefaultExpr):
                out.append(f"{where}: assigns {n.rhs.type} to {n.lhs.type}")
        if isinstance(n, A.TableDecl):
            for ar in n.actions:
                if ar.decl is None:
                    out.append(f"{where}: unresolved action {ar.name}")
    return out
