"""A scenario file is measured before it is built, and holds plain data only.

A 10^6-line file, a one-line mapping of 500,000 keys or a few aliases that
expand to 10^9 values are refused from a count (lines, or the parser's
events), in under 2 s of CPU and 200 MB; YAML tags that build anything but
plain data are refused with their position.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from p4mcc.scenario.model import ScenarioError, load_scenario
from p4mcc.scenario.reader import MAX_LINES, MAX_VALUES, read_document

ROOT = Path(__file__).resolve().parents[2]

MEASURE = r"""
import json, re, sys, time
from p4mcc.scenario.model import ScenarioError, load_scenario
cpu = time.process_time()
try:
    load_scenario(sys.argv[1])
    problems = []
except ScenarioError as e:
    problems = e.problems
# VmHWM: this process's peak resident memory (ru_maxrss would carry the parent's across exec)
hwm = re.search(r"VmHWM:\s*(\d+) kB", open("/proc/self/status").read())
print(json.dumps({"cpu_s": time.process_time() - cpu, "problems": problems, "peak_mb": int(hwm.group(1)) / 1024}))
"""


def refused_within_budget(path: Path) -> list[str]:
    """Load ``path`` in a fresh process; assert it is refused in < 2 s CPU and < 200 MB peak."""
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["problems"], "the document was accepted"
    assert got["cpu_s"] < 2.0, got
    assert got["peak_mb"] < 200, got
    return got["problems"]


def test_a_million_line_scenario_is_refused_by_its_line_count(tmp_path) -> None:
    f = tmp_path / "huge.yaml"
    f.write_text("".join(f"k{i}: {i}\n" for i in range(10**6)))
    assert refused_within_budget(f) == [f"{f}: 1000000 lines, more than the {MAX_LINES} a scenario file may have"]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_one_line_mapping_of_500000_keys_is_refused_by_its_value_count(tmp_path, suffix) -> None:
    f = tmp_path / f"wide{suffix}"
    f.write_text("{" + ", ".join(f'"k{i}": {i}' for i in range(500_000)) + "}\n")
    (problem,) = refused_within_budget(f)
    assert f"more than {MAX_VALUES} values in one document" in problem


def test_aliases_that_expand_to_a_billion_values_are_refused_unexpanded(tmp_path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    f = tmp_path / "laughs.yaml"
    f.write_text("\n".join(lines) + "\n")
    (problem,) = refused_within_budget(f)
    assert "aliases counted as often as used" in problem


@pytest.mark.parametrize("text,tag,where", [
    ("name: !!binary aGVsbG8=\n", "!!binary", "line 1, column 7"),
    ("topology: {}\nx: !!set {a, b}\n", "!!set", "line 2, column 4"),
    ("start: !!timestamp 2026-01-01\n", "!!timestamp", "line 1, column 8"),
    ("name: !!python/object/apply:os.getpid []\n", "!!python/object/apply:os.getpid", "line 1, column 7"),
    ("name: !custom x\n", "!custom", "line 1, column 7"),
])
def test_a_tag_outside_plain_data_is_refused_with_its_position(tmp_path, text, tag, where) -> None:
    f = tmp_path / "tagged.yaml"
    f.write_text(text)
    with pytest.raises(ScenarioError) as ei:
        load_scenario(f)
    assert ei.value.problems == [f"{f}: {where}: tag {tag!r} is not plain data "
                                 "(mappings, lists, text, numbers, booleans, null)"]


def test_plain_tags_and_an_unquoted_date_read_as_plain_data(tmp_path) -> None:
    f = tmp_path / "plain.yaml"
    f.write_text("a: !!str 5\nb: !!int '6'\nc: 2026-01-01\nd: !!map {e: !!seq [1]}\n")
    assert read_document(f) == {"a": "5", "b": 6, "c": "2026-01-01", "d": {"e": [1]}}


def test_the_largest_shipped_file_is_far_inside_both_budgets() -> None:
    f = ROOT / "bench" / "sweeps" / "friendliness.yaml"
    from p4mcc.scenario.reader import measure_yaml

    text = f.read_text()
    assert text.count("\n") * 10 <= MAX_LINES
    assert measure_yaml(text) * 10 <= MAX_VALUES
    assert read_document(f)
