"""WEBRC's receiver constants (paper sections and appendix; RFC 3738 where the paper is silent; sources: ``docs/protocols/webrc.md``)."""

from __future__ import annotations

ARTT_ALPHA = 0.25  # appendix: ARTT's "small, fixed smoothing constant"
LOSS_EPOCH_BETA = 0.025  # appendix: first-stage EWMA of the loss per epoch (2·TSD)
LOSS_DELTA = 0.125  # appendix: the F estimator's δ (ours: ~8 events, as TFRC)
RATE_EWMA = 0.25  # appendix: fixed averaging fraction of ARR and TRR per epoch
RR_LAG_MARGIN = 0.1  # 3.2: RR stays "close to" ARR in start-up
RR_LAG_MIN_PACKETS = 20.0  # 3.2: RR lag judged only on epochs this full (ours)
MRTT_JUMP_GAPS = 2.0  # 3.2: an MRTT increase is "large" beyond this many gaps ...
MRTT_JUMP_MIN = 0.02  # ... and this many seconds (ours)
TRR_HEADROOM = 0.02  # eq. 5: tolerance on Γ·TRR for noise (ours)
OVERFLOW_MARGIN = 0.1  # 3.3: RR this far below its maximum since the join allows a join
SSR_FACTOR = 0.5  # 3.1-3.2: SSR ∝ TRR at a loss; 0.5 as TCP's ssthresh (RFC 5681 eq. 4)
JOIN_TIMEOUT_MIN = 1.0  # join timeout floor, s (RFC 3738 3.2.3.7; value ours)
