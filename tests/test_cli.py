"""The ``p4mcc`` command lists every subcommand and none pretends to work."""

from __future__ import annotations

import subprocess
import sys

import pytest

SUBCOMMANDS = ["switch", "check", "stf", "ctl", "host", "sim", "run", "report", "sweep"]


def p4mcc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "p4mcc.cli.main", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_every_subcommand() -> None:
    out = p4mcc("--help")
    assert out.returncode == 0
    for name in SUBCOMMANDS:
        assert name in out.stdout


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_has_help(name: str) -> None:
    out = p4mcc(name, "--help")
    assert out.returncode == 0, out.stderr
    assert "usage: p4mcc " + name in out.stdout


def test_no_command_prints_help_and_fails() -> None:
    out = p4mcc()
    assert out.returncode == 2
    assert "usage" in out.stdout
