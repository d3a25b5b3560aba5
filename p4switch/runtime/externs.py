"""Stateful v1model externs as BMv2 implements them: registers, counters, meters."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

GREEN, YELLOW, RED = 0, 1, 2


class RegisterArray:
    """``register<T>(size)``: values kept masked to the element width.

    Out-of-range reads return 0 and out-of-range writes are ignored (BMv2
    logs an error and leaves the destination unchanged; p4c's back end
    bounds-checks indices, so a well-formed program never relies on this).
    """

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self.values = [0] * size
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
        self.values = [0] * self.size


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
        self.packets = [0] * size
        self.bytes = [0] * size

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
        self.packets = [0] * self.size
        self.bytes = [0] * self.size


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
    """``meter(size, type)``."""

    def __init__(self, name: str, size: int, packets: bool) -> None:
        self.name, self.size, self.packets = name, size, packets
        self.meters = [Meter(packets) for _ in range(size)]

    def execute(self, index: int, now_us: int, nbytes: int) -> int:
        if 0 <= index < self.size:
            return self.meters[index].execute(now_us, nbytes)
        return GREEN

    def _m(self, index: int) -> Meter:
        if not 0 <= index < self.size:
            raise IndexError(f"meter {self.name!r} index {index} out of range [0, {self.size})")
        return self.meters[index]

    def set_rates(self, index: int, rates: Sequence[tuple[float, int]], now_us: int) -> None:
        self._m(index).set_rates(rates, now_us)

    def set_all_rates(self, rates: Sequence[tuple[float, int]], now_us: int) -> None:
        for m in self.meters:
            m.set_rates(rates, now_us)
