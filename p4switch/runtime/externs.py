"""Stateful v1model externs as BMv2 implements them: registers, counters, meters."""

from __future__ import annotations

from array import array
from typing import Any, Callable, Optional, Sequence

GREEN, YELLOW, RED = 0, 1, 2


#: arrays with more cells than this keep only the cells ever written
SPARSE_ABOVE = 256


class SparseCells(dict):
    """Cells of a large array, only those ever written: a read of any other
    index gives 0 without storing it.  A switch program declares its arrays
    for the most groups, ports and sessions it could serve (``mcc.p4``:
    16,384 membership timestamps, counters for 512 ports), but a node of a
    large simulation touches a few of them, and thousands of nodes must fit
    in memory.  Callers check bounds before indexing (as the generated code
    does), so the index space is never larger than declared."""

    __slots__ = ()

    def __missing__(self, index: int) -> int:
        return 0


def _cells(size: int, width: int, signed: bool) -> Any:
    """Zeroed storage for ``size`` cells of ``width`` bits: sparse above
    ``SPARSE_ABOVE`` cells, else a machine-word ``array`` (8 bytes a cell)
    when the width fits 64 bits, else a list.  Generated code indexes all
    three the same way."""
    if size > SPARSE_ABOVE:
        return SparseCells()
    if width <= 64:
        return array("q" if signed else "Q", bytes(8 * size))
    return [0] * size


class RegisterArray:
    """``register<T>(size)``: values kept masked to the element width.

    Out-of-range reads return 0 and out-of-range writes are ignored (BMv2
    logs an error and leaves the destination unchanged; p4c's back end
    bounds-checks indices, so a well-formed program never relies on this).
    """

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self.values = _cells(size, width, signed)
        self._mask = (1 << width) - 1

    def read(self, index: int) -> int:
        if 0 <= index < self.size:
            return self.values[index]
        return 0

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            if self.signed:
                value &= self._mask
                if value >> (self.width - 1):
                    value -= 1 << self.width
            else:
                value &= self._mask
            self.values[index] = value

    def reset(self) -> None:
        self.values = _cells(self.size, self.width, self.signed)


class ObjectRegisterArray:
    """``register<S>(size)`` for a struct or header ``S``: cells hold value
    objects, copied on every read and write (registers have value semantics).
    Cells are created on first use, so a large array costs nothing up front."""

    def __init__(self, name: str, size: int, factory: Callable[[], Any]) -> None:
        self.name, self.size, self.width, self.signed = name, size, 0, False
        self._factory = factory
        self.values: dict[int, Any] = {}

    def read(self, index: int) -> Any:
        v = self.values.get(index)
        if v is None:
            return self._factory()
        return v.copy()

    def write(self, index: int, value: Any) -> None:
        if 0 <= index < self.size:
            self.values[index] = value.copy()

    def reset(self) -> None:
        self.values = {}


class CounterArray:
    """``counter(size, type)``: per-index [packets, bytes]."""

    def __init__(self, name: str, size: int, kind: str = "packets_and_bytes") -> None:
        self.name, self.size, self.kind = name, size, kind
        # 64-bit cells as BMv2's (in a dense array a count past 2**64 raises OverflowError)
        self.packets = _cells(size, 64, False)
        self.bytes = _cells(size, 64, False)

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.size:
            raise IndexError(f"counter {self.name!r} index {index} out of range [0, {self.size})")
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"counter {self.name!r} index {index} out of range [0, {self.size})")
        self.packets[index], self.bytes[index] = packets, nbytes

    def reset(self) -> None:
        self.packets = _cells(self.size, 64, False)
        self.bytes = _cells(self.size, 64, False)


class Meter:
    """One two-rate three-colour meter, BMv2's token-bucket algorithm.

    Rates are configured as ``[(cir, cburst), (pir, pburst)]`` in units per
    microsecond (BMv2's internal unit); tokens accrue from the time the rates
    were set, computed against that single origin (no drift).  The peak
    bucket is checked first: short of tokens -> RED; else its tokens are
    spent and the committed bucket is checked: short -> YELLOW, else GREEN.
    An unconfigured meter marks everything GREEN.
    """

    __slots__ = ("packets", "rates", "origin_us")

    def __init__(self, packets: bool) -> None:
        self.packets = packets
        # per bucket, in check order (peak first): [rate_per_us, burst, tokens, tokens_last, colour]
        self.rates: Optional[list[list]] = None
        self.origin_us = 0

    def set_rates(self, rates: Sequence[tuple[float, int]], now_us: int) -> None:
        if len(rates) != 2:
            raise ValueError("a two-rate meter takes [(cir, cburst), (pir, pburst)]")
        (cir, cbs), (pir, pbs) = rates
        if cir > pir:
            raise ValueError("committed rate must not exceed peak rate")
        self.rates = [[float(pir), int(pbs), int(pbs), 0, RED], [float(cir), int(cbs), int(cbs), 0, YELLOW]]
        self.origin_us = now_us

    def get_rates(self) -> list[tuple[float, int]]:
        if self.rates is None:
            return []
        return [(self.rates[1][0], self.rates[1][1]), (self.rates[0][0], self.rates[0][1])]

    def reset(self) -> None:
        self.rates = None

    def execute(self, now_us: int, nbytes: int) -> int:
        if self.rates is None:
            return GREEN
        elapsed = max(0, now_us - self.origin_us)
        need = 1 if self.packets else nbytes
        color = GREEN
        for r in self.rates:
            since = int(elapsed * r[0])
            new = since - r[3]
            if new < 0:
                new = 0
            r[3] = since
            r[2] = min(r[2] + new, r[1])
            if r[2] < need:
                color = r[4]
                break
            r[2] -= need
        return color


class MeterArray:
    """``meter(size, type)``.  Meters are created on first configuration:
    an unconfigured meter marks everything GREEN, so none is needed before."""

    def __init__(self, name: str, size: int, packets: bool) -> None:
        self.name, self.size, self.packets = name, size, packets
        self.meters: dict[int, Meter] = {}

    def execute(self, index: int, now_us: int, nbytes: int) -> int:
        m = self.meters.get(index)
        if m is None:
            return GREEN
        return m.execute(now_us, nbytes)

    def _m(self, index: int) -> Meter:
        if not 0 <= index < self.size:
            raise IndexError(f"meter {self.name!r} index {index} out of range [0, {self.size})")
        m = self.meters.get(index)
        if m is None:
            m = self.meters[index] = Meter(self.packets)
        return m

    def set_rates(self, index: int, rates: Sequence[tuple[float, int]], now_us: int) -> None:
        self._m(index).set_rates(rates, now_us)

    def set_all_rates(self, rates: Sequence[tuple[float, int]], now_us: int) -> None:
        for i in range(self.size):
            self._m(i).set_rates(rates, now_us)
