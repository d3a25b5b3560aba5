"""WEBRC's self-adjusting estimators and the rate meters."""

from __future__ import annotations

import random

import pytest

from p4mcc.hosts.estimators import (
    InverseLossEstimator,
    PrecisionWeightedMean,
    SelfAdjustingEwma,
    SqrtInverseLossEstimator,
    IntervalLossFilter,
    TwoStageLossFilter,
)
from p4mcc.hosts.ratemeter import IntervalCounter, WindowRateMeter


def test_self_adjusting_ewma_follows_the_appendix_recurrence() -> None:
    e = SelfAdjustingEwma(alpha=0.1)
    a, v = 1.0, 1.0
    for m in (0.3, 0.5, 0.2, 0.9):
        c = 0.1 * a * a / v
        a, v = (1 - c) * a + c * m, (1 - c) * v + c * m * m
        assert e.update(m) == pytest.approx(a)
    assert e.v == pytest.approx(v)


def test_self_adjusting_fraction_shrinks_with_variance() -> None:
    steady = SelfAdjustingEwma(0.2, initial=0.2)
    noisy = SelfAdjustingEwma(0.2, initial=0.2)
    rng = random.Random(1)
    for _ in range(200):
        steady.update(0.2)
        noisy.update(rng.choice([0.05, 0.35]))
    assert steady.fraction == pytest.approx(0.2)
    assert noisy.fraction < 0.15
    assert noisy.value == pytest.approx(0.2, abs=0.05)


def test_precision_weighted_mean_is_an_ewma_when_samples_are_alike() -> None:
    e = PrecisionWeightedMean(0.25)
    assert e.update(0.4, 0.01) == pytest.approx(0.4)  # the first sample is the mean
    lam = 0.75
    num, den = 0.4 / 0.01, 1 / 0.01
    for m in (0.2, 0.3, 0.1):
        num, den = lam * num + m / 0.01, lam * den + 1 / 0.01
        assert e.update(m, 0.01) == pytest.approx(num / den)
    with pytest.raises(ValueError):
        e.update(0.1, 0.0)


def test_precision_weighted_mean_lets_a_precise_sample_outweigh_a_vague_one() -> None:
    # A sample spread over a second (variance 1/12) then one good to 5 ms:
    # the mean lands within a percent of the precise one.
    e = PrecisionWeightedMean(0.25)
    e.update(1.0, 1 / 12)
    e.update(0.05, 0.005 ** 2)
    assert e.value == pytest.approx(0.05, rel=0.01)
    # ... and a later vague sample barely moves it.
    e.update(0.9, 1 / 12)
    assert e.value == pytest.approx(0.05, rel=0.02)


def test_inverse_loss_estimator_expectation() -> None:
    # Appendix: E[F] -> (1 - δp)/p; loss_rate = 1/(F + δ) -> p.
    rng = random.Random(7)
    delta, p = 0.05, 0.02
    est = InverseLossEstimator(delta)
    acc = []
    for i in range(300_000):
        est.update(1 if rng.random() < p else 0)
        if i > 20_000:
            acc.append(est.f)
    mean = sum(acc) / len(acc)
    assert mean == pytest.approx((1 - delta * p) / p, rel=0.1)


def test_inverse_loss_closed_form_equals_iteration() -> None:
    a, b = InverseLossEstimator(0.1, 5.0), InverseLossEstimator(0.1, 5.0)
    a.update(0.3, count=17)
    for _ in range(17):
        b.update(0.3)
    assert a.f == pytest.approx(b.f)
    a.set_loss_rate(0.04)
    assert a.loss_rate == pytest.approx(0.04)


def test_sqrt_inverse_estimator_tracks_sqrt_of_inverse() -> None:
    rng = random.Random(3)
    est = SqrtInverseLossEstimator(0.02, initial=5.0)
    vals = []
    for i in range(200_000):
        est.update(1 if rng.random() < 0.01 else 0)
        if i > 50_000:
            vals.append(est.loss_rate)
    assert sum(vals) / len(vals) == pytest.approx(0.01, rel=0.35)


