"""Named rules and profiles: each protocol is its paper's algorithm plus named additions.

A protocol's core class is the published algorithm and nothing else.  Every
behaviour beyond the paper is a :class:`Rule`: one small mixin per role it
changes (``"tfmcc-sender"``, ``"tfmcc-receiver"``, ...), a one-line summary,
and its reason (an RFC section, or p4mcc's own measurement on the protocol's
page).  A core never asks whether a rule is on: the core declares the methods
a rule may change with :func:`hook`, the rule's mixin overrides the hook it
changes and calls ``super()`` (a mixin that overrides any other method of the
core is refused, :func:`check_overrides`), so the class that runs is the
composition ``RuleMixinA, RuleMixinB, ..., Core`` and reading the core tells
exactly what the paper does.  This is ns-3's "a variant is a type" and
aioquic's "choose an algorithm by name", applied per rule.

Rules that add to a hook chain: each wraps the hook and calls ``super()``.
Where rules would instead choose between ways of making one decision (MTCP's
congestion avoidance: the paper's Vegas or Reno), the core declares a
**slot** with :func:`slot` on the hooks that make it, naming the paper's way
as the slot's first occupant; a rule that replaces it registers with
``slot=NAME``.  A rule list holds at most one occupant per slot (two are
refused, naming both), and the occupant composes below every rule that wraps
the slot's hooks, so the wrappers add to whichever way was chosen.

The driver's entry points, ``on_start`` and ``on_timer``, stay the core's: a
rule never overrides them.  A rule that runs a timer of its own marks its
handler with :func:`timer` (the composed class sends that name to it, every
other name to the core's ``on_timer``; one owner per name, never a name the
core handles), and one that acts at start marks a method with
:func:`at_start` (run after the core's ``on_start``).  A rule that changes
what the core does on one of the core's timers wraps the hook the core's
``on_timer`` calls for it.

A :class:`RuleBook` lists a protocol's rules in the order they compose (the
first listed is outermost) and its profiles as data:

- ``paper``: the published algorithm, no rule;
- ``default``: paper plus the rules that earn their place;
- ``stamped``: default plus the rules that read the switch's congestion stamp
  (only where the protocol has such rules).

A session names a profile and may switch single rules on or off by name;
:meth:`RuleBook.resolve` turns that into the effective rule list, which the
results record.  Every protocol's rules module lists its rules one way, with a
:class:`Registrar`: ``@rule(name, summary, reason)`` above each mixin.

Example::

    class ToySender(SessionEndpoint[ToyParams], role="toy-sender"):
        @hook
        def _on_timeout(self, now: float) -> None: ...  # a rule may change this

    rule = Registrar("toy", reason="ours, see docs/protocols/toy.md#rules")

    @rule("halve_on_timeout", "no report for 4 RTTs halves the rate", "RFC 5348 4.4")
    class HalveOnTimeout(ToySender):
        def _on_timeout(self, now: float) -> None: ...  # calls super()

    book = rule.book(default=("halve_on_timeout",))  # paper: none; default: the listed rules
    names = book.resolve("paper", {"halve_on_timeout": True})
    sender_cls = book.compose(ToySender, names)
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

PAPER = "paper"
DEFAULT = "default"
STAMPED = "stamped"
PROFILE_NAMES = (PAPER, DEFAULT, STAMPED)
"""Every profile name a protocol may define; ``paper`` and ``default`` always exist."""


class RuleError(ValueError):
    """An unknown profile or rule name, or a rule list that does not hold together."""


M = TypeVar("M")
#: The attribute :func:`hook` sets on a hook's function.
HOOK_MARK = "__p4mcc_hook__"


def hook(method: M) -> M:
    """Declare a core's method a hook: the one kind of method a rule's mixin may override.

    Put it above the method (above ``@property`` too).  A rule that overrides
    a method of the core that is not a hook is refused when it is registered
    or composed (:func:`check_overrides`): what a rule can change is read off
    the core, not found by reading every rule.
    """
    setattr(_function(method), HOOK_MARK, True)
    return method


def _function(member: Any) -> Any:
    """The function behind a class member (a property's getter, a static or class method's function)."""
    return member.fget if isinstance(member, property) else getattr(member, "__func__", member)


#: The attribute :func:`slot` sets on a slot's hook: (slot name, the paper's occupant).
SLOT_MARK = "__p4mcc_slot__"


def slot(name: str, paper: str) -> Callable[[M], M]:
    """Declare a core's method a hook that is part of the slot ``name``: one decision that a rule
    may take over whole (``@rule(..., slot=name)``) instead of wrapping it.

    ``paper`` names the core's own way of deciding (the slot's occupant when no
    rule holds it); every method of one slot names the same.  Rules that do not
    occupy the slot may still wrap its methods (and call ``super()``): they run
    above the occupant, whichever it is.
    """
    def mark(method: M) -> M:
        setattr(_function(method), SLOT_MARK, (name, paper))
        return hook(method)
    return mark


#: The attribute :func:`timer` sets on a rule's timer handler: the timer's name.
TIMER_MARK = "__p4mcc_timer__"
#: The attribute :func:`at_start` sets on a rule's start action.
START_MARK = "__p4mcc_at_start__"
#: The driver's entry points into a core: the composition owns them, a rule never overrides them
#: (it owns a timer with :func:`timer` and acts at start with :func:`at_start`).
DRIVER_ENTRIES = ("on_start", "on_timer")


def timer(name: str) -> Callable[[M], M]:
    """Declare a rule's method ``(self, now)`` the handler of its own timer ``name``.

    The composed class sends timer ``name`` to this method and every other
    timer to the core's ``on_timer``, so a rule's timer is read off the rule
    and no rule passes the others' timers down a chain.  One rule per name,
    and never a name the core's ``on_timer`` handles (:func:`rule_timers`);
    a rule that changes what the core does on one of its own timers wraps
    the ``@hook`` the core's ``on_timer`` calls for it.
    """
    if not name:
        raise RuleError("@timer needs the timer's name")

    def mark(method: M) -> M:
        setattr(_function(method), TIMER_MARK, name)
        return method
    return mark


def at_start(method: M) -> M:
    """Declare a rule's method ``(self, now)`` an action at start: the composed class runs it
    after the core's ``on_start``, the rules' actions in composition order (outermost first)."""
    setattr(_function(method), START_MARK, True)
    return method


def is_method(value: object) -> bool:
    """Whether a class member is a method in the sense of hooks: a function, property, static or class method."""
    return inspect.isfunction(value) or isinstance(value, (property, staticmethod, classmethod))


def _methods(core: type) -> dict[str, Any]:
    """Every method ``core`` has (not the dunders), each the definition that runs: the most derived."""
    found: dict[str, Any] = {}
    for klass in core.__mro__:
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if is_method(value) and not name.startswith("__"):
                found.setdefault(name, value)
    return found


def declared_hooks(core: type) -> frozenset[str]:
    """The methods of ``core`` a rule may override: those whose running definition is ``@hook``."""
    return frozenset(n for n, v in _methods(core).items() if getattr(_function(v), HOOK_MARK, False))


def declared_slots(core: type) -> dict[str, tuple[str, frozenset[str]]]:
    """The slots ``core`` declares: slot name -> (the paper's occupant, the slot's methods)."""
    found: dict[str, tuple[str, set[str]]] = {}
    for n, v in _methods(core).items():
        mark = getattr(_function(v), SLOT_MARK, None)
        if mark is None:
            continue
        name, paper = mark
        known = found.setdefault(name, (paper, set()))
        if known[0] != paper:
            raise RuleError(f"{core.__qualname__}: slot {name!r} names two paper occupants, "
                            f"{known[0]!r} and {paper!r}")
        known[1].add(n)
    return {k: (paper, frozenset(ms)) for k, (paper, ms) in sorted(found.items())}


def rule_methods(mixin: type, core: type) -> dict[str, list[type]]:
    """The methods the rule's own classes define (``mixin`` and the bases it does not share with
    ``core``), each with the classes that define it, outermost first."""
    found: dict[str, list[type]] = {}
    for klass in mixin.__mro__:
        if klass in core.__mro__ or klass is object:
            continue
        for name, value in vars(klass).items():
            if is_method(value) and not name.startswith("__"):
                found.setdefault(name, []).append(klass)
    return found


def undeclared_overrides(mixin: type, core: type) -> list[str]:
    """The methods ``mixin`` overrides that ``core`` has but does not declare a hook."""
    has, hooks = _methods(core), declared_hooks(core)
    return sorted(n for n in rule_methods(mixin, core) if n in has and n not in hooks)


def check_overrides(rule: str, mixin: type, core: type) -> None:
    """Refuse a rule that overrides a method its core has not declared a hook (a clear error),
    or a driver entry point (``on_start``, ``on_timer``: :func:`at_start` and :func:`timer` instead).

    A rule's private helpers (methods the core does not have) are its own
    business; ``__init__`` may set up the rule's state (it calls ``super()``)."""
    entries = sorted(n for n in rule_methods(mixin, core) if n in DRIVER_ENTRIES)
    if entries:
        raise RuleError(
            f"rule {rule!r} ({mixin.__name__}) overrides {', '.join(entries)}, which only the core defines "
            "(the driver's entry points): a rule owns a timer with @timer(name) and acts at start with @at_start "
            "(p4mcc.hosts.rules)")
    bad = undeclared_overrides(mixin, core)
    if bad:
        raise RuleError(
            f"rule {rule!r} ({mixin.__name__}) overrides {', '.join(bad)} of "
            f"{core.__module__}.{core.__qualname__}, which the core does not declare a hook "
            "(mark the core's method @hook, or give the rule's method a name of its own)")


