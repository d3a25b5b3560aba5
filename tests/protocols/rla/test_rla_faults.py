"""RLA through the faults of topologies/scenarios/faults (issue 14 bounds), in the
simulator on the P4 switch: every surviving receiver gets every byte, in order
and intact, and the session is back to 80 % of its throughput within 5 s.

The scenarios are VLMCC's; the session is swapped to RLA as bench/faults.py does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCENARIOS = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "faults"

RECOVERY_BOUND_S = 5.0
DRAIN_S = 4.0  # what was sent this long before the end must have arrived


def _run_rla(name: str):
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import with_protocol
    from p4mcc.scenario.model import load_scenario

    sc = with_protocol(load_scenario(SCENARIOS / f"{name}.yaml"), "rla")
    run = build_run(sc, switch=choose_switch("p4", sc))
    sent: dict[str, int] = {}
    snd_label = f"rla/{sc.sessions[0].sender}"
    run.sim.at(sc.duration - DRAIN_S, lambda: sent.setdefault("seq", run.agents[snd_label].next_seq - 1))
    run.sim.run(until=sc.duration)
    return sc, run, sent["seq"]


@pytest.mark.parametrize("name", ["link-flap", "switch-crash", "controller-restart", "agent-kill"])
def test_rla_recovers_and_delivers_every_byte_to_every_surviving_receiver(name):
    from p4mcc.scenario.faults import recovery_times

    sc, run, cut = _run_rla(name)
    s = sc.sessions[0]
    restarted = {f.target for f in sc.faults if f.kind == "agent_kill"}
    snd = run.agents[f"rla/{s.sender}"]
    for r in s.receivers:
        rc = run.agents[f"rla/{r}"]  # the agent running at the end (a restarted one: its new core)
        assert rc.corrupt == 0
        assert rc.buf.cum_ack >= cut, f"{r}: has up to {rc.buf.cum_ack}, {cut} was sent {DRAIN_S} s before the end"
        if r in restarted:
            # Its stream starts where it joined again; nothing after that is missing.
            t, _rid, first = [j for j in snd.joined if j[1] == rc.rid][-1]
            assert t >= 8.0 and first > 1  # admitted again after its restart
            assert rc.buf.delivered_packets == rc.buf.cum_ack - first + 1
        else:
            assert rc.buf.delivered_packets == rc.buf.cum_ack  # 1..cum_ack, each once
            assert rc.buf.delivered_bytes == rc.buf.cum_ack * snd.p.packet_size
    from p4mcc.hosts.core import node_id

    survivors = {node_id(run.net.hosts[r].ip) for r in s.receivers if r not in restarted}
    assert not [rid for _t, rid in snd.dropped if rid in survivors]  # an outage is not a death
    for f in sc.faults:
        for t in f.times(sc.duration):
            for rt in recovery_times(run.recorder.samples, sc, f, t).values():
                assert rt is not None and rt <= RECOVERY_BOUND_S, f"{f.kind} at {t}: {rt}"
