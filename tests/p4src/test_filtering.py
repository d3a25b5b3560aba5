"""Feedback filtering: per round, only a report worse (lower rate) than the
worst this switch already forwarded goes upstream, TFMCC reports without an
RTT ranked among themselves; CLR reports and leaving notices always pass,
and so do VLMCC RTT probes (win_size 0), which neither open a window nor
set its worst rate; TFMCC rounds come from the packet, VLMCC rounds are a
time window."""

from __future__ import annotations

import dataclasses

from p4src_harness import (DROP_FILTERED, SENDER, Host, SwitchSetup, configure, counter,
                           new_switch, outputs, rewrite_udp_payload, udp_checksum_ok, udp_frame)
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from p4mcc.hosts import wire

R1 = Host("r1", "10.0.0.1", "00:00:00:00:00:01")
R2 = Host("r2", "10.0.0.2", "00:00:00:00:00:02")
TFMCC, VLMCC = 21, 51
SENDER_PORT = 4
CLR = wire.TfmccReportFlags.IS_CLR
LEAVING = wire.TfmccReportFlags.LEAVING
#: A report of a receiver with an RTT and a loss rate; without HAVE_RTT its
#: rate was computed with the initial RTT.
MEASURED = wire.TfmccReportFlags.HAVE_RTT | wire.TfmccReportFlags.HAVE_LOSS
NO_RTT = wire.TfmccReportFlags.HAVE_LOSS


def switch(assist: bool = True):
    sw = new_switch()
    configure(sw, SwitchSetup(
        ports=[1, 2, SENDER_PORT], hosts={1: R1, 2: R2, SENDER_PORT: SENDER},
        filters={TFMCC: (1, 0), VLMCC: (2, 100_000)} if assist else {},
    ))
    return sw


def report(rate: int, rnd: int, rflags: int = MEASURED, rcvr: int = 1) -> "wire.TfmccReport":
    return wire.TfmccReport(session_id=TFMCC, seq=rnd, rate=rate, fb_round=rnd,
                            rflags=rflags, rcvr_id=rcvr, rtt=1000, loss_rate=5)


def challenge(rate: int, rcvr: int = 1) -> "wire.VlmccChallenge":
    return wire.VlmccChallenge(session_id=VLMCC, rate=rate, rcvr_id=rcvr, rtt=1000, win_size=4)


def send(sw, msg, port: int = 1, now: float = 0.0):
    host = R1 if port == 1 else R2
    f = udp_frame(host, SENDER.ip, msg.encode(), dst_mac=SENDER.mac)
    out = outputs(sw, port, f, now)
    passed = dataclasses.replace(msg, flags=msg.flags | wire.Flags.FILTERED)
    return out, [(SENDER_PORT, rewrite_udp_payload(f, passed.encode()))]


def test_first_report_of_a_round_passes_flagged():
    sw = switch()
    out, flagged = send(sw, report(1_000_000, 1))
    assert out == flagged
    # the flag's word is rewritten: the UDP checksum (recomputed by Scapy in
    # ``flagged``) is updated with it, and is not 0
    assert udp_checksum_ok(out[0][1]) and Ether(out[0][1])[UDP].chksum != 0


def test_a_filtered_message_without_a_udp_checksum_stays_without_one():
    sw = switch()
    msg = challenge(3_000_000)
    pkt = Ether(udp_frame(R1, SENDER.ip, msg.encode(), dst_mac=SENDER.mac))
    pkt[UDP].chksum = 0                      # the sender sent none (RFC 768 allows it)
    out = outputs(sw, 1, bytes(pkt))
    passed = dataclasses.replace(msg, flags=msg.flags | wire.Flags.FILTERED)
    assert out == [(SENDER_PORT, rewrite_udp_payload(bytes(pkt), passed.encode()))]
    assert Ether(out[0][1])[UDP].chksum == 0


def test_only_worse_reports_pass_within_a_round():
    sw = switch()
    send(sw, report(1_000_000, 1))
    out, _ = send(sw, report(2_000_000, 1), port=2)
    assert out == []
    out, _ = send(sw, report(1_000_000, 1), port=2)      # equal is not worse
    assert out == []
    out, flagged = send(sw, report(500_000, 1), port=2)
    assert out == flagged
    out, _ = send(sw, report(700_000, 1))
    assert out == []
    assert counter(sw, "drop_reasons", DROP_FILTERED) == 3
    assert counter(sw, "session_feedback_absorbed", 1) == 3