def check_slots(protocol: str, core: type, active: Sequence[tuple[str, type, str | None]]) -> None:
    """Refuse a composition whose slots do not hold together (a clear error): an occupant of a
    slot ``core`` does not declare, or that overrides none of its methods; a rule that wraps a
    slot's method composed below the occupant, which replaces it (the wrapper would never run).
    ``active`` is (rule name, its mixin for ``core``'s role, its slot), outermost first."""
    slots = declared_slots(core)
    for i, (name, mixin, seat) in enumerate(active):
        if seat is None:
            continue
        if seat not in slots:
            raise RuleError(f"{protocol}: rule {name!r} occupies slot {seat!r}, which "
                            f"{core.__qualname__} does not declare (known: {', '.join(slots) or 'none'})")
        methods = slots[seat][1]
        if not methods & set(rule_methods(mixin, core)):
            raise RuleError(f"{protocol}: rule {name!r} occupies slot {seat!r} but overrides none of "
                            f"its methods ({', '.join(sorted(methods))})")
        for below, mixin_below, _ in active[i + 1:]:
            wraps = sorted(methods & set(rule_methods(mixin_below, core)))
            if wraps:
                raise RuleError(f"{protocol}: rule {below!r} wraps {', '.join(wraps)} of slot {seat!r} "
                                f"but composes below its occupant {name!r}, which replaces it "
                                f"(register {below!r} before {name!r})")


