"""The p4mcc wire format: one definition for the Python codec and the P4 headers.

Every p4mcc packet is a UDP payload made of a 20-byte *common header*, a
fixed-size *body* chosen by the message type, and, for some messages, a
variable *tail* (data payload, SACK blocks, NACK lists).  Everything the switch
must read (session id, message type, the values it folds or compares) sits in
the common header or at the start of a fixed body, so a P4 parser reaches it
with plain ``extract`` calls and no loops.

The layout tables below (:data:`COMMON_FIELDS`, ``Message.BODY``) are the single
source of truth: :mod:`hosts.wire_p4` renders them as P4 header types for
``p4src/include/wire.p4`` and a test fails when the two drift.  All integers are
big-endian (network order).  ``docs/wire-format.md`` draws every byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

MAGIC = 0x504D  # "PM"
VERSION = 1
COMMON_LEN = 20

#: Largest UDP payload the codec accepts (jumbo frames at most).
MAX_DATAGRAM = 9000
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


def _u(name: str, bits: int) -> WireField:
    return WireField(name, bits)


def _s(name: str, bits: int) -> WireField:
    return WireField(name, bits, signed=True)


#: Common header: magic, version, proto, msg_type, flags, length (whole UDP
#: payload in bytes), session_id, seq, timestamp (sender clock, microseconds
#: modulo 2**32).
COMMON_FIELDS: tuple[WireField, ...] = (
    _u("magic", 16),
    _u("version", 8),
    _u("proto", 8),
    _u("msg_type", 8),
    _u("flags", 8),
    _u("length", 16),
    _u("session_id", 32),
    _u("seq", 32),
    _u("timestamp", 32),
)
_COMMON = struct.Struct("!" + "".join(f.struct_code for f in COMMON_FIELDS))
assert _COMMON.size == COMMON_LEN

_SACK_BLOCK = struct.Struct("!II")
_NACK_SEQ = struct.Struct("!I")

_REGISTRY: dict[int, type["Message"]] = {}


def _limit(bits: int, signed: bool) -> tuple[int, int]:
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


@dataclass(frozen=True)
class Message:
    """Base of all messages: the common-header fields every message carries.

    Subclasses declare ``MSG_TYPE`` and ``BODY`` (the fixed body layout, whose
    fields are also dataclass fields of the subclass) and may carry a variable
    tail by overriding :meth:`_encode_tail` / :meth:`_decode_tail`.
    """

    session_id: int = 0
    seq: int = 0
    timestamp: int = 0
    flags: int = 0

    MSG_TYPE: ClassVar[MsgType]
    BODY: ClassVar[tuple[WireField, ...]] = ()
    _body_struct: ClassVar[struct.Struct]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "MSG_TYPE" in cls.__dict__:
            cls._body_struct = struct.Struct("!" + "".join(f.struct_code for f in cls.BODY))
            _REGISTRY[int(cls.MSG_TYPE)] = cls

    @property
    def proto(self) -> Proto:
        return Proto(int(self.MSG_TYPE) >> 4)

    # Tail hooks -----------------------------------------------------------
    def _encode_tail(self) -> bytes:
        return b""

    @classmethod
    def _decode_tail(cls, tail: bytes, body: dict[str, object]) -> dict[str, object]:
        if tail:
            raise WireError(f"{cls.__name__}: {len(tail)} unexpected trailing bytes")
        return {}

    # Codec ---------------------------------------------------------------
    def encode(self) -> bytes:
        """Serialise to a UDP payload; raises :class:`WireError` on out-of-range fields."""
        for f in COMMON_FIELDS[5:]:
            if f.name in ("length",):
                continue
            _check(self, f)
        if not 0 <= self.flags <= 0xFF:
            raise WireError(f"flags out of range: {self.flags}")
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
            int(self.MSG_TYPE) >> 4,
            int(self.MSG_TYPE),
            self.flags,
            length,
            self.session_id,
            self.seq,
            self.timestamp,
        )
        return head + body + tail


def _check(msg: Message, f: WireField) -> None:
    value = getattr(msg, f.name)
    lo, hi = _limit(f.bits, f.signed)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise WireError(f"{type(msg).__name__}.{f.name}={value!r} does not fit {f.bits} bits")


def peek_header(data: bytes) -> tuple[MsgType, int]:
    """Return (message type, session id) without decoding the body."""
    if len(data) < COMMON_LEN:
        raise WireError(f"truncated: {len(data)} bytes, common header needs {COMMON_LEN}")
    magic, version, proto, mtype, _flags, _length, session, _seq, _ts = _COMMON.unpack_from(data)
    if magic != MAGIC:
        raise WireError(f"bad magic 0x{magic:04x}")
    if version != VERSION:
        raise WireError(f"unsupported version {version}")
    if mtype not in _REGISTRY or (mtype >> 4) != proto:
        raise WireError(f"unknown message type 0x{mtype:02x} for protocol {proto}")
    return MsgType(mtype), session


def decode(data: bytes) -> Message:
    """Parse one UDP payload; raises :class:`WireError` for anything malformed."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise WireError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_DATAGRAM:
        raise WireError(f"oversized: {len(data)} bytes > {MAX_DATAGRAM}")
    mtype, _ = peek_header(data)
    _m, _v, _p, _t, flags, length, session, seq, ts = _COMMON.unpack_from(data)
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
    return cls(session_id=session, seq=seq, timestamp=ts, flags=flags, **kwargs)


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


