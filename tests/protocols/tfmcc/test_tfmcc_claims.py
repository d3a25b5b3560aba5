"""What one TFMCC receiver's report can claim, one bound per test.

Each test feeds the sender the exact message :class:`hosts.rogue.Rogue`
crafts for one claim of a misbehaving receiver (an RTT of 0xFFFFFFFF us, a
zero rate, a zero RTT, ``IS_CLR`` with a low rate) and checks the sender
against what it measured itself; each also runs without its bound (the
paper's core, or the default profile less the rule) and sees the claim win.
"""

from __future__ import annotations

import pytest
from fakes import feed, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.rogue import Rogue
from p4mcc.hosts.tfmcc import RULES, TfmccParams, TfmccSender
from p4mcc.hosts.tfrc import loss_rate_full, tcp_rate
from p4mcc.hosts.wire import TfmccData, TfmccReport, TfmccReportFlags

S = 1000
CLR, ROGUE = "10.0.1.1", "10.0.1.9"
HAVE = TfmccReportFlags.HAVE_RTT | TfmccReportFlags.HAVE_LOSS
RATE = 800_000.0  # the honest CLR's rate
RTT = 0.05  # the honest CLR's path, as the sender measures it


def without(*names: str) -> tuple[str, ...]:
    return tuple(n for n in RULES.profiles["default"] if n not in names + ("pacing_jitter", "pacing_pairs"))


DEFAULT = without()


def steady(rules: tuple[str, ...] = DEFAULT) -> TfmccSender:
    """Out of slowstart, CLR at 800 kbit/s; the CLR's report echoed a packet (own sample 50 ms)."""
    s = registry.get("tfmcc").sender(registry.SessionConfig(
        1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", TfmccParams(packet_size=S, initial_rate_bps=1e6),
        rules=rules))
    s.start(0.0)
    out = run_until(s, 1.0)
    last = [m for m in out.messages() if isinstance(m, TfmccData)][-1]
    now = last.timestamp / 1e6 + RTT
    p = loss_rate_full(S, RTT, RATE / 8)
    feed(s, TfmccReport(session_id=1, timestamp=wire.ts_us(now), rate=int(RATE), rflags=HAVE,
                        rcvr_id=node_id(CLR), rtt=int(RTT * 1e6), loss_rate=int(p * 0xFFFFFFFF),
                        echo_ts=last.timestamp), now)
    assert not s.slowstart and s.rate == RATE and s.clr == node_id(CLR)
    assert s.r_max == pytest.approx(RTT)
    return s


def claim(s: TfmccSender, mode: str = "false_report", **kw) -> TfmccReport:
    """The rogue's report for ``kw``'s claim, as it sends it (no echo unless it heard data)."""
    r = Rogue(mode, "tfmcc", 1, "239.1.1.1", "10.0.0.1", ROGUE, 5000, **kw)
    data = r.craft(s.now)
    rep = wire.decode(data)
    feed(s, rep, s.now)
    return rep


def eq(p: float, rtt: float) -> float:
    from p4mcc.hosts.tfrc import rto

    return 8.0 * tcp_rate(S, rtt, p, rto(rtt))


# -- RTT 0xFFFFFFFF us: beyond any round trip the cores measure ------------------------------

@pytest.mark.parametrize("echo", [False, True])
def test_an_rtt_of_0xffffffff_us_is_malformed_and_leaves_r_max(echo: bool) -> None:
    for rules in (DEFAULT, ()):  # a core fix: the paper's sender refuses it too
        s = steady(rules)
        rep = claim(s, claim_rtt_us=0xFFFFFFFF, echo=echo)
        assert rep.rtt == 0xFFFFFFFF
        assert s.malformed == 1 and s.r_max == pytest.approx(RTT) and s.rate == RATE
        assert s.clr == node_id(CLR)


# -- zero rate ----------------------------------------------------------------------------------

def test_a_zero_rate_with_loss_flagged_but_no_loss_rate_is_malformed() -> None:
    for rules in (DEFAULT, ()):
        s = steady(rules)
        rep = claim(s, claim_bps=0, claim_loss=0.0)
        assert rep.rate == 0 and rep.loss_rate == 0 and rep.rflags & TfmccReportFlags.HAVE_LOSS
        assert s.malformed == 1 and s.rate == RATE


