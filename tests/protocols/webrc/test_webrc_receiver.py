"""WEBRC receiver rules (paper 3.1-3.3, Table 2), one test each, scripted packets."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fakes import drain, feed, run_until

from p4mcc.hosts import registry
from p4mcc.hosts.estimators import SelfAdjustingEwma
from p4mcc.hosts.tfrc import tcp_rate_webrc_pps
from p4mcc.hosts.webrc import RULES, WebrcParams, WebrcReceiver, channel_group, gamma
from p4mcc.hosts.webrc import rules as webrc_rules
from p4mcc.hosts import wire
from p4mcc.hosts.wire import WEBRC_LAST_PSN, WebrcData

G = "239.2.0.0"
P = WebrcParams(session_rate_bps=2_000_000, packet_length=1024, tsd=10.0)
T, N = P.t, P.n
BASE = channel_group(G, T, T)


def make(*, off: tuple[str, ...] = (), on: tuple[str, ...] = (), **kw) -> WebrcReceiver:
    """A started receiver: the ``default`` rules less ``off`` plus ``on``, and
    one join per start-up decision (the paper's 3.2) unless ``on`` has
    ``startup_joins``; ``kw`` are parameters."""
    names = RULES.resolve("default", {"startup_joins": False, **{n: False for n in off}, **{n: True for n in on}})
    params = WebrcParams(**{"session_rate_bps": 2_000_000, "packet_length": 1024, **kw})
    r = registry.get("webrc").receiver(registry.SessionConfig(1, G, 7000, "10.0.0.1", "10.0.0.2", params,
                                                              rules=names))
    r.start(0.0)
    return r


class Script:
    """Sends packets of the session to one receiver, numbering PSNs per channel."""

    def __init__(self, r: WebrcReceiver, tsi: int = 5) -> None:
        self.r, self.tsi = r, tsi
        self.psn: dict[int, int] = {}

    def pkt(self, cn: int, now: float, *, skip: int = 0, psn: int | None = None, owd: float = 0.05):
        """One packet arriving at ``now`` after a one-way delay of ``owd`` seconds."""
        p = self.psn.get(cn, 100) + skip if psn is None else psn
        self.psn[cn] = (p + 1) & 0xFFFF
        return feed(self.r, WebrcData(session_id=1, cn=cn, psn=p & 0xFFFF, tsi=self.tsi,
                                      timestamp=wire.ts_us(now - owd), payload=bytes(P.packet_length)), now)

    def steady(self, t0: float, t1: float, pps: float, channels: list[int], owd: float = 0.05):
        """Packets round-robin over ``channels`` at ``pps`` in [t0, t1), firing
        epochs; ``owd`` above 0.05 s is a queue on the way."""
        events = []
        n = int((t1 - t0) * pps)
        for i in range(n):
            t = t0 + i / pps
            events += run_until(self.r, t).events
            events += self.pkt(channels[i % len(channels)], t, owd=owd).events
        events += run_until(self.r, t1).events
        return events


def joins(events) -> list[str]:
    from p4mcc.hosts.core import JoinGroup

    return [e.group for e in events if isinstance(e, JoinGroup)]


def leaves(events) -> list[str]:
    from p4mcc.hosts.core import LeaveGroup

    return [e.group for e in events if isinstance(e, LeaveGroup)]


def test_joins_the_base_channel_first_and_only_it() -> None:
    r = registry.get("webrc").receiver(registry.SessionConfig(1, G, 7000, "10.0.0.1", "10.0.0.2", P))
    r.start(0.0)
    assert drain(r).joins() == [BASE]


def test_no_wave_join_before_a_tsi_is_known() -> None:
    r = make()
    drain(r)
    assert joins(run_until(r, 5.0).events) == []
    assert r.tsi is None


def test_base_packet_gives_tsi_and_first_mrtt() -> None:
    r = make()
    drain(r)
    Script(r, tsi=7).pkt(T, 0.8)
    assert r.tsi == 7
    # Join at 0, first base packet at 0.8 s; half the base gap (0.5 s) is
    # taken off, but never more than half the sample: 0.8 - 0.4.
    assert r.mrtt_samples == [pytest.approx(0.4)]
    assert r.artt_value == pytest.approx(0.4)


def test_joins_next_wave_at_an_epoch_boundary_in_startup() -> None:
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    ev = sc.steady(0.1, 1.0, 20, [T])
    assert joins(ev) == [channel_group(G, 5, T)]  # the oldest active wave: CN = TSI
    assert r.nwc == 1 and r.pending is not None
    when = r.pending[1]
    assert when == pytest.approx(0.5) or when == pytest.approx(1.0)  # epoch boundaries


def _startup_with_one_wave(r: WebrcReceiver) -> Script:
    """Base channel from 0.2 s (MRTT 0.2 s), one wave joined and arriving 0.2 s later."""
    sc = Script(r, tsi=5)
    sc.steady(0.2, 1.0, 20, [T])
    t_join = r.pending[1]
    sc.pkt(5, t_join + 0.2)  # first packet of the joined wave
    return sc


def test_no_second_join_while_a_join_is_pending() -> None:
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    ev = sc.steady(0.1, 1.4, 40, [T])  # the wave never arrives (and has not timed out)
    assert len(joins(ev)) == 1
    assert r.timer_at("join_timeout") > 1.4


def test_mrtt_from_join_to_first_packet_with_spacing_correction() -> None:
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    sc.steady(0.1, 1.0, 20, [T])
    cn, t_join, gap = r.pending
    sc.pkt(cn, t_join + 0.3)
    assert r.mrtt_samples[-1] == pytest.approx(0.3 - min(gap / 2, 0.15))
    assert r.pending is None


def test_artt_appendix_mode_uses_the_self_adjusting_estimator() -> None:
    r = make(off=("precision_artt",))
    drain(r)
    sc = _startup_with_one_wave(r)
    e = SelfAdjustingEwma(r.ARTT_ALPHA, initial=r.mrtt_samples[0])
    for m in r.mrtt_samples[1:]:
        e.update(m)
    assert r.artt_value == pytest.approx(e.value)
    assert len(r.mrtt_samples) == 2
    del sc


def test_artt_weighs_each_mrtt_sample_by_its_channels_packet_gap() -> None:
    """An MRTT sample is the path's multicast RTT plus a wait of up to one packet
    gap of the joined channel.  The base channel's sample (gap 1 s) says little
    about a 50 ms path; a busy wave's (gap 5 ms) says it: ARTT follows the
    second.  The appendix's EWMA counted both alike and kept ARTT near the
    first for many joins.
    """
    def artt_after_two_joins(estimator: str) -> float:
        # the appendix's small fraction, with or without the precision weights
        r = make(off=("artt_follows",) + (() if estimator == "precision" else ("precision_artt",)))
        drain(r)
        sc = Script(r, tsi=5)
        sc.pkt(T, 1.0)  # base channel: join at 0, first packet 1 s later (MRTT 0.5 s)
        sc.steady(1.0, 2.0, 20, [T])
        cn, t_join, _ = r.pending
        r.pending = (cn, t_join, 0.005)  # a busy wave: one packet every 5 ms
        sc.pkt(cn, t_join + 0.0525)  # MRTT 50 ms
        assert r.mrtt_samples == [pytest.approx(0.5), pytest.approx(0.05)]
        return r.artt_value

    assert artt_after_two_joins("precision") == pytest.approx(0.05, rel=0.02)
    assert artt_after_two_joins("appendix") > 0.3


def test_leaves_the_oldest_wave_when_its_slot_ends() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.tsi = 6
    out = sc.pkt(T, 2.0)
    assert out.leaves() == [channel_group(G, 5, T)]
    assert r.nwc == 0 and r.tsi == 6


@pytest.mark.parametrize("follow", [True, False])
def test_leaving_the_quiet_wave_takes_only_its_last_rate_from_arr(follow: bool) -> None:
    """The wave that turns quiet at a slot's end sends at BCR by then, and
    the base channel steps back from P·BCR to BCR: the subscription falls
    by P·BCR, not by Γ (the fluid model, section 3).  With the decay
    carried epoch by epoch (``rates_follow_decay``) that is all a leave may
    take from ARR; the appendix's plain averages take the slot's decay there
    instead, ARR / Γ."""
    r = make(off=() if follow else ("rates_follow_decay",))
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    arr, nwc = r.arr, r.nwc
    sc.tsi = 6
    sc.pkt(T, 3.0)
    assert r.nwc == nwc - 1
    if follow:
        assert r.arr == pytest.approx(arr - P.p * P.base_rate_pps)
    else:
        assert r.arr == pytest.approx(arr / gamma(P.p, nwc - 1))


def test_losses_at_the_end_of_a_wave_are_detected_on_leaving() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.pkt(5, 1.5, psn=WEBRC_LAST_PSN - 4)  # the last 4 packets (…65535) never come
    lost = r.lost
    sc.tsi = 6
    sc.pkt(T, 2.0)
    assert r.lost == lost + 4


def test_loss_event_lasts_artt() -> None:
    # Footnote 4 (the paper's rule): a loss event lasts ARTT from its first loss.
    r = make(off=("loss_event_episode", "loss_event_send_time"))
    drain(r)
    sc = _startup_with_one_wave(r)
    artt = r.artt_value
    sc.pkt(T, 2.0, skip=1)
    sc.pkt(T, 2.0 + 0.5 * artt, skip=1)
    assert r.loss_events == 1
    sc.pkt(T, 2.0 + 1.5 * artt, skip=1)
    assert r.loss_events == 2 and r.lost == 3


def test_losses_of_one_episode_are_one_event_up_to_the_cap() -> None:
    # The default: a loss within ARTT of the event's last loss extends the
    # event (one overflow, one event, as TCP cuts once per window of losses),
    # but never beyond loss_event_max_rtts ARTTs from its first loss (here by
    # arrival; on the sender's clock the same rule holds for send times).
    r = make(off=("loss_event_send_time",))
    drain(r)
    sc = _startup_with_one_wave(r)
    artt, cap = r.artt_value, webrc_rules.LossEventEpisode.MAX_SPANS
    t = 2.0
    for _ in range(int(cap / 0.75)):  # losses 0.75 ARTT apart, up to the cap
        sc.pkt(T, t, skip=1)
        t += 0.75 * artt
    assert r.loss_events == 1
    sc.pkt(T, 2.0 + (cap + 0.1) * artt, skip=1)  # within ARTT of the last, past the cap
    assert r.loss_events == 2
    sc.pkt(T, 2.0 + (cap + 1.2) * artt, skip=1)  # more than ARTT after the last
    assert r.loss_events == 3


def test_no_join_during_a_loss_event() -> None:
    # Two receivers get the same script; the control joins at some epoch t_j.
    # The other loses one packet 50 ms before t_j: inside its loss event
    # (ARTT ~ 0.2 s) it must not join at t_j.
    def prepared() -> tuple[WebrcReceiver, Script]:
        r, sc = _in_steady_state()
        return r, sc

    ctrl, sc = prepared()
    before = ctrl.joins
    t = 6.0
    while ctrl.joins == before:
        sc.steady(t, t + 0.5, 30, [T, 5])
        t += 0.5
    t_join = ctrl.pending[1]

    r, sc = prepared()
    sc.steady(6.0, t_join - 0.05, 30, [T, 5])
    sc.pkt(T, t_join - 0.05, skip=1)
    assert r.in_loss_event(t_join)
    sc.steady(t_join - 0.04, t_join + 0.01, 30, [T, 5])
    assert r.joins == before


def test_first_loss_ends_startup_with_reqn_equal_to_trr() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    assert r.startup
    sc.pkt(T, 3.01, skip=1)
    assert not r.startup and r.startup_exit == "loss"
    assert r.reqn() == pytest.approx(r.trr, rel=1e-6)  # eq. 6 solved for LOSSP
    assert r.ssr == pytest.approx(0.5 * r.trr)


def test_every_loss_event_sets_ssr_below_trr_again() -> None:
    """3.1: SSR "is set below TRR when packet losses are detected", at each
    loss as TCP's ssthresh, not once at the start-up exit, where it would stay
    a floor of the target above what the receiver now gets."""
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    sc.pkt(T, 3.01, skip=1)  # the start-up exit at 40 packets/s
    at_exit = r.ssr
    assert at_exit == pytest.approx(0.5 * r.trr)
    sc.steady(3.02, 9.0, 12, [T, 5])  # the path now carries 12 packets/s
    assert r.trr == pytest.approx(11.5, abs=1.0) and r.loss_events == 1
    sc.pkt(T, 9.01, skip=1)  # a second loss event
    assert r.loss_events == 2
    assert r.ssr == pytest.approx(0.5 * r.trr) and at_exit > 1.5 * r.trr
    assert r.ssr < r.trr  # no floor above the reception


def test_startup_target_uses_gamma_cubed_then_gamma() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    g = gamma(0.75, r.nwc)
    assert r.trate() == pytest.approx(g**3 * r.trr * 1.02)
    sc.pkt(T, 3.01, skip=1)  # out of start-up
    assert r.trate() == pytest.approx(min(max(r.ssr, r.reqn()), g * r.trr * 1.02))


def test_reqn_is_eq_6() -> None:
    r = make()  # the paper's t_RTO = 4·ARTT
    r.lossp.set_loss_rate(0.01)
    r.artt = SelfAdjustingEwma(0.1, initial=0.2)
    r.have_artt = True
    lp = 0.01
    assert r.reqn() == pytest.approx(math.sqrt(1.5) / (0.2 * math.sqrt(lp) * (1 + 9 * lp * (1 + 32 * lp * lp))))
    assert r.reqn() == pytest.approx(tcp_rate_webrc_pps(0.2, 0.01))


def test_max_reception_rate_caps_the_target() -> None:
    r = make(max_rate_bps=100_000)
    drain(r)
    ev = Script(r, tsi=5).steady(0.2, 3.0, 20, [T])
    assert r.trate() == pytest.approx(100_000 / (8 * 1024))
    assert joins(ev) == []  # Γ·ARR (35 pkt/s) exceeds the 12.2 pkt/s cap


def test_startup_ends_on_a_large_mrtt_jump() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)  # MRTT sample 0.2 s
    t = 1.5
    while r.pending is None:
        sc.steady(t, t + 0.5, 40, [T, 5])
        t += 0.5
    cn, t_join, gap = r.pending
    assert r.startup
    sc.pkt(cn, t_join + 1.5)  # the second wave arrives 1.5 s after its join
    assert not r.startup and r.startup_exit == "mrtt"


def _startup_on_time(until: float, **kw: Any) -> tuple[WebrcReceiver, Script]:
    """A receiver (``make(**kw)``) in start-up with one wave, receiving 80
    packets/s with no queue on the way until ``until``, and its script."""
    r = make(**kw)
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, until, 80, [T, 5])
    return r, sc


def test_startup_ends_when_reception_lags_the_anticipated_rate() -> None:
    r, sc = _startup_on_time(4.0)
    assert r.startup
    sc.steady(4.0, 8.0, 40, [T, 5], owd=0.12)  # reception halves behind a queue: the bottleneck is reached
    assert not r.startup and r.startup_exit == "rr-lag"


def _in_steady_state(rate: float = 30.0, block: bool = True, **kw: Any) -> tuple[WebrcReceiver, Script]:
    """A receiver (``make(**kw)``) out of start-up with one wave at 40 pps, a
    low loss estimate and TRR ~ ``rate``, and its script; ``block`` False
    leaves 3.3 out (:func:`_no_overflow_block`)."""
    r = make(**kw)
    if not block:
        _no_overflow_block(r)
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    sc.pkt(T, 3.01, skip=1)
    r.lossp.set_loss_rate(1e-4)  # the equation alone would allow far more
    sc.steady(3.1, 6.0, rate, [T, 5])  # 30: a quarter below the start-up's 40, so 3.3 lets the next join through
    return r, sc


def _no_overflow_block(r: WebrcReceiver) -> None:
    """3.3 aside: a loss-free reception that stays within 10 % of its maximum
    blocks every join and resets LOSSP; tests of other rules on such a
    reception leave that test out."""
    r._buffers_draining = lambda now, rr_rate: False  # type: ignore[method-assign]


@pytest.mark.parametrize("follow", [True, False])
def test_averages_that_follow_the_waves_decay_let_a_loss_free_receiver_join(follow: bool) -> None:
    """``rates_follow_decay``: a reception that falls exactly as the joined
    waves decay (P per TSD), with no loss and no queue, is the subscription
    carried in full, and eq. 5's Γ·ARR ≤ Γ·TRR test must let the next join
    through.  Plain averages lag the decay by different delays (ARR's EWMA
    more than TRR's recent mean) and hold it shut."""
    r, sc = _in_steady_state(40.0, block=False, off=() if follow else ("rates_follow_decay",))
    cn = r.pending[0]  # the join _in_steady_state left pending: answered below
    joins_before = r.joins
    t = 6.0
    while t < 11.0 and r.joins == joins_before:
        sc.steady(t, t + 0.5, 60 * 0.75 ** ((t - 6.0) / 10), [T, 5, cn])
        t += 0.5
    assert r.reqn() > 2 * r.arr  # the equation is far from binding: only the Γ·TRR cap decides
    if follow:
        assert r.joins == joins_before + 1 and t <= 7.0  # at the first full epoch after the join's effect
    else:
        assert r.joins == joins_before  # ARR stays above TRR by more than trr_headroom


def test_buffer_overflow_rule_blocks_joins_while_rr_stays_flat() -> None:
    r, sc = _in_steady_state()  # the paper's 3.3: whatever the losses
    joins_before = r.joins
    sc.steady(6.0, 12.0, 40, [T, 5], owd=0.12)  # reception stays flat at its maximum, behind a queue
    assert r.blocked_overflow > 0 and r.joins == joins_before
    # LOSSP was reset so that REQN equals the target rate.
    assert r.reqn() == pytest.approx(r.trate(), rel=0.05)


def test_join_proceeds_once_reception_falls_below_its_maximum() -> None:
    r, sc = _in_steady_state()
    joins_before = r.joins
    sc.steady(6.0, 10.0, 30, [T, 5])  # the waves decay: RR drops 25%
    assert r.joins >= joins_before + 1


def test_join_timeout_undoes_a_join_that_never_arrives() -> None:
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    ev = sc.steady(0.1, 1.0, 20, [T])
    (g,) = joins(ev)
    cn, t_join, gap = r.pending
    deadline = t_join + max(1.0, 3 * r.artt_value + 2 * gap)
    ev = sc.steady(1.0, deadline - 0.01, 20, [T])
    assert r.join_timeouts == 0
    ev = sc.steady(deadline - 0.01, deadline + 0.6, 20, [T])
    assert r.join_timeouts == 1
    assert ev and g in leaves(ev)
    assert joins(ev) == [g]  # tried again at the next epoch


def test_malformed_and_foreign_packets_are_counted() -> None:
    r = make()
    r.receive_datagram(b"nonsense", ("1.1.1.1", 1), 0.0)
    r.receive_datagram(WebrcData(session_id=2, cn=T).encode(), ("1.1.1.1", 1), 0.0)
    r.receive_datagram(WebrcData(session_id=1, cn=3).encode(), ("1.1.1.1", 1), 0.0)  # not joined
    assert r.malformed == 1 and r.ignored == 2 and r.received == 0


def test_close_leaves_every_group() -> None:
    r = make()
    drain(r)
    _startup_with_one_wave(r)
    r.close(2.0)
    assert drain(r).leaves() == [channel_group(G, 5, T), BASE]
    assert r.get_timer() is None


def test_startup_may_join_several_waves_per_decision() -> None:
    # Beyond 3.2's one wave per decision: as many as keep Γ·ARR ≤ Γ³·TRR.
    one = make()
    drain(one)
    assert len(joins(Script(one, tsi=5).steady(0.1, 1.0, 20, [T]))) == 1
    r = make(on=("startup_joins",))
    drain(r)
    ev = Script(r, tsi=5).steady(0.1, 1.0, 20, [T])
    assert joins(ev) == [channel_group(G, 5, T), channel_group(G, 6, T)]  # Γ₂·ARR > Γ₂³·TRR
    assert r.nwc == 2 and r.pending is not None and r.pending[0] == 5


def test_join_timeout_undoes_every_wave_of_its_decision() -> None:
    r = make(on=("startup_joins",))
    drain(r)
    ev = Script(r, tsi=5).steady(0.1, 1.0, 20, [T])
    out = run_until(r, r.timer_at("join_timeout"))
    assert sorted(out.leaves()) == sorted(joins(ev)) and r.nwc == 0 and r.joined == []


def _rr_after_join(mode: str) -> WebrcReceiver:
    r = make(off=() if mode == "recent" else ("trr_recent",), max_rate_bps=30 * 8 * 1024)  # MRR: no further join
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 20, [T, 5])
    sc.steady(3.0, 5.6, 60, [T, 5])  # reception triples for five epochs
    return r


def test_trr_is_the_rate_received_since_the_last_join() -> None:
    recent, ewma = _rr_after_join("recent"), _rr_after_join("ewma")
    assert recent.trr == pytest.approx(60, rel=0.05)  # the full epochs at the new rate
    assert ewma.trr < 55  # the paper's EWMA still remembers the old rate


def _out_of_startup(centred: bool) -> WebrcReceiver:
    r, sc = _in_steady_state(off=() if centred else ("join_centred",))
    return r


@pytest.mark.parametrize("centred", [True, False])
def test_join_limit_centres_the_rate_on_the_equation(centred: bool) -> None:
    r = _out_of_startup(centred)
    assert not r.startup
    g = gamma(r.p.p, r.nwc)
    r.trr = 1e6  # the reception cap far away: only the equation limits
    r.ssr = 0.0
    want = r.reqn() * (math.sqrt(g) if centred else 1.0)
    assert r._join_limit(g) == pytest.approx(want)


# Own-path MRTT (rule own_path_mrtt; docs/protocols/webrc.md) ----------

OWD = 0.070  # the data's one-way delay (sender clock = receiver clock here)
UP = 0.021  # a join's upward travel to the sender's switch


def _sample(r: WebrcReceiver, cn: int, t_join: float, sent: float, gap: float = 0.005) -> float:
    """One MRTT sample: join ``cn`` at ``t_join``; its first packet left the sender at ``sent``."""
    r.startup = False
    if cn not in r.joined:
        r.joined.append(cn)
    r.pending = (cn, t_join, gap)
    feed(r, WebrcData(session_id=1, cn=cn, psn=100, tsi=5, timestamp=wire.ts_us(sent),
                      payload=bytes(P.packet_length)), sent + OWD)
    return r.mrtt_samples[-1]


def _full(r: WebrcReceiver, cn: int, t: float) -> float:
    """A join that travelled to the sender's switch: the packet left UP after it."""
    return _sample(r, cn, t, t + UP)


def _local(r: WebrcReceiver, cn: int, t: float) -> float:
    """A join that stopped at the last switch, which already had the wave for a
    neighbour: the first packet was already on its way and arrives 8 ms later."""
    return _sample(r, cn, t, t + 0.008 - OWD)


@pytest.mark.parametrize("mode", ["own", "shared"])
def test_a_join_answered_by_a_nearer_switch_counts_the_whole_path(mode: str) -> None:
    """Paper 4.4: a join that finds the wave at a nearer switch (another receiver
    there joined first) measures only that switch's cycle, so co-located
    receivers measure about RTT/n and take n times a TCP flow's rate.  In
    "own" mode the sample is raised to the receiver's own path: the upward
    time learnt from joins that went the whole way plus this packet's delay."""
    r = make(off=() if mode == "own" else ("own_path_mrtt",))
    drain(r)
    _full(r, 5, 10.0)
    _full(r, 6, 20.0)
    local = _local(r, 7, 30.0)
    if mode == "shared":
        assert local == pytest.approx(0.008 - 0.0025)
    else:
        # The whole way's upward time (each sample's wait taken as half its
        # 5 ms gap), plus this packet's own one-way delay.
        assert local == pytest.approx(UP - 0.0025 + OWD)
        assert r.mrtt_raised == 1


def test_one_late_first_packet_does_not_set_the_own_path() -> None:
    """A first packet that came far later than the channel's gap (lost packets,
    a pause) would lift every later sample: the own path needs two samples."""
    r = make()
    drain(r)
    _full(r, 5, 10.0)
    _sample(r, 6, 20.0, 20.0 + 0.5)  # waited 0.5 s for the wave
    assert r.mrtt_raised == 0  # samples that went the whole way are the paper's
    assert _local(r, 7, 30.0) == pytest.approx(UP - 0.0025 + OWD)


def test_own_path_is_forgotten_after_its_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webrc_rules._UpwardTimes, "UPWARD_MEMORY", 15.0)
    r = make()
    drain(r)
    _full(r, 5, 10.0)
    _full(r, 6, 20.0)
    assert _local(r, 7, 40.0) == pytest.approx(0.008 - 0.0025)  # both older than 15 s


