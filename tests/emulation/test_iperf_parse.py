"""Receiver-side TCP throughput comes from the iperf3 server's interval lines, and its loss from the client's retransmissions over the segments the receiver got."""

from __future__ import annotations

from p4mcc.emulation.run import server_intervals, tcp_loss_samples

REPORT = """Accepted connection from 10.0.1.3, port 36124
[  7] local 10.0.2.8 port 5201 connected to 10.0.1.3 port 36132
[ ID] Interval           Transfer     Bitrate
[  7]   0.00-0.50   sec   512 KBytes  8.39 Mbits/sec
[  7]   0.50-1.00   sec   600 KBytes   983 Kbits/sec
[  7]   1.00-1.20   sec  0.00 Bytes  0.00 bits/sec
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bitrate
[  7]   0.00-1.20   sec  1.10 MBytes  7.70 Mbits/sec                  receiver
"""


def test_interval_lines_give_end_time_and_rate_and_the_summary_is_skipped() -> None:
    # the 0.2 s tail after the client stopped is not a path measurement
    assert server_intervals(REPORT) == [(0.5, 8.39e6), (1.0, 983e3)]


def test_no_report_gives_no_samples() -> None:
    assert server_intervals("") == []


def _interval(end: float, sent_bytes: int, retransmits: int, seconds: float = 0.5) -> dict:
    stream = {"end": end, "seconds": seconds, "bytes": sent_bytes, "retransmits": retransmits}
    return {"streams": [stream], "sum": {"end": end, "seconds": seconds, "bytes": sent_bytes}}


def test_tcp_loss_counts_retransmissions_against_the_segments_the_receiver_got() -> None:
    # iperf3 writes 128 KiB at a time: the client's second interval handed nothing to its
    # socket while TCP sent (and retransmitted) all along, the third handed over three writes.
    intervals = [_interval(0.5, 131072, 0), _interval(1.0, 0, 2), _interval(1.5, 393216, 1),
                 _interval(1.6, 0, 1, seconds=0.1)]
    server = [(0.5, 2.336e6), (1.0, 2.336e6), (1.5, 2.336e6)]  # 100 segments of 1460 B per 0.5 s
    got = tcp_loss_samples(intervals, server, 1460)
    assert [end for end, _ in got] == [0.5, 1.0, 1.5]  # the tail has no receiver interval
    assert got[0][1] == 0.0
    assert abs(got[1][1] - 2 / 102) < 1e-12 and abs(got[2][1] - 1 / 101) < 1e-12


def test_without_a_server_report_tcp_loss_falls_back_to_the_clients_bytes() -> None:
    got = tcp_loss_samples([_interval(0.5, 146000, 1), _interval(1.0, 0, 1)], [], 1460)
    assert got == [(0.5, 1 / 100)]  # an interval without writes has nothing to divide by
