"""A small, fast builder and parser for the frames the simulator carries.

Simulated packets are real bytes -- Ethernet II, IPv4 (with a correct header
checksum), UDP, IGMP (v2 and v3, with the Router Alert option Linux puts on
them) and TCP with SACK options -- because switch nodes run the real P4
program, which parses what is on the wire.  Scapy would build the same bytes
(the tests check that) but is far too slow for millions of packets.

UDP and TCP checksums are computed (RFC 768, with the pseudo-header), and
:func:`parse` verifies a received UDP datagram's nonzero checksum as a
kernel does (:attr:`Parsed.checksum_ok`), so a bit a link flips in a p4mcc
message is caught at the receiving host.  Addresses are ints inside the
simulator and dotted strings at the protocol-core edge.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from functools import lru_cache

from p4mcc.controller.igmp import checksum

ETH_IPV4 = 0x0800
PROTO_IGMP = 2
PROTO_TCP = 6
PROTO_UDP = 17

IGMPV3_ALL_ROUTERS = 0xE0000016  # 224.0.0.22: where IGMPv3 reports go
ALL_ROUTERS = 0xE0000002  # 224.0.0.2: where IGMPv2 leaves go
ALL_SYSTEMS = 0xE0000001  # 224.0.0.1: where general queries go

IGMP_QUERY = 0x11
IGMPV2_REPORT = 0x16
IGMPV2_LEAVE = 0x17
IGMPV3_REPORT = 0x22
#: IGMPv3 group record types (RFC 3376 section 4.2.12).
MODE_IS_INCLUDE, MODE_IS_EXCLUDE, CHANGE_TO_INCLUDE, CHANGE_TO_EXCLUDE = 1, 2, 3, 4

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_ETH = struct.Struct("!6s6sH")
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_TCP = struct.Struct("!HHIIBBHHH")
_ZEROS = bytes(9000)


@lru_cache(maxsize=None)
def ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


@lru_cache(maxsize=None)
def ip_str(ip: int) -> str:
    return str(ipaddress.IPv4Address(ip))


@lru_cache(maxsize=None)
def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


@lru_cache(maxsize=4096)
def multicast_mac(group: int) -> bytes:
    """01:00:5e + the low 23 bits of the group address (RFC 1112)."""
    return b"\x01\x00\x5e" + (group & 0x7FFFFF).to_bytes(3, "big")


def is_multicast(ip: int) -> bool:
    return (ip >> 28) == 0xE


def ipv4_header_checksum(total: int, ident: int, ttl: int, proto: int, src: int, dst: int,
                         tos: int = 0) -> int:
    """RFC 791's header checksum of an option-less IPv4 header with DF set.

    Summed from the header's ten 16-bit words (version/IHL and TOS, total
    length, identification, flags, TTL and protocol, a zero checksum, the
    addresses' halves) and folded twice (RFC 1071): the one writing of the
    IPv4 header's checksum that every frame built here uses."""
    s = ((0x45 << 8) | tos) + total + ident + 0x4000 + (ttl << 8) + proto + (src >> 16) + (src & 0xFFFF) \
        + (dst >> 16) + (dst & 0xFFFF)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ip_header(src: int, dst: int, proto: int, payload_len: int, ttl: int, ident: int,
               tos: int = 0, options: bytes = b"") -> bytes:
    ihl = 5 + len(options) // 4
    total = ihl * 4 + payload_len
    ident &= 0xFFFF
    if not options:
        return _IP.pack(0x45, tos, total, ident, 0x4000, ttl, proto,
                        ipv4_header_checksum(total, ident, ttl, proto, src, dst, tos),
                        src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    hdr = _IP.pack(0x40 | ihl, tos, total, ident, 0x4000, ttl, proto, 0,
                   src.to_bytes(4, "big"), dst.to_bytes(4, "big")) + options
    return hdr[:10] + checksum(hdr).to_bytes(2, "big") + hdr[12:]


# The Internet checksum without a loop over words: since 2**16 = 1 (mod
# 0xFFFF), a byte string read as one integer is congruent modulo 0xFFFF to
# the sum of its 16-bit words, and a 32-bit address to the sum of its two
# halves.  The ones'-complement sum of data that is not all zeros is the
# residue, or 0xFFFF for a residue of 0 (RFC 1071).  int.from_bytes and one
# modulo run in C, a few times faster than summing a memoryview of 16-bit
# words.  The bytes are read little-endian: the sum is byte-order
# independent (RFC 1071), the little-endian words' sum times 256 being the
# big-endian words' sum modulo 0xFFFF, and an odd last byte lands where
# padding puts it; trailing zeros, the filler of a data packet's payload,
# are then leading zeros that add nothing, so a zero tail past the first
# _HEAD bytes (one memcmp) is not converted at all.
_HEAD = 64
_ZERO_TAIL = memoryview(bytes(65536))


def _residue(data: bytes) -> int:
    """The sum of ``data``'s big-endian 16-bit words (an odd length padded
    with a zero byte), modulo 0xFFFF."""
    if len(data) > _HEAD and data.endswith(_ZERO_TAIL[:len(data) - _HEAD]):
        data = data[:_HEAD]
    return ((int.from_bytes(data, "little") % 0xFFFF) << 8) % 0xFFFF


def udp_checksum(src: int, dst: int, sport: int, dport: int, payload: bytes) -> int:
    """RFC 768: the checksum of a UDP datagram over its IPv4 pseudo-header,
    never 0 (a computed 0 is sent as 0xFFFF; 0 means none was sent)."""
    ulen = 8 + len(payload)
    # the pseudo-header (addresses, protocol, length) and the UDP header's
    # words (ports, length; the checksum field counts as 0)
    r = (src + dst + PROTO_UDP + 2 * ulen + sport + dport + _residue(payload)) % 0xFFFF
    return 0xFFFF - r or 0xFFFF


#: Ethernet, an option-less IPv4 header and UDP in one ``pack``
_ETH_IP_UDP = struct.Struct("!6s6sHBBHHHBBHIIHHHH")


def udp_frame(src_mac: bytes, dst_mac: bytes, src: int, dst: int, sport: int, dport: int,
              payload: bytes, ttl: int = 64, ident: int = 0) -> bytes:
    """Ethernet + IPv4 + UDP (checksum computed, as a kernel sends it) around ``payload``.

    The bytes :func:`_ip_header` and :func:`udp_checksum` give, made in one
    ``pack``: every packet a host sends is built here, and three packs, an
    unpack and the joins cost more than the rest of the send."""
    ulen = 8 + len(payload)
    total = 20 + ulen
    ident &= 0xFFFF
    return _ETH_IP_UDP.pack(dst_mac, src_mac, ETH_IPV4, 0x45, 0, total, ident, 0x4000, ttl, PROTO_UDP,
                            ipv4_header_checksum(total, ident, ttl, PROTO_UDP, src, dst),
                            src, dst, sport, dport, ulen, udp_checksum(src, dst, sport, dport, payload)) + payload


_ROUTER_ALERT = b"\x94\x04\x00\x00"


def igmp_frame(src_mac: bytes, src: int, igmp: bytes, dst: int, ident: int = 0) -> bytes:
    """An IGMP message as Linux sends it: TTL 1, TOS 0xc0, Router Alert option."""
    return (_ETH.pack(multicast_mac(dst), src_mac, ETH_IPV4)
            + _ip_header(src, dst, PROTO_IGMP, len(igmp), 1, ident, tos=0xC0, options=_ROUTER_ALERT)
            + igmp)


def igmpv3_report(records: list[tuple[int, int]]) -> bytes:
    """IGMPv3 Membership Report with ``(record_type, group)`` records, no sources."""
    body = b"".join(struct.pack("!BBH4s", rt, 0, 0, g.to_bytes(4, "big")) for rt, g in records)
    msg = struct.pack("!BBHHH", IGMPV3_REPORT, 0, 0, 0, len(records)) + body
    c = checksum(msg)
    return msg[:2] + c.to_bytes(2, "big") + msg[4:]


def igmpv3_query(group: int = 0, max_resp_code: int = 100, qrv: int = 2, qqic: int = 125) -> bytes:
    """IGMPv3 query (general when ``group`` is 0)."""
    msg = struct.pack("!BBH4sBBH", IGMP_QUERY, max_resp_code, 0, group.to_bytes(4, "big"),
                      qrv & 7, qqic, 0)
    c = checksum(msg)
    return msg[:2] + c.to_bytes(2, "big") + msg[4:]


#: Ethernet, an option-less IPv4 header and TCP's fixed header in one ``pack``
_ETH_IP_TCP = struct.Struct("!6s6sHBBHHHBBHIIHHIIBBHHH")
_SACK_BLOCK = struct.Struct("!II")


def tcp_frame(src_mac: bytes, dst_mac: bytes, src: int, dst: int, sport: int, dport: int,
              seq: int, ack: int, flags: int, window: int, payload_len: int = 0,
              sack: tuple[tuple[int, int], ...] = (), ident: int = 0) -> bytes:
    """Ethernet + IPv4 + TCP with up to four SACK blocks and a zero payload.

    The payload's content carries no meaning in the model (bulk transfer), so
    it is zeros; its length is what links serialize.  TCP's checksum is
    summed from the fields' 16-bit words, and the headers made in one
    ``pack``, as :func:`udp_frame` makes its own.
    """
    opts = b""
    if sack:
        blocks = sack[:4]
        opts = b"\x01\x01" + bytes((5, 2 + 8 * len(blocks))) + b"".join(
            _SACK_BLOCK.pack(l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in blocks)
    off = (20 + len(opts)) // 4
    seq &= 0xFFFFFFFF
    ack &= 0xFFFFFFFF
    window = min(window, 0xFFFF)
    seg_len = 20 + len(opts) + payload_len
    halves = (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)
    # the pseudo-header (addresses, protocol, length) and the header with a
    # zero checksum; the zero payload adds nothing
    s = (halves + PROTO_TCP + seg_len + sport + dport + (seq >> 16) + (seq & 0xFFFF) + (ack >> 16)
         + (ack & 0xFFFF) + (off << 12) + flags + window)
    if opts:
        s += sum(struct.unpack(f"!{len(opts) // 2}H", opts))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    total = 20 + seg_len
    ident &= 0xFFFF
    return (_ETH_IP_TCP.pack(dst_mac, src_mac, ETH_IPV4, 0x45, 0, total, ident, 0x4000, 64, PROTO_TCP,
                             ipv4_header_checksum(total, ident, 64, PROTO_TCP, src, dst),
                             src, dst, sport, dport, seq, ack, off << 4, flags, window, ~s & 0xFFFF, 0)
            + opts + _ZEROS[:payload_len])


@dataclass(slots=True, frozen=True)
class Parsed:
    """What a host needs from a received frame (frozen: :func:`parse` shares it)."""

    proto: int
    src: int
    dst: int
    sport: int = 0
    dport: int = 0
    payload: bytes = b""
    # TCP fields
    seq: int = 0
    ack: int = 0
    flags: int = 0
    window: int = 0
    sack: tuple[tuple[int, int], ...] = ()
    payload_len: int = 0
    #: False for a UDP datagram whose nonzero checksum is wrong: a kernel
    #: drops it before any socket sees it (a checksum of 0: none sent, accepted).
    checksum_ok: bool = True


#: The last :data:`PARSED_MEMO_SIZE` multicast frames parsed and what they
#: parsed to.  Every replica of a multicast packet that reaches a host of one
#: run carries the same bytes (a replica is only rewritten where the P4
#: program rewrites it, and then its bytes differ), so the n receivers behind
#: a switch parse it once.  Unicast frames are nearly all unique and pass by.
_parsed: dict[bytes, Parsed | None] = {}
PARSED_MEMO_SIZE = 64


def parse(frame: bytes) -> Parsed | None:
    """Parse an Ethernet/IPv4 frame; None for anything else or anything malformed."""
    if type(frame) is bytes and len(frame) >= 34 and 224 <= frame[30] < 240:  # IPv4 multicast
        try:
            return _parsed[frame]
        except KeyError:
            p = _parsed[frame] = _parse(frame)
            if len(_parsed) > PARSED_MEMO_SIZE:
                del _parsed[next(iter(_parsed))]  # the oldest: dicts keep insertion order
            return p
    return _parse(frame)


def _parse(frame: bytes) -> Parsed | None:
    """:func:`parse` without the memo."""
    if len(frame) < 34 or frame[12] != 0x08 or frame[13] != 0x00:
        return None
    vihl = frame[14]
    if vihl >> 4 != 4:
        return None
    ihl = (vihl & 0xF) * 4
    total = (frame[16] << 8) | frame[17]
    if ihl < 20 or total < ihl or 14 + total > len(frame):
        return None
    proto = frame[23]
    src = int.from_bytes(frame[26:30], "big")
    dst = int.from_bytes(frame[30:34], "big")
    l4 = 14 + ihl
    end = 14 + total
    if proto == PROTO_UDP:
        if end - l4 < 8:
            return None
        sport, dport, ulen, csum = _UDP.unpack_from(frame, l4)
        if ulen < 8 or l4 + ulen > end:
            return None
        # the pseudo-header's words plus the datagram's (its checksum among
        # them) sum to 0xFFFF, 0 modulo 0xFFFF, when nothing was damaged
        ok = csum == 0 or (src + dst + PROTO_UDP + ulen + _residue(frame[l4:l4 + ulen])) % 0xFFFF == 0
        return Parsed(proto, src, dst, sport, dport, frame[l4 + 8:l4 + ulen], checksum_ok=ok)
    if proto == PROTO_TCP:
        if end - l4 < 20:
            return None
        sport, dport, seq, ack, off, flags, win, _, _ = _TCP.unpack_from(frame, l4)
        hl = (off >> 4) * 4
        if hl < 20 or l4 + hl > end:
            return None
        sack: tuple[tuple[int, int], ...] = ()
        i = l4 + 20
        while i < l4 + hl:
            kind = frame[i]
            if kind == 0:
                break
            if kind == 1:
                i += 1
                continue
            if i + 1 >= l4 + hl:
                break
            ln = frame[i + 1]
            if ln < 2:
                break
            if kind == 5:
                n = (ln - 2) // 8
                sack = tuple(struct.unpack_from("!II", frame, i + 2 + 8 * j) for j in range(n))
            i += ln
        return Parsed(proto, src, dst, sport, dport, b"", seq, ack, flags, win, sack, end - l4 - hl)
    if proto == PROTO_IGMP:
        return Parsed(proto, src, dst, payload=frame[l4:end])
    return Parsed(proto, src, dst)
