"""What one MTCP node's ACKs can claim: the stall bound, with and without it.

Two honest leaves acknowledge every packet a round trip after it left; the
third node is a :class:`hosts.rogue.Rogue` whose ACKs (``cum_ack`` 0,
``min_cwnd``, ``max_twnd`` and ``adv_wnd`` of one packet) never
acknowledge anything.  The default profile removes it after
``StalledChildren.STALL_MIN`` and refuses its ACKs; without the rule its
summary holds the window at ``min_cwnd - max_twnd`` = 0 for as long as it talks.
"""

from __future__ import annotations

from fakes import drain

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import RULES
from p4mcc.hosts.mtcp.params import MtcpParams
from p4mcc.hosts.mtcp.constants import NO_CWND
from p4mcc.hosts.rogue import Rogue
from p4mcc.hosts.wire import MtcpAck, MtcpData

RTT = 0.02
STEP = 0.01
BUF = 32
HONEST = ("10.0.1.1", "10.0.1.2")
ROGUE = "10.0.1.9"


def run(rules: tuple[str, ...], rogue_from: float, end: float) -> list[tuple[float, int]]:
    """(time, packets sent by then) per STEP; the rogue's ACKs 50 per second from ``rogue_from``."""
    s = registry.get("mtcp").sender(registry.SessionConfig(
        1, "239.1.1.1", 5000, "10.0.0.1", "10.0.0.1", MtcpParams(packet_size=1000, receivers=2, rcv_buffer=BUF),
        rules=rules))
    rogue = Rogue("false_report", "mtcp", 1, "239.1.1.1", "10.0.0.1", ROGUE, 5000)
    s.start(0.0)
    inflight: list[tuple[float, MtcpData]] = []
    cum, t, out, next_rogue = 0, 0.0, [], rogue_from

    def ack(h: str, echo: int) -> None:
        s.receive_datagram(MtcpAck(session_id=1, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=BUF,
                                   node_id=node_id(h), echo_ts=echo).encode(), (h, 5000), t)

    for h in HONEST:
        ack(h, 0)
    while t < end:
        t = round(t + STEP, 6)
        while (w := s.get_timer()) is not None and w <= t:
            s.handle_timer(w)
        for d in drain(s).datagrams:
            m = wire.decode(d.data)
            if isinstance(m, MtcpData):
                inflight.append((t + RTT, m))
        due = [m for at, m in inflight if at <= t]
        inflight = [(at, m) for at, m in inflight if at > t]
        for m in due:
            rogue.on_datagram(m.encode(), ("10.0.0.1", 5000), t)
            cum = max(cum, m.seq)
        if due:
            for h in HONEST:
                ack(h, due[-1].timestamp)
        if t >= rogue_from and t >= next_rogue:
            s.receive_datagram(rogue.craft(t), (ROGUE, 5000), t)
            next_rogue += 1 / 50
        out.append((t, s.next_seq - 1))
    return out


def sent_between(rates: list[tuple[float, int]], t0: float, t1: float) -> int:
    at = dict(rates)
    return at[round(t1, 6)] - at[round(t0, 6)]


def test_a_child_that_acknowledges_nothing_is_removed_within_the_stall_time() -> None:
    rates = run(RULES.profiles["default"], 1.0, 4.0)
    assert sent_between(rates, 0.5, 1.0) > 20  # the window is open before the rogue
    assert sent_between(rates, 1.1, 2.9) <= 2  # its summary: min_cwnd 1 - max_twnd 1 = nothing to send
    assert sent_between(rates, 3.2, 4.0) > 100  # removed after STALL_MIN (2 s)


def test_without_the_bound_the_child_holds_the_window_for_as_long_as_it_talks() -> None:
    rules = tuple(n for n in RULES.profiles["default"] if n != "stalled_children")
    rates = run(rules, 1.0, 4.0)
    assert sent_between(rates, 0.5, 1.0) > 20
    assert sent_between(rates, 1.1, 4.0) <= 2
