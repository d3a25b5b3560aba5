"""Slots: one decision, one occupant per rule list; wrappers of a slot's hooks run above it.

The rule book refuses two rules that occupy one slot (in a profile, after a
scenario's switches, or handed to ``compose``), a rule occupying a slot its
core does not declare or whose mixin changes none of the slot's methods, and
a wrapper composed below the occupant (it would never run).  And no hook of
any protocol's profile is wrapped by more than three rules: where more
competed for one decision, that decision is a slot.
"""

from __future__ import annotations

import pytest

from p4mcc.hosts import explain, registry
from p4mcc.hosts.rules import Registrar, RuleError, declared_hooks, declared_slots, hook, slot


class Core:
    role = "toy-sender"

    @slot("growth", "additive")
    def grow(self, w: float) -> float:
        """The paper's growth: one more per round."""
        return w + 1.0

    @hook
    def floor(self) -> float:
        return 1.0


class Doubling(Core):
    def grow(self, w: float) -> float:
        return 2.0 * w


class Cubic(Core):
    def grow(self, w: float) -> float:
        return w + 3.0


class PlusHalf(Core):
    def grow(self, w: float) -> float:
        return super().grow(w) + 0.5


class Floor(Core):
    def floor(self) -> float:
        return 2.0


def _book(*rules: tuple[str, type, str | None], default: tuple[str, ...] = (), stamped: tuple[str, ...] = ()):
    rule = Registrar("toy", reason="ours")
    for name, mixin, seat in rules:
        rule(name, name, slot=seat)(mixin)
    return rule.book(default=default, stamped=stamped)


def test_a_slot_is_a_hook_with_the_papers_occupant_named() -> None:
    assert declared_hooks(Core) == {"grow", "floor"}
    assert declared_slots(Core) == {"growth": ("additive", frozenset({"grow"}))}


def test_the_occupant_replaces_the_paper_and_wrappers_add_to_it() -> None:
    book = _book(("plus_half", PlusHalf, None), ("doubling", Doubling, "growth"),
                 default=("plus_half", "doubling"))
    assert book.compose(Core, book.resolve("default"))().grow(4.0) == 8.5
    assert book.compose(Core, ("plus_half",))().grow(4.0) == 5.5  # the paper holds the slot
    assert book.occupants(book.resolve("default")) == {"growth": "doubling"}


def test_two_occupants_of_one_slot_in_a_profile_are_refused_naming_both() -> None:
    with pytest.raises(RuleError, match="profile 'default': rules 'doubling' and 'cubic' both occupy "
                                        "slot 'growth', which holds one rule"):
        _book(("doubling", Doubling, "growth"), ("cubic", Cubic, "growth"), default=("doubling", "cubic"))
    with pytest.raises(RuleError, match="rules 'doubling' and 'cubic' both occupy slot 'growth'"):
        _book(("doubling", Doubling, "growth"), ("cubic", Cubic, "growth"),
              default=("doubling",), stamped=("cubic",))


def test_switching_a_second_occupant_on_is_refused_and_compose_refuses_it_too() -> None:
    book = _book(("doubling", Doubling, "growth"), ("cubic", Cubic, "growth"), default=("doubling",))
    assert book.resolve("default", {"doubling": "off", "cubic": "on"}) == ("cubic",)
    with pytest.raises(RuleError, match="rules 'doubling' and 'cubic' both occupy slot 'growth'"):
        book.resolve("default", {"cubic": "on"})
    with pytest.raises(RuleError, match="rules 'doubling' and 'cubic' both occupy slot 'growth'"):
        book.compose(Core, ("doubling", "cubic"))


@pytest.mark.parametrize("rules, message", [
    ((("floor_seat", Floor, "floor"),), "occupies slot 'floor', which Core does not declare"),
    ((("floor_seat", Floor, "growth"),), "occupies slot 'growth' but overrides none of its methods"),
    ((("doubling", Doubling, "growth"), ("plus_half", PlusHalf, None)),
     "rule 'plus_half' wraps grow of slot 'growth' but composes below its occupant 'doubling'"),
])
def test_a_slot_that_does_not_hold_together_is_refused_when_composed(rules, message) -> None:
    names = tuple(r[0] for r in rules)
    book = _book(*rules, default=names)
    with pytest.raises(RuleError, match=message):
        book.compose(Core, names)


def test_explain_ends_a_slots_row_in_its_occupant_and_does_not_count_it() -> None:
    (row,) = explain.hook_rows(Core, {"plus_half": PlusHalf, "doubling": Doubling}, {"doubling": "growth"})
    assert row.chain == ("plus_half", "doubling") and row.stops is None
    assert (row.slot, row.occupant, row.paper_occupant) == ("growth", "doubling", "additive")
    assert explain.rules_of(row) == ("plus_half",)
    (paper,) = explain.hook_rows(Core, {"plus_half": PlusHalf}, {})
    assert paper.chain == ("plus_half", "paper") and paper.occupant is None
    assert explain.slot_note(paper) == "slot growth: the paper's additive"


def test_mtcp_chooses_its_congestion_avoidance_in_a_slot() -> None:
    book = registry.get("mtcp").rules
    assert book.get("reno_window").slot == "avoidance"
    for profile in book.profiles:
        held = book.occupants(book.resolve(profile))
        assert held == ({} if profile == "paper" else {"avoidance": "reno_window"})


@pytest.mark.parametrize("protocol", registry.names())
def test_no_hook_is_wrapped_by_more_than_three_rules_in_any_profile(protocol: str) -> None:
    for profile in registry.get(protocol).rules.profiles:
        crowded = [(r.role, r.hook, explain.rules_of(r)) for r in explain.crowded(protocol, profile, 3)]
        assert crowded == [], f"{protocol} {profile}: make the competing rules a slot, or split the hook"
