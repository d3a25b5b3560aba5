"""What one RLA receiver's SACKs can claim, one bound per test.

Two honest receivers acknowledge every packet a round trip after it left;
the third is a :class:`hosts.rogue.Rogue` whose SACKs (``cum_ack`` 0, a
buffer of one packet, the last data timestamp echoed) never acknowledge
anything.  Each test runs the default profile and the default profile less
the bound, and sees the claim win without it.
"""

from __future__ import annotations

from fakes import drain

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.rla import RULES, RlaParams
from p4mcc.hosts.rogue import Rogue
from p4mcc.hosts.wire import RlaData, RlaSack

RTT = 0.02  # the honest receivers' path
STEP = 0.01  # the test's clock step: every SACK and timer due in it is handled
HONEST = ("10.0.1.1", "10.0.1.2")
ROGUE = "10.0.1.9"
BUF = 32  # packets: the window, a few hundred packets per second


def without(*names: str) -> tuple[str, ...]:
    return tuple(n for n in RULES.profiles["default"] if n not in names)


def run(rules: tuple[str, ...], rogue_from: float, rogue_until: float, end: float) -> list[tuple[float, int]]:
    """(time, new packets sent by then) per STEP; the rogue's SACKs 50 per second in its span."""
    s = registry.get("rla").sender(registry.SessionConfig(
        1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", RlaParams(packet_size=1000, receivers=2, rcv_buffer=BUF), rules=rules))
    rogue = Rogue("false_report", "rla", 1, "239.1.1.1", "10.0.0.1", ROGUE, 5000)
    s.start(0.0)
    inflight: list[tuple[float, RlaData]] = []  # data reaching the honest receivers at a time
    cum = 0
    t, out, next_rogue = 0.0, [], rogue_from
    for h in HONEST:
        s.receive_datagram(RlaSack(session_id=1, rcvr_id=node_id(h), adv_buf=BUF).encode(), (h, 5000), 0.0)
    while t < end:
        t = round(t + STEP, 6)
        while (w := s.get_timer()) is not None and w <= t:
            s.handle_timer(w)
        for d in drain(s).datagrams:
            m = wire.decode(d.data)
            if isinstance(m, RlaData):
                inflight.append((t + RTT, m))
        due = [m for at, m in inflight if at <= t]
        inflight = [(at, m) for at, m in inflight if at > t]
        for m in due:
            rogue.on_datagram(m.encode(), ("10.0.0.1", 5000), t)
            cum = max(cum, m.seq)
        if due:
            for h in HONEST:
                s.receive_datagram(RlaSack(session_id=1, rcvr_id=node_id(h), cum_ack=cum, adv_buf=BUF,
                                           echo_ts=due[-1].timestamp, seq=due[-1].seq).encode(), (h, 5000), t)
        if rogue_from <= t < rogue_until and t >= next_rogue:
            s.receive_datagram(rogue.craft(t), (ROGUE, 5000), t)
            next_rogue += 1 / 50
        out.append((t, s.packets_sent))
    return out


def sent_between(rates: list[tuple[float, int]], t0: float, t1: float) -> int:
    at = dict(rates)
    return at[round(t1, 6)] - at[round(t0, 6)]


def test_a_receiver_that_acknowledges_nothing_is_dropped_within_the_stall_time() -> None:
    rates = run(RULES.profiles["default"], 1.0, 4.0, 4.0)
    assert sent_between(rates, 0.5, 1.0) > 20  # the window is open before the rogue
    # the rogue's SACK holds rule 5 at one packet past its cumulative ACK ...
    assert sent_between(rates, 1.1, 2.9) <= 2
    # ... until StalledReceivers.STALL_MIN (2 s, 4 srtt of 20 ms is less) without an acknowledgement
    assert sent_between(rates, 3.2, 4.0) > 100


def test_without_the_bound_the_rogue_holds_the_window_for_as_long_as_it_talks() -> None:
    rates = run(without("stalled_receivers"), 1.0, 4.0, 4.0)
    assert sent_between(rates, 0.5, 1.0) > 20
    assert sent_between(rates, 1.1, 4.0) <= 2