def test_an_unechoed_zero_rate_is_held_against_its_loss_rate_at_the_senders_rtt() -> None:
    s = steady()
    claim(s, claim_bps=0, claim_loss=0.01, claim_rtt_us=10_000, echo=False)
    # p = 1 % at the claimed 10 ms (below 4x the sender's own 50 ms sample): its own equation
    assert s.rate == pytest.approx(min(RATE, eq(0.01, 0.01)), rel=0.01)
    assert s.rate >= 0.5 * RATE and s.refused_rates == 1


def test_without_check_claims_an_unechoed_zero_rate_pins_the_sender() -> None:
    # unechoed_claims requires check_claims: the rate check is that rule's
    s = steady(without("check_claims", "unechoed_claims"))
    claim(s, claim_bps=0, claim_loss=0.01, claim_rtt_us=10_000, echo=False)
    assert s.rate == s.p.min_rate_bps


# -- zero RTT -----------------------------------------------------------------------------------

def test_an_rtt_flagged_but_zero_is_malformed() -> None:
    for rules in (DEFAULT, ()):
        s = steady(rules)
        claim(s, claim_rtt_us=0, claim_bps=8_000, claim_loss=0.01)
        assert s.malformed == 1 and s.rate == RATE


def _no_rtt_claim(s: TfmccSender) -> TfmccReport:
    """A zero RTT sent as no RTT at all (HAVE_RTT clear), without an echo, claiming 8 kbit/s."""
    rep = TfmccReport(session_id=1, timestamp=wire.ts_us(s.now), rate=8_000,
                      rflags=TfmccReportFlags.HAVE_LOSS, rcvr_id=node_id(ROGUE), recv_rate=8_000,
                      rtt=0, loss_rate=int(0.01 * 0xFFFFFFFF))
    feed(s, rep, s.now)
    return rep


def test_an_unechoed_report_without_rtt_is_checked_at_the_senders_own_rtt() -> None:
    s = steady()
    _no_rtt_claim(s)
    # no RTT to check the rate against but the sender's own 50 ms sample: p = 1 % there
    assert s.rate == pytest.approx(min(RATE, eq(0.01, RTT)), rel=0.01)
    assert s.rate >= 0.5 * RATE and s.r_max == pytest.approx(RTT)


def test_without_unechoed_claims_a_report_without_rtt_or_echo_sets_its_rate() -> None:
    s = steady(without("unechoed_claims"))
    _no_rtt_claim(s)
    assert s.rate == 8_000 and s.clr == node_id(ROGUE)


# -- an RTT the sender never measured -------------------------------------------------------------

def test_an_unechoed_rtt_claim_is_capped_at_four_own_samples() -> None:
    s = steady()
    claim(s, claim_bps=8_000, claim_loss=0.01, claim_rtt_us=59_000_000, echo=False)
    cap = 4 * RTT + 0.01
    assert s.capped_unechoed == 1 and s.r_max == pytest.approx(cap)
    assert s.rate == pytest.approx(eq(0.01, cap), rel=0.01)  # its p at the capped RTT


def test_without_unechoed_claims_a_59_s_rtt_claim_becomes_r_max() -> None:
    s = steady(without("unechoed_claims"))
    claim(s, claim_bps=8_000, claim_loss=0.01, claim_rtt_us=59_000_000, echo=False)
    assert s.r_max == pytest.approx(59.0) and s.rate == 8_000


# -- IS_CLR with a low rate --------------------------------------------------------------------

def test_an_is_clr_claim_with_a_low_rate_from_a_non_clr_is_refused() -> None:
    s = steady()
    rep = claim(s, "spoof_clr", claim_bps=8_000)
    assert rep.rflags & TfmccReportFlags.IS_CLR and rep.rate == 8_000
    assert s.refused_clr_claims == 1 and s.rate == RATE and s.clr == node_id(CLR)


def test_without_police_reports_an_is_clr_claim_takes_the_session() -> None:
    s = steady(without("police_reports"))
    claim(s, "spoof_clr", claim_bps=8_000, claim_loss=0.5)
    assert s.rate < 0.1 * RATE and s.clr == node_id(ROGUE)
