"""WEBRC's ``measure_from_first_packet``: a receiver that starts (or reboots)
while the 1 packet/s base channel's next packets are lost at the bottleneck
measures its rates from its first packet, as a receiver that starts with the
session does, instead of averaging in the epochs in which it heard nothing."""

from __future__ import annotations

import pytest
from fakes import run_until

from test_webrc_receiver import T, Script, make

#: The rebooted receiver of topologies/scenarios/faults/receiver-crash.yaml:
#: two base-channel packets lost at the 4 Mbit/s bottleneck, the first one
#: heard 2.87 s after its start.
LATE_S = 2.87


def heard_after(delay: float, **rules) -> tuple[float, float]:
    """(ARR, TRR) at the end of the epoch of the receiver's first packet,
    ``delay`` s after its start, with 1 packet of the base channel per 0.5 s
    epoch after it."""
    r = make(**rules)
    s = Script(r, tsi=3)
    run_until(r, delay - 1e-6)
    s.pkt(T, delay)
    epoch_end = (int(delay / r.p.epoch) + 1) * r.p.epoch
    run_until(r, epoch_end)
    return r.arr, r.trr


def test_a_late_receiver_starts_its_rates_at_its_first_packet() -> None:
    prompt = heard_after(0.37)
    assert prompt[1] == pytest.approx(2.0)  # TRR: one packet in a 0.5 s epoch (ARR: times Γ of the join)
    assert heard_after(LATE_S) == (pytest.approx(prompt[0]), pytest.approx(prompt[1]))


def test_without_the_rule_the_empty_epochs_drag_the_late_receivers_rates() -> None:
    arr, trr = heard_after(LATE_S, off=("measure_from_first_packet",))
    # five empty epochs seed ARR and TRR at 0; the first heard one adds a quarter of
    # 2 packets/s, so start-up's Γ³·TRR (and its join's ARR) is a quarter of the prompt one's
    assert trr == pytest.approx(0.5)
    assert arr == pytest.approx(heard_after(0.37)[0] / 4)
