"""The p4mcc wire format: one definition for the Python codec and the P4 headers.

Every p4mcc packet is a UDP payload made of a 22-byte *common header*, a
fixed-size *body* chosen by the message type, and, for some messages, a
variable *tail* (data payload, SACK blocks, NACK lists).  Everything the switch
must read (session id, message type, the values it folds or compares) sits in
the common header or at the start of a fixed body, so a P4 parser reaches it
with plain ``extract`` calls and no loops.

The layouts below (:data:`COMMON_FIELDS`, each message's :func:`message`
declaration, which also makes its dataclass fields) are the single source of
truth: :mod:`hosts.wire_p4` renders them as P4 header types for
``p4src/include/wire.p4`` and a test fails when the two drift.  All integers are
big-endian (network order).  ``docs/wire-format.md`` draws every byte.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, ClassVar, TypeVar

MAGIC = 0x504D  # "PM"
VERSION = 2
COMMON_LEN = 22

#: Largest UDP payload the codec accepts (jumbo frames at most).
MAX_DATAGRAM = 9000
#: Bytes a datagram costs on an Ethernet link beyond its UDP payload: the
#: Ethernet II header (14), IPv4 without options (20) and UDP (8).
FRAME_OVERHEAD = 14 + 20 + 8
#: The largest frame (FCS aside) of an Ethernet path with a 1500-byte MTU,
#: Mininet's veths among them: a larger datagram is fragmented by its sender.
ETHERNET_MAX_FRAME = 14 + 1500
#: SACK blocks an RLA feedback packet may carry.
MAX_SACK_BLOCKS = 16
#: Sequence numbers one MTCP NACK may carry.
MAX_NACK_SEQS = 64


class WireError(ValueError):
    """A datagram that is not a valid p4mcc message (truncated, garbage, oversized)."""


class Proto(IntEnum):
    """Protocol ids, the high nibble of every message type."""

    WEBRC = 1
    TFMCC = 2
    RLA = 3
    MTCP = 4
    VLMCC = 5


class MsgType(IntEnum):
    """Message types.  High nibble is the protocol, so a switch can match either."""

    WEBRC_DATA = 0x11
    TFMCC_DATA = 0x21
    TFMCC_REPORT = 0x22
    RLA_DATA = 0x31
    RLA_SACK = 0x32
    MTCP_DATA = 0x41
    MTCP_ACK = 0x42
    MTCP_NACK = 0x43
    MTCP_WUPDATE = 0x44
    VLMCC_DATA = 0x51
    VLMCC_ACK = 0x52
    VLMCC_CHALLENGE = 0x53
    VLMCC_START = 0x54


class Flags:
    """Bits of the common header's flags byte (meaning shared by all messages)."""

    RETRANSMIT = 0x01  # data: this is a retransmission
    AGGREGATED = 0x02  # feedback: a switch folded this summary from several ports
    FILTERED = 0x04  # feedback: a switch forwarded this as the worst of its round
    COMPETING = 0x08  # VLMCC data: the sender runs its TCP-competitive window rule
    SYNC = 0x10  # RLA data: a receiver that joined mid-session starts its stream here
    THIN_ACKS = 0x20  # RLA data: receivers thin their SACKs as TCP receivers delay ACKs
    SPREAD_ACKS = 0x40  # RLA data: the group is large, receivers spread their SACKs over the data gap
    ACKER = 0x80  # MTCP: an ACK that is the acker's own copy (a folding switch passes it on unfolded);
    # a probe naming (adv_wnd 1) or releasing (0) the acker; a NACK whose timestamp echoes data


