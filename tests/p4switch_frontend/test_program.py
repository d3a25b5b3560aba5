"""Whole-program IR: tables, parsers, sub-blocks, ``main`` and the IR
contract of docs/p4switch-ir.md, checked on tests/.../programs/features.p4."""

from __future__ import annotations

import pytest
from fe_irwalk import ir_problems
from fe_util import FEATURES, compile_src, error_of, ingress, v1

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.frontend import types as T


@pytest.fixture(scope="module")
def features() -> A.Program:
    return compile_file(FEATURES)


def table(prog: A.Program, name: str) -> A.TableDecl:
    for d in ingress(prog).locals:
        if isinstance(d, A.TableDecl) and d.name == name:
            return d
    raise AssertionError(name)


def test_features_program_satisfies_the_ir_contract(features: A.Program) -> None:
    assert ir_problems(features) == []


def test_main_resolves_v1switch_roles(features: A.Program) -> None:
    assert features.package == "V1Switch"
    assert {r: b.decl.name for r, b in features.v1model.items()} == {  # type: ignore[attr-defined]
        "parser": "MyParser", "verify": "MyVerify", "ingress": "MyIngress",
        "egress": "MyEgress", "compute": "MyCompute", "deparser": "MyDeparser"}
    assert list(features.blocks) == ["p", "vr", "ig", "eg", "ck", "dep"]


def test_main_blocks_must_fit_the_package() -> None:
    bad = v1().replace("V1Switch(P(), VC(), I(),", "V1Switch(P(), VC(), VC(),")
    err = error_of(bad)
    assert "VC does not match Ingress" in err.message
    swapped = v1().replace("E(), CC(), D()) main;", "E(), CC(), CC()) main;")
    assert "does not match Deparser" in error_of(swapped).message


def test_table_keys_actions_and_defaults(features: A.Program) -> None:
    fwd = table(features, "fwd")
    assert [(k.match_kind, k.expr.type) for k in fwd.keys] == [("lpm", T.BitsType(32)), ("exact", T.BOOL)]
    assert [a.name for a in fwd.actions] == ["set_port", "set_mcast", "drop", "NoAction"]
    assert all(isinstance(a.decl, A.ActionDecl) for a in fwd.actions)
    assert fwd.default_action is not None and fwd.default_action.name == "drop"
    assert not fwd.default_action_const
    assert fwd.size == 1024
    assert isinstance(fwd.counters, A.Instantiation) and fwd.counters.name == "fwd_hits"
    acl = table(features, "acl")
    assert acl.default_action_const and acl.default_action.name == "NoAction"  # type: ignore[union-attr]
    rewrite = acl.actions[2]
    assert rewrite.name == "rewrite" and [a.value.value for a in rewrite.args] == [1]  # type: ignore[attr-defined]


def test_const_entries_priorities_follow_bmv2_order(features: A.Program) -> None:
    acl = table(features, "acl")
    assert acl.entries_const and all(e.is_const for e in acl.entries)
    # rank 1, 2 by position; the third has @priority(7): larger number = wins
    assert [e.priority for e in acl.entries] == [(1 << 24) - 1, (1 << 24) - 2, (1 << 24) - 7]
    first = acl.entries[0]
    assert isinstance(first.keys[0], A.Mask) and first.keys[0].value.value == 0x0A000000  # type: ignore[attr-defined]
    assert isinstance(first.keys[1], A.Range) and first.keys[1].hi.value == 1023  # type: ignore[attr-defined]
    assert isinstance(first.keys[2], A.EnumMember) and first.keys[2].value == 6
    assert isinstance(first.keys[3], A.DefaultExpr)
    second = acl.entries[1]
    assert [a.value.value for a in second.action.args] == [1, 0x020000000001]  # type: ignore[attr-defined]


def test_mutable_entries_priorities_follow_the_language_rules(features: A.Program) -> None:
    prio = table(features, "prio")
    assert not prio.entries_const
    # explicit 10, then 10 - delta for the unnumbered one, then explicit 50
    assert [e.priority for e in prio.entries] == [10, 9, 50]


def test_entries_without_explicit_priority_count_down() -> None:
    locals_ = """action a() {}
    table t { key = { m.x: ternary; } actions = { a; }
              entries = { 1 &&& 1: a(); 2 &&& 2: a(); 3 &&& 3: a(); } }"""
    prog = compile_src(v1(ingress_locals=locals_, ingress_body="t.apply();"))
    assert [e.priority for e in table(prog, "t").entries] == [3, 2, 1]


