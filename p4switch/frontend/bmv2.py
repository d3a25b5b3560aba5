"""The BMv2 back end's restrictions, checked on a program the front end accepted.

``p4mcc check --target bmv2`` (the default for v1model programs) runs these
after type checking, so a program that passes is one p4c's BMv2 compiler
(``p4c-bm2-ss``) also accepts.  Each rule below is one p4c-bm2-ss rejects;
the message says the same thing p4c says and the position is the one p4c
points at (the declaration's *name*, not its keyword).  Measured against
p4c's error corpus in docs/conformance.md.

The rules are target rules, not language rules: the built-in switch runs
such programs (``--target builtin`` skips this module), BMv2 does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from . import ast as A
from . import types as T
from .errors import P4Error

MAX_SHIFT_BITS = 8  # BMv2 JSON shifts take an 8-bit amount


@dataclass
class _Ctx:
    """Where a node sits: the enclosing control/parser and action, if any."""

    block: Optional[A.Decl] = None
    action: Optional[A.ActionDecl] = None


def _children(n: Any) -> Iterator[Any]:
    for k, v in vars(n).items():
        if k in ("ref", "decl", "target", "next_state", "resolved", "type", "params"):
            if not (k == "decl" and isinstance(n, A.DeclStmt)):
                continue
        if isinstance(n, A.Annotation):
            continue
        yield v


def _walk(root: Any, ctx: _Ctx) -> Iterator[tuple[A.Node, _Ctx]]:
    """Every syntax node under ``root`` with its context."""
    stack: list[tuple[Any, _Ctx]] = [(root, ctx)]
    while stack:
        n, c = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend((x, c) for x in reversed(n))
            continue
        if isinstance(n, dict):
            stack.extend((x, c) for x in n.values())
            continue
        if not isinstance(n, A.Node):
            continue
        if isinstance(n, (A.ControlDecl, A.ParserDecl)):
            c = _Ctx(block=n)
        elif isinstance(n, A.ActionDecl):
            c = _Ctx(block=c.block, action=n)
        yield n, c
        stack.extend((v, c) for v in reversed(list(_children(n))))


# ---------------------------------------------------------------------------
# Positions and printing


def name_span(decl: A.Decl, name: Optional[str] = None) -> A.Span:
    """The position of ``decl``'s name (p4c points there), found in the
    source after the declaration's start; the start itself if not found."""
    sp = decl.span
    name = name or decl.name
    lines = _lines(sp.file)
    pat = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    for i in range(sp.line - 1, min(sp.line + 40, len(lines))):
        text = lines[i]
        start = sp.col - 1 if i == sp.line - 1 else 0
        # skip annotations such as @name("x") so the match is the identifier
        masked = re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), text)
        m = pat.search(masked, start)
        if m:
            return A.Span(sp.file, i + 1, m.start() + 1)
    return sp


def _lines(file: str) -> list[str]:
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def expr_span(e: A.Expression) -> A.Span:
    """Where p4c places an expression: its leftmost character, including an
    opening parenthesis around it (our parser drops parentheses and puts a
    binary expression at its operator)."""
    left: Any = e
    while True:
        if isinstance(left, A.Binary):
            left = left.left
        elif isinstance(left, (A.Member, A.Index, A.Slice)):
            left = left.expr
        elif isinstance(left, A.MethodCall):
            left = left.func
        else:
            break
    sp = left.span
    text = _lines(sp.file)
    if 1 <= sp.line <= len(text):
        line = text[sp.line - 1]
        col = sp.col - 1
        while col > 0 and line[col - 1] == " ":
            col -= 1
        if col > 0 and line[col - 1] == "(" and not _is_cast_paren(line, col - 1):
            return A.Span(sp.file, sp.line, col)
    return sp


def _is_cast_paren(line: str, i: int) -> bool:
    """Whether the '(' at ``i`` closes into a cast such as ``(bit<8>)``."""
    return bool(re.match(r"\((bit|int|varbit)\s*<", line[i:]))


