"""The controller's copy of the sizes compiled into ``p4src/mcc.p4`` matches
``include/defs.p4``: the controller refuses or warns by these numbers (member
ports, group and session slots, folded ports), so a size changed in the P4
source alone would let it configure what the switch cannot hold."""

from __future__ import annotations

import re

import pytest

from p4mcc.controller.program import CPU_PORT, MCC, P4_INCLUDE

DEFINES = dict(re.findall(r"^#define\s+(\w+)\s+(\d+)\s*$", (P4_INCLUDE / "defs.p4").read_text(), re.M))


@pytest.mark.parametrize("define, value", [
    ("MCC_CPU_PORT", CPU_PORT),
    ("PORT_SPACE", MCC.port_space),
    ("MEMBER_PORTS", MCC.member_ports),
    ("MAX_GROUPS", MCC.max_groups),
    ("MAX_SESSIONS", MCC.max_sessions),
    ("AGG_K", MCC.agg_k),
])
def test_controller_sizes_match_the_p4_defines(define: str, value: int) -> None:
    assert int(DEFINES[define]) == value
