"""WEBRC's ``startup_carried_clock``: in start-up, a wave of the latest joins whose
first packet left the sender before its join (a nearer switch already held it,
paper 4.4) brings the next joins at once, up to Γ³ over ARR, instead of at the
next epoch boundary."""

from __future__ import annotations

from collections.abc import Callable

from fakes import feed, run_until, webrc_receiver

from p4mcc.hosts import wire
from p4mcc.hosts.core import JoinGroup
from p4mcc.hosts.webrc import WebrcParams, WebrcReceiver, channel_group
from p4mcc.hosts.webrc.params import gamma
from p4mcc.hosts.wire import WebrcData

G = "239.2.0.0"
PARAMS = WebrcParams(session_rate_bps=20_000_000, packet_length=1024)
T = PARAMS.t
PPS = 40  # the base channel's and every answered wave's packets per second in this script
STEP = 0.001  # the script's clock tick
ANSWER = 0.002  # a carried wave's first packet comes this long after its join, sent 10 ms before it
WHOLE_WAY = 0.21  # a wave from the sender's side: its first packet this long after the join, sent 10 ms after it


def make(names: tuple[str, ...]) -> WebrcReceiver:
    return webrc_receiver(PARAMS, names, G)  # type: ignore[return-value]


def script(r: WebrcReceiver, carried: Callable[[float, int], bool], until: float = 0.9) -> list[tuple[float, int]]:
    """Base-channel packets from 0.1 s; each joined wave's first packet ``ANSWER`` s
    after its join when ``carried(join time, k)`` (k: its place in its set of
    joins, 0 the oldest), ``WHOLE_WAY`` s otherwise, then ``PPS`` packets a
    second.  The joins the receiver made: (time, channel)."""
    joins: list[tuple[float, int]] = []
    joined_at: dict[int, float] = {}
    psn: dict[int, int] = {}
    next_at: dict[int, float] = {T: 0.1}

    def took(events: list[object], now: float) -> None:
        batch = [e for e in events if isinstance(e, JoinGroup) and e.group != channel_group(G, T, T)]
        for k, e in enumerate(batch):
            cn = next(c for c in range(T) if channel_group(G, c, T) == e.group)
            joins.append((round(now, 3), cn))
            joined_at[cn] = now
            near = carried(now, k)
            first = now + (ANSWER if near else WHOLE_WAY)
            next_at[cn] = first
            sent = now - 0.01 if near else now + 0.01
            psn[cn] = 100
            pending_first[cn] = (first, sent)

    pending_first: dict[int, tuple[float, float]] = {}
    t = 0.0
    while t < until:
        t = round(t + STEP, 6)
        took(run_until(r, t).events, t)
        for cn in sorted(next_at):
            if next_at[cn] > t + 1e-9:
                continue
            first = pending_first.pop(cn, None)
            sent = first[1] if first is not None else t - 0.005
            psn[cn] = psn.get(cn, 100) + 1
            out = feed(r, WebrcData(session_id=1, cn=cn, psn=psn[cn], tsi=5, timestamp=wire.ts_us(sent),
                                    payload=bytes(PARAMS.packet_length)), t)
            next_at[cn] = t + 1 / PPS
            took(out.events, t)
    return joins


def times(joins: list[tuple[float, int]]) -> list[float]:
    return sorted({t for t, _ in joins})


def test_a_carried_answer_brings_the_next_joins_at_once() -> None:
    def every(t_join: float, k: int) -> bool:
        return True

    with_rule = make(("startup_joins", "startup_carried_clock"))
    clocked = times(script(with_rule, every))
    paced = times(script(make(("startup_joins",)), every))
    assert paced == [0.5]  # 3.2: the next decision waits for a full epoch after the join took effect
    # the first decision at the epoch, then one set of joins per carried answer, ANSWER s apart
    assert clocked[:3] == [0.5, 0.5 + ANSWER, 0.5 + 2 * ANSWER]
    assert with_rule.clocked_joins >= 2


def test_a_wave_sent_after_its_join_brings_nothing() -> None:
    r = make(("startup_joins", "startup_carried_clock"))
    assert times(script(r, lambda t, k: False)) == [0.5]
    assert r.clocked_joins == 0


def test_an_older_wave_of_the_joins_is_evidence_enough() -> None:
    # sparse waves' next packet is rarely sent before the join: the oldest wave
    # of a set coming carried says the switch holds it (and the older ones)
    r = make(("startup_joins", "startup_carried_clock"))
    assert times(script(r, lambda t, k: k == 0))[:2] == [0.5, 0.5 + ANSWER]


def test_each_step_stays_within_three_gammas_of_arr() -> None:
    r = make(("startup_joins", "startup_carried_clock"))
    seen: list[tuple[float, float, int]] = []  # (ARR, ARR after, waves) per clocked step
    step = type(r)._packet_seen

    def watch(self: WebrcReceiver, msg: WebrcData, now: float) -> None:
        arr, nwc = self.arr, self.nwc
        step(self, msg, now)
        if arr is not None and self.nwc > nwc:
            seen.append((arr, self.arr or 0.0, nwc))

    type(r)._packet_seen = watch  # type: ignore[method-assign]
    try:
        script(r, lambda t, k: True)
    finally:
        type(r)._packet_seen = step  # type: ignore[method-assign]
    assert seen
    for before, after, nwc in seen:
        assert after <= gamma(PARAMS.p, nwc) ** 3 * before * (1 + 1e-9)
    assert r.nwc <= r.N


def test_a_steps_dense_wave_from_the_sender_side_is_left_again() -> None:
    # the first decision's waves come carried, the step they bring comes the whole way:
    # its waves, a packet every 0.1 s or more often, would have shown an earlier packet
    # had the switch held them (200 ms one-way): past what the neighbours hold
    r = make(("startup_joins", "startup_carried_clock"))
    joins = script(r, lambda t, k: t < 0.501, until=0.75)
    first = sum(1 for t, _ in joins if t == 0.5)
    assert times(joins)[:2] == [0.5, 0.5 + ANSWER]
    assert r.clocked_undone == len(joins) - first > 0
    assert r.nwc == first
