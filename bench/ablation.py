"""Every named rule of a protocol measured on its own (``bench/friendliness.py --ablate PROTO``).

A protocol is its paper plus named rules (``hosts/rules.py``); a rule stays
in ``default`` only if removing it costs something measurable, and enters
``default`` only after adding it was measured to help.  The ablation runs the
friendliness grid (or the off-grid draws) for these variants of the
protocol, each through ``p4mcc sweep`` as one more axis of the grid
(``sessions[0].profile`` and ``sessions[0].rules``):

- ``default`` and ``paper`` themselves;
- ``default -R`` for each rule R of ``default`` (with the default rules that
  need R, which cannot run without it);
- ``default +R`` for each rule R of the book outside ``default`` (with the
  rules R needs; a rule of ``default`` holding the slot R takes is switched
  off, with the default rules that need it), run even without the
  ``paper +R`` arms, so every candidate has a row before it may enter;
- ``paper +R`` for each rule R of the book (with the rules R needs).

Rules that read the congestion stamp only (:func:`stamp_only`: those of the
``stamped`` profile outside ``default``, and the rules that need one) get no
``default +R`` arm: the grid's switches write no stamp (no session asks for
it), so on the grid such a rule reads an empty stamp and its row would
measure nothing.  ``bench/assistance.py --stamp`` measures them, on switches
that stamp; the generated prose names them.  A rule outside every profile
runs as ``default +R`` whatever it reads.

Per variant it gives, beside ``default``: the median ratio and its change,
the cells in [0.5, 2] and the cells that left it, the median utilisation,
the median time to 80 % of the fair share and, with fault rows, the fault
cases of ``bench/faults.py`` that fail.  Per rule of ``default`` it says
whether the rule earns its place, by the criterion of :func:`verdict`; per
rule outside it, whether it would enter ``default``, by :func:`would_enter`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from p4mcc.hosts.rules import DEFAULT, PAPER, STAMPED

#: The criteria's thresholds: a rule earns its place in ``default`` when
#: removing it moves the median ratio by at least this much (a rule outside
#: ``default`` would enter when adding it moves the median this much toward 1), ...
MEDIAN_MOVE = 0.05
#: ... or makes the median time to 80 % of the share at least this much longer
#: (would enter: this much shorter), ...
T80_GROWTH = 0.10
#: ... or a cell leaves [0.5, 2] (would enter: a cell enters it), or a fault
#: row fails (would enter: a failing one passes).  A fault row fails
#: when the session has not recovered within this bound (s; the faults
#: tests' bound), never recovered, or a reliable protocol lost data.
FAULT_BOUND_S = 5.0
BOUND = (0.5, 2.0)


def page(proto: str) -> str:
    """Where ``--docs`` writes a protocol's ablation tables (relative to the checkout): a page
    of their own beside the protocol's, so the protocol's page stays readable in one sitting."""
    return f"docs/protocols/{proto}-ablation.md"


@dataclass(frozen=True)
class Variant:
    """One arm of the ablation: a profile and the rules switched on top of it."""

    name: str
    profile: str
    switches: dict[str, bool] = field(default_factory=dict)
    #: The rule this variant removes from ``default`` (``-``) or adds to ``profile`` (``+``).
    rule: str = ""
    sign: str = ""

    @property
    def candidate(self) -> bool:
        """A ``default +R`` arm: a rule outside ``default`` measured for entry."""
        return self.sign == "+" and self.profile == DEFAULT

    def rules_value(self) -> dict[str, str]:
        """The ``sessions[0].rules`` value written into the sweep (on/off words)."""
        return {k: "on" if v else "off" for k, v in sorted(self.switches.items())}

    def key(self) -> tuple[str, str]:
        """How the variant's rows are told apart in the sweep table (its axis columns)."""
        return self.profile, json.dumps(self.rules_value(), sort_keys=True, separators=(",", ":"))


def _needs(book: Any, name: str) -> list[str]:
    """``name`` and every rule it needs, transitively, in the book's order."""
    want, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n not in want:
            want.add(n)
            todo.extend(book.get(n).requires)
    return [n for n in book.names() if n in want]


