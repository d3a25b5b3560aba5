"""TCP-friendliness from the defaults on a short simulated dumbbell.

One session (two receivers) and one TCP flow share a 4 Mbit/s, 20 ms
drop-tail bottleneck.  The queue differs per protocol, each at a size where
the protocol is measured to hold the band (docs/protocols/tfmcc.md and
webrc.md give the cells where it does not): TFMCC at 14 packets, two
bandwidth-delay products, and at 100 (single paced packets saw fewer loss
events than TCP's delayed-ACK pairs there and took 2.8-3.3x TCP at 14
packets; TFMCC's pairs, its ``pacing_pairs`` rule, meet the overflows TCP's pairs
meet), WEBRC at 14 packets (with more, its equation is still climbing
after 60 s).
Over the second half of the run, mean receiver throughput over the TCP
flow's must lie in [0.5, 2] (TFRC's bound, RFC 5348 and the TFMCC paper's
"TCP-friendly" claim) and the bottleneck must be used (the sum at least 85 %
of it).  A bound, not a timing: the protocols' own parameters are defaults.
"""

from __future__ import annotations

import pytest

from p4mcc.netsim.run import build_run
from p4mcc.scenario.shapes import dumbbell
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import Scenario, Session, TcpFlow

RATE = 4e6
DURATION = 60.0


def _scenario(protocol: str, params: dict, queue: int) -> Scenario:
    topo = dumbbell(senders=1, receivers=2, tcp_pairs=1, rate="4Mbps", delay="8ms", queue=queue)
    sess = Session(name="s", protocol=protocol, sender="snd1", receivers=("r1", "r2"), group="239.7.1.1",
                   port=5700, params=params, session_id=1)
    tcp = TcpFlow(name="tcp", src="tsrc1", dst="tdst1", port=5201)
    return Scenario(name=f"fair-{protocol}", description="", topology=topo, sessions=[sess],
                    tcp_flows=[tcp], duration=DURATION, seed=2)


@pytest.mark.parametrize("protocol, params, queue", [
    ("tfmcc", {}, 14),
    ("tfmcc", {}, 100),
    # A session rate above the 4 Mbit/s path (the default 20 Mbit/s only
    # costs simulation time here); every other parameter is the default.
    ("webrc", {"session_rate_bps": 8e6}, 14),
])
def test_session_shares_a_dumbbell_with_tcp(protocol: str, params: dict, queue: int) -> None:
    run = build_run(_scenario(protocol, params, queue), switch=model_choice())
    run.sim.run(DURATION / 2)
    # The engine's counters, as in every run's results: UDP payload bytes to
    # the session port on each receiver, TCP bytes delivered in order.
    rx0 = {r: run.net.hosts[r].rx_mcast_bytes.get(5700, 0) for r in ("r1", "r2")}
    tcp0 = run.tcp["tcp"].receiver.delivered_bytes
    run.sim.run(DURATION)
    half = DURATION / 2
    rx = sum(run.net.hosts[r].rx_mcast_bytes.get(5700, 0) - rx0[r] for r in rx0) / len(rx0) * 8 / half
    tcp = (run.tcp["tcp"].receiver.delivered_bytes - tcp0) * 8 / half
    assert 0.5 <= rx / tcp <= 2.0, (rx, tcp)
    assert rx + tcp >= 0.85 * RATE
