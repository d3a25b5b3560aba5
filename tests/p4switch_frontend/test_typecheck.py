"""Type checker: expression types, width inference, implicit casts,
constant folding with exact width semantics, and name resolution."""

from __future__ import annotations

import pytest
from fe_util import body_stmts, compile_src, error_of, ingress, position_of, v1

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import types as T


def rhs_of(body: str, locals_: str = "", top: str = "") -> A.Expression:
    """The checked right-hand side of the last assignment in ``body``."""
    stmts = body_stmts(compile_src(v1(ingress_body=body, ingress_locals=locals_, top=top)))
    last = [s for s in stmts if isinstance(s, A.AssignStmt)][-1]
    return last.rhs


def const_of(expr: str, typ: str) -> A.Expression:
    prog = compile_src(f"const {typ} C = {expr};\n")
    d = prog.find("C")
    assert isinstance(d, A.ConstDecl)
    return d.value


# ---------------------------------------------------------------- folding

@pytest.mark.parametrize("expr,typ,value", [
    ("8w250 + 8w10", "bit<8>", 4),                 # unsigned wraps modulo 2^8
    ("8w3 - 8w5", "bit<8>", 254),
    ("8s127 + 8s1", "int<8>", -128),               # signed wraps in two's complement
    ("8w250 |+| 8w10", "bit<8>", 255),             # saturating add clamps
    ("8w3 |-| 8w5", "bit<8>", 0),
    ("8s120 |+| 8s100", "int<8>", 127),
    ("-8s100 |-| 8s100", "int<8>", -128),
    ("8w0x81 >> 1", "bit<8>", 0x40),
    ("-8s128 >> 1", "int<8>", -64),                # arithmetic shift for int<W>
    ("8w1 << 9", "bit<8>", 0),                     # shifting past the width gives 0
    ("4w0xA ++ 4w0x5", "bit<8>", 0xA5),
    ("16w0xABCD[11:4]", "bit<8>", 0xBC),
    ("~8w0x0F", "bit<8>", 0xF0),
    ("(bit<4>)8w0xAB", "bit<4>", 0xB),             # casts truncate
    ("(bit<8>)-1", "bit<8>", 255),
    ("(int<8>)8w200", "int<8>", -56),
    ("(bit<8>)(-8s1)", "bit<8>", 255),             # same-width reinterpretation
    ("(int<16>)(-8s1)", "int<16>", -1),            # int<W> widening sign-extends
    ("7 / 2 + 7 % 2", "int", 4),
    ("1 << 40", "int", 1 << 40),                   # infinite precision stays exact
])
def test_constant_folding_with_width_semantics(expr: str, typ: str, value: int) -> None:
    v = const_of(expr, typ)
    assert isinstance(v, A.IntLit)
    assert v.value == value
    assert str(v.type) == typ


def test_casts_changing_signedness_and_width_at_once_are_rejected() -> None:
    err = error_of("const bit<16> C = (bit<16>)(-8s1);\n")
    assert "cannot cast int<8> to bit<16>" in err.message
    assert (err.span.line, err.span.col) == (1, 19)


def test_bool_folding_and_comparisons() -> None:
    v = const_of("8w3 < 8w4 && !(1 == 2) || false", "bool")
    assert isinstance(v, A.BoolLit) and v.value is True
    assert const_of("(bool)1w1", "bool").value is True  # type: ignore[attr-defined]
    assert const_of("(bit<1>)true", "bit<1>").value == 1  # type: ignore[attr-defined]


def test_constants_are_inlined_where_used() -> None:
    rhs = rhs_of("m.x = K + 1;", top="const bit<8> K = 8w41;\n")
    assert isinstance(rhs, A.IntLit) and rhs.value == 42 and rhs.type == T.BitsType(8)


# ---------------------------------------------------------------- inference

def test_int_literal_takes_the_width_of_the_other_operand() -> None:
    rhs = rhs_of("m.y = m.y + 1;")
    assert isinstance(rhs, A.Binary)
    assert rhs.type == T.BitsType(16)
    assert isinstance(rhs.right, A.IntLit) and rhs.right.type == T.BitsType(16)
    rhs = rhs_of("m.s = 3 - m.s;")
    assert isinstance(rhs, A.Binary) and rhs.left.type == T.BitsType(8, True)


def test_literal_assigned_to_narrow_field_wraps() -> None:
    rhs = rhs_of("m.x = 300;")
    assert isinstance(rhs, A.IntLit) and rhs.value == 44 and rhs.type == T.BitsType(8)


