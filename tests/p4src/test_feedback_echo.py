"""Stamp echoes of feedback the switch folds or filters (docs/stamp.md,
"Carried back"): exact frames in and out.

A receiver's feedback carries in its own stamp byte the stamp of the data
it received since its previous feedback.  Where the switch absorbs feedback
(MTCP aggregation, TFMCC/VLMCC filtering) the message that goes up carries
the combination of its own echo and those of the messages absorbed since
the last one went up: queue code by maximum, spare code by minimum, and 0
when any of them is 0.  The single-switch tests also run on BMv2
(tests/bmv2/test_stamp_parity.py); the two-level one stays here.
"""

from __future__ import annotations

import dataclasses

from p4src_harness import (SENDER, Group, Host, SwitchSetup, configure, counter, two_folding_levels,
                           igmpv2_report, new_switch, outputs, rewrite_udp_payload, udp_frame)
from scapy.layers.l2 import Ether

from p4mcc.hosts import wire
from p4mcc.hosts.scapy_layers import P4mcc

S = wire.Stamp
R1 = Host("r1", "10.0.0.1", "00:00:00:00:00:01")
R2 = Host("r2", "10.0.0.2", "00:00:00:00:00:02")
G1 = "239.1.1.1"
MTCP, TFMCC, PLAIN = 7, 21, 22
SENDER_PORT = 4


def _switch():
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, 2, SENDER_PORT], hosts={1: R1, 2: R2, SENDER_PORT: SENDER},
                              groups=[Group(G1, 0, 10)], aggregate={MTCP: (0, 0)},
                              filters={TFMCC: (1, 0)}))
    outputs(sw, 1, igmpv2_report(R1, G1))
    outputs(sw, 2, igmpv2_report(R2, G1))
    return sw


def ack(cum: int, node: int, echo: int, session: int = MTCP, share: int = 0) -> wire.MtcpAck:
    return wire.MtcpAck(session_id=session, seq=1, timestamp=5, cum_ack=cum, min_cwnd=10, max_twnd=20,
                        adv_wnd=64, node_id=node, echo_ts=77, stamp=echo, share=share)


def report(rate: int, rnd: int, echo: int, rflags: int = 0, session: int = TFMCC,
           share: int = 0) -> wire.TfmccReport:
    return wire.TfmccReport(session_id=session, seq=rnd, rate=rate, fb_round=rnd, rflags=rflags,
                            rcvr_id=1, rtt=1000, loss_rate=5, stamp=echo, share=share)


def frame(msg: wire.Message, port: int) -> bytes:
    return udp_frame(R1 if port == 1 else R2, SENDER.ip, msg.encode(), dst_mac=SENDER.mac)


def up(original: bytes, msg: wire.Message, flag: int, **fields: int) -> bytes:
    """``original`` as the switch sends it up: ``flag`` set, ``fields`` replaced, the UDP
    checksum recomputed (by Scapy; the switch updates it incrementally)."""
    new = dataclasses.replace(msg, flags=msg.flags | flag, **fields)
    return rewrite_udp_payload(original, new.encode())


AGG = wire.Flags.AGGREGATED
FILT = wire.Flags.FILTERED


def test_aggregated_ack_carries_the_smallest_share_echo_and_a_missing_one_wins():
    sw = _switch()
    outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9), share=120), 1))
    outputs(sw, 2, frame(ack(90, 2, S.pack(3, 6), share=110), 2))
    assert outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9), share=100), 1)) == []  # absorbed
    m = ack(95, 2, S.pack(2, 12), share=130)
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=95, stamp=S.pack(5, 9), share=100))]
    assert outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9), share=0), 1)) == []  # a receiver without a share
    m = ack(96, 2, S.pack(2, 12), share=130)
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=96, stamp=S.pack(5, 9), share=0))]


def test_filtered_report_carries_the_smallest_share_echo_of_the_reports_it_suppressed():
    sw = _switch()
    first = report(1000, 1, S.pack(2, 9), share=140)
    f = frame(first, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, up(f, first, FILT))]
    assert outputs(sw, 2, frame(report(2000, 1, S.pack(2, 9), share=90), 2)) == []  # not worse: dropped
    worse = report(500, 1, S.pack(2, 9), share=150)
    f = frame(worse, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, up(f, worse, FILT, share=90))]


