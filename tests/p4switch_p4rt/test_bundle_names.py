"""Any bundle file name gets a compile or INVALID_ARGUMENT, never another error or the switch's folder."""

from __future__ import annotations

import json
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from p4mcc.p4switch.p4rt.devconfig import BUNDLE_FORMAT, check_bundle_names, compile_device_config
from p4mcc.p4switch.p4rt.errors import Code, P4RTError

MAIN = "#include <core.p4>\n"
PIECE = st.text(st.sampled_from("ab./\\\0 -é\u202e"), max_size=6) | st.just("a" * 300) | st.just("..")
NAME = st.lists(PIECE, min_size=1, max_size=4).map("".join)


@settings(max_examples=150, deadline=None)
@given(names=st.lists(NAME, max_size=4, unique=True), include=st.booleans())
def test_any_name_compiles_or_is_invalid_argument_without_the_switch_folder(names, include) -> None:
    files = {"main.p4": MAIN + ("".join(f'#include "{n}"\n' for n in names[:1]) if include else "")}
    files.update({n: "const bit<8> K = 1;\n" for n in names if n != "main.p4"})
    doc = {"format": BUNDLE_FORMAT, "main": "main.p4", "files": files}
    try:
        compile_device_config(json.dumps(doc).encode())
    except P4RTError as e:
        assert e.code == Code.INVALID_ARGUMENT, e
        assert "p4mcc-cfg" not in e.message and tempfile.gettempdir() + "/" not in e.message


def test_names_that_are_fine_pass_the_check() -> None:
    check_bundle_names({"main.p4": MAIN, "include/wire.p4": "", "include/x/y.p4": ""}, "main.p4")