def _needed_by(book: Any, name: str, among: set[str]) -> list[str]:
    """``name`` and every rule of ``among`` that needs it, transitively, in the book's order."""
    gone, changed = {name}, True
    while changed:
        changed = False
        for n in among - gone:
            if gone & set(book.get(n).requires):
                gone.add(n)
                changed = True
    return [n for n in book.names() if n in gone]


def stamp_only(book: Any) -> list[str]:
    """The rules that read the congestion stamp only, in the book's order: those of the
    ``stamped`` profile outside ``default``, and every rule outside ``default`` that needs one."""
    default = set(book.profiles[DEFAULT])
    only = {n for n in book.profiles.get(STAMPED, ()) if n not in default}
    grew = True
    while grew:
        more = {n for n in book.names() if n not in default and set(book.get(n).requires) & only} - only
        only |= more
        grew = bool(more)
    return [n for n in book.names() if n in only]


def candidates(book: Any) -> list[str]:
    """The rules measured as ``default +R``: outside ``default`` and not :func:`stamp_only`."""
    default, skipped = set(book.profiles[DEFAULT]), set(stamp_only(book))
    return [n for n in book.names() if n not in default and n not in skipped]


def _default_plus(book: Any, name: str) -> dict[str, bool]:
    """The switches that turn ``default`` into ``default +name``: ``name`` and the rules it needs
    that ``default`` lacks on; a default rule holding a slot one of them takes off, with the
    default rules that need it (a slot holds one rule)."""
    default = set(book.profiles[DEFAULT])
    on = [n for n in _needs(book, name) if n not in default]
    seats = {book.get(n).slot for n in on} - {None}
    off = {m for d in default if book.get(d).slot in seats for m in _needed_by(book, d, default)}
    return {n: n in on for n in book.names() if n in set(on) | off}


def variants(book: Any, plus: bool = True) -> list[Variant]:
    """The ablation's variants of a protocol's rule book, ``default`` first.

    With an empty book only ``default`` and ``paper`` run; ``plus`` False
    leaves out the ``paper +R`` arms (the verdicts read only ``default -R``
    and ``default +R``)."""
    default = set(book.profiles[DEFAULT])
    out = [Variant(DEFAULT, DEFAULT), Variant(PAPER, PAPER)]
    for name in book.names():
        if name in default:
            off = _needed_by(book, name, default)
            out.append(Variant(f"default -{name}", DEFAULT, {n: False for n in off}, name, "-"))
    for name in candidates(book):
        out.append(Variant(f"default +{name}", DEFAULT, _default_plus(book, name), name, "+"))
    for name in book.names() if plus else ():
        on = _needs(book, name)
        out.append(Variant(f"paper +{name}", PAPER, {n: True for n in on}, name, "+"))
    return out


def chosen(vs: list[Variant], names: str) -> list[Variant]:
    """``default`` and the variants ``names`` (comma-separated, as the table names them), so a
    change that moves a few arms reruns those alone (``--variants``, kept rows by :func:`merged`)."""
    want = [n.strip() for n in names.split(",") if n.strip()]
    known = {v.name for v in vs}
    unknown = [n for n in want if n not in known]
    if unknown:
        raise ValueError(f"--variants: unknown variant {', '.join(map(repr, unknown))} "
                         f"(known: {', '.join(sorted(known))})")
    return [v for v in vs if v.name == DEFAULT or v.name in want]


def _table_rows(body: str) -> dict[str, str]:
    """variant -> its Markdown row, from a generated section's body."""
    rows = [ln for ln in body.splitlines() if ln.startswith("| ") and not ln.startswith("| variant |")]
    return {ln.strip().strip("|").split("|")[0].strip(): ln for ln in rows}


