"""MTCP feedback that lies about who sent it or what made it, in the simulator.

A 4 Mbit/s bottleneck carries one MTCP session (no switch assistance) to
three honest receivers, r1 behind a link that loses 2 % (holes only it has);
a forger behind the same bottleneck joins the group
(so it sees which packets were sent) and from ``START`` to ``STOP`` sends
the sender 50 reports a second that claim everything sent:

* ``stolen_id``: ACKs carrying r1's node id from the forger's own address.
  Believed, they would acknowledge r1's holes, which would never be
  repaired;
* ``fake_fold``: ACKs under its own id flagged AGGREGATED, as if a switch
  had folded every receiver's summary, with a one-packet ``min_cwnd``.
  Believed, the sender would take one "fold" for every receiver.

The sender counts both in ``forged`` and drops them: the honest receivers
lose no data, keep at least 80 % of the in-order delivery they have without
the forger, and deliver again within 5 s of its end.
"""

from __future__ import annotations

from typing import Any

import pytest

from p4mcc.hosts.core import Endpoint, JoinGroup, node_id
from p4mcc.hosts.mtcp import NO_CWND
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, decode

START, STOP, END = 5.0, 15.0, 20.0
PPS = 50.0


class Forger(Endpoint):
    """A group member that sends the sender ACKs claiming every packet it has seen sent."""

    role = "forger"

    def __init__(self, mode: str, session_id: int, group: str, sender: str, victim: str, local: str,
                 port: int) -> None:
        super().__init__()
        self.mode, self.sid, self.group, self.port = mode, session_id, group, port
        self.sender, self.victim, self.me = sender, node_id(victim), node_id(local)
        self.highest, self.sent = 0, 0

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.group))
        self.set_timer("lie", now)

    def on_datagram(self, data: bytes, src: Any, now: float) -> None:
        msg = decode(data)
        if isinstance(msg, MtcpData):
            self.highest = max(self.highest, msg.seq)

    def on_timer(self, name: str, now: float) -> None:
        if self.highest:
            stolen = self.mode == "stolen_id"
            self.send((self.sender, self.port), MtcpAck(
                session_id=self.sid, flags=0 if stolen else Flags.AGGREGATED, cum_ack=self.highest,
                min_cwnd=NO_CWND if stolen else 1, max_twnd=0, adv_wnd=4096,
                node_id=self.victim if stolen else self.me, sack_bitmap=0xFFFFFFFF).encode())
            self.sent += 1
        self.set_timer("lie", now + 1.0 / PPS)


def _run(mode: str | None) -> tuple[Any, dict[str, list[tuple[float, int]]]]:
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import model_choice
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict({
        "name": f"mtcp-{mode}", "duration": END, "seed": 1,
        "topology": {"hosts": ["h1", "r1", "r2", "r3", "forger"], "switches": ["s1", "s2"],
                     "link_defaults": {"rate": "10Mbps", "delay": "2ms", "queue": 50},
                     "links": [{"a": "s1", "b": "s2", "rate": "4Mbps", "delay": "10ms", "queue": 30},
                               ["h1", "s1"], {"a": "r1", "b": "s2", "loss": 0.02}, ["r2", "s2"], ["r3", "s2"], ["forger", "s2"]]},
        "sessions": [{"name": "s", "protocol": "mtcp", "sender": "h1", "receivers": ["r1", "r2", "r3"],
                      "port": 5005}],
    })
    run = build_run(sc, switch=model_choice())
    s, hosts = sc.sessions[0], run.net.hosts
    forger = None
    if mode is not None:
        forger = Forger(mode, s.session_id, s.group, hosts["h1"].ip, hosts["r1"].ip, hosts["forger"].ip, s.port)
        hosts["forger"].add_endpoint(forger, s.port, label="forger", start_at=START, stop_at=STOP)
    delivered: dict[str, list[tuple[float, int]]] = {r: [] for r in s.receivers}

    def sample() -> None:
        for r in s.receivers:
            delivered[r].append((run.sim.now, run.agents[f"s/{r}"].rbuf.cum_ack))
        if run.sim.now + 0.5 <= END:
            run.sim.at(run.sim.now + 0.5, sample)

    run.sim.at(0.5, sample)
    run.sim.run(until=END)
    if forger is not None:
        assert forger.sent >= 0.9 * PPS * (STOP - START)  # it lied all along
    return run, delivered


def _at(series: list[tuple[float, int]], t: float) -> int:
    return max(v for tt, v in series if tt <= t + 1e-9)


@pytest.fixture(scope="module")
def honest() -> dict[str, list[tuple[float, int]]]:
    return _run(None)[1]


@pytest.mark.parametrize("mode", ["stolen_id", "fake_fold"])
def test_a_forged_report_is_dropped_and_the_honest_receivers_keep_their_delivery(
        mode: str, honest: dict[str, list[tuple[float, int]]]) -> None:
    run, got = _run(mode)
    snd = run.agents["s/h1"]
    for r, series in got.items():
        base = _at(honest[r], STOP) - _at(honest[r], START)
        during = _at(series, STOP) - _at(series, START)
        assert during >= 0.8 * base, (r, during, base)
        # and in the 5 s after the forger's end: nothing it said is still believed
        after, base_after = _at(series, END) - _at(series, STOP), _at(honest[r], END) - _at(honest[r], STOP)
        assert after >= 0.8 * base_after, (r, after, base_after)
    # nothing lost: in order up to what was sent a round trip before the end
    sent = snd.next_seq - 1
    assert min(a.rbuf.cum_ack for label, a in run.agents.items() if label != "s/h1") >= sent - 64
    assert snd.forged >= 0.9 * PPS * (STOP - START)
