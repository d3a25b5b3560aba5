"""Agents warm before their start: imported, waiting for their command line.

A Python agent spends seconds importing the command line, the host driver
and its protocol before it can send a packet, and on a busy 2-core machine
(BMv2 switches, link processes and iperf3 beside it) more than that.  Started
cold at its scenario time, an agent then joins late, or not at all within a
short run.  So ``p4mcc run`` starts every agent as a gate
(``p4mcc_cli/agent_gate.py``) in its host before the run's clock starts, and
at the agent's start time writes its command line to the gate's stdin: the
agent runs at once, as if started then.  Fault restarts use the same gates.
A gate that does not come up in time is ended, and its agent is started cold
at its time, as before.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from p4mcc.emulation.mininet_net import LoggedProcess, spawn
from p4mcc.emulation.plan import AgentPlan

#: The first line a gate prints once imported (``p4mcc.cli.agent_gate.READY_LINE``;
#: the emulation layer sits below the command line and cannot import it).
GATE_READY = re.compile(r"^agent standby: waiting")
#: How long the runner waits for all gates before its clock starts.  Dozens of
#: agents importing on 2 cores beside BMv2 take tens of seconds.
WARM_TIMEOUT_S = 120.0


def protocol_of(argv: Sequence[str]) -> str:
    """The protocol an agent's command line runs (its gate imports that protocol's code)."""
    args = list(argv)
    return args[args.index("--proto") + 1] if "--proto" in args else ""


def gate(name: str, argv: Sequence[str], log_path: Path, node: Any) -> LoggedProcess:
    """Start a gate for the agent with command line ``argv`` in ``node``."""
    return spawn(name, [sys.executable, "-m", "p4mcc.cli.agent_gate", protocol_of(argv)], log_path,
                 node=node, stdin=True, realtime=True, ready_pattern=GATE_READY)


def hand_over(g: LoggedProcess, argv: Sequence[str]) -> bool:
    """Give gate ``g`` the agent's command line; False when it cannot take it (it died)."""
    args = list(argv)
    try:
        g.proc.stdin.write((json.dumps(args[args.index("p4mcc.cli.main") + 1:]) + "\n").encode())
        g.proc.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def end(g: LoggedProcess) -> None:
    """End a gate never given a command line (end of input: it exits 0 on its own)."""
    try:
        g.proc.stdin.close()
    except OSError:
        pass
    g.stop(timeout=3)


def warm_all(agents: Sequence[AgentPlan], net: Any, logs: Path,
             timeout: float = WARM_TIMEOUT_S) -> dict[AgentPlan, LoggedProcess]:
    """A ready gate for each agent, waiting at most ``timeout`` seconds for all of them."""
    gates = {a: gate(f"{a.role} {a.label}", a.argv, logs / f"agent-{a.session}-{a.host}.log", net[a.host])
             for a in agents}
    deadline = time.monotonic() + timeout
    ready: dict[AgentPlan, LoggedProcess] = {}
    for a, g in gates.items():
        if g.ready.wait(max(0.0, deadline - time.monotonic())) and g.alive and g.ready_match is not None:
            ready[a] = g
        else:
            end(g)  # started cold at its time instead
    return ready
