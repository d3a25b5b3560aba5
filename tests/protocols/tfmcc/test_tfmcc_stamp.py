"""TFMCC's ``stamp_spare`` (profile ``stamped``): exact rates for exact echoed stamps."""

from __future__ import annotations

import math

import pytest
from fakes import drain, feed, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.tfmcc import RULES, TfmccParams, TfmccReceiver, TfmccSender
from p4mcc.hosts.tfrc import loss_rate_full
from p4mcc.hosts.wire import Stamp, TfmccData, TfmccDataFlags, TfmccReport, TfmccReportFlags

S = 1000
A, B = "10.0.1.1", "10.0.1.2"
FREE = TfmccReportFlags.HAVE_RTT | TfmccReportFlags.SLOWSTART
LOSS = TfmccReportFlags.HAVE_RTT | TfmccReportFlags.HAVE_LOSS
SHORT_SPARE = Stamp.pack(1, 7)  # queue < 512 us, >= 5.12 Mb/s spare
SHORT_FULL = Stamp.pack(1, 0)  # queue < 512 us, nothing spare
LONG_FULL = Stamp.pack(10, 0)  # 131 ms of queue, nothing spare: TCP fills it


def sender(profile: str, **kw) -> TfmccSender:
    names = RULES.resolve(profile, {"pacing_jitter": False, "pacing_pairs": False})
    s = registry.get("tfmcc").sender(registry.SessionConfig(
        1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", TfmccParams(packet_size=S, **kw), rules=names))
    s.start(0.0)
    return s


def report(ip: str, now: float, stamp: int, *, flags: int = FREE, rate: float = 400_000,
           recv: float = 400_000, rtt: float = 0.1, share: int = 0) -> TfmccReport:
    p = loss_rate_full(S, rtt, rate / 8) if flags & TfmccReportFlags.HAVE_LOSS else 0.0
    return TfmccReport(session_id=1, timestamp=wire.ts_us(now), rate=int(rate), rflags=flags,
                       rcvr_id=node_id(ip), recv_rate=int(recv), rtt=int(rtt * 1e6),
                       loss_rate=int(p * 0xFFFFFFFF), stamp=stamp, share=share)


def slowstart(profile: str, *stamps: int, recv: float = 400_000) -> TfmccSender:
    """A sender 0.3 s into slowstart at 300 kb/s, after one loss-free report of
    ``recv`` received per stamp, 0.2 s apart (beyond R_max and the stamp's lag)."""
    s = sender(profile, initial_rate_bps=300_000)
    for i, stamp in enumerate(stamps):
        now = 0.3 + 0.2 * i
        run_until(s, now)
        feed(s, report(A, now, stamp, recv=recv), now)
    assert s.slowstart and s.clr == node_id(A)
    return s


def test_the_stamped_profile_is_default_plus_share_start_and_stamp_spare() -> None:
    assert RULES.profiles["stamped"] == ("share_start", *RULES.profiles["default"], "stamp_spare")


SHARE_3M = wire.Share.code_for(3e6)


def test_slowstart_goes_to_the_echoed_share_at_once_and_no_further() -> None:
    s = sender("stamped", initial_rate_bps=300_000)
    run_until(s, 0.3)
    feed(s, report(A, 0.3, LONG_FULL, recv=400_000, share=SHARE_3M), 0.3)
    assert s.slowstart and s.rate == pytest.approx(wire.Share.bps(SHARE_3M)) and s.share_moves == 1
    run_until(s, 0.5)
    feed(s, report(A, 0.5, SHORT_SPARE, recv=2_900_000, share=SHARE_3M), 0.5)
    assert s.rate == pytest.approx(wire.Share.bps(SHARE_3M))  # spare rate beside: the share caps slowstart
    # default on the same reports: doubling per RTT from 300 kb/s at most
    d = sender("default", initial_rate_bps=300_000)
    run_until(d, 0.3)
    feed(d, report(A, 0.3, LONG_FULL, recv=400_000, share=SHARE_3M), 0.3)
    assert d.rate == pytest.approx(600_000)


def test_without_a_stamp_or_a_share_slowstart_runs_default() -> None:
    for stamp, share in ((Stamp.NOT_STAMPED, SHARE_3M), (LONG_FULL, 0)):
        s = sender("stamped", initial_rate_bps=300_000)
        run_until(s, 0.3)
        feed(s, report(A, 0.3, stamp, recv=400_000, share=share), 0.3)
        assert s.share_moves == 0 and s.rate < 1e6


def test_a_loss_ends_slowstart_whatever_the_share_says() -> None:
    s = sender("stamped", initial_rate_bps=300_000)
    run_until(s, 0.3)
    feed(s, report(A, 0.3, LONG_FULL, recv=400_000, share=SHARE_3M), 0.3)
    feed(s, report(A, 0.5, LONG_FULL, flags=LOSS, rate=1_000_000, share=SHARE_3M), 0.5)
    assert not s.slowstart and s.rate == pytest.approx(1_000_000, rel=0.01)  # the equation rate, below the share
    feed(s, report(A, 0.7, LONG_FULL, flags=LOSS, rate=1_000_000, share=SHARE_3M), 0.7)
    assert s.rate < 1.1e6 and s.share_moves == 1


def test_the_first_loss_interval_follows_the_share() -> None:
    def first_interval_rate(profile: str, share: int) -> float:
        r = registry.get("tfmcc").receiver(registry.SessionConfig(
            1, "239.1.1.1", 5000, "10.0.0.1", A, TfmccParams(packet_size=S), rules=RULES.resolve(profile)))
        r.start(0.0)
        drain(r)
        for i in range(10):
            now = 0.01 * i
            feed(r, TfmccData(session_id=1, seq=i, timestamp=wire.ts_us(now), clr_id=node_id(A),
                              dflags=TfmccDataFlags.SLOWSTART, payload=bytes(S - 60), stamp=LONG_FULL,
                              share=share), now + 0.02)
        return r._first_interval_rate()

    assert first_interval_rate("stamped", SHARE_3M) == pytest.approx(wire.Share.bps(SHARE_3M))
    assert first_interval_rate("stamped", 0) == pytest.approx(first_interval_rate("default", SHARE_3M))
    assert first_interval_rate("default", SHARE_3M) != pytest.approx(wire.Share.bps(SHARE_3M))


def test_spare_rate_under_a_short_queue_takes_a_share_of_it_at_once_in_slowstart() -> None:
    # default: at most doubling per RTT (0.3 s since the start, RTT 0.1 s): min(2·400k, 2·300k)
    assert slowstart("default", SHORT_SPARE).rate == pytest.approx(600_000)
    # stamped: received rate + a quarter of the spare rate's lower bound (5.12 Mb/s)
    assert slowstart("stamped", SHORT_SPARE).rate == pytest.approx(400_000 + 0.25 * 5_120_000)


def test_no_spare_rate_under_a_short_queue_holds_slowstart() -> None:
    assert slowstart("stamped", SHORT_FULL).rate == pytest.approx(300_000)
    assert slowstart("stamped", SHORT_FULL, SHORT_FULL).rate == pytest.approx(300_000)


def test_a_long_queue_brakes_once_holds_while_it_drains_then_leaves_default_to_decide() -> None:
    s = slowstart("stamped", SHORT_SPARE)  # 1.68 Mb/s, as above
    feed(s, report(A, 0.5, LONG_FULL, recv=1_000_000), 0.5)
    assert s.rate == pytest.approx(0.9 * 1_000_000)  # brake: 0.9 of what arrives
    feed(s, report(A, 0.8, Stamp.pack(8, 0), recv=1_000_000), 0.8)
    assert s.rate == pytest.approx(0.9 * 1_000_000)  # draining (code 10 -> 8): the session's queue, held
    feed(s, report(A, 1.05, Stamp.pack(8, 0), recv=1_000_000), 1.05)
    assert s.rate == pytest.approx(0.9 * 1_000_000)  # 0.25 s: still draining, held
    # Not drained further within 4 R_max (0.4 s): not the session's queue (TCP
    # fills it), default decides: min(d·R_recv, doubling per RTT) (RFC 4654 3.6).
    feed(s, report(A, 1.3, Stamp.pack(8, 0), recv=1_000_000), 1.3)
    assert s.rate == pytest.approx(min(2 * 1_000_000, 2 * 900_000))
    assert slowstart("default", LONG_FULL).rate == pytest.approx(slowstart("stamped", LONG_FULL).rate * 2)


def test_no_stamp_leaves_default_to_decide() -> None:
    assert slowstart("stamped", Stamp.NOT_STAMPED).rate == pytest.approx(slowstart("default", 0).rate)


def test_only_the_clrs_stamp_moves_the_rate() -> None:
    s = sender("stamped", initial_rate_bps=300_000)
    run_until(s, 0.3)
    feed(s, report(A, 0.3, Stamp.NOT_STAMPED, recv=400_000), 0.3)
    before = s.rate
    feed(s, report(B, 0.31, SHORT_SPARE, recv=900_000), 0.31)  # higher receiver: not the CLR
    assert s.clr == node_id(A) and s.rate == pytest.approx(before)


def test_the_increase_after_a_clr_change_takes_a_share_of_the_spare_rate_up_to_the_clr_rate() -> None:
    def after_change(profile: str, stamp: int) -> float:
        s = sender(profile, initial_rate_bps=1e6)
        run_until(s, 1.0)
        feed(s, report(A, 1.0, 0, flags=LOSS, rate=500_000), 1.0)  # A: CLR at 500 kb/s
        feed(s, report(A, 1.1, 0, flags=LOSS | TfmccReportFlags.LEAVING, rate=500_000), 1.1)
        feed(s, report(B, 1.2, 0, flags=LOSS, rate=3_000_000), 1.2)  # the new CLR, far higher
        assert s.clr == node_id(B) and s.limited
        feed(s, report(B, 1.3, stamp, flags=LOSS | TfmccReportFlags.IS_CLR, rate=3_000_000), 1.3)
        return s.rate

    plain = after_change("default", SHORT_SPARE)
    assert plain < 600_000  # 2.2: one packet per R_max per R_max
    assert after_change("stamped", Stamp.pack(1, 2)) == pytest.approx(plain + 0.25 * 160_000, rel=0.01)
    assert after_change("stamped", Stamp.pack(1, 10)) == pytest.approx(3_000_000)  # capped by the CLR's rate
    assert after_change("stamped", LONG_FULL) == pytest.approx(plain)


def test_spare_rate_under_a_short_queue_makes_a_slowstart_receiver_report_at_once() -> None:
    def first_report_at(profile: str) -> float:
        r = registry.get("tfmcc").receiver(registry.SessionConfig(
            1, "239.1.1.1", 5000, "10.0.0.1", A, TfmccParams(packet_size=S), rules=RULES.resolve(profile)))
        r.start(0.0)
        drain(r)
        for i in range(40):  # 100 kb/s of data naming another CLR, in slowstart
            now = 0.08 * i + 0.02
            if run_until(r, now).datagrams:
                return r.now
            feed(r, TfmccData(session_id=1, seq=i, timestamp=wire.ts_us(0.08 * i), clr_id=node_id(B),
                              dflags=TfmccDataFlags.SLOWSTART, supp_rate=0xFFFFFFFF, payload=bytes(S - 60),
                              stamp=SHORT_SPARE), now)
        return math.inf

    assert first_report_at("stamped") == pytest.approx(0.1)  # at the second packet: both rates known
    assert first_report_at("default") > 0.5  # the biased timer: at least γ·T later


def echoed(profile: str, windows: list[list[int]]) -> list[int]:
    """The stamps of the CLR's reports; the last packet of each window is 0.6 s after the
    last report (beyond the 0.5 s initial RTT: the CLR reports), the others 0.3 s."""
    r = registry.get("tfmcc").receiver(registry.SessionConfig(
        1, "239.1.1.1", 5000, "10.0.0.1", A, TfmccParams(packet_size=S), rules=RULES.resolve(profile)))
    r.start(0.0)
    drain(r)
    stamps, seq = [], 0
    for w, window in enumerate(windows):
        for i, st in enumerate(window):
            now = 0.6 * w - (0.3 if i < len(window) - 1 else 0.0) + 0.001 * i
            out = feed(r, TfmccData(session_id=1, seq=seq, timestamp=wire.ts_us(now), clr_id=node_id(A),
                                    payload=bytes(S - 60), stamp=st), now + 0.02)
            seq += 1
            stamps += [wire.decode(d.data).stamp for d in out.datagrams]
    return stamps


def test_a_report_echoes_the_stamps_of_the_data_since_the_last_one() -> None:
    windows = [[Stamp.pack(2, 9)], [Stamp.pack(3, 8), Stamp.pack(5, 4), Stamp.pack(1, 6)],
               [Stamp.pack(3, 8), Stamp.NOT_STAMPED, Stamp.pack(1, 9)]]
    # worst queue code and tightest spare code of each window; 0 when a packet was unstamped
    assert echoed("stamped", windows) == [Stamp.pack(2, 9), Stamp.pack(5, 4), 0]
    assert echoed("default", windows) == [0, 0, 0]


def test_a_forged_share_from_the_clr_raises_the_rate_no_higher_than_the_others_echo() -> None:
    """Robust to lies: a receiver that claims the lowest rate (so it is CLR) and echoes the
    largest share the wire holds moves slowstart only to the share the others echo; in
    ``default`` its report moves the rate by doubling at most."""
    liar = "10.0.0.66"
    forged = 0xFF
    s = sender("stamped", initial_rate_bps=300_000)
    run_until(s, 0.3)
    feed(s, report(A, 0.3, LONG_FULL, rate=900_000, recv=400_000, share=SHARE_3M), 0.3)
    run_until(s, 0.4)
    feed(s, report(liar, 0.4, LONG_FULL, rate=500_000, recv=400_000, share=forged), 0.4)
    assert s.clr == node_id(liar) and s.slowstart
    assert s.rate == pytest.approx(wire.Share.bps(SHARE_3M))
    assert wire.Share.bps(forged) > 10 * wire.Share.bps(SHARE_3M)
    # Alone, the liar's echo is the smallest: the share it claims is the session's
    # until another receiver's echo is heard, as its receive rate is in default.
    alone = sender("stamped", initial_rate_bps=300_000)
    run_until(alone, 0.4)
    feed(alone, report(liar, 0.4, LONG_FULL, rate=500_000, recv=400_000, share=forged), 0.4)
    feed(alone, report(A, 0.45, LONG_FULL, rate=900_000, recv=400_000, share=SHARE_3M), 0.45)
    run_until(alone, 0.5)
    feed(alone, report(liar, 0.5, LONG_FULL, rate=500_000, recv=400_000, share=forged), 0.5)
    assert alone.rate == pytest.approx(wire.Share.bps(SHARE_3M))