def test_mixed_widths_are_an_error_with_position() -> None:
    src = v1(ingress_body="m.x = m.x + m.y;")
    err = error_of(src)
    assert "different types: bit<8> and bit<16>" in err.message
    assert (err.span.line, err.span.col) == position_of(src, "+ m.y")


def test_shift_keeps_left_type_and_needs_unsigned_amount() -> None:
    rhs = rhs_of("m.y = m.y << m.x;")
    assert isinstance(rhs, A.Binary) and rhs.type == T.BitsType(16) and rhs.right.type == T.BitsType(8)
    assert "unsigned" in error_of(v1(ingress_body="m.y = m.y << m.s;")).message


def test_concatenation_width_and_slice_type() -> None:
    rhs = rhs_of("m.w = (bit<32>)(m.x ++ m.y);")
    assert isinstance(rhs, A.Cast) and rhs.expr.type == T.BitsType(24)
    rhs = rhs_of("m.x = m.w[15:8];")
    assert isinstance(rhs, A.Slice) and rhs.type == T.BitsType(8)
    assert "out of range" in error_of(v1(ingress_body="m.x = m.y[16:9];")).message


def test_serializable_enum_converts_implicitly_to_its_type() -> None:
    top = "enum bit<8> Op { ADD = 1, SUB = 2 }\n"
    rhs = rhs_of("m.x = Op.SUB;", top=top)
    assert isinstance(rhs, A.IntLit) and rhs.value == 2 and rhs.type == T.BitsType(8)
    stmts = body_stmts(compile_src(v1(ingress_body="if (m.x == Op.ADD) { m.f = true; }", top=top)))
    cond = stmts[0].cond  # type: ignore[attr-defined]
    assert isinstance(cond, A.Binary) and cond.left.type == cond.right.type == T.BitsType(8)


def test_plain_enum_and_error_members() -> None:
    top = "enum Color { RED, GREEN }\nerror { Custom }\n"
    prog = compile_src(v1(ingress_locals="Color c;", ingress_body="c = Color.GREEN; m.f = error.Custom != error.NoError;", top=top))
    stmts = body_stmts(prog)
    assert isinstance(stmts[0].rhs, A.EnumMember) and stmts[0].rhs.member == "GREEN"  # type: ignore[attr-defined]
    assert isinstance(stmts[0].rhs.type, T.EnumType)  # type: ignore[attr-defined]
    assert isinstance(stmts[1].rhs, A.BoolLit) and stmts[1].rhs.value is True  # type: ignore[attr-defined]
    assert prog.errors[-1] == "Custom"
    assert "cannot cast" in error_of(v1(ingress_body="m.x = (bit<8>)Color.RED;", top=top)).message


def test_ternary_types() -> None:
    rhs = rhs_of("m.x = m.f ? m.x : 8w7;")
    assert isinstance(rhs, A.Ternary) and rhs.type == T.BitsType(8)
    assert "need a width" in error_of(v1(ingress_body="m.x = m.f ? 1 : 2;")).message
    rhs = rhs_of("m.x = true ? 1 : 2;")
    assert isinstance(rhs, A.IntLit) and rhs.value == 1


def test_struct_and_list_initialisers() -> None:
    top = "struct Pr { bit<8> a; bool b; }\n"
    prog = compile_src(v1(ingress_locals="Pr p;", ingress_body="p = { b = true, a = 3 }; p = {4, false};", top=top))
    s0, s1 = body_stmts(prog)[:2]
    assert isinstance(s0.rhs, A.StructExpr) and [n for n, _ in s0.rhs.fields] == ["a", "b"]  # type: ignore[attr-defined]
    assert s0.rhs.fields[0][1].type == T.BitsType(8)  # type: ignore[attr-defined]
    assert isinstance(s1.rhs, A.ListExpr) and isinstance(s1.rhs.type, T.StructType)  # type: ignore[attr-defined]
    err = error_of(v1(ingress_locals="Pr p;", ingress_body="p = { a = 3 };", top=top))
    assert "'b' of Pr is not initialised" in err.message


