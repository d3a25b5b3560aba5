"""The native switch's control-plane API keeps the interpreter's meaning.

Direct counters count in native memory: a write through the API is the
value counting goes on from, a read sees every packet counted since.
A program the emitter does not cover runs on the interpreter, with one
notice per program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch
from p4mcc.p4switch.native import NativeSwitch, make_switch, native_status

V1 = Path(__file__).resolve().parents[2] / "tests" / "stf" / "v1model"
# ext header: op (8 bits), a, b (32 bits), h16, h32 (see externs.p4)
COUNTED = bytes.fromhex("04" "00000001" "00000000" "0000" "00000000")


def _both(name: str) -> list[Any]:
    prog = compile_file(str(V1 / f"{name}.p4"))
    return [Switch(prog), NativeSwitch(prog)]


def test_direct_counter_write_then_count_on_both_paths() -> None:
    outs = []
    for sw in _both("externs"):
        h = sw.table_add("counted", {"h.ext.a": 1}, "hit_dc")
        sw.process(0, COUNTED, 1.0)
        assert sw.direct_counter_read("counted", h)[0] == 1
        sw.direct_counter_write("counted", h, 7, 0)
        assert sw.direct_counter_read("counted", h)[0] == 7
        sw.process(0, COUNTED, 2.0)
        sw.process(0, COUNTED, 3.0)
        h2 = sw.table_add("counted", {"h.ext.a": 2}, "hit_dc")  # a write after counting keeps the counts
        sw.process(0, COUNTED, 4.0)
        outs.append((sw.direct_counter_read("counted", h)[0], sw.direct_counter_read("counted", h2)[0]))
    assert outs[0] == outs[1] == (10, 0)


def test_register_api_reaches_native_memory() -> None:
    sw = NativeSwitch(compile_file(str(V1 / "externs.p4")))
    assert sw.native
    name = next(iter(sw.registers))
    r = sw.registers[name]
    sw.register_write(name, r.size - 1, (1 << r.width) + 5)  # masked to the cell width, as the runtime does
    assert sw.register_read(name, r.size - 1) == 5
    sw.register_reset(name)
    assert sw.register_read(name, r.size - 1) == 0


def test_unsupported_program_runs_on_the_interpreter_with_one_notice(capsys: Any) -> None:
    prog = compile_file(str(V1 / "tm.p4"))
    a, b = NativeSwitch(prog), NativeSwitch(prog)
    assert not a.native and not b.native
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("p4mcc: native pipeline not used (")
    assert "clone" in native_status(prog)


def test_unknown_pipeline_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown pipeline"):
        make_switch(compile_file(str(V1 / "forward.p4")), "jit")


def test_a_register_view_keeps_its_native_memory() -> None:
    import gc

    sw = NativeSwitch(compile_file(str(V1 / "externs.p4")))
    name = next(iter(sw.registers))
    view = sw.registers[name]
    view.write(0, 3)
    del sw
    gc.collect()
    assert view.read(0) == 3  # the switch's memory is freed only with its last view


def test_without_a_c_compiler_the_interpreter_runs_and_says_so(tmp_path: Path, monkeypatch: Any,
                                                                capsys: Any) -> None:
    monkeypatch.setenv("P4MCC_NATIVE_CACHE", str(tmp_path))  # nothing built yet
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    prog = compile_file(str(V1 / "forward.p4"))
    sw = NativeSwitch(prog)
    assert not sw.native
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "C compiler" in err[0] and "running the interpreter" in err[0]
    ref = Switch(prog)
    frame = bytes(64)
    assert [(o.port, o.data) for o in sw.process(0, frame)] == [(o.port, o.data) for o in ref.process(0, frame)]
