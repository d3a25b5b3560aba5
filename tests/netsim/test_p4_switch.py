"""Switch nodes running the real P4 program (p4src/mcc.p4) through p4switch's interpreter.

Configured only by the controller's desired-state function. Skips, saying
why, while the program, interpreter or controller cannot be loaded.
"""

from __future__ import annotations

import pytest

from p4mcc.netsim.engine import Simulator
from p4mcc.netsim.network import build_network
from p4mcc.netsim.switches import choose_switch
from netsim_testlib import CbrSender, Sink
from p4mcc.scenario.model import scenario_from_dict

GROUP = "239.7.7.7"


@pytest.fixture(scope="module")
def p4():
    return choose_switch("p4")


def scenario(**extra):
    return scenario_from_dict({
        **extra,
        "duration": 5,
        "topology": {"generate": {"kind": "dumbbell", "receivers": 3, "rate": "50Mbps", "delay": "5ms"}},
        "sessions": [{"name": "s", "protocol": "cbr", "sender": "snd1", "receivers": ["r1", "r2", "r3"],
                      "group": GROUP, "port": 5000, "assistance": False}],
    }, known_protocols=None)


def run_through(choice, leave_at: float = 2.0, **extra):
    sc = scenario(**extra)
    sim = Simulator(1)
    net = build_network(sim, sc.topology, switch_factory=choice.factory)
    choice.configure(net, sc)
    snd_ip = net.hosts["snd1"].ip
    snd = CbrSender((GROUP, 5000), 200, 0.02, 150)  # 3 s of data from t=0.5
    net.hosts["snd1"].add_endpoint(snd, 5000, start_at=0.5)
    stay = net.hosts["r1"].add_endpoint(Sink(GROUP, reply_to=(snd_ip, 5000)), 5000)
    goes = net.hosts["r2"].add_endpoint(Sink(GROUP, leave_at=leave_at), 5000)
    never = net.hosts["r3"].add_endpoint(Sink(None), 5000)
    sim.run(until=4.0)
    return net, snd, stay, goes, never


def test_p4_program_replicates_to_joined_receivers_only(p4) -> None:
    net, snd, stay, goes, never = run_through(p4)
    assert [s for _, s in stay.got] == list(range(150))
    assert never.got == []
    assert 70 <= len(goes.got) <= 76 and max(t for t, _ in goes.got) < 2.05  # stops after its leave
    assert len(snd.feedback) == 150  # unicast feedback forwarded to the sender
    assert all(not getattr(s, "is_model", True) for s in net.switches.values())


def test_p4_program_and_model_switch_deliver_the_same(p4) -> None:
    _, _, stay_p4, goes_p4, _ = run_through(p4)
    _, _, stay_m, goes_m, _ = run_through(choose_switch("model"))
    assert [s for _, s in stay_p4.got] == [s for _, s in stay_m.got]
    assert [s for _, s in goes_p4.got] == [s for _, s in goes_m.got]


def test_model_switch_ages_memberships_as_the_p4_program_does(p4) -> None:
    """With a 1.5 s membership timeout and no querier, every port stops
    receiving 1.5 s after its receiver's last report, behind P4 nodes and
    model switches alike (the two runs of one seed must not part)."""
    got = {}
    for kind, choice in (("p4", p4), ("model", choose_switch("model"))):
        _, _, stay, goes, _ = run_through(choice, membership={"timeout": 1.5})
        got[kind] = ([s for _, s in stay.got], [s for _, s in goes.got], max(t for t, _ in stay.got))
    assert got["p4"] == got["model"]
    stay_seqs, _, last = got["model"]
    assert 40 <= len(stay_seqs) < 150  # data reached the port, then stopped (sender sends 150)
    assert last < 2.0  # joined near t=0: nothing after the timeout, though data flows until 3.5 s
