"""The runner recognises a gate's ready line (emulation/warm.py matches p4mcc_cli/agent_gate.py)."""

from p4mcc.emulation.warm import GATE_READY, protocol_of
from p4mcc.cli.agent_gate import READY_LINE


def test_runner_pattern_matches_the_gate_line() -> None:
    assert GATE_READY.search(READY_LINE)
    assert not GATE_READY.search("agent: started")


def test_protocol_is_read_from_the_command_line() -> None:
    assert protocol_of(["python", "-m", "p4mcc.cli.main", "host", "recv", "--proto", "rla"]) == "rla"
    assert protocol_of(["python", "-m", "p4mcc.cli.main", "host", "recv"]) == ""
