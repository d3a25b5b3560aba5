"""TFMCC's profiles: ``paper`` runs the bare cores, ``default`` composes every rule.

The paper profile must run on its own (a simulated dumbbell, no rule), and
the cores must hold no branch on a parameter: every variant is a named rule
(:mod:`hosts.tfmcc.rules`), never a switch the core reads.
"""

from __future__ import annotations

from p4mcc.hosts import registry
from p4mcc.hosts.tfmcc import RULES, TfmccParams, TfmccReceiver, TfmccSender
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.scenario.shapes import star

def test_paper_profile_is_the_bare_cores_and_default_holds_every_rule_but_the_stamps_and_rtt_step() -> None:
    # rtt_step is measured and left out (docs/protocols/tfmcc.md#rules)
    proto = registry.get("tfmcc")
    assert proto.resolve_rules("paper") == ()
    assert set(proto.resolve_rules("default")) == set(RULES.names()) - {"stamp_spare", "share_start", "rtt_step"}
    assert proto.resolve_rules("stamped") == ("share_start", *proto.resolve_rules("default"), "stamp_spare")
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

