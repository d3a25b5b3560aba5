"""The warm replacement of a killed agent (p4mcc_cli/agent_gate.py) runs the command line it is given, and only that."""

from __future__ import annotations

import subprocess
import sys


def _gate(stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4mcc.cli.agent_gate", "vlmcc"], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_the_gate_runs_its_command_line_in_process_or_nothing():
    from p4mcc.cli.agent_gate import READY_LINE

    r = _gate('["host", "recv", "--proto", "vlmcc", "--list-params"]\n')
    first, rest = r.stdout.split("\n", 1)
    assert (r.returncode, first) == (0, READY_LINE)
    assert rest.split()[0] == "packet_size"  # VLMCC's parameters: the agent's own command ran
    r = _gate("")  # the runner went away: nothing runs
    assert (r.returncode, r.stdout.strip()) == (0, READY_LINE)
    r = _gate("host recv\n")
    assert r.returncode == 2 and r.stderr.startswith("agent standby: not a JSON command line") and "Traceback" not in r.stderr
