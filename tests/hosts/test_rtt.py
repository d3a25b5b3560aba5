"""The RTT estimator family (hosts.rtt): RFC 6298's rules, its variants, and the shared EWMA."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4mcc.hosts.rtt import SmoothedRtt, ewma, lowest


def test_ewma_takes_the_first_sample_then_weights_new_samples() -> None:
    assert ewma(None, 0.3, 0.05) == 0.3
    assert ewma(math.nan, 0.3, 0.05) == 0.3
    # TFMCC 2.4.2 at the CLR: beta = 0.05.
    assert ewma(0.2, 0.3, 0.05) == pytest.approx(0.95 * 0.2 + 0.05 * 0.3)


def test_lowest_keeps_the_smallest_sample() -> None:
    assert lowest(None, 0.04) == 0.04
    assert lowest(0.04, 0.05) == 0.04
    assert lowest(0.04, -0.01) == -0.01


def test_rfc6298_first_sample_then_var_before_mean() -> None:
    e = SmoothedRtt(initial_rto=1.0, min_rto=0.2)
    assert e.rto == 1.0  # 2.1: before any measurement
    e.sample(0.1)
    # 2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4·RTTVAR
    assert e.srtt == pytest.approx(0.1) and e.rttvar == pytest.approx(0.05)
    assert e.rto == pytest.approx(0.3)
    e.sample(0.2)
    # 2.3: RTTVAR with the old SRTT, then SRTT; alpha = 1/8, beta = 1/4
    assert e.rttvar == pytest.approx(0.75 * 0.05 + 0.25 * 0.1)
    assert e.srtt == pytest.approx(0.875 * 0.1 + 0.125 * 0.2)
    assert e.base == pytest.approx(0.1)


def test_rto_floor_ceiling_and_backoff() -> None:
    e = SmoothedRtt(min_rto=1.0, max_rto=8.0)
    e.sample(0.01)
    assert e.rto == 1.0  # 2.4: never below the floor
    e.back_off()
    e.back_off()
    assert e.rto == 4.0  # 5.5: doubled per expiry
    for _ in range(10):
        e.back_off()
    assert e.rto == 8.0  # 2.5: capped
    e.sample(0.01)
    assert e.backoff == 0 and e.rto == 1.0  # 5.7: a new sample clears the back-off


def test_granularity_is_the_least_variance_term() -> None:
    e = SmoothedRtt(min_rto=0.0, granularity=0.5)
    for _ in range(50):
        e.sample(0.1)
    assert e.rttvar < 0.01
    assert e.rto == pytest.approx(0.1 + 0.5)  # SRTT + max(G, K·RTTVAR)


def test_negative_samples_count_only_for_relative_delays() -> None:
    rtt = SmoothedRtt()
    rtt.sample(-0.01)
    assert rtt.srtt is None and rtt.samples == 0
    rtd = SmoothedRtt(min_rto=-math.inf, max_rto=math.inf, granularity=1.0, relative=True)
    rtd.sample(-0.02)
    rtd.sample(-0.03)
    assert rtd.srtt == pytest.approx(-0.02 + 0.125 * (-0.01))
    assert rtd.base == -0.03
    assert rtd.rto == pytest.approx(rtd.srtt + 1.0)  # no floor: the RTD axis has no zero


def test_mean_first_measures_the_deviation_against_the_new_mean() -> None:
    # VLMCC section 2.2, equations (1) and (2) with g = g_sigma = 0.1.
    e = SmoothedRtt(alpha=0.1, beta=0.1, mean_first=True)
    e.sample(0.1)
    e.sample(0.2)
    mean = 0.9 * 0.1 + 0.1 * 0.2
    assert e.srtt == pytest.approx(mean)
    assert e.rttvar == pytest.approx(0.9 * 0.05 + 0.1 * abs(mean - 0.2))


@given(st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=1, max_size=40))
def test_incremental_form_is_the_same_rule(samples: list[float]) -> None:
    plain = SmoothedRtt(relative=True)
    jacobson = SmoothedRtt(relative=True, incremental=True)
    for s in samples:
        plain.sample(s)
        jacobson.sample(s)
    assert plain.srtt is not None and jacobson.srtt is not None
    assert jacobson.srtt == pytest.approx(plain.srtt, abs=1e-12)
    assert jacobson.rttvar == pytest.approx(plain.rttvar, abs=1e-12)
