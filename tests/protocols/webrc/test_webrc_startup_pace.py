"""WEBRC's ``startup_carried``: a start-up wave a nearer switch already carried
(its first packet left the sender before the join) lets the next decision
come one epoch after the join took effect instead of two."""

from __future__ import annotations

from fakes import feed, run_until, webrc_receiver

from p4mcc.hosts import wire
from p4mcc.hosts.core import JoinGroup
from p4mcc.hosts.webrc import WebrcParams, WebrcReceiver, channel_group
from p4mcc.hosts.wire import WebrcData

G = "239.2.0.0"
PARAMS = WebrcParams(session_rate_bps=20_000_000, packet_length=1024)
T = PARAMS.t
PPS = 40  # every channel's packets per second in this script


def make(names: tuple[str, ...]) -> WebrcReceiver:
    return webrc_receiver(PARAMS, names, G)  # type: ignore[return-value]


def script(r: WebrcReceiver, sent_before_join: bool, until: float = 1.05) -> list[tuple[float, str]]:
    """Base-channel packets from 0.1 s, and once waves are joined their
    packets, 20 ms after the join, sent 10 ms before it (carried for a
    neighbour) or 10 ms after it; the joins the receiver made, with their times."""
    joins: list[tuple[float, str]] = []
    psn: dict[int, int] = {}
    joined_at: dict[int, float] = {}
    t = 0.1
    while t < until:
        for e in run_until(r, t).events:
            if isinstance(e, JoinGroup):
                joins.append((round(r.now, 3), e.group))
        for cn in [T, *r.joined]:
            if cn != T:
                joined_at.setdefault(cn, max(j for j, g in joins if g == channel_group(G, cn, T)))
                if t < joined_at[cn] + 0.02:
                    continue
                sent = joined_at[cn] + (-0.01 if sent_before_join else 0.01) if cn not in psn else t - 0.005
            else:
                sent = t - 0.005
            psn[cn] = psn.get(cn, 100) + 1
            feed(r, WebrcData(session_id=1, cn=cn, psn=psn[cn], tsi=5, timestamp=wire.ts_us(sent),
                              payload=bytes(PARAMS.packet_length)), t)
        t = round(t + 1 / PPS, 6)
    return joins


def decisions(joins: list[tuple[float, str]]) -> list[float]:
    return sorted({t for t, g in joins if g != channel_group(G, T, T)})


def test_a_carried_wave_lets_the_next_decision_come_one_epoch_later() -> None:
    with_rule = decisions(script(make(("startup_joins", "startup_carried")), sent_before_join=True))
    without = decisions(script(make(("startup_joins",)), sent_before_join=True))
    assert with_rule == [0.5, 1.0]  # the second decision one epoch after the first took effect
    assert without == [0.5]  # 3.2: a full epoch of RR after the join took effect first


def test_a_wave_sent_after_the_join_keeps_the_paper_pace() -> None:
    assert decisions(script(make(("startup_joins", "startup_carried")), sent_before_join=False)) == [0.5]


def test_a_carried_decision_joins_at_most_three_waves_within_three_gammas_of_arr() -> None:
    r = make(("startup_joins", "startup_carried"))
    joins = script(r, sent_before_join=True)
    second = [g for t, g in joins if t == 1.0]
    assert 1 <= len(second) <= 3
    assert r.early_decisions == 1


def test_after_an_early_decision_trr_is_at_least_the_last_epochs_rr() -> None:
    # trr_recent's mean is empty until a full epoch after the join: the
    # lagging average would seed a start-up exit far below the reception.
    r = make(("trr_recent", "startup_joins", "startup_carried"))
    script(r, sent_before_join=True, until=1.55)
    assert r.early_decisions == 2 and not r._rr_recent  # at 1.0 and 1.5
    assert r.trr is not None and r.trr >= r.last_rr > 0
