"""p4src/mcc.p4 is a program real p4c compiles for BMv2: no error, no warning."""

from __future__ import annotations

import json

from bmv2_harness import P4cBuild


def test_p4c_bm2_ss_compiles_mcc_p4_without_errors_or_warnings(p4c_build: P4cBuild) -> None:
    assert p4c_build.returncode == 0, p4c_build.stderr
    assert "warning" not in p4c_build.stderr.lower(), p4c_build.stderr
    assert "error" not in p4c_build.stderr.lower(), p4c_build.stderr


def test_p4c_p4info_names_the_tables_the_controller_writes(p4c_build: P4cBuild) -> None:
    """The controller resolves names through P4Info; p4c's must carry the same ones."""
    assert p4c_build.returncode == 0, p4c_build.stderr
    text = p4c_build.p4info.read_text()
    for table in ("MccIngress.switch_config", "MccIngress.ipv4_fwd", "MccIngress.arp_proxy",
                  "MccIngress.sessions", *(f"MccIngress.record{n}.groups" for n in range(4))):
        assert f'name: "{table}"' in text, table
    program = json.loads(p4c_build.json.read_text())
    names = {r["name"] for r in program["register_arrays"]}
    assert {"member_bitmap", "member_ts", "agg_summary", "filter_worst"} <= names
