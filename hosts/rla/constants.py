"""RLA's constants (Wang and Schwartz, SIGCOMM '98, section 3.3's numbered rules; RFC 6298 where it says "as in TCP")."""

from __future__ import annotations

#: Rule 2: a congestion period lasts ``2 * srtt_i``.
CPERIOD_RTTS = 2.0
#: Rule 3: a forced cut when the last cut is older than this many ``awnd * srtt_i``.
FORCED_CUT_RTTS = 2.0
#: Rule 3 halves the window; the paper sets no floor but the packet itself.
CUT_FLOOR = 1.0
#: Rule 6's EWMA of the interval between a receiver's signals (no gain in the paper: ours).
INTERVAL_GAIN = 0.25
#: Rule 3's ``awnd``, "a moving average of the window size", per packet ACKed by all (ours).
AWND_GAIN = 1 / 32
#: RFC 6298 5.5: the timer backs off by doubling, here at most 2**6 times.
MAX_BACKOFF = 6