def show(e: Any) -> str:
    """A P4 rendering of an expression for messages (p4c prints the expression)."""
    if isinstance(e, A.IntLit):
        if e.width is not None:
            return f"{e.width}{'s' if e.signed else 'w'}{e.value}"
        return str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.PathExpr):
        return e.name
    if isinstance(e, A.Member):
        return f"{show(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{show(e.expr)}[{show(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{show(e.expr)}[{show(e.hi)}:{show(e.lo)}]"
    if isinstance(e, A.Unary):
        return f"{e.op}{show(e.expr)}"
    if isinstance(e, A.Binary):
        return f"{show(e.left)} {e.op} {show(e.right)}"
    if isinstance(e, A.Cast):
        t = e.target.resolved if e.target is not None else None
        return f"({_type_name(t)}){show(e.expr)}" if not e.implicit else show(e.expr)
    if isinstance(e, A.MethodCall):
        return f"{show(e.func)}(...)"
    return type(e).__name__


def _type_name(t: Any) -> str:
    if isinstance(t, T.BitsType):
        return f"{'int' if t.signed else 'bit'}<{t.width}>"
    return getattr(t, "name", type(t).__name__)


def _underlying(t: Any) -> Any:
    while isinstance(t, (T.NewType, T.TypeNameType)):
        t = t.base if isinstance(t, T.NewType) else t.named
    return t


def _is_system(span: A.Span) -> bool:
    return span.file.endswith(("/core.p4", "/v1model.p4")) or span.file in ("core.p4", "v1model.p4")


# ---------------------------------------------------------------------------
# The rules


