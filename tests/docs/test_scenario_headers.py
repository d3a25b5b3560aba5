"""Every scenario file opens with at most ten lines a newcomer can act on.

What it demonstrates, the expected result as a range of numbers, and a
``p4mcc`` command that runs this very file (and parses), so the header
cannot grow back into a run history or point at a file that moved.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.docs.test_docs import _parser, parse_error  # noqa: E402
SCENARIOS = sorted((ROOT / "topologies" / "scenarios").rglob("*.yaml"))
MAX_HEADER = 10


def header(path: Path) -> list[str]:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return lines


def run_commands(lines: list[str]) -> list[str]:
    """The ``p4mcc`` command lines of the ``Run:`` line and its continuations."""
    start = next((i for i, line in enumerate(lines) if line.startswith("Run:")), None)
    if start is None:
        return []
    out = []
    for line in lines[start:]:
        out += [m.strip() for m in re.findall(r"(?:^|[\s(:])(p4mcc \w[^()#]*)", line)]
    return out


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 20


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.relative_to(ROOT / "topologies" / "scenarios").as_posix())
def test_header_is_short_and_says_what_to_expect_and_how_to_run(path: Path) -> None:
    lines = header(path)
    rel = path.relative_to(ROOT).as_posix()
    assert 3 <= len(lines) <= MAX_HEADER, f"{rel}: a header of {len(lines)} lines (3 to {MAX_HEADER})"
    assert lines[0].startswith(path.stem + ":"), f"{rel}: the first line names the scenario: {lines[0]!r}"
    first = next((i for i, line in enumerate(lines) if line.startswith("Expect")), len(lines))
    run = next((i for i, line in enumerate(lines) if line.startswith("Run:")), len(lines))
    expect = " ".join(lines[first:run])
    assert re.search(r"\d", expect), f"{rel}: no 'Expect' line with a figure or range"
    commands = run_commands(lines)
    mine = [c for c in commands if rel in shlex.split(c)]
    assert mine, f"{rel}: no 'Run:' command that names this file (found {commands})"
    parser = _parser()
    for command in mine:
        assert parse_error(parser, command) is None, f"{rel}: {command!r}: {parse_error(parser, command)}"


def test_a_long_header_or_a_foreign_run_line_is_caught(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("# x: a thing\n# Expect: 1-2\n# Run: p4mcc sim other.yaml --out r  # note\nname: x\n")
    assert run_commands(header(f)) == ["p4mcc sim other.yaml --out r"]
    f.write_text("".join(f"# line {i}\n" for i in range(11)) + "name: x\n")
    assert len(header(f)) > MAX_HEADER
