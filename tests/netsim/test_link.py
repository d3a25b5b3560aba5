"""Links: serialization by rate, propagation delay, drop-tail queue limits, loss processes."""

from __future__ import annotations

import math

import pytest

from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.link import Bernoulli, Channel, GilbertElliottLoss, LossModel, NoLoss
from p4mcc.scenario.model import GilbertElliott


class Catch:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.got: list[tuple[float, int, bytes]] = []

    def receive(self, port: int, frame: bytes) -> None:
        self.got.append((self.sim.now, port, frame))


def channel(sim: Simulator, dst: Catch, *, rate: float = 8e6, delay: float = 0.01, loss=None,
            qp: int | None = 100, qb: int | None = None) -> Channel:
    return Channel(sim, "c", dst, 3, rate_bps=rate, delay_s=delay, loss=loss or NoLoss(),
                   queue_packets=qp, queue_bytes=qb)


def test_back_to_back_packets_serialize_at_rate_then_propagate() -> None:
    sim = Simulator()
    dst = Catch(sim)
    ch = channel(sim, dst, rate=8e6, delay=0.01)  # 1000 bytes take 1 ms
    for i in range(5):
        ch.send(bytes([i]) * 1000)
    sim.run()
    assert [round(t, 9) for t, _, _ in dst.got] == [round(0.01 + 0.001 * (i + 1), 9) for i in range(5)]
    assert [f[0] for _, _, f in dst.got] == [0, 1, 2, 3, 4]
    assert all(p == 3 for _, p, _ in dst.got)


def test_idle_link_restarts_serialization_at_send_time() -> None:
    sim = Simulator()
    dst = Catch(sim)
    ch = channel(sim, dst, rate=1e6, delay=0.0)
    sim.at(1.0, ch.send, bytes(125))  # 1 ms
    sim.at(5.0, ch.send, bytes(250))  # 2 ms
    sim.run()
    assert [t for t, _, _ in dst.got] == pytest.approx([1.001, 5.002])


def test_queue_limit_in_packets_counts_waiting_not_the_one_on_the_wire() -> None:
    sim = Simulator()
    dst = Catch(sim)
    ch = channel(sim, dst, qp=3)
    accepted = [ch.send(bytes(1000)) for _ in range(10)]
    assert accepted == [True] * 4 + [False] * 6
    assert ch.backlog() == (3, 3000)
    sim.run()
    assert len(dst.got) == 4
    c = ch.counters
    assert (c.queue_drops, c.enqueued_packets, c.delivered_packets, c.max_queue_packets) == (6, 4, 4, 3)


def test_queue_limit_in_bytes() -> None:
    sim = Simulator()
    dst = Catch(sim)
    ch = channel(sim, dst, qp=None, qb=2500)
    assert [ch.send(bytes(1000)) for _ in range(4)] == [True, True, True, False]
    assert ch.send(bytes(400))  # 2000 + 400 <= 2500 still fits
    assert not ch.send(bytes(200))


def test_queue_drains_and_accepts_again() -> None:
    sim = Simulator()
    dst = Catch(sim)
    ch = channel(sim, dst, rate=8e6, qp=1)
    assert [ch.send(bytes(1000)) for _ in range(3)] == [True, True, False]
    sim.run(until=0.0015)  # first done at 1 ms, second on the wire, queue empty
    assert ch.backlog() == (0, 0)
    assert ch.send(bytes(1000))


def test_bernoulli_loss_rate_matches_probability() -> None:
    sim = Simulator(5)
    dst = Catch(sim)
    n, p = 20000, 0.05
    ch = channel(sim, dst, rate=1e12, delay=0.0, loss=Bernoulli(p, sim.rng("l")), qp=None)
    for _ in range(n):
        ch.send(b"x" * 60)
    sim.run()
    measured = ch.counters.loss_drops / n
    assert abs(measured - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert len(dst.got) == n - ch.counters.loss_drops


def test_gilbert_elliott_mean_loss_and_burst_length() -> None:
    sim = Simulator(9)
    m = GilbertElliott(p_gb=0.01, p_bg=0.25, loss_good=0.0, loss_bad=1.0)
    ge = GilbertElliottLoss(m, sim.rng("ge"))
    seq = [ge.lost() for _ in range(200000)]
    assert sum(seq) / len(seq) == pytest.approx(m.mean_loss, rel=0.1)
    bursts, run = [], 0
    for lost in seq:
        if lost:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    assert sum(bursts) / len(bursts) == pytest.approx(1 / m.p_bg, rel=0.1)  # mean burst 4 packets


def test_lost_packet_still_occupies_the_wire() -> None:
    sim = Simulator()
    dst = Catch(sim)

    class LoseFirst(LossModel):
        n = 0

        def lost(self) -> bool:
            self.n += 1
            return self.n == 1

    ch = channel(sim, dst, delay=0.0)
    ch.set_loss(LoseFirst())
    ch.send(bytes(1000))
    ch.send(bytes(1000))
    sim.run()
    assert [t for t, _, _ in dst.got] == pytest.approx([0.002])
    assert ch.counters.loss_drops == 1


def test_queue_meta_is_the_wait_before_a_frame_offered_now_starts() -> None:
    sim = Simulator()
    ch = channel(sim, Catch(sim), rate=8e6)  # 1000 bytes take 1 ms
    assert ch.queue_meta(0.0) == (0, 0.0)
    for _ in range(3):
        ch.send(bytes(1000))
    waiting, wait = ch.queue_meta(0.0)
    assert waiting == 2 and wait == pytest.approx(0.003)  # one on the wire, two queued
    waiting, wait = ch.queue_meta(0.0015)
    assert waiting == 1 and wait == pytest.approx(0.0015)
    assert ch.queue_meta(0.003) == (0, 0.0)