def test_two_stage_filter_converges_to_loss_event_fraction() -> None:
    f = TwoStageLossFilter(beta=0.05, delta=0.1)
    f.set_loss_rate(0.1)
    for _ in range(2000):
        f.end_epoch(packets=100, events=1)
    assert f.loss_rate == pytest.approx(0.01, rel=0.05)


def test_two_stage_filter_smooths_bursts_over_epochs() -> None:
    # One bursty epoch moves the estimate by far less than a plain per-epoch ratio.
    f = TwoStageLossFilter(beta=0.05, delta=0.1)
    f.set_loss_rate(0.01)
    f.end_epoch(packets=100, events=5)
    assert f.loss_rate < 0.02


def test_window_rate_meter() -> None:
    m = WindowRateMeter(window=1.0)
    for i in range(100):
        m.add(i * 0.01, 125)  # 125 bytes every 10 ms = 100 kbit/s
    assert m.rate_bps(1.0) == pytest.approx(100_000, rel=0.02)
    assert m.rate_bps(5.0) == 0.0


def test_interval_counter() -> None:
    c = IntervalCounter()
    c.add(100)
    c.add(50)
    assert c.take() == (2, 150)
    assert c.take() == (0, 0)


def test_seeded_estimate_leaves_the_seed_at_the_pace_of_the_evidence() -> None:
    # WEBRC's start-up exit seeds LOSSP (3.2).  Afterwards every loss-free
    # packet adds δ to 1/LOSSP (the appendix's F estimator); the seed must not
    # also sit in the first stage, whose memory is 1/β epochs of measurements.
    f = TwoStageLossFilter(beta=0.025, delta=0.125)
    f.set_loss_rate(0.04)
    assert f.loss_rate == pytest.approx(0.04)
    for _ in range(20):  # 10 s of loss-free 0.5 s epochs at 100 packets/s
        f.end_epoch(packets=50, events=0)
    assert f.loss_rate == pytest.approx(1 / (1 / 0.04 + 0.125 * 1000), rel=1e-6)


def test_young_history_moves_as_fast_as_a_short_tfrc_history() -> None:
    # After a seed, δ_eff = max(δ, 1/(2 + loss events since)): 1/2 per
    # loss-free packet at first, δ once ~1/δ events have been seen.
    young, fixed = TwoStageLossFilter(0.025, 0.125, young=True), TwoStageLossFilter(0.025, 0.125)
    for f in (young, fixed):
        f.set_loss_rate(0.05)
        f.end_epoch(100, 0)
    assert 1 / young.loss_rate == pytest.approx(20 + 0.5 * 100)
    assert 1 / fixed.loss_rate == pytest.approx(20 + 0.125 * 100)
    raw = TwoStageLossFilter(1.0, 0.125, young=True)  # β = 1: no first-stage smoothing
    raw.set_loss_rate(0.05)
    for _ in range(20):
        raw.end_epoch(100, 1)  # 20 loss events: the memory is δ's again
    before = raw.inverse.f
    raw.end_epoch(100, 0)
    assert raw.inverse.f - before == pytest.approx(0.125 * 100)
    raw.set_loss_rate(0.01, fresh=False)  # the 3.3 reset keeps the evidence
    assert raw.evidence == 20


def test_peeking_at_a_rate_meter_forgets_nothing() -> None:
    # A metric record reads the receive rate; that read must not expire
    # samples a later, longer window (the RTT grew) still covers.
    from p4mcc.hosts.ratemeter import WindowRateMeter

    peeked, read = WindowRateMeter(1.0), WindowRateMeter(1.0)
    for m in (peeked, read):
        for i in range(20):
            m.add(i * 0.1, 100)
    assert peeked.peek_bps(2.5) == read.rate_bps(2.5)  # the same number ...
    peeked.window = read.window = 3.0
    # ... but only the read forgot the samples older than 1 s: with the
    # longer window the peeked meter still counts those from 1.0 to 1.5 s.
    assert read.rate_bps(2.6) < peeked.rate_bps(2.6)
    assert peeked.rate_bps(2.6) - read.rate_bps(2.6) == pytest.approx(8 * 100 * 6 / 2.6, rel=0.2)


