"""VLMCC's profiles: ``paper`` runs the bare cores, ``default`` every rule but the stamp's.

The paper profile must run on its own (a simulated link, no rule), and the
cores must hold no branch on a parameter: every variant is a named rule
(:mod:`hosts.vlmcc.rules`), never a switch the core reads.
"""

from __future__ import annotations

from p4mcc.hosts import registry
from p4mcc.hosts.vlmcc import RULES, VlmccParams, VlmccReceiver, VlmccSender
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.scenario.shapes import star

def test_paper_profile_is_the_bare_cores_and_default_holds_every_rule() -> None:
    proto = registry.get("vlmcc")
    assert proto.resolve_rules("paper") == ()
    stamp = {n for n in RULES.names() if n.startswith(("stamp_", "share_"))}
    assert set(proto.resolve_rules("default")) == set(RULES.names()) - stamp
    assert set(proto.resolve_rules("stamped")) == set(RULES.names())
    assert RULES.compose(VlmccSender, ()) is VlmccSender
    assert RULES.compose(VlmccReceiver, ()) is VlmccReceiver


def test_paper_profile_finds_a_leader_and_fills_a_1mbit_link() -> None:
    # Two receivers behind one 1 Mbit/s, 20 ms link: the first probe names the
    # leader and the Vegas window fills the link (section 3's single-path case).
    sim = Simulator(1)
    net = build_network(sim, star(receivers=2, rate="1Mbps", delay="20ms", queue=20))
    net.set_group_source("239.1.1.1", "snd")
    snd_ip = net.hosts["snd"].ip
    proto, params = registry.get("vlmcc"), VlmccParams(packet_size=1000)

    def cfg(ip: str) -> registry.SessionConfig:
        return registry.SessionConfig(1, "239.1.1.1", 5000, snd_ip, ip, params, seed=1, rules=())

    snd = net.hosts["snd"].add_endpoint(proto.sender(cfg(snd_ip)), port=5000)
    rcvs = [net.hosts[h].add_endpoint(proto.receiver(cfg(net.hosts[h].ip)), port=5000) for h in ("r1", "r2")]
    assert type(snd) is VlmccSender and all(type(r) is VlmccReceiver for r in rcvs)
    sim.run(10.0)
    assert snd.leader in {r.me for r in rcvs}
    got0 = [r.received for r in rcvs]
    sim.run(30.0)
    for r, g in zip(rcvs, got0):
        rate_bps = (r.received - g) * 8 * params.packet_size / 20.0
        assert 0.7e6 < rate_bps < 1.0e6


def test_a_rule_overriding_a_hook_of_the_rule_it_needs_composes_outside_it() -> None:
    # The outermost class's method wins: a rule that overrides a hook the rule
    # it needs defines (compete's _entry_ssthresh and queue_drained,
    # compete_timeouts' _timeout, rejoin_after_silence's _rejoined) must be listed before it, or the default
    # silently runs the inner rule's version.
    order = RULES.names()
    checked = 0
    for rule in RULES.rules:
        for needed in map(RULES.get, rule.requires):
            for role, mixin in rule.mixins.items():
                base = needed.mixins.get(role)
                if base is None:
                    continue  # the rule it needs has no mixin for this role
                core = VlmccSender if role == "vlmcc-sender" else VlmccReceiver
                hooks = {n for n in vars(base) if callable(vars(base)[n]) and not hasattr(core, n)}
                if hooks & set(vars(mixin)):
                    checked += 1
                    assert order.index(rule.name) < order.index(needed.name), (rule.name, needed.name)
    assert checked == 5
