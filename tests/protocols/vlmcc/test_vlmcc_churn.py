"""VLMCC under receiver churn: a leader that crashes or leaves, the loss timer on a
clean path, a rogue receiver, and malformed packets at every VLMCC endpoint.
"""

from __future__ import annotations

from churn_util import GROUP, PORT, SND, crash, data_times, dumbbell, leave, recovery_time, session
from testnet import Host, TinyNet
from vlmcc_util import DefaultReceiver as DefaultVlmccReceiver
from vlmcc_util import DefaultSender as DefaultVlmccSender
from vlmcc_util import default_session

from p4mcc.hosts.core import Endpoint, node_id
from p4mcc.hosts.vlmcc import VlmccParams, VlmccSender
from p4mcc.hosts.wire import COMMON_LEN, VlmccChallenge, VlmccData, body_size, ts_us

def _vlmcc(n: int, seed: int = 2) -> tuple[TinyNet, list[Host], VlmccSender]:
    net, hosts = dumbbell(n, seed=seed)
    return net, hosts, default_session(net.hosts["s"], hosts, session, stagger=0.05)


def _by_ip(hosts: list[Host], rid: int) -> Host:
    return next(h for h in hosts if node_id(h.ip) == rid)


def test_vlmcc_recovers_from_a_leader_that_crashes():
    net, hosts, snd = _vlmcc(3)
    net.run(10.0)
    leader = _by_ip(hosts, snd.leader)
    crash(net, leader, 10.0)
    net.run(22.0)
    assert snd.leader != node_id(leader.ip) and snd.leader_losses >= 1
    survivor = next(h for h in hosts if h is not leader)
    rec = recovery_time(data_times(survivor, VlmccData), 10.0)
    assert rec <= 5.0, f"recovered after {rec:.1f} s"
    # ... and it does not come back as leader while it is barred.
    assert all(rid != node_id(leader.ip) for t, rid in snd.leader_log if t > 10.0)


def test_vlmcc_recovers_from_a_leader_that_leaves():
    net, hosts, snd = _vlmcc(3, seed=4)
    net.run(10.0)
    leader = _by_ip(hosts, snd.leader)
    leave(net, leader, 10.0)
    net.run(22.0)
    survivor = next(h for h in hosts if h is not leader)
    assert snd.leader in {node_id(h.ip) for h in hosts if h is not leader}
    assert recovery_time(data_times(survivor, VlmccData), 10.0) <= 5.0


def test_vlmcc_loss_timer_counts_no_losses_on_a_clean_path():
    """Issue 14: 593 of 3,085 packets counted lost on a clean path (timer without a floor)."""
    net, hosts = dumbbell(2, rate=2e6, queue=50)
    p = VlmccParams()
    snd = DefaultVlmccSender(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(DefaultVlmccReceiver(session(p, h.ip)))
    net.run(20.0)
    drops = net.channel("R1", "R2").counters.queue_drops
    assert drops <= 10  # slow start's overshoot at most
    assert snd.losses <= drops + 2
    frame = p.packet_size + COMMON_LEN + body_size(VlmccData) + 42  # + UDP, IPv4, Ethernet
    assert snd.next_seq > 0.7 * 2e6 / 8 / frame * 20  # and the path is used


# VLMCC: a rogue receiver -------------------------------------------------------------------


class Rogue(Endpoint):
    """Joins, then floods the sender with challenges claiming a one-packet window:
    half of them spoofing an honest receiver's id, half in its own name; as leader
    it never acknowledges."""

    role = "rogue"

    def __init__(self, me: str, victim: str, start: float, pps: float = 100.0) -> None:
        super().__init__()
        self.me, self.victim, self.start_t, self.gap = me, victim, start, 1.0 / pps
        self.n = 0

    def on_start(self, now: float) -> None:
        from p4mcc.hosts.core import JoinGroup

        self.emit(JoinGroup(GROUP))
        self.set_timer("tx", self.start_t)

    def on_datagram(self, data: bytes, src, now: float) -> None:
        pass

    def on_timer(self, name: str, now: float) -> None:
        self.n += 1
        who = self.victim if self.n % 2 else self.me
        self.send((SND, PORT), VlmccChallenge(session_id=1, timestamp=ts_us(now), rcvr_id=node_id(who),
                                              rtt=20_000, win_size=1, rate=400_000).encode())
        self.set_timer("tx", now + self.gap)


def _vlmcc_goodput(rogue: bool) -> tuple[float, VlmccSender]:
    net, hosts, snd = _vlmcc(3, seed=5)
    if rogue:
        h = net.host("evil", "10.0.2.66")
        net.link("R2", "evil", rate_bps=100e6, delay_s=0.001)
        h.attach(Rogue(h.ip, hosts[0].ip, start=5.0))
    net.run(25.0)
    times = data_times(hosts[1], VlmccData)
    return sum(1 for t in times if 10.0 <= t < 25.0) / 15.0, snd


def test_a_rogue_receiver_cannot_hold_the_session_below_half():
    clean, _ = _vlmcc_goodput(False)
    attacked, snd = _vlmcc_goodput(True)
    assert snd.refused > 500  # the spoofed half is refused outright
    assert attacked >= 0.5 * clean, f"{attacked:.0f} vs {clean:.0f} packets/s"


def test_malformed_packets_are_dropped_and_counted_by_every_vlmcc_endpoint():
    junk = [b"", b"\x00", b"\xff" * 40, bytes(range(64))]
    for ep in (DefaultVlmccSender(session(VlmccParams(), SND)),
               DefaultVlmccReceiver(session(VlmccParams(), "10.0.2.1"))):
        ep.start(0.0)
        ep.datagrams_to_send()
        for j in junk:
            ep.receive_datagram(j, ("10.0.2.9", PORT), 0.1)
        assert ep.malformed == len(junk), type(ep).__name__
