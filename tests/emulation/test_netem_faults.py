"""Link faults that need netem, in Mininet (emulation/netem_faults.py).

This machine's kernel may lack netem, so these tests check the commands a
run issues and its one-line refusals with a stand-in for Mininet's nodes:
each node records the commands it is given and answers the netem probe as
a kernel with, or without, the module would.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from p4mcc.emulation import netem_faults
from p4mcc.emulation.faults import EmuFaults
from p4mcc.emulation.mininet_net import ComponentError
from p4mcc.emulation.shaping import KERNEL
from p4mcc.scenario.model import scenario_from_dict

BASE = {
    "duration": 20,
    "topology": {"hosts": ["h1", "r1"], "switches": ["s1", "s2"],
                 "link_defaults": {"delay": "10ms", "loss": "1%"},
                 "links": [["s1", "s2"], ["h1", "s1"], ["r1", "s2"]]},
    "sessions": [{"name": "a", "protocol": "tfmcc", "sender": "h1", "receivers": ["r1"]}],
}


def fault(**f):
    return scenario_from_dict({**BASE, "faults": [f]}).faults[0]


@pytest.mark.parametrize("f, args", [
    (dict(type="link_reorder", target=["s1", "s2"], fraction="25%", delay="3ms", at=1),
     "delay 3000us reorder 75%"),
    (dict(type="link_duplicate", target=["s1", "s2"], fraction="2%", at=1), "duplicate 2%"),
    (dict(type="link_corrupt", target=["s1", "s2"], fraction="0.5%", at=1), "corrupt 0.5%"),
    # netem adds to the link's own 10 ms and 1 %: 30 ms more; 1 - 0.96/0.99 = 3.0303 % more
    (dict(type="link_change", target=["s1", "s2"], delay="40ms", loss="4%", at=1),
     "delay 30000us loss 3.0303%"),
    (dict(type="link_change", target=["s1", "s2"], delay="40ms", rate="1Mbps", at=1),
     "delay 30000us rate 1000000bit"),
])
def test_netem_arguments_follow_tc_netem(f, args):
    sc = scenario_from_dict({**BASE, "faults": [f]})
    assert netem_faults.needs_netem(sc.faults[0])
    assert netem_faults.netem_args(sc.faults[0], sc.topology.links[0]) == args


def test_a_rate_alone_is_the_token_bucket_not_netem():
    assert not netem_faults.needs_netem(fault(type="link_change", target=["s1", "s2"], rate="1Mbps", at=1))


class Node:
    """A Mininet node stand-in: records commands, answers the netem probe."""

    def __init__(self, log: list[tuple[str, str]], name: str, netem: bool) -> None:
        self.log, self.name, self.netem = log, name, netem
        self.process = None  # no switch process to supervise

    def cmd(self, c: str) -> str:
        self.log.append((self.name, c))
        if "netem delay 1ms" in c:
            return "NETEM_OK\n" if self.netem else "Error: Specified qdisc kind is unknown.\n"
        return ""


def injector(faults: list[dict], netem: bool, shapings=()) -> tuple[EmuFaults, list[tuple[str, str]]]:
    sc = scenario_from_dict({**BASE, "faults": faults})
    cables = [SimpleNamespace(a="s1", a_iface="s1-eth1", b="s2", b_iface="s2-eth1"),
              SimpleNamespace(a="h1", a_iface="h1-eth0", b="s1", b_iface="s1-eth2")]
    plan = SimpleNamespace(cables=cables, switches={"s1": None, "s2": None}, shapings=list(shapings))
    log: list[tuple[str, str]] = []
    net = {n: Node(log, n, netem) for n in ("s1", "s2", "h1", "r1")}
    rec = SimpleNamespace(events=[], event=lambda t, node, what, detail="": rec.events.append((t, node, what, detail)))
    emu = EmuFaults(plan=plan, net=net, started=[], rec=rec, logs=Path("/nonexistent"), scenario=sc,
                    spawn_agent=lambda *a, **k: None)
    return emu, log


def test_without_netem_the_run_is_refused_in_one_line_before_its_clock_starts():
    emu, log = injector([dict(type="link_reorder", target=["s1", "s2"], fraction="10%", at=5)], netem=False)
    with pytest.raises(ComponentError) as e:
        emu._check_netem()
    assert str(e.value) == "faults[0]: link_reorder needs netem, which this kernel lacks; use p4mcc sim"
    assert [c for _, c in log if "netem" in c] == ["tc qdisc add dev s1-eth1 root netem delay 1ms 2>&1 && "
                                                   "tc qdisc del dev s1-eth1 root && echo NETEM_OK"]


def test_with_netem_both_directions_get_it_and_lose_it_after_for():
    emu, log = injector([dict(type="link_duplicate", target=["s1", "s2"], fraction="5%", at=5, **{"for": 2})],
                        netem=True)
    emu._check_netem()
    log.clear()
    emu.poll(4.9)
    assert log == []
    emu.poll(5.0)
    assert log == [("s1", "tc qdisc replace dev s1-eth1 root netem duplicate 5%"),
                   ("s2", "tc qdisc replace dev s2-eth1 root netem duplicate 5%")]
    log.clear()
    emu.poll(7.0)
    assert log == [("s1", "tc qdisc del dev s1-eth1 root"), ("s2", "tc qdisc del dev s2-eth1 root")]
    assert [e[2] for e in emu.rec.events] == ["impair_start", "impair_end"]


def test_one_direction_only_with_from():
    emu, log = injector([dict(type="link_corrupt", target=["s1", "s2"], fraction="1%", at=5, **{"from": "s2"})],
                        netem=True)
    emu._check_netem()
    log.clear()
    emu.poll(5.0)
    assert log == [("s2", "tc qdisc replace dev s2-eth1 root netem corrupt 1%")]


def test_an_end_bmv2_shapes_with_tc_is_not_replaced():
    shaped = [SimpleNamespace(how=KERNEL, where="s1 s1-eth1")]
    emu, log = injector([dict(type="link_reorder", target=["s1", "s2"], fraction="10%", at=5)], netem=True,
                        shapings=shaped)
    with pytest.raises(ComponentError, match=r"^faults\[0\]: link_reorder: s1--s2 is shaped by tc for BMv2"):
        emu._check_netem()
    assert not any("replace" in c for _, c in log)
    # the other direction leaves through the unshaped end: that one goes
    emu, log = injector([dict(type="link_reorder", target=["s1", "s2"], fraction="10%", at=5, **{"from": "s2"})],
                        netem=True, shapings=shaped)
    emu._check_netem()
    assert emu.netem_ends == {0: [("s2", "s2-eth1")]}
