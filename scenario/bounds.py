"""The physical bounds of every time, rate, delay, queue and count in a scenario.

A figure beyond these is a typing slip (``1e300``, a dropped unit), never an
experiment, and left unchecked it runs without end or fills memory: a start
time of 1e300 s never comes, a queue of 10^12 packets is a promise of 1.5 TB.
Each bound is far above any network p4mcc models, and the error names the
field and the bound.
"""

from __future__ import annotations

from typing import Any

from p4mcc.hosts.registry import MAX_RATE_BPS  # noqa: F401 - the rate bound (100 Gb/s) has one owner

MAX_TIME_S = 86_400.0
"""Any time point or span in a run (a duration, a start, a fault's period):
a day of virtual or real time is far beyond any experiment.  (A fault's
repeats are bounded by ``faults.MAX_INSTANCES``.)"""
MAX_DELAY_S = 60.0
"""A link's one-way delay: a minute is beyond any path on Earth or to the
Moon (1.3 s), and a packet held longer outlives every protocol timer."""
MAX_QUEUE_PACKETS = 1_000_000
"""A drop-tail queue in packets: 100 Gb/s times a 120 ms round trip in
1500-byte packets, the largest buffer any rule of thumb asks for."""
MAX_QUEUE_BYTES = 1_500_000_000
"""The same queue in bytes (a million 1500-byte packets)."""
MAX_WINDOW_BYTES = 1 << 30
"""A TCP receive window: the largest window scaling can announce (RFC 7323, 2.3)."""
MAX_PACKET_RATE = 1e6
"""Packets per second a fault or a policer may name: a 100 Gb/s link
carries about 8 million full packets a second, hosts send far fewer."""
MAX_DISK_BYTES = 10**15
"""Free disk space a ``disk_full`` fault may leave: a petabyte."""
MAX_SEED = 2**64 - 1
"""A run's seed: 64 bits, what every random generator p4mcc uses takes whole."""


def too_large(value: float, bound: float, unit: str = "") -> str | None:
    """The problem with ``value`` above ``bound`` (``must be at most 60 s``), or None."""
    if value <= bound:
        return None
    shown = f"{bound:,.0f}" if bound >= 1e4 and bound == int(bound) else f"{bound:g}"
    return f"must be at most {shown}{' ' + unit if unit else ''}, got {value:.3g}"


def check(ctx: Any, path: str, value: float | None, bound: float, unit: str = "") -> bool:
    """Record on ``ctx`` that the field at ``path`` is above ``bound``; False if it is."""
    if value is None:
        return True
    why = too_large(value, bound, unit)
    if why:
        ctx.err(path, why)
    return why is None