def merged(old_body: str, new_rows: list[dict[str, str]], vs: list[Variant]) -> str:
    """The table of ``new_rows`` with the rows of ``old_body`` it does not cover, in ``vs``'s order,
    then where the kept rows come from (``old_body``'s stamp).

    The kept rows' changes are read against ``default``, so the merge holds only where the rerun
    ``default`` row is the old one to the digit; otherwise every variant has to run again.
    Rows of variants that no longer exist (a rule removed) are dropped."""
    old = _table_rows(old_body)
    new = _table_rows(markdown(new_rows))
    if DEFAULT not in old:
        raise ValueError("--merge: the section has no table to merge into")
    if old[DEFAULT] != new[DEFAULT]:
        raise ValueError(f"--merge: default's row moved, so the kept rows' changes no longer hold; "
                         f"rerun every variant\n  was: {old[DEFAULT]}\n  now: {new[DEFAULT]}")
    rows = [new.get(v.name) or old.get(v.name) for v in vs]
    table = markdown(new_rows).splitlines()[:2] + [r for r in rows if r]
    stamp = next((ln for ln in old_body.splitlines() if ln.startswith("_")), "").strip("_ ")
    rerun = ", ".join(f"`{r['variant']}`" for r in new_rows)
    kept = f"\n\nRerun here: {rerun}; the other rows are kept from the run stamped: {stamp}" if stamp else ""
    return "\n".join(table) + kept


def axis(vs: list[Variant]) -> dict[str, list[Any]]:
    """The variants as a zipped sweep group."""
    return {"sessions[0].profile": [v.profile for v in vs],
            "sessions[0].rules": [v.rules_value() for v in vs]}


def variant_of_rows(rows: list[dict[str, Any]], vs: list[Variant]) -> dict[int, str]:
    """point -> variant name, from the sweep table's axis columns."""
    by_key = {v.key(): v.name for v in vs}
    out = {}
    for r in rows:
        key = (r.get("sessions[0].profile"), r.get("sessions[0].rules"))
        if key in by_key:
            out[r["point"]] = by_key[key]
    return out


# Figures ---------------------------------------------------------------------


@dataclass
class Figures:
    """One variant's figures over the cells (each cell averaged over its seeds)."""

    name: str
    cells: dict[tuple, float]
    median: float
    in_bound: int
    util: float
    t80: float | None
    never: int
    faults_failed: list[str] = field(default_factory=list)


def figures(name: str, cells: list[dict[str, Any]]) -> Figures:
    """:class:`Figures` of one variant's per-cell records (``friendliness.per_cell``)."""
    ratios = {c["cell"]: c["ratio"] for c in cells}
    t80 = [c["t80"] for c in cells if c["t80"] is not None]
    return Figures(name, ratios, statistics.median(ratios.values()),
                   sum(BOUND[0] <= x <= BOUND[1] for x in ratios.values()),
                   statistics.median(c["util"] for c in cells),
                   statistics.median(t80) if t80 else None, sum(c["t80"] is None for c in cells))


def left_bound(base: Figures, other: Figures) -> list[tuple]:
    """Cells in [0.5, 2] under ``base`` and outside it under ``other``."""
    inside = lambda x: BOUND[0] <= x <= BOUND[1]  # noqa: E731
    return [c for c, x in base.cells.items() if inside(x) and c in other.cells and not inside(other.cells[c])]


def t80_growth(base: Figures, other: Figures) -> float | None:
    """Relative growth of the median time to 80 % (inf: ``other`` never got there)."""
    if base.t80 is None or base.t80 <= 0:
        return None
    if other.t80 is None:
        return float("inf")
    return other.t80 / base.t80 - 1