def core_timers(core: type) -> frozenset[str]:
    """The timer names ``core``'s ``on_timer`` handles: the ones it declares (``Endpoint.TIMERS``)."""
    return frozenset(getattr(core, "TIMERS", ()))


@dataclass(frozen=True)
class RuleTimers:
    """What a composition's rules add to the driver's entry points: the timers they own and their
    actions at start, each with the rule class that defines it."""

    timers: Mapping[str, str] = field(default_factory=dict)
    """Timer name -> the rule's handler method."""
    starts: tuple[str, ...] = ()
    """The rules' start actions (method names), in composition order."""
    owners: Mapping[str, type] = field(default_factory=dict)
    """Timer name -> the rule class that owns it (the outermost that defines its handler)."""
    start_owners: tuple[type, ...] = ()
    """The rule class of each start action, as ``starts``."""


def rule_timers(core: type, mixins: Sequence[tuple[str, type]]) -> RuleTimers:
    """The timers and start actions of the rules ``mixins`` ((rule name, mixin), outermost first)
    on ``core``.  Two rules owning one timer, or a rule owning a timer the core's ``on_timer``
    handles, is refused, naming them (:func:`timer`)."""
    timers: dict[str, str] = {}
    starts: list[str] = []
    owners: dict[str, type] = {}
    start_owners: list[type] = []
    seen: set[type] = set()

    def who(klass: type) -> str:
        names = [n for n, m in mixins if klass in m.__mro__]
        return repr(names[0]) if len(names) == 1 else f"{klass.__name__} (of {', '.join(map(repr, names))})"

    handled = core_timers(core)
    for _, mixin in mixins:
        for klass in mixin.__mro__:
            if klass in core.__mro__ or klass is object or klass in seen:
                continue
            seen.add(klass)
            for attr, value in vars(klass).items():
                func = _function(value)
                name = getattr(func, TIMER_MARK, None)
                if name is not None:
                    if name in handled:
                        raise RuleError(f"rule {who(klass)} owns timer {name!r}, which "
                                        f"{core.__qualname__}.on_timer handles (wrap the hook it calls instead)")
                    if name in timers and timers[name] != attr:
                        raise RuleError(f"rules {who(owners[name])} and {who(klass)} both own timer {name!r}")
                    if name not in timers:
                        timers[name], owners[name] = attr, klass
                if getattr(func, START_MARK, False) and attr not in starts:
                    starts.append(attr)
                    start_owners.append(klass)
    return RuleTimers(timers, tuple(starts), owners, tuple(start_owners))


