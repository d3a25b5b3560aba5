"""Preprocessor: includes, macros, conditionals, and source positions."""

from __future__ import annotations

import os

import pytest
from fe_util import PRELUDE, compile_src, error_of, ingress, position_of, v1

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import compile_file, compile_text, parse_text
from p4mcc.p4switch.frontend.errors import P4Error
from p4mcc.p4switch.frontend.preprocessor import preprocess


def const_value(prog: A.Program, name: str) -> int:
    d = prog.find(name)
    assert isinstance(d, A.ConstDecl) and isinstance(d.value, A.IntLit)
    return d.value.value


def token_values(text: str, defines: dict[str, str] | None = None) -> list[object]:
    toks, _ = preprocess(text, "t.p4", [], defines or {})
    return [t.value for t in toks[:-1]]


def test_object_macro_is_substituted() -> None:
    prog = compile_src("#define WIDTH 8\n#define TWICE (WIDTH * 2)\nconst bit<TWICE> X = 3;\n")
    d = prog.find("X")
    assert isinstance(d, A.ConstDecl)
    assert str(d.value.type) == "bit<16>"


def test_command_line_defines_and_default_value() -> None:
    src = "#ifdef FAST\nconst int A = VALUE;\n#else\nconst int A = 0;\n#endif\n"
    assert token_values(src, {"FAST": "1", "VALUE": "42"})[-2] == (None, False, 42, 10)
    assert token_values(src)[-2] == (None, False, 0, 10)


def test_if_elif_else_with_defined_and_arithmetic() -> None:
    src = """#define V 20200408
#if V >= 20200408 && defined(V) && !defined NOPE
const int R = 1;
#elif V > 0
const int R = 2;
#else
const int R = 3;
#endif
#if (1 << 4) == 16 ? 0 : 1
const int Q = 9;
#elif 7 % 4 == 3
const int Q = 7;
#endif
"""
    prog = parse_text(src)
    assert [d.name for d in prog.decls] == ["R", "Q"]
    values = [d.value.value for d in prog.decls]  # type: ignore[attr-defined]
    assert values == [1, 7]


def test_inactive_branches_are_not_lexed_or_parsed() -> None:
    src = "#if 0\n this is $$$ not P4 \n#if 1\n nested garbage ` \n#endif\n#endif\nconst int A = 5;\n"
    assert const_value(compile_src(src), "A") == 5


def test_undef_and_self_referential_macro() -> None:
    assert token_values("#define A A + 1\nA\n") == ["A", "+", (None, False, 1, 10)]
    assert token_values("#define B 1\n#undef B\nB\n") == ["B"]


def test_function_like_macro() -> None:
    assert token_values("#define MAX(a, b) ((a) > (b) ? (a) : (b))\nMAX(1, x)\n") == [
        "(", "(", (None, False, 1, 10), ")", ">", "(", "x", ")", "?", "(", (None, False, 1, 10),
        ")", ":", "(", "x", ")", ")"]


def test_angle_include_resolves_to_builtin_core() -> None:
    prog = parse_text("#include <core.p4>\n")
    names = {d.name for d in prog.decls}
    assert {"packet_in", "packet_out", "NoAction", "verify"} <= names
    assert any(f.endswith(os.path.join("include", "core.p4")) for f in prog.files)


def test_include_guard_makes_double_include_harmless() -> None:
    prog = compile_src("#include <core.p4>\n#include <core.p4>\n#include <v1model.p4>\n")
    assert prog.errors[:3] == ["NoError", "PacketTooShort", "NoMatch"]


def test_v1model_version_selects_generic_externs() -> None:
    old = compile_src("#include <v1model.p4>\n")
    new = compile_src("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n")
    assert old.find("counter").type_params == []  # type: ignore[union-attr]
    assert new.find("counter").type_params == ["I"]  # type: ignore[union-attr]
    assert new.find("register").type_params == ["T", "I"]  # type: ignore[union-attr]


def test_quote_include_relative_and_from_include_dirs(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "sub" / "local.p4").write_text("const int L = 1;\n")
    (tmp_path / "inc" / "lib.p4").write_text('#include "deeper.p4"\nconst int B = D + 1;\n')
    (tmp_path / "inc" / "deeper.p4").write_text("const int D = 40;\n")
    main = tmp_path / "sub" / "main.p4"
    main.write_text('#include "local.p4"\n#include <lib.p4>\nconst int S = L + B;\n')
    prog = compile_file(str(main), include_dirs=[str(tmp_path / "inc")])
    assert const_value(prog, "S") == 42


def test_missing_include_points_at_directive(tmp_path) -> None:
    main = tmp_path / "m.p4"
    main.write_text("const int A = 1;\n  #include \"nothere.p4\"\n")
    with pytest.raises(P4Error) as ei:
        compile_file(str(main))
    assert (ei.value.span.line, ei.value.span.col) == (2, 3)
    assert "nothere.p4" in ei.value.message


def test_error_inside_included_file_names_that_file(tmp_path) -> None:
    (tmp_path / "bad.h.p4").write_text("/* one\n   two */\nconst bit<8> X = true;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "bad.h.p4"\n')
    with pytest.raises(P4Error) as ei:
        compile_file(str(main))
    assert ei.value.span.file.endswith("bad.h.p4")
    assert (ei.value.span.line, ei.value.span.col) == (3, 18)


def test_lines_after_comments_and_conditionals_keep_their_numbers() -> None:
    src = v1(ingress_body="""/* a
        multi-line comment */
#if 0
        m.x = 1;
#endif
        m.x = m.nosuch; // here""")
    err = error_of(src)
    assert (err.span.line, err.span.col) == position_of(src, "nosuch")


def test_macro_use_site_is_reported() -> None:
    src = v1(ingress_body="m.x = BAD;", top="#define BAD m.nosuch\n")
    err = error_of(src)
    assert (err.span.line, err.span.col) == position_of(src, "BAD;")


def test_error_directive_and_unbalanced_conditionals() -> None:
    assert "#error stop here" in error_of("#error stop here\n").message
    assert "unterminated" in error_of("#ifdef X\nconst int A = 1;\n").message
    assert "#endif without" in error_of("#endif\n").message
    assert "#else without" in error_of("#if 1\n#else\n#else\n#endif\n").message


def test_include_cycle_is_an_error(tmp_path) -> None:
    a = tmp_path / "a.p4"
    a.write_text('#include "a.p4"\n')
    with pytest.raises(P4Error) as ei:
        compile_file(str(a))
    assert "nested too deeply" in ei.value.message


def test_prelude_compiles_and_declares_v1model() -> None:
    prog = compile_text(PRELUDE)
    assert prog.find("V1Switch") is not None
    assert ingress(compile_src(v1())).name == "I"
