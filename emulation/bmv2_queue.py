"""BMv2's own egress queue as the bottleneck queue of a shaped link.

On BMv2 the link's rate is enforced by a shaper after the switch (the
kernel's htb or the link process, :mod:`emulation.shaping`).  Left alone,
BMv2's traffic manager drains each port as fast as the switch forwards, so
the link's standing queue forms in the shaper and v1model's queue metadata
(``deq_timedelta``, ``enq_qdepth``) read near zero: the congestion stamp
(docs/stamp.md) would never see the bottleneck.

simple_switch can rate-limit and bound each egress queue itself
(``set_egress_queue_rate`` in packets/s, ``set_egress_queue_depth`` in
packets, over its Thrift runtime service).  Its limiter spaces departures
a fixed 1/rate apart, whatever their size, so it cannot replace a shaper
that counts bytes.  The arrangement here:

* BMv2's queue for the port gets the link's depth (packets) and a rate of
  link rate / (8 x :data:`FRAME_BYTES`) packets/s, the largest Ethernet
  frame of a 1500-byte MTU.  No frame can leave BMv2 faster than the link's
  rate in bits, so a standing queue forms in BMv2 (not in the shaper) and
  ``deq_timedelta`` is the packet's wait at the bottleneck.  TCP's segments
  and p4mcc's data packets (payloads of 1438-1460 bytes) are full-size
  frames, so they cross at the link's rate.
* The shaper stays as it is, at the link's exact rate in bytes: it is the
  byte-accurate limit, and it idles (one frame at most) behind BMv2's queue.

The price: frames smaller than a full frame leave BMv2 at the same packet
rate, so a direction carrying mostly small frames (ACKs, feedback) is
limited to that packet rate (825 packets/s at 10 Mb/s) rather than to the
bits.  The ACKs of a flow that fills the forward direction need at most one
per segment, which is the same packet rate, so TCP is not held back.

Pure planning (:func:`plan_queues`) plus a minimal client of simple_switch's
Thrift service (binary protocol, multiplexed service ``simple_switch``):
two calls need no generated code and no Thrift dependency.
"""

from __future__ import annotations

import math
import socket
import struct
from dataclasses import asdict, dataclass
from typing import Container, Iterable

from p4mcc.hosts import wire

#: The frame whose departure spacing BMv2's packet-rate limiter is set for:
#: a 1500-byte IP packet plus its 14-byte Ethernet header (what htb counts).
FRAME_BYTES = wire.ETHERNET_MAX_FRAME
#: BMv2's egress queue depth when the link has no queue limit of its own
#: (the kernel path's pfifo uses the same bound).
UNBOUNDED_DEPTH = 1000
#: simple_switch's Thrift service name in its multiplexed processor.
SERVICE = "simple_switch"
THRIFT_TIMEOUT_S = 5.0


class Bmv2QueueError(RuntimeError):
    """BMv2's Thrift service refused or did not answer; the message names the switch and port."""