@dataclass(frozen=True)
class WebrcData(_PayloadTail, Message):
    """WEBRC data on base channel (cn == T) or wave channel cn (0 <= cn < T)."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.WEBRC_DATA
    BODY: ClassVar[tuple[WireField, ...]] = (_u("cn", 16), _u("psn", 16), _u("tsi", 32))
    cn: int = 0
    psn: int = 0
    tsi: int = 0
    payload: bytes = b""


# ---------------------------------------------------------------------------
# TFMCC (RFC 4654).
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TfmccData(_PayloadTail, Message):
    """TFMCC data: rates in bit/s, times in microseconds."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.TFMCC_DATA
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("supp_rate", 32),
        _u("max_rtt", 32),
        _u("clr_id", 32),
        _u("echo_rcvr_id", 32),
        _u("echo_ts", 32),
        _u("echo_offset", 32),
        _u("fb_round", 16),
        _u("dflags", 8),
        _u("reserved", 8),
    )
    supp_rate: int = 0
    max_rtt: int = 0
    clr_id: int = 0
    echo_rcvr_id: int = 0
    echo_ts: int = 0
    echo_offset: int = 0
    fb_round: int = 0
    dflags: int = 0
    reserved: int = 0
    payload: bytes = b""


@dataclass(frozen=True)
class TfmccReport(Message):
    """TFMCC receiver report.  ``rate`` first: the switch's filter compares it."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.TFMCC_REPORT
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("rate", 32),
        _u("fb_round", 16),
        _u("rflags", 8),
        _u("reserved", 8),
        _u("rcvr_id", 32),
        _u("recv_rate", 32),
        _u("rtt", 32),
        _u("loss_rate", 32),
        _u("echo_ts", 32),
        _u("echo_offset", 32),
    )
    rate: int = 0
    fb_round: int = 0
    rflags: int = 0
    reserved: int = 0
    rcvr_id: int = 0
    recv_rate: int = 0
    rtt: int = 0
    loss_rate: int = 0  # loss event rate p scaled by 2**32 - 1
    echo_ts: int = 0
    echo_offset: int = 0


# ---------------------------------------------------------------------------
# RLA.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RlaData(_PayloadTail, Message):
    """RLA data; the common ``seq`` is the packet number, ``timestamp`` the send time."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.RLA_DATA
    BODY: ClassVar[tuple[WireField, ...]] = ()
    payload: bytes = b""


