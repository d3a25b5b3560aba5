"""A protocol page's named-rule tables list every rule its rule book registers, and their test
column, where the page has one, names tests that exist and are about the rule.

A rule is a behaviour beyond the paper with a test that fails without it; the page says which
test that is.  A renamed or deleted test, or a test file that no longer speaks of the rule,
leaves the page pointing at nothing: this check reads the tests with ``ast`` (nothing is
imported or run) and fails on such a cell.  A cell names tests as ``tests/<file>.py::<test>``
(a pytest node id), ``tests/<file>.py`` (the file's tests as a whole) or a bare ``test_<name>``
defined in some test file; "none" says no test pins the rule.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from p4mcc.hosts import registry

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = registry.names()
NAME_RE = re.compile(r"`([a-z0-9_]+)`")
TEST_NAME_RE = re.compile(r"test_\w+")


@dataclass(frozen=True)
class Row:
    """One row of a named-rule table: the rule, its line, and its test cell's text (None: no column)."""

    rule: str
    line: int
    tests: str | None


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def rule_rows(text: str) -> list[Row]:
    """Every row of the page's named-rule tables: a table whose header starts with ``rule`` and
    has a ``what it changes`` column (the paper's rule table, ``| rule | code | ...``, is not one)."""
    rows: list[Row] = []
    header: list[str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        row = cells(line)
        if header is None:
            header = row if row[0] == "rule" and "what it changes" in row else []
            continue
        if not header or re.fullmatch(r"[-: |]+", line):
            continue
        name = NAME_RE.search(row[0])
        assert name, f"line {n}: a rule row whose first cell names no rule: {row[0]!r}"
        rows.append(Row(name.group(1), n, row[-1] if header[-1] == "test" else None))
    return rows


@functools.cache
def defined_tests(path: Path) -> frozenset[str]:
    """The test functions ``path`` defines, at module level or in a class (read, not imported)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = [*tree.body, *(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body)]
    return frozenset(n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def suite_files(root: Path) -> list[Path]:
    return sorted((root / "tests").rglob("test_*.py"))


def cell_problems(row: Row, root: Path) -> list[str]:
    """What is wrong with ``row``'s test cell: each name must exist and its file must name the rule."""
    where = f"line {row.line}, `{row.rule}`"
    assert row.tests is not None
    names = re.findall(r"`([^`]+)`", row.tests)
    if not names:
        return [] if row.tests == "none" else [f"{where}: the test cell names no test (write none if none pins it)"]
    problems = []
    for name in names:
        file, _, func = name.partition("::")
        if file.endswith(".py"):
            path = root / file
            if not path.is_file():
                problems.append(f"{where}: {file} does not exist")
                continue
            if func and func not in defined_tests(path):
                problems.append(f"{where}: {file} defines no {func}")
            elif row.rule not in path.read_text():
                problems.append(f"{where}: {file} never names the rule")
        elif TEST_NAME_RE.fullmatch(name):
            homes = [p for p in suite_files(root) if name in defined_tests(p)]
            if not homes:
                problems.append(f"{where}: no test file defines {name}")
            elif not any(row.rule in p.read_text() for p in homes):
                problems.append(f"{where}: {name}'s file never names the rule")
        else:
            problems.append(f"{where}: {name!r} is neither tests/<file>.py[::test_<name>] nor test_<name>")
    return problems


def page_of(protocol: str) -> Path:
    return ROOT / "docs" / "protocols" / f"{protocol}.md"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_registered_rule_has_one_row(protocol: str) -> None:
    rows = [r.rule for r in rule_rows(page_of(protocol).read_text())]
    registered = registry.get(protocol).rules.names()
    missing = [n for n in registered if n not in rows]
    unknown = [n for n in rows if n not in registered]
    twice = sorted({n for n in rows if rows.count(n) > 1})
    assert not (missing or unknown or twice), (
        f"docs/protocols/{protocol}.md rule tables: missing {missing}, not registered {unknown}, twice {twice}")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_named_test_exists_and_names_its_rule(protocol: str) -> None:
    rows = rule_rows(page_of(protocol).read_text())
    assert rows, f"docs/protocols/{protocol}.md has no rule table"
    problems = [f"{r.rule}: its table has no test column" for r in rows if r.tests is None]
    problems += [p for r in rows if r.tests is not None for p in cell_problems(r, ROOT)]
    assert not problems, f"docs/protocols/{protocol}.md:\n" + "\n".join(problems)


PAGE = """\
| rule | role | what it changes | reason | test |
|---|---|---|---|---|
| `halve` (not in `default`) | sender | halves | ours | {cell} |

| rule | code | test |
|---|---|---|
| 1. `not_a_named_rule` | `_x` | `test_gone` |
"""


@pytest.mark.parametrize("cell, problem", [
    ("`tests/test_toy.py::test_halves`", None),
    ("`test_halves`", None),
    ("`tests/test_toy.py`", None),
    ("none", None),
    ("`tests/test_toy.py::test_halves_renamed`", "defines no test_halves_renamed"),
    ("`tests/test_gone.py::test_halves`", "tests/test_gone.py does not exist"),
    ("`tests/test_other.py::test_other`", "never names the rule"),
    ("`test_other`", "never names the rule"),
    ("`test_nowhere`", "no test file defines test_nowhere"),
    ("", "names no test"),
    ("`halves.py::x`", "does not exist"),
    ("`toy::test_halves`", "is neither"),
])
def test_a_renamed_deleted_or_unrelated_test_is_caught(tmp_path: Path, cell: str, problem: str | None) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_toy.py").write_text(
        'RULES = {"halve": True}\n\nclass TestRate:\n    def test_halves(self):\n        pass\n')
    (tmp_path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    rows = rule_rows(PAGE.format(cell=cell))
    assert [(r.rule, r.line) for r in rows] == [("halve", 3)]
    found = cell_problems(rows[0], tmp_path)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found
