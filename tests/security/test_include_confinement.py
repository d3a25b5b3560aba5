"""A P4 program reads only its own files: no pipeline can read or probe the switch's host.

The front end resolves ``#include`` only inside the program's folder, its
``-I`` folders and the P4 library; a pipeline pushed over P4Runtime has no
folder of its own, so it may include only its bundled files and the library.
The answer never depends on whether a file outside those folders exists.
"""

from __future__ import annotations

import json

import pytest

from p4mcc.p4switch.frontend import P4Error, compile_file, compile_text
from p4mcc.p4switch.frontend.preprocessor import MAX_SOURCE_BYTES
from p4mcc.p4switch.p4rt.devconfig import BUNDLE_FORMAT, compile_device_config
from p4mcc.p4switch.p4rt.errors import Code, P4RTError

MINIMAL = "#include <core.p4>\n#include <v1model.p4>\n"


@pytest.fixture
def secret(tmp_path):
    """A file outside every allowed folder, whose text must never show."""
    outside = tmp_path / "outside"
    outside.mkdir()
    f = outside / "secret.txt"
    f.write_text("root:TOPSECRET:19000:0:99999:7:::\n")
    return f


def _device_error(blob: bytes) -> P4RTError:
    with pytest.raises(P4RTError) as ei:
        compile_device_config(blob)
    return ei.value


def test_pushed_source_may_not_include_a_host_file(secret) -> None:
    err = _device_error(f'#include "{secret}"\n'.encode())
    assert err.code == Code.INVALID_ARGUMENT
    assert "may include only" in err.message
    assert "TOPSECRET" not in err.message


def test_an_existing_and_a_missing_host_file_give_the_same_answer(secret) -> None:
    present = _device_error(f'#include "{secret}"\n'.encode())
    missing = _device_error(f'#include "{secret.parent / "nosuch.txt"}"\n'.encode())
    assert present.code == missing.code
    assert present.message.replace(str(secret), "X") == missing.message.replace(
        str(secret.parent / "nosuch.txt"), "X")


def test_a_bundle_may_not_climb_out_of_itself(secret) -> None:
    rel = "../" * 12 + str(secret).lstrip("/")
    doc = {"format": BUNDLE_FORMAT, "main": "m.p4", "files": {"m.p4": f'#include "{rel}"\n'}}
    err = _device_error(json.dumps(doc).encode())
    assert err.code == Code.INVALID_ARGUMENT and "may include only" in err.message


def test_a_bundle_includes_its_own_files_and_the_library() -> None:
    doc = {"format": BUNDLE_FORMAT, "main": "m.p4",
           "files": {"m.p4": MINIMAL + '#include "h/defs.p4"\n', "h/defs.p4": "const bit<8> K = 7;\n"}}
    prog = compile_device_config(json.dumps(doc).encode())
    assert prog.find("K") is not None


def test_a_deeply_nested_bundle_is_invalid_argument_not_internal() -> None:
    err = _device_error(("{" + '"a":[' * 100_000 + "]" * 100_000 + "}").encode())
    assert err.code == Code.INVALID_ARGUMENT


@pytest.mark.parametrize("body", [{"x": 1}, ["x"], None, True])
def test_bundle_entries_must_be_text(body) -> None:
    doc = {"format": BUNDLE_FORMAT, "main": "m.p4", "files": {"m.p4": MINIMAL, "x.p4": body}}
    err = _device_error(json.dumps(doc).encode())
    assert err.code == Code.INVALID_ARGUMENT and "expected text" in err.message


def test_a_local_program_includes_from_its_folder_and_include_dirs_only(tmp_path, secret) -> None:
    prog_dir = tmp_path / "prog"
    prog_dir.mkdir()
    main = prog_dir / "main.p4"
    main.write_text(f'#include "../outside/{secret.name}"\n')
    with pytest.raises(P4Error) as ei:
        compile_file(str(main))
    assert (ei.value.span.line, ei.value.span.col) == (1, 1)
    assert "may include only" in ei.value.message
    # The same folder named with -I is allowed, so the file is read (and fails as P4).
    with pytest.raises(P4Error) as ei:
        compile_file(str(main), include_dirs=[str(secret.parent)])
    assert "may include only" not in ei.value.message


def test_a_symlink_out_of_the_program_folder_is_refused(tmp_path, secret) -> None:
    prog_dir = tmp_path / "prog"
    prog_dir.mkdir()
    (prog_dir / "link.p4").symlink_to(secret)
    (prog_dir / "dangling.p4").symlink_to(secret.parent / "nosuch.txt")
    main = prog_dir / "main.p4"
    answers = []
    for name in ("link.p4", "dangling.p4"):
        main.write_text(f'#include "{name}"\n')
        with pytest.raises(P4Error) as ei:
            compile_file(str(main))
        answers.append(ei.value.message.replace(name, "X"))
    assert answers[0] == answers[1] == "cannot find included file 'X'"


def test_source_held_in_memory_has_no_folder_of_its_own(tmp_path, monkeypatch) -> None:
    (tmp_path / "here.p4").write_text("const bit<8> H = 1;\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(P4Error, match="cannot find included file 'here.p4'"):
        compile_text('#include "here.p4"\n')


def test_a_huge_file_is_refused_before_it_is_read(tmp_path) -> None:
    big = tmp_path / "big.p4"
    with open(big, "wb") as f:
        f.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no memory or disk used
    main = tmp_path / "main.p4"
    main.write_text('#include "big.p4"\n')
    with pytest.raises(P4Error, match="larger than"):
        compile_file(str(main))
    with pytest.raises(P4Error, match="larger than"):
        compile_file(str(big))


def test_a_100000_digit_literal_is_an_error_at_its_position() -> None:
    src = "const bit<8> X = " + "9" * 100_000 + ";\n"
    with pytest.raises(P4Error) as ei:
        compile_text(src)
    assert (ei.value.span.line, ei.value.span.col) == (1, 18)
    assert "100000 digits" in ei.value.message