def verdict(default: Figures, without: Figures, with_faults: bool = True) -> tuple[bool, str]:
    """Whether a rule earns its place in ``default``, and why: removing it
    (``without``) makes a cell leave [0.5, 2], moves the median by
    :data:`MEDIAN_MOVE` or more, makes the time to 80 % :data:`T80_GROWTH`
    longer, or makes a fault row fail that passes with it.  Without fault
    rows (``with_faults`` False) the verdict says they were not run: a rule
    kept for a fault has not been judged."""
    why = []
    left = left_bound(default, without)
    if left:
        why.append(f"{len(left)} {'cells leave' if len(left) > 1 else 'cell leaves'} [0.5, 2]")
    move = without.median - default.median
    if abs(move) >= MEDIAN_MOVE - 1e-12:
        why.append(f"median moves {move:+.2f}")
    growth = t80_growth(default, without)
    if growth is not None and growth >= T80_GROWTH - 1e-12:
        why.append("never reaches 80 %" if growth == float("inf") else f"time to 80 % +{growth:.0%}")
    new_faults = [f for f in without.faults_failed if f not in default.faults_failed]
    if new_faults:
        why.append(f"fault rows fail: {', '.join(new_faults)}")
    if why:
        return True, "; ".join(why)
    return False, (f"median {move:+.2f}, no cell leaves [0.5, 2], time to 80 % "
                   f"{'-' if growth is None else f'{growth:+.0%}'}, "
                   + ("no fault row fails" if with_faults else "fault rows not run"))


def entered_bound(base: Figures, other: Figures) -> list[tuple]:
    """Cells outside [0.5, 2] under ``base`` and inside it under ``other``."""
    return left_bound(other, base)


def _cells(n: int, verb: str) -> str:
    return f"{n} {'cells' if n > 1 else 'cell'} {verb}{'' if n > 1 else 's'} [0.5, 2]"


def would_enter(default: Figures, with_rule: Figures, with_faults: bool = True) -> tuple[bool, str]:
    """Whether a rule outside ``default`` would enter it, and why: adding it (``with_rule``)
    gains something and costs nothing.  It gains when a cell enters [0.5, 2], the median
    ratio comes :data:`MEDIAN_MOVE` or more closer to 1, the median time to 80 % gets
    :data:`T80_GROWTH` shorter (or is reached where ``default`` never reaches it), or a
    failing fault row passes; it costs when a cell leaves [0.5, 2] or a fault row fails.
    The mirror of :func:`verdict`, with the same thresholds."""
    gains, costs = [], []
    entered = entered_bound(default, with_rule)
    if entered:
        gains.append(_cells(len(entered), "enter"))
    move = with_rule.median - default.median
    if abs(default.median - 1) - abs(with_rule.median - 1) >= MEDIAN_MOVE - 1e-12:
        gains.append(f"median moves {move:+.2f} toward 1")
    growth = t80_growth(default, with_rule)
    if default.t80 is None and with_rule.t80 is not None:
        gains.append("reaches 80 % where default never does")
    elif growth is not None and growth <= -T80_GROWTH + 1e-12:
        gains.append(f"time to 80 % {growth:.0%}")
    fixed = [f for f in default.faults_failed if f not in with_rule.faults_failed]
    if fixed:
        gains.append(f"fault rows pass: {', '.join(fixed)}")
    left = left_bound(default, with_rule)
    if left:
        costs.append(_cells(len(left), "leave"))
    broken = [f for f in with_rule.faults_failed if f not in default.faults_failed]
    if broken:
        costs.append(f"fault rows fail: {', '.join(broken)}")
    if gains and not costs:
        return True, "; ".join(gains)
    if costs:
        return False, "; ".join(costs) + (f" (against: {'; '.join(gains)})" if gains else "")
    return False, (f"median {move:+.2f}, no cell enters [0.5, 2], time to 80 % "
                   f"{'-' if growth is None else 'never' if growth == float('inf') else f'{growth:+.0%}'}, "
                   + ("no fault row passes that failed" if with_faults else "fault rows not run"))


def fault_failed(row: dict[str, Any]) -> bool:
    """A fault row (``bench/faults.run_one``) fails: no recovery within
    :data:`FAULT_BOUND_S`, or a reliable protocol lost data."""
    rec = row.get("recover_s")
    slow = rec is None or (isinstance(rec, (int, float)) and rec > FAULT_BOUND_S)
    return slow or bool(row.get("lost_bytes"))


# Table -----------------------------------------------------------------------