def test_startup_samples_do_not_teach_the_own_path() -> None:
    """In start-up the receiver joins sparse waves in bursts: waits far beyond the
    gap estimate, so those samples would overstate the upward time."""
    r = make()
    drain(r)
    r.joined.append(5)
    r.pending = (5, 10.0, 0.005)
    assert r.startup
    feed(r, WebrcData(session_id=1, cn=5, psn=100, tsi=5, timestamp=wire.ts_us(10.0 + UP),
                      payload=bytes(P.packet_length)), 10.0 + UP + OWD)
    assert len(r.mrtt_samples) == 1 and not r._upward


def test_samples_that_went_the_whole_way_are_the_papers() -> None:
    """A whole-way sample with a short wait is not lifted to the others' mean."""
    r = make()
    drain(r)
    _sample(r, 5, 10.0, 10.0 + UP + 0.004)
    _sample(r, 6, 20.0, 20.0 + UP + 0.004)
    assert _sample(r, 7, 30.0, 30.0 + UP) == pytest.approx(UP + OWD - 0.0025)
    assert r.mrtt_raised == 0


def _losses_after_two_whole_way_joins(q: float, gaps_in_artt: list[float], **kw) -> tuple[WebrcReceiver, Script]:
    """A steady-state receiver whose two joins went the whole way (upward time
    UP, one-way delay OWD), then losses at the given offsets in ARTTs, each
    revealed by a packet that crossed ``q`` seconds of queue."""
    r = make(off=("loss_event_episode", *kw.pop("off", ())), **kw)
    drain(r)
    _full(r, 5, 10.0)
    _full(r, 6, 20.0)
    sc = Script(r)
    sc.pkt(6, 29.9, psn=101, owd=OWD)
    for k in gaps_in_artt:  # each lost packet's neighbours arrive 0.01 ARTT apart
        sc.pkt(6, 30.0 + (k - 0.01) * r.artt_value, owd=OWD + q)
        sc.pkt(6, 30.0 + k * r.artt_value, skip=1, owd=OWD + q)
    return r, sc