def test_header_stack_operations() -> None:
    prog = compile_src(v1(ingress_body="hdr.st[1].a = 1; hdr.st.push_front(1); m.w = hdr.st.size;"))
    s = body_stmts(prog)
    elem = s[0].lhs.expr  # type: ignore[attr-defined]
    assert isinstance(elem, A.Index) and isinstance(elem.type, T.HeaderType)
    assert elem.expr.type == T.StackType(elem.type, 2)
    assert elem.index.type == T.BitsType(32)
    assert s[1].call.kind == "builtin" and s[1].call.target == "push_front"  # type: ignore[attr-defined]
    assert isinstance(s[2].rhs, A.IntLit) and s[2].rhs.value == 2  # type: ignore[attr-defined]
    assert "out of bounds" in error_of(v1(ingress_body="hdr.st[2].a = 1;")).message
    assert "only available in parsers" in error_of(v1(ingress_body="hdr.st.next.a = 1;")).message


def test_method_call_kinds_and_targets() -> None:
    locals_ = """register<bit<8>>(4) r;
    action a() { mark_to_drop(sm); }
    table t { key = { m.x: exact; } actions = { a; } }"""
    body = "r.read(m.x, 0); a(); t.apply(); hdr.h.setValid(); m.f = hdr.h.isValid();"
    stmts = body_stmts(compile_src(v1(ingress_body=body, ingress_locals=locals_)))
    calls = [s.call for s in stmts if isinstance(s, A.CallStmt)]
    assert [c.kind for c in calls] == ["extern_method", "action", "table_apply", "builtin"]
    assert calls[0].target.name == "read" and [p.name for p in calls[0].params] == ["result", "index"]
    assert calls[0].args[1].value.type == T.BitsType(32)   # the index literal got bit<32>
    inner = ingress(compile_src(v1(ingress_body=body, ingress_locals=locals_))).locals[1]
    assert isinstance(inner, A.ActionDecl)
    mark = inner.body.stmts[0].call  # type: ignore[attr-defined]
    assert mark.kind == "extern_function" and mark.target.name == "mark_to_drop" and len(mark.target.params) == 1


def test_generic_extern_function_infers_type_arguments() -> None:
    body = "hash(m.y, HashAlgorithm.crc16, 16w0, { m.x, m.w }, 32w1024);"
    call = body_stmts(compile_src(v1(ingress_body=body)))[0].call  # type: ignore[attr-defined]
    assert [str(t) for t in call.resolved_type_args] == ["bit<16>", "bit<16>", "tuple<bit<8>, bit<32>>", "bit<32>"]
    err = error_of(v1(ingress_body="hash(m.y, HashAlgorithm.crc16, 16w0, { m.x }, 1024);"))
    assert "could not infer a width" in err.message


def test_named_arguments_are_reordered() -> None:
    top = "extern void f(in bit<8> a, in bit<16> b);\n"
    call = body_stmts(compile_src(v1(ingress_body="f(b = m.y, a = m.x);", top=top)))[0].call  # type: ignore[attr-defined]
    assert [p.name for p in call.params] == ["a", "b"]
    assert [a.value.type for a in call.args] == [T.BitsType(8), T.BitsType(16)]


def test_switch_on_action_run_resolves_labels() -> None:
    locals_ = """action a() {} action b() {}
    table t { key = { m.x: exact; } actions = { a; b; } }"""
    body = "switch (t.apply().action_run) { a: { m.x = 1; } b: {} }"
    sw = body_stmts(compile_src(v1(ingress_body=body, ingress_locals=locals_)))[0]
    assert isinstance(sw, A.SwitchStmt)
    assert isinstance(sw.expr.type, T.ActionEnumType)
    assert [c.label.ref.name for c in sw.cases] == ["a", "b"]  # type: ignore[attr-defined]
    err = error_of(v1(ingress_body="switch (t.apply().action_run) { c: {} }", ingress_locals=locals_))
    assert "not an action of table t" in err.message


def test_lvalues_and_directions() -> None:
    top = "control Sub(in bit<8> v) { apply { v = 1; } }\n"
    assert "cannot assign" in error_of(v1(top=top)).message
    assert "can be written" in error_of(v1(ingress_body="hash(m.y + 1, HashAlgorithm.crc16, 16w0, {m.x}, 32w4);")).message


def test_undeclared_and_misused_names() -> None:
    src = v1(ingress_body="m.x = nosuch;")
    err = error_of(src)
    assert "'nosuch' is not declared" in err.message
    assert (err.span.line, err.span.col) == position_of(src, "nosuch")
    assert "found type H" in error_of(v1(ingress_body="m.x = H;")).message
    assert "no overload" in error_of(v1(ingress_body="mark_to_drop(sm, sm);")).message


