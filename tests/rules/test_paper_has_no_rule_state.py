"""The ``paper`` composition carries nothing that only a rule reads.

A rule keeps its own state: it sets it up in its own ``__init__`` or hook and
calls ``super()``.  So for every protocol the paper's cores (the classes the
``paper`` profile runs) hold:

- no attribute that only rules read: every attribute a core sets, and every
  field of a record it keeps (RLA's per-receiver ``_Receiver``, ...), is read
  by code that is not a rules module;
- no timer whose only work is hooks that do nothing in the paper (a rule's
  periodic work runs on a timer the rule sets);
- no declared hook that only rules call: the core (or the kit that drives
  it) calls each of its hooks.

The walk is over source: the protocol's core modules, read with :mod:`ast`.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import lru_cache
from pathlib import Path

import pytest

from p4mcc.hosts import registry
from p4mcc.hosts.rules import declared_hooks

PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
ROOT = Path(__file__).resolve().parents[2]
CORE_MODULES = ("sender", "receiver", "agent")
#: Folders whose code drives or reads a host agent (rules modules are set apart below); the rest
#: of the project never touches an agent's attributes, and its names would only collide.
RUNTIME = ("hosts", "netsim", "reporting", "emulation")
#: Methods that fill or empty a container: ``self.x.append(v)`` writes ``x``, it does not read it.
MUTATORS = {"append", "appendleft", "extend", "clear", "add", "discard", "remove", "pop", "popleft",
            "update", "setdefault"}
TIMER_CALLS = {"set_timer", "cancel_timer"}
#: What the cores still keep for rules alone, each to move into the rule that reads it (the test
#: fails when one is added, and when one is moved without leaving this list).
KNOWN_STATE: dict[str, set[str]] = {
    "tfmcc": {"_last_tick", "ss_step_at"},  # pacing_offset's and slowstart_tick's clocks
    "webrc": {"events_since_join"},  # join_experiment's count
    "rla": {"cut_seq", "last_heard", "mcast_at"},  # one_cut_per_window's; silence rules'; one_repair_per_loss's
    "mtcp": {"unacked"},  # thin_acks' count
    "vlmcc": {"cut_seq", "last_flags", "round_rtt_n", "round_rtt_sum"},  # competing rules' and leader_hold's
}
KNOWN_HOOKS: dict[str, set[str]] = {
    "rla": {"_forget",  # the rules that drop or re-admit receivers
            "paced_srtt"},  # the round trip the window is sent per: what the rules' rate conversions read
    "mtcp": {"paced_rtd"},  # likewise (rtt_fair_increase reads it; acker_clock says the acker's)
}


def core_paths(proto: str) -> list[Path]:
    return [p for m in CORE_MODULES if (p := ROOT / "hosts" / proto / f"{m}.py").exists()]


@lru_cache(maxsize=None)
def loads(proto: str) -> tuple[frozenset[str], frozenset[str]]:
    """Attribute names read (or named as strings) by code that runs and is not a rules module, and
    by ``proto``'s rules; the other protocols' packages are left out (their names are their own)."""
    outside: set[str] = set()
    rules: set[str] = set()
    others = {ROOT / "hosts" / p for p in PROTOCOLS if p != proto}
    for folder in RUNTIME:
        for path in (ROOT / folder).rglob("*.py"):
            if path.parent in others:
                continue
            into = rules if path == ROOT / "hosts" / proto / "rules.py" else outside
            tree = ast.parse(path.read_text())
            written = {id(n.value) for n in ast.walk(tree)  # self.x.append(...), self.x[k] = v
                       if (isinstance(n, ast.Attribute) and n.attr in MUTATORS)
                       or (isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)))}
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in written:
                    into.add(node.attr)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                    into.add(node.value)  # getattr(self, "name") and COUNTERS read by name
    return frozenset(outside), frozenset(rules)


def state_of(path: Path) -> set[str]:
    """What a core module's classes keep: ``self.x = ...`` targets and dataclass record fields."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for el in ast.walk(t):
                    if (isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name)
                            and el.value.id == "self" and isinstance(el.ctx, ast.Store)):
                        names.add(el.attr)
        if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
            names |= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return names


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_no_attribute_of_the_paper_cores_is_read_only_by_rules(proto: str) -> None:
    outside, rules = loads(proto)
    kept = set().union(*(state_of(p) for p in core_paths(proto)))
    only_rules = {n for n in kept if n in rules and n not in outside}
    assert only_rules == KNOWN_STATE.get(proto, set()), f"{proto}: the paper's cores keep state only rules read"