class Stamp:
    """The congestion stamp: one byte of the common header that switches write.

    High nibble ``q``: the worst queueing delay on the path (switches combine
    by maximum); low nibble ``s``: the spare rate of the tightest port
    (combined by minimum), both on a base-2 scale.  ``q == 0`` means no switch
    stamped the packet (senders write 0), so a receiver tells a path without
    stamping switches apart from any measured value.  ``docs/stamp.md`` gives
    the design and its reasons.

    * ``q = 1``: the packet waited less than :attr:`Q_BASE_US` * 4 (512 us);
      ``q`` in 2..14: it waited in ``[2**(q+7), 2**(q+8))`` us; ``q = 15``:
      ``2**22`` us (4.2 s) or more.
    * ``s = 0``: less than 80 kb/s spare; ``s`` in 1..15: at least
      ``40 kb/s * 2**s`` spare (RFC 4782's Quick-Start rate scale, 3.1).

    Switches stamp data messages only.  A feedback message's stamp byte is
    the receiver's *echo*: :meth:`hosts.stampwindow.StampWindow.byte` of the
    data it received since its previous feedback (0 when not every packet
    was stamped).  A switch that folds or filters feedback (MTCP ACKs, TFMCC
    reports, VLMCC challenges) writes into the message it sends up the
    combination of its echo and those of the messages it absorbed since the
    last one went up: worst ``q`` (maximum), tightest ``s`` (minimum), and 0
    if any of them is 0 (docs/stamp.md, "Carried back").
    """

    NOT_STAMPED = 0
    #: Spare-rate unit of the ``s`` scale, bit/s (RFC 4782 3.1's K).
    RATE_UNIT_BPS = 40_000
    #: The ``q`` scale's unit: ``q >= 2`` means at least ``2**(q+7)`` us.
    Q_BASE_US = 128

    @staticmethod
    def pack(q: int, s: int) -> int:
        """The stamp byte of queue code ``q`` and spare code ``s`` (each 0..15)."""
        if not (0 <= q <= 15 and 0 <= s <= 15):
            raise WireError(f"stamp codes out of range: q={q} s={s}")
        return (q << 4) | s

    @staticmethod
    def stamped(stamp: int) -> bool:
        """True when at least one switch on the path wrote ``stamp``."""
        return (stamp >> 4) != 0

    @staticmethod
    def queue_code(stamp: int) -> int:
        return (stamp >> 4) & 0xF

    @staticmethod
    def spare_code(stamp: int) -> int:
        return stamp & 0xF

    @classmethod
    def queue_delay_s(cls, stamp: int) -> float | None:
        """Lower bound of the worst queueing delay on the path, seconds (None: not stamped)."""
        q = cls.queue_code(stamp)
        if q == 0:
            return None
        return 0.0 if q == 1 else cls.Q_BASE_US * 2**q / 1e6

    @classmethod
    def spare_bps(cls, stamp: int) -> float | None:
        """Lower bound of the tightest port's spare rate, bit/s (None: not stamped)."""
        if not cls.stamped(stamp):
            return None
        s = cls.spare_code(stamp)
        return 0.0 if s == 0 else float(cls.RATE_UNIT_BPS * 2**s)

    @classmethod
    def queue_code_for(cls, delay_us: int) -> int:
        """The ``q`` a switch writes for a packet that waited ``delay_us``."""
        q = 1
        while q < 15 and delay_us >= cls.Q_BASE_US << (q + 1):
            q += 1
        return q

    @classmethod
    def spare_code_for(cls, spare_bps: float) -> int:
        """The ``s`` a switch writes for a port with ``spare_bps`` spare."""
        s = 0
        while s < 15 and spare_bps >= cls.RATE_UNIT_BPS * 2 ** (s + 1):
            s += 1
        return s

    @classmethod
    def combine(cls, stamp: int, q: int, s: int) -> int:
        """``stamp`` after one more switch whose own codes are ``q`` (>= 1) and ``s``."""
        if not cls.stamped(stamp):
            return cls.pack(q, s)
        return cls.pack(max(cls.queue_code(stamp), q), min(cls.spare_code(stamp), s))


