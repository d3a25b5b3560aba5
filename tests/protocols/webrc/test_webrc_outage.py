"""WEBRC's ``outage_not_loss``: the packets a receiver missed while its path
was down (a leaf switch's crash) are an outage, not congestion, as TFMCC's
``outage_restart``; a shorter silence, or one without a gap, is still loss."""

from __future__ import annotations

from fakes import run_until

from test_webrc_receiver import T, Script, make

PPS = 50.0  # a busy channel: 100 packets missed in a 2 s silence


def after_silence(silence: float, missed: int, **rules) -> tuple[int, int, float]:
    """(loss events, packets counted lost, LOSSP) after 2.7 s at PPS, a silence
    of ``silence`` s and ``missed`` packets gone, then 1 s at PPS again."""
    r = make(**rules)
    s = Script(r, tsi=3)
    s.steady(0.3, 3.0, PPS, [T])
    before = (r.loss_events, r.lost)
    back = 3.0 + silence
    run_until(r, back - 1e-6)
    s.pkt(T, back, skip=missed)
    s.steady(back + 1 / PPS, back + 1.0, PPS, [T])
    return r.loss_events - before[0], r.lost - before[1], r.lossp.loss_rate


def test_a_path_down_for_two_seconds_is_no_loss() -> None:
    assert after_silence(2.0, 100)[:2] == (0, 0)


def test_without_the_rule_the_outage_is_a_loss_event_of_every_missed_packet() -> None:
    events, lost, _ = after_silence(2.0, 100, off=("outage_not_loss",))
    assert events == 1 and lost == 100


def test_a_short_silence_or_few_missed_packets_stay_losses() -> None:
    assert after_silence(0.5, 25)[:2] == (1, 25)  # shorter than 1 s: congestion may do that
    assert after_silence(2.0, 5)[:2] == (1, 5)  # under 8 packets: not the path's outage
