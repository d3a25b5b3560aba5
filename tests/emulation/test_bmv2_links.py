"""On BMv2, a shaped link's delay and rate are what packets in Mininet experience.

The same check as the built-in switch's (test_link_emulation.py): the ping
RTT over the shaped bottleneck is the scenario's figure plus what the path
costs apart from the link, within 10 %, and TCP gets the bottleneck's rate
within 10 %.  What the path costs apart from the link differs from the
built-in switch's: there the sending switch releases a frame at its arrival
stamp plus the delay, so its own processing is inside the delay; on BMv2
the link (a link process, or the kernel's netem) takes the frame only once
BMv2 has sent it, so every switch's processing adds, and so do the link
processes' own hops.  The baseline is therefore the same network with the
bottleneck's rate unshaped and its delay at 1 us, shaped the same way, and
all of its RTT adds.
Both RTTs are the fastest of the pings: on a busy machine the scheduling
of BMv2's many threads spreads the median by more than the 10 % the link is
held to, while no ping can beat the link's delay and rate.
Here BMv2 forwards, and the links are shaped as emulation/shaping.py says:
the kernel's disciplines where it has them all, a link process beside BMv2
where one is missing (a kernel without netem).  With no stamped session the
standing queue stays in that byte-accurate shaper, not in BMv2's egress
queue (emulation/shaping.py, ``stamped``).  summary.json's ``links`` rows
record both; the test checks they say so.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_link_emulation import EXPECTED_RTT_S, RATE_BPS, ping_rtts, scenario  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.slow]

#: the baseline's bottleneck delay: above zero, so it is shaped as the test's
BASELINE_DELAY_S = 1e-6


@pytest.fixture(scope="module")
def bmv2_ready(mininet_ready: None) -> None:
    from p4mcc.emulation.run import BMV2_TOOLS

    missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH: BMv2 runs need p4c and BMv2")


@pytest.fixture(scope="module")
def bmv2_baseline_rtt(bmv2_ready: None, tmp_path_factory: pytest.TempPathFactory) -> float:
    """Fastest ping RTT (s) over the path less the link: BMv2's processing and the shaper's own hops.

    The bottleneck keeps a 1 us delay, so it is shaped the same way as the
    test's (through the link processes where the kernel lacks netem)."""
    from p4mcc.emulation.run import emulated_network
    from p4mcc.emulation.shaping import KERNEL, LINKPROC

    with emulated_network(scenario(rate="1Gbps", delay=BASELINE_DELAY_S), tmp_path_factory.mktemp("baseline"),
                          target="bmv2") as (net, plan, _o):
        # the bottleneck goes through the shaper the test's does
        hows = {s.how for s in plan.shapings if s.link == "s1-p1--s2-p1"}
        assert hows and hows <= {KERNEL, LINKPROC}, plan.shapings
        rtts, out = ping_rtts(net["h1"])
    assert rtts[0] < 0.005, out
    return rtts[0]


def test_bmv2_link_rtt_and_tcp_throughput_match_the_scenario(bmv2_baseline_rtt: float, tmp_path: Path) -> None:
    from p4mcc.emulation.mininet_net import spawn
    from p4mcc.emulation.run import IPERF_READY, emulated_network
    from p4mcc.emulation.shaping import KERNEL, LINKPROC

    with emulated_network(scenario(), tmp_path, target="bmv2") as (net, plan, _ops):
        bottleneck = [s for s in plan.shapings if s.link == "s1-p1--s2-p1"]
        assert {(s.sender, s.receiver) for s in bottleneck} == {("s1", "s2"), ("s2", "s1")}
        assert all(s.how in (KERNEL, LINKPROC) for s in bottleneck), bottleneck
        # no session reads the stamp: the standing queue stays in the shaper
        assert all(s.bmv2_queue is None for s in bottleneck), bottleneck
        rtts, out = ping_rtts(net["h1"])
        rtt = rtts[0]
        assert rtt == pytest.approx(EXPECTED_RTT_S + bmv2_baseline_rtt, rel=0.10), (bmv2_baseline_rtt, out)

        server = spawn("iperf3 server", ["iperf3", "-s", "-1", "-p", "5301", "--forceflush"],
                       tmp_path / "iperf3-server.log", node=net["h2"], ready_pattern=IPERF_READY)
        try:
            assert server.ready.wait(15) and server.alive, server.last_lines()
            report = json.loads(net["h1"].cmd("iperf3 -c 10.0.0.2 -p 5301 -t 6 -O 2 -J"))
        finally:
            server.stop()
    assert report["end"]["sum_received"]["bits_per_second"] == pytest.approx(RATE_BPS, rel=0.10)
