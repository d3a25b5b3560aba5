"""The acker's clock through the loss of its branch: RLA and MTCP with the acker rules on a tree whose
20 ms limiting branch (the acker's) loses both receivers at once, by crash or by leave.  The clock
moves to the 200 ms branch; its receivers get every byte and are back within the fault bench's bound."""

from __future__ import annotations

import pytest

from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.faults import recovery_time
from p4mcc.scenario.model import scenario_from_dict
from p4mcc.scenario.shapes import tree_layout

RECOVERY_BOUND_S = 5.0
DRAIN_S = 4.0
DURATION = 24.0
AT = 12.0
BRANCHES = [{"rate": "2Mbps", "delay": "8ms", "tcp_pairs": 1, "receivers": 2},
            {"rate": "10Mbps", "delay": "98ms", "tcp_pairs": 1, "receivers": 2}]
ACKER_RULES = {"rla": {"acker_clock": "on", "reliability_window": "on", "rtt_fair_increase": "off"},
               "mtcp": {"acker_election": "on", "acker_clock": "on", "reliability_window": "on",
                        "rtt_fair_increase": "off"}}


def _run(proto: str, kind: str):
    layout = tree_layout(BRANCHES)
    flows = [{"name": f"tcp{i}", "src": s, "dst": d, "port": 6000 + i}
             for i, (s, d) in enumerate((p for b in layout for p in b["tcp"]), start=1)]
    gone = layout[0]["receivers"]
    sc = scenario_from_dict({
        "name": f"{proto}-{kind}", "duration": DURATION, "seed": 1,
        "topology": {"generate": {"kind": "tree", "branches": BRANCHES}},
        "sessions": [{"name": "m", "protocol": proto, "sender": "snd1", "receivers": ["r*"],
                      "group": "239.9.9.1", "port": 5999, "rules": ACKER_RULES[proto]}],
        "tcp_flows": flows,
        "faults": [{"type": kind, "target": r, "at": AT} for r in gone]})
    run = build_run(sc, switch=choose_switch("model"))
    snd = run.agents["m/snd1"]
    sent: dict[str, int] = {}
    run.sim.at(DURATION - DRAIN_S, lambda: sent.setdefault("seq", snd.next_seq - 1))
    run.sim.run(until=DURATION)
    return sc, run, snd, layout[1]["receivers"], sent["seq"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["receiver_crash", "receiver_leave"])
@pytest.mark.parametrize("proto", ["rla", "mtcp"])
def test_the_clock_leaves_a_lost_ackers_branch_within_the_bound_and_nothing_is_lost(proto: str, kind: str) -> None:
    sc, run, snd, survivors, cut = _run(proto, kind)
    for r in survivors:
        rc = run.agents[f"m/{r}"]
        buf = rc.buf if proto == "rla" else rc.rbuf
        assert rc.corrupt == 0 and buf.delivered_packets == buf.cum_ack  # 1..cum_ack, each once, intact
        assert buf.cum_ack >= cut, f"{r}: has up to {buf.cum_ack}, {cut} was sent {DRAIN_S} s before the end"
    # The survivors' own throughput, judged as the fault bench judges one receiver (both lost ones are gone).
    for r in survivors:
        pts = sorted((x.time, x.value) for x in run.recorder.samples
                     if x.kind == "session" and x.flow == "m" and x.metric == "throughput_bps" and x.node == r)
        rt = recovery_time(pts, AT, AT)
        assert rt is not None and rt <= RECOVERY_BOUND_S, f"{r} after the {kind}: back after {rt}"
