"""Behaviour of the cores over simulated networks.

TFMCC's convergence and WEBRC's throughput run over the simulator
(``netsim``: real frames, IGMP, the model switch); the 1000-receiver feedback
test runs over ``testnet.StarNet`` (datagram-level, no frames or IGMP), which keeps
it within seconds.  They reproduce the numbers issue 7 asks for: TFMCC
converging to the TCP equation on a 1 Mbit/s bottleneck, WEBRC's
single-receiver throughput from its paper (403 kbit/s at 1% loss and 0.2 s
RTT), and TFMCC's feedback staying bounded as the receiver set grows.
"""

from __future__ import annotations

import random
import statistics

import pytest
from testnet import LinkSpec, StarNet

from p4mcc.hosts import registry
from p4mcc.hosts.tfmcc import TfmccParams
from p4mcc.hosts.tfrc import rto, tcp_rate
from p4mcc.hosts.webrc import DATA_HEADER as WEBRC_HEADER
from p4mcc.hosts.webrc import WebrcParams, channel_group
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.scenario.shapes import star

SENDER = "10.0.0.1"


def cfg(ip: str, params, seed: int) -> registry.SessionConfig:
    return registry.SessionConfig(1, "239.1.1.1", 5000, SENDER, ip, params, seed=seed)


def _netsim(topo, seed: int):
    sim = Simulator(seed)
    net = build_network(sim, topo)
    return sim, net


def _attach(net, proto, params, seed: int, groups: list[str], start_at: float = 0.0,
            rules: tuple[str, ...] | None = None):
    for g in groups:
        net.set_group_source(g, "snd")  # model switches: the port toward the sender
    snd_ip, r_ip = net.hosts["snd"].ip, net.hosts["r1"].ip

    def cfg_for(ip: str) -> registry.SessionConfig:
        return registry.SessionConfig(1, groups[0], 5000, snd_ip, ip, params, seed=seed, rules=rules)

    snd = net.hosts["snd"].add_endpoint(proto.sender(cfg_for(snd_ip)), port=5000)
    rcv = net.hosts["r1"].add_endpoint(proto.receiver(cfg_for(r_ip)), port=5000, start_at=start_at)
    return snd, rcv


def test_tfmcc_converges_to_the_equation_rate_on_a_1mbit_bottleneck() -> None:
    # netsim: sender -- switch -- 1 Mbit/s, 20 ms, 20-packet drop-tail link -- receiver.
    proto, params = registry.get("tfmcc"), TfmccParams(packet_size=1000)
    sim, net = _netsim(star(receivers=1, rate="1Mbps", delay="20ms", queue=20), seed=1)
    snd, rcv = _attach(net, proto, params, 1, ["239.1.1.1"])
    sim.run(60.0)  # slowstart and settling
    seq0 = snd.seq
    p, rtt = [], []
    for t in range(61, 241):
        sim.run(float(t))
        p.append(rcv.loss_event_rate)
        rtt.append(rcv.rtt)
    sent_bps = (snd.seq - seq0) * 8 * params.packet_size / 180.0
    R = statistics.mean(rtt)
    equation = 8 * tcp_rate(params.packet_size, R, statistics.mean(p), rto(R))
    assert sent_bps == pytest.approx(equation, rel=0.10)
    assert 0.85e6 < sent_bps < 1.05e6  # and it uses the bottleneck


def _webrc_rate(params: WebrcParams, seed: int, rules: tuple[str, ...] | None = None) -> tuple[float, object]:
    proto = registry.get("webrc")
    groups = [channel_group("239.1.1.1", cn, params.t) for cn in range(params.t, -1, -1)]
    sim, net = _netsim(star(receivers=1, rate="100Mbps", delay="99.5ms", loss=0.01), seed)
    start = random.Random(seed).uniform(0, params.tsd)  # random phase, as the paper
    _snd, rcv = _attach(net, proto, params, seed, groups, start_at=start, rules=rules)
    sim.run(250.0)
    b0 = rcv.bytes_received
    sim.run(500.0)
    payload = (rcv.bytes_received - b0) * params.packet_length / (params.packet_length + WEBRC_HEADER)
    return payload * 8 / 250.0, rcv


#: The paper's packets (1024 B) and a session rate above the path's.
PAPER_WEBRC = dict(packet_length=1024, session_rate_bps=2e6)


def test_webrc_single_receiver_matches_the_paper_throughput() -> None:
    # WEBRC 5.1.1 / Fig. 5: 1% random loss, 0.2 s RTT, 1024-byte packets:
    # 403 kbit/s averaged over eight trials (steady state = last half of 500 s),
    # with the ``paper`` profile: the core and no rule.
    params = WebrcParams(**PAPER_WEBRC)
    rates = []
    for seed in (1, 2):
        rate, rcv = _webrc_rate(params, seed, rules=())
        rates.append(rate)
        assert rcv.lossp.loss_rate == pytest.approx(0.0089, rel=0.35)  # eq. 8: ~0.0089
        assert rcv.artt_value == pytest.approx(0.2, rel=0.25)
    assert statistics.mean(rates) == pytest.approx(403_000, rel=0.15)


