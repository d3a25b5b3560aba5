"""diff(desired, actual): inserts/modifies/deletes, order, idempotence."""

from __future__ import annotations

from p4mcc.controller.diff import apply_ops, diff, summarize
from p4mcc.controller.state import (
    DefaultAction,
    DigestConfig,
    MeterConfig,
    MulticastGroup,
    SwitchState,
    TableEntry,
)


def entry(dst: int, port: int) -> TableEntry:
    return TableEntry.make("I.fwd", {"dst": (dst, 32)}, "I.forward", {"port": port})


def state(*ents) -> SwitchState:
    st = SwitchState()
    for e in ents:
        st.add(e)
    return st


def test_from_empty_everything_is_inserted_except_modify_only_kinds() -> None:
    want = state(
        entry(1, 1), MulticastGroup.of_ports(1, [2, 3]), MeterConfig("I.m", 1, 10, 1, 10, 1),
        DefaultAction("I.fwd", "I.drop"), DigestConfig("d"),
    )
    ops = diff(want, SwitchState())
    assert [(o.kind, type(o.entity).__name__) for o in ops] == [
        ("insert", "MulticastGroup"),
        ("modify", "MeterConfig"),
        ("insert", "DigestConfig"),
        ("modify", "DefaultAction"),
        ("insert", "TableEntry"),
    ]


def test_applying_the_diff_makes_the_next_diff_empty() -> None:
    want = state(entry(1, 1), entry(2, 2), MulticastGroup.of_ports(4, [1]))
    have = state(entry(1, 9), entry(3, 3), MulticastGroup.of_ports(5, [1]))
    ops = diff(want, have)
    assert summarize(ops) == {"insert": 2, "modify": 1, "delete": 2}
    after = apply_ops(have, ops)
    assert diff(want, after) == []
    assert after.entries == want.entries and after.groups == want.groups


def test_changed_action_parameter_is_one_modify_with_old_value() -> None:
    ops = diff(state(entry(1, 2)), state(entry(1, 1)))
    assert len(ops) == 1 and ops[0].kind == "modify"
    assert ops[0].old == entry(1, 1) and ops[0].entity == entry(1, 2)


def test_deletes_come_first_entries_before_groups() -> None:
    have = state(entry(1, 1), MulticastGroup.of_ports(1, [1]), DigestConfig("d"))
    ops = diff(SwitchState(), have)
    assert [(o.kind, type(o.entity).__name__) for o in ops] == [
        ("delete", "TableEntry"),
        ("delete", "DigestConfig"),
        ("delete", "MulticastGroup"),
    ]


def test_prune_false_keeps_switch_only_state() -> None:
    have = state(entry(1, 1), MulticastGroup.of_ports(9, [1]))
    assert diff(state(entry(1, 1)), have, prune=False) == []


def test_modify_only_state_not_in_desired_is_left_alone() -> None:
    have = state(MeterConfig("I.m", 1, 10, 1, 10, 1), DefaultAction("I.fwd", "I.drop"))
    assert diff(SwitchState(), have) == []


def test_group_replica_order_does_not_matter() -> None:
    assert diff(state(MulticastGroup.of_ports(1, [3, 1, 2])), state(MulticastGroup.of_ports(1, [1, 2, 3]))) == []


def test_conflicting_desired_entities_are_refused() -> None:
    st = state(entry(1, 1))
    try:
        st.add(entry(1, 2))
    except ValueError as exc:
        assert "conflicting desired state" in str(exc)
    else:  # pragma: no cover - the assertion is the test
        raise AssertionError("a second value for the same key was accepted")
