"""A TFMCC CLR that claims maximum loss and falls silent, against the sender core.

The sender is steady with an honest CLR at 800 kbit/s; a rogue receiver
reports p = 1 at 8 kbit/s, becomes CLR (a lower rate names the CLR, 2.2) and
the rate drops to 8 kbit/s.  Then it goes quiet.  At 8 kbit/s the paper's
feedback delay T is 4·(c+1)·s/R = 20 s, so its timeout (10 T, checked at a
round's end) keeps the liar for minutes.  ``release_silent_clr`` releases
it 10·b·R_max after its last report whatever rate it set, and the honest
receiver's next report names it CLR again.
"""

from __future__ import annotations

import pytest
from fakes import feed, run_until

from p4mcc.hosts import wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.tfmcc.constants import CLR_TIMEOUT_ROUNDS, FB_B
from p4mcc.hosts.wire import TfmccData, TfmccReport

from test_tfmcc_claims import CLR, HAVE, RATE, RTT, S, claim, steady, without  # noqa: I001

LIAR_BPS = 8_000


def lie_then_go_quiet(rules: tuple[str, ...]):
    """The steady sender after the rogue's p = 1 claim at 8 kbit/s; returns it and the claim's time."""
    s = steady(rules)
    claim(s, claim_bps=LIAR_BPS, claim_loss=1.0)
    assert s.clr != node_id(CLR) and s.rate == LIAR_BPS  # the liar is CLR and sets the rate
    return s, s.now


def test_a_silent_liar_is_released_ten_feedback_delays_at_r_max_after_its_first_unanswered_packet() -> None:
    s, lied_at = lie_then_go_quiet(without())
    bound = CLR_TIMEOUT_ROUNDS * FB_B * s.r_max
    out = run_until(s, lied_at + 1.0 + bound + 1e-3)  # a packet per second at 8 kbit/s
    data = [m for m in out.messages() if isinstance(m, TfmccData)]
    first = data[0].timestamp
    assert s.clr is None and s.silent_clr_releases == 1
    # the release is news: a packet naming no CLR goes out at once, in a new feedback round
    last = next(m for m in data if m.clr_id == 0)
    assert last.timestamp == wire.ts_us(first / 1e6 + bound) and last.fb_round != data[0].fb_round
    assert all(m.clr_id != 0 for m in data if m.timestamp < last.timestamp)
    # the honest CLR's next report names it again, and the rate climbs toward its 800 kbit/s
    now = s.now + RTT
    feed(s, TfmccReport(session_id=1, timestamp=wire.ts_us(now), rate=int(RATE), rflags=HAVE,
                        rcvr_id=node_id(CLR), rtt=int(RTT * 1e6), loss_rate=int(0.001 * 0xFFFFFFFF),
                        echo_ts=last.timestamp), now)
    assert s.clr == node_id(CLR)
    run_until(s, now + 2.0)
    assert s.rate >= 0.8 * RATE


def test_without_the_rule_the_silent_liar_holds_the_rate_for_tens_of_seconds() -> None:
    s, lied_at = lie_then_go_quiet(without("release_silent_clr"))
    run_until(s, lied_at + 30.0)
    assert s.clr is not None and s.clr != node_id(CLR) and s.rate == LIAR_BPS


def test_an_honest_clr_reporting_each_sparse_packet_is_never_released() -> None:
    """At 8 kbit/s with 1000-byte packets (one per second) the CLR answers each
    packet within an RTT; its silence never reaches 10·b·R_max (2 s)."""
    s, _ = lie_then_go_quiet(without())
    liar = s.clr
    t = s.now
    for _ in range(10):
        out = run_until(s, t + 1.0)
        data = [m for m in out.messages() if isinstance(m, TfmccData)]
        assert data, "a packet per second at 8 kbit/s"
        t = s.now + 0.01
        feed(s, TfmccReport(session_id=1, timestamp=wire.ts_us(t), rate=LIAR_BPS, rflags=HAVE,
                            rcvr_id=liar, rtt=int(RTT * 1e6), loss_rate=0xFFFFFFFF,
                            echo_ts=data[-1].timestamp), t)
    assert s.clr == liar and s.silent_clr_releases == 0


@pytest.mark.parametrize("rules", [without()])
def test_the_timeout_ignores_the_rate_the_clr_set(rules: tuple[str, ...]) -> None:
    s, _ = lie_then_go_quiet(rules)
    assert s.T() > 10.0  # the paper's feedback delay at 8 kbit/s
    assert s._clr_timeout() == pytest.approx(CLR_TIMEOUT_ROUNDS * FB_B * s.r_max)
    assert s._clr_timeout() < 5.0
