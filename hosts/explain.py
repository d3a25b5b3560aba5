"""What runs for a profile: each hook of a protocol's cores with the rules that wrap it.

A composed endpoint class is ``RuleMixinA, RuleMixinB, ..., Core``
(:meth:`p4mcc.hosts.rules.RuleBook.compose`), so the code that runs for one
hook is spread over as many classes as there are rules.  This module reads
that composition back as a table, one row per hook a rule changes (the
methods the core declares with ``@hook``): the rules in the order they run
(outermost first), then ``paper``.  A rule whose method never calls ``super()`` ends the chain there,
and the row says so: what sits below it does not run.

``p4mcc host send --proto P --profile X --explain`` prints the table, and
each protocol has it on a page of its own (``docs/protocols/<p>-hooks.md``,
``python -m p4mcc.hosts.explain --write``), checked against the code by a
drift test.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from p4mcc.hosts import registry
from p4mcc.hosts.rules import PROFILE_NAMES, is_method, declared_hooks, rule_methods

PAPER_LINK = "paper"
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class HookRow:
    """One hook of one role: who runs, outermost first."""

    role: str
    hook: str
    chain: tuple[str, ...]
    """Rule names (outermost first), then ``paper`` where the core defines the hook."""
    stops: str | None
    """The rule whose method does not call ``super()`` (what is below it does not run), or None."""


@lru_cache(maxsize=None)
def _calls_super(func: object) -> bool:
    """Whether a method's body calls ``super()`` (read from its source)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super"
               for n in ast.walk(tree))


def hook_rows(core: type, book_rules: dict[str, type]) -> list[HookRow]:
    """The rows for one core class under the rules ``book_rules`` (name -> mixin, outermost first).

    One row per hook the core declares (:func:`~p4mcc.hosts.rules.hook`) that
    a rule overrides, and one per method of the rules' own that more than one
    of their classes defines (a rule building on another's helper).  The
    chain follows the composed class's MRO, so a helper mixin that two rules
    share appears once, where it runs, named ``(HelperClass)``."""
    role = str(getattr(core, "role", core.__name__))
    if not book_rules:
        return []
    composed = type(f"{core.__name__}[explain]", (*book_rules.values(), core), {})
    owner = {mixin: name for name, mixin in book_rules.items()}
    defined = rule_methods(composed, core)
    declared = declared_hooks(core)
    rule_classes = [k for k in composed.__mro__[1:] if k not in core.__mro__ and k is not object]
    hooks = sorted(n for n, classes in defined.items()
                   if n in declared or len([k for k in classes if k is not composed]) > 1)
    rows = []
    for hook in hooks:
        chain: list[str] = []
        stops = None
        for klass in rule_classes:
            func = vars(klass).get(hook)
            if func is None or not is_method(func):
                continue
            chain.append(owner.get(klass, f"({klass.__name__})"))
            if stops is None and inspect.isfunction(func) and not _calls_super(func):
                stops = chain[-1]
        if hook in declared:
            chain.append(PAPER_LINK)
        ends = stops is not None and chain.index(stops) + 1 < len(chain)
        rows.append(HookRow(role, hook, tuple(chain), stops if ends else None))
    return rows


def hooks_declared(protocol: str) -> dict[str, frozenset[str]]:
    """Each role's declared hooks (the core's ``@hook`` methods), sender first."""
    proto = registry.get(protocol)
    return {str(f.role): declared_hooks(f) for f in (proto.sender_factory, proto.receiver_factory)
            if isinstance(f, type)}


def explain(protocol: str, profile: str, rules: tuple[str, ...] | None = None) -> list[HookRow]:
    """Every hook a rule changes in ``protocol``'s ``profile`` (or the effective list ``rules``),
    for the sender and the receiver."""
    proto = registry.get(protocol)
    book = proto.rules
    names = set(book.resolve(profile) if rules is None else rules)
    rows: list[HookRow] = []
    for factory in (proto.sender_factory, proto.receiver_factory):
        if not isinstance(factory, type):
            continue
        role = getattr(factory, "role", None)
        active = {r.name: r.mixins[role] for r in book.rules if r.name in names and role in r.mixins}
        rows += hook_rows(factory, active)
    return rows


def rules_of(row: HookRow) -> tuple[str, ...]:
    """The rules in a row's chain (not ``paper``, not a shared helper class)."""
    return tuple(c for c in row.chain if c != PAPER_LINK and not c.startswith("("))


