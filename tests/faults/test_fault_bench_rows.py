"""The fault bench's saved rows: a resumed bench tabulates each run once."""

from __future__ import annotations

import json
from pathlib import Path

from bench.faults import loaded_rows, table


def _row(proto: str, fault: str, draw: int, recover: float | None) -> dict:
    return {"draw": draw, "protocol": proto, "fault": fault, "tree": {}, "wall_s": 1.0,
            "recover_s": recover, "affected": True, "stalls": 0}


def test_a_run_saved_twice_counts_once_as_its_last_row(tmp_path: Path) -> None:
    first, resumed = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in (
        _row("tfmcc", "link_change", 0, None), _row("tfmcc", "link_change", 1, 2.0))))
    # the resumed bench ran draw 1 again, and draw 2
    resumed.write_text("".join(json.dumps(r) + "\n" for r in (
        _row("tfmcc", "link_change", 1, 3.0), _row("tfmcc", "link_change", 2, 1.0))) + "\n")
    rows = loaded_rows([first, resumed])
    assert sorted((r["draw"], r["recover_s"]) for r in rows) == [(0, None), (1, 3.0), (2, 1.0)]
    ((proto, fault, draws, within, median, worst, _lost, stalls),) = table(rows)
    assert (proto, fault, draws, stalls) == ("tfmcc", "link_change", 3, "0")
    assert within == 2 / 3 and (median, worst) == ("2.0", "never")