class Share:
    """The max-min fair share: one byte of the common header that switches write.

    Code ``c`` in 1..255 stands for a share of ``40 kb/s * 2**((c - 56) / 8)``
    (eighth-octave steps of 9 %, from 341 bit/s to 1.2 Tb/s; ``c = 56`` is the
    stamp's 40 kb/s unit).  ``c = 0``: no share: senders write it, and it
    stays while no switch on the path estimated one (switches keep the
    smallest estimate: :meth:`along_path`).  A receiver's feedback echoes
    the smallest code of the data it received since its previous feedback,
    0 if any was 0 (:class:`hosts.stampwindow.StampWindow`), and switches
    that absorb feedback combine echoes the same way (:meth:`combine_echo`).
    ``docs/stamp.md`` ("The share") gives the estimate and why this encoding.
    """

    NONE = 0
    #: Code of one :attr:`Stamp.RATE_UNIT_BPS` (40 kb/s).
    UNIT_CODE = 56

    @classmethod
    def bps(cls, code: int) -> float | None:
        """The share code ``code`` stands for, bit/s (None: no share)."""
        if not 0 <= code <= 255:
            raise WireError(f"share code out of range: {code}")
        if code == cls.NONE:
            return None
        return Stamp.RATE_UNIT_BPS * 2 ** ((code - cls.UNIT_CODE) / 8)

    @classmethod
    def code_for(cls, bps: float) -> int:
        """The largest code whose share is at most ``bps`` (at least 1, at most 255)."""
        if bps <= 0:
            return 1
        c = math.floor(8 * math.log2(bps / Stamp.RATE_UNIT_BPS) + 1e-9) + cls.UNIT_CODE
        return max(1, min(255, c))

    @staticmethod
    def along_path(share: int, code: int) -> int:
        """``share`` after one more switch whose own code is ``code`` (0: it has none)."""
        if code == 0:
            return share
        return code if share == 0 else min(share, code)

    @staticmethod
    def combine_echo(a: int, b: int) -> int:
        """Two receivers' echoes: the smaller, 0 (a receiver without a share) winning."""
        return 0 if a == 0 or b == 0 else min(a, b)


class TfmccReportFlags:
    """Bits of the TFMCC report's ``rflags`` byte."""

    HAVE_RTT = 0x01
    HAVE_LOSS = 0x02
    LEAVING = 0x04
    SLOWSTART = 0x08
    IS_CLR = 0x10


class TfmccDataFlags:
    """Bits of the TFMCC data packet's ``dflags`` byte."""

    SLOWSTART = 0x01
    CLR_CHANGED = 0x02


class RlaSackFlags:
    """Bits of the RLA SACK's ``sflags`` byte."""

    LEAVING = 0x01


@dataclass(frozen=True)
class WireField:
    """One fixed-width field: name, width in bits (8/16/32/64) and signedness."""

    name: str
    bits: int
    signed: bool = False

    @property
    def struct_code(self) -> str:
        code = {8: "B", 16: "H", 32: "I", 64: "Q"}[self.bits]
        return code.lower() if self.signed else code


def _layout(spec: str) -> tuple[WireField, ...]:
    """``"rate:32 drift:i32"`` -> fields (``iN``: signed N bits)."""
    out = []
    for word in spec.split():
        name, _, width = word.partition(":")
        signed = width.startswith("i")
        out.append(WireField(name, int(width.lstrip("i")), signed))
    return tuple(out)


#: Common header: magic, version, stamp (the path's congestion signal, written
#: by switches: :class:`Stamp`), msg_type (its high nibble is the protocol),
#: flags, length (whole UDP payload in bytes), session_id, seq, timestamp
#: (sender clock, microseconds modulo 2**32), share (the path's max-min fair
#: share, written by switches: :class:`Share`), rsvd (0; keeps the share in
#: a 16-bit word of its own, which a switch's checksum update needs).
COMMON_FIELDS: tuple[WireField, ...] = _layout(
    "magic:16 version:8 stamp:8 msg_type:8 flags:8 length:16 session_id:32 seq:32 timestamp:32"
    " share:8 rsvd:8")
_COMMON = struct.Struct("!" + "".join(f.struct_code for f in COMMON_FIELDS))
assert _COMMON.size == COMMON_LEN

_REGISTRY: dict[int, type["Message"]] = {}


def _limit(bits: int, signed: bool) -> tuple[int, int]:
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