@pytest.mark.parametrize("queue_rule", [True, False])
def test_a_loss_event_spans_the_round_trip_now(queue_rule: bool) -> None:
    """``loss_event_send_time`` (the default): a loss event lasts the round trip
    now, the whole way's upward time plus the one-way delay of the packet that
    revealed the loss, queue included, as TCP's window of losses lasts its
    round trip at the full queue.  With 1.5 ARTT now, losses 1.2 ARTT apart
    are one event; with footnote 4's ARTT they are two."""
    artt = UP - 0.0025 + OWD  # both samples measured the empty path
    q = 1.5 * artt - artt  # the round trip now is 1.5 ARTT
    r, _ = _losses_after_two_whole_way_joins(q, [0.0, 1.2], off=() if queue_rule else ("loss_event_send_time",))
    assert r.artt_value == pytest.approx(artt)
    assert r.loss_events == (1 if queue_rule else 2) and r.lost == 2
    r, _ = _losses_after_two_whole_way_joins(q, [0.0, 1.2, 2.3], off=() if queue_rule else ("loss_event_send_time",))
    assert r.loss_events == (2 if queue_rule else 3)


def test_a_loss_events_span_is_at_most_two_artt() -> None:
    # A one-way delay far above the path's (a drifting clock, a route change)
    # lengthens an event to 2 ARTT at most.
    assert _losses_after_two_whole_way_joins(1.0, [0.0, 1.9])[0].loss_events == 1
    assert _losses_after_two_whole_way_joins(1.0, [0.0, 2.1])[0].loss_events == 2


