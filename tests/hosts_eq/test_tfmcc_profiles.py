"""TFMCC's profiles: ``paper`` runs the bare cores, ``default`` composes every rule.

The paper profile must run on its own (a simulated dumbbell, no rule), and
the cores must hold no branch on a parameter: every variant is a named rule
(:mod:`hosts.tfmcc.rules`), never a switch the core reads.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect

from hosts import registry
from hosts.tfmcc import RULES, TfmccParams, TfmccReceiver, TfmccSender, receiver, sender
from hosts.tfmcc.params import TfmccParams as ParamsClass
from netsim.engine import Simulator
from netsim.network import build_network
from scenario.shapes import star

MAX_USER_PARAMS = 12


def test_paper_profile_is_the_bare_cores_and_default_holds_every_rule() -> None:
    proto = registry.get("tfmcc")
    assert proto.resolve_rules("paper") == ()
    assert set(proto.resolve_rules("default")) == set(RULES.names())
    assert RULES.compose(TfmccSender, ()) is TfmccSender
    assert RULES.compose(TfmccReceiver, ()) is TfmccReceiver


def test_paper_profile_leaves_slowstart_and_fills_a_1mbit_dumbbell() -> None:
    # The paper's per-round slowstart from one packet per 0.5 s is slow (its
    # first rounds last T = 4·(c+1)·s/R, 10 s at 16 kbit/s) but ends; then
    # the equation holds the bottleneck (paper 3: TFMCC uses the link).
    sim = Simulator(1)
    net = build_network(sim, star(receivers=1, rate="1Mbps", delay="20ms", queue=20))
    net.set_group_source("239.1.1.1", "snd")
    snd_ip, r_ip = net.hosts["snd"].ip, net.hosts["r1"].ip
    proto, params = registry.get("tfmcc"), TfmccParams(packet_size=1000)

    def cfg(ip: str) -> registry.SessionConfig:
        return registry.SessionConfig(1, "239.1.1.1", 5000, snd_ip, ip, params, seed=1, rules=())

    snd = net.hosts["snd"].add_endpoint(proto.sender(cfg(snd_ip)), port=5000)
    rcv = net.hosts["r1"].add_endpoint(proto.receiver(cfg(r_ip)), port=5000)
    assert type(snd) is TfmccSender and type(rcv) is TfmccReceiver
    sim.run(45.0)
    assert not snd.slowstart and rcv.history.has_loss
    seq0 = snd.seq
    sim.run(75.0)
    sent_bps = (snd.seq - seq0) * 8 * params.packet_size / 30.0
    assert 0.7e6 < sent_bps < 1.05e6


def _param_branches(source: str, where: str) -> list[str]:
    """Every ``if``/``while``/conditional-expression test that reads a parameter field."""
    fields = {f.name for f in dataclasses.fields(ParamsClass)}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Attribute) and sub.attr in fields:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node.test)}")
    return found


def test_the_cores_branch_on_no_parameter() -> None:
    for module in (receiver, sender):
        assert _param_branches(inspect.getsource(module), module.__name__) == []


def test_the_branch_finder_sees_a_parameter_switch() -> None:
    src = "def f(self):\n    x = 1 if self.p.initial_rate_bps else 2\n    if s.packet_size > 1:\n        pass\n"
    assert len(_param_branches(src, "probe")) == 2


def test_at_most_twelve_user_parameters() -> None:
    assert len(dataclasses.fields(TfmccParams)) <= MAX_USER_PARAMS


def test_rule_constants_do_not_shadow_each_other() -> None:
    # A composed class sees every rule's class constants: two rules with a
    # constant of one name would read one value (a pairs size of 4).
    seen: dict[str, str] = {}
    for rule in RULES.rules:
        for mixin in rule.mixins.values():
            for name in vars(mixin):
                if name.isupper() and name != "COUNTERS":
                    assert name not in seen, f"{name} in {rule.name} and {seen[name]}"
                    seen[name] = rule.name
