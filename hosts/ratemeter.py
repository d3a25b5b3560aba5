"""Rate meters: how many bits per second arrived recently.

Two shapes the cores need:

* :class:`WindowRateMeter` -- bytes in a sliding time window (TFMCC's receive
  rate, measured over several RTTs so it is smooth but current);
* :class:`IntervalCounter` -- counts per fixed interval, read and reset at the
  interval's end (WEBRC's per-epoch RR/IRR counts, metrics per second).
"""

from __future__ import annotations

from collections import deque


class WindowRateMeter:
    """Bit rate over the last ``window`` seconds (the window may change)."""

    def __init__(self, window: float) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window}")
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()
        self._bytes = 0
        self._first: float | None = None
        self._first_bytes = 0

    def add(self, now: float, nbytes: int) -> None:
        if self._first is None:
            self._first = now
            self._first_bytes = nbytes
        self._samples.append((now, nbytes))
        self._bytes += nbytes
        self._expire(now)

    def _expire(self, now: float) -> None:
        # Keep samples newer than now - window.
        while self._samples and self._samples[0][0] <= now - self.window:
            _, b = self._samples.popleft()
            self._bytes -= b

    def rate_bps(self, now: float) -> float:
        """Bits/s over min(window, time since the first sample); 0 with no data."""
        self._expire(now)
        return self._rate(now, self._bytes)

    def peek_bps(self, now: float) -> float:
        """:meth:`rate_bps` without forgetting old samples.

        For observers (metric records): a read must not change what the
        protocol later measures, and expiring under today's window would drop
        samples a later, longer window still covers.
        """
        cutoff = now - self.window
        # Samples are in time order, so those at or before the cutoff are a
        # prefix (usually empty: add() expires as it goes); subtracting them
        # from the running total costs what they number, not the window's.
        old = 0
        for t, b in self._samples:
            if t > cutoff:
                break
            old += b
        return self._rate(now, self._bytes - old)

    def _rate(self, now: float, nbytes: int) -> float:
        if self._first is None:
            return 0.0
        span = now - self._first
        if span <= 0:
            return 0.0
        if span < self.window:
            # Young meter: the first packet opens the interval, it is not in it.
            return 8.0 * (nbytes - self._first_bytes) / span
        return 8.0 * nbytes / self.window


class IntervalCounter:
    """Packets and bytes since the last :meth:`take`."""

    def __init__(self) -> None:
        self.packets = 0
        self.bytes = 0

    def add(self, nbytes: int, packets: int = 1) -> None:
        self.packets += packets
        self.bytes += nbytes

    def take(self) -> tuple[int, int]:
        """Return (packets, bytes) and reset."""
        out = (self.packets, self.bytes)
        self.packets = 0
        self.bytes = 0
        return out
