"""The program's STF tests on BMv2 (p4c's build) and on ``p4mcc switch``:
both pass, and both send the same frames out of every port.

Needs root (veth ports), p4c-bm2-ss and simple_switch_grpc on PATH.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bmv2_harness import REPO, P4cBuild, need, root_lock

from p4switch.stf import StfRunner

STF_DIR = REPO / "tests" / "stf" / "mcc"
STFS = sorted(p.name for p in STF_DIR.glob("*.stf"))

pytestmark = [pytest.mark.root, pytest.mark.slow]


def stf_ports(text: str) -> list[int]:
    """Every data-plane port the STF file names (packets, expectations, PRE nodes)."""
    ports: set[int] = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].split()
        if line and line[0] in ("packet", "expect"):
            ports.add(int(line[1], 0))
        elif line and line[0] == "mc_node_create":
            ports.update(int(x, 0) for x in line[2:])
    return sorted(p for p in ports if p != 510)


def run_on(target: str, text: str, name: str, tmp: Path, build: P4cBuild) -> StfRunner:
    from live import LiveSwitch

    sw = LiveSwitch(target, stf_ports(text), tmp, build.json, build.p4info)
    try:
        runner = StfRunner(sw)
        runner.result = runner.run_text(text, name)
        return runner
    finally:
        sw.close()


@pytest.mark.parametrize("name", STFS)
def test_stf_gives_the_same_frames_on_bmv2_and_on_p4mcc_switch(name: str, p4c_build: P4cBuild,
                                                                 tmp_path: Path) -> None:
    need("simple_switch_grpc")
    if not __import__("os").geteuid() == 0:
        pytest.skip("needs root for veth ports")
    assert p4c_build.returncode == 0, p4c_build.stderr
    text = (STF_DIR / name).read_text()
    with root_lock():
        bmv2 = run_on("bmv2", text, name, tmp_path, p4c_build)
        builtin = run_on("builtin", text, name, tmp_path, p4c_build)
    assert bmv2.result.passed, "BMv2:\n" + "\n".join(bmv2.result.messages)
    assert builtin.result.passed, "p4mcc switch:\n" + "\n".join(builtin.result.messages)
    assert {p: [f.hex() for f in fs] for p, fs in bmv2.received.items()} == \
        {p: [f.hex() for f in fs] for p, fs in builtin.received.items()}
