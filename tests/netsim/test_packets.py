"""The fast frame builder produces the bytes scapy would, and the parser reads them back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from p4mcc.netsim import packets as pk

SRC, DST = pk.ip_int("10.0.1.1"), pk.ip_int("10.0.2.2")
SMAC, DMAC = pk.mac_bytes("08:00:00:00:01:11"), pk.mac_bytes("08:00:00:00:02:22")


def test_udp_frame_matches_scapy() -> None:
    # scapy computes the UDP checksum itself (RFC 768, pseudo-header); odd and
    # even payload lengths, and an empty one
    for payload in (b"hello", b"even", b"", bytes(range(256)) * 4):
        f = pk.udp_frame(SMAC, DMAC, SRC, DST, 5001, 5002, payload, ttl=64, ident=7)
        ref = (Ether(src="08:00:00:00:01:11", dst="08:00:00:00:02:22")
               / IP(src="10.0.1.1", dst="10.0.2.2", ttl=64, id=7, flags="DF")
               / UDP(sport=5001, dport=5002) / payload)
        assert f == bytes(ref)


@given(total=st.integers(20, 0xFFFF), ident=st.integers(0, 0xFFFF), ttl=st.integers(0, 255),
       proto=st.integers(0, 255), tos=st.integers(0, 255), src=st.integers(0, 2**32 - 1),
       dst=st.integers(0, 2**32 - 1))
def test_ipv4_header_checksum_is_the_one_scapy_sums(total: int, ident: int, ttl: int, proto: int,
                                                     tos: int, src: int, dst: int) -> None:
    # RFC 791: every field of an option-less header with DF set, the
    # addresses' halves carrying into the fold
    ref = IP(bytes(IP(src=pk.ip_str(src), dst=pk.ip_str(dst), len=total, id=ident, ttl=ttl, proto=proto,
                      tos=tos, flags="DF")))
    assert pk.ipv4_header_checksum(total, ident, ttl, proto, src, dst, tos) == ref.chksum


def test_a_computed_checksum_of_zero_is_sent_as_all_ones() -> None:
    # RFC 768: 0 means "no checksum".  The payload word is the checksum of the
    # same datagram with a zero payload, ~(sum of the rest): the sum comes to
    # 0xFFFF and the checksum computed to 0.
    payload = pk.udp_checksum(SRC, DST, 1, 2, b"\0\0").to_bytes(2, "big")
    assert pk.udp_checksum(SRC, DST, 1, 2, payload) == 0xFFFF
    f = pk.udp_frame(SMAC, DMAC, SRC, DST, 1, 2, payload)
    e = Ether(f)
    del e[UDP].chksum
    assert Ether(bytes(e))[UDP].chksum == 0xFFFF
    assert pk.parse(f).checksum_ok


def test_parser_verifies_a_nonzero_udp_checksum_and_accepts_none() -> None:
    f = pk.udp_frame(SMAC, DMAC, SRC, DST, 1, 2, b"x" * 31)
    assert pk.parse(f).checksum_ok
    for at in range(42, len(f)):            # every bit of the payload
        for bit in range(8):
            b = bytearray(f)
            b[at] ^= 1 << bit
            assert not pk.parse(bytes(b)).checksum_ok
    none = bytearray(f)
    none[40:42] = b"\0\0"                  # no checksum sent: accepted, as by a kernel
    none[50] ^= 1
    assert pk.parse(bytes(none)).checksum_ok


def test_multicast_mac_maps_low_23_bits() -> None:
    assert pk.multicast_mac(pk.ip_int("239.129.2.3")) == bytes.fromhex("01005e010203")


def test_tcp_frame_has_valid_checksums_and_sack_option() -> None:
    f = pk.tcp_frame(SMAC, DMAC, SRC, DST, 40000, 5201, 14600, 2920, pk.TCP_ACK, 65535, 100,
                     sack=((29200, 30660), (32120, 33580)), ident=3)
    e = Ether(f)
    ip_ck, tcp_ck = e[IP].chksum, e[TCP].chksum
    del e[IP].chksum
    del e[TCP].chksum
    e2 = Ether(bytes(e))
    assert (e2[IP].chksum, e2[TCP].chksum) == (ip_ck, tcp_ck)
    sack = dict(e[TCP].options)["SAck"]
    assert sack == (29200, 30660, 32120, 33580)
    p = pk.parse(f)
    assert p is not None
    assert (p.proto, p.seq, p.ack, p.payload_len, p.sack) == (pk.PROTO_TCP, 14600, 2920, 100,
                                                              ((29200, 30660), (32120, 33580)))


def test_parser_reads_udp_and_rejects_malformed() -> None:
    f = pk.udp_frame(SMAC, DMAC, SRC, DST, 1, 2, b"x" * 30)
    p = pk.parse(f)
    assert p is not None and (p.src, p.dst, p.sport, p.dport, p.payload) == (SRC, DST, 1, 2, b"x" * 30)
    assert pk.parse(f[:40]) is None  # truncated below the IP total length
    assert pk.parse(b"\x00" * 60) is None  # not IPv4
    bad_ulen = bytearray(f)
    bad_ulen[38:40] = (200).to_bytes(2, "big")  # UDP length beyond the datagram
    assert pk.parse(bytes(bad_ulen)) is None


def test_replicas_of_a_multicast_frame_parse_once_and_unicast_frames_do_not_stay() -> None:
    """Every replica of a multicast frame reaching a host has the same bytes:
    parsing one again returns the first result (frozen, so sharing is safe);
    unicast frames are not remembered."""
    group = pk.ip_int("239.1.1.1")
    f = pk.udp_frame(SMAC, pk.multicast_mac(group), SRC, group, 5001, 5001, b"data" * 50)
    first = pk.parse(f)
    assert first is not None and first.dst == group
    assert pk.parse(bytes(bytearray(f))) is first
    u = pk.udp_frame(SMAC, DMAC, SRC, DST, 1, 2, b"u" * 20)
    assert pk.parse(u) is not pk.parse(u)
    assert u not in pk._parsed
    for i in range(2 * pk.PARSED_MEMO_SIZE):
        pk.parse(pk.udp_frame(SMAC, pk.multicast_mac(group), SRC, group, 5001, 5001, i.to_bytes(4, "big")))
    assert len(pk._parsed) <= pk.PARSED_MEMO_SIZE
