"""Every protocol's data fits one Ethernet path's IP packet at its default parameters.

A datagram past the path's MTU is fragmented by the sending host (Mininet's
veths are 1500-byte links), and a switch that parses the first fragment for
p4mcc's header sees no header in the second, and one lost fragment loses
the packet.
"""

from __future__ import annotations

import pytest
from testnet import TinyNet

from p4mcc.hosts import registry, wire

GROUP, PORT, SND = "239.1.1.9", 5000, "10.0.0.1"


def _largest_datagram(proto: str) -> int:
    """The largest UDP payload two receivers get in 3 s of a default session."""
    net = TinyNet(seed=2)
    net.router("R1")
    s = net.host("s", SND)
    net.link("s", "R1", rate_bps=10e6, delay_s=0.005, queue=100)
    hosts = [net.host(f"h{i}", f"10.0.2.{i + 1}") for i in range(2)]
    for h in hosts:
        net.link("R1", h.name, rate_bps=100e6, delay_s=0.001)
    factory = registry.get(proto)
    s.attach(factory.sender(registry.SessionConfig(4, GROUP, PORT, SND, SND, None, seed=1)))
    for h in hosts:
        h.attach(factory.receiver(registry.SessionConfig(4, GROUP, PORT, SND, h.ip, None, seed=1)))
    net.run(3.0)
    sizes = [len(data) for h in hosts for _t, data in h.rx]
    assert len(sizes) >= 3, f"{proto}: {len(sizes)} datagrams in 3 s"
    return max(sizes)


@pytest.mark.parametrize("proto", registry.names())
def test_default_data_packets_cross_a_1500_byte_path_whole(proto: str) -> None:
    assert _largest_datagram(proto) + wire.FRAME_OVERHEAD <= wire.ETHERNET_MAX_FRAME
