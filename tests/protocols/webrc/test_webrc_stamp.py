"""WEBRC's ``stamp_join`` (profile ``stamped``): exact joins for exact stamps."""

from __future__ import annotations

import pytest
from fakes import drain, feed, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import JoinGroup
from p4mcc.hosts.webrc import RULES, WebrcParams, WebrcReceiver, channel_group
from p4mcc.hosts.webrc.params import gamma
from p4mcc.hosts.wire import Stamp, WebrcData

G = "239.2.0.0"
PARAMS = WebrcParams(session_rate_bps=20_000_000, packet_length=1024)
T = PARAMS.t
BASE = channel_group(G, T, T)


def make(profile: str, share_join: bool = True) -> WebrcReceiver:
    # one join per decision without the stamp; share_join is in no profile: on by name in "stamped"
    names = RULES.resolve(profile, {"startup_joins": False, **({"share_join": True} if profile == "stamped"
                                                                 and share_join else {})})
    r = registry.get("webrc").receiver(registry.SessionConfig(1, G, 7000, "10.0.0.1", "10.0.0.2", PARAMS,
                                                              rules=names))
    r.start(0.0)
    drain(r)
    return r


def base_packets(r: WebrcReceiver, stamp: int, t0: float = 0.1, t1: float = 1.05, pps: float = 40,
                 share: int = 0) -> list:
    """Base-channel packets (MRTT 0.1 s) carrying ``stamp``, firing the epochs; the joins they caused."""
    events: list = []
    for i in range(int((t1 - t0) * pps)):
        t = t0 + i / pps
        events += run_until(r, t).events
        events += feed(r, WebrcData(session_id=1, cn=T, psn=100 + i, tsi=5, timestamp=wire.ts_us(t - 0.05),
                                    payload=bytes(PARAMS.packet_length), stamp=stamp, share=share), t).events
    events += run_until(r, t1).events
    return [e.group for e in events if isinstance(e, JoinGroup)]


def test_the_stamped_profile_is_default_plus_stamp_join_and_share_join_is_in_none() -> None:
    assert set(RULES.profiles["stamped"]) == set(RULES.profiles["default"]) | {"stamp_join"}
    assert "share_join" in RULES.names() and "share_join" not in RULES.profiles["stamped"]


def test_start_up_joins_up_to_the_share_in_one_decision_beside_a_full_queue() -> None:
    share = wire.Share.code_for(2_000_000)  # 244 packets/s of 1024 B
    limit = wire.Share.bps(share) / (8 * PARAMS.packet_length)
    r = make("stamped")
    joined = base_packets(r, Stamp.pack(10, 0), share=share)  # TCP's full queue: nothing spare
    assert len(joined) >= 3 and r.startup
    assert r.arr is not None and r.arr <= limit < gamma(PARAMS.p, r.nwc) * r.arr  # the next wave would pass it
    d = make("default")
    assert len(base_packets(d, Stamp.pack(10, 0), share=share)) == 1  # default: one wave per decision


def test_start_up_joins_nothing_past_the_share() -> None:
    share = wire.Share.code_for(300_000)  # 36 packets/s: below the base channel's 40
    assert base_packets(make("stamped"), Stamp.pack(10, 0), share=share) == []


def test_without_a_share_or_a_stamp_the_joins_are_default() -> None:
    share = wire.Share.code_for(2_000_000)
    assert base_packets(make("stamped"), Stamp.NOT_STAMPED, share=share) == base_packets(make("default"), 0)
    assert base_packets(make("stamped"), Stamp.pack(12, 10)) == base_packets(make("default"), 0)


def test_spare_rate_under_a_short_queue_joins_several_waves_in_one_start_up_decision() -> None:
    # 41 Mb/s spare (s = 10), queue under 512 us: half of it (20 Mb/s) is far
    # above Γ·ARR, so the 0.5 s decision joins waves until Γ·ARR passes
    # ARR + 20 Mb/s or every active wave is joined.
    stamped = base_packets(make("stamped"), Stamp.pack(1, 10))
    plain = base_packets(make("default"), Stamp.pack(1, 10))
    assert len(plain) == 1  # 3.2: one wave per decision
    assert len(stamped) >= 5
    assert stamped[0] == channel_group(G, 5, T)  # the oldest active wave first, as 3.2


def test_joins_stay_below_arr_plus_half_the_spare_rate() -> None:
    r = make("stamped")
    arr_before = 40.0  # the base packets' rate, packets/s, that ARR follows
    base_packets(r, Stamp.pack(1, 3))  # 320 kb/s spare: 20 packets/s of 1024 B may be added
    assert r.arr is not None
    assert r.arr <= arr_before + 0.5 * 320_000 / (8 * PARAMS.packet_length) + 1e-9


@pytest.mark.parametrize("stamp", [Stamp.pack(1, 0), Stamp.pack(2, 0)])
def test_no_join_while_nothing_is_spare_and_the_queue_is_short(stamp: int) -> None:
    assert base_packets(make("stamped"), stamp) == []
    assert len(base_packets(make("default"), stamp)) == 1


@pytest.mark.parametrize("stamp", [Stamp.NOT_STAMPED, Stamp.pack(12, 10)])
def test_unstamped_or_a_long_queue_falls_back_to_default(stamp: int) -> None:
    # q = 0: no switch stamped; q = 12 (0.5-1 s): a queue the stamp gives no reason to add to.
    assert base_packets(make("stamped"), stamp) == base_packets(make("default"), stamp)


def _startup_then_loss(profile: str, share: int) -> WebrcReceiver:
    """Start-up on base packets carrying ``share`` behind a full queue, then five base packets lost."""
    r = make(profile)
    base_packets(r, Stamp.pack(10, 0), share=share)
    for i in range(40):
        t = 1.05 + i / 40
        run_until(r, t)
        feed(r, WebrcData(session_id=1, cn=T, psn=200 + i + (5 if i >= 10 else 0), tsi=5,
                          timestamp=wire.ts_us(t - 0.05), payload=bytes(PARAMS.packet_length),
                          stamp=Stamp.pack(10, 0), share=share), t)
    run_until(r, 2.1)
    return r


def test_the_equation_rate_after_start_up_is_the_share() -> None:
    share = wire.Share.code_for(2_000_000)
    r = _startup_then_loss("stamped", share)
    assert not r.startup
    # set at the share when start-up ended; the loss event after it has moved it a little since
    assert 0.8 <= r.reqn() / (wire.Share.bps(share) / (8 * PARAMS.packet_length)) <= 1.0
    d = _startup_then_loss("default", share)
    assert not d.startup and d.reqn() < 0.7 * r.reqn()  # 3.2: from TRR, far below the share