def _encode_blocks(blocks: tuple[tuple[int, int], ...]) -> bytes:
    if len(blocks) > MAX_SACK_BLOCKS:
        raise WireError(f"{len(blocks)} SACK blocks exceed {MAX_SACK_BLOCKS}")
    out = bytearray()
    for start, end in blocks:
        for v in (start, end):
            if not isinstance(v, int) or not 0 <= v <= 0xFFFFFFFF:
                raise WireError(f"SACK block edge {v!r} does not fit 32 bits")
        out += _SACK_BLOCK.pack(start, end)
    return bytes(out)


def _decode_blocks(name: str, count: int, tail: bytes) -> tuple[tuple[int, int], ...]:
    if count > MAX_SACK_BLOCKS:
        raise WireError(f"{name}: {count} SACK blocks exceed {MAX_SACK_BLOCKS}")
    if len(tail) != count * _SACK_BLOCK.size:
        raise WireError(f"{name}: {count} SACK blocks need {count * 8} bytes, got {len(tail)}")
    return tuple(_SACK_BLOCK.unpack_from(tail, i * 8) for i in range(count))


@dataclass(frozen=True)
class RlaSack(Message):
    """RLA feedback: cumulative ACK plus SACK blocks [start, end) of packet numbers."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.RLA_SACK
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("cum_ack", 32),
        _u("adv_buf", 32),
        _u("rcvr_id", 32),
        _u("echo_ts", 32),
        _u("nblocks", 8),
        _u("reserved", 8),
        _u("reserved2", 16),
    )
    cum_ack: int = 0
    adv_buf: int = 0
    rcvr_id: int = 0
    echo_ts: int = 0
    nblocks: int = 0
    reserved: int = 0
    reserved2: int = 0
    blocks: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.nblocks != len(self.blocks):
            object.__setattr__(self, "nblocks", len(self.blocks))

    def _encode_tail(self) -> bytes:
        return _encode_blocks(self.blocks)

    @classmethod
    def _decode_tail(cls, tail: bytes, body: dict[str, object]) -> dict[str, object]:
        return {"blocks": _decode_blocks("RlaSack", int(body["nblocks"]), tail)}  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# MTCP.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MtcpData(_PayloadTail, Message):
    """MTCP data; ``timestamp`` is the send time echoed in ACKs."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.MTCP_DATA
    BODY: ClassVar[tuple[WireField, ...]] = ()
    payload: bytes = b""


_MTCP_SUMMARY: tuple[WireField, ...] = (
    _u("cum_ack", 32),
    _u("min_cwnd", 32),
    _u("max_twnd", 32),
    _u("adv_wnd", 32),
    _u("node_id", 32),
    _u("echo_ts", 32),
    _u("sack_bitmap", 32),
)


@dataclass(frozen=True)
class _MtcpSummary(Message):
    """Fields of every MTCP summary message; the first four are what switches fold.

    ``sack_bitmap`` bit i (LSB first) set means packet ``cum_ack + 1 + i`` arrived.
    Windows are in packets.
    """

    BODY: ClassVar[tuple[WireField, ...]] = _MTCP_SUMMARY
    cum_ack: int = 0
    min_cwnd: int = 0
    max_twnd: int = 0
    adv_wnd: int = 0
    node_id: int = 0
    echo_ts: int = 0
    sack_bitmap: int = 0


@dataclass(frozen=True)
class MtcpAck(_MtcpSummary):
    """MTCP ACK with congestion summary."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.MTCP_ACK


@dataclass(frozen=True)
class MtcpWindowUpdate(_MtcpSummary):
    """Periodic window-update ACK (same layout as an ACK) that breaks the paper's deadlock."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.MTCP_WUPDATE


