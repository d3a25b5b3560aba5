"""What the C emitter's parts share: the refusal, control-flow flags and a
function body under construction."""

from __future__ import annotations

from typing import Any


class NativeUnsupported(Exception):
    """A construct the C emitter does not cover (the interpreter runs the program)."""

    def __init__(self, what: str, node: Any = None) -> None:
        span = getattr(node, "span", None)
        super().__init__(f"{what}" + (f" at {span}" if span is not None else ""))


STOP_EXIT, STOP_PERR, STOP_FAULT = 1, 2, 4
KINDS = {"exact": 0, "lpm": 1, "ternary": 2, "range": 3, "optional": 4}
#: standard metadata the traffic manager stamps (switch.py ``_stamp_egress``)
QUEUE = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth")
#: ports of a switch's queue table (``NativeSwitch.queue_table``): every
#: 9-bit v1model port
QTABLE_PORTS = 512


class Body:
    """Lines of one C function being generated."""

    def __init__(self, ind: int = 1) -> None:
        self.lines: list[str] = []
        self.ind = ind
        self.ret = "return;"

    def emit(self, s: str) -> None:
        self.lines.append("    " * self.ind + s)

    def sub(self) -> "Body":
        b = Body(self.ind + 1)
        b.ret = self.ret
        return b


def _pure(x: str) -> bool:
    return x.replace("_", "a").replace("ULL", "").isalnum()
