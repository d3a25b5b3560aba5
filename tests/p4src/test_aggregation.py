"""MTCP-style aggregation: per-port summaries folded (min cum_ack, min
min_cwnd, max max_twnd, min adv_wnd) over member ports, sent upstream only
when the fold changes; NACKs pass; two levels give the global fold."""

from __future__ import annotations

import dataclasses

from p4src_harness import (AGG_K, DROP_ABSORBED, SENDER, Group, Host, SwitchSetup, configure, two_folding_levels,
                           counter, igmpv2_report, ipv4_header_ok, new_switch, outputs,
                           rewrite_udp_payload, udp_checksum_ok, udp_frame, udp_payload)
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from p4mcc.hosts import wire
from p4mcc.hosts.scapy_layers import MtcpAck, P4mcc

R1 = Host("r1", "10.0.0.1", "00:00:00:00:00:01")
R2 = Host("r2", "10.0.0.2", "00:00:00:00:00:02")
R3 = Host("r3", "10.0.0.3", "00:00:00:00:00:03")
G1 = "239.1.1.1"
SESSION = 7
SENDER_PORT = 4


def ack(cum: int, cwnd: int, twnd: int, adv: int, node: Host, sack: int = 0,
        cls=wire.MtcpAck) -> "wire.MtcpAck":
    return cls(session_id=SESSION, seq=1, timestamp=5, cum_ack=cum, min_cwnd=cwnd,
               max_twnd=twnd, adv_wnd=adv, node_id=int.from_bytes(bytes(map(int, node.ip.split("."))), "big"),
               echo_ts=77, sack_bitmap=sack)


def frame_of(msg: "wire.Message", host: Host) -> bytes:
    return udp_frame(host, SENDER.ip, msg.encode(), dst_mac=SENDER.mac)


def folded(original: bytes, msg, **fields) -> bytes:
    """``original`` rewritten by the switch to carry ``fields`` + AGGREGATED, its UDP
    checksum recomputed in full by Scapy (the switch updates it incrementally)."""
    new = dataclasses.replace(msg, flags=msg.flags | wire.Flags.AGGREGATED, **fields)
    return rewrite_udp_payload(original, new.encode())


def switch(assist: bool = True, extra_ports=(), timeout_us: int = 0):
    sw = new_switch()
    hosts = {1: R1, 2: R2, 3: R3, SENDER_PORT: SENDER}
    configure(sw, SwitchSetup(
        ports=[1, 2, 3, SENDER_PORT, *extra_ports], hosts=hosts,
        groups=[Group(G1, 0, 10)],
        aggregate={SESSION: (0, 0)} if assist else {},
        timeout_us=timeout_us,
    ))
    outputs(sw, 1, igmpv2_report(R1, G1))
    outputs(sw, 2, igmpv2_report(R2, G1))
    return sw


def test_first_ack_goes_upstream_flagged_with_a_valid_udp_checksum():
    sw = switch()
    m = ack(100, 10, 20, 64, R1, sack=0b101)
    f = frame_of(m, R1)
    out = outputs(sw, 1, f)
    # r2 joined but has not reported: the fold acknowledges nothing yet (cum_ack 0),
    # and it carries no SACK bits (they are r1's alone)
    assert out == [(SENDER_PORT, folded(f, m, cum_ack=0, sack_bitmap=0))]
    assert ipv4_header_ok(out[0][1])
    assert udp_checksum_ok(out[0][1]) and Ether(out[0][1])[UDP].chksum != 0
    assert counter(sw, "session_feedback_fwd", 0) == 1


def test_fold_rewriting_every_word_keeps_the_udp_checksum_valid():
    # the flags and both 16-bit halves of the four fold fields and the SACK bitmap
    # change (with carries across them): the incremental update must cover each
    # word; echoes that change the stamp and share: test_feedback_echo.py
    sw = switch()
    outputs(sw, 2, frame_of(ack(0xFFFF0001, 3, 0xFFFFFFF0, 7, R2), R2))
    m = dataclasses.replace(ack(0xFFFFFFFE, 0xFFFFFFFF, 1, 0xFFFFFFFF, R1, sack=0xFFFFFFFF),
                            stamp=0x9C, share=0xFF)
    f = frame_of(m, R1)
    out = outputs(sw, 1, f)
    assert out == [(SENDER_PORT, folded(f, m, cum_ack=0xFFFF0001, min_cwnd=3, max_twnd=0xFFFFFFF0,
                                        adv_wnd=7, sack_bitmap=0))]
    assert udp_checksum_ok(out[0][1])


