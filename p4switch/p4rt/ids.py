"""P4Runtime object ids: the spec's 8-bit type prefixes and p4c's hashing.

A P4Info id is ``prefix << 24 | suffix``.  The prefix names the kind of
object (``P4Ids.Prefix`` in p4info.proto).  p4c derives the 24-bit suffix
from the object's fully qualified name with Bob Jenkins' one-at-a-time hash,
so ids stay stable when unrelated objects are added; on a collision it tries
the next suffix.  An ``@id(N)`` annotation fixes the id (the prefix is added
when N fits in 24 bits).  Reproducing the scheme means a controller written
against p4c's P4Info sees the same ids from the built-in front end.
"""

from __future__ import annotations

from enum import IntEnum


class Prefix(IntEnum):
    """``p4.config.v1.P4Ids.Prefix``."""

    ACTION = 0x01
    TABLE = 0x02
    VALUE_SET = 0x03
    CONTROLLER_HEADER = 0x04
    ACTION_PROFILE = 0x11
    COUNTER = 0x12
    DIRECT_COUNTER = 0x13
    METER = 0x14
    DIRECT_METER = 0x15
    REGISTER = 0x16
    DIGEST = 0x17


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32-bit), as p4c uses for P4Info ids."""
    h = 0
    for b in data:
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def prefix_of(obj_id: int) -> int:
    return (obj_id >> 24) & 0xFF


class IdAllocator:
    """Assigns unique ids: fixed ``@id`` values first, then hashed names.

    Call :meth:`reserve` for every ``@id`` before :meth:`assign` so a hashed
    id never takes a value a programmer fixed.
    """

    def __init__(self) -> None:
        self.used: set[int] = set()

    def reserve(self, prefix: Prefix, fixed: int) -> int:
        obj_id = fixed if fixed >> 24 else (prefix << 24) | fixed
        if prefix_of(obj_id) != prefix:
            raise ValueError(f"@id({fixed}) has prefix {prefix_of(obj_id):#x}, expected {int(prefix):#x}")
        if obj_id in self.used:
            raise ValueError(f"@id({fixed}) is used twice")
        self.used.add(obj_id)
        return obj_id

    def assign(self, prefix: Prefix, name: str) -> int:
        suffix = jenkins_one_at_a_time(name.encode()) & 0xFFFFFF
        for _ in range(1 << 24):
            obj_id = (prefix << 24) | suffix
            if obj_id not in self.used and suffix != 0:
                self.used.add(obj_id)
                return obj_id
            suffix = (suffix + 1) & 0xFFFFFF
        raise ValueError(f"no free id left for prefix {int(prefix):#x}")
