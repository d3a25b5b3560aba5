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


def test_a_named_command_loads_that_command_alone() -> None:
    """An agent (`p4mcc host`) starts without the P4 front end, the controller or networkx."""
    code = ("import sys; from p4mcc.cli.main import build_parser; "
            "p = build_parser(['host']); "
            "print(sorted(m for m in ('p4mcc.p4switch.frontend', 'p4mcc.cli.ctl.context', 'networkx', "
            "'p4mcc.hosts.cli') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['p4mcc.hosts.cli']"


def test_an_unknown_command_names_every_valid_one() -> None:
    out = p4mcc("bogus")
    assert out.returncode == 2
    for name in SUBCOMMANDS:
        assert repr(name) in out.stderr
