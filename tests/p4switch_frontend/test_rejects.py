"""Programs P4_16 (and p4c) reject must be rejected here too, at the right
place: a program p4switch accepts has to compile with p4c as well.  Each
case is a small program, a substring marking where the caret must point,
and a fragment of the message."""

from __future__ import annotations

import pytest
from fe_util import error_of, position_of, v1

CORE = "#include <core.p4>\n"

CASES = [
    # declarations and parameters
    ("dup-action", CORE + "control C() { action a() {} action a(bit<8> x) {} apply {} }\n",
     "action a(bit<8>", "already declared"),
    ("dup-extern-method", "extern E { E(); void f(bit<8> a); void f(bit<8> b); }\n",
     "void f(bit<8> b)", "declared twice"),
    ("ctor-with-return-type", "extern X { void X(); }\n", "void X", "cannot have a return type"),
    ("out-param-default", "extern void f(out bit<8> x = 1);\n", "out bit<8> x", "cannot have a default"),
    ("direction-on-extern-param", "extern E { E(); }\ncontrol C(in E e) { apply {} }\n",
     "in E e", "cannot have a direction"),
    ("control-decl-as-ctor-param", "control A() { apply {} }\ncontrol B()(A a) { apply {} }\n",
     "A a)", "type prototype"),
    ("type-param-shadows-param", "control C<p>(inout bit<8> p) { apply {} }\n", "inout bit<8> p", "type parameter"),
    ("recursive-function", "bit<8> f(in bit<8> x) { return f(x); }\n", "f(x)", "not declared"),
    ("newtype-of-struct", "struct S { bit<8> a; }\ntype S T;\n", "type S", "can only be applied"),
    ("dont-care-field", "struct S { _ f; }\n", "_ f", "only allowed as a type argument"),
    ("two-varbits", "header h { varbit<8> a; varbit<8> b; }\n", "header h", "more than one varbit"),
    ("extern-in-tuple", "extern E { E(); }\nextern void f(in tuple<E> t);\n", "E> t", "not allowed as a tuple element"),
    ("main-not-package", "extern main {}\n", "extern main", "must be a package"),
    # expressions
    ("div-by-zero", v1(ingress_body="m.x = m.x / 0;"), "/ 0", "division by zero"),
    ("div-negative", v1(ingress_body="m.x = m.x / -1;"), "/ -1", "negative"),
    ("cast-newtype-wrong-base", "type bit<1> T1;\nT1 f(in bit<2> a) { return (T1)a; }\n",
     "(T1)a", "cannot cast"),
    ("compare-untyped-lists", CORE + "control C() { apply { bool b = {1, 2} == {1, 2}; } }\n",
     "== {1", "cannot infer"),
    ("width-not-inferred", v1(ingress_body='log_msg("v={}", {m.x, 1});'), "{m.x, 1}", "could not infer a width"),
    ("dont-care-type-argument", "extern E<T> { E(); void f(in T a); }\n"
     "control C() { E<_>() e; apply { e.f(0); } }\n", "0)", "could not infer"),
    ("ambiguous-overload", "extern void f(in bit<8> a);\nextern void f(in bit<16> b);\n"
     "control C() { apply { f(8w1); } }\n", "f(8w1)", "ambiguous"),
    ("table-as-argument", "extern void g<T>(in T t);\ncontrol C() { table t { actions = {} } apply { g(t); } }\n",
     "t); }", "cannot have type"),
    # statements and blocks
    ("default-not-last", v1(ingress_body="switch (m.x) { default: {} 1: {} }"), "default:", "last"),
    ("verify-in-control", v1(ingress_body="verify(true, error.NoError);"), "verify(", "only be called in parsers"),
    ("control-applies-itself", CORE + "control p() { action a() { p.apply(); } apply {} }\n",
     "p.apply", None),
    ("parser-in-control", CORE + "parser P();\ncontrol C()(P p) { apply { p.apply(); } }\n",
     "p.apply", "cannot be applied in a control"),
    ("instance-at-top-level", CORE + "control C() { apply {} }\nC() c;\n", "C() c", "top level"),
    ("runtime-ctor-argument", CORE + "control P()(bit<8> y) { apply {} }\n"
     "control Q(in bit<8> z) { P(z) p1; apply { p1.apply(); } }\n", "z) p1", "compile-time"),
    ("select-runtime-keyset", v1(parser_states="state start { transition select(hdr.h.a) { m.x: accept; default: reject; } }"),
     "m.x:", "compile-time"),
    ("select-on-struct", v1(parser_states="state start { transition select(hdr) { default: accept; } }"),
     "hdr)", "cannot be used in select"),
    ("extract-non-header", v1(parser_states="state start { pkt.extract(m); transition accept; }"), "m);", "must be a header"),
    ("emit-bits", v1().replace("pkt.emit(hdr.h);", "pkt.emit(hdr.h.a);"), "hdr.h.a);", "cannot emit"),
    # tables
    ("entries-before-key", v1(ingress_locals="action a() {} table t { actions = { a; } "
                                            "const entries = { 1: a(); } key = { m.x: exact; } }"),
     "const entries", "after its key"),
    ("complex-key-needs-name", v1(ingress_locals="action a() {} table t { key = { m.x + 1: exact; } actions = { a; } }"),
     "m.x + 1", "@name"),
    ("lpm-mask-not-prefix", v1(ingress_locals="action a() {} table t { key = { m.x: lpm; } actions = { a; } "
                                              "const entries = { 0x11 &&& 0xe1: a(); } }"),
     "0x11", "prefix"),
    ("defaultonly-in-entries", v1(ingress_locals="action a() {} table t { key = { m.x: exact; } "
                                                 "actions = { @defaultonly a; } const entries = { 1: a(); } }"),
     "a(); }", "defaultonly"),
    ("const-entries-with-priority", v1(ingress_locals="action a() {} table t { key = { m.x: ternary; } "
                                                      "actions = { a; } const entries = { priority = 1: 1 &&& 1: a(); } }"),
     None, "cannot have priorities"),
    ("table-apply-in-action", v1(ingress_locals="table t { actions = { NoAction; } } action a() { t.apply(); }"),
     "t.apply", "cannot be applied from actions"),
    ("default-before-actions", v1(ingress_locals="action a() {} table t { default_action = a(); actions = { a; } }"),
     "default_action", "after the actions"),
    ("priority-delta-not-positive", v1(ingress_locals="table t { actions = { NoAction; } priority_delta = 0; }"),
     "priority_delta", "positive"),
    ("name-not-string", CORE + "@name(4) action a() {}\n", "@name", "one string"),
    ("duplicate-structured-annotation", CORE + "@n(3) @n[] const bit<1> b = 0;\n", "@n[", "duplicate"),
    ("structured-annotation-list-value", CORE + "@n[a = {2, 3}] const bit<1> b = 0;\n", "{2", "integers, strings"),
    ("unknown-match-kind", v1(ingress_locals="table t { key = { m.x: fuzzy; } actions = { NoAction; } }"),
     "m.x: fuzzy", "unknown match kind"),
]


@pytest.mark.parametrize("src,needle,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rejected(src: str, needle: str | None, fragment: str | None) -> None:
    err = error_of(src)
    if fragment is not None:
        assert fragment in err.message
    if needle is not None:
        assert (err.span.line, err.span.col) == position_of(src, needle), err.format(source_text=src)


def test_action_data_cannot_be_bound_in_the_actions_list() -> None:
    src = v1(ingress_locals="action a(bit<8> d) {} table t { key = { m.x: exact; } actions = { a(3); } }")
    err = error_of(src)
    assert "cannot be bound" in err.message
    assert (err.span.line, err.span.col) == position_of(src, "3); }")
