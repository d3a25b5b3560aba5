"""The CPU port: packet_out to one port or the flood group (how the controller
sends IGMP general queries), packet_in for IGMP the data plane cannot handle."""

from __future__ import annotations

import struct

from p4src_harness import (CPU_PORT, DROP_IGMP_QUERY, Host, SwitchSetup, _igmp_frame,
                           configure, counter, general_query, igmp_bytes, ip2int, new_switch,
                           outputs, packet_out, parse_packet_in)

H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")


def switch():
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, 2, 3], hosts={1: H1}))
    return sw


def test_packet_out_leaves_on_its_port_without_the_header():
    sw = switch()
    q = general_query()
    assert outputs(sw, CPU_PORT, packet_out(2, 0, q)) == [(2, q)]


def test_packet_out_flood_reaches_every_port_of_the_flood_group():
    sw = switch()
    q = general_query()
    assert outputs(sw, CPU_PORT, packet_out(0, 1, q)) == [(1, q), (2, q), (3, q)]


def test_query_arriving_on_a_port_is_not_flooded():
    sw = switch()
    assert outputs(sw, 2, general_query()) == []
    assert counter(sw, "drop_reasons", DROP_IGMP_QUERY) == 1


def test_igmpv3_record_with_sources_goes_to_the_controller():
    sw = switch()
    body = struct.pack("!BBHI", 1, 0, 1, ip2int("232.1.1.1")) + struct.pack("!I", ip2int("10.0.0.9"))
    igmp = igmp_bytes(0x22, 1)[:8]
    from p4src_harness import inet_checksum
    raw = bytearray(igmp + body)
    raw[2:4] = b"\0\0"
    raw[2:4] = struct.pack("!H", inet_checksum(bytes(raw)))
    frame = _igmp_frame(H1, "224.0.0.22", bytes(raw))
    out = outputs(sw, 1, frame)
    assert len(out) == 1 and out[0][0] == CPU_PORT
    assert parse_packet_in(out[0][1]) == (1, 1, frame)