def test_aggregated_ack_carries_the_worst_queue_and_tightest_spare_of_the_acks_it_stands_for():
    sw = _switch()
    outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9)), 1))
    outputs(sw, 2, frame(ack(90, 2, S.pack(3, 6)), 2))
    assert outputs(sw, 1, frame(ack(100, 1, S.pack(8, 10)), 1)) == []  # fold unchanged: absorbed
    assert outputs(sw, 2, frame(ack(90, 2, S.pack(4, 4)), 2)) == []
    m = ack(95, 2, S.pack(2, 12))
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=95, stamp=S.pack(8, 4)))]
    m = ack(96, 2, S.pack(6, 6))  # the absorbed echoes went up once: only its own now
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=96))]
    assert counter(sw, "session_feedback_absorbed", 0) == 2


def test_an_absorbed_zero_echo_makes_the_aggregated_echo_zero():
    sw = _switch()
    outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9)), 1))
    outputs(sw, 2, frame(ack(90, 2, S.pack(3, 6)), 2))
    assert outputs(sw, 1, frame(ack(100, 1, S.NOT_STAMPED), 1)) == []
    m = ack(95, 2, S.pack(7, 3))
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=95, stamp=S.NOT_STAMPED))]


def test_an_echo_without_a_queue_code_goes_up_as_zero():
    sw = _switch()
    m = ack(100, 1, S.pack(0, 3))  # the low nibble of an unstamped byte means nothing
    f = frame(m, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, up(f, m, AGG, cum_ack=0, stamp=S.NOT_STAMPED))]


def test_filtered_report_carries_the_echoes_of_the_reports_it_suppressed():
    sw = _switch()
    m = report(1_000_000, 1, S.pack(3, 7))
    f = frame(m, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, up(f, m, FILT))]
    assert outputs(sw, 2, frame(report(2_000_000, 1, S.pack(9, 5)), 2)) == []
    assert outputs(sw, 1, frame(report(1_500_000, 1, S.pack(4, 2)), 1)) == []
    m = report(500_000, 1, S.pack(2, 8))
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, FILT, stamp=S.pack(9, 2)))]
    assert outputs(sw, 2, frame(report(3_000_000, 1, S.NOT_STAMPED), 2)) == []
    m = report(3_000_000, 1, S.pack(6, 6), rflags=wire.TfmccReportFlags.IS_CLR)
    f = frame(m, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, up(f, m, FILT, stamp=S.NOT_STAMPED))]


def test_echoes_of_one_session_never_reach_another():
    sw = _switch()
    outputs(sw, 1, frame(report(1_000_000, 1, S.pack(3, 7)), 1))
    assert outputs(sw, 2, frame(report(2_000_000, 1, S.pack(12, 1)), 2)) == []  # TFMCC: suppressed
    outputs(sw, 1, frame(ack(100, 1, S.pack(5, 9)), 1))
    m = ack(90, 2, S.pack(3, 6))
    f = frame(m, 2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, up(f, m, AGG))]  # MTCP: only its own echoes
    m = report(3_000_000, 1, S.pack(2, 2), session=PLAIN)
    f = frame(m, 1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, f)]  # no assistance: the feedback passes as sent


def test_two_folding_levels_carry_every_echo_to_the_sender():
    """sender - S1 (rA on 1) -(2:1)- S2 (rB on 3, rC on 4)."""
    net, ra, rb, rc = two_folding_levels(G1, MTCP)

    def send(sw: str, port: int, host: Host, cum: int, echo: int) -> list[int]:
        msg = ack(cum, int.from_bytes(bytes(map(int, host.ip.split("."))), "big"), echo)
        out = net.send(sw, port, udp_frame(host, SENDER.ip, msg.encode(), dst_mac=SENDER.mac))
        assert all(d.node == "hs" for d in out)
        return [Ether(d.data)[P4mcc].stamp for d in out]

    assert send("s2", 3, rb, 100, S.pack(4, 9)) == [S.pack(4, 9)]
    assert send("s2", 4, rc, 90, S.pack(6, 5)) == []        # rA unheard holds s1's fold: absorbed at s1
    assert send("s1", 1, ra, 95, S.pack(2, 11)) == [S.pack(6, 5)]
    assert send("s2", 3, rb, 100, S.pack(11, 7)) == []      # absorbed at s2
    assert send("s1", 1, ra, 96, S.pack(3, 10)) == []       # the fold is held at 90 by rC: absorbed at s1
    assert send("s2", 4, rc, 99, S.pack(5, 8)) == [S.pack(11, 7)]  # max(11, 5, 3), min(7, 8, 10)
