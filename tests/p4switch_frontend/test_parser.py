"""Parser: precedence, the type-name/identifier ambiguity, declarations,
tables, parsers and annotations (syntax only, before type checking)."""

from __future__ import annotations

import pytest
from fe_util import error_of, position_of

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import parse_text
from p4mcc.p4switch.frontend.errors import P4Error


def sexpr(e: A.Expression) -> str:
    """A compact prefix rendering that shows the tree's shape."""
    if isinstance(e, A.IntLit):
        return f"{e.width}w{e.value}" if e.width is not None else str(e.value)
    if isinstance(e, A.BoolLit):
        return str(e.value).lower()
    if isinstance(e, A.PathExpr):
        return e.name
    if isinstance(e, A.Member):
        return f"{sexpr(e.expr)}.{e.name}"
    if isinstance(e, A.Binary):
        return f"({e.op} {sexpr(e.left)} {sexpr(e.right)})"
    if isinstance(e, A.Unary):
        return f"({e.op} {sexpr(e.expr)})"
    if isinstance(e, A.Ternary):
        return f"(? {sexpr(e.cond)} {sexpr(e.then)} {sexpr(e.els)})"
    if isinstance(e, A.Cast):
        t = e.target
        name = getattr(t, "name", "?")
        width = getattr(t, "width", None)
        return f"(cast {name}{'' if width is None else '<' + sexpr(width) + '>'} {sexpr(e.expr)})"
    if isinstance(e, A.Slice):
        return f"(slice {sexpr(e.expr)} {sexpr(e.hi)} {sexpr(e.lo)})"
    if isinstance(e, A.Index):
        return f"(index {sexpr(e.expr)} {sexpr(e.index)})"
    if isinstance(e, A.MethodCall):
        targs = "".join(f"<{getattr(t, 'name', '?')}>" for t in e.type_args)
        return f"(call {sexpr(e.func)}{targs} " + " ".join(sexpr(a.value) for a in e.args) + ")"
    if isinstance(e, A.ListExpr):
        return "{" + " ".join(sexpr(x) for x in e.elems) + "}"
    if isinstance(e, A.TypeNameExpr):
        return f"type:{getattr(e.typeref, 'name', '?')}"
    return type(e).__name__


def parse_expr(text: str, types: str = "") -> str:
    prog = parse_text(types + f"const bool __e = {text};\n")
    d = prog.decls[-1]
    assert isinstance(d, A.ConstDecl)
    return sexpr(d.value)


@pytest.mark.parametrize("text,tree", [
    ("a + b * c", "(+ a (* b c))"),
    ("a * b + c", "(+ (* a b) c)"),
    ("a - b - c", "(- (- a b) c)"),
    ("a | b ^ c & d", "(| a (^ b (& c d)))"),
    ("a == b && c < d || e", "(|| (&& (== a b) (< c d)) e)"),
    ("a < b == c > d", "(== (< a b) (> c d))"),
    ("a & b == c", "(== (& a b) c)"),
    ("a << 2 + 1", "(<< a (+ 2 1))"),
    ("a >> b >> c", "(>> (>> a b) c)"),
    ("a ++ b + c", "(+ (++ a b) c)"),
    ("a |+| b * c |-| d", "(|-| (|+| a (* b c)) d)"),
    ("!a && ~b == -c", "(&& (! a) (== (~ b) (- c)))"),
    ("c ? x : y ? p : q", "(? c x (? y p q))"),
    ("a.b[3].c[7:0]", "(slice (index a.b 3).c 7 0)"),
    ("-x[3:0]", "(- (slice x 3 0))"),
])
def test_operator_precedence(text: str, tree: str) -> None:
    assert parse_expr(text) == tree


def test_int_literal_forms() -> None:
    prog = parse_text("const bit<8> a = 8w255; const int<8> b = 8s0x7f; const bit<4> c = 0b1010;"
                      "const int d = 0o17; const int e = 0d99; const int f = 1_000; const bit<12> g = 12w0xF_F;")
    got = [(d.value.width, d.value.signed, d.value.value) for d in prog.decls]  # type: ignore[attr-defined]
    assert got == [(8, False, 255), (8, True, 127), (None, False, 10), (None, False, 15),
                   (None, False, 99), (None, False, 1000), (12, False, 255)]