def test_a_new_round_resets_the_worst():
    sw = switch()
    send(sw, report(500_000, 1))
    out, flagged = send(sw, report(2_000_000, 2))
    assert out == flagged
    out, _ = send(sw, report(3_000_000, 2))
    assert out == []


def test_clr_reports_always_pass():
    sw = switch()
    send(sw, report(500_000, 1))
    out, flagged = send(sw, report(2_000_000, 1, rflags=MEASURED | CLR))
    assert out == flagged
    out, _ = send(sw, report(600_000, 1))                 # worst is still 500k
    assert out == []


def test_clr_report_neither_opens_the_round_nor_sets_its_worst():
    # In slowstart every receiver reports the same receive rate; the CLR's
    # report must not make the others' equal reports "not worse".
    sw = switch()
    out, flagged = send(sw, report(1_000_000, 3, rflags=MEASURED | CLR))
    assert out == flagged
    out, flagged = send(sw, report(1_000_000, 3), port=2)   # first ranked report of round 3
    assert out == flagged
    out, _ = send(sw, report(1_000_000, 3))                 # now equal is not worse
    assert out == []


def test_reports_without_an_rtt_are_ranked_only_among_themselves():
    # The sender re-ranks a report without an RTT by its own RTT sample
    # (TFMCC paper 2.4.4): its raw rate must not suppress a measured report,
    # and a measured report must not suppress it.
    sw = switch()
    send(sw, report(1_000_000, 1))
    out, flagged = send(sw, report(100_000, 1, rflags=NO_RTT), port=2)     # first of its kind
    assert out == flagged
    out, flagged = send(sw, report(900_000, 1))          # ranked against 1M, not 100k
    assert out == flagged
    out, _ = send(sw, report(200_000, 1, rflags=NO_RTT), port=2)           # not below 100k
    assert out == []
    out, flagged = send(sw, report(50_000, 1, rflags=NO_RTT))
    assert out == flagged
    out, _ = send(sw, report(950_000, 1), port=2)       # not below 900k
    assert out == []
    out, flagged = send(sw, report(3_000_000, 2, rflags=NO_RTT))           # a new round opens
    assert out == flagged
    assert counter(sw, "drop_reasons", DROP_FILTERED) == 2


def test_leaving_notice_passes_without_lowering_the_worst():
    sw = switch()
    send(sw, report(1_000_000, 1))
    out, flagged = send(sw, report(10, 1, rflags=MEASURED | LEAVING))
    assert out == flagged
    out, flagged = send(sw, report(900_000, 1))          # still beats 1M
    assert out == flagged


def test_vlmcc_challenges_are_filtered_per_time_window():
    sw = switch()
    out, flagged = send(sw, challenge(100), now=0.0)
    assert out == flagged
    out, _ = send(sw, challenge(200), now=0.05)
    assert out == []
    out, flagged = send(sw, challenge(50), now=0.06)
    assert out == flagged
    out, flagged = send(sw, challenge(200), now=0.2)     # a new window
    assert out == flagged


def probe(rcvr: int) -> "wire.VlmccChallenge":
    """A joining receiver's RTT probe: a challenge with only its id (rate 0, win_size 0)."""
    return wire.VlmccChallenge(session_id=VLMCC, rcvr_id=rcvr, timestamp=1234)


def test_vlmcc_probes_always_pass_and_leave_the_window_untouched():
    sw = switch()
    out, flagged = send(sw, probe(1), now=0.0)
    assert out == flagged
    out, flagged = send(sw, probe(2), port=2, now=0.01)   # a second probe in the same window
    assert out == flagged
    out, flagged = send(sw, challenge(300), now=0.02)     # the probes opened no window
    assert out == flagged
    out, flagged = send(sw, probe(3), port=2, now=0.03)
    assert out == flagged
    out, flagged = send(sw, challenge(200), port=2, now=0.04)   # worst is 300, not 0
    assert out == flagged
    out, _ = send(sw, challenge(250), now=0.05)
    assert out == []
    assert counter(sw, "session_feedback_absorbed", 2) == 1


def test_assistance_off_passes_every_report_unchanged():
    sw = switch(assist=False)
    for rate in (1_000_000, 2_000_000, 2_000_000):
        msg = report(rate, 1)
        f = udp_frame(R1, SENDER.ip, msg.encode(), dst_mac=SENDER.mac)
        assert outputs(sw, 1, f) == [(SENDER_PORT, f)]