def test_a_fold_without_a_udp_checksum_stays_without_one():
    sw = switch()
    m = ack(100, 10, 20, 64, R1, sack=0b101)
    pkt = Ether(frame_of(m, R1))
    pkt[UDP].chksum = 0                      # the sender sent none (RFC 768 allows it)
    f = bytes(pkt)
    out = outputs(sw, 1, f)
    assert out == [(SENDER_PORT, folded(f, m, cum_ack=0, sack_bitmap=0))]
    assert Ether(out[0][1])[UDP].chksum == 0


def test_fold_takes_min_min_max_min_over_member_ports():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    m = ack(90, 12, 30, 50, R2, sack=0b1)
    f = frame_of(m, R2)
    # r2's own cum_ack is the min, but its bitmap is still r2's alone (r1 may lack
    # 92): cleared, so the sender cannot release a packet another receiver lacks
    assert outputs(sw, 2, f) == [(SENDER_PORT, folded(f, m, min_cwnd=10, sack_bitmap=0))]
    m = ack(120, 15, 25, 70, R1, sack=0b11)
    f = frame_of(m, R1)
    # r1 is ahead: fold cum_ack 90 is not r1's, so its sack bitmap is cleared
    assert outputs(sw, 1, f) == [(SENDER_PORT, folded(
        f, m, cum_ack=90, min_cwnd=12, max_twnd=30, adv_wnd=50, sack_bitmap=0))]


def test_a_member_that_has_not_reported_holds_the_fold_at_cum_ack_zero():
    sw = switch()
    outputs(sw, 3, igmpv2_report(R3, G1))              # r3 joins late
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    m = ack(90, 12, 30, 50, R2)
    f = frame_of(m, R2)
    # r3 may lack every packet: nothing may be released for the fold yet
    assert outputs(sw, 2, f) == [(SENDER_PORT, folded(f, m, cum_ack=0, min_cwnd=10))]
    # r3's hello (cum_ack 0) leaves the fold as it was: absorbed
    assert outputs(sw, 3, frame_of(ack(0, 20, 5, 256, R3, cls=wire.MtcpWindowUpdate), R3)) == []
    m = ack(95, 20, 5, 256, R3)
    f = frame_of(m, R3)
    assert outputs(sw, 3, f) == [(SENDER_PORT, folded(f, m, cum_ack=90, min_cwnd=10, max_twnd=30,
                                                       adv_wnd=50))]


def test_unchanged_fold_is_absorbed_and_counted():
    sw = switch()
    outputs(sw, 1, frame_of(ack(90, 10, 20, 64, R1), R1))
    assert len(outputs(sw, 2, frame_of(ack(100, 12, 22, 70, R2), R2))) == 1   # max_twnd 22
    # r2 advances but r1 still limits the minima and r2's twnd is unchanged
    assert outputs(sw, 2, frame_of(ack(110, 14, 22, 80, R2), R2)) == []
    assert counter(sw, "session_feedback_absorbed", 0) == 1
    assert counter(sw, "drop_reasons", DROP_ABSORBED) == 1


def test_window_update_is_folded_like_an_ack():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    m = ack(100, 4, 20, 64, R2, cls=wire.MtcpWindowUpdate)
    f = frame_of(m, R2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, folded(f, m))]


def test_nack_passes_unchanged():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    nack = wire.MtcpNack(session_id=SESSION, seq=3, cum_ack=100, node_id=1, missing=(101, 103))
    f = frame_of(nack, R2)
    assert outputs(sw, 2, f) == [(SENDER_PORT, f)]


def test_the_ackers_copy_passes_unfolded_and_leaves_the_fold_as_it_was():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    outputs(sw, 2, frame_of(ack(90, 12, 30, 50, R2), R2))
    # r1's own copy as the acker: byte for byte upstream, its SACK bits kept
    copy = dataclasses.replace(ack(120, 10, 20, 64, R1, sack=0b11), flags=wire.Flags.ACKER)
    f = frame_of(copy, R1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, f)]
    assert counter(sw, "session_feedback_absorbed", 0) == 0
    # the fold still holds r1's folded 100: r2's unchanged summary is absorbed, as before the copy
    assert outputs(sw, 2, frame_of(ack(90, 12, 30, 50, R2), R2)) == []
    m = ack(95, 12, 30, 50, R2)
    f2 = frame_of(m, R2)
    assert outputs(sw, 2, f2) == [(SENDER_PORT, folded(f2, m, min_cwnd=10, max_twnd=30))]


