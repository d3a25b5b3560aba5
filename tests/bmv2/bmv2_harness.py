"""Helpers for the tests that run p4src/mcc.p4 on the real toolchain (p4c, BMv2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "mcc.p4"
INCLUDE = REPO / "p4src" / "include"


def need(tool: str) -> str:
    """Path of ``tool`` on PATH, or skip the test saying which tool is missing."""
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not on PATH (p4c/BMv2 parity needs the real toolchain)")
    return path


class P4cBuild:
    """p4c-bm2-ss's outputs for p4src/mcc.p4: BMv2 JSON, P4Info, stderr."""

    def __init__(self, out: Path, result: subprocess.CompletedProcess[str]) -> None:
        self.json = out / "mcc.json"
        self.p4info = out / "mcc.p4info.txtpb"
        self.returncode = result.returncode
        self.stderr = result.stderr + result.stdout


def p4c_compile(out: Path) -> P4cBuild:
    """Compiles p4src/mcc.p4 with the real p4c into ``out``."""
    p4c = need("p4c-bm2-ss")
    r = subprocess.run(
        [p4c, "--arch", "v1model", "-I", str(REPO / "p4src"), "-I", str(INCLUDE),
         "-o", str(out / "mcc.json"), "--p4runtime-files", str(out / "mcc.p4info.txtpb"),
         str(PROGRAM)],
        capture_output=True, text=True, timeout=300)
    return P4cBuild(out, r)
