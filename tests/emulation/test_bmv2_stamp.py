"""On BMv2 the congestion stamp sees the shaped link's standing queue.

BMv2's egress queue for a shaped port holds the link's queue
(emulation/bmv2_queue.py), so ``deq_timedelta`` is the wait at the
bottleneck and the stamp's queue code (docs/stamp.md) rises above 1 when a
queue stands.  A TCP flow fills a 4 Mb/s bottleneck with a 50-packet queue
(a full queue is 50 full frames, 151 ms: code 10) beside a stamped TFMCC
session; the data packets s1 sends into the bottleneck are read from its
pcap.  With BMv2's queue unlimited (the shaper after BMv2 holding the
queue) every one of them carried code 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from p4mcc.scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]

GROUP = "239.1.1.1"
PORT = 5001


@pytest.fixture(scope="module")
def bmv2_ready(mininet_ready: None) -> None:
    from p4mcc.emulation.run import BMV2_TOOLS

    missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH: BMv2 runs need p4c and BMv2")


def scenario():
    return scenario_from_dict({
        "name": "stamp-bmv2",
        "duration": 14,
        "seed": 1,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.1.1/24"}, "h3": {"ip": "10.0.1.3/24"},
                      "h4": {"ip": "10.0.2.4/24"}, "h8": {"ip": "10.0.2.8/24"}},
            "switches": {"s1": {}, "s2": {}},
            "link_defaults": {"rate": "100Mbps", "delay": "1ms", "queue": 100},
            "links": [{"a": "s1-p1", "b": "s2-p1", "rate": "4Mbps", "delay": "10ms", "queue": 50},
                      ["h1", "s1-p2"], ["h3", "s1-p3"], ["h4", "s2-p2"], ["h8", "s2-p3"]],
        },
        "sessions": [{"name": "m", "protocol": "tfmcc", "sender": "h1", "receivers": ["h4"],
                      "group": GROUP, "port": PORT, "assistance": "stamp"}],
        "tcp_flows": [{"name": "tcp", "src": "h3", "dst": "h8", "port": 5201}],
        "capture": {"sessions": ["m"], "ports": ["s1-p1"]},
    })


def stamped_data(pcap: Path) -> list[tuple[float, int]]:
    """(time, stamp byte) of every p4mcc data message to the session's group in ``pcap``."""
    from scapy.layers.inet import IP, UDP
    from scapy.utils import rdpcap

    from p4mcc.hosts import wire

    out = []
    for pkt in rdpcap(str(pcap)):
        if IP in pkt and UDP in pkt and pkt[IP].dst == GROUP and pkt[UDP].dport == PORT:
            out.append((float(pkt.time), wire.decode(bytes(pkt[UDP].payload)).stamp))
    return out


def test_bmv2_stamp_reports_the_standing_bottleneck_queue(bmv2_ready: None, tmp_path: Path) -> None:
    from p4mcc.emulation.run import run_emulation

    summary = run_emulation(scenario(), tmp_path, target="bmv2", progress=False, plots=False)
    rows = [r for r in summary["links"] if r["link"] == "s1-p1--s2-p1" and r["sender"] == "s1"]
    assert rows and rows[0]["bmv2_queue"] == {"switch": "s1", "port": 1, "depth_packets": 50,
                                              "rate_pps": 330, "frame_bytes": 1514}, rows
    # BMv2 behind a link process records its side of the pair (s1-eth1-bm)
    pcap = next(p for p in (tmp_path / "pcaps").glob("s1-eth1*_out.pcap"))
    stamps = stamped_data(pcap)
    late = [b for t, b in stamps if t >= 7.0]  # TCP's queue stands by then
    assert len(late) >= 50, f"only {len(late)} data packets after 7 s"
    codes = [b >> 4 for b in late]
    assert all(c >= 1 for c in codes), "an unstamped data packet left a stamping switch"
    # a standing queue shows: most packets waited 0.5 ms or more, and some a
    # sizeable part of the full queue's 151 ms (code 7: 16 ms or more)
    assert sum(c >= 2 for c in codes) >= len(codes) / 2, codes
    assert max(codes) >= 7, codes
    assert max(codes) <= 10, codes  # never longer than the full 50-packet queue (131-262 ms)
