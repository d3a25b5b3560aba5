"""The P4 headers in p4src/include/wire.p4 must match the Python wire format."""

from __future__ import annotations

import re
from pathlib import Path

from p4mcc.hosts import wire, wire_p4

WIRE_P4 = Path(__file__).resolve().parents[1] / "p4src" / "include" / "wire.p4"


def test_checked_in_p4_headers_equal_the_generated_ones() -> None:
    assert WIRE_P4.read_text() == wire_p4.render(), (
        "p4src/include/wire.p4 drifted from hosts/wire.py; regenerate with "
        "`python -m p4mcc.hosts.wire_p4 > p4src/include/wire.p4`"
    )


def test_p4_header_widths_sum_to_the_codec_sizes() -> None:
    text = WIRE_P4.read_text()
    for cls in wire.message_types().values():
        if not cls.BODY:
            continue
        block = re.search(r"header %s \{(.*?)\}" % wire_p4.header_name(cls), text, re.S)
        assert block, f"{wire_p4.header_name(cls)} missing from wire.p4"
        bits = sum(int(b) for b in re.findall(r"(?:bit|int)<(\d+)>", block.group(1)))
        assert bits == 8 * wire.body_size(cls)
    common = re.search(r"header mcc_common_t \{(.*?)\}", text, re.S)
    assert common and sum(int(b) for b in re.findall(r"bit<(\d+)>", common.group(1))) == 8 * wire.COMMON_LEN


def test_wire_format_doc_is_current() -> None:
    from p4mcc.hosts import wire_doc

    doc = (Path(__file__).resolve().parents[1] / "docs" / "wire-format.md").read_text()
    assert wire_doc.render() in doc, (
        "docs/wire-format.md drifted from hosts/wire.py; regenerate with `python -m p4mcc.hosts.wire_doc`"
    )