def test_shift_versus_nested_type_arguments() -> None:
    types = "extern E<T> { E(); T get(); }\n"
    prog = parse_text(types + "control C() { E<bit<8>>() e; apply { } }\nconst int s = 64 >> 2;\n")
    inst = prog.decls[1].locals[0]  # type: ignore[attr-defined]
    assert isinstance(inst, A.Instantiation)
    assert inst.typeref.name == "E" and inst.typeref.args[0].name == "bit"  # type: ignore[attr-defined]
    assert sexpr(prog.decls[2].value) == "(>> 64 2)"  # type: ignore[attr-defined]
    # "> >" with a space is two comparisons' worth of tokens, never a shift
    with pytest.raises(P4Error):
        parse_text("const int s = 64 > > 2;\n")


def test_generic_call_versus_less_than() -> None:
    types = "extern void f<T>(in T x);\n"
    assert parse_expr("f<bit<8>>(x)", types) == "(call f<bit> x)"
    assert parse_expr("a < b && c > (d)") == "(&& (< a b) (> c d))"


def test_cast_versus_parenthesised_expression() -> None:
    types = "typedef bit<8> B;\n"
    assert parse_expr("(bit<8>) a + 1") == "(+ (cast bit<8> a) 1)"
    assert parse_expr("(B) a", types) == "(cast B a)"
    assert parse_expr("(a) + 1", types) == "(+ a 1)"


def test_declaration_versus_expression_statement() -> None:
    src = """header h_t { bit<8> f; }
control C(inout h_t h) {
    apply {
        h_t tmp;
        bit<8> x = 1;
        tmp.f = x;
        h.f = tmp.f;
        h.setValid();
    }
}
"""
    stmts = parse_text(src).decls[1].body.stmts  # type: ignore[attr-defined]
    kinds = [type(s).__name__ for s in stmts]
    assert kinds == ["DeclStmt", "DeclStmt", "AssignStmt", "AssignStmt", "CallStmt"]


def test_a_name_declared_as_type_later_changes_how_it_parses() -> None:
    # Before T is declared, "T x;" is not a declaration (it is an error);
    # after "typedef bit<8> T;" it is.
    err = error_of("control C() { apply { T x; } }\n")
    assert err.span.col == position_of("control C() { apply { T x; } }\n", "x;")[1]
    ok = parse_text("typedef bit<8> T;\ncontrol C() { apply { T x; } }\n")
    assert isinstance(ok.decls[1].body.stmts[0], A.DeclStmt)  # type: ignore[attr-defined]


def test_contextual_keywords_are_names() -> None:
    src = "struct S { bit<8> key; bit<8> actions; bit<8> state; bit<8> entries; bit<8> type; bit<8> apply; }\n"
    prog = parse_text(src)
    assert [f.name for f in prog.decls[0].fields] == ["key", "actions", "state", "entries", "type", "apply"]  # type: ignore[attr-defined]


def test_compound_assignment_desugars() -> None:
    src = "control C(inout bit<8> x) { apply { x += 2; x |+|= 1; x <<= 1; } }\n"
    stmts = parse_text(src).decls[0].body.stmts  # type: ignore[attr-defined]
    assert [sexpr(s.rhs) for s in stmts] == ["(+ x 2)", "(|+| x 1)", "(<< x 1)"]


def test_table_properties_and_entries() -> None:
    src = """action a(bit<8> v) {}
control C(in bit<8> k) {
    table t {
        key = { k: ternary @name("kk"); }
        actions = { a; @defaultonly NoAction; }
        const default_action = NoAction();
        entries = {
            priority = 5: 0x10 &&& 0xf0 : a(1);
            const 0x20 .. 0x2f : a(2) @priority(3);
            _ : a(3);
        }
        size = 64;
        support_timeout = true;
    }
    apply { t.apply(); }
}
"""
    table = parse_text(src).decls[1].locals[0]  # type: ignore[attr-defined]
    assert isinstance(table, A.TableDecl)
    assert [p.name for p in table.properties] == [
        "key", "actions", "default_action", "entries", "size", "support_timeout"]
    da = table.prop("default_action")
    assert da is not None and da.is_const and da.value.name == "NoAction"
    keys = table.prop("key").value  # type: ignore[union-attr]
    assert keys[0].match_kind == "ternary" and keys[0].annotations[0].string_arg() == "kk"
    acts = table.prop("actions").value  # type: ignore[union-attr]
    assert acts[1].annotations[0].name == "defaultonly"
    entries = table.prop("entries").value  # type: ignore[union-attr]
    assert [type(e.keys[0]).__name__ for e in entries] == ["Mask", "Range", "DefaultExpr"]
    assert entries[1].is_const and entries[1].annotations[0].name == "priority"
    assert A.find_annotation(entries[0].annotations, "__priority_expr") is not None


