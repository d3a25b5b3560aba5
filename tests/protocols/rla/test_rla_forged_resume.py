"""A restarted RLA sender and a forged ACK of data never sent, in the simulator and against the core.

The sender's host reboots (``topologies/scenarios/faults/sender-crash.yaml``:
at 8 s for 2 s, a 4 Mbit/s bottleneck, two receivers).  From the instant it
is back a forger beside the receivers sends SACKs claiming a cumulative ACK
of 10^6, so the first report the fresh sender hears says a million packets
were delivered.  ``resume_stream`` resumes after what the receivers show
together: it listens a hello interval and a quarter before its first packet
and the lowest cumulative ACK wins, so the honest receivers' hellos outbid
the forger.  Every honest receiver then gets every byte once, and the session
is back within the fault bench's 5 s.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from p4mcc.hosts.core import Endpoint, node_id
from p4mcc.hosts.wire import RlaSack

SCENARIO = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "faults" / "sender-crash.yaml"
FAR = 10**6
BOUND_S = 5.0
DRAIN_S = 4.0


class Forger(Endpoint):
    """Sends a SACK of ``cum_ack`` to the sender every 50 ms from its start."""

    role = "forger"

    def __init__(self, session_id: int, sender: tuple[str, int], local: str, cum_ack: int) -> None:
        super().__init__()
        self.session_id, self.sender, self.me, self.cum_ack = session_id, sender, node_id(local), cum_ack
        self.sent = 0

    def on_start(self, now: float) -> None:
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Any, now: float) -> None:
        pass

    def on_timer(self, name: str, now: float) -> None:
        self.send(self.sender, RlaSack(session_id=self.session_id, cum_ack=self.cum_ack, adv_buf=256,
                                       rcvr_id=self.me).encode())
        self.sent += 1
        self.set_timer("send", now + 0.05)


def run_crash(forge: bool, rules: dict[str, bool] | None = None):
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import recovery_times, with_protocol, with_rules
    from p4mcc.scenario.model import scenario_from_dict

    import yaml

    raw = yaml.safe_load(SCENARIO.read_text())
    raw["topology"]["hosts"].append("forger")
    raw["topology"]["links"].append(["forger", "s2"])
    sc = with_rules(with_protocol(scenario_from_dict(raw), "rla"), "default", rules or {})
    sc = dataclasses.replace(sc, duration=20.0)
    run = build_run(sc, switch=choose_switch("p4", sc))
    s = sc.sessions[0]
    f = sc.faults[0]
    back = f.at + f.duration
    forger = None
    if forge:
        host = run.net.hosts["forger"]
        forger = Forger(s.session_id, (run.net.hosts[s.sender].ip, s.port), host.ip, FAR)
        host.add_endpoint(forger, s.port, label="forger", start_at=back, stop_at=back + 1.0)
    label = f"{s.name}/{s.sender}"
    seen: dict[str, int] = {}
    run.sim.at(back - 0.001, lambda: seen.update(
        {r: run.agents[f"{s.name}/{r}"].buf.cum_ack for r in s.receivers}))
    run.sim.at(sc.duration - DRAIN_S, lambda: seen.setdefault("cut", run.agents[label].next_seq - 1))
    run.sim.run(until=sc.duration)
    times = list(recovery_times(run.recorder.samples, sc, f, f.at).values())
    return sc, run, seen, times, forger


def test_a_forged_ack_heard_first_does_not_move_a_restarted_sender_past_its_receivers() -> None:
    sc, run, seen, times, forger = run_crash(forge=True)
    s = sc.sessions[0]
    snd = run.agents[f"{s.name}/{s.sender}"]
    assert forger is not None and forger.sent >= 15
    at_crash = min(seen[r] for r in s.receivers)
    assert 1 < snd.resumed_from <= at_crash + 1  # after what the receivers held, not the forger's million
    for r in s.receivers:
        buf = run.agents[f"{s.name}/{r}"].buf
        assert buf.cum_ack >= seen["cut"] > snd.resumed_from  # everything sent 4 s before the end arrived
        assert buf.delivered_packets == buf.cum_ack  # 1..cum_ack, each once
    assert times and all(t is not None and t <= BOUND_S for t in times), times


def test_without_the_wait_the_forged_ack_skips_the_stream_past_the_honest_receivers(monkeypatch) -> None:
    from p4mcc.hosts.rla.rules import ResumeStream

    monkeypatch.setattr(ResumeStream, "RESUME_GATHER_S", 0.0)
    sc, run, seen, _times, _forger = run_crash(forge=True)
    s = sc.sessions[0]
    snd = run.agents[f"{s.name}/{s.sender}"]
    assert snd.resumed_from == FAR + 1
    for r in s.receivers:
        assert run.agents[f"{s.name}/{r}"].buf.cum_ack < FAR - snd.p.rcv_buffer  # stuck before the skip


# The core alone ---------------------------------------------------------------------------------


def test_the_core_waits_a_hello_interval_and_a_quarter_and_takes_the_lowest_claim() -> None:
    from p4mcc.hosts.registry import SessionConfig, get
    from p4mcc.hosts.rla import RlaParams
    from p4mcc.hosts.rla.rules import ResumeStream
    from p4mcc.hosts.wire import RlaData, decode

    snd = get("rla").sender(SessionConfig(9, "239.9.9.9", 7000, "10.0.0.1", "10.0.0.1",
                                          RlaParams(initial_cwnd=4)))
    snd.start(0.0)

    def data() -> list[int]:
        seqs = []
        for d in snd.datagrams_to_send():
            m = decode(d.data)
            if isinstance(m, RlaData):
                seqs.append(m.seq)
        return seqs

    def sack(ip: str, cum: int, t: float) -> None:
        snd.receive_datagram(RlaSack(session_id=9, cum_ack=cum, adv_buf=256, rcvr_id=node_id(ip)).encode(),
                             (ip, 7000), t)

    sack("10.0.1.9", FAR, 0.10)  # the forger, first
    assert data() == []
    sack("10.0.1.1", 500, 0.90)  # an honest hello, within the hello interval
    assert data() == []
    wait = ResumeStream.RESUME_GATHER_S
    while (t := snd.get_timer()) is not None and t <= 0.10 + wait:
        snd.handle_timer(t)
    assert snd.resumed_from == 501 and data()[:4] == [501, 502, 503, 504]
