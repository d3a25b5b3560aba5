"""TFMCC's slowstart on a slow, short path with many receivers.

On the friendliness grid's cell 1 (1 Mbit/s, 20 ms, 10-packet queue, four
TCP flows, 32 receivers; seed 3) a loss-free receiver's slowstart report of
0 received took the sender to one packet per 64 s, and the CLR's next,
higher report waited for that packet: the session delivered almost nothing
for the rest of the run (docs/protocols/tfmcc.md, "A slowstart report of
nothing received").  RFC 5348 4.3 step 4 keeps slow-start at or above the
initial rate, and a report acts at once while the next packet is far away.
A bound, not a timing: over the second half the session must carry at
least a tenth of the fair share (it carried 0 before the rules, 0.57 of a
TCP flow after them).
"""

from __future__ import annotations

from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import scenario_from_dict

DURATION = 100.0
RATE = 1_000_000
TCP_FLOWS = 4


def test_a_slowstart_report_of_nothing_received_does_not_starve_the_session() -> None:
    doc = {
        "name": "tfmcc-slowstart-floor", "duration": DURATION, "seed": 3,
        "topology": {"generate": {"kind": "dumbbell", "receivers": 32, "tcp_pairs": TCP_FLOWS,
                                  "rate": RATE, "delay": 0.008, "queue": 10}},
        "sessions": [{"name": "mc", "protocol": "tfmcc", "sender": "snd1", "receivers": ["r*"]}],
        "tcp_flows": [{"name": f"tcp{i}", "src": f"tsrc{i}", "dst": f"tdst{i}"}
                      for i in range(1, TCP_FLOWS + 1)],
    }
    run = build_run(scenario_from_dict(doc), switch=model_choice())
    receivers = [a for name, a in run.agents.items() if name.startswith("mc/r")]
    sender = run.agents["mc/snd1"]
    floor = sender.rate  # the initial rate, slowstart's floor
    lowest_in_slowstart = floor

    def watch() -> None:
        nonlocal lowest_in_slowstart
        if sender.slowstart:
            lowest_in_slowstart = min(lowest_in_slowstart, sender.rate)
            run.sim.at(run.sim.now + 0.05, watch)

    run.sim.at(0.05, watch)
    run.sim.run(DURATION / 2)
    before = [r.packets for r in receivers]
    run.sim.run(DURATION)
    packets = sum(r.packets - b for r, b in zip(receivers, before)) / len(receivers)
    bps = 8.0 * sender.p.packet_size * packets / (DURATION / 2)
    fair = RATE / (TCP_FLOWS + 1)
    assert lowest_in_slowstart >= floor - 1e-9
    assert bps >= 0.1 * fair, f"{bps:.0f} bit/s over the second half, fair share {fair:.0f}"