@dataclass(frozen=True)
class ListTail:
    """A counted list after the body: ``count_field`` (a body field) items of ``item`` fields.

    ``name`` is the dataclass field holding the items (a tuple of ints when an
    item has one field, of tuples otherwise), ``limit`` the most a message may
    carry.
    """

    name: str
    count_field: str
    item: tuple[WireField, ...]
    item_name: str
    limit: int

    @property
    def item_size(self) -> int:
        return sum(f.bits for f in self.item) // 8

    @functools.cached_property
    def struct(self) -> struct.Struct:
        return struct.Struct("!" + "".join(f.struct_code for f in self.item))


@dataclass(frozen=True)
class Message:
    """Base of all messages: the common-header fields every message carries.

    Subclasses are declared with :func:`message`, which names the message
    type and the fixed body layout once; the layout's fields become dataclass
    fields (ints, default 0).  A counted-list tail is declared by ``TAIL``; a
    data message mixes in :class:`_PayloadTail` and a ``payload`` field.
    """

    session_id: int = 0
    seq: int = 0
    timestamp: int = 0
    flags: int = 0
    stamp: int = Stamp.NOT_STAMPED
    share: int = Share.NONE

    MSG_TYPE: ClassVar[MsgType]
    BODY: ClassVar[tuple[WireField, ...]] = ()
    TAIL: ClassVar[ListTail | None] = None
    _body_struct: ClassVar[struct.Struct]

    @property
    def proto(self) -> Proto | int:
        """The protocol id (a :class:`Proto` for the protocols declared here)."""
        pid = int(self.MSG_TYPE) >> 4
        return Proto(pid) if pid in Proto._value2member_map_ else pid

    # Tail hooks -----------------------------------------------------------
    def __post_init__(self) -> None:
        t = self.TAIL
        if t is not None and getattr(self, t.count_field) != len(getattr(self, t.name)):
            object.__setattr__(self, t.count_field, len(getattr(self, t.name)))

    def _encode_tail(self) -> bytes:
        t = self.TAIL
        if t is None:
            return b""
        items = getattr(self, t.name)
        if len(items) > t.limit:
            raise WireError(f"{type(self).__name__}: {len(items)} {t.item_name}s exceed {t.limit}")
        out = bytearray()
        for item in items:
            values = item if isinstance(item, tuple) else (item,)
            for f, v in zip(t.item, values, strict=True):
                lo, hi = _limit(f.bits, f.signed)
                if not isinstance(v, int) or not lo <= v <= hi:
                    raise WireError(f"{type(self).__name__}: {t.item_name} {f.name} {v!r} does not fit {f.bits} bits")
            out += t.struct.pack(*values)
        return bytes(out)

    @classmethod
    def _decode_tail(cls, tail: bytes, body: dict[str, object]) -> dict[str, object]:
        t = cls.TAIL
        if t is None:
            if tail:
                raise WireError(f"{cls.__name__}: {len(tail)} unexpected trailing bytes")
            return {}
        count = int(body[t.count_field])  # type: ignore[call-overload]
        if count > t.limit:
            raise WireError(f"{cls.__name__}: {count} {t.item_name}s exceed {t.limit}")
        size = t.struct.size
        if len(tail) != count * size:
            raise WireError(f"{cls.__name__}: {count} {t.item_name}s need {count * size} bytes, got {len(tail)}")
        items = [t.struct.unpack_from(tail, i * size) for i in range(count)]
        return {t.name: tuple(v[0] if len(t.item) == 1 else v for v in items)}

    # Codec ---------------------------------------------------------------
    def encode(self) -> bytes:
        """Serialise to a UDP payload; raises :class:`WireError` on out-of-range fields."""
        for f in COMMON_FIELDS[5:]:
            if f.name in ("length", "rsvd"):
                continue
            _check(self, f)
        if not 0 <= self.flags <= 0xFF:
            raise WireError(f"flags out of range: {self.flags}")
        if not 0 <= self.stamp <= 0xFF:
            raise WireError(f"stamp out of range: {self.stamp}")
        for f in self.BODY:
            _check(self, f)
        body = self._body_struct.pack(*(getattr(self, f.name) for f in self.BODY))
        tail = self._encode_tail()
        length = COMMON_LEN + len(body) + len(tail)
        if length > MAX_DATAGRAM:
            raise WireError(f"message of {length} bytes exceeds {MAX_DATAGRAM}")
        head = _COMMON.pack(
            MAGIC,
            VERSION,
            self.stamp,
            int(self.MSG_TYPE),
            self.flags,
            length,
            self.session_id,
            self.seq,
            self.timestamp,
            self.share,
            0,
        )
        return head + body + tail


