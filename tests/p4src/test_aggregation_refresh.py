"""The fold's refresh: an unchanged fold goes upstream again once AGG_REFRESH_US
(500 ms) has passed since the last fold went up, so a lost upstream copy, or a
sender that must hear the fold again after a timeout, cannot stall a session."""

from __future__ import annotations

from test_aggregation import R1, R2, SENDER_PORT, ack, folded, frame_of, switch
from p4src_harness import DROP_ABSORBED, counter, outputs

REFRESH_S = 0.5


def test_an_unchanged_fold_goes_up_again_only_after_the_refresh_interval():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1), now=1.0)
    m = ack(90, 12, 30, 50, R2)
    f = frame_of(m, R2)
    assert outputs(sw, 2, f, now=1.0) == [(SENDER_PORT, folded(f, m, min_cwnd=10))]   # the fold: 90
    # the same fold (say that copy was lost) within the interval: absorbed
    assert outputs(sw, 2, f, now=1.0 + REFRESH_S - 0.001) == []
    # at the interval: it goes up again, unchanged
    assert outputs(sw, 2, f, now=1.0 + REFRESH_S) == [(SENDER_PORT, folded(f, m, min_cwnd=10))]
    # the interval counts from the last fold that went up, not from the first
    assert outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1), now=1.0 + REFRESH_S + 0.2) == []
    assert counter(sw, "drop_reasons", DROP_ABSORBED) == 2


def test_a_changed_fold_restarts_the_interval():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1), now=0.0)
    outputs(sw, 2, frame_of(ack(90, 12, 30, 50, R2), R2), now=0.0)
    m = ack(95, 12, 30, 50, R2)
    f = frame_of(m, R2)
    assert outputs(sw, 2, f, now=0.4) == [(SENDER_PORT, folded(f, m, min_cwnd=10))]     # 90 -> 95
    assert outputs(sw, 2, f, now=0.8) == []                                             # 0.4 s after it
    assert outputs(sw, 2, f, now=0.9) == [(SENDER_PORT, folded(f, m, min_cwnd=10))]