def test_a_loss_event_spans_artt_before_two_whole_way_joins() -> None:
    r = make(off=("loss_event_episode",))
    drain(r)
    _full(r, 5, 10.0)  # one sample only: the upward time is not known yet
    sc = Script(r)
    sc.pkt(5, 29.9, psn=101, owd=OWD + 1.0)
    sc.pkt(5, 30.0, skip=1, owd=OWD + 1.0)
    sc.pkt(5, 30.0 + 1.19 * r.artt_value, owd=OWD + 1.0)
    sc.pkt(5, 30.0 + 1.2 * r.artt_value, skip=1, owd=OWD + 1.0)
    assert r.loss_events == 2


@pytest.mark.parametrize("send_time", [True, False])
def test_a_loss_found_late_on_a_sparse_channel_joins_the_event_it_was_sent_in(send_time: bool) -> None:
    """A sparse wave reveals a loss only with its next packet, up to seconds
    later.  On the sender's clock (the default) the lost packet could have
    left during the current event, so it is part of it; by arrival it would
    start a second event for one overflow."""
    r, sc = _losses_after_two_whole_way_joins(0.0, [0.0], off=() if send_time else ("loss_event_send_time",))
    artt = r.artt_value
    sc.pkt(5, 30.0 - 2 * artt, psn=101, owd=OWD)  # the sparse channel's last packet before the overflow
    sc.pkt(5, 30.0 + 2.5 * artt, skip=1, owd=OWD)  # its next, after the event: one lost between
    assert r.lost == 2
    assert r.loss_events == (1 if send_time else 2)
    sc.pkt(6, 30.0 + 3.9 * artt, owd=OWD)
    sc.pkt(6, 30.0 + 4 * artt, skip=1, owd=OWD)  # a loss sent after the event: a new one
    assert r.loss_events == (2 if send_time else 3)
    sc.pkt(5, 30.0 + 14 * artt, skip=1, owd=OWD)  # sent ~8 ARTTs after it (interpolated): a new one
    assert r.loss_events == (3 if send_time else 4)