def _body(func: object) -> list[ast.stmt]:
    fn = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]  # type: ignore[arg-type]
    assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def does_nothing(core: type, name: str) -> bool:
    """Whether the core's ``name`` is a method that does nothing: no statement, ``pass``, or a
    ``return`` of a constant or of one of its arguments."""
    func = getattr(core, name, None)
    if not inspect.isfunction(func):
        return False
    body = _body(func)
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Return)
                                          and (s.value is None or isinstance(s.value, (ast.Constant, ast.Name))))
               for s in body)


def _self_call(node: ast.AST) -> str | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
        return node.func.attr
    return None


def does_work(core: type, stmts: list[ast.stmt]) -> bool:
    """Whether these statements do anything beyond calling methods that do nothing and re-arming
    timers (a branch under such a method's result never runs)."""
    for s in stmts:
        if isinstance(s, ast.Expr):
            called = _self_call(s.value)
            if called in TIMER_CALLS or (called is not None and does_nothing(core, called)):
                continue
            return True
        if isinstance(s, ast.If):
            called = _self_call(s.test)
            if called is not None and does_nothing(core, called):
                continue  # its result is the paper's constant: treat as never taken
            if isinstance(s.test, ast.UnaryOp) or isinstance(s.test, ast.Attribute):
                if does_work(core, s.body) or does_work(core, s.orelse):
                    return True
                continue
            return True
        if isinstance(s, ast.Pass):
            continue
        return True
    return False


def timer_handlers(core: type) -> dict[str, list[ast.stmt]]:
    """Each timer the core's ``on_timer`` dispatches by name, with what it runs."""
    found: dict[str, list[ast.stmt]] = {}
    body = _body(core.on_timer)
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.Eq):
            lit = node.test.comparators[0]
            if isinstance(lit, ast.Constant) and isinstance(lit.value, str):
                found[lit.value] = node.body
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Attribute):
                    found[k.value] = _body(getattr(core, v.attr))
    for name, func in inspect.getmembers(core, inspect.isfunction):
        if name.startswith("_timer_"):
            found[name.removeprefix("_timer_")] = _body(func)
    return found


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_no_timer_of_the_paper_cores_runs_only_hooks_that_do_nothing(proto: str) -> None:
    entry = registry.get(proto)
    for core in (entry.sender_factory, entry.receiver_factory):
        idle = sorted(n for n, stmts in timer_handlers(core).items() if not does_work(core, stmts))
        assert idle == [], f"{core.__name__}: timers whose only work is hooks that do nothing in the paper: {idle}"


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_every_hook_the_paper_cores_declare_is_called_by_them(proto: str) -> None:
    outside, _rules = loads(proto)
    entry = registry.get(proto)
    uncalled: set[str] = set()
    for core in (entry.sender_factory, entry.receiver_factory):
        own = {h for h in declared_hooks(core)  # the kit's hooks (send, _echo_stamp, ...) are the kit's
               if next(k for k in core.__mro__ if h in vars(k)).__module__.startswith(f"p4mcc.hosts.{proto}.")}
        uncalled |= {h for h in own if h not in outside}
    assert uncalled == KNOWN_HOOKS.get(proto, set()), f"{proto}: hooks only rules call"


def test_the_checks_see_the_state_timers_and_hooks_a_rule_would_leave_behind() -> None:
    """The three checks fire on a core that keeps a rule's state, runs a rule's timer and declares
    a hook nobody calls (written here, not in the project)."""
    from p4mcc.hosts.rules import hook

    class Core:
        def __init__(self) -> None:
            self.gap = None  # only a rule would read it

        def on_timer(self, name: str, now: float) -> None:
            if name == "tick":
                self._housekeeping(now)
                if self._drop(now):
                    self.send_all(now)
                if not self.done:
                    self.set_timer("tick", now + 0.1)
            elif name == "rto":
                self.retransmit(now)

        @hook
        def _housekeeping(self, now: float) -> None:
            """Nothing in the paper."""

        @hook
        def _drop(self, now: float) -> bool:
            return False

    assert set(timer_handlers(Core)) == {"tick", "rto"}
    assert not does_work(Core, timer_handlers(Core)["tick"])
    assert does_work(Core, timer_handlers(Core)["rto"])
    assert declared_hooks(Core) == {"_housekeeping", "_drop"}
    assert "gap" in state_of(Path(__file__))
