"""A protocol page's named-rule tables list every rule its rule book registers, and their test
column names tests that exist and are about the rule.

A rule is a behaviour beyond the paper with a test that fails without it; the page says which
test that is.  A renamed or deleted test, or a test file that no longer speaks of the rule,
leaves the page pointing at nothing: this check reads the tests with ``ast`` (nothing is
imported or run) and fails on such a cell.  A cell names each test by its full id,
``tests/<file>.py::test_<name>`` (a pytest node id), so a reader can run it as written: a bare
``test_<name>`` (which file?) and a whole file (which of its tests fails without the rule?) are
refused, and so is a cell that names no test.
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
#: A full test id: the file under tests/ and the test function in it.
TEST_ID_RE = re.compile(r"tests/[\w/]+\.py::test_\w+")


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


def cell_problems(row: Row, root: Path, page: str) -> list[str]:
    """What is wrong with ``row``'s test cell on ``page``: each entry must be a full test id
    whose test exists and whose file names the rule."""
    where = f"{page} line {row.line}, `{row.rule}`"
    assert row.tests is not None
    names = re.findall(r"`([^`]+)`", row.tests)
    if not names:
        return [f"{where}: the test cell names no test (a rule has a test that fails without it)"]
    problems = []
    for name in names:
        if not TEST_ID_RE.fullmatch(name):
            problems.append(f"{where}: {name!r} is not a full test id tests/<file>.py::test_<name> "
                            "(bare test names and whole files are refused)")
            continue
        file, _, func = name.partition("::")
        path = root / file
        if not path.is_file():
            problems.append(f"{where}: {file} does not exist")
        elif func not in defined_tests(path):
            problems.append(f"{where}: {file} defines no {func}")
        elif row.rule not in path.read_text():
            problems.append(f"{where}: {file} never names the rule")
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
    page = f"docs/protocols/{protocol}.md"
    problems += [p for r in rows if r.tests is not None for p in cell_problems(r, ROOT, page)]
    assert not problems, f"docs/protocols/{protocol}.md:\n" + "\n".join(problems)


PAGE = """\
| rule | role | what it changes | reason | test |
|---|---|---|---|---|
| `halve` (not in `default`) | sender | halves | ours | {cell} |

| rule | code | test |
|---|---|---|
| 1. `not_a_named_rule` | `_x` | `test_gone` |
"""


NOT_FULL = "is not a full test id tests/<file>.py::test_<name> (bare test names and whole files are refused)"


@pytest.mark.parametrize("cell, problem", [
    ("`tests/test_toy.py::test_halves`", None),
    ("`tests/test_toy.py::test_halves_renamed`", "defines no test_halves_renamed"),
    ("`tests/test_gone.py::test_halves`", "tests/test_gone.py does not exist"),
    ("`tests/test_other.py::test_other`", "never names the rule"),
    ("`test_halves`", NOT_FULL),
    ("`tests/test_toy.py`", NOT_FULL),
    ("`test_nowhere`", NOT_FULL),
    ("`halves.py::test_halves`", NOT_FULL),
    ("`tests/test_toy.py::halves`", NOT_FULL),
    ("`toy::test_halves`", NOT_FULL),
    ("none", "names no test"),
    ("", "names no test"),
])
def test_a_renamed_deleted_or_unrelated_test_is_caught(tmp_path: Path, cell: str, problem: str | None) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_toy.py").write_text(
        'RULES = {"halve": True}\n\nclass TestRate:\n    def test_halves(self):\n        pass\n')
    (tmp_path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    rows = rule_rows(PAGE.format(cell=cell))
    assert [(r.rule, r.line) for r in rows] == [("halve", 3)]
    found = cell_problems(rows[0], tmp_path, "docs/protocols/toy.md")
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found
        assert found[0].startswith("docs/protocols/toy.md line 3, `halve`: "), found  # the page and row
