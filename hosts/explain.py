"""What runs for a profile: each hook of a protocol's cores with the rules that wrap it.

A composed endpoint class is ``RuleMixinA, RuleMixinB, ..., Core``
(:meth:`p4mcc.hosts.rules.RuleBook.compose`), so the code that runs for one
hook is spread over as many classes as there are rules.  This module reads
that composition back as a table, one row per hook a rule changes (the
methods the core declares with ``@hook``): the rules in the order they run
(outermost first), then ``paper``.  A rule whose method never calls ``super()`` ends the chain there,
and the row says so: what sits below it does not run.  A hook of a slot
(:func:`p4mcc.hosts.rules.slot`) ends in the slot's occupant: the rule that
holds it, or ``paper``; the row names the slot, and the occupant is not
counted among the rules that wrap the hook.

After a role's hooks come the rules' own timers (``@timer``: a row per timer
name and the rule that owns it) and their actions at start (``@at_start``:
``paper``'s ``on_start``, then the rules' actions in the order they run).

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
from p4mcc.hosts.rules import (PROFILE_NAMES, is_method, declared_hooks, declared_slots, rule_methods,
                               rule_timers)

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
    slot: str | None = None
    """The slot the hook belongs to, or None."""
    occupant: str | None = None
    """The rule that holds the slot (the last rule of ``chain``); None: the paper holds it."""
    paper_occupant: str | None = None
    """The name of the paper's way of making the slot's decision."""


@lru_cache(maxsize=None)
def _calls_super(func: object) -> bool:
    """Whether a method's body calls ``super()`` (read from its source)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super"
               for n in ast.walk(tree))


def hook_rows(core: type, book_rules: dict[str, type], seats: dict[str, str] | None = None) -> list[HookRow]:
    """The rows for one core class under the rules ``book_rules`` (name -> mixin, outermost first);
    ``seats``: rule name -> the slot it occupies.

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
    slot_of = {m: (name, paper) for name, (paper, methods) in declared_slots(core).items() for m in methods}
    rows = []
    for hook in hooks:
        chain: list[str] = []
        stops = None
        slot, paper = slot_of.get(hook, (None, None))
        occupant = None
        for klass in rule_classes:
            func = vars(klass).get(hook)
            if func is None or not is_method(func):
                continue
            chain.append(owner.get(klass, f"({klass.__name__})"))
            if slot is not None and (seats or {}).get(chain[-1]) == slot:
                occupant = chain[-1]
            if stops is None and inspect.isfunction(func) and not _calls_super(func):
                stops = chain[-1]
        if hook in declared:
            chain.append(PAPER_LINK)
        ends = stops is not None and chain.index(stops) + 1 < len(chain)
        if ends and stops == occupant:  # an occupant replaces the paper's way: it ends the chain by design
            chain, ends = chain[:chain.index(stops) + 1], False
        rows.append(HookRow(role, hook, tuple(chain), stops if ends else None, slot, occupant, paper))
    return rows


def hooks_declared(protocol: str) -> dict[str, frozenset[str]]:
    """Each role's declared hooks (the core's ``@hook`` methods), sender first."""
    proto = registry.get(protocol)
    return {str(f.role): declared_hooks(f) for f in (proto.sender_factory, proto.receiver_factory)
            if isinstance(f, type)}


def slots_declared(protocol: str) -> dict[str, tuple[str, frozenset[str]]]:
    """The slots the protocol's cores declare: slot name -> (the paper's occupant, its methods)."""
    proto = registry.get(protocol)
    found: dict[str, tuple[str, frozenset[str]]] = {}
    for f in (proto.sender_factory, proto.receiver_factory):
        if isinstance(f, type):
            for name, (paper, methods) in declared_slots(f).items():
                found[name] = (paper, found.get(name, (paper, frozenset()))[1] | methods)
    return found


def explain(protocol: str, profile: str, rules: tuple[str, ...] | None = None) -> list[HookRow]:
    """Every hook a rule changes in ``protocol``'s ``profile`` (or the effective list ``rules``),
    for the sender and the receiver."""
    book = registry.get(protocol).rules
    rows: list[HookRow] = []
    for factory, role, active in _roles(protocol, profile, rules):
        rows += hook_rows(factory, dict(active), {r.name: r.slot for r in book.rules if r.slot is not None})
    return rows


def _roles(protocol: str, profile: str,
           rules: tuple[str, ...] | None) -> list[tuple[type, str, list[tuple[str, type]]]]:
    """Per role of ``protocol`` (sender first): its core class, the role's name and the
    (rule, mixin) pairs of ``profile`` (or of the effective list ``rules``) that act in it."""
    proto = registry.get(protocol)
    book = proto.rules
    names = set(book.resolve(profile) if rules is None else rules)
    out = []
    for factory in (proto.sender_factory, proto.receiver_factory):
        if not isinstance(factory, type):
            continue
        role = str(getattr(factory, "role", factory.__name__))
        out.append((factory, role, [(r.name, r.mixins[role]) for r in book.rules
                                    if r.name in names and role in r.mixins]))
    return out


@dataclass(frozen=True)
class EntryRow:
    """What the rules of one role add to a driver entry point: a timer of their own
    (``timer``: its name, ``chain``: the rule that owns it) or their actions at start
    (``timer`` None, ``chain``: ``paper``, then the rules in the order they act)."""

    role: str
    timer: str | None
    chain: tuple[str, ...]

    @property
    def label(self) -> str:
        """The row's name in the tables: ``timer NAME`` or ``at start``."""
        return "at start" if self.timer is None else f"timer {self.timer}"


