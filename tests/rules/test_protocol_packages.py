"""What every protocol package owes issue 60's structure, checked once for all five.

- ``paper`` is the bare cores: no rule, the registry builds the core classes;
- the cores hold no branch that only a parameter decides (a variant is a
  named rule, never a switch the core reads); a test comparing the state
  with a parameter is the paper's threshold and is allowed;
- one package shape: ``constants``, ``params``, ``sender``, ``receiver``,
  ``rules`` (and ``agent`` where sender and receiver share a base);
- at most 12 user-facing parameters;
- no two rules define a class constant of one name (a composed class sees
  every rule's constants, so the outermost one's value would win silently).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from p4mcc.hosts import registry

PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
MAX_USER_PARAMS = 12
NOT_CORE = {"rules", "params", "__init__"}
#: Parameters that describe the session's surroundings, not a variant of the
#: algorithm: MTCP's tree of agents and whether the switches fold its
#: summaries (set by the scenario; the parameter only overrides it for a core
#: driven outside one).
ENVIRONMENT = {"mtcp": {"tree", "assisted"}}
#: Every package's modules; ``agent`` (a base the sender and receiver share) and MTCP's ``tree``
#: (its logical tree of agents) only where named.
SHAPE = {"__init__", "constants", "params", "sender", "receiver", "rules"}
EXTRA = {"mtcp": {"agent", "tree"}}


def core_modules(proto: str) -> list[ModuleType]:
    pkg = importlib.import_module(f"p4mcc.hosts.{proto}")
    return [importlib.import_module(f"{pkg.__name__}.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)
            if m.name not in NOT_CORE]


def param_switches(source: str, where: str, fields: set[str]) -> list[str]:
    """Every ``if``/``while``/conditional-expression test that only parameters decide."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            attrs = [a for a in ast.walk(node.test) if isinstance(a, ast.Attribute)]
            params = [a for a in attrs if a.attr in fields]
            state = [a for a in attrs if a.attr not in fields and a.attr != "p"]
            state += [n for n in ast.walk(node.test) if isinstance(n, ast.Name) and n.id != "self"]
            calls = [c for c in ast.walk(node.test) if isinstance(c, ast.Call)]
            if params and not state and not calls:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node.test)}")
    return found


def test_the_switch_finder_tells_a_switch_from_a_threshold() -> None:
    src = ("def f(self):\n    x = 1 if self.p.n_extra else 2\n    if self.p.packet_size > 1:\n        pass\n"
           "    if self.W < self.p.max_window:\n        pass\n")
    found = param_switches(src, "probe", {"n_extra", "packet_size", "max_window"})
    assert [f.split(": ", 1)[1] for f in found] == ["self.p.packet_size > 1", "self.p.n_extra"]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_paper_is_the_bare_cores(proto: str) -> None:
    entry = registry.get(proto)
    assert entry.resolve_rules("paper") == ()
    for core in (entry.sender_factory, entry.receiver_factory):
        assert entry.rules.compose(core, ()) is core


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_the_cores_branch_on_no_parameter(proto: str) -> None:
    fields = {f.name for f in dataclasses.fields(registry.get(proto).params_type)} - ENVIRONMENT.get(proto, set())
    modules = core_modules(proto)
    assert modules, f"hosts.{proto} has no core module"
    found = [s for m in modules for s in param_switches(inspect.getsource(m), m.__name__, fields)]
    assert found == []


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_every_package_has_one_shape(proto: str) -> None:
    pkg = importlib.import_module(f"p4mcc.hosts.{proto}")
    names = {m.name for m in pkgutil.iter_modules(pkg.__path__)} | {"__init__"}
    assert names == SHAPE | EXTRA.get(proto, set())


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_at_most_twelve_user_parameters(proto: str) -> None:
    assert len(dataclasses.fields(registry.get(proto).params_type)) <= MAX_USER_PARAMS


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_rule_constants_do_not_shadow_each_other(proto: str) -> None:
    """Two rules may share a constant's name only with one value, or when one
    rule builds on the other (``requires``) and refines its constant."""
    book = registry.get(proto).rules
    seen: dict[str, tuple[str, object]] = {}
    for rule in book.rules:
        for mixin in set(rule.mixins.values()):
            for name, value in vars(mixin).items():
                if not name.isupper() or name == "COUNTERS":
                    continue
                other, before = seen.setdefault(name, (rule.name, value))
                related = other in rule.requires or rule.name in book.get(other).requires
                assert other == rule.name or before == value or related, f"{name} in {rule.name} and {other}"