M = TypeVar("M", bound=type[Message])


def message(msg_type: int | None, layout: str = "") -> Callable[[M], M]:
    """Declare a message class: its type and its fixed body, each field once.

    ``layout`` lists ``name:bits`` (``name:iN`` signed) in wire order; they
    become int dataclass fields ahead of the class's own (tail) fields.  No
    layout: the body of the base class.  ``msg_type`` None declares a shared
    base, not a message.  A protocol module outside this file may declare its
    own messages (a protocol id above :class:`Proto`'s in the high nibble):
    they decode everywhere but stay out of :func:`message_types`, so the P4
    program, the dissector and the docs describe only the formats here.
    """

    def wrap(cls: M) -> M:
        if layout:
            body = _layout(layout)
            own = cls.__dict__.get("__annotations__", {})
            cls.__annotations__ = {**{f.name: "int" for f in body}, **own}
            for f in body:
                setattr(cls, f.name, 0)
            cls.BODY = body
        out = dataclass(frozen=True)(cls)
        if msg_type is not None:
            out.MSG_TYPE = msg_type
            out._body_struct = struct.Struct("!" + "".join(f.struct_code for f in out.BODY))
            if _REGISTRY.get(int(msg_type), out).__qualname__ != out.__qualname__:
                raise ValueError(f"message type 0x{int(msg_type):02x} is already {_REGISTRY[int(msg_type)].__name__}")
            _REGISTRY[int(msg_type)] = out
        return out

    return wrap


def _check(msg: Message, f: WireField) -> None:
    value = getattr(msg, f.name)
    lo, hi = _limit(f.bits, f.signed)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise WireError(f"{type(msg).__name__}.{f.name}={value!r} does not fit {f.bits} bits")


def peek_header(data: bytes) -> tuple[MsgType | int, int]:
    """Return (message type, session id) without decoding the body."""
    if len(data) < COMMON_LEN:
        raise WireError(f"truncated: {len(data)} bytes, common header needs {COMMON_LEN}")
    magic, version, _stamp, mtype, _flags, _length, session, _seq, _ts, _share, _rsvd = _COMMON.unpack_from(data)
    if magic != MAGIC:
        raise WireError(f"bad magic 0x{magic:04x}")
    if version != VERSION:
        raise WireError(f"unsupported version {version}")
    if mtype not in _REGISTRY:
        raise WireError(f"unknown message type 0x{mtype:02x}")
    return _REGISTRY[mtype].MSG_TYPE, session


#: The last :data:`DECODED_MEMO_SIZE` datagrams decoded and their messages.
#: Messages are frozen and their fields immutable, so one decoded message can
#: stand for every later datagram with the same bytes: the n receivers of one
#: multicast packet (in the simulator, every replica reaches a receiver of one
#: process) decode it once instead of n times.  Malformed datagrams are not
#: remembered; each raises again.
_decoded: dict[bytes, Message] = {}
DECODED_MEMO_SIZE = 256


