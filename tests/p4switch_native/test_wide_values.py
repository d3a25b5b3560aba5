"""Widths at and above the machine word: both pipelines agree bit for bit.

``programs/wide.p4`` computes 48-, 64- and 128-bit results (wrap-around,
run-time shifts, saturation, signed shifts and comparisons, concatenation,
slices across the 64-bit boundary, a register of 128-bit cells) from the
packet's fields and emits them; hypothesis draws the fields.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch
from p4mcc.p4switch.native import NativeSwitch, native_status

PROG = compile_file(str(Path(__file__).parent / "programs" / "wide.p4"))
REF, NAT = Switch(PROG), NativeSwitch(PROG)
EDGE64 = st.sampled_from([0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]) | st.integers(0, (1 << 64) - 1)
EDGE128 = st.sampled_from([0, (1 << 64) - 1, 1 << 64, (1 << 128) - 1]) | st.integers(0, (1 << 128) - 1)


def test_wide_program_runs_native() -> None:
    assert NAT.native, native_status(PROG)


@settings(max_examples=300, deadline=None, database=None)
@given(EDGE64, EDGE64, EDGE128, st.integers(0, (1 << 48) - 1), EDGE64, st.integers(0, 255), st.integers(0, 255))
def test_wide_results_equal(x: int, y: int, z: int, t: int, s: int, n: int, op: int) -> None:
    pkt = (x.to_bytes(8, "big") + y.to_bytes(8, "big") + z.to_bytes(16, "big") + t.to_bytes(6, "big")
           + s.to_bytes(8, "big") + bytes([n, op]) + b"payload")
    a = REF.process(0, pkt, 1.0)
    b = NAT.process(0, pkt, 1.0)
    assert [(o.port, o.data) for o in a] == [(o.port, o.data) for o in b]
    assert len(a) == 1
    assert [REF.register_read("I.acc", i) for i in range(4)] == [NAT.register_read("I.acc", i) for i in range(4)]
