"""Small builders and assertions used across the front-end tests."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import compile_text
from p4mcc.p4switch.frontend.errors import P4Error

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
FEATURES = os.path.join(PROGRAMS, "features.p4")

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct H { h_t h; h_t[2] st; }
struct M { bit<8> x; bit<16> y; int<8> s; bool f; bit<32> w; }
"""


def v1(ingress_body: str = "", ingress_locals: str = "", top: str = "",
       parser_states: str = "") -> str:
    """A complete v1model program with the given ingress body/locals."""
    states = parser_states or "state start { pkt.extract(hdr.h); transition accept; }"
    return PRELUDE + top + f"""
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    {states}
}}
control VC(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {ingress_locals}
    apply {{
        {ingress_body}
    }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def compile_src(src: str, filename: str = "t.p4") -> A.Program:
    return compile_text(src, filename)


def error_of(src: str, filename: str = "t.p4") -> P4Error:
    with pytest.raises(P4Error) as ei:
        compile_text(src, filename)
    return ei.value


def position_of(src: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the ``occurrence``-th ``needle`` in ``src``."""
    idx = -1
    for _ in range(occurrence + 1):
        idx = src.index(needle, idx + 1)
    line = src.count("\n", 0, idx) + 1
    col = idx - (src.rfind("\n", 0, idx) + 1) + 1
    return line, col


def ingress(prog: A.Program) -> A.ControlDecl:
    d = prog.v1model["ingress"].decl
    assert isinstance(d, A.ControlDecl)
    return d


def body_stmts(prog: A.Program) -> list[A.Statement]:
    return ingress(prog).body.stmts


def all_nodes(root: object) -> Iterator[A.Node]:
    from fe_irwalk import nodes

    return nodes(root)
