"""``p4mcc host --profile/--rule`` and the emulation's agent command lines
carry a session's rules to the agent Mininet runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.emulation.plan import make_plan
from p4mcc.hosts import cli
from p4mcc.hosts.registry import ParamError
from p4mcc.cli.main import build_parser, main
from p4mcc.scenario.model import scenario_from_dict
from test_scenario_rules import doc


def host_args(*extra: str):
    return build_parser().parse_args(["host", "recv", "--proto", "toyrules", "--sender", "10.9.0.1",
                                      "--local", "10.9.1.1", *extra])


def test_host_flags_give_the_agent_its_rule_list(toy) -> None:
    proto, cfg = cli.build_config(host_args("--profile", "paper", "--rule", "eager_join=on"))
    assert cfg.rules == ("eager_join",)
    assert getattr(proto.receiver(cfg), "eager", False)
    _, cfg = cli.build_config(host_args())
    assert cfg.rules == ("double",)  # no flag: the default profile


@pytest.mark.parametrize(("flags", "message"), [
    (("--rule", "nope=on"), "unknown rule 'nope'"),
    (("--rule", "double"), "--rule 'double' is not NAME=on|off"),
    (("--rule", "double=perhaps"), "'perhaps' is not on or off"),
    (("--profile", "paper", "--rule", "quiet=on"), "rule 'quiet' needs 'double'"),
])
def test_bad_rule_flags_are_one_line_errors(toy, capsys, flags, message) -> None:
    with pytest.raises(ParamError, match=message):
        cli.build_config(host_args(*flags))
    code = main(["host", "recv", "--proto", "toyrules", "--sender", "10.9.0.1", *flags])
    err = capsys.readouterr().err.strip()
    assert code == cli.EXIT_USAGE and len(err.splitlines()) == 1 and message in err


def test_list_rules_prints_the_book(toy, capsys) -> None:
    assert main(["host", "send", "--proto", "toyrules", "--list-rules"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("double") and "sends twice as often" in out[0]
    assert "profile paper: no rule" in out and "profile stamped: double, quiet" in out


def test_the_emulations_agent_command_lines_resolve_to_the_sessions_rules(toy, tmp_path: Path) -> None:
    sc = scenario_from_dict(doc(profile="paper", rules={"double": "on", "eager_join": "off"}))
    plan = make_plan(sc, tmp_path)
    assert {a.role for a in plan.agents} == {"send", "recv"}
    for agent in plan.agents:
        argv = list(agent.argv)
        assert argv[argv.index("--profile") + 1] == "paper"
        assert [argv[i + 1] for i, a in enumerate(argv) if a == "--rule"] == ["double=on", "eager_join=off"]
        args = build_parser().parse_args(argv[argv.index("p4mcc.cli.main") + 1:])
        _, cfg = cli.build_config(args)
        assert cfg.rules == ("double",) == sc.sessions[0].effective_rules()