def entry_rows(protocol: str, profile: str, rules: tuple[str, ...] | None = None) -> list[EntryRow]:
    """The rules' own timers (by name) and start actions in ``protocol``'s ``profile`` (or the
    effective list ``rules``), sender first (:func:`p4mcc.hosts.rules.timer`, ``at_start``)."""
    rows: list[EntryRow] = []
    for factory, role, active in _roles(protocol, profile, rules):
        found = rule_timers(factory, active)

        def owner(klass: type) -> str:
            return next((n for n, m in active if m is klass), f"({klass.__name__})")
        rows += [EntryRow(role, t, (owner(found.owners[t]),)) for t in sorted(found.timers)]
        if found.starts:
            rows.append(EntryRow(role, None, (PAPER_LINK, *map(owner, found.start_owners))))
    return rows


def rules_of(row: HookRow) -> tuple[str, ...]:
    """The rules that wrap a row's hook (not ``paper``, not a shared helper class, not the slot's occupant)."""
    return tuple(c for c in row.chain if c != PAPER_LINK and not c.startswith("(") and c != row.occupant)


def slot_note(row: HookRow) -> str:
    """What a slot's row says of its occupant ("" for a hook of no slot)."""
    if row.slot is None:
        return ""
    if row.occupant is None:
        return f"slot {row.slot}: the paper's {row.paper_occupant}"
    return f"slot {row.slot}: {row.occupant} in place of the paper's {row.paper_occupant}"


def crowded(protocol: str, profile: str, more_than: int = 3) -> list[HookRow]:
    """The hooks of ``protocol``'s ``profile`` that more than ``more_than`` rules wrap, most first:
    where stacked overrides are hardest to read, the candidates for a slot or a finer hook."""
    rows = [r for r in explain(protocol, profile) if len(rules_of(r)) > more_than]
    return sorted(rows, key=lambda r: (-len(rules_of(r)), r.role, r.hook))


def explain_lines(protocol: str, profile: str, rules: tuple[str, ...] | None = None) -> list[str]:
    """``--explain``'s text: one line per hook, the chain outermost first."""
    lines = [f"{protocol} ({profile}): each hook a rule changes, outermost first"]
    declared = hooks_declared(protocol)
    rows = explain(protocol, profile, rules)
    entries = entry_rows(protocol, profile, rules)
    for role in dict.fromkeys([r.role for r in rows] + [e.role for e in entries]):
        mine = [r for r in rows if r.role == role]
        wrapped = sum(1 for r in mine if r.hook in declared.get(role, ()))
        lines.append(f"{role}: {wrapped} of its {len(declared.get(role, ()))} declared hooks wrapped")
        for row in mine:
            text = " -> ".join(row.chain)
            if row.stops:
                text += f"   ({row.stops} does not call super(): what is below it does not run)"
            if row.slot:
                text += f"   ({slot_note(row)})"
            lines.append(f"  {row.hook}: {text}")
        for e in entries:
            if e.role == role:
                lines.append(f"  {e.label}: {' -> '.join(e.chain)}")
    if len(lines) == 1:
        lines.append("  no rule: the paper's cores run as they are")
    return lines


def explain_markdown(protocol: str) -> str:
    """The generated section of a protocol page: one table per profile."""
    declared = hooks_declared(protocol)
    out = ["Hooks the cores declare (`@hook`): "
           + ", ".join(f"{role} {len(names)}" for role, names in declared.items()) + "."]
    slots = slots_declared(protocol)
    if slots:
        out[0] += " Slots (`@slot`, one occupant each): " + "; ".join(
            f"`{name}` ({', '.join(f'`{m}`' for m in sorted(methods))}; the paper's: `{paper}`)"
            for name, (paper, methods) in slots.items()) + "."
    out.append("")
    for profile in PROFILE_NAMES:
        if profile not in registry.get(protocol).rules.profiles:
            continue
        rows = explain(protocol, profile)
        entries = entry_rows(protocol, profile)
        out.append(f"**{profile}**" + ("" if rows or entries else ": no rule, the paper's cores run as they are."))
        if rows or entries:
            out += ["", "| role | hook | runs (outermost first) |", "|---|---|---|"]
            for role in dict.fromkeys([r.role for r in rows] + [e.role for e in entries]):
                for r in (r for r in rows if r.role == role):
                    chain = " → ".join(f"`{c}`" for c in r.chain)
                    if r.stops:
                        chain += f" (`{r.stops}` ends the chain)"
                    if r.slot:
                        who = f"`{r.occupant}` in place of" if r.occupant else "holds"
                        chain += f" (slot `{r.slot}`: {who} the paper's `{r.paper_occupant}`)"
                    out.append(f"| {r.role} | `{r.hook}` | {chain} |")
                for e in (e for e in entries if e.role == role):
                    if e.timer is None:
                        out.append(f"| {e.role} | at start | {' then '.join(f'`{c}`' for c in e.chain)} |")
                    else:
                        out.append(f"| {e.role} | timer `{e.timer}` | `{e.chain[0]}` (its own) |")
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
