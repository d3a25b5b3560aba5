"""WEBRC's rule book: the paper core has no switch, each rule is a hook
override, and the rules without a behaviour test elsewhere
(``test_webrc_receiver.py`` drives the others with and without) get one here."""

from __future__ import annotations

import ast
import inspect

import pytest
from fakes import webrc_receiver

from p4mcc.hosts import registry
from p4mcc.hosts.webrc import RULES, WebrcParams, WebrcReceiver, WebrcSender
from p4mcc.hosts.webrc import receiver as core_module
from p4mcc.hosts.webrc import rules as webrc_rules
from p4mcc.hosts.estimators import IntervalLossFilter, TwoStageLossFilter

G = "239.2.0.0"
PARAMS = WebrcParams(session_rate_bps=2_000_000, packet_length=1024)


def receiver(names: tuple[str, ...]) -> WebrcReceiver:
    return webrc_receiver(PARAMS, names, G)  # type: ignore[return-value]


def test_paper_is_the_core_and_default_is_every_rule() -> None:
    assert RULES.resolve("paper") == ()
    assert RULES.compose(WebrcReceiver, ()) is WebrcReceiver
    stamp_only = set(RULES.resolve("stamped")) - set(RULES.resolve("default"))
    assert stamp_only == {"stamp_join"}  # the rules that read the stamp are stamped's only
    assert set(RULES.resolve("default")) == set(RULES.names()) - stamp_only - {"share_join"}  # in no profile
    assert RULES.compose(WebrcSender, RULES.resolve("default")) is WebrcSender  # no sender rule


def test_user_parameters_are_at_most_twelve_and_none_is_a_switch() -> None:
    import dataclasses
    import typing

    hints = typing.get_type_hints(WebrcParams)
    fields = dataclasses.fields(WebrcParams)
    assert len(fields) <= 12
    assert not [f.name for f in fields if hints[f.name] in (bool, str)]


def _branch_tests(module) -> list[str]:
    tree = ast.parse(inspect.getsource(module))
    return [ast.unparse(node.test) for node in ast.walk(tree)
            if isinstance(node, (ast.If, ast.IfExp, ast.While)) and "self.p." in ast.unparse(node.test)]


@pytest.mark.parametrize("rule", RULES.names())
def test_each_rule_overrides_only_hooks_of_the_core(rule: str) -> None:
    mixin = RULES.get(rule).mixins["webrc-receiver"]
    own = {n for c in mixin.__mro__ if c.__module__ == webrc_rules.__name__ for n, v in vars(c).items()
           if callable(v) and not n.startswith("__") and hasattr(WebrcReceiver, n)}
    for name in own:  # every method a rule shares with the core is one the core calls
        assert name in inspect.getsource(core_module).replace(f"def {name}", ""), name


def test_artt_follows_takes_half_of_each_sample() -> None:
    def artt(names: tuple[str, ...]) -> float:
        r = receiver(names)
        r._artt_sample(0.1, 0.005)
        r._artt_sample(0.3, 0.005)
        return r.artt_value

    # equal spreads: the older sample weighs 1 - α of the newer
    assert artt(("precision_artt", "artt_follows")) == pytest.approx((0.5 * 0.1 + 0.3) / 1.5)
    assert artt(("precision_artt",)) == pytest.approx((0.75 * 0.1 + 0.3) / 1.75)


def test_interval_loss_follows_a_loss_free_stretch_at_once() -> None:
    paper, rule = receiver(()), receiver(("interval_loss",))
    assert isinstance(paper.lossp, TwoStageLossFilter) and isinstance(rule.lossp, IntervalLossFilter)
    for r in (paper, rule):
        r.lossp.set_loss_rate(0.01, True)
        r.lossp.on_packets(1000)  # ten intervals' worth without a loss
        r.lossp.end_epoch(1000, 0)
    assert rule.lossp.loss_rate < 0.5 * paper.lossp.loss_rate, (rule.lossp.loss_rate, paper.lossp.loss_rate)


def test_history_discounting_lowers_old_intervals_after_a_long_quiet() -> None:
    def after_quiet(names: tuple[str, ...]) -> float:
        r = receiver(names)
        r.lossp.set_loss_rate(0.01, True)
        for _ in range(8):  # eight loss intervals of 100 packets
            r.lossp.on_packets(100)
            r.lossp.on_event()
        r.lossp.on_packets(1000)  # then ten intervals' worth without a loss
        return r.lossp.loss_rate

    assert after_quiet(("history_discounting", "interval_loss")) < 0.8 * after_quiet(("interval_loss",))


def test_paper_profile_runs_in_the_simulator() -> None:
    from p4mcc.hosts.webrc import channel_group
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.network import build_network
    from p4mcc.scenario.shapes import star

    sim = Simulator(1)
    net = build_network(sim, star(receivers=1, rate="10Mbps", delay="20ms"))
    groups = [channel_group("239.1.1.1", cn, PARAMS.t) for cn in range(PARAMS.t, -1, -1)]
    for g in groups:
        net.set_group_source(g, "snd")
    proto = registry.get("webrc")
    snd_ip, r_ip = net.hosts["snd"].ip, net.hosts["r1"].ip

    def cfg(ip: str) -> registry.SessionConfig:
        return registry.SessionConfig(1, groups[0], 5000, snd_ip, ip, PARAMS, rules=())

    net.hosts["snd"].add_endpoint(proto.sender(cfg(snd_ip)), port=5000)
    rcv = net.hosts["r1"].add_endpoint(proto.receiver(cfg(r_ip)), port=5000)
    sim.run(20.0)
    assert type(rcv) is WebrcReceiver  # the core itself
    assert rcv.joins >= 3 and rcv.received > 1000  # it climbs: 2 Mbit/s fits the path