def test_assistance_off_forwards_every_ack_unchanged():
    sw = switch(assist=False)
    for host, port, m in ((R1, 1, ack(100, 10, 20, 64, R1)), (R2, 2, ack(90, 12, 30, 50, R2)),
                          (R1, 1, ack(100, 10, 20, 64, R1))):
        f = frame_of(m, host)
        assert outputs(sw, port, f) == [(SENDER_PORT, f)]


def test_non_member_summary_stops_counting_once_another_port_reports():
    sw = switch()
    outputs(sw, 1, frame_of(ack(100, 10, 20, 64, R1), R1))
    outputs(sw, 2, frame_of(ack(100, 10, 20, 64, R2), R2))
    m3 = ack(100, 1, 20, 64, R3)          # r3 never joined the group
    f3 = frame_of(m3, R3)
    assert outputs(sw, 3, f3) == [(SENDER_PORT, folded(f3, m3))]
    m1 = ack(100, 10, 20, 64, R1)
    f1 = frame_of(m1, R1)
    assert outputs(sw, 1, f1) == [(SENDER_PORT, folded(f1, m1))]   # back to r1's cwnd


def test_summary_of_a_port_whose_membership_timed_out_stops_counting():
    sw = switch(timeout_us=1_000_000)
    outputs(sw, 2, frame_of(ack(100, 3, 20, 64, R2), R2), now=0.1)   # r2 limits cwnd
    outputs(sw, 1, igmpv2_report(R1, G1), now=1.0)                  # r1 refreshed, r2 not
    m = ack(100, 10, 20, 64, R1)
    f = frame_of(m, R1)
    # at t=1.5 r2's membership (reported at 0) has timed out: the fold is r1's alone
    assert outputs(sw, 1, f, now=1.5) == [(SENDER_PORT, folded(f, m))]


def test_ports_beyond_k_pass_unfolded():
    port = AGG_K + 4
    sw = switch(extra_ports=(port,))
    far = Host("rf", f"10.0.0.{port}", f"00:00:00:00:00:{port:02x}")
    m = ack(1, 1, 1, 1, far)
    f = frame_of(m, far)
    assert outputs(sw, port, f) == [(SENDER_PORT, f)]


def test_the_last_folded_port_counts_in_the_fold():
    """Port K-1 (31: a dumbbell's 32 receivers behind one switch, ports 0-31)
    is folded like port 1: its member bit and summary take part."""
    port = AGG_K - 1
    far = Host("rf", f"10.0.0.{port}", f"00:00:00:00:00:{port:02x}")
    sw = switch(extra_ports=(port,))
    outputs(sw, port, igmpv2_report(far, G1))
    outputs(sw, 2, frame_of(ack(100, 10, 20, 64, R2), R2))
    outputs(sw, port, frame_of(ack(80, 6, 30, 64, far), far))   # the far member limits
    m = ack(100, 12, 20, 64, R1)
    f = frame_of(m, R1)
    assert outputs(sw, 1, f) == [(SENDER_PORT, folded(f, m, cum_ack=80, min_cwnd=6, max_twnd=30))]


def test_two_levels_yield_the_global_fold():
    """sender - S1 (rA on 1) -(2:1)- S2 (rB on 3, rC on 4)."""
    net, ra, rb, rc = two_folding_levels(G1, SESSION)

    last = None
    for sw, port, host, m in (("s2", 3, rb, ack(100, 10, 20, 64, rb)),
                              ("s2", 4, rc, ack(90, 12, 30, 50, rc)),
                              ("s1", 1, ra, ack(95, 8, 25, 70, ra))):
        for d in net.send(sw, port, frame_of(m, host)):
            assert d.node == "hs"
            last = Ether(d.data)  # dissected by the p4mcc Scapy layers
    summary = last[MtcpAck]
    assert (summary.cum_ack, summary.min_cwnd, summary.max_twnd, summary.adv_wnd) == (90, 8, 30, 50)
    assert last[P4mcc].flags.aggregated
