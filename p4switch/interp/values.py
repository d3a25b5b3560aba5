"""Run-time objects the generated pipeline code works on.

Struct and header values are instances of classes generated per P4 type
(see ``codegen``); this module holds the type-independent pieces: the frame
of a block instance, header stacks, the packet cursor for parsers, the
deparser's output buffer and the control-flow signals.
"""

from __future__ import annotations

from typing import Any


class Frame:
    """Parameters and locals of one running parser/control instance.

    The base of the frame class generated per instance
    (``replicas.frame_class``), whose ``__slots__`` name the attributes the
    generated code uses (``p_<name>`` for parameters, ``l<n>_<name>`` for
    locals)."""

    __slots__ = ()


class ParserError(Exception):
    """A parser exception: ``code`` is the P4 ``error`` member name.

    BMv2 records the code in ``standard_metadata.parser_error`` and hands the
    packet to ingress anyway; p4switch does the same."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class ExitSignal(Exception):
    """``exit``: ends the enclosing top-level control (raised, caught there).

    ``outs`` carries the out/inout parameter values of the action or control
    being left, so its caller still performs the copy-out the language
    requires."""

    outs: tuple = ()


class P4RuntimeFault(Exception):
    """The program did something BMv2 would refuse at run time (stack index
    out of range, ``assert`` failed, ...).  The packet is dropped and counted."""


class Stack:
    """A header stack: ``h`` the element headers, ``nxt`` BMv2's next index."""

    __slots__ = ("h", "nxt", "size")

    def __init__(self, elems: list[Any]) -> None:
        self.h = elems
        self.nxt = 0
        self.size = len(elems)

    def copy(self) -> "Stack":
        s = Stack([e.copy() for e in self.h])
        s.nxt = self.nxt
        return s

    def eq(self, other: "Stack") -> bool:
        return all(a.eq(b) for a, b in zip(self.h, other.h))

    def at(self, index: int) -> Any:
        """Element ``index``; out of range yields a detached blank header
        (reads see an invalid header, writes are lost) instead of a fault."""
        if 0 <= index < self.size:
            return self.h[index]
        return self.h[0].blank()

    def put(self, index: int, value: Any) -> None:
        """Assign element ``index`` (out of range: ignored, like ``at``)."""
        if 0 <= index < self.size:
            self.h[index] = value

    def next(self) -> Any:
        if self.nxt >= self.size:
            raise ParserError("StackOutOfBounds")
        return self.h[self.nxt]

    def last(self) -> Any:
        if self.nxt == 0:
            raise P4RuntimeFault("stack.last on an empty stack")
        return self.h[self.nxt - 1]

    def push_front(self, count: int) -> None:
        n = self.size
        count = min(count, n)
        for i in range(n - 1, count - 1, -1):
            self.h[i] = self.h[i - count]
        for i in range(count):
            e = self.h[i] = self.h[i].blank()
            e._v = False
        self.nxt = min(self.nxt + count, n)

    def pop_front(self, count: int) -> None:
        n = self.size
        count = min(count, n)
        for i in range(0, n - count):
            self.h[i] = self.h[i + count]
        for i in range(n - count, n):
            e = self.h[i] = self.h[i].blank()
            e._v = False
        self.nxt = max(self.nxt - count, 0)


class PacketIn:
    """The parser's view of the packet: bytes plus a bit cursor."""

    __slots__ = ("data", "pos", "nbits")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.nbits = len(data) * 8

    def take(self, n: int) -> int:
        """The next ``n`` bits as an unsigned int; advances the cursor."""
        pos = self.pos
        end = pos + n
        if end > self.nbits:
            raise ParserError("PacketTooShort")
        self.pos = end
        if n == 0:
            return 0
        b0 = pos >> 3
        b1 = (end + 7) >> 3
        v = int.from_bytes(self.data[b0:b1], "big")
        return (v >> ((b1 << 3) - end)) & ((1 << n) - 1)

    def peek(self, n: int) -> int:
        pos = self.pos
        v = self.take(n)
        self.pos = pos
        return v

    def advance(self, n: int) -> None:
        if self.pos + n > self.nbits:
            raise ParserError("PacketTooShort")
        self.pos += n

    def payload(self) -> bytes:
        return self.data[(self.pos + 7) >> 3 :]


class PacketOut:
    """The deparser's output: emitted bits accumulated MSB first."""

    __slots__ = ("acc", "n")

    def __init__(self) -> None:
        self.acc = 0
        self.n = 0

    def put(self, value: int, width: int) -> None:
        self.acc = (self.acc << width) | value
        self.n += width

    def to_bytes(self) -> bytes:
        pad = (-self.n) % 8
        return (self.acc << pad).to_bytes((self.n + pad) >> 3, "big")


class PacketCtx:
    """Per-packet side state the externs read and write (BMv2 keeps these in
    packet registers): clone/resubmit/recirculate requests, truncation,
    digests, checksum error, time and lengths."""

    __slots__ = (
        "now_us", "length", "payload", "clone", "resubmit", "recirculate",
        "truncate", "digests", "checksum_error", "dm_color", "log_on", "log",
    )

    def __init__(self) -> None:
        self.log_on = False
        self.log: Any = None
        self.digests: list = []
        self.reset(0, 0, b"")

    @staticmethod
    def fmt(fmt: str, data: Any) -> str:
        """``log_msg`` formatting: each ``{}`` takes the next value of ``data``."""
        if data is None:
            return fmt
        vals = list(data) if isinstance(data, tuple) else [data]
        out, i = [], 0
        parts = fmt.split("{}")
        for k, part in enumerate(parts):
            out.append(part)
            if k < len(parts) - 1:
                out.append(str(vals[i]) if i < len(vals) else "{}")
                i += 1
        return "".join(out)

    def reset(self, now_us: int, length: int, payload: bytes) -> None:
        self.now_us = now_us
        self.length = length
        self.payload = payload
        self.clone: Any = None  # (session, field_list or None)
        self.resubmit: Any = None  # field list index or -1
        self.recirculate: Any = None
        self.truncate = 0
        if self.digests:  # a fresh list only when the last packet used it
            self.digests = []
        self.checksum_error = False
        self.dm_color = 0
