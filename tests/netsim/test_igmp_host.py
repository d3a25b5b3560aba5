"""Host nodes: Linux-like IGMP on join/leave, query answers, multicast delivery, endpoint driving."""

from __future__ import annotations

import pytest
from scapy.layers.igmp import IGMPv3_MR as IGMPv3mr
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from p4mcc.netsim import packets as pk
from p4mcc.scenario.shapes import dumbbell, star
from netsim_testlib import CbrSender, Sink, network

GROUP = "239.1.2.3"


def capture_uplink(net, host: str) -> list[tuple[float, bytes]]:
    """Frames the host puts on its link (toward the switch)."""
    out: list[tuple[float, bytes]] = []
    net.hosts[host].iface.taps.append(lambda t, ch, f, ev: out.append((t, f)))
    return out


def igmp_frames(frames: list[tuple[float, bytes]]) -> list[tuple[float, Ether]]:
    return [(t, Ether(f)) for t, f in frames if f[23] == pk.PROTO_IGMP]


def test_join_sends_igmpv3_change_to_exclude_report_as_linux_does() -> None:
    sim, net = network(star(receivers=1))
    out = capture_uplink(net, "r1")
    net.hosts["r1"].add_endpoint(Sink(GROUP), 5000, start_at=0.5)
    sim.run(until=3.0)
    reports = igmp_frames(out)
    assert len(reports) == 2  # robustness 2: the report and one repeat
    t0, first = reports[0]
    assert t0 == 0.5
    assert 0.5 <= reports[1][0] <= 1.5  # repeat within the 1 s unsolicited report interval
    h = net.hosts["r1"]
    assert first[Ether].dst == "01:00:5e:00:00:16"
    assert first[Ether].src == pk.mac_str(h.mac)
    ip = first[IP]
    assert (ip.src, ip.dst, ip.ttl, ip.tos, ip.ihl) == (h.ip, "224.0.0.22", 1, 0xC0, 6)
    assert bytes(ip.options[0]) == b"\x94\x04\x00\x00"  # Router Alert
    rep = first[IGMPv3mr]
    assert rep.type == 0x22
    recs = first[IGMPv3mr].records
    assert [(r.rtype, r.maddr, r.numsrc) for r in recs] == [(4, GROUP, 0)]
    # checksums are what scapy computes
    raw = bytes(first)
    rebuilt = Ether(raw)
    del rebuilt[IP].chksum
    del rebuilt[IGMPv3mr].chksum
    assert bytes(rebuilt) == raw
    assert bytes(reports[1][1][IGMPv3mr]) == bytes(rep)


def test_leave_sends_change_to_include_twice() -> None:
    sim, net = network(star(receivers=1))
    out = capture_uplink(net, "r1")
    net.hosts["r1"].add_endpoint(Sink(GROUP, leave_at=5.0), 5000)
    sim.run(until=8.0)
    reports = igmp_frames(out)
    leaves = [(t, e) for t, e in reports if e[IGMPv3mr].records[0].rtype == 3]
    assert len(leaves) == 2 and leaves[0][0] == 5.0 and leaves[1][0] <= 6.0
    assert leaves[0][1][IGMPv3mr].records[0].maddr == GROUP
    assert net.hosts["r1"].groups == {}


def test_membership_is_reference_counted_over_endpoints() -> None:
    sim, net = network(star(receivers=1))
    out = capture_uplink(net, "r1")
    h = net.hosts["r1"]
    h.add_endpoint(Sink(GROUP, leave_at=4.0), 5000)
    h.add_endpoint(Sink(GROUP, leave_at=6.0), 5001)
    sim.run(until=5.0)
    types = [e[IGMPv3mr].records[0].rtype for _, e in igmp_frames(out)]
    assert types == [4, 4]  # one join sequence, no leave while one socket remains
    sim.run(until=9.0)
    types = [e[IGMPv3mr].records[0].rtype for _, e in igmp_frames(out)]
    assert types == [4, 4, 3, 3]


def test_igmpv2_host_sends_v2_report_and_leave() -> None:
    sim, net = network(star(receivers=1), igmp_version=2)
    out = capture_uplink(net, "r1")
    net.hosts["r1"].add_endpoint(Sink(GROUP, leave_at=20.0), 5000)
    sim.run(until=25.0)
    msgs = [(t, e[IP].dst, bytes(e[IP].payload)) for t, e in igmp_frames(out)]
    g = pk.ip_int(GROUP).to_bytes(4, "big")
    assert msgs[0][0] == 0.0 and msgs[0][1] == GROUP and msgs[0][2][0] == 0x16 and msgs[0][2][4:8] == g
    assert len([m for m in msgs if m[2][0] == 0x16]) == 2  # one unsolicited repeat within 10 s
    leave = [m for m in msgs if m[2][0] == 0x17]
    assert len(leave) == 1 and leave[0][0] == 20.0 and leave[0][1] == "224.0.0.2"
    assert pk.checksum(leave[0][2]) == 0


