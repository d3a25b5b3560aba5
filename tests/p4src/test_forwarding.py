"""Unicast IPv4 forwarding and ARP handling, so Linux hosts work unmodified."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from p4src_harness import (DROP_IPV4_MISS, DROP_NOT_IPV4_OR_ARP, Host, SwitchSetup, configure,
                           counter, ip2int, mac2int, new_switch, outputs)

H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")
H2 = Host("h2", "10.0.0.2", "00:00:00:00:00:02")
H3 = Host("h3", "10.0.0.3", "00:00:00:00:00:03")
BCAST = "ff:ff:ff:ff:ff:ff"


def switch():
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, 2, 3], hosts={1: H1, 2: H2, 3: H3}))
    return sw


def unicast(src: Host, dst: Host, payload: bytes = b"hello") -> bytes:
    return bytes(Ether(src=src.mac, dst=dst.mac) / IP(src=src.ip, dst=dst.ip, id=9)
                 / UDP(sport=1234, dport=80) / Raw(payload))


def test_unicast_goes_to_the_destination_port_unchanged():
    sw = switch()
    f = unicast(H1, H3)
    assert outputs(sw, 1, f) == [(3, f)]


def test_forward_mac_rewrites_the_destination_mac():
    from p4mcc.p4switch.runtime.tables import Lpm

    sw = switch()
    sw.table_add("MccIngress.ipv4_fwd", {"dst_addr": Lpm(ip2int("10.0.1.0"), 24)},
                 "MccIngress.forward_mac", {"port": 2, "dst_mac": mac2int("02:00:00:00:00:99")})
    f = bytes(Ether(src=H1.mac, dst="02:00:00:00:00:fe") / IP(src=H1.ip, dst="10.0.1.5", id=9)
              / UDP(sport=1, dport=2) / Raw(b"abc"))
    expected = bytes(Ether(src=H1.mac, dst="02:00:00:00:00:99") / IP(src=H1.ip, dst="10.0.1.5", id=9)
                     / UDP(sport=1, dport=2) / Raw(b"abc"))
    assert outputs(sw, 1, f) == [(2, expected)]


def test_unicast_without_route_is_dropped_and_counted():
    sw = switch()
    f = bytes(Ether(src=H1.mac, dst=H2.mac) / IP(src=H1.ip, dst="10.9.9.9") / UDP() / Raw(b"x"))
    assert outputs(sw, 1, f) == []
    assert counter(sw, "drop_reasons", DROP_IPV4_MISS) == 1


def test_arp_request_for_a_known_host_is_answered_by_the_switch():
    sw = switch()
    req = bytes(Ether(src=H1.mac, dst=BCAST)
                / ARP(op=1, hwsrc=H1.mac, psrc=H1.ip, hwdst="00:00:00:00:00:00", pdst=H3.ip))
    reply = bytes(Ether(src=H3.mac, dst=H1.mac)
                  / ARP(op=2, hwsrc=H3.mac, psrc=H3.ip, hwdst=H1.mac, pdst=H1.ip))
    assert outputs(sw, 1, req) == [(1, reply)]


def test_arp_request_for_an_unknown_address_is_flooded_except_back():
    sw = switch()
    req = bytes(Ether(src=H1.mac, dst=BCAST)
                / ARP(op=1, hwsrc=H1.mac, psrc=H1.ip, pdst="10.0.0.77"))
    assert outputs(sw, 1, req) == [(2, req), (3, req)]


def test_arp_reply_is_forwarded_to_its_target():
    sw = switch()
    rep = bytes(Ether(src=H2.mac, dst=H1.mac)
                / ARP(op=2, hwsrc=H2.mac, psrc=H2.ip, hwdst=H1.mac, pdst=H1.ip))
    assert outputs(sw, 2, rep) == [(1, rep)]


def test_arp_probe_is_flooded_not_answered():
    sw = switch()
    probe = bytes(Ether(src=H1.mac, dst=BCAST)
                  / ARP(op=1, hwsrc=H1.mac, psrc="0.0.0.0", pdst=H3.ip))
    assert outputs(sw, 1, probe) == [(2, probe), (3, probe)]


def test_other_ethertypes_are_dropped_and_counted():
    sw = switch()
    f = bytes(Ether(src=H1.mac, dst=H2.mac, type=0x86DD) / Raw(b"\x60" + b"\0" * 60))
    assert outputs(sw, 1, f) == []
    assert counter(sw, "drop_reasons", DROP_NOT_IPV4_OR_ARP) == 1


def test_short_udp_payloads_are_plain_udp():
    """Payloads shorter than a p4mcc header are never looked into, even when
    they start like one (and with no Ethernet padding, as on veth)."""
    sw = switch()
    for payload in (b"", b"P", b"PM\x01", b"PM\x01" + b"\0" * 16):
        f = unicast(H1, H2, payload)
        assert outputs(sw, 1, f) == [(2, f)], payload


def test_to_cpu_route_punts_with_packet_in():
    from p4mcc.p4switch.runtime.tables import Lpm
    from p4src_harness import CPU_PORT, parse_packet_in

    sw = switch()
    sw.table_add("MccIngress.ipv4_fwd", {"dst_addr": Lpm(ip2int("10.0.0.254"), 32)},
                 "MccIngress.to_cpu", {})
    f = bytes(Ether(src=H1.mac, dst="00:00:00:00:00:fe") / IP(src=H1.ip, dst="10.0.0.254")
              / UDP(sport=1, dport=2) / Raw(b"to the controller"))
    out = outputs(sw, 1, f)
    assert [p for p, _ in out] == [CPU_PORT]
    assert parse_packet_in(out[0][1]) == (1, 2, f)
