"""A warm replacement for an agent a fault killed: imported, waiting for its command line.

``p4mcc run`` starts one in the host's namespace the moment ``agent_kill``
or ``receiver_crash`` ends an agent that will be restarted
(``emulation/faults.py``).  It imports the ``p4mcc`` command
line, the host driver and the protocol's cores -- the seconds a Python
process spends before it can send a packet on a busy machine -- then prints
one line and waits.  At the restart time the runner writes the agent's
command line (a JSON list of the arguments after ``p4mcc``) on its stdin and
the agent runs in this process, as if started then.  End of input without a
command line: exit 0, nothing run.

Run: ``python -m p4mcc.cli.agent_gate PROTOCOL`` (inside the host).
"""

from __future__ import annotations

import importlib
import json
import sys

READY_LINE = "agent standby: waiting for its command line on stdin"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from p4mcc.cli.main import build_parser
    from p4mcc.cli.main import main as p4mcc

    build_parser(["host"])  # imports the agents' command (an agent's command line is `p4mcc host ...`)
    importlib.import_module("p4mcc.hosts.driver")
    if args:
        from p4mcc.hosts import registry

        try:
            importlib.import_module(registry.get(args[0]).module)
        except Exception:  # noqa: BLE001 - the agent itself reports a bad protocol, with its own message
            pass
    print(READY_LINE, flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    try:
        command = json.loads(line)
    except ValueError:
        print(f"agent standby: not a JSON command line: {line.strip()[:80]}", file=sys.stderr)
        return 2
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        print("agent standby: the command line must be a JSON list of strings", file=sys.stderr)
        return 2
    return p4mcc(command)


if __name__ == "__main__":
    sys.exit(main())
