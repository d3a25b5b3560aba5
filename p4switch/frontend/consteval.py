"""Compile-time arithmetic with P4_16's exact width semantics.

Shared by the type checker (constant folding) so that a folded expression
has the value the target would compute at run time: unsigned results wrap
modulo 2^W, signed ones wrap in two's complement, saturating operators clamp.
"""

from __future__ import annotations

from typing import Optional

from .types import BitsType, IntType, P4Type


def wrap(value: int, t: P4Type) -> int:
    """Reduce ``value`` to the range of ``t`` (no-op for infinite precision)."""
    if isinstance(t, BitsType):
        w = t.width
        if w == 0:
            return 0
        value &= (1 << w) - 1
        if t.signed and value >= 1 << (w - 1):
            value -= 1 << w
    return value


def saturate(value: int, t: P4Type) -> int:
    if isinstance(t, BitsType):
        w = t.width
        if t.signed:
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        else:
            lo, hi = 0, (1 << w) - 1
        return max(lo, min(hi, value))
    return value


def binary(op: str, a: int, b: int, t: P4Type) -> Optional[int]:
    """Fold ``a op b`` for an arithmetic/bitwise operator at type ``t``.
    Returns None when the operation is undefined (division by zero)."""
    if op == "+":
        return wrap(a + b, t)
    if op == "-":
        return wrap(a - b, t)
    if op == "*":
        return wrap(a * b, t)
    if op in ("/", "%"):
        if b == 0:
            return None
        if a < 0 or b < 0:
            return None  # P4_16 defines / and % only for non-negative operands
        return wrap(a // b if op == "/" else a % b, t)
    if op == "&":
        return wrap(a & b, t)
    if op == "|":
        return wrap(a | b, t)
    if op == "^":
        return wrap(a ^ b, t)
    if op == "|+|":
        return saturate(a + b, t)
    if op == "|-|":
        return saturate(a - b, t)
    if op == "<<":
        if isinstance(t, BitsType) and b >= t.width:
            return 0
        return wrap(a << b, t)
    if op == ">>":
        if isinstance(t, BitsType):
            if not t.signed:
                a = wrap(a, t)
            if b >= t.width:
                return -1 if a < 0 else 0
        return wrap(a >> b, t)
    return None


def compare(op: str, a: int, b: int) -> bool:
    return {
        "==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
    }[op]


def fits(value: int, t: P4Type) -> bool:
    """Whether ``value`` is representable in ``t`` without wrapping."""
    if isinstance(t, IntType):
        return True
    if isinstance(t, BitsType):
        w = t.width
        if t.signed:
            return -(1 << (w - 1)) <= value < (1 << (w - 1)) if w else value == 0
        return 0 <= value < (1 << w)
    return False