class _Checker:
    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.errors: list[P4Error] = []

    def err(self, span: A.Span, message: str) -> None:
        self.errors.append(P4Error(span, message))

    def run(self) -> list[P4Error]:
        user = [d for d in self.program.decls if not _is_system(d.span)]
        self.headers(user)
        self.package_types()
        for d in user:
            if isinstance(d, A.ControlDecl):
                self.control(d)
            elif isinstance(d, A.ParserDecl):
                self.parser_reaches_end(d)
        self.walk_expressions(user)
        self.control_plane_names(user)
        seen: set[tuple[str, int, int, str]] = set()
        out = []
        for e in self.errors:
            key = (e.span.file, e.span.line, e.span.col, e.message) if e.span else ("", 0, 0, e.message)
            if key not in seen:
                seen.add(key)
                out.append(e)
        return out

    # -- headers whose fields do not fill whole bytes ----------------------
    def headers(self, user: list[A.Decl]) -> None:
        for d in user:
            if not (isinstance(d, A.StructDecl) and d.kind == "header") or d.type_params:
                continue
            t = d.resolved
            if not isinstance(t, T.StructLikeType):
                continue
            bits = 0
            for f in t.fields:
                ft = _underlying(f.type)
                if isinstance(ft, T.BitsType):
                    bits += ft.width
                elif isinstance(ft, T.VarbitType):
                    bits += ft.max_width
                elif isinstance(ft, T.BoolType):
                    bits += 1
                else:
                    w = getattr(ft, "width_bits", None)
                    bits += w() if callable(w) else 0
            if bits % 8:
                self.err(name_span(d), f"header {d.name}: Found header with fields totaling {bits} bits.  "
                         "BMv2 target only supports headers with fields totaling a multiple of 8 bits.")

    # -- V1Switch's H and M must be structs --------------------------------
    def package_types(self) -> None:
        blk = self.program.v1model.get("parser")
        if blk is None or not isinstance(blk.decl, A.ParserDecl):
            return
        params = blk.decl.params
        for p in params[1:3]:  # out H hdr, inout M meta
            t = _underlying(p.typeref.resolved)
            if not isinstance(t, T.StructType):
                self.err(p.typeref.span, f"{show_type(p.typeref)}: expected type to be a struct")

    # -- tables: LPM keys, direct meters ------------------------------------
    def control(self, c: A.ControlDecl) -> None:
        tables = [x for x in c.locals if isinstance(x, A.TableDecl)]
        meters_used: set[int] = set()
        for t in tables:
            lpm = [k for k in t.keys if k.match_kind == "lpm"]
            if len(lpm) > 1:
                self.err(name_span(t), f"multiple LPM keys in table {c.name}.{t.name} not supported")
            m = t.meters
            if isinstance(m, A.Instantiation) and _extern_name(m) == "direct_meter":
                meters_used.add(id(m))
                if not any(_calls_read(a.decl, m) for a in t.actions if a.decl is not None):
                    self.err(name_span(t), f"{c.name}.{t.name}: table with direct meter {c.name}.{m.name} "
                             "must have at least one action with a read method call")
        for x in c.locals:
            if isinstance(x, A.Instantiation) and _extern_name(x) == "direct_meter" and id(x) not in meters_used:
                self.err(name_span(x), f"{c.name}.{x.name}: direct meter is not associated with any "
                         "table via 'meters' table property")

    # -- a parser must be able to finish -------------------------------------
    def parser_reaches_end(self, p: A.ParserDecl) -> None:
        graph: dict[str, set[str]] = {}
        for s in p.states:
            nxt: set[str] = set()
            tr = s.transition
            if tr is not None:
                if tr.state:
                    nxt.add(tr.state)
                if tr.select is not None:
                    nxt.update(c.state for c in tr.select.cases)
            graph[s.name] = nxt
        seen, todo = set(), ["start"]
        while todo:
            s = todo.pop()
            if s in seen:
                continue
            seen.add(s)
            todo.extend(graph.get(s, ()))
        if "start" in graph and not ({"accept", "reject"} & seen):
            self.err(name_span(p), f"parser {p.name}: Parser never reaches accept or reject state")

    # -- expressions: shifts, switch in actions, structs written by externs --
    def walk_expressions(self, user: list[A.Decl]) -> None:
        # A local initialised with a shift and never assigned again is
        # propagated into its uses by p4c before the back end checks the
        # shift, so p4c reports it at each use: find those uses.
        init_of: dict[int, A.VarDecl] = {}
        uses: dict[int, list[A.PathExpr]] = {}
        assigned: set[int] = set()
        for n, _ in _walk(user, _Ctx()):
            if isinstance(n, A.DeclStmt) and isinstance(n.decl, A.VarDecl) and n.decl.init is not None:
                init_of[id(n.decl.init)] = n.decl
            elif isinstance(n, A.AssignStmt) and isinstance(n.lhs, A.PathExpr):
                assigned.add(id(n.lhs.ref))
            elif isinstance(n, A.PathExpr) and isinstance(n.ref, A.VarDecl):
                uses.setdefault(id(n.ref), []).append(n)
        for n, ctx in _walk(user, _Ctx()):
            if isinstance(n, A.Binary) and n.op in ("<<", ">>"):
                if isinstance(n.left, A.IntLit) and n.left.value == 0:
                    continue  # p4c folds 0 << e to 0 before the back end sees it
                msg = self.shift_problem(n)
                if msg is None:
                    continue
                var = init_of.get(id(n))
                if var is not None and id(var) not in assigned and uses.get(id(var)):
                    for u in uses[id(var)]:
                        self.err(u.span, msg)
                else:
                    self.err(expr_span(n), msg)
            elif isinstance(n, A.SwitchStmt) and ctx.action is not None:
                self.err(n.span, "SwitchStatement: switch statements not supported in actions on this target")
            elif isinstance(n, A.MethodCall):
                self.call(n)

    def shift_problem(self, e: A.Binary) -> Optional[str]:
        amount = e.right
        t = amount.type
        if isinstance(amount, A.IntLit) or isinstance(t, T.IntType):
            value = amount.value if isinstance(amount, A.IntLit) else None
            if value is not None and value > (1 << MAX_SHIFT_BITS):
                return f"{show(e)}: shift amount limited to {1 << MAX_SHIFT_BITS} on this target"
            return None
        if isinstance(t, (T.NewType, T.EnumType)):
            self.err(amount.span, f"{show(amount)}: The right operand of shift must be either an expression "
                     "of type bit<S> or a compile-time known value that is a non-negative integer, "
                     f"but is {getattr(t, 'name', '?')}")
            return None
        t = _underlying(t)
        if isinstance(t, T.BitsType) and t.width > MAX_SHIFT_BITS:
            return f"{show(e)}: shift amount limited to {MAX_SHIFT_BITS} bits on this target"
        return None

    def call(self, n: A.MethodCall) -> None:
        f = n.func
        if n.kind == "extern_function":
            decl = n.target if isinstance(n.target, A.ExternFunctionDecl) else getattr(f, "ref", None)
            if isinstance(decl, A.ExternFunctionDecl) and not _is_system(decl.span):
                self.err(name_span(decl), f"{decl.name}: unknown extern function")
            return
        if isinstance(f, A.Member) and f.name == "read":
            inst = getattr(f.expr, "ref", None)
            if isinstance(inst, A.Instantiation) and _extern_name(inst) == "register" and n.args:
                arg = n.args[0].value
                if isinstance(_underlying(arg.type), (T.StructType, T.HeaderType)):
                    self.err(arg.span, f"{show(arg)}: writing to a structure is not supported on this target")

    # -- two actions with one control-plane name in one control ---------------
    def control_plane_names(self, user: list[A.Decl]) -> None:
        """BMv2's JSON names a control's actions by control-plane name, so two
        different actions used by one control may not share one (p4c stops
        on it).  Identical names in different controls are fine."""
        for c in user:
            if not isinstance(c, A.ControlDecl):
                continue
            used: list[A.ActionDecl] = [x for x in c.locals if isinstance(x, A.ActionDecl)]
            for n, _ in _walk([c.locals, c.body], _Ctx()):
                ref = n.decl if isinstance(n, A.ActionRef) else getattr(n, "target", None)
                if isinstance(ref, A.ActionDecl) and all(ref is not u for u in used):
                    used.append(ref)
            seen: dict[str, A.ActionDecl] = {}
            for a in used:
                full = _cp_name(a, c)
                prev = seen.get(full)
                if prev is not None and prev is not a:
                    self.err(name_span(a), f"{a.name}: control-plane name {full} is already used by "
                             f"action {prev.name} in {c.name}")
                else:
                    seen[full] = a