def _join_on_trial(**kw) -> tuple[WebrcReceiver, Script, int, float]:
    """Steady state, then a join (no queue, so 3.3 lets it through) and its
    wave's first packet: (receiver, script, the wave, the time)."""
    r, sc = _in_steady_state(**kw)
    t = 6.0
    while r.pending is None and t < 12.0:
        sc.steady(t, t + 0.5, 40, [T, 5])
        t += 0.5
    cn = r.pending[0]
    sc.pkt(cn, t + 0.01)
    assert r.pending is None
    return r, sc, cn, t + 0.02


@pytest.mark.parametrize("carried", [False, True])
def test_a_join_the_path_does_not_carry_is_left_at_the_next_loss(carried: bool) -> None:
    # join_experiment (RLM's join experiments): a loss event after the join
    # took effect, with the reception not up by half the wave, undoes the join.
    r, sc, cn, t = _join_on_trial()
    g = gamma(P.p, r.nwc - 1)  # the joined wave's step
    rise = 1 + 0.75 * (g - 1) if carried else 1.0
    sc.steady(t, t + 0.6, 40 * rise, [T, 5, cn])
    ev = sc.pkt(T, t + 0.61, skip=2).events  # a loss event
    ev += sc.steady(t + 0.62, t + 1.6, 40 * rise, [T, 5, cn])
    assert (channel_group(G, cn, T) in leaves(ev)) == (not carried)
    assert r.experiments_failed == (0 if carried else 1)