def test_webrc_default_rate_is_the_tcp_equation_rate() -> None:
    # With the defaults (joins centred on the equation rate) the receiver
    # gets what TCP's eq. 1 gives for the same path: 60.1 packets/s of
    # 1024 B at p = 0.01 and RTT 0.2 s (paper 5.1.1), 492 kbit/s; the
    # paper's rules stay ~0.85 of it (403 kbit/s above).
    rates = [_webrc_rate(WebrcParams(**PAPER_WEBRC), seed)[0] for seed in (1, 2)]
    assert statistics.mean(rates) == pytest.approx(60.1 * 1024 * 8, rel=0.15)


def _feedback_per_round(n: int, duration: float) -> list[int]:
    """TFMCC with ``n`` receivers behind one lossy link (all equally congested)."""
    proto = registry.get("tfmcc")
    params = TfmccParams(packet_size=8000)  # few packets per second keep 1000 receivers cheap
    net = StarNet(seed=5, shared=LinkSpec(rate_bps=100e6, delay=0.05, loss=0.10))
    snd = proto.sender(cfg(SENDER, params, 5))
    net.add_sender(SENDER, snd)
    net.start(net.sender)
    rng = random.Random(1)
    for i in range(n):
        ip = f"10.1.{i // 250}.{i % 250 + 1}"
        d = rng.uniform(0.0, 0.05)
        host = net.add_receiver(ip, proto.receiver(cfg(ip, params, 5)), LinkSpec(delay=d), up_delay=d + 0.05)
        net.start(host)
    net.run(duration)
    counts = snd.round_report_counts
    return counts[len(counts) // 3:]  # after slowstart and the first RTT measurements


def test_tfmcc_feedback_per_round_stays_bounded_as_receivers_grow() -> None:
    means = {}
    for n, duration in ((10, 40.0), (100, 40.0), (1000, 40.0)):
        counts = _feedback_per_round(n, duration)
        assert len(counts) >= 8
        means[n] = statistics.mean(counts)
        assert means[n] <= 20, (n, counts)
    # Far from an implosion: a round hears from under 2% of a 1000-receiver group.
    assert means[1000] < 0.02 * 1000


def _webrc_alone(seed: int, **params) -> tuple[float, float]:
    """WEBRC alone on 10 Mbit/s, 50 ms, 100 packets (1.2 BDP) for 30 s: the
    first receiver's lost fraction over the run, and its goodput over the
    second half as a fraction of the link."""
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import model_choice
    from p4mcc.scenario.model import scenario_from_dict

    run = build_run(scenario_from_dict({
        "name": "webrc-alone", "duration": 30, "seed": seed,
        "topology": {"generate": {"kind": "dumbbell", "receivers": 2, "tcp_pairs": 0, "rate": 10e6,
                                  "delay": 0.05, "queue": 100}},
        "sessions": [{"name": "w", "protocol": "webrc", "sender": "snd1", "receivers": ["r*"],
                      "params": {"session_rate_bps": 40e6, **params}}]}), switch=model_choice())
    rx = run.net.hosts["r1"].rx_mcast_bytes
    run.sim.run(15.0)
    half = sum(rx.values())
    run.sim.run(30.0)
    agent = run.agents["w/r1"]
    return agent.lost / (agent.lost + agent.received), (sum(rx.values()) - half) * 8 / 15.0 / 10e6


def test_webrc_startup_overshoot_is_shed_alone_on_a_deep_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    # startup_shed: start-up's several-wave decisions subscribed to 1.9x the
    # link before the first loss, and the waves decay by only P per TSD, so a
    # third of the packets were lost for 25 s.  Leaving the waves the path did
    # not carry bounds the overshoot to about one wave (the paper's start-up).
    # Seed 2: with the default send-path time (one service time, 1.2 ms here)
    # seed 1's start-up ends less than one wave step above the link, where
    # there is nothing to shed (13 % lost either way, over 15 s of decay).
    lost, used = _webrc_alone(seed=2)
    assert lost < 0.10
    assert used > 0.6  # shedding left the session on the link, not below it
    from p4mcc.hosts.webrc import RULES

    monkeypatch.setitem(RULES.profiles, "default",  # default less the rule
                        tuple(n for n in RULES.profiles["default"] if n != "startup_shed"))
    lost_unshed, _ = _webrc_alone(seed=2)
    assert lost_unshed > 0.2  # the scenario does show the overshoot
