"""docs/wire-dissected.md shows every message dissected exactly as the layers dissect it today."""

from __future__ import annotations

from pathlib import Path

from p4mcc.hosts import wire, wire_show

DOC = Path(__file__).resolve().parents[2] / "docs" / "wire-dissected.md"


def test_dissected_examples_are_current() -> None:
    assert wire_show.render() in DOC.read_text(), (
        "docs/wire-dissected.md's packets drifted; regenerate with `python -m p4mcc.hosts.wire_show`")


def test_every_message_type_has_a_dissected_example() -> None:
    text = wire_show.render()
    for mtype, cls in wire.message_types().items():
        assert f"### {cls.__name__} (0x{int(mtype):02x})" in text
        assert f"msg_type  = {mtype.name}" in text
        for f in cls.BODY:
            assert f"\n     {f.name}" in text