def test_join_experiments_off_keeps_the_wave() -> None:
    r, sc, cn, t = _join_on_trial(off=("join_experiment",))
    sc.steady(t, t + 0.6, 40, [T, 5, cn])
    ev = sc.pkt(T, t + 0.61, skip=2).events
    ev += sc.steady(t + 0.62, t + 1.6, 40, [T, 5, cn])
    assert channel_group(G, cn, T) not in leaves(ev) and not hasattr(r, "experiments_failed")


def test_a_first_startup_loss_below_a_tcp_initial_window_is_forgiven_with_its_overflow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # startup_min_window: a loss while the subscription carries fewer than 10
    # packets per 0.5 s (here 14 packets/s) is a competitor's overflow, not
    # the session's own overshoot: start-up goes on through it and through
    # the further loss events of that overflow (within two loss-event spans,
    # here 2 x ARTT = 0.2 s), and through every later overflow below the
    # window (``FORGIVE_OVERFLOWS`` 0); with 1, the next loss after
    # the first overflow ends start-up.
    def run(overflows: int = 0, rtts: float = 2.0, **kw: Any) -> list[tuple[bool, int]]:
        monkeypatch.setattr(webrc_rules._ForgivesOverflow, "FORGIVE_OVERFLOWS", overflows)
        monkeypatch.setattr(webrc_rules._ForgivesOverflow, "FORGIVE_RTTS", rtts)
        r = make(**kw)
        drain(r)
        sc = Script(r, tsi=5)
        sc.steady(0.2, 1.0, 8, [T])
        assert r.artt_value == pytest.approx(0.1) and r.arr < 20
        seen = []
        for t in (1.05, 1.2, 2.0):  # three loss events (each more than ARTT after the last)
            sc.pkt(T, t, skip=1)
            seen.append((r.startup, r.loss_events))
        return seen

    assert run() == [(True, 1), (True, 2), (True, 3)]
    assert run(overflows=1) == [(True, 1), (True, 2), (False, 3)]
    assert run(overflows=1, rtts=0) == [(True, 1), (False, 2), (False, 3)]
    # the paper's 3.2 (join_past_queue_free forgives nothing here: no join answered)
    assert run(off=("startup_min_window",)) == [(False, 1), (False, 2), (False, 3)]