def decode(data: bytes) -> Message:
    """Parse one UDP payload; raises :class:`WireError` for anything malformed."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise WireError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    msg = _decoded.get(data)
    if msg is not None:
        return msg
    msg = _decode(data)
    if len(_decoded) >= DECODED_MEMO_SIZE:
        del _decoded[next(iter(_decoded))]  # the oldest: dicts keep insertion order
    _decoded[data] = msg
    return msg


def _decode(data: bytes) -> Message:
    """:func:`decode` without the memo."""
    if len(data) > MAX_DATAGRAM:
        raise WireError(f"oversized: {len(data)} bytes > {MAX_DATAGRAM}")
    mtype, _ = peek_header(data)
    _m, _v, stamp, _t, flags, length, session, seq, ts, share, _rsvd = _COMMON.unpack_from(data)
    if length != len(data):
        raise WireError(f"length field says {length} bytes, datagram has {len(data)}")
    cls = _REGISTRY[int(mtype)]
    body_end = COMMON_LEN + cls._body_struct.size
    if len(data) < body_end:
        raise WireError(
            f"truncated {cls.__name__}: {len(data)} bytes, needs at least {body_end}"
        )
    values = cls._body_struct.unpack_from(data, COMMON_LEN)
    kwargs: dict[str, object] = {f.name: v for f, v in zip(cls.BODY, values)}
    kwargs.update(cls._decode_tail(data[body_end:], kwargs))
    return cls(session_id=session, seq=seq, timestamp=ts, flags=flags, stamp=stamp, share=share, **kwargs)


class _PayloadTail:
    """Data messages: everything after the fixed body is the application payload."""

    payload: bytes

    def _encode_tail(self) -> bytes:
        return bytes(self.payload)

    @classmethod
    def _decode_tail(cls, tail: bytes, body: dict[str, object]) -> dict[str, object]:
        return {"payload": tail}


# ---------------------------------------------------------------------------
# WEBRC (RFC 3738): CN, TSI, PSN.
# ---------------------------------------------------------------------------

#: PSN of the last packet a wave channel sends in its wave.
WEBRC_LAST_PSN = 0xFFFF


@message(MsgType.WEBRC_DATA, "cn:16 psn:16 tsi:32")
class WebrcData(_PayloadTail, Message):
    """WEBRC data on base channel (cn == T) or wave channel cn (0 <= cn < T)."""

    payload: bytes = b""


# ---------------------------------------------------------------------------
# TFMCC (RFC 4654).
# ---------------------------------------------------------------------------


@message(MsgType.TFMCC_DATA, "supp_rate:32 max_rtt:32 clr_id:32 echo_rcvr_id:32 echo_ts:32"
                             " echo_offset:32 fb_round:16 dflags:8 reserved:8")
class TfmccData(_PayloadTail, Message):
    """TFMCC data: rates in bit/s, times in microseconds."""

    payload: bytes = b""


@message(MsgType.TFMCC_REPORT, "rate:32 fb_round:16 rflags:8 reserved:8 rcvr_id:32 recv_rate:32"
                               " rtt:32 loss_rate:32 echo_ts:32 echo_offset:32")
class TfmccReport(Message):
    """TFMCC receiver report.  ``rate`` first: the switch's filter compares it.

    ``loss_rate`` is the loss event rate p scaled by 2**32 - 1.
    """


# ---------------------------------------------------------------------------
# RLA.
# ---------------------------------------------------------------------------


@message(MsgType.RLA_DATA)
class RlaData(_PayloadTail, Message):
    """RLA data; the common ``seq`` is the packet number, ``timestamp`` the send time."""

    payload: bytes = b""


@message(MsgType.RLA_SACK, "cum_ack:32 adv_buf:32 rcvr_id:32 echo_ts:32 nblocks:8 sflags:8 reserved2:16")
class RlaSack(Message):
    """RLA feedback: cumulative ACK plus SACK blocks [start, end) of packet numbers."""

    TAIL = ListTail("blocks", "nblocks", _layout("start:32 end:32"), "block", MAX_SACK_BLOCKS)
    blocks: tuple[tuple[int, int], ...] = ()


# ---------------------------------------------------------------------------
# MTCP.
# ---------------------------------------------------------------------------


@message(MsgType.MTCP_DATA)
class MtcpData(_PayloadTail, Message):
    """MTCP data; ``timestamp`` is the send time echoed in ACKs."""

    payload: bytes = b""


@message(None, "cum_ack:32 min_cwnd:32 max_twnd:32 adv_wnd:32 node_id:32 echo_ts:32 sack_bitmap:32")
class _MtcpSummary(Message):
    """Fields of every MTCP summary message; the first four are what switches fold.

    ``sack_bitmap`` bit i (LSB first) set means packet ``cum_ack + 1 + i`` arrived.
    Windows are in packets.
    """


@message(MsgType.MTCP_ACK)
class MtcpAck(_MtcpSummary):
    """MTCP ACK with congestion summary."""


@message(MsgType.MTCP_WUPDATE)
class MtcpWindowUpdate(_MtcpSummary):
    """Periodic window-update ACK (same layout as an ACK) that breaks the paper's deadlock."""


