"""A sweep's files are written whole or not at all: a write that dies leaves the previous file."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.sweep import store


def test_a_write_that_dies_keeps_the_previous_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "results.parquet"
    target.write_bytes(b"previous")

    def dies(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store._replace(target, dies)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.parquet"]


def test_a_point_is_saved_under_its_id(tmp_path: Path) -> None:
    s = store.Store(tmp_path)
    s.save({"id": "p1", "value": 1})
    assert s.done() == {"p1"}
    assert sorted(p.name for p in (tmp_path / store.POINTS).iterdir()) == ["p1.json"]
