"""The share estimate's control-plane facts (``p4src/include/share.p4``).

The program estimates each rated port's max-min fair share per epoch on the
eighth-octave scale of :class:`p4mcc.hosts.wire.Share`; dividing by the
heavy-flow count is subtracting its log there.  The logs it cannot compute
(of the heavy-flow count, and linear counting's collision correction) come
from two tables the controller writes with :func:`heavy_log_entries` and
:func:`spread_log_entries`; the epoch of each port, from :func:`epoch_shift`
of the longest round trip through its switch (:func:`longest_rtt_s`).

The switch side of every formula is in ``share.p4``; this module owns the
numbers both must agree on, and the tests compute their expectations here.
"""

from __future__ import annotations

import math
from typing import Iterator

import networkx as nx

from p4mcc.controller.topology import Topology

#: Flow slots per port (``SHARE_SLOTS`` in ``p4src/include/defs.p4``).
SLOTS = 256
#: Ports 0 .. PORTS-1 estimate a share (``SHARE_PORTS``).
PORTS = 64
#: An epoch is WINDOW_S * 2**shift (``STAMP_WINDOW_US``).
WINDOW_S = 25.6e-3
#: Shifts the controller writes: 102.4 ms (so a 1 Mb/s port sees a few
#: packets of each flow per epoch) to 1.6384 s (``SHARE_MAX_SHIFT``).
MIN_SHIFT = 2
MAX_SHIFT = 6


def log8(x: float) -> int:
    """8 log2 x rounded to the nearest integer (0 for x <= 1)."""
    return 0 if x <= 1 else int(round(8 * math.log2(x)))


def floor_log8(x: int) -> int:
    """floor(8 log2 x) for an integer x >= 1, exactly (share.p4's ``Log8``); 0 for x = 0."""
    if x <= 0:
        return 0
    return (x**8).bit_length() - 1


def linear_count(k: int, m: int = SLOTS) -> float:
    """Flows behind ``k`` of ``m`` slots in use (Whang et al.'s linear counting,
    -m ln(1 - k/m)); a full table counts as m ln(2m), the estimate's usual cap."""
    if k <= 0:
        return 0.0
    if k >= m:
        return m * math.log(2 * m)
    return -m * math.log(1 - k / m)


def heavy_log_entries(m: int = SLOTS) -> Iterator[tuple[int, int, int]]:
    """(heavy slots h, 8 log2 max(h, 1), 8 log2 (h + 1)) for h in 0..m."""
    for h in range(m + 1):
        yield h, log8(max(h, 1)), log8(h + 1)


def spread_log_entries(m: int = SLOTS) -> Iterator[tuple[int, int]]:
    """(slots in use k, 8 log2 (flows per slot in use)) for k in 0..m."""
    for k in range(m + 1):
        yield k, (log8(linear_count(k, m) / k) if k else 0)


def estimated_heavy(h: int, k: int, m: int = SLOTS) -> float:
    """Heavy flows behind ``h`` heavy slots when ``k`` slots are in use: each slot
    in use holds linear_count(k)/k flows on average, heavy ones as much as light."""
    if h == 0 or k == 0:
        return float(h)
    return h * linear_count(k, m) / k


def epoch_shift(rtt_s: float) -> int:
    """The smallest shift whose epoch spans ``rtt_s``, within MIN_SHIFT..MAX_SHIFT."""
    shift = MIN_SHIFT
    while shift < MAX_SHIFT and WINDOW_S * 2**shift < rtt_s:
        shift += 1
    return shift


def longest_rtt_s(topo: Topology, switch: str) -> float:
    """An upper bound of the round trip of any host-to-host path through ``switch``
    over links' delays: twice the sum of its two longest delays to a host
    (a path through it goes out to one host and to another)."""
    dist = nx.single_source_dijkstra_path_length(
        topo.graph, switch, weight=lambda a, b, d: d["link"].delay_ms if "link" in d else 0.0)
    far = sorted((d for node, d in dist.items() if node in topo.hosts), reverse=True)[:2]
    return 2 * sum(far) / 1e3
