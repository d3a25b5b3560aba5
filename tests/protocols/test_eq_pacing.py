"""The equation-based senders' pacing: TFMCC's jitter and pairs, WEBRC's exact schedule.

TFMCC jitters and pairs its departures by named rules (``pacing_jitter``,
``pacing_pairs``, both in its default profile), a deviation from the paper
documented in docs/protocols/tfmcc.md: a periodic sender phase-locks with a
drop-tail queue and sees far fewer losses than TCP next to it, so the
departures are jittered around an exact schedule.  WEBRC's sender keeps the
paper's exact schedule.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter

import pytest
from fakes import drain

from p4mcc.hosts import registry, wire
from p4mcc.hosts.tfmcc import RULES, TfmccParams
from p4mcc.hosts.tfmcc.rules import PacingPairs
from p4mcc.hosts.tfrc import tcp_rate
from p4mcc.hosts.webrc import WebrcParams
from p4mcc.hosts.wire import TfmccData, WebrcData


def _departures(ep, until: float) -> list[tuple[float, wire.Message]]:
    """Fire the core's timers up to ``until``; each datagram with the time it left."""
    ep.start(0.0)
    sent = [(0.0, d) for d in drain(ep).datagrams]
    while (t := ep.get_timer()) is not None and t <= until:
        ep.handle_timer(t)
        sent += [(t, d) for d in drain(ep).datagrams]
    return [(t, wire.decode(d.data)) for t, d in sent]


def _without(*names: str) -> tuple[str, ...]:
    return tuple(n for n in RULES.profiles["default"] if n not in names)


def _tfmcc_departures(params: TfmccParams, until: float,
                      rules: tuple[str, ...]) -> list[tuple[float, TfmccData]]:
    s = registry.get("tfmcc").sender(
        registry.SessionConfig(1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", params, seed=3, rules=rules))
    return [(t, m) for t, m in _departures(s, until) if isinstance(m, TfmccData)]


def test_tfmcc_departures_are_jittered_around_an_exact_schedule() -> None:
    # Slowstart without reports keeps the initial rate: 4 packets per 0.5 s.
    sent = _tfmcc_departures(TfmccParams(packet_size=1000, initial_rate_bps=80_000.0), 20.0,
                             _without("pacing_pairs"))
    times = [t for t, _ in sent]
    gaps = [b - a for a, b in zip(times, times[1:])]
    tick = 8 * 1000 / 80_000.0
    assert min(gaps) >= 0.0  # never reordered
    assert statistics.fmean(gaps) == pytest.approx(tick, rel=0.02)  # the rate is unchanged
    # Offsets uniform in ±0.475 ticks: gaps spread over (0.05, 1.95) ticks.
    assert statistics.pstdev(gaps) > 0.3 * tick
    assert all(abs(t - m.timestamp / 1e6) <= 0.475 * tick + 1e-6 for t, m in sent)
    # The timestamps are the ticks: a receiver reads the rate exactly.
    stamps = [m.timestamp / 1e6 for _, m in sent]
    assert [b - a for a, b in zip(stamps, stamps[1:])] == pytest.approx([tick] * (len(stamps) - 1), abs=2e-6)


def test_tfmcc_without_jitter_paces_periodically() -> None:
    sent = _tfmcc_departures(TfmccParams(packet_size=1000, initial_rate_bps=80_000.0), 5.0,
                             _without("pacing_jitter", "pacing_pairs"))
    times = [t for t, _ in sent]
    assert [b - a for a, b in zip(times, times[1:])] == pytest.approx([0.1] * (len(times) - 1))


def test_tfmcc_sends_pairs_once_a_window_holds_enough_packets() -> None:
    # 160 kbit/s, 1000-byte packets and the 0.5 s R_max placeholder: 10
    # packets per R_max, above PacingPairs.PAIR_MIN_WINDOW (6), so pairs, back
    # to back at the mean of their two ticks.
    assert PacingPairs.PAIR_MIN_WINDOW < 10
    sent = _tfmcc_departures(TfmccParams(packet_size=1000, initial_rate_bps=160_000.0), 5.0,
                             _without("pacing_jitter"))
    times = [t for t, _ in sent]
    tick = 0.05
    assert times[0] == 0.0  # the first packet leaves alone, before any rate is known
    pairs = list(zip(times[1::2], times[2::2]))
    assert len(pairs) >= 40
    assert all(b == a for a, b in pairs)  # back to back
    assert [b[0] - a[0] for a, b in zip(pairs, pairs[1:])] == pytest.approx([2 * tick] * (len(pairs) - 1))
    # Each pair leaves between its two ticks, and the stamps stay the ticks.
    stamps = [m.timestamp / 1e6 for _, m in sent]
    assert all(abs(t - s) == pytest.approx(0.5 * tick) for t, s in zip(times[1:], stamps[1:]))
    assert [b - a for a, b in zip(stamps, stamps[1:])] == pytest.approx([tick] * (len(stamps) - 1), abs=2e-6)


def test_tfmcc_sends_single_packets_below_the_pairs_window() -> None:
    # 80 kbit/s: 5 packets per 0.5 s R_max, below PacingPairs.PAIR_MIN_WINDOW.
    assert PacingPairs.PAIR_MIN_WINDOW > 5
    sent = _tfmcc_departures(TfmccParams(packet_size=1000, initial_rate_bps=80_000.0), 5.0,
                             _without("pacing_jitter"))
    times = [t for t, _ in sent]
    assert [b - a for a, b in zip(times, times[1:])] == pytest.approx([0.1] * (len(times) - 1))


def _webrc_sent(params: WebrcParams, until: float) -> list[tuple[float, WebrcData]]:
    s = registry.get("webrc").sender(
        registry.SessionConfig(1, "239.2.0.0", 7000, "10.0.0.1", "10.0.0.1", params, seed=3))
    return [(t, m) for t, m in _departures(s, until) if isinstance(m, WebrcData)]


def test_webrc_departures_keep_the_wave_schedule_exactly() -> None:
    """WEBRC's sender leaves every packet at its tick, one 1/SR apart."""
    params = WebrcParams(session_rate_bps=200_000, packet_length=1024, tsd=1.0, quiescent_slots=3)
    sent = _webrc_sent(params, 6.0)
    gaps = [b[0] - a[0] for a, b in zip(sent, sent[1:])]
    assert max(abs(g - 1.0 / params.session_rate_pps) for g in gaps) < 1e-6