@message(MsgType.MTCP_NACK, "cum_ack:32 node_id:32 count:8 reserved:8 reserved2:16")
class MtcpNack(Message):
    """MTCP NACK: the packets a node is missing above its cumulative ACK."""

    TAIL = ListTail("missing", "count", _layout("seq:32"), "seq", MAX_NACK_SEQS)
    missing: tuple[int, ...] = ()


# ---------------------------------------------------------------------------
# VLMCC.
# ---------------------------------------------------------------------------


@message(MsgType.VLMCC_DATA, "leader_id:32 drift_prev:i32 rate:32")
class VlmccData(_PayloadTail, Message):
    """VLMCC data: ``timestamp`` is tstamp; drift_prev in microseconds (signed); rate bit/s."""

    payload: bytes = b""


@message(MsgType.VLMCC_ACK, "rcvr_id:32 tstamp_comp:32")
class VlmccAck(Message):
    """Leader's ACK: tstamp_comp is the data tstamp plus the leader's holding time."""


@message(MsgType.VLMCC_CHALLENGE, "rate:32 rcvr_id:32 rtt:32 win_size:32")
class VlmccChallenge(Message):
    """A follower's challenge; ``rate`` first: the switch's filter compares it."""


@message(MsgType.VLMCC_START, "leader:32 rate:32 win_size:32 tstamp_comp:32")
class VlmccStart(Message):
    """Sender's answer to a challenge: names the leader and echoes the challenger's tstamp."""


def message_types() -> dict[MsgType, type[Message]]:
    """The message classes declared here by type (used by docs, tests and P4 generation)."""
    return {MsgType(k): v for k, v in sorted(_REGISTRY.items()) if k in MsgType._value2member_map_}


def body_size(cls: type[Message]) -> int:
    """Size in bytes of a message class's fixed body."""
    return cls._body_struct.size


def payload_filling_mtu(cls: type[Message]) -> int:
    """Payload bytes that make a data message of ``cls`` exactly one full Ethernet frame.

    A protocol's default packet size: TCP's full segment on such a path, so a
    window counted in packets matches TCP's in bytes, and nothing is fragmented.
    """
    return ETHERNET_MAX_FRAME - FRAME_OVERHEAD - COMMON_LEN - body_size(cls)


def ts_us(now: float) -> int:
    """A clock reading in seconds as the wire's 32-bit microsecond timestamp."""
    return int(round(now * 1e6)) & 0xFFFFFFFF


def ts_diff_us(later: int, earlier: int) -> int:
    """Signed difference of two wire timestamps, correct across the 2**32 wrap."""
    d = (later - earlier) & 0xFFFFFFFF
    return d - (1 << 32) if d >= (1 << 31) else d


def seconds_since(ts: int, now: float) -> float:
    """Seconds from wire timestamp ``ts`` to the clock reading ``now`` (an
    echoed timestamp: a round trip; a sender's stamp: a one-way delay plus
    the clocks' offset)."""
    return ts_diff_us(ts_us(now), ts) / 1e6


__all__ = [
    "COMMON_FIELDS",
    "COMMON_LEN",
    "Flags",
    "ListTail",
    "MAGIC",
    "MAX_DATAGRAM",
    "Message",
    "MsgType",
    "Proto",
    "RlaSackFlags",
    "Share",
    "Stamp",
    "TfmccDataFlags",
    "TfmccReportFlags",
    "WireError",
    "WireField",
    "body_size",
    "decode",
    "message",
    "message_types",
    "peek_header",
    "ts_diff_us",
    "ts_us",
]
