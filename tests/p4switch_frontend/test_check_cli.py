"""``p4mcc check``: exit statuses and the diagnostic format."""

from __future__ import annotations

import importlib.util
import os

import pytest
from fe_util import FEATURES, v1

from p4mcc.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_valid_program_exits_zero_silently(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([FEATURES], capsys)
    assert (rc, out, err) == (0, "", "")


def test_error_prints_location_source_line_and_caret(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    src = v1(ingress_body="\tm.x = m.x + m.nosuch;")
    path = tmp_path / "bad.p4"
    path.write_text(src)
    rc, out, err = run([str(path)], capsys)
    assert rc == 1 and out == ""
    lines = err.rstrip("\n").split("\n")
    line_no = src[:src.index("m.nosuch")].count("\n") + 1
    source_line = src.split("\n")[line_no - 1]
    col = source_line.index("nosuch") + 1
    assert lines[0] == f"{path}:{line_no}:{col}: error: M has no field 'nosuch'"
    assert lines[1] == source_line
    assert lines[2].endswith("^") and len(lines[2]) == col
    # the caret line reproduces tabs so the caret sits under the same column
    assert lines[2][:col - 1].strip(" ") == "\t"
    assert "Traceback" not in err


def test_defines_and_include_dirs_reach_the_preprocessor(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "w.p4").write_text("const bit<8> W = WVAL;\n")
    prog = tmp_path / "p.p4"
    prog.write_text('#include "w.p4"\n#ifndef FLAG\n#error FLAG must be set\n#endif\n')
    rc, _, err = run([str(prog), "-I", str(tmp_path / "inc"), "-D", "WVAL=3"], capsys)
    assert rc == 1 and "#error FLAG must be set" in err
    rc, _, err = run([str(prog), "-I", str(tmp_path / "inc"), "-D", "WVAL=3", "-D", "FLAG"], capsys)
    assert (rc, err) == (0, "")
    rc, _, err = run([str(prog), "-D", "FLAG"], capsys)
    assert rc == 1 and "cannot find included file 'w.p4'" in err


def test_unreadable_file_is_a_clean_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run([str(tmp_path / "missing.p4")], capsys)
    assert rc == 1 and "error: cannot read file" in err and "Traceback" not in err
    binary = tmp_path / "bin.p4"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    rc, _, err = run([str(binary)], capsys)
    assert rc == 1 and "error:" in err


def test_p4info_option(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p4info.txt"
    rc, _, err = run([FEATURES, "--p4info", str(out)], capsys)
    if importlib.util.find_spec("p4mcc.p4switch.p4rt.p4info") is None:
        assert rc == 2 and "not available" in err
        return
    assert rc == 0, err
    text = out.read_text()
    assert "MyIngress.fwd" in text and os.path.getsize(out) > 0
