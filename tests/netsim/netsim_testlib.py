"""Small endpoints and builders the simulator tests share (not protocol cores)."""

from __future__ import annotations

from p4mcc.hosts.core import Endpoint, JoinGroup, LeaveGroup
from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import Network, build_network
from p4mcc.scenario.model import Topology


class CbrSender(Endpoint):
    """Sends ``size``-byte datagrams to ``dest`` every ``interval`` seconds, ``count`` times."""

    role = "cbr-sender"

    def __init__(self, dest: tuple[str, int], size: int, interval: float, count: int) -> None:
        super().__init__()
        self.dest, self.size, self.interval, self.count = dest, size, interval, count
        self.sent = 0
        self.feedback: list[tuple[float, bytes, tuple[str, int]]] = []

    def on_start(self, now: float) -> None:
        self.set_timer("tx", now)

    def on_timer(self, name: str, now: float) -> None:
        self.send(self.dest, self.sent.to_bytes(4, "big") + bytes(self.size - 4))
        self.sent += 1
        if self.sent < self.count:
            self.set_timer("tx", now + self.interval)

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        self.feedback.append((now, data, src))


class Sink(Endpoint):
    """Records (time, seq) of every datagram; joins ``group`` at start, leaves at ``leave_at``."""

    role = "sink"

    def __init__(self, group: str | None = None, leave_at: float | None = None,
                 reply_to: tuple[str, int] | None = None) -> None:
        super().__init__()
        self.group, self.leave_at, self.reply_to = group, leave_at, reply_to
        self.got: list[tuple[float, int]] = []

    def on_start(self, now: float) -> None:
        if self.group:
            self.emit(JoinGroup(self.group))
        if self.leave_at is not None:
            self.set_timer("leave", self.leave_at)

    def on_timer(self, name: str, now: float) -> None:
        if name == "leave" and self.group:
            self.emit(LeaveGroup(self.group))

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        self.got.append((now, int.from_bytes(data[:4], "big")))
        if self.reply_to is not None:
            self.send(self.reply_to, b"ack" + data[:4])


def network(topo: Topology, seed: int = 1, **kw) -> tuple[Simulator, Network]:
    sim = Simulator(seed)
    return sim, build_network(sim, topo, **kw)
