"""A scenario's link delay and rate are what packets in Mininet experience."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]

RATE_BPS = 4e6
DELAY_S = 0.010
PING_FRAME_BITS = 98 * 8  # Ethernet 14 + IPv4 20 + ICMP 8 + ping's 56 bytes


def scenario():
    return scenario_from_dict({
        "name": "link-check",
        "duration": 10,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [
                {"a": "s1-p1", "b": "s2-p1", "rate": RATE_BPS, "delay": DELAY_S, "queue": 100},
                {"a": "h1", "b": "s1-p2", "rate": "100Mbps", "delay": 0},
                {"a": "h2", "b": "s2-p2", "rate": "100Mbps", "delay": 0},
            ],
        },
    }, known_protocols=None)


def test_ping_rtt_and_tcp_throughput_match_the_scenario(mininet_ready: None, tmp_path: Path) -> None:
    from emulation.run import IPERF_READY, emulated_network
    from emulation.mininet_net import spawn

    with emulated_network(scenario(), tmp_path) as (net, _plan, _ops):
        h1, h2 = net["h1"], net["h2"]
        out = h1.cmd("ping -c 12 -i 0.2 -W 2 10.0.0.2")
        rtts = [float(x) for x in re.findall(r"time=([0-9.]+) ms", out)]
        assert len(rtts) >= 10, out
        # the first ping also waits for ARP; the rest see the links alone:
        # the bottleneck's delay both ways plus the time its rate takes to
        # serialise the 98-byte echo frame in each direction
        rtt = sorted(rtts[1:])[len(rtts[1:]) // 2] / 1e3
        expected = 2 * DELAY_S + 2 * PING_FRAME_BITS / RATE_BPS
        assert rtt == pytest.approx(expected, rel=0.10, abs=0.0015), out

        server = spawn("iperf3 server", ["iperf3", "-s", "-1", "-p", "5301", "--forceflush"],
                       tmp_path / "iperf3-server.log", node=h2, ready_pattern=IPERF_READY)
        try:
            assert server.ready.wait(15) and server.alive, server.last_lines()
            report = json.loads(h1.cmd("iperf3 -c 10.0.0.2 -p 5301 -t 6 -O 2 -J"))
        finally:
            server.stop()
        received = report["end"]["sum_received"]["bits_per_second"]
        assert received == pytest.approx(RATE_BPS, rel=0.10)
