"""``bench/friendliness.py --ablate``: its variants, its sweep and its criterion."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

from p4mcc.hosts import registry
from p4mcc.hosts.rules import Rule, RuleBook
from p4mcc.sweep.spec import sweep_from_dict, validate

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import ablation as A  # noqa: E402
from bench.friendliness import EPOCHS, QUICK_CELLS, ablation_doc  # noqa: E402


def test_the_toy_books_variants(toy) -> None:
    vs = A.variants(toy.rules)
    assert [(v.name, v.profile, v.switches) for v in vs] == [
        ("default", "default", {}),
        ("paper", "paper", {}),
        ("default -double", "default", {"double": False}),
        # eager_join is in no profile; quiet is the stamped profile's only: no default + arm
        ("default +eager_join", "default", {"eager_join": True}),
        ("paper +double", "paper", {"double": True}),
        ("paper +quiet", "paper", {"double": True, "quiet": True}),  # quiet needs double
        ("paper +eager_join", "paper", {"eager_join": True}),
    ]
    for v in vs:  # every variant is a rule list the book accepts
        toy.resolve_rules(v.profile, v.switches)


def test_without_the_plus_arms_default_paper_each_removal_and_each_candidate_run(toy) -> None:
    assert [v.name for v in A.variants(toy.rules, plus=False)] == [
        "default", "paper", "default -double", "default +eager_join"]
    assert [v.candidate for v in A.variants(toy.rules, plus=False)] == [False, False, False, True]


class _X:
    pass


#: a and e in default, d needs a; b takes a's slot; c needs b; s reads the stamp only
#: (stamped profile); t needs s, so it reads the stamp too.
SLOTTED = RuleBook("t", rules=(
    Rule("a", "", "", {"r": _X}, slot="avoid"), Rule("b", "", "", {"r": _X}, slot="avoid"),
    Rule("c", "", "", {"r": _X}, requires=("b",)), Rule("d", "", "", {"r": _X}, requires=("a",)),
    Rule("e", "", "", {"r": _X}), Rule("s", "", "", {"r": _X}), Rule("t", "", "", {"r": _X}, requires=("s",))),
    profiles={"paper": (), "default": ("a", "d", "e"), "stamped": ("a", "d", "e", "s")})


def test_a_candidate_runs_on_default_with_what_it_needs_and_takes_its_slot_from_a_default_rule() -> None:
    assert A.stamp_only(SLOTTED) == ["s", "t"] and A.candidates(SLOTTED) == ["b", "c"]
    vs = [v for v in A.variants(SLOTTED, plus=False) if v.candidate]
    assert [(v.name, v.switches) for v in vs] == [
        ("default +b", {"a": False, "b": True, "d": False}),  # d cannot run without a
        ("default +c", {"a": False, "b": True, "c": True, "d": False}),
    ]
    assert [SLOTTED.resolve(v.profile, v.switches) for v in vs] == [("b", "e"), ("b", "c", "e")]


@pytest.mark.parametrize("proto", registry.names())
def test_every_rule_of_every_book_is_measured_or_named_as_the_stamps(proto: str) -> None:
    book = registry.get(proto).rules
    vs = A.variants(book, plus=False)
    default = set(book.profiles["default"])
    measured = {v.rule for v in vs if v.sign == "-"} | {v.rule for v in vs if v.candidate}
    assert measured | set(A.stamp_only(book)) == set(book.names())
    assert {v.rule for v in vs if v.candidate} == set(book.names()) - default - set(A.stamp_only(book))
    assert not set(A.stamp_only(book)) & default
    for v in vs:  # every arm is a rule list the book accepts
        book.resolve(v.profile, v.switches)


def test_removing_a_rule_removes_the_default_rules_that_need_it() -> None:
    class X:
        pass

    book = RuleBook("t", rules=(Rule("a", "", "", {"r": X}), Rule("b", "", "", {"r": X}, requires=("a",)),
                                Rule("c", "", "", {"r": X})),
                    profiles={"paper": (), "default": ("a", "b", "c")})
    by = {v.name: v.switches for v in A.variants(book)}
    assert by["default -a"] == {"a": False, "b": False}
    assert by["default -b"] == {"b": False} and by["default -c"] == {"c": False}
    assert by["paper +b"] == {"a": True, "b": True}


def test_an_empty_book_runs_only_default_and_paper() -> None:
    assert [v.name for v in A.variants(registry.get("tfmcc").rules)][:2] == ["default", "paper"]
    assert [v.name for v in A.variants(RuleBook("none"))] == ["default", "paper"]


def _args(**kw) -> argparse.Namespace:
    base = dict(quick=True, cells=None, draw=None, draw_seed=1, seeds=None, duration=20.0, switch="model",
                send_jitter=None, tcp_start=0.0, no_plus=False, epochs=EPOCHS)
    return argparse.Namespace(**{**base, **kw})


def test_the_ablation_sweep_crosses_every_variant_with_every_cell(toy) -> None:
    doc, vs = ablation_doc("toyrules", _args(), "ablate-toy")
    points = validate(sweep_from_dict(doc))
    assert len(points) == len(vs) * len(QUICK_CELLS)
    seen = {}
    for p in points:
        s = p.scenario["sessions"][0]
        assert s["protocol"] == "toyrules"
        seen.setdefault((s["profile"], tuple(sorted(s["rules"].items()))), 0)
        seen[(s["profile"], tuple(sorted(s["rules"].items())))] += 1
    assert set(seen.values()) == {len(QUICK_CELLS)} and len(seen) == len(vs)
    # The table's axis columns tell the variants apart again.
    rows = [{"point": p.index, **p.values} for p in points]
    names = A.variant_of_rows(rows, vs)
    assert [names[i * len(QUICK_CELLS)] for i in range(len(vs))] == [v.name for v in vs]


def test_drawn_dumbbells_are_ablated_too(toy) -> None:
    doc, vs = ablation_doc("toyrules", _args(quick=False, draw=3, draw_seed=5, seeds=2), "d")
    assert len(validate(sweep_from_dict(doc))) == len(vs) * 3 * 2


def _figs(name: str, ratios: list[float], t80: float | None = 10.0, util: float = 0.95) -> A.Figures:
    cells = [{"cell": (i,), "ratio": r, "t80": t80, "util": util} for i, r in enumerate(ratios)]
    return A.figures(name, cells)


@pytest.mark.parametrize(("without", "earns", "why"), [
    (_figs("x", [1.0, 1.02, 0.98]), False, "median +0.00, no cell leaves [0.5, 2], time to 80 % +0%"),
    (_figs("x", [1.02, 1.04, 1.0]), False, "median +0.02"),
    (_figs("x", [1.05, 1.07, 1.03]), True, "median moves +0.05"),
    (_figs("x", [1.0, 2.1, 0.98]), True, "1 cell leaves [0.5, 2]"),
    (_figs("x", [1.0, 1.02, 0.98], t80=11.0), True, "time to 80 % +10%"),
    (_figs("x", [1.0, 1.02, 0.98], t80=10.9), False, "time to 80 % +9%"),
    (_figs("x", [1.0, 1.02, 0.98], t80=None), True, "never reaches 80 %"),
])
def test_the_retirement_criterion(without, earns, why) -> None:
    default = _figs("default", [1.0, 1.02, 0.98])
    got = A.verdict(default, without)
    assert got[0] is earns and why in got[1], got


def test_a_verdict_without_fault_rows_says_they_were_not_run() -> None:
    default, without = _figs("default", [1.0, 1.0]), _figs("x", [1.0, 1.0])
    assert A.verdict(default, without, with_faults=False)[1].endswith("fault rows not run")
    assert A.verdict(default, without)[1].endswith("no fault row fails")


def test_a_fault_row_that_fails_only_without_the_rule_earns_it_a_place() -> None:
    default, without = _figs("default", [1.0, 1.0]), _figs("x", [1.0, 1.0])
    default.faults_failed, without.faults_failed = ["link-flap"], ["link-flap", "switch-crash"]
    assert A.verdict(default, without) == (True, "fault rows fail: switch-crash")
    assert A.fault_failed({"recover_s": None}) and A.fault_failed({"recover_s": 5.5})
    assert A.fault_failed({"recover_s": 1.0, "lost_bytes": 1000})
    assert not A.fault_failed({"recover_s": 5.0, "lost_bytes": 0}) and not A.fault_failed({"recover_s": "-"})


def test_the_table_goes_between_the_protocols_markers(toy, tmp_path: Path) -> None:
    from bench.docsection import sections, write_section

    vs = A.variants(toy.rules)
    figs = {v.name: _figs(v.name, [1.0, 1.02, 0.98]) for v in vs}
    figs["default -double"] = _figs("default -double", [0.4, 1.0, 0.98], t80=12.0)
    rows = A.table_rows(figs, vs, with_faults=True)
    assert rows[2]["earns its place"].startswith("yes (1 cell leaves [0.5, 2]")
    assert rows[2]["in [0.5, 2]"] == "2/3 (1 left)" and rows[2]["time to 80 %"] == "12.0 s (+20%)"
    page = tmp_path / "toy.md"
    page.write_text("# toy\n\nhand-written text\n")
    write_section(page, "ablation-toyrules", A.docs_body(rows, "toyrules", "test"), "bench/friendliness.py --ablate toyrules")
    text = page.read_text()
    assert text.startswith("# toy\n\nhand-written text\n")
    body = sections(text)["ablation-toyrules"]
    assert "| default -double | 0.98 (-0.02) | 2/3 (1 left) |" in body
    assert body.count("\n| ") == len(vs) + 1  # header and one row per variant


@pytest.mark.parametrize(("with_rule", "enters", "why"), [
    (_figs("x", [0.4, 1.2, 1.2]), False, "median +0.00, no cell enters [0.5, 2], time to 80 % +0%"),
    (_figs("x", [0.6, 1.2, 1.2]), True, "1 cell enters [0.5, 2]"),
    (_figs("x", [0.4, 1.15, 1.15]), True, "median moves -0.05 toward 1"),
    (_figs("x", [0.4, 1.16, 1.16]), False, "median -0.04"),
    (_figs("x", [0.4, 0.75, 0.75]), False, "median -0.45"),  # past 1 and farther from it
    (_figs("x", [0.4, 1.2, 1.2], t80=9.0), True, "time to 80 % -10%"),
    (_figs("x", [0.4, 1.2, 1.2], t80=9.1), False, "time to 80 % -9%"),
    (_figs("x", [0.4, 1.2, 1.2], t80=None), False, "time to 80 % never"),
    (_figs("x", [0.4, 1.0, 2.1]), False, "1 cell leaves [0.5, 2] (against: median moves -0.20 toward 1)"),
])
def test_the_entry_criterion(with_rule, enters, why) -> None:
    default = _figs("default", [0.4, 1.2, 1.2])
    got = A.would_enter(default, with_rule)
    assert got[0] is enters and why in got[1], got


def test_reaching_80_percent_where_default_never_does_is_a_gain() -> None:
    default, with_rule = _figs("default", [1.0, 1.0], t80=None), _figs("x", [1.0, 1.0], t80=30.0)
    assert A.would_enter(default, with_rule) == (True, "reaches 80 % where default never does")


def test_a_fault_row_decides_entry_both_ways() -> None:
    default, fixed, broken = _figs("default", [1.0, 1.0]), _figs("x", [1.0, 1.0]), _figs("y", [1.0, 1.0])
    default.faults_failed, fixed.faults_failed, broken.faults_failed = ["link-flap"], [], ["switch-crash"]
    assert A.would_enter(default, fixed) == (True, "fault rows pass: link-flap")
    assert A.would_enter(default, broken) == (
        False, "fault rows fail: switch-crash (against: fault rows pass: link-flap)")
    plain = _figs("default", [1.0, 1.0])
    assert A.would_enter(plain, _figs("z", [1.0, 1.0]), with_faults=False)[1].endswith("fault rows not run")


def test_a_candidates_row_says_whether_it_would_enter_and_the_prose_names_the_stamp_rules(toy) -> None:
    vs = A.variants(toy.rules, plus=False)
    figs = {v.name: _figs(v.name, [0.4, 1.02, 0.98]) for v in vs}
    figs["default +eager_join"] = _figs("default +eager_join", [0.6, 1.02, 0.98], t80=8.0)
    rows = A.table_rows(figs, vs, with_faults=False)
    row = next(r for r in rows if r["variant"] == "default +eager_join")
    assert row == {"variant": "default +eager_join", "median ratio": "0.98 (+0.00)", "in [0.5, 2]": "3/3 (0 left)",
                   "utilisation": "0.95 (+0.00)", "time to 80 %": "8.0 s (-20%)",
                   "earns its place": "would enter default: yes (1 cell enters [0.5, 2]; time to 80 % -20%)"}
    body = A.docs_body(rows, "toyrules", "test", skipped=A.stamp_only(toy.rules))
    assert ("| default +eager_join | 0.98 (+0.00) | 3/3 (0 left) | 0.95 (+0.00) | 8.0 s (-20%) "
            "| would enter default: yes (1 cell enters [0.5, 2]; time to 80 % -20%) |") in body
    assert "(`quiet`) get no `default +R` row" in body and "bench/assistance.py --stamp" in body
    assert f"ratio {A.MEDIAN_MOVE} or more toward 1" in body
    assert "get no" not in A.docs_body(rows, "toyrules", "test")  # no rule skipped: no note


def test_a_rerun_of_some_arms_keeps_the_others_only_while_default_holds(toy) -> None:
    """``--variants`` reruns default and the named arms; ``--merge`` keeps the page's other
    rows in the table's order, drops a removed rule's row, and is refused once default moved
    (the kept rows' changes are read against it)."""
    vs = A.variants(toy.rules, plus=False)
    assert [v.name for v in A.chosen(vs, "paper")] == ["default", "paper"]
    with pytest.raises(ValueError, match="unknown variant 'default -gone'"):
        A.chosen(vs, "paper,default -gone")
    figs = {v.name: _figs(v.name, [1.0, 1.02, 0.98]) for v in vs}
    old_rows = A.table_rows(figs, vs, with_faults=False)
    gone = dict(old_rows[2], variant="default -gone")  # a rule since folded into the core
    old_body = ("_Generated by `bench/friendliness.py --ablate toyrules` at commit 0123456789 on 2026-01-01._\n\n"
                + A.docs_body(old_rows + [gone], "toyrules", "test"))
    figs["paper"] = _figs("paper", [0.5, 0.6, 0.7])
    rerun = A.chosen(vs, "paper")
    new_rows = A.table_rows(figs, rerun, with_faults=False)
    text = A.merged(old_body, new_rows, vs)
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert [ln.split("|")[1].strip() for ln in lines[1:]] == ["---", *[v.name for v in vs]]
    assert lines[3] == A.markdown(new_rows).splitlines()[3]  # paper: the rerun's row
    assert lines[4:] == A.markdown(old_rows).splitlines()[4:]  # the others: kept
    assert "default -gone" not in text
    assert text.endswith("Rerun here: `default`, `paper`; the other rows are kept from the run stamped: "
                         "Generated by `bench/friendliness.py --ablate toyrules` at commit 0123456789 on 2026-01-01.")
    figs["default"] = _figs("default", [1.2, 1.3, 1.25])
    with pytest.raises(ValueError, match="default's row moved"):
        A.merged(old_body, A.table_rows(figs, rerun, with_faults=False), vs)
