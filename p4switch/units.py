"""Quantities with units: link rates, delays, sizes and loss fractions.

The one reader of ``10Mbps``, ``20ms``, ``64KiB`` and ``1%`` for every part of
p4mcc: scenario files (:mod:`scenario.model`, :mod:`scenario.shapes`,
:mod:`scenario.faults`) and the switch's link emulation flags and port-config
files (:mod:`p4switch.linkemu`).  It lives at the bottom of the package order
(``p4switch`` imports nothing of p4mcc above it) so both can use it.  Rates are
bit/s in powers of ten (``1Mbps`` = 1e6 bit/s, as tc and Mininet read them).
"""

from __future__ import annotations

import math
import re
from typing import Any

RATE_UNITS = {
    "bps": 1.0, "bit": 1.0, "b": 1.0,
    "kbps": 1e3, "kbit": 1e3, "k": 1e3,
    "mbps": 1e6, "mbit": 1e6, "m": 1e6,
    "gbps": 1e9, "gbit": 1e9, "g": 1e9,
}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
SIZE_UNITS = {
    "b": 1, "": 1, "kb": 1000, "mb": 1000_000, "kib": 1024, "mib": 1024 * 1024,
    "k": 1000, "m": 1000_000,
}
_NUM_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z%]*)\s*$")


def split_unit(value: Any) -> tuple[float, str]:
    """``'10Mbps'`` -> ``(10.0, 'mbps')``; a bare number has unit ``''``.

    Infinity and NaN (YAML's ``.inf``/``.nan``, ``1e400``) are refused: a
    NaN delay or an infinite start time would otherwise reach the
    simulator's clock and the run would print numbers that mean nothing.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    num: float | None = None
    unit = ""
    try:
        if isinstance(value, (int, float)):
            num = float(value)
        elif isinstance(value, str):
            m = _NUM_UNIT.match(value)
            if m:
                num, unit = float(m.group(1)), m.group(2).lower()
    except OverflowError:
        num = math.inf
    if num is None:
        raise ValueError(f"cannot read {value!r} as a number with a unit")
    if not math.isfinite(num):
        raise ValueError(f"{value!r} is not a finite number")
    return num, unit


def parse_rate(value: Any, what: str = "rate") -> float:
    """``'10Mbps'``, ``'1Gbit'``, ``'500kbps'``, ``'1.5m'`` or a number of bit/s."""
    num, unit = split_unit(value)
    if unit == "":
        return num
    if unit not in RATE_UNITS:
        raise ValueError(f"unknown {what} unit {unit!r} in {value!r} (use bps, kbps, Mbps, Gbps)")
    return num * RATE_UNITS[unit]


def parse_time(value: Any, bare_unit: str = "s", what: str = "time") -> float:
    """``'20ms'``, ``'5us'``, ``'1.5s'``, or a number in ``bare_unit``."""
    num, unit = split_unit(value)
    unit = unit or bare_unit
    if unit not in TIME_UNITS:
        raise ValueError(f"unknown {what} unit {unit!r} in {value!r} (use s, ms, us)")
    return num * TIME_UNITS[unit]


def parse_fraction(value: Any) -> float:
    """``'1%'``, ``0.01``: a probability in [0, 1]."""
    num, unit = split_unit(value)
    if unit == "%":
        num /= 100.0
    elif unit:
        raise ValueError(f"unknown unit {unit!r} in {value!r} (use a fraction or %)")
    if not 0.0 <= num <= 1.0:
        raise ValueError(f"{value!r} is not a probability in [0, 1]")
    return num


def parse_size(value: Any) -> int:
    """``'150KB'``, ``'64KiB'``, ``1500``: bytes."""
    num, unit = split_unit(value)
    if unit not in SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (use B, KB, KiB, MB, MiB)")
    return int(num * SIZE_UNITS[unit])