def _entries(core: type, found: RuleTimers) -> dict[str, Any]:
    """The composed class's ``on_timer`` and ``on_start``: the rules' timers and start actions
    around the core's own."""
    timers, starts = dict(found.timers), found.starts
    if not timers and not starts:
        return {}
    core_timer, core_start = core.on_timer, core.on_start  # type: ignore[attr-defined]

    def on_timer(self: Any, name: str, now: float) -> None:
        """Timer ``name`` to the rule that owns it, else to the core."""
        handler = timers.get(name)
        if handler is None:
            core_timer(self, name, now)
        else:
            getattr(self, handler)(now)

    def on_start(self: Any, now: float) -> None:
        """The core's start, then the rules' start actions in composition order."""
        core_start(self, now)
        for action in starts:
            getattr(self, action)(now)

    out: dict[str, Any] = {}
    if timers:
        out["on_timer"] = on_timer
    if starts:
        out["on_start"] = on_start
    return out


def core_of(mixin: type) -> type | None:
    """The core a mixin is written on: the first class of its MRO that declares a ``role``."""
    return next((k for k in mixin.__mro__ if "role" in vars(k)), None)


@dataclass(frozen=True)
class Rule:
    """One behaviour beyond the paper.

    ``mixins`` maps a core's ``role`` to the mixin class that changes it; a
    rule may change one role (most do) or several (a receiver's report and the
    sender that reads it).  ``requires`` names rules it builds on: switching a
    rule on without them is an error, not a silent change of meaning.  ``slot``
    names the slot (:func:`slot`) whose decision the rule takes over: one rule
    per slot in any rule list.
    """

    name: str
    summary: str
    reason: str
    mixins: Mapping[str, type] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    slot: str | None = None


