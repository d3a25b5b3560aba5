"""RLA under receiver churn: receivers that crash or leave, the clock receiver that
crashes, and what the session does without the dead-receiver rule (issue 14 bounds);
malformed packets at every RLA endpoint.
"""

from __future__ import annotations

from churn_util import PORT, SND, crash, data_times, dumbbell, leave, recovery_time, session
from rla_util import receiver_class, rules, sender_class
from testnet import Host, TinyNet

from p4mcc.hosts.core import node_id
from p4mcc.hosts.rla import RlaParams, RlaReceiver, RlaSender
from p4mcc.hosts.rla.rules import OneClock
from p4mcc.hosts.wire import RlaSack, RlaSackFlags

def _rla(n: int, packets: int, without: tuple[str, ...] = (),
         **path: float) -> tuple[TinyNet, list[Host], RlaSender]:
    net, hosts = dumbbell(n, **path)
    p = RlaParams(total_packets=packets, receivers=n)
    names = rules(without)
    snd = sender_class(names)(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(receiver_class(names)(session(p, h.ip)))
    return net, hosts, snd


def _all_bytes(h: Host, packets: int) -> None:
    assert [d.seq for d in h.delivered] == list(range(1, packets + 1)), f"{h.name}: {len(h.delivered)}"
    assert sum(d.size for d in h.delivered) == packets * RlaParams().packet_size and h.ep.corrupt == 0


def test_rla_survives_a_receiver_that_crashes_silently():
    packets = 2000  # about 9 s at 2 Mbit/s
    net, hosts, snd = _rla(3, packets)
    crash(net, hosts[1], 4.0)
    net.run(40)
    assert snd.done
    for h in (hosts[0], hosts[2]):
        _all_bytes(h, packets)  # every surviving receiver gets every byte
    [(when, rid)] = snd.dropped
    assert rid == node_id(hosts[1].ip) and 4.0 < when < 4.0 + 5.0
    rec = recovery_time(data_times(hosts[0]), 4.0)
    assert rec <= 5.0, f"recovered after {rec:.1f} s"


#: The dumbbell's one-way delay (1 + 10 + 1 ms), and its round trip with the queue full
#: (20 packets of at most a 1,500-byte frame at 2 Mbit/s).
ONE_WAY_S = 0.012
RTT_MAX_S = 2 * ONE_WAY_S + 20 * 1500 * 8 / 2e6


def _longest_gap(times: list[float], start: float, end: float) -> float:
    inside = [t for t in times if start <= t < end]
    return max(b - a for a, b in zip([start] + inside, inside + [end]))


def test_a_leaving_receiver_is_forgotten_at_once_and_the_stream_does_not_pause():
    """``leave_report``: the leaver's last SACK says so; the sender forgets it within one
    way of the path, drops nobody by silence, and the rest's data never waits on it."""
    packets = 3000
    net, hosts, snd = _rla(3, packets)
    gone = node_id(hosts[2].ip)
    leave(net, hosts[2], 3.0)
    seen = {}
    net.sim.at(3.0 + ONE_WAY_S + 0.005, lambda: seen.update(known=gone in snd.rcvrs))
    net.run(40)
    assert seen == {"known": False} and snd.leaves == 1 and snd.dropped == []
    assert snd.done
    for h in hosts[:2]:
        _all_bytes(h, packets)
    gap = _longest_gap(data_times(hosts[0]), 3.0, 4.0)
    assert gap < 2 * RTT_MAX_S, f"the stream paused {gap:.3f} s"


def test_without_the_leave_report_a_leaver_is_dropped_by_its_silence():
    packets = 3000
    net, hosts, snd = _rla(3, packets, without=("leave_report",))
    leave(net, hosts[2], 3.0)
    net.run(40)
    assert snd.done
    for h in hosts[:2]:
        _all_bytes(h, packets)
    assert [rid for _t, rid in snd.dropped] == [node_id(hosts[2].ip)]
    assert recovery_time(data_times(hosts[0]), 3.0) <= 5.0


def test_a_leave_counts_only_from_the_leavers_own_address():
    """A LEAVING SACK naming another receiver is refused as any SACK naming another's id."""
    net, hosts, snd = _rla(3, 3000)
    victim = node_id(hosts[1].ip)
    forged = RlaSack(session_id=1, seq=0, timestamp=0, cum_ack=0, adv_buf=1, rcvr_id=victim, echo_ts=0,
                     sflags=RlaSackFlags.LEAVING)
    net.sim.at(3.0, lambda: hosts[0].send_udp(SND, PORT, forged.encode()))
    seen = {}
    net.sim.at(3.5, lambda: seen.update(known=victim in snd.rcvrs, leaves=snd.leaves, forged=snd.forged))
    net.run(3.6)
    assert seen == {"known": True, "leaves": 0, "forged": 1}


def test_rla_survives_its_clock_receiver_crashing():
    """A group of 9 sends on one receiver's SACKs (``one_clock``, from 8).
    When that receiver dies the window waits for its SACKs as for any
    receiver's, until the dead-receiver rule drops it; then one of the 8
    survivors is the clock, and every survivor gets every byte."""
    packets = 5000  # about 6 s at 10 Mbit/s
    net, hosts, snd = _rla(9, packets, rate=10e6, queue=100)
    seen = {}

    def crash_the_clock() -> None:
        assert snd.clock is not None
        clock = snd.rcvrs[snd.clock]
        seen.update(rid=snd.clock, paced=snd.sack_gap[snd.clock] < clock.srtt / OneClock.CLOCK_LAG)
        crash(net, next(h for h in hosts if node_id(h.ip) == snd.clock), 4.0)

    net.sim.at(3.99, crash_the_clock)
    net.run(40)
    assert seen["paced"], "the clock's SACKs were too sparse to gate the window"
    assert snd.done
    survivors = [h for h in hosts if node_id(h.ip) != seen["rid"]]
    for h in survivors:
        _all_bytes(h, packets)
    assert [rid for _t, rid in snd.dropped] == [seen["rid"]]
    assert snd.clock not in (None, seen["rid"])
    rec = recovery_time(data_times(survivors[0]), 4.0)
    assert rec <= 5.0, f"recovered after {rec:.1f} s"


def test_rla_without_the_dead_receiver_rule_stalls():
    """The rule matters: a sender that waits for every receiver for ever stalls."""
    net, hosts, snd = _rla(3, 3000, without=("drop_silent_receivers", "undo_dead_cuts"))
    crash(net, hosts[1], 4.0)
    net.run(40)
    assert not snd.done
    assert hosts[0].ep.buf.cum_ack < 3000


def test_malformed_packets_are_dropped_and_counted_by_every_rla_endpoint():
    junk = [b"", b"\x00", b"\xff" * 40, bytes(range(64))]
    for ep in (RlaSender(session(RlaParams(), SND)), RlaReceiver(session(RlaParams(), "10.0.2.1"))):
        ep.start(0.0)
        ep.datagrams_to_send()
        for j in junk:
            ep.receive_datagram(j, ("10.0.2.9", PORT), 0.1)
        assert ep.malformed == len(junk), type(ep).__name__
