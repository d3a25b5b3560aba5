"""The rule book: profiles resolve to rule lists, rules compose as mixins."""

from __future__ import annotations

import pytest

from p4mcc.hosts.rules import Registrar, Rule, RuleBook, RuleError, declared_hooks, hook


class Core:
    role = "toy-sender"

    @hook
    def rate(self) -> float:
        return 1.0

    def payload(self) -> int:
        """Not a hook: no rule may change it."""
        return 100


class Double:
    def rate(self) -> float:
        return 2 * super().rate()


class PlusOne:
    def rate(self) -> float:
        return super().rate() + 1


BOOK = RuleBook(
    "toy",
    rules=(
        Rule("double", "doubles the rate", "ours", {"toy-sender": Double}),
        Rule("plus_one", "adds one", "ours", {"toy-sender": PlusOne}, requires=("double",)),
        Rule("elsewhere", "changes only the receiver", "ours", {"toy-receiver": Double}),
    ),
    profiles={"paper": (), "default": ("double", "plus_one")},
)


def test_paper_profile_runs_the_core_itself() -> None:
    assert BOOK.resolve("paper") == ()
    assert BOOK.compose(Core, ()) is Core


def test_default_composes_in_declaration_order() -> None:
    names = BOOK.resolve("default")
    assert names == ("double", "plus_one")
    # double is outermost: 2 * (1 + 1)
    assert BOOK.compose(Core, names)().rate() == 4.0


def test_switches_turn_rules_on_and_off_by_name() -> None:
    assert BOOK.resolve("paper", {"double": "on"}) == ("double",)
    assert BOOK.resolve("default", {"plus_one": "off"}) == ("double",)


def test_a_rule_for_another_role_leaves_the_class_alone() -> None:
    assert BOOK.compose(Core, ("elsewhere",)) is Core


def test_composed_classes_are_cached() -> None:
    assert BOOK.compose(Core, ("double",)) is BOOK.compose(Core, ("double",))


@pytest.mark.parametrize(
    ("profile", "switches", "message"),
    [
        ("fast", None, "unknown profile 'fast'; known: paper, default"),
        ("default", {"tripple": "on"}, "unknown rule 'tripple'; known: double, plus_one, elsewhere"),
        ("default", {"double": "maybe"}, "'maybe' is not on or off"),
        ("default", {"double": "off", "plus_one": "on"}, "rule 'plus_one' needs 'double'"),
        ("paper", {"plus_one": "on"}, "rule 'plus_one' needs 'double'"),
    ],
)
def test_bad_names_and_values_are_named(profile, switches, message) -> None:
    with pytest.raises(RuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BOOK.resolve(profile, switches)


def test_a_paper_profile_with_rules_is_refused() -> None:
    with pytest.raises(RuleError, match="'paper' must have no rule"):
        RuleBook("bad", rules=BOOK.rules, profiles={"paper": ("double",), "default": ()})


def test_switching_a_rule_off_drops_the_profile_rules_that_need_it() -> None:
    assert BOOK.resolve("default", {"double": "off"}) == ()


def _registrar() -> Registrar:
    rule = Registrar("toy", reason="ours")
    for name, mixin in (("double", Double), ("plus_one", PlusOne), ("stamp_x", Double)):
        rule(name, name)(type(f"{name}_mixin", (mixin,), {"role": "toy-sender"}))
    return rule


def test_default_holds_only_the_rules_it_lists() -> None:
    book = _registrar().book(default=("double",), stamped=("stamp_x",))
    assert book.profiles["default"] == ("double",)  # plus_one is registered, not listed: off
    assert book.profiles["stamped"] == ("double", "stamp_x")
    assert book.resolve("default", {"plus_one": "on"}) == ("double", "plus_one")


@pytest.mark.parametrize("default,stamped,message", [
    (("doubel",), (), "unknown rules: doubel"),
    (("double",), ("double",), "listed for default and stamped: double"),
])
def test_profile_lists_with_bad_names_are_refused(default, stamped, message) -> None:
    with pytest.raises(RuleError, match=message):
        _registrar().book(default=default, stamped=stamped)


def test_a_rule_overriding_a_method_the_core_does_not_declare_is_refused_at_registration() -> None:
    rule = Registrar("toy")
    with pytest.raises(RuleError, match=r"rule 'bigger' \(Bigger\) overrides payload of .*Core, "
                                        r"which the core does not declare a hook"):
        @rule("bigger", "sends more")
        class Bigger(Core):
            def payload(self) -> int:
                return 2 * super().payload()
    assert "bigger" not in rule.rules


def test_a_plain_mixin_overriding_an_undeclared_method_is_refused_when_composed() -> None:
    class Bigger:
        def payload(self) -> int:
            return 2 * super().payload()  # type: ignore[misc]

    book = RuleBook("toy", (Rule("bigger", "sends more", "a toy", {"toy-sender": Bigger}),),
                    {"paper": (), "default": ("bigger",)})
    with pytest.raises(RuleError, match="overrides payload of"):
        book.compose(Core, ["bigger"])


def test_a_rule_may_wrap_a_hook_and_keep_helpers_of_its_own() -> None:
    rule = Registrar("toy")

    @rule("steady", "a helper of its own and a wrapped hook")
    class Steady(Core):
        def __init__(self) -> None:
            super().__init__()
            self.floor = 0.5

        def _floor(self) -> float:  # the core has no such method: the rule's own
            return self.floor

        def rate(self) -> float:
            return max(self._floor(), super().rate())

    assert declared_hooks(Core) == {"rate"}
    assert rule.book(default=("steady",)).compose(Core, ["steady"])().rate() == 1.0


def test_a_hook_may_be_a_property() -> None:
    class WithProperty:
        role = "toy-sender"

        @hook
        @property
        def window(self) -> int:
            return 1

        @property
        def fixed(self) -> int:
            return 1

    assert declared_hooks(WithProperty) == {"window"}
