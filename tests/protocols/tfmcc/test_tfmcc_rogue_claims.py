"""One lying TFMCC receiver on a real bottleneck, in the simulator and in Mininet.

A 4 Mbit/s bottleneck carries one TFMCC session to three honest receivers;
a :class:`hosts.rogue.Rogue` behind the same bottleneck sends the issue's
claims at 50 reports/s from 15 s to 25 s: an RTT of 0xFFFFFFFF us, a zero
rate, a zero RTT, ``IS_CLR`` with an 8 kbit/s rate.  The session's share is
its mean sending rate over 8-15 s; while the rogue lies the rate stays at
half of it or more, and within 3 s of the rogue going quiet it is back to
80 % (docs/protocols/tfmcc.md#feedback-a-receiver-cannot-abuse).
"""

from __future__ import annotations

import statistics
from typing import Any

import liar_util
import pytest

START, STOP, END = 15.0, 25.0, 31.0
RECOVER_S = 3.0

#: The issue's claims, as the rogue's keyword arguments (mode first).
CLAIMS: dict[str, dict[str, Any]] = {
    "rtt-0xffffffff": {"mode": "false_report", "claim_rtt_us": 0xFFFFFFFF, "echo": False},
    "zero-rate": {"mode": "false_report", "claim_bps": 0, "claim_loss": 0.0},
    "zero-rate-unechoed": {"mode": "false_report", "claim_bps": 0, "claim_loss": 0.01, "echo": False},
    "zero-rtt": {"mode": "false_report", "claim_rtt_us": 0, "echo": False},
    "is-clr-low-rate": {"mode": "spoof_clr", "claim_bps": 8_000},
}


def scenario_dict() -> dict[str, Any]:
    return liar_util.scenario_dict("tfmcc-rogue", END)


def sim_rates(claim: dict[str, Any] | None) -> list[tuple[float, float]]:
    """The sender's rate (bit/s) per 0.5 s, with the rogue's claim from START to STOP."""
    run, snd, rogue = liar_util.build_with_rogue(scenario_dict(), claim, START, STOP)
    out, t, seq = [], 0.0, 0
    while t < END:
        t = round(t + 0.5, 6)
        run.sim.run(t)
        out.append((t, (snd.seq - seq) * 8.0 * snd.p.packet_size / 0.5))
        seq = snd.seq
    if claim is not None:
        assert rogue is not None and rogue.sent >= 0.9 * 50 * (STOP - START)  # it lied all along
    return out


def mean(rates: list[tuple[float, float]], t0: float, t1: float) -> float:
    return statistics.mean(r for t, r in rates if t0 < t <= t1)


@pytest.fixture(scope="module")
def share() -> float:
    rates = sim_rates(None)
    got = mean(rates, 8.0, 15.0)
    assert got > 3.0e6  # the 4 Mbit/s bottleneck is the session's alone
    return got


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_one_liar_on_the_bottleneck_keeps_half_the_share_and_the_session_recovers(name: str, share: float) -> None:
    rates = sim_rates(CLAIMS[name])
    during = [r for t, r in rates if START + 1.0 < t <= STOP]
    # per second, not only on average: no pin even for a moment
    per_s = [statistics.mean(during[i:i + 2]) for i in range(0, len(during) - 1, 2)]
    assert min(per_s) >= 0.5 * share, (name, [round(r / 1e6, 2) for r in per_s], share)
    back = next((t for t, _ in rates if t > STOP and mean(rates, t, t + 2.0) >= 0.8 * share), None)
    assert back is not None and back - STOP <= RECOVER_S, (name, back, share)


# -- Mininet --------------------------------------------------------------------------------------

#: The claims a scenario's fault carries (``claim`` only): the others need the rogue's own flags.
MININET_CLAIMS = {"false_report": "8kbps", "spoof_clr": "8kbps"}


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(MININET_CLAIMS))
def test_one_liar_in_mininet_keeps_half_the_share(mode: str, tmp_path) -> None:
    """The rogue as a process in a Mininet receiver host (``python -m p4mcc.hosts.rogue``), from a fault."""
    from p4mcc.emulation.run import missing_requirements

    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
    import csv

    from p4mcc.emulation.run import run_emulation
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_dict()
    sc["sessions"][0]["receivers"] = ["r1", "r2", "r3", "rogue"]  # a fault's rogue sits on a receiver
    sc["faults"] = [{"type": mode, "target": "rogue", "session": "tf", "at": START, "for": STOP - START,
                     "claim": MININET_CLAIMS[mode]}]
    run_emulation(scenario_from_dict(sc), tmp_path, progress=False, plots=False)
    pts = sorted((float(r["time"]), float(r["value"])) for r in csv.DictReader((tmp_path / "timeseries.csv").open())
                 if r["kind"] == "session" and r["metric"] == "throughput_bps" and r["node"] == "r1")
    before = statistics.mean(v for t, v in pts if 8.0 < t <= START)
    during = statistics.mean(v for t, v in pts if START + 1.0 < t <= STOP)
    after = statistics.mean(v for t, v in pts if STOP + RECOVER_S < t <= END)
    assert during >= 0.5 * before and after >= 0.8 * before, (before, during, after)