def parse_switch(name: str, value: Any) -> bool:
    """``on``/``off`` (or a boolean) as a scenario or a flag writes it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "true", "yes", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("off", "false", "no", "0"):
        return False
    raise RuleError(f"rule {name!r}: {value!r} is not on or off")


@dataclass(frozen=True)
class RuleBook:
    """A protocol's rules, in composition order, and its profiles as data."""

    protocol: str
    rules: tuple[Rule, ...] = ()
    profiles: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: {PAPER: (), DEFAULT: ()}
    )
    _composed: dict[tuple[type, tuple[str, ...]], type] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        names = [r.name for r in self.rules]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise RuleError(f"{self.protocol}: rule names given twice: {', '.join(sorted(dup))}")
        for must in (PAPER, DEFAULT):
            if must not in self.profiles:
                raise RuleError(f"{self.protocol}: profile {must!r} is missing")
        if self.profiles[PAPER]:
            raise RuleError(f"{self.protocol}: profile 'paper' must have no rule")
        for prof, members in self.profiles.items():
            if prof not in PROFILE_NAMES:
                raise RuleError(f"{self.protocol}: unknown profile name {prof!r}")
            self._check(members, f"profile {prof!r}")

    # -- names ---------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        """Every rule's name, in composition order."""
        return tuple(r.name for r in self.rules)

    def get(self, name: str) -> Rule:
        """The rule called ``name``; a clear error listing known names otherwise."""
        for r in self.rules:
            if r.name == name:
                return r
        known = ", ".join(self.names()) or "none"
        raise RuleError(f"{self.protocol}: unknown rule {name!r}; known: {known}")

    def _check(self, members: Sequence[str], where: str) -> None:
        present = set(members)
        for n in members:
            missing = [req for req in self.get(n).requires if req not in present]
            if missing:
                raise RuleError(
                    f"{self.protocol} {where}: rule {n!r} needs {', '.join(map(repr, missing))}"
                )
        self._check_seats(members, where)

    def _check_seats(self, members: Sequence[str], where: str) -> None:
        """Refuse two rules of ``members`` that occupy one slot, naming both."""
        seated: dict[str, str] = {}
        for n in members:
            rule = self.get(n)
            if rule.slot is not None:
                if rule.slot in seated:
                    raise RuleError(
                        f"{self.protocol} {where}: rules {seated[rule.slot]!r} and {n!r} both occupy "
                        f"slot {rule.slot!r}, which holds one rule (switch one off)")
                seated[rule.slot] = n

    def occupants(self, names: Sequence[str]) -> dict[str, str]:
        """Slot name -> the rule of ``names`` that occupies it (slots the paper holds are absent)."""
        return {r.slot: r.name for r in self.rules if r.name in set(names) and r.slot is not None}

    # -- profiles ------------------------------------------------------------

    def resolve(
        self, profile: str = DEFAULT, switches: Mapping[str, Any] | None = None
    ) -> tuple[str, ...]:
        """The effective rule list: ``profile``'s rules with ``switches`` applied.

        Switching a rule off also drops the profile's rules that need it (a
        rule never runs without what it builds on); switching a rule on
        without what it needs, or off while a rule switched on needs it, is
        an error.  The result is in composition order, so equal sets give
        equal lists (and equal results records).
        """
        if profile not in self.profiles:
            known = ", ".join(self.profiles)
            raise RuleError(f"{self.protocol}: unknown profile {profile!r}; known: {known}")
        chosen = set(self.profiles[profile])
        named_on: set[str] = set()
        off: set[str] = set()
        for name, value in (switches or {}).items():
            self.get(name)
            if parse_switch(name, value):
                chosen.add(name)
                named_on.add(name)
            else:
                chosen.discard(name)
                off.add(name)
        dropped = True
        while dropped:  # the profile's rules that need a rule switched off
            needy = {n for n in chosen - named_on if any(r in off for r in self.get(n).requires)}
            dropped = bool(needy)
            chosen -= needy
            off |= needy
        ordered = tuple(n for n in self.names() if n in chosen)
        self._check(ordered, f"profile {profile!r} with {dict(switches or {})}")
        return ordered

    # -- classes -------------------------------------------------------------

    def compose(self, core: type, names: Sequence[str]) -> type:
        """The class that runs ``core`` with the rules ``names`` (cached).

        Only the rules that change ``core``'s role go into the class; with
        none, ``core`` itself runs.  The session's whole effective list is
        its configuration's ``rules``, which the results record.
        """
        self._check_seats(tuple(names), f"rules {', '.join(names) or 'none'}")
        role = getattr(core, "role", None)
        active = tuple(
            r for r in self.rules if r.name in set(names) and role in r.mixins
        )
        if not active:
            return core
        key = (core, tuple(r.name for r in active))
        if key not in self._composed:
            for r in active:
                check_overrides(r.name, r.mixins[role], core)
            check_slots(self.protocol, core, [(r.name, r.mixins[role], r.slot) for r in active])
            label = "+".join(r.name for r in active)
            found = rule_timers(core, [(r.name, r.mixins[role]) for r in active])
            entries = _entries(core, found)
            timers = {"TIMERS": core_timers(core) | frozenset(found.timers)}  # the core's and its rules'
            cls = type(f"{core.__name__}[{label}]", (*(r.mixins[role] for r in active), core), {**entries, **timers})
            for name, func in entries.items():
                func.__qualname__ = f"{cls.__qualname__}.{name}"
            cls.__module__ = core.__module__
            self._composed[key] = cls
        return self._composed[key]


