"""MTCP's constants (Rhee, Balaguru, Rouskas 2002; section numbers are the paper's, RFC 6298 and 5681 where it points to TCP)."""

from __future__ import annotations

from p4mcc.hosts.tcp_rules import DUPTHRESH, INITIAL_RTO, MIN_RTO

#: 3.1: ACKs are "delayed for a few tens of milliseconds" (s); the lower end.
ACK_DELAY = 0.02
#: 3.1: "at the beginning of transmission or after a RTO expiration, an SA sets its cwnd to one".
INITIAL_CWND = 1
#: Slow start's first threshold (packets): RFC 5681 3.1's "arbitrarily high"; the paper names none.
INITIAL_SSTHRESH = 4096.0
#: 2: "several consecutive duplicate NACKs" shrink cwnd; TCP's three duplicate ACKs.
DUP_NACKS = DUPTHRESH
#: 3.3: an SA polls each child every 2 s (s).
PROBE_INTERVAL = 2.0
#: 3.9: a receiver silent this long sends a window update (s); the period grows by the step.
WUPDATE_INITIAL = 0.5
WUPDATE_STEP = 1.0
#: 3.6: the retransmission window starts at one packet, as cwnd does.
INITIAL_RWND = 1.0
#: 3.4 ("techniques employed by TCP"): RFC 6298's timeout before a sample and its floor (s).
RTO_INITIAL = INITIAL_RTO
RTO_MIN = MIN_RTO
#: ``min_cwnd`` a leaf reports: it has no window, so it never limits the minimum.
NO_CWND = 0xFFFFFFFF
#: The child id under which the sender keeps switch-folded summaries (no host has id 0).
FOLD_ID = 0
#: Unanswered probes before a child is dead (p4mcc: the paper polls but has no death rule).
DEAD_PROBES = 3
#: Shortest wait for a probe's answer (s): a busy host may be descheduled this long.
PROBE_ANSWER_MIN = 0.1
#: A NACK-only receiver names a hole again after this many NACK-to-repair times, or this long before a sample.
NACK_HOLDOFF_RTTS = 2.0
NACK_HOLDOFF_INITIAL = 0.25