@pytest.mark.parametrize("entries,fragment", [
    ("1 &&& 1: a(); 2: b();", "not in the table's actions"),
    ("1 .. 2: a();", "a range needs a range key"),
    ("m.x: a();", "compile-time constants"),
    ("1: a(); 2: a(1);", "too many arguments"),
])
def test_bad_entries(entries: str, fragment: str) -> None:
    locals_ = f"""action a() {{}} action b() {{}}
    table t {{ key = {{ m.x: ternary; }} actions = {{ a; }} const entries = {{ {entries} }} }}"""
    assert fragment in error_of(v1(ingress_locals=locals_, ingress_body="t.apply();")).message


def test_default_action_must_be_listed_and_bound_consistently() -> None:
    locals_ = """action a(in bit<8> v, bit<8> d) {} action b() {}
    table t { key = { m.x: exact; } actions = { a(m.x); } default_action = %s; }"""
    assert "not in the table's actions" in error_of(v1(ingress_locals=locals_ % "b()")).message
    assert "does not match" in error_of(v1(ingress_locals=locals_ % "a(m.y[7:0], 1)")).message
    prog = compile_src(v1(ingress_locals=locals_ % "a(m.x, 5)"))
    da = table(prog, "t").default_action
    assert da is not None and [a.value.type for a in da.args] == [T.BitsType(8), T.BitsType(8)]


def test_table_without_default_gets_noaction() -> None:
    locals_ = "action a() {} table t { key = { m.x: exact; } actions = { a; NoAction; } }"
    da = table(compile_src(v1(ingress_locals=locals_)), "t").default_action
    assert da is not None and da.name == "NoAction" and da.decl is not None


def test_parser_transitions_resolve(features: A.Program) -> None:
    parser = features.v1model["parser"].decl
    assert isinstance(parser, A.ParserDecl)
    start = parser.state("start")
    assert start is not None and start.transition is not None and start.transition.select is not None
    targets = [c.next_state for c in start.transition.select.cases]
    assert [t if isinstance(t, str) else t.name for t in targets] == [
        "parse_vlan", "parse_mpls", "parse_ipv4", "accept", "accept"]
    vs_case = start.transition.select.cases[3]
    assert isinstance(vs_case.keyset, A.PathExpr) and isinstance(vs_case.keyset.ref, A.ValueSetDecl)
    ipv4 = parser.state("parse_ipv4")
    cases = ipv4.transition.select.cases  # type: ignore[union-attr]
    assert isinstance(cases[0].keyset, A.ListExpr)
    assert isinstance(cases[0].keyset.elems[0], A.EnumMember)
    assert cases[0].keyset.elems[1].type == T.BitsType(13)


def test_sub_parser_and_sub_control_instances(features: A.Program) -> None:
    parser = features.v1model["parser"].decl
    vlan = parser.state("parse_vlan").stmts[0].call  # type: ignore[union-attr]
    assert vlan.kind == "block_apply" and vlan.target.name == "vlan_parser"
    assert vlan.target.decl.name == "VlanParser"
    ing = ingress(features)
    direct = [d for d in ing.locals if isinstance(d, A.Instantiation) and d.decl is not None
              and getattr(d.decl, "name", "") == "Bump"]
    assert len(direct) == 1  # Bump.apply(meta) made an implicit instance
    count2 = next(d for d in ing.locals if isinstance(d, A.Instantiation) and d.name == "count2")
    assert count2.args[0].value.type == T.BitsType(8)


def test_parser_errors() -> None:
    assert "no start state" in error_of(v1(parser_states="state s0 { transition accept; }")).message
    assert "unknown state" in error_of(v1(parser_states="state start { transition nowhere; }")).message
    err = error_of(v1(parser_states="state start { transition select(hdr.h.a) { 1 .. 8w2: accept; m: accept; } }"))
    assert "expected a value of type bit<8>" in err.message
    err = error_of(v1(parser_states="state start { pkt.extract(m); transition accept; }"))
    assert "must be a header" in err.message


def test_verify_only_in_parsers_and_apply_not_in_actions() -> None:
    assert "only be called in parsers" in error_of(v1(ingress_body="verify(true, error.NoMatch);")).message
    locals_ = "table t { key = { m.x: exact; } actions = { NoAction; } } action a() { t.apply(); }"
    assert "cannot be applied from actions" in error_of(v1(ingress_locals=locals_)).message


def test_instances_are_checked() -> None:
    assert "expects" in error_of(v1(ingress_locals="register<bit<8>>() r;")).message or \
        "no overload" in error_of(v1(ingress_locals="register<bit<8>>() r;")).message
    assert "top level" in error_of(v1(top="control X() { apply {} }\nX() x;\n")).message
    assert "compile-time constants" in error_of(
        v1(ingress_locals="bit<32> n = 4; register<bit<8>>(n) r;")).message