def _cp_name(a: A.ActionDecl, c: A.ControlDecl) -> str:
    anno = A.find_annotation(a.annotations, "name")
    name = anno.string_arg() if anno is not None else None
    local = any(x is a for x in c.locals)
    prefix = f"{c.name}." if local else ""
    if name is None:
        return f"{prefix}{a.name}"
    return name[1:] if name.startswith(".") else f"{prefix}{name}"


def show_type(tr: A.TypeRef) -> str:
    return getattr(tr, "name", None) or _type_name(tr.resolved)


def _extern_name(inst: A.Instantiation) -> str:
    t = inst.typeref.resolved
    if isinstance(t, T.ExternType):
        return t.decl.name
    return getattr(inst.typeref, "name", "")


def _calls_read(action: Optional[A.ActionDecl], meter: A.Instantiation) -> bool:
    if action is None:
        return False
    for n, _ in _walk(action.body, _Ctx()):
        if isinstance(n, A.MethodCall) and isinstance(n.func, A.Member) and n.func.name == "read":
            if getattr(n.func.expr, "ref", None) is meter:
                return True
    return False


def bmv2_errors(program: A.Program) -> list[P4Error]:
    """Every BMv2 back-end restriction ``program`` breaks (empty: p4c-bm2-ss
    would accept it, as far as these rules go)."""
    return _Checker(program).run()
