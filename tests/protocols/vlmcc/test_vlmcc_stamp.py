"""VLMCC's stamped rules (profile ``stamped``): exact decisions for exact stamps.

A switch writes the stamp into data packets (docs/stamp.md); the leader's ACKs
and the followers' challenges carry it back (``stamp_echo``); the sender reads
the last round's echoes (``stamp_drain_verdict``, ``stamp_queue``).  Each test
runs the rule and the profile without it on the same scripted packets.
"""

from __future__ import annotations

import pytest
from vlmcc_util import DEFAULT_RULES, receiver_class, sender_class
from win_util import PORT, SENDER, cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.vlmcc import RULES, VlmccParams, VlmccReceiver, VlmccSender
from p4mcc.hosts.wire import Stamp, VlmccAck, VlmccChallenge, VlmccData, VlmccStart, ts_us

L, F = "10.0.2.1", "10.0.3.1"
STAMPED = RULES.resolve("stamped")
#: A short queue (0.5-1 ms, 5 Mb/s spare), a long one (131 ms, nothing spare), no stamp.
SHORT, LONG, NONE = Stamp.pack(2, 7), Stamp.pack(10, 0), Stamp.NOT_STAMPED


def without(*names: str) -> tuple[str, ...]:
    return tuple(n for n in STAMPED if n not in names)


def test_stamped_is_default_plus_the_stamp_rules() -> None:
    assert set(STAMPED) == set(DEFAULT_RULES) | {"stamp_echo", "stamp_drain_verdict", "share_start", "stamp_queue"}
    assert not any(n.startswith("stamp") for n in DEFAULT_RULES)


# -- stamp_echo: the receivers carry the stamps back ----------------------------------------


def receiver(names: tuple[str, ...], local: str) -> VlmccReceiver:
    r = receiver_class(names)(cfg(VlmccParams(packet_size=1000), local=local))
    r.start(0.0)
    r.receive_datagram(VlmccStart(session_id=9, leader=node_id(L), win_size=4, rate=1,
                                  tstamp_comp=ts_us(0.0)).encode(), (SENDER, PORT), 0.1)
    out(r)
    return r


def data(r: VlmccReceiver, seq: int, stamp: int) -> None:
    t = 0.2 + 0.01 * seq
    r.receive_datagram(VlmccData(session_id=9, seq=seq, timestamp=ts_us(t), leader_id=node_id(L),
                                 drift_prev=10_000, rate=800_000, payload=bytes(1000), stamp=stamp).encode(),
                       (SENDER, PORT), t + 0.05)


@pytest.mark.parametrize("names", [STAMPED, without("stamp_echo", "stamp_drain_verdict", "stamp_queue")])
def test_the_leaders_acks_carry_the_stamps_of_the_data_since_the_last_ack(names: tuple[str, ...]) -> None:
    r = receiver(names, L)
    echoed = []
    for pair in ((Stamp.pack(2, 7), Stamp.pack(3, 5)), (Stamp.pack(1, 9), NONE), (Stamp.pack(1, 9), Stamp.pack(1, 9))):
        for st in pair:
            data(r, r.last_seq + 1, st)
        acks = [m for _d, m in out(r) if isinstance(m, VlmccAck)]
        assert len(acks) == 2  # delayed ACKs: both packets of the pair at the second
        echoed.append({a.stamp for a in acks})
    if "stamp_echo" in names:
        # The worst queue and the tightest spare of the pair; an unstamped packet: 0.
        assert echoed == [{Stamp.pack(3, 5)}, {NONE}, {Stamp.pack(1, 9)}]
    else:
        assert echoed == [{NONE}] * 3


@pytest.mark.parametrize("echo", [True, False])
def test_a_challenge_carries_the_stamps_since_the_previous_one(echo: bool) -> None:
    r = receiver(STAMPED if echo else without("stamp_echo", "stamp_drain_verdict", "stamp_queue"), F)
    for seq, st in ((1, Stamp.pack(4, 6)), (2, Stamp.pack(2, 3)), (3, Stamp.pack(1, 8))):
        data(r, seq, st)
    out(r)
    r._send_challenge(0.5)
    r._send_challenge(0.6)  # nothing arrived in between: not every packet stamped
    stamps = [m.stamp for _d, m in out(r) if isinstance(m, VlmccChallenge)]
    assert stamps == ([Stamp.pack(4, 3), NONE] if echo else [NONE, NONE])


# -- the sender reads the leader's echoes -----------------------------------------------------


