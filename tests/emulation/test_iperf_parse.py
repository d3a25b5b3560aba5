"""Receiver-side TCP throughput comes from the iperf3 server's interval lines."""

from __future__ import annotations

from emulation.run import server_intervals

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
