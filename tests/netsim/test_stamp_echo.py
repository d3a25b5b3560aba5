"""Stamp echoes in the simulator: its P4 nodes run the same program, so a
filtered TFMCC report carries the echoes of the reports the switch dropped
(docs/stamp.md, "Carried back").

A stamped TFMCC session through two filtering switches: a 0.5 Mb/s stream
of TFMCC data over a 2 Mb/s link (spare code 5) to two receivers, r1 on a
100 Mb/s port, r2 on a 1 Mb/s one (spare code 3). Every 20 packets each
receiver sends a report of the round with its StampWindow's byte as the
echo, r2 10 packets later; r2's rate is the higher, so the switches drop
its report. Each report that passes carries the echo of the one dropped
before it, so the sender learns of r2's tighter port.
"""

from __future__ import annotations

from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint
from p4mcc.hosts.stampwindow import StampWindow
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.netsim.switches import choose_switch
from netsim_testlib import Sink
from p4mcc.scenario.model import scenario_from_dict

GROUP = "239.7.7.9"
S = wire.Stamp
EVERY = 20


def combine(echoes: list[int]) -> int:
    """The switch's rule for a message standing for ``echoes``."""
    if any(not S.stamped(e) for e in echoes):
        return S.NOT_STAMPED
    return S.pack(max(S.queue_code(e) for e in echoes), min(S.spare_code(e) for e in echoes))


class DataSender(Endpoint):
    """TFMCC data, ``count`` packets one every ``interval`` s; records the reports' echoes."""

    role = "echo-sender"

    def __init__(self, interval: float, count: int) -> None:
        super().__init__()
        self.interval, self.count, self.sent = interval, count, 0
        self.echoes: list[int] = []

    def on_start(self, now: float) -> None:
        self.set_timer("tx", now)

    def on_timer(self, name: str, now: float) -> None:
        self.send((GROUP, 5000), wire.TfmccData(session_id=1, seq=self.sent, payload=bytes(1000)).encode())
        self.sent += 1
        if self.sent < self.count:
            self.set_timer("tx", now + self.interval)

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        msg = wire.decode(data)
        if isinstance(msg, wire.TfmccReport):
            self.echoes.append(msg.stamp)


class EchoingReceiver(Sink):
    """Reports every ``EVERY`` data packets, echoing the stamps of those packets."""

    def __init__(self, rate: int, rcvr_id: int, skip: int = 0) -> None:
        super().__init__(GROUP)
        self.rate, self.rcvr_id, self.skip = rate, rcvr_id, skip
        self.window = StampWindow()
        self.echoes: list[int] = []

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        msg = wire.decode(data)
        if msg.seq < self.skip:
            return
        self.window.add(msg.stamp)
        if self.window.packets == EVERY:
            echo = self.window.byte()
            self.window.reset()
            rnd = len(self.echoes)
            self.echoes.append(echo)
            self.send(("10.0.0.1", 5000), wire.TfmccReport(session_id=1, seq=rnd, rate=self.rate, fb_round=rnd,
                                                          rcvr_id=self.rcvr_id, stamp=echo).encode())


def test_filtered_reports_carry_every_echo_to_the_sender() -> None:
    sc = scenario_from_dict({
        "duration": 5,
        "topology": {
            "hosts": {"snd": {"ip": "10.0.0.1/24"}, "r1": {"ip": "10.0.0.2/24"}, "r2": {"ip": "10.0.0.3/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [{"a": "snd", "b": "s1", "rate": "100Mbps", "delay": "1ms"},
                      {"a": "s1", "b": "s2", "rate": "2Mbps", "delay": "10ms", "queue": 60},
                      {"a": "s2", "b": "r1", "rate": "100Mbps", "delay": "1ms"},
                      {"a": "s2", "b": "r2", "rate": "1Mbps", "delay": "1ms"}],
        },
        "sessions": [{"name": "t", "protocol": "tfmcc", "sender": "snd", "receivers": ["r1", "r2"],
                      "group": GROUP, "port": 5000, "assistance": "stamp"}],
    })
    choice = choose_switch("p4")
    sim = Simulator(1)
    net = build_network(sim, sc.topology, switch_factory=choice.factory)
    choice.configure(net, sc)
    r1 = net.hosts["r1"].add_endpoint(EchoingReceiver(1_000_000, 2), 5000)
    r2 = net.hosts["r2"].add_endpoint(EchoingReceiver(2_000_000, 3, skip=EVERY // 2), 5000)
    snd = net.hosts["snd"].add_endpoint(DataSender(0.016, 160), 5000, start_at=0.5)
    sim.run(until=4.0)

    sent = r1.echoes + r2.echoes
    assert (len(r1.echoes), len(r2.echoes)) == (8, 7)  # no packet lost
    assert all(S.stamped(e) for e in sent)
    assert {S.spare_code(e) for e in r1.echoes} == {5} and {S.spare_code(e) for e in r2.echoes} == {3}
    assert len(snd.echoes) == len(r1.echoes)  # r2's report of each round was filtered
    # r2 reports each round between r1's reports, so its echo rides on r1's
    # next report (the last one's stays at the switch).
    assert snd.echoes[0] == r1.echoes[0]
    assert snd.echoes[1:] == [combine([a, b]) for a, b in zip(r1.echoes[1:], r2.echoes)]
    assert {S.spare_code(e) for e in snd.echoes[1:]} == {3}  # r2's tighter port reaches the sender