def sender(names: tuple[str, ...]) -> VlmccSender:
    s = sender_class(names)(cfg(VlmccParams(packet_size=1000)))
    s.start(0.0)
    feed(s, VlmccChallenge(session_id=9, timestamp=ts_us(0.0), rcvr_id=node_id(L)), 0.0, src=L)
    out(s)
    return s


def round_with(s: VlmccSender, stamps: tuple[int, ...], now: float, **state: float) -> None:
    """The leader ACKs the oldest packets out with ``stamps``; then ``state``; then the round ends."""
    for seq, st in zip(sorted(s.outstanding), stamps):
        feed(s, VlmccAck(session_id=9, seq=seq, rcvr_id=node_id(L), tstamp_comp=ts_us(now - 0.1), stamp=st),
             now, src=L)
    out(s)
    for k, v in {"slowstart": False, "base_rtt": 0.1, **state}.items():
        setattr(s, k, v)
    s._round(now)


@pytest.mark.parametrize(("names", "stamps", "competing"), [
    (STAMPED, (SHORT, SHORT), False),  # the others' Vegas queue: drained
    (STAMPED, (LONG, LONG), True),
    (STAMPED, (SHORT, NONE), True),  # one ACK unstamped: the mean RTT decides, as default
    (without("stamp_drain_verdict"), (SHORT, SHORT), True),
])
def test_a_drain_probe_reads_the_stamped_queue(names: tuple[str, ...], stamps: tuple[int, ...],
                                               competing: bool) -> None:
    # The probe's round: mean RTT 130 ms over a 100 ms base, far above the drain slack.
    s = sender(names)
    round_with(s, stamps, 1.0, W=10.0, probe_phase=2, round_rtt_sum=0.39, round_rtt_n=3, acks_in_round=3)
    assert s.competing is competing


@pytest.mark.parametrize(("names", "stamps", "w"), [
    (STAMPED, (LONG, LONG), 10.0),  # 131 ms at 10 packets per 105 ms: 12 packets queued, the +1 is held
    (STAMPED, (Stamp.pack(10, 3), Stamp.pack(10, 3)), 10.0),  # whatever is spare
    (STAMPED, (Stamp.pack(6, 0), Stamp.pack(6, 0)), 11.0),  # 8 ms: one packet at this rate (a slow link's)
    (STAMPED, (SHORT, SHORT), 11.0),
    (STAMPED, (LONG, NONE), 11.0),  # one ACK unstamped: the default decides
    (without("stamp_queue"), (LONG, LONG), 11.0),
])
def test_a_long_stamped_queue_holds_the_vegas_window(names: tuple[str, ...], stamps: tuple[int, ...],
                                                     w: float) -> None:
    s = sender(names)
    round_with(s, stamps, 1.0, W=10.0, rtt=0.105, acks_in_round=2)  # Vegas diff 0.48 < alpha: +1
    assert s.W == w and not s.competing


@pytest.mark.parametrize(("names", "codes", "rtt", "competing"), [
    (STAMPED, ((10, 0), (10, 1), (11, 0), (10, 0)), 0.15, True),  # four cuts the queue outlived: TCP's
    (STAMPED, ((12, 0), (11, 0), (10, 0), (9, 0)), 0.15, False),  # it falls: the sessions' own draining
    (STAMPED, ((10, 0), (10, 0), (10, 0)), 0.15, False),
    (STAMPED, ((10, 0), (10, 5), (10, 0), (10, 0)), 0.15, False),  # 1.28 Mb/s spare: not a full port
    (STAMPED, ((10, 0), (10, 1), (11, 0), (10, 0)), 0.12, False),  # no Vegas cut (diff 1.7): a queue it keeps
    (without("stamp_queue"), ((10, 0), (10, 1), (11, 0), (10, 0)), 0.15, False),
])
def test_vegas_cuts_a_long_queue_outlives_with_nothing_spare_are_a_competitors(
        names: tuple[str, ...], codes: tuple[tuple[int, int], ...], rtt: float, competing: bool) -> None:
    s = sender(names)
    for i, (q, spare) in enumerate(codes):  # rtt 0.15: Vegas diff 3.3 > beta, W - 1 each round
        round_with(s, (Stamp.pack(q, spare),) * 2, 1.0 + 0.2 * i, W=10.0, rtt=rtt, acks_in_round=2)
    assert s.competing is competing
    if competing:
        assert s.compete_ssthresh == s.p.max_window  # entered by slow start, as a probe's entry
