"""What the congestion stamps of recent data packets say (docs/stamp.md).

A rule that reads the stamp folds every data packet's stamp into a
:class:`StampWindow` and reads it once per decision (a WEBRC epoch, a TFMCC
report): one packet's queue code is that packet's wait, not an average, so
a decision reads the worst queue code and the tightest spare code of the
window, and whether *every* packet in it was stamped.  A window with an
unstamped packet, or with none, says nothing: the rules then run their
``default`` behaviour (docs/stamp.md, need (d)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4mcc.hosts.wire import COMMON_FIELDS, MAGIC, MsgType, Share, Stamp

#: A stamped queue is short below ``SHORT_QUEUE_RTT`` of the round trip or
#: ``SHORT_QUEUE_S``: the one bound every protocol's stamp rules read.
SHORT_QUEUE_RTT, SHORT_QUEUE_S = 0.1, 0.004


def short_queue(queue_s: float | None, rtt: float) -> bool:
    """Whether a stamped queue of ``queue_s`` seconds (None: not stamped) is short on a round trip of ``rtt``."""
    return queue_s is not None and queue_s < max(SHORT_QUEUE_S, SHORT_QUEUE_RTT * rtt)


@dataclass
class StampWindow:
    """The stamps of the data packets since the last :meth:`reset`."""

    packets: int = 0
    unstamped: int = 0
    q_max: int = 0
    s_min: int = 15
    #: Smallest share code seen; 0 once a packet came without one.
    share_min: int = 255

    def add(self, stamp: int, share: int = Share.NONE) -> None:
        """Fold one data packet's stamp byte and share code."""
        self.packets += 1
        self.share_min = Share.combine_echo(self.share_min, share)
        if not Stamp.stamped(stamp):
            self.unstamped += 1
            return
        self.q_max = max(self.q_max, Stamp.queue_code(stamp))
        self.s_min = min(self.s_min, Stamp.spare_code(stamp))

    @property
    def stamped(self) -> bool:
        """Every packet of a non-empty window was stamped."""
        return self.packets > 0 and self.unstamped == 0

    def queue_s(self) -> float | None:
        """Lower bound of the worst queueing delay seen, seconds (None: not stamped)."""
        return Stamp.queue_delay_s(Stamp.pack(self.q_max, self.s_min)) if self.stamped else None

    def spare_bps(self) -> float | None:
        """Lower bound of the tightest spare rate seen, bit/s (None: not stamped)."""
        return Stamp.spare_bps(Stamp.pack(self.q_max, self.s_min)) if self.stamped else None

    def share_code(self) -> int:
        """The window's share code (0: not every packet stamped and carrying a share)."""
        return self.share_min if self.stamped else Share.NONE

    def share_bps(self) -> float | None:
        """The smallest share any packet of the window carried, bit/s (None: missing)."""
        return Share.bps(self.share_code())

    def byte(self) -> int:
        """The window as one stamp byte (0: not stamped), for feedback that carries it back."""
        return Stamp.pack(self.q_max, self.s_min) if self.stamped else Stamp.NOT_STAMPED

    def take(self) -> int:
        """The window's byte for a feedback message, and a fresh window: each
        echo speaks for the data since the previous one (docs/stamp.md)."""
        byte = self.byte()
        self.reset()
        return byte

    def reset(self) -> None:
        self.packets = self.unstamped = self.q_max = 0
        self.s_min = 15
        self.share_min = 255


class StampEcho:
    """A receiver's ``stamp_echo``: the stamp and share of every data message of
    the session are folded into :attr:`stamps` as it is decoded, and each
    feedback message carries back :meth:`_echo_stamp`, the window of the data
    since the previous one, in its stamp byte, and that window's share in its
    share byte (written as a message with that stamp byte is sent, so the
    protocols' feedback code names only the stamp; an unstamped echo carries
    no share)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stamps = StampWindow()
        #: (stamp byte, share code) of the last window taken: feedback sent with that
        #: stamp byte (a VLMCC leader's ACKs of one flush share one) carries that share
        self._share_echo: tuple[int, int] | None = None

    def decode_session(self, data: bytes, session_id: int, *kinds: type) -> Any:
        msg = super().decode_session(data, session_id, *kinds)  # type: ignore[misc]
        if msg is not None and msg.MSG_TYPE & 0x0F == _DATA:
            self.stamps.add(msg.stamp, msg.share)
        return msg

    def _echo_stamp(self) -> int:
        share = self.stamps.share_code()
        stamp = self.stamps.take()
        self._share_echo = (stamp, share) if stamp != Stamp.NOT_STAMPED else None
        return stamp

    def send(self, dest: Any, data: bytes) -> None:
        echo = self._share_echo
        if (echo is not None and isinstance(data, (bytes, bytearray)) and _is_feedback(data)
                and data[_STAMP_AT] == echo[0]):
            data = bytes(data[:_SHARE_AT]) + bytes([echo[1]]) + bytes(data[_SHARE_AT + 1:])
        super().send(dest, data)  # type: ignore[misc]


def _is_feedback(data: bytes | bytearray) -> bool:
    """A p4mcc message that is not data (feedback), long enough for its share byte."""
    return (len(data) > _SHARE_AT and data[0] == _MAGIC_HI and data[1] == _MAGIC_LO
            and data[4] & 0x0F != _DATA)


def fold_stamp(windows: dict, key: object, payload: bytes) -> None:
    """Fold the stamp of a received p4mcc *data* message into ``windows[key]``.

    The engines' own stamp measurement (``reporting.results.STAMP_QUEUE``):
    every other payload, and every other p4mcc message (switches stamp only
    data, docs/stamp.md), is ignored, so a window says what the data saw.
    """
    if len(payload) >= 5 and payload[0] == _MAGIC_HI and payload[1] == _MAGIC_LO and payload[4] & 0x0F == _DATA:
        w = windows.get(key)
        if w is None:
            w = windows[key] = StampWindow()
        w.add(payload[3])


#: The common header's magic, and the low nibble every data message type has (hosts/wire.py).
_MAGIC_HI, _MAGIC_LO = MAGIC >> 8, MAGIC & 0xFF
#: Offsets of the stamp and share bytes in the common header.
_STAMP_AT, _SHARE_AT = (sum(f.bits for f in COMMON_FIELDS[:[f.name for f in COMMON_FIELDS].index(name)]) // 8
                        for name in ("stamp", "share"))
_DATA = MsgType.TFMCC_DATA & 0x0F
assert all(t & 0x0F == _DATA for t in MsgType if t.name.endswith("_DATA"))