def test_interval_filter_is_tfrcs_weighted_mean_of_eight_intervals() -> None:
    # RFC 5348 5.4: weights 1,1,1,1,0.8,0.6,0.4,0.2 over the newest eight
    # intervals; the open interval counts only when it raises the mean.
    f = IntervalLossFilter()
    assert f.loss_rate == 0.0  # nothing before start-up ends
    f.set_loss_rate(0.01)  # RFC 5348 6.3.1: one synthetic interval of 1/p
    assert f.loss_rate == pytest.approx(0.01)
    f.on_event()  # a short open interval (0 packets) does not raise p
    lengths = [100, 200, 300, 400, 500, 600, 700, 800]
    for n in lengths[:-1]:
        f.on_packets(n)
        f.on_event()
    f.on_packets(lengths[-1])
    closed = [700, 600, 500, 400, 300, 200, 100, 1]  # newest first; the open event had 0 (counted as 1)
    w = [1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2]
    with_open = [800, *closed[:7]]
    mean = max(sum(a * b for a, b in zip(w, closed)), sum(a * b for a, b in zip(w, with_open))) / sum(w)
    assert f.loss_rate == pytest.approx(1 / mean)
    # A loss-free stretch lowers p at once (the open interval), with no epoch lag.
    before = f.loss_rate
    f.on_packets(5000)
    assert f.loss_rate < before / 2


def test_peek_counts_exactly_the_bytes_inside_the_window() -> None:
    # peek_bps subtracts the samples at or before the cutoff from the running
    # total; it must equal the sum over the samples inside the window, for any
    # window change and any read time (random schedules, fixed seeds).
    for seed in range(20):
        rng = random.Random(seed)
        m = WindowRateMeter(rng.uniform(0.1, 2.0))
        t = 0.0
        for _ in range(300):
            t += rng.expovariate(50.0)
            m.add(t, rng.randint(1, 1500))
            if rng.random() < 0.05:
                m.window = rng.uniform(0.1, 2.0)
            at = t + rng.uniform(0.0, 1.0)
            inside = sum(b for s, b in m._samples if s > at - m.window)
            assert m.peek_bps(at) == m._rate(at, inside)


def test_interval_filter_discounts_history_after_a_long_loss_free_stretch() -> None:
    # RFC 5348 5.5 (WEBRC's ``history_discounting``): once the open interval is
    # more than twice the mean of the closed ones, the older intervals weigh
    # df = max(0.5, 2 * mean / open) of their weight; below that, nothing changes.
    from p4mcc.hosts.tfrc import tfrc_weights

    def filt(discounting: bool, open_packets: int) -> IntervalLossFilter:
        f = IntervalLossFilter(discounting=discounting)
        f.set_loss_rate(0.01)  # one interval of 100 packets
        for _ in range(7):
            f.on_packets(100)
            f.on_event()
        f.on_packets(open_packets)
        return f

    w = tfrc_weights(8)
    # open = 150: 1.5x the mean, no discounting either way
    assert filt(True, 150).loss_rate == filt(False, 150).loss_rate
    # open = 1000: 10x the mean, df = 0.5 on the seven older intervals
    wd = [w[0]] + [x * 0.5 for x in w[1:]]
    expected = (wd[0] * 1000 + sum(wd[1:]) * 100) / sum(wd)
    assert filt(True, 1000).loss_rate == pytest.approx(1 / expected)
    assert filt(True, 1000).loss_rate < filt(False, 1000).loss_rate
