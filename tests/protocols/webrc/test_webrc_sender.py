"""WEBRC sender rules: channels, wave shape, discrete schedule, headers."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
from fakes import run_until

from p4mcc.hosts import registry
from p4mcc.hosts.wire import WEBRC_LAST_PSN, WebrcData, decode
from p4mcc.hosts.webrc import DATA_HEADER as WEBRC_HEADER
from p4mcc.hosts.webrc import WebrcParams, WebrcSender, channel_group, gamma

SMALL = WebrcParams(session_rate_bps=200_000, packet_length=1024, tsd=1.0, quiescent_slots=3)


def make(params: WebrcParams = SMALL) -> WebrcSender:
    s = registry.get("webrc").sender(
        registry.SessionConfig(1, "239.2.0.0", 7000, "10.0.0.1", "10.0.0.1", params))
    s.start(0.0)
    return s


def sent(s: WebrcSender, until: float) -> list[tuple[float, str, WebrcData]]:
    out = run_until(s, until)
    return [(m.timestamp / 1e6, d.dest[0], m) for d in out.datagrams if isinstance(m := decode(d.data), WebrcData)]


def test_defaults_follow_table_1_and_eq_3() -> None:
    p = WebrcParams()
    assert (p.p, p.tsd, p.base_rate_pps, p.epoch) == (0.75, 10.0, 1.0, 0.5)
    # Beyond Table 1: a TCP segment's UDP payload (1460 B), SR above a fair share.
    assert p.packet_length + WEBRC_HEADER == 1460 and p.session_rate_bps == 20e6
    assert p.q == 30  # ceil(300 / TSD)
    # N: the most waves whose fluid rates fit in SR at a slot start.
    ratio = p.session_rate_pps / p.base_rate_pps
    fits = lambda n: 1 + (p.p ** -n - 1) / (1 - p.p) <= ratio  # noqa: E731
    assert fits(p.n) and not fits(p.n + 1)
    assert p.t == p.n + p.q
    assert p.slot_avg == pytest.approx(0.869, abs=5e-4)  # (1-P)/ln(1/P), section 5.1.1


def test_gamma_eq_4() -> None:
    assert gamma(0.75, 0) == pytest.approx(((4 / 3) ** 2 - 1) / (4 / 3 - 1))
    assert gamma(0.75, 30) == pytest.approx(4 / 3, rel=1e-3)


def test_each_channel_has_its_own_group() -> None:
    s = make()
    pkts = sent(s, 3 * SMALL.t * SMALL.tsd)
    for _t, dest, m in pkts:
        assert dest == channel_group("239.2.0.0", m.cn, SMALL.t)
    assert channel_group("239.2.0.0", SMALL.t, SMALL.t) == "239.2.0.0"
    assert channel_group("239.2.0.0", 0, SMALL.t) == "239.2.0.1"
    assert {m.cn for _t, _d, m in pkts} == set(range(SMALL.t + 1))


def test_total_rate_is_the_session_rate() -> None:
    s = make()
    pkts = sent(s, 2 * SMALL.t * SMALL.tsd)
    per_slot = Counter(math.floor(t / SMALL.tsd + 1e-9) for t, _d, _m in pkts)
    expected = SMALL.session_rate_pps * SMALL.tsd
    for slot in range(1, 2 * SMALL.t - 1):
        assert abs(per_slot[slot] - expected) <= 2, (slot, per_slot[slot], expected)


def test_base_channel_decays_by_p_within_each_slot() -> None:
    s = make(WebrcParams(session_rate_bps=2_000_000, packet_length=1024, base_rate_pps=20, tsd=1.0, quiescent_slots=3))
    pkts = sent(s, 20.0)
    base = [t for t, _d, m in pkts if m.cn == s.T]
    per_slot = Counter(math.floor(t) for t in base)
    # BCR·(1-P)/ln(1/P)·TSD = 17.4 packets per slot.
    assert all(abs(per_slot[k] - 17.4) <= 1.5 for k in range(1, 19))
    first_half = sum(1 for t in base if 5.0 <= t < 5.5)
    second_half = sum(1 for t in base if 5.5 <= t < 6.0)
    assert first_half > second_half  # the rate falls through the slot


def test_wave_rises_then_decays_by_p_per_slot_then_stays_quiet() -> None:
    s = make(WebrcParams(session_rate_bps=2_000_000, packet_length=1024, base_rate_pps=20, tsd=1.0, quiescent_slots=3))
    N, T, Q = s.N, s.T, s.Q
    pkts = sent(s, 3 * T * SMALL.tsd)
    counts: dict[int, Counter] = defaultdict(Counter)
    for t, _d, m in pkts:
        if m.cn < T:
            counts[m.cn][math.floor(t / SMALL.tsd + 1e-9)] += 1
    cn = 2
    # Channel cn's next full wave starts in slot k0 where (k0 + N - 1) % T == cn.
    k0 = next(k for k in range(T, 2 * T) if (k + N - 1) % T == cn)
    wave = [counts[cn][k0 + a] for a in range(N)]
    fluid = [s.wave_slot_packets(a) for a in range(N)]
    assert wave[0] == max(wave)  # the peak opens the wave
    for a in range(1, N):
        assert abs(wave[a] - fluid[a]) <= 1.5, (a, wave, fluid)
        if a > 1:
            assert wave[a] / wave[a - 1] == pytest.approx(0.75, abs=0.08)
    assert sum(wave) == round(sum(fluid))  # the wave's whole budget, no more
    for k in range(k0 + N, k0 + N + Q):
        assert counts[cn][k] == 0  # quiescent for Q slots
    assert counts[cn][k0 + T] > 0  # and the cycle repeats after T slots


def test_psn_counts_up_to_65535_at_the_end_of_each_wave() -> None:
    s = make()
    pkts = sent(s, 3 * s.T * SMALL.tsd)
    by_ch: dict[int, list[int]] = defaultdict(list)
    for _t, _d, m in pkts:
        by_ch[m.cn].append(m.psn)
    for cn in range(s.T):
        seq = by_ch[cn]
        ends = [i for i, p in enumerate(seq) if p == WEBRC_LAST_PSN]
        assert len(ends) >= 2
        for i in range(1, len(seq)):
            if seq[i - 1] != WEBRC_LAST_PSN:
                assert seq[i] == seq[i - 1] + 1  # consecutive within a wave
    base = by_ch[s.T]
    assert all((b - a) % 65536 == 1 for a, b in zip(base, base[1:]))


def test_tsi_is_the_time_slot_index_modulo_t() -> None:
    s = make(SMALL)  # timestamps on the schedule's ticks
    for t, _d, m in sent(s, 2 * s.T * SMALL.tsd):
        slot = math.floor(t / SMALL.tsd + 1e-9)
        assert m.tsi in (slot % s.T, (slot - 1) % s.T)  # flushed wave ends carry the old slot


def test_fast_encoder_matches_the_codec() -> None:
    from p4mcc.hosts.webrc import encode_data

    tmpl = WebrcData(session_id=9, payload=bytes(100)).encode()
    fast = encode_data(tmpl, seq=70000, ts=123456789, cn=17, psn=65535, tsi=3)
    slow = WebrcData(session_id=9, seq=70000, timestamp=123456789, cn=17, psn=65535, tsi=3,
                     payload=bytes(100)).encode()
    assert fast == slow


def test_an_ending_wave_sends_its_whole_budget_inside_its_slot() -> None:
    # Even when a wave is behind (here: 5 packets owed beyond its fluid share),
    # it finishes before its slot ends instead of spilling into quiet time.
    s = make()
    run_until(s, 0.5)
    ending = s.slot % s.T
    s.budget[ending] += 5
    pkts = sent(s, 0.999)
    assert s.budget[ending] == 0
    assert sum(1 for _t, _d, m in pkts if m.cn == ending) >= 5
