"""What the window protocols take from TCP, each rule and number written once.

RLA, MTCP and VLMCC each behave like TCP in places their papers leave open
or point to TCP for.  The facts they share live here, with their source;
each protocol's parameters default to these (under the protocol's own
parameter names) and its page in ``docs/protocols/`` says where it uses them:

* RFC 6928's initial window, :data:`INITIAL_WINDOW` packets, where a
  window protocol's slow start begins (the simulator's TCP's and Linux's).
* RFC 6298's retransmission timer: :data:`INITIAL_RTO` before any sample
  (2.1) and the :data:`MIN_RTO` floor it recommends on the Internet (2.4).
  The estimator that runs them is :class:`hosts.rtt.SmoothedRtt`.
* RFC 5681's halving: ssthresh never falls below :data:`LEAST_SSTHRESH`
  segments (eq. 4), and fast recovery ends with cwnd at ssthresh (3.2), so
  a loss leaves at least that window; only a timeout leaves one segment.
* RFC 5681's loss rule: a packet is lost once :data:`DUPTHRESH` packets
  sent after it are acknowledged (three duplicate ACKs, 3.2; RFC 6675's
  IsLost counts SACKed packets the same way). RACK (RFC 8985 6.2) waits, once
  reordering is seen, a window of :data:`REORDER_WINDOW_RTTS` of the RTT
  from a later packet's arrival, widened by :class:`ReorderWindow`.
* Delayed acknowledgements: an ACK for at least every
  :data:`DELAYED_ACK_PACKETS` full-sized segments (RFC 5681 4.2) and within
  :data:`DELAYED_ACK_TIMEOUT` of the first unacknowledged one (Linux's
  minimum delayed-ACK timeout, well inside RFC 1122's 0.5 s); at once for
  a segment out of order or filling a hole (:func:`ack_at_once`).  RLA's
  thinned SACKs, MTCP's leaves, VLMCC's leader and the simulator's TCP
  receiver use them.
* TCP Vegas (Brakmo, O'Malley and Peterson, 1994): :func:`vegas_diff`, the
  packets a flow keeps queued on its path, and :class:`Vegas`, the
  thresholds that turn it into a window step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: RFC 6928: TCP's initial congestion window (segments), Linux's since 2.6.39.
INITIAL_WINDOW = 10
#: RFC 6298 2.1: the retransmission timeout before the first RTT sample (s).
INITIAL_RTO = 1.0
#: RFC 6298 2.4: the floor on the retransmission timeout (s), there against
#: spurious retransmissions on the Internet.
MIN_RTO = 1.0
#: RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2 * SMSS), in segments.
LEAST_SSTHRESH = 2.0
#: RFC 5681 3.2: later packets acknowledged before one is deemed lost.
DUPTHRESH = 3
#: RFC 8985 6.2: RACK's reordering window, min_RTT / 4 (per step of its multiplier).
REORDER_WINDOW_RTTS = 0.25
#: RFC 8985 6.2: the multiplier grows by one per round trip that shows a loss
#: was not one, to at most the RTT, and falls back to one after 16 loss events.
REORDER_MULT_MAX, REORDER_PERSIST = 4, 16
#: RFC 5681 4.2: an ACK SHOULD go for at least every second full-sized segment.
DELAYED_ACK_PACKETS = 2
#: Linux's TCP_DELACK_MIN (s): a delayed ACK leaves at most this long after
#: the first segment it acknowledges (RFC 1122 4.2.3.2 allows up to 0.5 s).
DELAYED_ACK_TIMEOUT = 0.04


class ReorderWindow:
    """RACK's reordering window (RFC 8985 6.2), kept by whoever tells holes from losses.

    No window until the path has been seen to reorder, so a path that does
    not reorder is not answered later.  A loss that turns out not to be one
    (the packet arrives after all) widens the window by one step of
    :data:`REORDER_WINDOW_RTTS`, once per round trip and up to the whole RTT,
    as RACK's DSACK-driven multiplier does; after :data:`REORDER_PERSIST`
    real losses it is one step again.
    """

    __slots__ = ("reordering_seen", "mult", "persist", "_widened_at")

    def __init__(self) -> None:
        self.reordering_seen = False
        self.mult = 1  # the window in steps of REORDER_WINDOW_RTTS
        self.persist = 0  # losses left before the multiplier falls back
        self._widened_at = -math.inf

    def window(self, rtt: float) -> float:
        """How long a hole waits past its first later packet (0 before reordering is seen)."""
        return self.mult * REORDER_WINDOW_RTTS * rtt if self.reordering_seen else 0.0

    def late(self, now: float, rtt: float) -> None:
        """A packet counted lost arrived after all: the window was too short."""
        if self.reordering_seen and now - self._widened_at >= rtt:
            self.mult = min(self.mult + 1, REORDER_MULT_MAX)
            self._widened_at = now
            self.persist = REORDER_PERSIST
        self.reordering_seen = True

    def loss_event(self) -> None:
        """A real loss: after REORDER_PERSIST of them the window is one step again."""
        if self.persist:
            self.persist -= 1
            if not self.persist:
                self.mult = 1


def undo_spurious_cuts(cwnd: float, ssthresh: float, before: tuple[float, float], flight: float,
                       initial_window: float = INITIAL_WINDOW) -> tuple[float, float]:
    """(cwnd, ssthresh) after cuts that turned out spurious, RFC 4015's response.

    ``before`` is (cwnd, ssthresh) before the first spurious cut, ``flight``
    the packets in flight now.  RFC 4015 (sec. 3.1) brings ssthresh back to
    what was in flight before the timeout and sets cwnd to the flight plus
    at most an initial window, so the old window returns by slow start
    within a few round trips instead of in one burst, even where the
    window the cuts left is larger than that: the pipe emptied while the
    sender waited.  Restoring the old cwnd at once sent it as one burst: an
    MTCP sender whose dead receiver was found sent 115 packets at once into
    a 10-packet queue and repaired about 100 of them per receiver for 4 s.
    """
    old_cwnd, old_ssthresh = before
    ssthresh = max(ssthresh, old_cwnd, old_ssthresh)  # pipe_prev = max(FlightSize, ssthresh)
    cwnd = max(1.0, min(max(old_cwnd, cwnd), flight + initial_window))
    return cwnd, ssthresh


def ack_at_once(held: int, urgent: bool, every: int = DELAYED_ACK_PACKETS) -> bool:
    """RFC 5681 4.2: acknowledge now, or hold the ACK (at most
    :data:`DELAYED_ACK_TIMEOUT`, the caller's timer)?

    Now once ``held`` packets (this one included) are unacknowledged and
    that is ``every`` or more, or when the packet is ``urgent``: out of
    order, or filling a hole, which the sender must hear of at once (each
    protocol says which of its packets are).
    """
    return urgent or held >= every


def vegas_diff(rate: float, delay: float, base_delay: float) -> float:
    """TCP Vegas' Diff, in packets queued on the path: ``rate * (delay - base_delay)``.

    Brakmo and Peterson write it ``(Expected - Actual) * BaseRTT`` with
    ``Expected = W / BaseRTT`` and ``Actual = W / RTT``; the same number is the
    achieved rate times the delay above the base, the form used here because
    MTCP measures one-way relative delays (RTDs) whose zero is arbitrary and a
    rate rather than a window.  VLMCC (sender and follower emulation) passes
    ``W / rtt``.
    """
    return rate * (delay - base_delay)


@dataclass(frozen=True)
class Vegas:
    """TCP Vegas' thresholds on :func:`vegas_diff`, in packets queued on the path.

    Once per round trip, congestion avoidance grows the window by one packet
    while fewer than ``alpha`` are queued and shrinks it by one while more than
    ``beta`` are (:meth:`step`); slow start ends once more than ``gamma`` are
    (:meth:`leaves_slow_start`).  The defaults are Vegas' own, 1, 3 and 1.
    """

    alpha: float = 1.0
    beta: float = 3.0
    gamma: float = 1.0

    def __post_init__(self) -> None:
        if not 0 <= self.alpha <= self.beta:
            raise ValueError(f"Vegas needs 0 <= alpha <= beta, got {self.alpha} and {self.beta}")

    def step(self, diff: float) -> int:
        """The window's move this round: +1 below ``alpha``, -1 above ``beta``, else 0."""
        if diff < self.alpha:
            return 1
        if diff > self.beta:
            return -1
        return 0

    def leaves_slow_start(self, diff: float) -> bool:
        """Slow start ends: more than ``gamma`` packets are queued."""
        return diff > self.gamma


#: Vegas with its published thresholds: the defaults of every core's parameters.
VEGAS = Vegas()