@dataclass(frozen=True)
class QueueSetting:
    """BMv2's egress queue for one shaped port (part of a summary.json ``links`` row)."""

    switch: str
    port: int
    depth_packets: int
    rate_pps: int
    frame_bytes: int = FRAME_BYTES

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def queue_setting(switch: str, port: int, rate_bps: float, queue_packets: int | None,
                  queue_bytes: int | None) -> QueueSetting:
    """BMv2's queue for an egress direction of ``rate_bps`` with the link's queue.

    The rate is rounded down (never faster than the link for a full frame);
    a byte limit becomes the number of full frames it holds, and with both
    limits the tighter one counts.
    """
    rate_pps = max(1, math.floor(rate_bps / (8 * FRAME_BYTES)))
    limits = [queue_packets] if queue_packets is not None else []
    if queue_bytes is not None:
        limits.append(max(1, queue_bytes // FRAME_BYTES))
    depth = min(limits) if limits else UNBOUNDED_DEPTH
    return QueueSetting(switch, port, depth, rate_pps)


def plan_queues(directions: Iterable[object],
                exact_replication: Container[str] | None = None) -> dict[tuple[str, int], QueueSetting]:
    """(switch, port) -> BMv2 queue setting for every rate-shaped egress direction.

    ``directions`` are :class:`emulation.shaping.Direction` values; an
    ingress direction (host to switch) is shaped before BMv2 and has no BMv2
    egress queue of its own.  ``exact_replication`` (None: every switch)
    names the switches whose multicast copies go to member ports only
    (``controller.desired.port_set_groups``): elsewhere egress prunes copies
    that have already passed the egress queue, so a bottleneck's queue there
    would fill with copies nobody receives, and it stays in the shaper.
    """
    out: dict[tuple[str, int], QueueSetting] = {}
    for d in directions:
        rate = getattr(d, "rate_bps")
        if getattr(d, "direction") != "egress" or not getattr(d, "rate_shaped"):
            continue
        sw, port = getattr(d, "switch"), getattr(d, "port")
        if exact_replication is not None and sw not in exact_replication:
            continue
        out[(sw, port)] = queue_setting(sw, port, rate, getattr(d, "queue_packets"), getattr(d, "queue_bytes"))
    return out


# --- Thrift binary protocol, just enough for i32/i64 arguments and an i32 result ---

_VERSION_1 = 0x80010000
_CALL, _REPLY, _EXCEPTION = 1, 2, 3
_T_STOP, _T_I32, _T_I64, _T_STRING, _T_STRUCT = 0, 8, 10, 11, 12


def encode_call(method: str, args: list[tuple[int, int]], seqid: int = 1) -> bytes:
    """A strict binary-protocol CALL of ``SERVICE:method`` with (thrift type, value) arguments."""
    name = f"{SERVICE}:{method}".encode()
    out = struct.pack("!II", _VERSION_1 | _CALL, len(name)) + name + struct.pack("!i", seqid)
    for field_id, (ttype, value) in enumerate(args, start=1):
        out += struct.pack("!bh", ttype, field_id)
        out += struct.pack("!i" if ttype == _T_I32 else "!q", value)
    return out + struct.pack("!b", _T_STOP)


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def take(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise Bmv2QueueError("connection closed mid-reply")
            buf += chunk
        return buf

    def i32(self) -> int:
        return struct.unpack("!i", self.take(4))[0]

    def string(self) -> str:
        return self.take(self.i32()).decode(errors="replace")

    def skip(self, ttype: int) -> object:
        if ttype == _T_I32:
            return self.i32()
        if ttype == _T_I64:
            return struct.unpack("!q", self.take(8))[0]
        if ttype == _T_STRING:
            return self.string()
        if ttype == _T_STRUCT:
            return self.struct()
        size = {2: 1, 3: 1, 4: 8, 6: 2}.get(ttype)
        if size is None:
            raise Bmv2QueueError(f"unexpected Thrift type {ttype} in reply")
        return self.take(size)

    def struct(self) -> dict[int, object]:
        fields: dict[int, object] = {}
        while True:
            ttype = self.take(1)[0]
            if ttype == _T_STOP:
                return fields
            (fid,) = struct.unpack("!h", self.take(2))
            fields[fid] = self.skip(ttype)


def decode_reply(reader: _Reader, method: str) -> int:
    """The i32 result of a REPLY, or :class:`Bmv2QueueError` with the server's exception message."""
    head = reader.i32()
    if head & 0xFFFF0000 != _VERSION_1:
        raise Bmv2QueueError(f"{method}: not a Thrift binary-protocol reply")
    mtype = head & 0xFF
    reader.string()
    reader.i32()
    body = reader.struct()
    if mtype == _EXCEPTION:
        raise Bmv2QueueError(f"{method}: {body.get(1, 'refused')}")
    if mtype != _REPLY or not isinstance(body.get(0), int):
        raise Bmv2QueueError(f"{method}: reply without a result")
    return int(body[0])  # type: ignore[arg-type]


def call(host: str, port: int, method: str, args: list[tuple[int, int]],
         timeout: float = THRIFT_TIMEOUT_S) -> int:
    """One call to simple_switch's runtime service; its i32 result (0: done)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_call(method, args))
        return decode_reply(_Reader(sock), method)


def apply(setting: QueueSetting, thrift_host: str, thrift_port: int) -> None:
    """Set BMv2's egress queue depth and rate for one port."""
    for method, args in (("set_egress_queue_depth", [(_T_I32, setting.port), (_T_I32, setting.depth_packets)]),
                         ("set_egress_queue_rate", [(_T_I32, setting.port), (_T_I64, setting.rate_pps)])):
        try:
            rc = call(thrift_host, thrift_port, method, args)
        except OSError as e:
            raise Bmv2QueueError(f"{setting.switch} port {setting.port}: {method} over Thrift "
                                 f"{thrift_host}:{thrift_port}: {e}") from None
        if rc != 0:
            raise Bmv2QueueError(f"{setting.switch} port {setting.port}: {method} returned {rc}")
