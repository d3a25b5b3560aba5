"""Agent processes for tests, started warm (``p4mcc_cli/agent_gate.py``) and then together.

Started cold, a Python agent spends seconds importing on a busy machine, so
in a session of a few seconds one agent could start after another had ended.
Each agent here is a gate that imports first; once every gate says it is
ready, each is handed its command line, in the order given.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

from p4mcc.cli.agent_gate import READY_LINE

Agent = tuple["subprocess.Popen[str]", list[str]]


def agent(args: Sequence[str]) -> Agent:
    """A gate for ``p4mcc ARGS`` (the arguments after ``p4mcc``; ``--proto`` picks what it imports)."""
    proto = args[list(args).index("--proto") + 1] if "--proto" in args else ""
    gate = subprocess.Popen([sys.executable, "-m", "p4mcc.cli.agent_gate", proto], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return gate, list(args)


def start(agents: Sequence[Agent]) -> list[subprocess.Popen[str]]:
    """Wait until every gate is ready, then run each one's command line; the processes, in order."""
    for gate, _args in agents:
        line = gate.stdout.readline().strip()
        assert line == READY_LINE, line or gate.stderr.read()
    for gate, args in agents:
        gate.stdin.write(json.dumps(args) + "\n")
        gate.stdin.flush()
    return [gate for gate, _args in agents]