class Registrar:
    """A protocol's rules in the order its rules module registers them (the first: outermost).

    ``@rule(name, summary, reason)`` above a mixin registers it for its role:
    its ``role`` attribute (a mixin written on the core), else ``roles``, else
    the registrar's.  A rule that changes a second role registers that role's
    mixin under the same name again; the first registration gives the summary,
    the reason, ``requires`` and ``slot``.
    """

    def __init__(self, protocol: str, reason: str = "", roles: tuple[str, ...] = ()) -> None:
        self.protocol, self.reason, self.roles = protocol, reason, roles
        self.rules: dict[str, Rule] = {}

    def __call__(self, name: str, summary: str = "", reason: str = "", requires: tuple[str, ...] = (),
                 roles: tuple[str, ...] = (), slot: str | None = None) -> Callable[[type], type]:
        def register(cls: type) -> type:
            core = core_of(cls)
            if core is not None:
                check_overrides(name, cls, core)
            first = self.rules.get(name) or Rule(name, summary, reason or self.reason, {}, requires, slot)
            own = getattr(cls, "role", None)
            on = roles or ((own,) if own is not None else self.roles)
            self.rules[name] = dataclasses.replace(first, mixins={**first.mixins, **dict.fromkeys(on, cls)})
            return cls
        return register

    def book(self, default: Sequence[str], stamped: Sequence[str] = ()) -> RuleBook:
        """The :class:`RuleBook`: ``default`` is the rules listed, by name (a rule
        registered but not listed is off until it is measured and listed);
        ``stamped`` (if any) is ``default`` plus ``stamped``.  Profiles keep the
        registration order (the composition order)."""
        names = tuple(self.rules)
        unknown = [n for n in (*default, *stamped) if n not in self.rules]
        if unknown:
            raise RuleError(f"{self.protocol}: profiles name unknown rules: {', '.join(unknown)}")
        both = set(default) & set(stamped)
        if both:
            raise RuleError(f"{self.protocol}: rules listed for default and stamped: {', '.join(sorted(both))}")
        in_default = tuple(n for n in names if n in default)
        profiles = {PAPER: (), DEFAULT: in_default}
        if stamped:
            profiles[STAMPED] = tuple(n for n in names if n in default or n in stamped)
        return RuleBook(self.protocol, tuple(self.rules.values()), profiles)
