"""Malformed and truncated packets are dropped and counted, never forwarded
half-parsed; a meter per port polices feedback floods."""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4src_harness import (DROP_BAD_CHECKSUM, DROP_PARSER_ERROR, DROP_POLICED, DROP_TRUNCATED,
                           SENDER, Host, SwitchSetup, configure, counter, new_switch, outputs,
                           udp_frame)
from p4mcc.hosts import wire

R1 = Host("r1", "10.0.0.1", "00:00:00:00:00:01")
SENDER_PORT = 4


def switch():
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, SENDER_PORT], hosts={1: R1, SENDER_PORT: SENDER}))
    return sw


def report_payload() -> bytes:
    return wire.TfmccReport(session_id=3, rate=1000, fb_round=1).encode()


def assert_dropped(sw, frame: bytes, reason: int, port: int = 1) -> None:
    assert outputs(sw, port, frame) == []
    assert counter(sw, "drop_reasons", reason) == 1
    assert counter(sw, "port_drops", port) == 1


def test_well_formed_report_passes():
    sw = switch()
    f = udp_frame(R1, SENDER.ip, report_payload(), dst_mac=SENDER.mac)
    assert outputs(sw, 1, f) == [(SENDER_PORT, f)]


def test_message_shorter_than_its_body_is_a_parser_error():
    sw = switch()
    payload = bytearray(report_payload()[:40])          # body needs 32 bytes, has 20
    payload[6:8] = struct.pack("!H", 40)                # lengths consistent, body short
    f = udp_frame(R1, SENDER.ip, bytes(payload), dst_mac=SENDER.mac)
    assert_dropped(sw, f, DROP_PARSER_ERROR)
    assert counter(sw, "port_parser_errors", 1) == 1


def test_message_length_disagreeing_with_udp_is_a_parser_error():
    sw = switch()
    payload = bytearray(report_payload())
    payload[6:8] = struct.pack("!H", 60)
    f = udp_frame(R1, SENDER.ip, bytes(payload), dst_mac=SENDER.mac)
    assert_dropped(sw, f, DROP_PARSER_ERROR)


def test_udp_length_disagreeing_with_ip_is_a_parser_error():
    sw = switch()
    f = bytes(Ether(src=R1.mac, dst=SENDER.mac) / IP(src=R1.ip, dst=SENDER.ip)
              / UDP(sport=1, dport=2, len=20) / Raw(b"x" * 30))
    assert_dropped(sw, f, DROP_PARSER_ERROR)


def test_frame_cut_inside_the_header_is_a_parser_error():
    sw = switch()
    f = udp_frame(R1, SENDER.ip, report_payload(), dst_mac=SENDER.mac)
    assert_dropped(sw, f[:14 + 20 + 8 + 30], DROP_PARSER_ERROR)


def test_frame_shorter_than_ip_total_length_is_dropped():
    sw = switch()
    f = bytes(Ether(src=R1.mac, dst=SENDER.mac) / IP(src=R1.ip, dst=SENDER.ip)
              / UDP(sport=1, dport=2) / Raw(b"plain udp payload, not p4mcc"))
    assert_dropped(sw, f[:-6], DROP_TRUNCATED)


def test_bad_ipv4_checksum_is_dropped():
    sw = switch()
    f = bytearray(udp_frame(R1, SENDER.ip, report_payload(), dst_mac=SENDER.mac))
    f[24] ^= 0xFF                                        # IPv4 checksum byte
    assert_dropped(sw, bytes(f), DROP_BAD_CHECKSUM)


def test_ipv4_version_other_than_4_is_a_parser_error():
    sw = switch()
    f = bytearray(udp_frame(R1, SENDER.ip, report_payload(), dst_mac=SENDER.mac))
    f[14] = 0x65
    assert_dropped(sw, bytes(f), DROP_PARSER_ERROR)


def test_runt_frame_is_a_parser_error():
    sw = switch()
    assert_dropped(sw, b"\x01\x02\x03\x04\x05\x06\x07", DROP_PARSER_ERROR)


def test_meter_polices_a_feedback_flood_per_port():
    sw = switch()
    # 1 packet/s, burst 1 for both rates: the first packet is GREEN, the rest RED
    sw.meter_set_rates("feedback_meter", 1, [(1, 1), (1, 1)])
    f = udp_frame(R1, SENDER.ip, report_payload(), dst_mac=SENDER.mac)
    sent = [outputs(sw, 1, f, now=0.0) for _ in range(5)]
    assert sent[0] == [(SENDER_PORT, f)]
    assert sent[1:] == [[]] * 4
    assert counter(sw, "port_policed", 1) == 4
    assert counter(sw, "drop_reasons", DROP_POLICED) == 4
    # data and other ports are not policed
    assert outputs(sw, SENDER_PORT, udp_frame(SENDER, R1.ip, b"ack", dst_mac=R1.mac)) != []
