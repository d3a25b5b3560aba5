"""``p4mcc check --target bmv2``: the BMv2 back end's restrictions, each at the
position p4c-bm2-ss points at, and none of them on programs BMv2 runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from fe_util import FEATURES, position_of, v1

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.frontend.bmv2 import bmv2_errors
from p4mcc.cli.main import main


def errors(tmp_path: Path, src: str) -> list[tuple[int, int, str]]:
    path = tmp_path / "t.p4"
    path.write_text(src)
    return [(e.span.line, e.span.col, e.message) for e in bmv2_errors(compile_file(str(path)))]


def test_shift_by_a_nine_bit_port_is_rejected_at_the_shift(tmp_path: Path) -> None:
    src = v1(ingress_body="m.w = (32w1 << sm.ingress_port) | m.w;")
    line, col = position_of(src, "(32w1")
    assert errors(tmp_path, src) == [
        (line, col, "32w1 << sm.ingress_port: shift amount limited to 8 bits on this target")]


def test_shift_by_an_eight_bit_amount_or_a_constant_is_accepted(tmp_path: Path) -> None:
    src = v1(ingress_body="m.w = (32w1 << (bit<8>)sm.ingress_port) | (m.w >> 3) | (m.w << m.x);")
    assert errors(tmp_path, src) == []


def test_a_local_holding_a_wide_shift_is_reported_at_each_use(tmp_path: Path) -> None:
    """p4c propagates the local into its uses before its back end sees the shift."""
    src = v1(ingress_body="bit<32> bitp = 32w1 << sm.egress_spec;\n"
                          "        m.w = m.w | bitp;\n        m.y = (bit<16>)(m.w & bitp);")
    first, second = position_of(src, "bitp;"), position_of(src, "bitp)")
    msg = "32w1 << sm.egress_spec: shift amount limited to 8 bits on this target"
    assert errors(tmp_path, src) == [(*first, msg), (*second, msg)]


def test_header_that_is_not_a_whole_number_of_bytes(tmp_path: Path) -> None:
    src = v1(top="header odd_t { bit<7> a; bit<2> b; }\n", ingress_locals="odd_t o;")
    line, col = position_of(src, "odd_t {")
    assert errors(tmp_path, src) == [(line, col, "header odd_t: Found header with fields totaling 9 bits.  "
                                      "BMv2 target only supports headers with fields totaling a multiple "
                                      "of 8 bits.")]


def test_two_lpm_keys_in_one_table(tmp_path: Path) -> None:
    src = v1(ingress_locals="action a() { }\n    table routes { key = { hdr.h.a: lpm; hdr.h.b: lpm; } "
                            "actions = { a; } }",
             ingress_body="routes.apply();")
    line, col = position_of(src, "routes {")
    assert errors(tmp_path, src) == [(line, col, "multiple LPM keys in table I.routes not supported")]


def test_direct_meter_needs_a_table_and_a_read(tmp_path: Path) -> None:
    unread = v1(ingress_locals="direct_meter<bit<2>>(MeterType.packets) dm;\n    action a() { }\n"
                               "    table t { key = { hdr.h.a: exact; } actions = { a; } meters = dm; }",
                ingress_body="t.apply();")
    line, col = position_of(unread, "table t {")
    col += len("table ")
    assert errors(tmp_path, unread) == [
        (line, col, "I.t: table with direct meter I.dm must have at least one action with a read method call")]
    alone = v1(ingress_locals="direct_meter<bit<2>>(MeterType.packets) dm;")
    line, col = position_of(alone, "dm;")
    assert errors(tmp_path, alone) == [
        (line, col, "I.dm: direct meter is not associated with any table via 'meters' table property")]
    fine = v1(ingress_locals="direct_meter<bit<2>>(MeterType.packets) dm;\n    bit<2> c;\n"
                             "    action a() { dm.read(c); }\n"
                             "    table t { key = { hdr.h.a: exact; } actions = { a; } meters = dm; }",
              ingress_body="t.apply();")
    assert errors(tmp_path, fine) == []


def test_user_extern_function_is_unknown_to_bmv2(tmp_path: Path) -> None:
    src = v1(top="extern void my_hash(out bit<8> d, in bit<8> s);\n", ingress_body="my_hash(m.x, hdr.h.a);")
    line, col = position_of(src, "my_hash(out")
    assert errors(tmp_path, src) == [(line, col, "my_hash: unknown extern function")]


def test_switch_inside_an_action(tmp_path: Path) -> None:
    src = v1(ingress_locals="action a() { switch (m.x) { 1: { m.y = 1; } default: { } } }",
             ingress_body="a();")
    line, col = position_of(src, "switch (m.x)")
    assert errors(tmp_path, src) == [
        (line, col, "SwitchStatement: switch statements not supported in actions on this target")]


def test_parser_that_never_finishes(tmp_path: Path) -> None:
    src = v1(parser_states="state start { pkt.extract(hdr.h); transition next; }\n"
                           "    state next { transition start; }")
    line, col = position_of(src, "P(packet_in")
    assert errors(tmp_path, src) == [(line, col, "parser P: Parser never reaches accept or reject state")]


def test_register_read_into_a_struct(tmp_path: Path) -> None:
    src = v1(top="struct pair_t { bit<8> a; bit<8> b; }\n",
             ingress_locals="register<pair_t>(4) r;\n    pair_t v;", ingress_body="r.read(v, 0);")
    line, col = position_of(src, "v, 0")
    assert errors(tmp_path, src) == [(line, col, "v: writing to a structure is not supported on this target")]


def test_two_actions_of_one_control_with_one_control_plane_name(tmp_path: Path) -> None:
    src = v1(ingress_locals='@name(".go") action a() { }\n    @name(".go") action b() { m.x = 1; }\n'
                            "    table t { key = { hdr.h.a: exact; } actions = { a; b; } }",
             ingress_body="t.apply();")
    line, col = position_of(src, "b() {")
    assert errors(tmp_path, src) == [(line, col, "b: control-plane name go is already used by action a in I")]


def test_features_program_passes_the_bmv2_rules() -> None:
    assert bmv2_errors(compile_file(FEATURES)) == []


def test_check_defaults_to_bmv2_for_v1model_and_builtin_skips_it(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.p4"
    path.write_text(v1(ingress_body="m.w = 32w1 << sm.ingress_port;"))
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "shift amount limited to 8 bits on this target" in err and "Traceback" not in err
    assert main(["check", str(path), "--target", "builtin"]) == 0
    assert main(["check", str(path), "--target", "bmv2"]) == 1


def test_mcc_p4_passes_the_bmv2_rules() -> None:
    root = Path(__file__).resolve().parents[2]
    prog = compile_file(str(root / "p4src" / "mcc.p4"), [str(root / "p4src" / "include")])
    assert bmv2_errors(prog) == []
