"""Primary/backup arbitration rules of P4Runtime section 5."""

from __future__ import annotations

import pytest

from p4mcc.p4switch.p4rt.arbitration import Arbiter
from p4mcc.p4switch.p4rt.errors import Code, P4RTError


def codes(notices):
    return {n.stream: (n.code, n.election_id) for n in notices}


def test_first_client_becomes_primary():
    a = Arbiter(1)
    assert codes(a.update("A", 1, "", 10)) == {"A": (Code.OK, 10)}
    assert a.is_primary("A")


def test_lower_election_id_is_backup_and_only_it_hears():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    assert codes(a.update("B", 1, "", 5)) == {"B": (Code.ALREADY_EXISTS, 10)}
    assert not a.is_primary("B")


def test_higher_election_id_takes_over_and_everyone_hears():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    notes = a.update("B", 1, "", 20)
    assert codes(notes) == {"A": (Code.ALREADY_EXISTS, 20), "B": (Code.OK, 20)}
    assert notes[-1].stream == "B"  # the new primary hears last


def test_duplicate_election_id_is_refused():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    with pytest.raises(P4RTError) as ei:
        a.update("B", 1, "", 10)
    assert ei.value.code == Code.INVALID_ARGUMENT


def test_unknown_device_is_not_found_and_changes_are_failed_precondition():
    a = Arbiter(1)
    with pytest.raises(P4RTError) as ei:
        a.update("A", 2, "", 1)
    assert ei.value.code == Code.NOT_FOUND
    a.update("A", 1, "", 1)
    with pytest.raises(P4RTError) as ei:
        a.update("A", 1, "other-role", 1)
    assert ei.value.code == Code.FAILED_PRECONDITION


def test_primary_leaving_promotes_nobody():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    a.update("B", 1, "", 5)
    assert codes(a.remove("A")) == {"B": (Code.NOT_FOUND, 10)}
    assert not a.is_primary("B")
    # B must announce an id >= the highest ever seen to become primary.
    assert codes(a.update("B", 1, "", 9)) == {"B": (Code.NOT_FOUND, 10)}
    assert codes(a.update("B", 1, "", 10)) == {"B": (Code.OK, 10)}


def test_primary_downgrading_itself_notifies_all():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    a.update("B", 1, "", 5)
    notes = a.update("A", 1, "", 3)
    assert codes(notes) == {"A": (Code.NOT_FOUND, 10), "B": (Code.NOT_FOUND, 10)}


def test_write_checks():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    a.update("B", 1, "", 5)
    a.check_write(1, "", 10)
    for dev, eid, code in [(1, 5, Code.PERMISSION_DENIED), (1, None, Code.PERMISSION_DENIED), (3, 10, Code.NOT_FOUND)]:
        with pytest.raises(P4RTError) as ei:
            a.check_write(dev, "", eid)
        assert ei.value.code == code


def test_roles_are_independent():
    a = Arbiter(1)
    a.update("A", 1, "", 10)
    assert codes(a.update("B", 1, "r2", 1)) == {"B": (Code.OK, 1)}
    assert a.is_primary("A") and a.is_primary("B")
