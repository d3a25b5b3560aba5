"""The congestion stamp in the simulator: the P4 nodes' queue metadata is the
link queue's, so a stamped session's packets carry the wait they had.

A 4 Mb/s CBR stream into a 2 Mb/s port with a 50-packet queue: the first
packet finds every port idle (queue code 1, spare code of the 2 Mb/s port:
50 units, code 5); once the queue is full each packet waits 50 to 51 frame
times (about 215 ms: code 10) and the port has no spare rate (code 0).
"""

from __future__ import annotations

import pytest

from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.netsim.switches import choose_switch
from netsim_testlib import Sink
from p4mcc.scenario.model import scenario_from_dict

GROUP = "239.7.7.8"
S = wire.Stamp


class DataSender(Endpoint):
    """``count`` p4mcc data packets of ``size`` payload bytes every ``interval`` s."""

    role = "stamp-sender"

    def __init__(self, size: int, interval: float, count: int) -> None:
        super().__init__()
        self.size, self.interval, self.count, self.sent = size, interval, count, 0

    def on_start(self, now: float) -> None:
        self.set_timer("tx", now)

    def on_timer(self, name: str, now: float) -> None:
        msg = wire.WebrcData(session_id=1, seq=self.sent, payload=bytes(self.size))
        self.send((GROUP, 5000), msg.encode())
        self.sent += 1
        if self.sent < self.count:
            self.set_timer("tx", now + self.interval)

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        pass


class StampSink(Sink):
    def __init__(self) -> None:
        super().__init__(GROUP)
        self.stamps: list[int] = []

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        self.stamps.append(wire.decode(data).stamp)


def run(assistance: object) -> StampSink:
    sc = scenario_from_dict({
        "duration": 5,
        "topology": {
            "hosts": {"snd": {"ip": "10.0.0.1/24"}, "rcv": {"ip": "10.0.0.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [{"a": "snd", "b": "s1", "rate": "100Mbps", "delay": "1ms"},
                      {"a": "s1", "b": "s2", "rate": "2Mbps", "delay": "10ms", "queue": 50},
                      {"a": "s2", "b": "rcv", "rate": "100Mbps", "delay": "1ms"}],
        },
        "sessions": [{"name": "d", "protocol": "cbr", "sender": "snd", "receivers": ["rcv"],
                      "group": GROUP, "port": 5000, "assistance": assistance}],
    }, known_protocols=None)
    choice = choose_switch("p4")
    sim = Simulator(1)
    net = build_network(sim, sc.topology, switch_factory=choice.factory)
    choice.configure(net, sc)
    sink = net.hosts["rcv"].add_endpoint(StampSink(), 5000)
    net.hosts["snd"].add_endpoint(DataSender(1000, 0.002, 400), 5000, start_at=0.5)
    sim.run(until=3.0)
    return sink


def test_a_queue_that_fills_shows_in_the_stamp_of_the_packets_that_waited() -> None:
    sink = run("stamp")
    assert len(sink.stamps) > 100
    assert sink.stamps[0] == S.pack(1, 5)
    frame_s = (1000 + 28 + wire.FRAME_OVERHEAD) * 8 / 2e6
    assert S.queue_code_for(int(50 * frame_s * 1e6)) == S.queue_code_for(int(51 * frame_s * 1e6)) == 10
    assert all(s == S.pack(10, 0) for s in sink.stamps[-50:])
    codes = [S.queue_code(s) for s in sink.stamps]
    assert codes == sorted(codes)  # the queue only grows while the stream lasts


@pytest.mark.parametrize("assistance", [True, False])
def test_a_session_without_stamp_assistance_arrives_unstamped(assistance: bool) -> None:
    sink = run(assistance)
    assert sink.stamps and set(sink.stamps) == {S.NOT_STAMPED}