def crowded(protocol: str, profile: str, more_than: int = 3) -> list[HookRow]:
    """The hooks of ``protocol``'s ``profile`` that more than ``more_than`` rules wrap, most first:
    where stacked overrides are hardest to read, the candidates for one named decision point."""
    rows = [r for r in explain(protocol, profile) if len(rules_of(r)) > more_than]
    return sorted(rows, key=lambda r: (-len(rules_of(r)), r.role, r.hook))


def explain_lines(protocol: str, profile: str, rules: tuple[str, ...] | None = None) -> list[str]:
    """``--explain``'s text: one line per hook, the chain outermost first."""
    lines = [f"{protocol} ({profile}): each hook a rule changes, outermost first"]
    declared = hooks_declared(protocol)
    rows = explain(protocol, profile, rules)
    role = None
    for row in rows:
        if row.role != role:
            role = row.role
            wrapped = sum(1 for r in rows if r.role == role and r.hook in declared.get(role, ()))
            lines.append(f"{role}: {wrapped} of its {len(declared.get(role, ()))} declared hooks wrapped")
        text = " -> ".join(row.chain)
        if row.stops:
            text += f"   ({row.stops} does not call super(): what is below it does not run)"
        lines.append(f"  {row.hook}: {text}")
    if len(lines) == 1:
        lines.append("  no rule: the paper's cores run as they are")
    return lines


def explain_markdown(protocol: str) -> str:
    """The generated section of a protocol page: one table per profile."""
    declared = hooks_declared(protocol)
    out = ["Hooks the cores declare (`@hook`): "
           + ", ".join(f"{role} {len(names)}" for role, names in declared.items()) + ".", ""]
    for profile in PROFILE_NAMES:
        if profile not in registry.get(protocol).rules.profiles:
            continue
        rows = explain(protocol, profile)
        out.append(f"**{profile}**" + ("" if rows else ": no rule, the paper's cores run as they are."))
        if rows:
            out += ["", "| role | hook | runs (outermost first) |", "|---|---|---|"]
            for r in rows:
                chain = " → ".join(f"`{c}`" for c in r.chain)
                if r.stops:
                    chain += f" (`{r.stops}` ends the chain)"
                out.append(f"| {r.role} | `{r.hook}` | {chain} |")
        out.append("")
    return "\n".join(out).strip() + "\n"


SECTION = "hooks"
BEGIN = f"<!-- generated:{SECTION} begin -->"
END = f"<!-- generated:{SECTION} end -->"


def page_of(protocol: str) -> Path:
    """The protocol's hook page (beside its protocol page, which links to it)."""
    return ROOT / "docs" / "protocols" / f"{protocol}-hooks.md"


def section_text(protocol: str) -> str:
    """The block between the markers, as ``--write`` puts it (no stamp: it is code, not a measurement)."""
    return f"{BEGIN}\n{explain_markdown(protocol)}{END}"


def write(protocol: str) -> bool:
    """Write the protocol's hook page; True if it changed."""
    page = page_of(protocol)
    text = page.read_text() if page.exists() else ""
    new = (f"# {protocol.upper()}: what runs, per hook\n\nGenerated from the code by "
           "`python -m p4mcc.hosts.explain --write` (the same table as "
           f"`p4mcc host send --proto {protocol} --profile X --explain`); the rules are on "
           f"[{protocol}.md]({protocol}.md).\n\n" + section_text(protocol) + "\n")
    if new != text:
        page.write_text(new)
    return new != text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the tables into docs/protocols/*.md")
    ap.add_argument("--proto", choices=registry.names())
    ap.add_argument("--profile", default="default", choices=PROFILE_NAMES)
    ap.add_argument("--crowded", type=int, metavar="N",
                    help="list, per protocol and profile, the hooks more than N rules wrap")
    args = ap.parse_args(argv)
    protos = [args.proto] if args.proto else list(registry.names())
    if args.crowded is not None:
        for p in protos:
            for profile in registry.get(p).rules.profiles:
                for r in crowded(p, profile, args.crowded):
                    print(f"{p} {profile} {r.role} {r.hook}: {len(rules_of(r))} rules ({', '.join(rules_of(r))})")
        return 0
    if args.write:
        for p in protos:
            print(f"{page_of(p).relative_to(ROOT)}: {'written' if write(p) else 'unchanged'}")
        return 0
    for p in protos:
        print("\n".join(explain_lines(p, args.profile)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
