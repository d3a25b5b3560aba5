"""The in-process applier: the simulator's switches get the same state.

The desired state is written into p4switch's interpreter running
``p4src/mcc.p4``, read back equal, re-applied with nothing to do, and then
checked by packets: an IGMP join on a receiver's port and a multicast
datagram from the source come out exactly where the tree says.
"""

from __future__ import annotations


import pytest

from p4mcc.controller.desired import DesiredOptions, SessionSpec, desired_state
from p4mcc.controller.diff import diff
from p4mcc.controller.local import LocalApplier
from p4mcc.controller.program import MCC, P4_INCLUDE, P4_SOURCE
from p4mcc.controller.topology import from_tutorials_dict

import scapy.all as scapy  # noqa: E402
Ether, IP, UDP, Raw = scapy.Ether, scapy.IP, scapy.UDP, scapy.Raw

TOPO = {
    "hosts": {"h1": {"ip": "10.0.0.1", "mac": "08:00:00:00:00:01"},
              "h2": {"ip": "10.0.0.2", "mac": "08:00:00:00:00:02"},
              "h3": {"ip": "10.0.0.3", "mac": "08:00:00:00:00:03"}},
    "switches": {"s1": {}},
    "links": [["h1", "s1-p1"], ["h2", "s1-p2"], ["h3", "s1-p3"]],
}


@pytest.fixture(scope="module")
def program():
    from p4mcc.p4switch.frontend import compile_file

    return compile_file(str(P4_SOURCE), include_dirs=[str(P4_INCLUDE)])


def _switch(program):
    from p4mcc.p4switch.interp import Switch

    return Switch(program, cpu_port=MCC.cpu_port)


def _desired():
    topo = from_tutorials_dict(TOPO)
    return desired_state(topo, [SessionSpec(1, "h1", ("239.1.1.1",), protocol="mtcp")],
                         DesiredOptions(feedback_pps=1000, feedback_burst=100))["s1"]


def test_sync_writes_everything_then_nothing(program) -> None:
    sw = _switch(program)
    app = LocalApplier(sw, "s1")
    want = _desired()
    ops = app.sync(want)
    assert {o.kind for o in ops} <= {"insert", "modify"} and len(ops) == len(want)
    assert app.sync(want) == []
    got = app.read_state(want)
    assert got.entries == want.entries and got.groups == want.groups
    assert got.defaults == want.defaults and got.meters == want.meters
    assert diff(want, got) == []


def test_removed_session_is_deleted_from_the_switch(program) -> None:
    sw = _switch(program)
    app = LocalApplier(sw, "s1")
    app.sync(_desired())
    bare = desired_state(from_tutorials_dict(TOPO), [])["s1"]
    ops = app.sync(bare)
    assert sorted({(o.kind, getattr(o.entity, "table", "pre")) for o in ops if o.kind == "delete"}) == [
        ("delete", "MccIngress.record0.groups"), ("delete", "MccIngress.record1.groups"),
        ("delete", "MccIngress.record2.groups"), ("delete", "MccIngress.record3.groups"),
        ("delete", "MccIngress.sessions"), ("delete", "pre"),
    ]
    assert len(sw.table_entries("MccIngress.sessions")) == 0
    # the meters went back to the default rate: the only other writes
    assert {o.entity.describe() for o in ops if o.kind != "delete"} == {
        "meter feedback_meter[1] cir=20000/2000 pir=20000/2000",
        "meter feedback_meter[2] cir=20000/2000 pir=20000/2000",
        "meter feedback_meter[3] cir=20000/2000 pir=20000/2000",
    }


def _igmpv2_report(group: str, mac: str, ip: str) -> bytes:
    # IGMPv2 membership report with the Router Alert option, as Linux sends it
    from scapy.layers.igmp import IGMP

    pkt = Ether(src=mac, dst="01:00:5e:01:01:01") / IP(src=ip, dst=group, ttl=1, options=[
        scapy.IPOption_Router_Alert()]) / IGMP(type=0x16, gaddr=group)
    return bytes(pkt)


def test_configured_switch_replicates_only_to_joined_ports(program) -> None:
    sw = _switch(program)
    LocalApplier(sw, "s1").sync(_desired())
    data = bytes(Ether(src="08:00:00:00:00:01", dst="01:00:5e:01:01:01") /
                 IP(src="10.0.0.1", dst="239.1.1.1", ttl=4) / UDP(sport=4000, dport=5000) / Raw(b"x" * 20))
    assert [o.port for o in sw.process(1, data, 0.0)] == []  # nobody joined yet
    sw.process(3, _igmpv2_report("239.1.1.1", "08:00:00:00:00:03", "10.0.0.3"), 0.1)
    out = [(o.port, o.data) for o in sw.process(1, data, 0.2)]
    assert out == [(3, data)]


def test_unicast_follows_the_forwarding_entries(program) -> None:
    sw = _switch(program)
    LocalApplier(sw, "s1").sync(_desired())
    pkt = bytes(Ether(src="08:00:00:00:00:02", dst="08:00:00:00:00:03") /
                IP(src="10.0.0.2", dst="10.0.0.3") / UDP(sport=1, dport=2) / Raw(b"hi"))
    ports = [o.port for o in sw.process(2, pkt, 0.0)]
    assert ports == [3]


def test_general_query_is_a_valid_igmpv2_query() -> None:
    from scapy.layers.igmp import IGMP

    from p4mcc.controller.querier import general_query, timings

    frame = general_query()
    pkt = Ether(frame)
    assert (pkt.dst, pkt[IP].dst, pkt[IP].ttl, pkt[IP].ihl) == ("01:00:5e:00:00:01", "224.0.0.1", 1, 6)
    assert (pkt[IGMP].type, pkt[IGMP].mrcode, pkt[IGMP].gaddr) == (0x11, 100, "0.0.0.0")
    rebuilt = Ether(frame)
    del rebuilt[IP].chksum
    del rebuilt[IGMP].chksum
    assert bytes(rebuilt) == frame  # both checksums are what scapy computes
    assert timings(260.0, robustness=2) == (125.0, 100.0)  # IGMPv2's defaults (RFC 2236 sec. 8)
    assert timings(385.0) == (125.0, 100.0)  # p4mcc's robustness 3: 3 x 125 s + 10 s


def test_query_sent_as_packet_out_floods_every_port(program) -> None:
    from p4mcc.controller.querier import general_query

    sw = _switch(program)
    LocalApplier(sw, "s1").sync(_desired())
    packet_out = (1 << 6).to_bytes(2, "big")  # egress_port 0, flood 1
    frame = general_query()
    out = sorted((o.port, o.data) for o in sw.process(MCC.cpu_port, packet_out + frame, 0.0))
    assert out == [(1, frame), (2, frame), (3, frame)]