@pytest.mark.parametrize("queue, floor, forgiven", [(True, 0.2, True), (False, 0.2, False)])
def test_with_a_queue_the_startup_window_counts_per_round_trip(queue: bool, floor: float, forgiven: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # startup_window_min_rtt: with ARTT 0.1 s and a standing queue, 10
    # packets per round trip (held to at least 0.2 s: 50 packets/s) forgive
    # a loss at 36 packets/s; without a queue (random loss) or with the
    # floor at 0 the threshold stays 10 per initial_rtt (20 packets/s).
    monkeypatch.setattr(webrc_rules.StartupMinWindow, "WINDOW_MIN_RTT", floor)
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    sc.steady(0.2, 2.0, 20, [T])
    owd = 0.12 if queue else 0.05
    sc.steady(2.0, 3.0, 20, [T], owd=owd)
    assert r.artt_value == pytest.approx(0.1) and 20 < r.arr < 50
    sc.pkt(T, 3.01, skip=1, owd=owd)
    assert r.loss_events == 1 and r.startup == forgiven


def test_above_the_floors_window_a_startup_loss_ends_startup_with_a_queue() -> None:
    r = make()
    drain(r)
    sc = Script(r, tsi=5)
    sc.steady(0.2, 2.0, 30, [T])
    sc.steady(2.0, 3.0, 30, [T], owd=0.12)
    assert r.artt_value == pytest.approx(0.1) and r.arr > 50
    sc.pkt(T, 3.01, skip=1, owd=0.12)
    assert not r.startup and r.startup_exit == "loss"


def _after_an_mrtt_exit(**kw: Any) -> tuple[WebrcReceiver, Script, float, int]:
    """A receiver whose start-up ended on an MRTT jump, no loss seen; returns
    it, its script, the time and the wave that was joined last."""
    r = make(max_rate_bps=100 * 8 * 1024, **kw)  # MRR 100 pkt/s: no join past it
    drain(r)
    sc = _startup_with_one_wave(r)
    t = 1.5
    while r.pending is None:
        sc.steady(t, t + 0.5, 40, [T, 5])
        t += 0.5
    cn, t_join, _ = r.pending
    sc.pkt(cn, t_join + 1.5)
    assert r.startup_exit == "mrtt"
    return r, sc, t_join + 1.5, cn


@pytest.mark.parametrize("at_loss", [True, False])
def test_after_a_loss_free_exit_reqn_follows_the_reception_until_the_first_loss(at_loss: bool) -> None:
    # RFC 5348 6.3.1: the first loss interval comes from X_recv at the first
    # loss; 3.2 seeds it at the exit, from TRR (first_interval_at_loss False).
    r, sc, t, cn = _after_an_mrtt_exit(off=() if at_loss else ("first_interval_at_loss",))
    _no_overflow_block(r)
    at_exit = r.reqn()
    assert at_exit == pytest.approx(r.trr, rel=0.05)
    sc.steady(t, t + 3.0, 90, [T, 5, cn])  # the waves arrive: over twice the rate, no loss
    if at_loss:
        assert r.reqn() >= 0.95 * 90
    else:
        assert r.reqn() < 1.2 * at_exit
    sc.pkt(T, t + 3.01, skip=1)  # the first loss
    if not at_loss:
        return
    assert r.reqn() == pytest.approx(max(r.last_rr, r.trr), rel=1e-6)
    sc.steady(t + 3.02, t + 5.0, 90, [T, 5, cn])  # an epoch without a loss event ends the rule
    sc.steady(t + 5.0, t + 8.0, 100, [T, 5, cn])
    assert r.reqn() < 95  # no longer follows the reception: the intervals count


def test_after_a_loss_exit_the_exit_seed_stands() -> None:
    # A loss exit keeps 3.2's seed from TRR (following the reception from
    # there took a session that had the link alone far above TCP flows
    # that arrived later).
    reqns = []
    for at_loss in (True, False):
        r = make(max_rate_bps=100 * 8 * 1024, off=() if at_loss else ("first_interval_at_loss",))
        drain(r)
        sc = _startup_with_one_wave(r)
        sc.steady(1.5, 3.0, 40, [T, 5])
        sc.pkt(T, 3.01, skip=1)
        assert r.startup_exit == "loss"
        sc.steady(3.1, 4.5, 90, [T, 5])  # over twice the rate, no loss
        reqns.append(r.reqn())
    assert reqns[0] == reqns[1] < 90


def test_the_first_interval_takes_the_rate_of_the_epoch_its_loss_falls_in() -> None:
    # The waves of the last joins reach a receiver a round trip late: the
    # epochs up to the first without a loss event still raise the first
    # interval's rate (seeding at the loss instant alone, tried, left two
    # long, fat dumbbells at 0.48 and 0.38 of TCP).
    r, sc, t, cn = _after_an_mrtt_exit()
    _no_overflow_block(r)
    sc.steady(t, t + 3.0, 90, [T, 5, cn])
    boundary = r.timer_at("epoch")
    sc.steady(t + 3.0, boundary - 0.001, 90, [T, 5, cn])
    sc.pkt(T, boundary + 0.001, skip=1)  # the first loss, at an epoch's start
    at_loss = r.reqn()
    sc.steady(boundary + 0.002, boundary + r.p.epoch + 0.001, 150, [T, 5, cn])  # that epoch: more arrives
    assert r.reqn() >= 0.9 * 150 > at_loss
    sc.steady(boundary + r.p.epoch + 0.002, boundary + 3 * r.p.epoch + 0.001, 90, [T, 5, cn])
    sc.steady(boundary + 3 * r.p.epoch + 0.002, boundary + 5 * r.p.epoch, 200, [T, 5, cn])
    assert r.reqn() < 0.9 * 200  # an epoch without a loss event ended the rule


# A join answered past the queue (WebrcParams.join_past_queue_free) -------------

QUEUED_OWD = 0.12  # the data's one-way delay behind a 70 ms queue (0.05 s without)


def _answer_nearby(r: WebrcReceiver, sc: Script) -> int:
    """The pending join answered 8 ms after it by a packet that waited 70 ms
    in a queue: a switch past the queue already carried the wave."""
    assert r.pending is not None
    cn, t_join, _ = r.pending
    sc.pkt(cn, t_join + 0.008, owd=QUEUED_OWD)
    return cn


@pytest.mark.parametrize("free", [True, False])
def test_a_startup_loss_after_a_join_answered_past_the_queue_does_not_end_startup(free: bool) -> None:
    """A receiver below neighbours that fill the bottleneck is answered by its
    own switch: the overflow it then loses packets in is theirs, not its own
    overshoot (3.2's reason to end start-up).  Without ``startup_carried_clock``,
    whose next joins on that answer would make their own newest wave the one judged."""
    r = make(off=("startup_carried_clock",) + (() if free else ("join_past_queue_free",)))
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])  # 40 packets/s: above the forgiven initial window
    _answer_nearby(r, sc)
    assert not free or (r.last_join_past_queue and r.joins_past_queue == 1)
    sc.pkt(T, 3.02, skip=1, owd=QUEUED_OWD)
    assert r.startup == free
    assert r.startup_exit == ("" if free else "loss")
    assert r.startup_forgiven == (1 if free else 0)  # forgiven as a competitor's overflow is