@dataclass(frozen=True)
class MtcpNack(Message):
    """MTCP NACK: the packets a node is missing above its cumulative ACK."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.MTCP_NACK
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("cum_ack", 32),
        _u("node_id", 32),
        _u("count", 8),
        _u("reserved", 8),
        _u("reserved2", 16),
    )
    cum_ack: int = 0
    node_id: int = 0
    count: int = 0
    reserved: int = 0
    reserved2: int = 0
    missing: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.count != len(self.missing):
            object.__setattr__(self, "count", len(self.missing))

    def _encode_tail(self) -> bytes:
        if len(self.missing) > MAX_NACK_SEQS:
            raise WireError(f"{len(self.missing)} NACKed packets exceed {MAX_NACK_SEQS}")
        out = bytearray()
        for s in self.missing:
            if not isinstance(s, int) or not 0 <= s <= 0xFFFFFFFF:
                raise WireError(f"NACKed sequence {s!r} does not fit 32 bits")
            out += _NACK_SEQ.pack(s)
        return bytes(out)

    @classmethod
    def _decode_tail(cls, tail: bytes, body: dict[str, object]) -> dict[str, object]:
        count = int(body["count"])  # type: ignore[arg-type]
        if count > MAX_NACK_SEQS:
            raise WireError(f"MtcpNack: {count} sequences exceed {MAX_NACK_SEQS}")
        if len(tail) != count * _NACK_SEQ.size:
            raise WireError(f"MtcpNack: {count} sequences need {count * 4} bytes, got {len(tail)}")
        return {"missing": tuple(_NACK_SEQ.unpack_from(tail, i * 4)[0] for i in range(count))}


# ---------------------------------------------------------------------------
# VLMCC.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VlmccData(_PayloadTail, Message):
    """VLMCC data: ``timestamp`` is tstamp; drift_prev in microseconds (signed); rate bit/s."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.VLMCC_DATA
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("leader_id", 32),
        _s("drift_prev", 32),
        _u("rate", 32),
    )
    leader_id: int = 0
    drift_prev: int = 0
    rate: int = 0
    payload: bytes = b""


@dataclass(frozen=True)
class VlmccAck(Message):
    """Leader's ACK: tstamp_comp is the data tstamp plus the leader's holding time."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.VLMCC_ACK
    BODY: ClassVar[tuple[WireField, ...]] = (_u("rcvr_id", 32), _u("tstamp_comp", 32))
    rcvr_id: int = 0
    tstamp_comp: int = 0


@dataclass(frozen=True)
class VlmccChallenge(Message):
    """A follower's challenge; ``rate`` first: the switch's filter compares it."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.VLMCC_CHALLENGE
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("rate", 32),
        _u("rcvr_id", 32),
        _u("rtt", 32),
        _u("win_size", 32),
    )
    rate: int = 0
    rcvr_id: int = 0
    rtt: int = 0
    win_size: int = 0


@dataclass(frozen=True)
class VlmccStart(Message):
    """Sender's answer to a challenge: names the leader and echoes the challenger's tstamp."""

    MSG_TYPE: ClassVar[MsgType] = MsgType.VLMCC_START
    BODY: ClassVar[tuple[WireField, ...]] = (
        _u("leader", 32),
        _u("rate", 32),
        _u("win_size", 32),
        _u("tstamp_comp", 32),
    )
    leader: int = 0
    rate: int = 0
    win_size: int = 0
    tstamp_comp: int = 0


def message_types() -> dict[MsgType, type[Message]]:
    """All registered message classes by type (used by docs, tests and P4 generation)."""
    return {MsgType(k): v for k, v in sorted(_REGISTRY.items())}


def body_size(cls: type[Message]) -> int:
    """Size in bytes of a message class's fixed body."""
    return cls._body_struct.size


def ts_us(now: float) -> int:
    """A clock reading in seconds as the wire's 32-bit microsecond timestamp."""
    return int(round(now * 1e6)) & 0xFFFFFFFF


def ts_diff_us(later: int, earlier: int) -> int:
    """Signed difference of two wire timestamps, correct across the 2**32 wrap."""
    d = (later - earlier) & 0xFFFFFFFF
    return d - (1 << 32) if d >= (1 << 31) else d


__all__ = [
    "COMMON_FIELDS",
    "COMMON_LEN",
    "Flags",
    "MAGIC",
    "MAX_DATAGRAM",
    "Message",
    "MsgType",
    "Proto",
    "TfmccDataFlags",
    "TfmccReportFlags",
    "WireError",
    "WireField",
    "body_size",
    "decode",
    "message_types",
    "peek_header",
    "ts_diff_us",
    "ts_us",
]