def test_general_query_is_answered_with_current_state_report() -> None:
    sim, net = network(star(receivers=1))
    out = capture_uplink(net, "r1")
    h = net.hosts["r1"]
    h.add_endpoint(Sink(GROUP), 5000)
    h.add_endpoint(Sink("239.9.9.9"), 5001)
    sim.run(until=3.0)
    n_before = len(igmp_frames(out))
    query = pk.igmp_frame(b"\x02" * 6, pk.ip_int("10.0.0.254"), pk.igmpv3_query(max_resp_code=20),
                          pk.ALL_SYSTEMS)
    sim.at(3.0, h.receive, 0, query)
    sim.run(until=6.0)
    answers = igmp_frames(out)[n_before:]
    assert len(answers) == 1
    t, e = answers[0]
    assert 3.0 <= t <= 5.0  # max response time 2.0 s
    recs = e[IGMPv3mr].records
    assert sorted((r.rtype, r.maddr) for r in recs) == [(2, GROUP), (2, "239.9.9.9")]


def test_multicast_reaches_only_joined_hosts_and_stops_after_leave() -> None:
    sim, net = network(dumbbell(receivers=3, rate="100Mbps", delay="5ms"))
    net.set_group_source(GROUP, "snd1")
    snd = CbrSender((GROUP, 5000), 500, 0.01, 300)  # 3 s of data
    net.hosts["snd1"].add_endpoint(snd, 5000, start_at=0.5)
    stay = net.hosts["r1"].add_endpoint(Sink(GROUP), 5000)
    goes = net.hosts["r2"].add_endpoint(Sink(GROUP, leave_at=2.0), 5000)
    never = net.hosts["r3"].add_endpoint(Sink(None), 5000)
    sim.run(until=5.0)
    assert len(stay.got) == 300
    assert never.got == []
    assert 140 <= len(goes.got) <= 152  # until its leave reached the switch (~2.0 s)
    assert max(t for t, _ in goes.got) < 2.02
    assert [s for _, s in stay.got] == list(range(300))


def test_unicast_feedback_reaches_the_sender_port() -> None:
    sim, net = network(dumbbell(receivers=2))
    net.set_group_source(GROUP, "snd1")
    snd = CbrSender((GROUP, 5000), 100, 0.1, 10)
    net.hosts["snd1"].add_endpoint(snd, 5000, start_at=0.1)  # after the joins reached s2
    for r in ("r1", "r2"):
        net.hosts[r].add_endpoint(Sink(GROUP, reply_to=(net.hosts["snd1"].ip, 5000)), 5000)
    sim.run(until=3.0)
    srcs = {src for _, _, src in snd.feedback}
    assert len(snd.feedback) == 20
    assert srcs == {(net.hosts["r1"].ip, 5000), (net.hosts["r2"].ip, 5000)}
    assert net.hosts["snd1"].rx_ucast_msgs[5000] == 20


def test_timers_fire_at_virtual_times_requested() -> None:
    sim, net = network(star(receivers=1))
    snd = CbrSender(("10.9.9.9", 7), 64, 0.25, 4)
    net.hosts["snd"].add_endpoint(snd, 6000, start_at=1.0)
    out = capture_uplink(net, "snd")
    sim.run(until=3.0)
    assert [t for t, _ in out] == pytest.approx([1.0, 1.25, 1.5, 1.75])


def test_malformed_frames_are_counted_not_raised() -> None:
    sim, net = network(star(receivers=1))
    h = net.hosts["r1"]
    for junk in (b"", b"\x00" * 20, b"\xff" * 60, bytes(14) + b"\x45" + bytes(40)):
        h.receive(0, junk)
    assert h.counters.rx_malformed >= 3
    sw = net.switches["s1"]
    sw.receive(1, b"\x01\x02")
    assert sw.counters.malformed == 1


def test_a_join_lost_upstream_is_repeated_by_the_switch() -> None:
    """A model switch says a group's first upstream join again after the
    Unsolicited Report Interval (RFC 3376 8.11, as RFC 4605 proxies repeat
    theirs): a first join lost on the path toward the source no longer cuts
    the group off until a query (the bare network here has no querier)."""
    from p4mcc.netsim.link import Bernoulli, NoLoss

    sim, net = network(dumbbell(receivers=1, rate="100Mbps", delay="5ms"))
    net.set_group_source(GROUP, "snd1")
    up = net.links["s1--s2"].ba  # s2 toward s1: where s2 forwards the join
    up.set_loss(Bernoulli(1.0, sim.rng("drop-all")))
    sim.at(0.3, up.set_loss, NoLoss())
    snd = CbrSender((GROUP, 5000), 500, 0.01, 300)  # 0.5-3.5 s
    net.hosts["snd1"].add_endpoint(snd, 5000, start_at=0.5)
    sink = net.hosts["r1"].add_endpoint(Sink(GROUP), 5000)
    sim.run(until=4.0)
    assert net.switches["s2"].counters.joins_forwarded >= 2
    first = min(t for t, _ in sink.got)
    assert 1.0 <= first <= 1.1  # the repeat at 1 s, one round of the path later
    assert len(sink.got) >= 240