def test_parser_states_select_tuples_and_value_sets() -> None:
    src = """header h_t { bit<8> a; bit<8> b; }
parser P(packet_in pkt, out h_t h) {
    value_set<bit<8>>(4) vs;
    state start {
        pkt.extract(h);
        transition select(h.a, h.b) {
            (1, 2): next;
            (0x10 &&& 0xf0, 3 .. 9): accept;
            (_, default): reject;
        }
    }
    state next { transition select(h.a) { vs: accept; (5): reject; default: accept; } }
}
"""
    p = parse_text(src).decls[1]
    assert isinstance(p, A.ParserDecl)
    assert isinstance(p.locals[0], A.ValueSetDecl)
    cases = p.states[0].transition.select.cases  # type: ignore[union-attr]
    assert [type(c.keyset).__name__ for c in cases] == ["ListExpr", "ListExpr", "ListExpr"]
    assert [type(k).__name__ for k in cases[1].keyset.elems] == ["Mask", "Range"]  # type: ignore[attr-defined]
    assert [type(k).__name__ for k in cases[2].keyset.elems] == ["DefaultExpr", "DefaultExpr"]  # type: ignore[attr-defined]
    c2 = p.states[1].transition.select.cases  # type: ignore[union-attr]
    assert [sexpr(c.keyset) for c in c2] == ["vs", "5", "DefaultExpr"]


def test_annotations_are_preserved() -> None:
    src = """@name(".top") @brief("a" "b") @pragma foo bar
@structured[k = 1, s = "x"]
action a(@name("p") bit<8> v) {}
"""
    d = parse_text(src).decls[0]
    names = [a.name for a in d.annotations]
    assert names == ["name", "brief", "pragma", "structured"]
    assert d.annotations[0].string_arg() == ".top"
    assert d.annotations[2].raw == "foo bar"
    assert d.annotations[3].kv["k"].value == 1  # type: ignore[attr-defined]
    assert d.annotations[3].kv["s"].value == "x"  # type: ignore[attr-defined]
    assert d.params[0].annotations[0].string_arg() == "p"  # type: ignore[attr-defined]


def test_extern_objects_functions_and_overloads() -> None:
    src = """extern Ctr<I> {
    Ctr(bit<32> size);
    void count(in I index);
    abstract bit<8> pick(in bit<8> x);
}
extern T ident<T>(in T x);
extern void log(string s);
extern void log<T>(string s, in T data);
"""
    prog = parse_text(src)
    ctr = prog.decls[0]
    assert isinstance(ctr, A.ExternDecl) and ctr.type_params == ["I"]
    assert [m.name for m in ctr.constructors()] == ["Ctr"]
    assert ctr.methods_named("pick")[0].abstract
    assert [type(d).__name__ for d in prog.decls[1:]] == ["ExternFunctionDecl"] * 3


@pytest.mark.parametrize("src,needle,fragment", [
    ("const int a = 1\nconst int b = 2;\n", "const int b", "expected ';'"),
    ("control C() { apply { x = ; } }\n", "; } }", "expected an expression"),
    ("header h { bit<8> a }\n", "}", "expected ';'"),
    ("control C() { apply { if (x) { } }\n", None, "end of input"),
    ("const bit<8> a = 8w1 @ 2;\n", "@", "expected ';'"),
    ("struct S { bit<8> _; }\n", "_;", "expected a field name"),
    ("control C() { apply { while (true) {} } }\n", "while", "not supported"),
    ("const int a = 12ab;\n", "12ab", "malformed integer"),
    ("const int a = 1 $ 2;\n", "$", "unexpected character"),
])
def test_syntax_errors_point_at_the_offending_token(src: str, needle: str | None, fragment: str) -> None:
    err = error_of(src)
    assert fragment in err.message
    if needle is not None:
        assert (err.span.line, err.span.col) == position_of(src, needle)


def test_errors_inside_loop_bodies_are_reported_where_they_are() -> None:
    src = "control C(inout bit<8> x) { apply { for (bit<8> i in 0 .. 3) { x = ; } } }\n"
    err = error_of(src)
    assert "expected an expression" in err.message
    assert (err.span.line, err.span.col) == position_of(src, "; } } }")