def table_rows(figs: dict[str, Figures], vs: list[Variant], with_faults: bool) -> list[dict[str, str]]:
    """The printed (and documented) rows: one per variant, ``default`` first."""
    base = figs["default"]
    paper = figs.get("paper")
    out = []
    for v in vs:
        f = figs.get(v.name)
        if f is None:
            continue
        ref = paper if v.sign == "+" and v.profile == PAPER and paper is not None else base
        n = len(f.cells)
        growth = t80_growth(base, f)
        row = {
            "variant": v.name,
            "median ratio": f"{f.median:.2f}" + ("" if v.name == "default" else f" ({f.median - base.median:+.2f})"),
            "in [0.5, 2]": f"{f.in_bound}/{n}" + (f" ({len(left_bound(base, f))} left)" if v.name != "default" else ""),
            "utilisation": f"{f.util:.2f}" + ("" if v.name == "default" else f" ({f.util - base.util:+.2f})"),
            "time to 80 %": ("-" if f.t80 is None else f"{f.t80:.1f} s")
                            + ("" if v.name == "default" or growth is None
                               else " (never)" if growth == float("inf") else f" ({growth:+.0%})")
                            + (f", {f.never} never" if f.never else ""),
        }
        if with_faults:
            row["fault rows failed"] = ", ".join(f.faults_failed) or "none"
        if v.sign == "-":
            earns, why = verdict(base, f, with_faults)
            row["earns its place"] = f"{'yes' if earns else 'no'} ({why})"
        elif v.candidate:
            enters, why = would_enter(base, f, with_faults)
            row["earns its place"] = f"would enter default: {'yes' if enters else 'no'} ({why})"
        elif v.sign == "+":
            row["earns its place"] = (f"not in default; vs paper: median {f.median - ref.median:+.2f}, "
                                      f"{f.in_bound - ref.in_bound:+d} cells in [0.5, 2]")
        else:
            row["earns its place"] = ""
        out.append(row)
    return out


def markdown(rows: list[dict[str, str]]) -> str:
    cols = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def print_rows(rows: list[dict[str, str]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for c in (list(rows[0]) if rows else []):
        t.add_column(c, justify="left" if c in ("variant", "earns its place", "fault rows failed") else "right",
                     overflow="fold")
    for r in rows:
        t.add_row(*r.values())
    Console(width=200).print(t)


def docs_body(rows: list[dict[str, str]], proto: str, tag: str, drawn: bool = False,
              skipped: list[str] | tuple[str, ...] = (), table: str | None = None) -> str:
    """A generated section of :func:`page`: what ran, the criteria and the table
    (``drawn``: the off-grid random dumbbells, which confirm what the grid chose);
    ``skipped``: the rules that read the stamp only (:func:`stamp_only`), which get no row;
    ``table``: the table to print in place of ``rows``' own (:func:`merged`)."""
    where = "random dumbbells drawn off the grid" if drawn else "the friendliness grid"
    note = (f" Rules that read the congestion stamp only ({', '.join(f'`{n}`' for n in skipped)}) get no "
            f"`default +R` row: no switch of the grid writes a stamp, so they are measured by "
            f"`bench/assistance.py --stamp` (docs/assistance.md).") if skipped else ""
    return (f"Ablation of {proto}'s rules on {where} ({tag}): each variant beside "
            f"`default`; a rule of `default` earns its place when removing it makes a cell leave "
            f"[0.5, 2], moves the median ratio by {MEDIAN_MOVE} or more, makes the median time to 80 % "
            f"of the share {T80_GROWTH:.0%} longer, or makes a fault row fail. A rule outside `default` "
            f"(`default +R`) would enter it when adding it makes a cell enter [0.5, 2], moves the median "
            f"ratio {MEDIAN_MOVE} or more toward 1, makes the median time to 80 % {T80_GROWTH:.0%} shorter "
            f"or makes a failing fault row pass, and makes no cell leave [0.5, 2] and no fault row "
            f"fail.{note}\n\n" + (markdown(rows) if table is None else table))
