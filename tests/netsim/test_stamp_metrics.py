"""The congestion stamp as a run's measurement: samples in ``timeseries.csv``
and ``stamp.png`` for sessions with ``assistance: stamp`` (docs/stamp.md).

A constant-rate sender at twice a 2 Mb/s bottleneck's rate (WEBRC data
messages, no congestion control) fills its 50-packet queue: every later
interval's data waited at least 128 ms (50 frames of 1 kB at 2 Mb/s is
200 ms; the code is a lower bound within a factor of two) and the port has
nothing to spare.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint
from p4mcc.hosts.stampwindow import StampWindow, fold_stamp
from p4mcc.netsim.run import run_scenario
from p4mcc.netsim.switches import choose_switch
from p4mcc.reporting import results as R
from p4mcc.reporting.plots import render
from p4mcc.scenario.model import scenario_from_dict
from netsim_testlib import Sink

S = wire.Stamp


def data(stamp: int) -> bytes:
    return wire.WebrcData(session_id=1, seq=0, payload=bytes(8), stamp=stamp).encode()


def test_fold_stamp_reads_data_messages_only() -> None:
    windows: dict[int, StampWindow] = {}
    fold_stamp(windows, 5000, data(S.pack(3, 7)))
    fold_stamp(windows, 5000, wire.TfmccReport(session_id=1, stamp=S.pack(9, 0)).encode())  # feedback: not data
    fold_stamp(windows, 5000, b"\x00\x01garbage")  # not p4mcc
    w = windows[5000]
    assert (w.packets, w.q_max, w.s_min, w.stamped) == (1, 3, 7, True)
    fold_stamp(windows, 5000, data(S.NOT_STAMPED))
    assert not w.stamped  # one unstamped data packet: the interval says nothing


class ConstantRate(Endpoint):
    """1000-byte WEBRC data messages to the session's group every 2 ms (4 Mb/s)."""

    role = "constant-rate"

    def __init__(self, group: str, port: int) -> None:
        super().__init__()
        self.to, self.seq = (group, port), 0

    def on_start(self, now: float) -> None:
        self.set_timer("tx", now)

    def on_timer(self, name: str, now: float) -> None:
        self.send(self.to, wire.WebrcData(session_id=1, seq=self.seq, payload=bytes(1000)).encode())
        self.seq += 1
        self.set_timer("tx", now + 0.002)

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        pass


def agents(sess, role, host, ip, sender_ip, seed, **_):
    return ConstantRate(sess.group, sess.port) if role == "sender" else Sink(sess.group)


def run(assistance: object, out: Path) -> None:
    run_scenario(scenario(assistance), out, switch=choose_switch("p4"), agent_factory=agents)


def scenario(assistance: object):
    return scenario_from_dict({
        "name": "stamp-metrics", "duration": 6, "seed": 1, "metrics_interval": 1.0,
        "topology": {
            "hosts": ["snd", "r1", "r2"], "switches": ["s1", "s2"],
            "link_defaults": {"rate": "100Mbps", "delay": "1ms"},
            "links": [["snd", "s1"], {"a": "s1", "b": "s2", "rate": "2Mbps", "delay": "10ms", "queue": 50},
                      ["r1", "s2"], ["r2", "s2"]],
        },
        "sessions": [{"name": "w", "protocol": "webrc", "sender": "snd", "receivers": ["r1", "r2"],
                      "assistance": assistance}],
    })


@pytest.fixture(scope="module")
def stamped_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stamped")
    run("stamp", out)
    return out


def test_a_stamped_session_records_what_its_receivers_saw(stamped_run: Path) -> None:
    samples = R.load_samples(stamped_run)
    queue = [s for s in samples if s.metric == R.STAMP_QUEUE]
    spare = [s for s in samples if s.metric == R.STAMP_SPARE]
    assert {s.node for s in queue} == {"r1", "r2"} and len(queue) == len(spare)
    assert all(s.flow == "w" and s.kind == "session" for s in queue)
    # a bit over a second of base RTT to fill the queue, then every interval says
    # "queue full, nothing spare": >= 128 ms (code 10) and 0 bit/s
    late = [s for s in queue if s.time >= 4.0]
    assert late and all(s.value >= S.Q_BASE_US * 2**10 / 1e6 for s in late), late
    assert all(s.value == 0.0 for s in spare if s.time >= 4.0)
    # no spare rate ever above what the 2 Mb/s port has
    assert all(0.0 <= s.value <= 2e6 for s in spare)


def test_report_draws_the_stamp(stamped_run: Path) -> None:
    written = render(stamped_run)
    assert stamped_run / "stamp.png" in written and (stamped_run / "stamp.png").stat().st_size > 0


def test_an_unstamped_session_has_no_stamp_samples_and_no_plot(tmp_path: Path) -> None:
    run(True, tmp_path)
    assert not [s for s in R.load_samples(tmp_path) if s.metric in (R.STAMP_QUEUE, R.STAMP_SPARE)]
    assert tmp_path / "stamp.png" not in render(tmp_path)
