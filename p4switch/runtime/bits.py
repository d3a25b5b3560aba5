"""Bit-vector helpers with exact P4 width semantics.

Values are plain Python ints.  ``bit<W>`` values are kept in ``[0, 2**W)``;
``int<W>`` values are kept as signed Python ints in ``[-2**(W-1), 2**(W-1))``.
Every arithmetic result is brought back into range with these helpers, so
wrap-around behaves exactly like the hardware (and BMv2).
"""

from __future__ import annotations


def mask(width: int) -> int:
    """All-ones value of ``width`` bits."""
    return (1 << width) - 1


def to_signed(value: int, width: int) -> int:
    """Interpret the low ``width`` bits of ``value`` as two's complement."""
    value &= (1 << width) - 1
    if width and value >> (width - 1):
        return value - (1 << width)
    return value


def to_unsigned(value: int, width: int) -> int:
    """The ``width``-bit two's complement pattern of ``value``."""
    return value & ((1 << width) - 1)


def sat_add_u(a: int, b: int, width: int) -> int:
    """``a |+| b`` on ``bit<W>``: clamps at the maximum."""
    r = a + b
    m = (1 << width) - 1
    return m if r > m else r


def sat_sub_u(a: int, b: int, width: int) -> int:
    """``a |-| b`` on ``bit<W>``: clamps at zero."""
    r = a - b
    return 0 if r < 0 else r


def sat_add_s(a: int, b: int, width: int) -> int:
    """``a |+| b`` on ``int<W>``: clamps at both ends."""
    r = a + b
    hi = (1 << (width - 1)) - 1
    lo = -(1 << (width - 1))
    return hi if r > hi else lo if r < lo else r


def sat_sub_s(a: int, b: int, width: int) -> int:
    """``a |-| b`` on ``int<W>``."""
    return sat_add_s(a, -b, width)


def shl(value: int, amount: int, width: int) -> int:
    """``<<`` on ``bit<W>``: bits shifted past the width are lost."""
    if amount >= width:
        return 0
    return (value << amount) & ((1 << width) - 1)


def shr_s(value: int, amount: int, width: int) -> int:
    """``>>`` on ``int<W>``: arithmetic shift (Python's ``>>`` on a signed int)."""
    if amount >= width:
        return -1 if value < 0 else 0
    return value >> amount


def slice_bits(value: int, hi: int, lo: int) -> int:
    """``value[hi:lo]`` of an unsigned pattern."""
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


def set_slice(old: int, hi: int, lo: int, new: int) -> int:
    """``old`` with bits ``[hi:lo]`` replaced by the low bits of ``new``."""
    m = ((1 << (hi - lo + 1)) - 1) << lo
    return (old & ~m) | ((new << lo) & m)


def concat_bits(parts: list[tuple[int, int]]) -> tuple[int, int]:
    """Concatenate ``(value, width)`` pairs, most significant first."""
    acc = 0
    total = 0
    for value, width in parts:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    return acc, total


def bits_to_bytes(value: int, width: int) -> bytes:
    """Serialise a ``width``-bit value MSB first, padded with zero bits at
    the end to a whole number of bytes (how BMv2 builds hash inputs)."""
    pad = (-width) % 8
    return ((value & ((1 << width) - 1)) << pad).to_bytes((width + pad) // 8, "big")