def test_a_join_that_went_the_whole_way_ends_startup_at_a_loss_again() -> None:
    r = make()
    drain(r)
    sc = _startup_with_one_wave(r)
    sc.steady(1.5, 3.0, 40, [T, 5])
    cn, t_join, _ = r.pending
    # The wave's first packet left the sender after the join got there and
    # crossed the same 70 ms queue: 0.2 s after the join.
    sc.pkt(cn, t_join + 0.2, owd=QUEUED_OWD)
    assert not r.last_join_past_queue
    sc.pkt(T, 3.22, skip=1, owd=QUEUED_OWD)
    assert not r.startup and r.startup_exit == "loss"


def test_the_newest_wave_of_a_decision_says_whether_it_was_answered_nearby() -> None:
    """Start-up joins several waves at once; the older ones may be a
    neighbour's while the newest goes the whole way and loads the queue."""
    r = make(on=("startup_joins",))
    drain(r)
    sc = Script(r, tsi=5)
    sc.steady(0.1, 0.5, 20, [T])  # the decision at the epoch's end, 0.5 s
    first, newest, t_join = r.pending[0], r.joined[-1], r.pending[1]
    assert newest != first and t_join == pytest.approx(0.5)
    sc.pkt(first, t_join + 0.008, owd=QUEUED_OWD)
    assert not r.last_join_past_queue  # the newest has not answered yet
    sc.pkt(newest, t_join + 0.2, owd=QUEUED_OWD)
    assert not r.last_join_past_queue and r.joins_past_queue == 0


@pytest.mark.parametrize("free", [True, False])
def test_a_flat_reception_after_a_join_answered_past_the_queue_does_not_block(free: bool) -> None:
    """3.3's premise is that a further join "would overload the path": not
    for a receiver whose last join loaded nothing at the queue."""
    r, sc = _in_steady_state(off=() if free else ("join_past_queue_free",))
    cn = _answer_nearby(r, sc)
    joins_before = r.joins
    t = 6.1
    while t < 12.0 and r.joins == joins_before and not r.blocked_overflow:  # up to the first decision
        sc.steady(t, t + 0.5, 40, [T, 5, cn], owd=QUEUED_OWD)  # flat at its maximum, behind the queue
        t += 0.5
    if free:
        assert r.blocked_overflow == 0 and r.joins > joins_before
    else:  # the paper's rule
        assert r.blocked_overflow > 0 and r.joins == joins_before
