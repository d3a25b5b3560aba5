"""The congestion stamp (docs/stamp.md): exact frames in and out.

Egress writes the worse of a data packet's stamp and its port's own codes
(queue code by maximum, spare code by minimum), keeps the UDP checksum
valid, and measures each rated port's departure rate over aligned windows
of 25.6 ms.  Tests that set the clock (``now``) or the queue model stay on
the built-in switch, as do those whose output holds this switch's own queue
code (a live switch's queueing time is not the test's to choose); the
others also run on BMv2 (tests/bmv2/test_stamp_parity.py).
"""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from p4mcc.hosts import wire
from p4src_harness import (SENDER, Group, Host, SwitchSetup, configure, counter, idle_share, igmpv2_report,
                           new_switch, outputs, stamped, udp_frame)

S = wire.Stamp
H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")
H2 = Host("h2", "10.0.0.2", "00:00:00:00:00:02")
G = "239.1.1.1"
RATE_10M = 250  # 10 Mb/s in 40 kb/s units: spare code 7 while idle
SHARE_10M = idle_share(RATE_10M)  # the share of a port whose last epoch was idle: all of it
WINDOW_S = 25.6e-3


def _switch(rates: dict[int, int] | None = None, stamped_sessions: tuple[int, ...] = (7,)):
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, 2, 4], hosts={1: H1, 2: H2, 4: SENDER}, groups=[Group(G, gidx=0, mgid=10)],
                              port_rates={1: RATE_10M, 4: RATE_10M} if rates is None else rates,
                              stamped=stamped_sessions))
    outputs(sw, 1, igmpv2_report(H1, G))
    return sw


def _data(seq: int, stamp: int = 0, session: int = 7, size: int = 32, share: int = 0) -> bytes:
    msg = wire.WebrcData(session_id=session, seq=seq, stamp=stamp, share=share, payload=b"x" * size)
    return udp_frame(SENDER, G, msg.encode())


def _stamp_of(frame: bytes) -> int:
    return wire.decode(bytes(Ether(frame)[UDP].payload)).stamp


def test_stamped_upstream_packet_keeps_the_worse_queue_and_the_tighter_spare_code():
    sw = _switch()
    f = _data(1, stamp=S.pack(9, 12))
    assert outputs(sw, 4, f) == [(1, stamped(f, S.pack(9, 7), SHARE_10M))]
    f = _data(2, stamp=S.pack(10, 3), share=SHARE_10M - 20)
    assert outputs(sw, 4, f) == [(1, f)]  # a smaller share upstream stays too
    f = _data(3, stamp=S.pack(10, 3), share=SHARE_10M + 20)
    assert outputs(sw, 4, f) == [(1, stamped(f, S.pack(10, 3), SHARE_10M))]
    assert counter(sw, "port_stamped", 1) == 3


def test_unstamped_packet_gets_this_switch_codes_and_a_valid_udp_checksum():
    sw = _switch()
    sw.queue_model = lambda port, now: (0, 0, 0)
    f = _data(1)
    assert outputs(sw, 4, f) == [(1, stamped(f, S.pack(1, 7), SHARE_10M))]
    f = _data(2, stamp=0x04)  # the high nibble says unstamped: the low one means nothing
    assert outputs(sw, 4, f) == [(1, stamped(f, S.pack(1, 7), SHARE_10M))]


def test_a_port_without_a_rate_never_limits_the_spare_code_or_the_share():
    sw = _switch(rates={})
    f = _data(1, stamp=S.pack(9, 12))
    assert outputs(sw, 4, f) == [(1, stamped(f, S.pack(9, 12)))]
    f = _data(2, stamp=S.pack(9, 12), share=100)
    assert outputs(sw, 4, f) == [(1, f)]  # nor the share: it has no estimate


def test_sessions_without_stamping_and_feedback_pass_unchanged():
    sw = _switch()
    f = _data(1, stamp=S.pack(9, 12), session=8)
    assert outputs(sw, 4, f) == [(1, f)]
    report = wire.TfmccReport(session_id=7, rate=10**6).encode()
    fb = udp_frame(H1, SENDER.ip, report, dst_mac=SENDER.mac)
    assert outputs(sw, 1, fb) == [(4, fb)]  # port 4 is rated: feedback is still not stamped
    assert counter(sw, "port_stamped", 1) == 0 and counter(sw, "port_stamped", 4) == 0


def test_queue_code_is_the_wait_the_traffic_manager_reports():
    sw = _switch()
    wait = [0]
    sw.queue_model = lambda port, now: (3, wait[0], 3)  # (enq_qdepth, deq_timedelta us, deq_qdepth)
    got = []
    for seq, wait[0] in enumerate([0, 511, 512, 5000, 3_000_000, 2**22]):
        [(_, out)] = outputs(sw, 4, _data(seq), now=1.0)
        got.append(S.queue_code(_stamp_of(out)))
    assert got == [1, 1, 2, 5, 14, 15]


def test_spare_code_falls_with_the_port_departure_rate_and_recovers_when_idle():
    rate = 100  # 4 Mb/s
    sw = _switch(rates={1: rate})
    frames = [_data(seq, size=1400) for seq in range(8)]
    sent = 0
    t0 = 1.0
    for i, f in enumerate(frames):  # one window: 8 frames
        [(_, out)] = outputs(sw, 4, f, now=t0 + i * 1e-3)
        sent += len(f)
        assert S.spare_code(_stamp_of(out)) == 6  # no complete window yet: 100 units spare
    # next window: the last complete one carried `sent` bytes
    [(_, out)] = outputs(sw, 4, _data(9), now=t0 + WINDOW_S + 1e-3)
    used = sent >> 7
    assert used == 92 and S.spare_code(_stamp_of(out)) == S.spare_code_for((rate - used) * 40_000) == 3
    # a whole window idle: the port is idle again
    [(_, out)] = outputs(sw, 4, _data(10), now=t0 + 4 * WINDOW_S)
    assert S.spare_code(_stamp_of(out)) == 6


def test_a_saturated_port_has_no_spare_rate():
    rate = 10  # 400 kb/s: 1280 bytes per window
    sw = _switch(rates={1: rate})
    f = _data(1, size=1400)
    outputs(sw, 4, f, now=1.0)
    [(_, out)] = outputs(sw, 4, _data(2), now=1.0 + WINDOW_S)
    assert S.spare_code(_stamp_of(out)) == 0
