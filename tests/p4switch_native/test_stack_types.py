"""Equal header-stack types are one C type in the emitted module.

Each ``T[n]`` in a program is its own type object in the front end; the C
emitter once gave each its own struct, so assigning one stack to another
of the same type did not compile and the program fell back to the
interpreter.  A copied stack must run native and give the interpreter's
frame."""

from __future__ import annotations

from pathlib import Path

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch
from p4mcc.p4switch.native import NativeSwitch

PROGRAM = Path(__file__).resolve().parent / "programs" / "stack_copy.p4"


def test_a_stack_assigned_to_one_of_its_type_runs_native_and_matches_the_interpreter() -> None:
    prog = compile_file(str(PROGRAM))
    native = NativeSwitch(prog)
    assert native.native, "the program fell back to the interpreter"
    frame = bytes([0x10, 0x20]) + b"payload"
    got = [(e.port, bytes(e.data)) for e in native.process(0, frame)]
    want = [(e.port, bytes(e.data)) for e in Switch(prog).process(0, frame)]
    assert got == want
    # seen, then the copy with its first tag moved on, then spare[2] (the only valid one), then payload
    assert got == [(1, bytes([0x10, 0x20, 0x11, 0x20, 0x20]) + b"payload")]