def test_function_must_return_on_every_path() -> None:
    top = "bit<8> f(in bit<8> x) { if (x > 1) { return 1; } }\n"
    assert "does not return a value on every path" in error_of(v1(top=top)).message
    ok = "bit<8> f(in bit<8> x) { if (x > 1) { return 1; } else { return x; } }\n"
    call = rhs_of("m.x = f(m.x);", top=ok)
    assert isinstance(call, A.MethodCall) and call.kind == "function" and call.type == T.BitsType(8)


def test_declaration_before_use() -> None:
    err = error_of("const bit<8> A = B;\nconst bit<8> B = 1;\n")
    assert "'B' is not declared" in err.message


def test_duplicate_declarations() -> None:
    assert "already declared" in error_of("const int A = 1;\nconst int A = 2;\n").message
    assert "declared twice" in error_of("header h { bit<8> a; bit<8> a; }\n").message
    assert "already declared" in error_of(v1(ingress_body="bit<8> q; bit<8> q;")).message


def test_for_loops() -> None:
    body = """for (bit<8> i = 0, bit<8> j = 2; i < m.x; i = i + 1, j = j + 1) {
            if (i == 5) { break; }
            if (i == 2) { continue; }
            m.y = m.y + (bit<16>)j;
        }
        for (bit<8> k in 1 .. m.x) { m.x = m.x - k; }
        for (h_t e in hdr.st) { m.x = m.x + e.a; }"""
    stmts = body_stmts(compile_src(v1(ingress_body=body)))
    loop, rng, each = stmts
    assert isinstance(loop, A.ForStmt) and len(loop.init) == 2 and len(loop.updates) == 2
    assert isinstance(loop.cond, A.Binary) and loop.cond.right.type == T.BitsType(8)
    assert isinstance(rng, A.ForInStmt) and isinstance(rng.collection, A.Range)
    assert rng.collection.lo.type == T.BitsType(8) and rng.var.name == "k"
    assert isinstance(each, A.ForInStmt) and isinstance(each.collection.type, T.StackType)
    assert "outside a loop" in error_of(v1(ingress_body="break;")).message
    assert "cannot iterate" in error_of(v1(ingress_body="for (bit<8> q in m.x) { }")).message
    # the loop variable is scoped to the loop
    assert "'i' is not declared" in error_of(v1(ingress_body="for (bit<8> i = 0; i < 3; i = i + 1) {} m.x = i;")).message


def test_generic_structs_are_instantiated_per_type_argument() -> None:
    top = "struct Opt<T> { bool valid; T value; }\n"
    locals_ = "Opt<bit<8>> a; Opt<bit<8>> b; Opt<bit<16>> c;"
    prog = compile_src(v1(ingress_locals=locals_, ingress_body="a = { true, 3 }; b = a; c.value = m.y;", top=top))
    a, b, c = [d for d in ingress(prog).locals if isinstance(d, A.VarDecl)]
    ta, tb, tc = a.typeref.resolved, b.typeref.resolved, c.typeref.resolved
    assert ta is tb and ta is not tc            # same arguments, same (nominal) type
    assert isinstance(ta, T.StructType) and ta.name == "Opt<bit<8>>"
    assert ta.field("value").type == T.BitsType(8)  # type: ignore[union-attr]
    assert "cannot be compared" in error_of("struct W<T> { T f; }\nbool g<T>(in T x) { W<T> w; w.f = x; return w.f == x; }\n").message
    assert "expects 1 type arguments" in error_of(v1(ingress_locals="Opt<bit<8>, bool> z;", top=top)).message


def test_match_kinds_are_values() -> None:
    prog = compile_src("#include <core.p4>\nconst tuple<match_kind> MK = { exact };\n")
    d = prog.find("MK")
    assert isinstance(d, A.ConstDecl) and isinstance(d.value, A.ListExpr)
    assert d.value.elems[0].type == T.MATCH_KIND


def test_misspelt_names_get_a_suggestion() -> None:
    assert error_of(v1(ingress_body="m.x = m.zz;")).message == "M has no field 'zz'"
    err = error_of(v1(ingress_body="hdr.h.aa = 1;"))
    assert err.message == "h_t has no field 'aa'; did you mean 'a'?"
    err = error_of(v1(ingress_body="m.x = m.xx;"))
    assert err.message == "M has no field 'xx'; did you mean 'x'?"
    err = error_of(v1(ingress_body="mark_to_dorp(sm);"))
    assert err.message == "'mark_to_dorp' is not declared; did you mean 'mark_to_drop'?"
