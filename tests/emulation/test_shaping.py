"""How links are shaped on each target (emulation/shaping.py): pure decisions and commands.

The kernel path's tc commands are checked as text: this machine's kernel
has no netem, so they cannot all run here; the BMv2 link test runs what can.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4mcc.emulation import shaping
from p4mcc.emulation.plan import make_plan
from p4mcc.scenario.model import scenario_from_dict

ALL = frozenset(shaping.QDISCS)
NO_NETEM = ALL - {"netem"}


def dumbbell(bottleneck: dict, host_link: dict | None = None):
    host = {"rate": "1Gbps", "delay": 0, **(host_link or {})}
    return make_plan(scenario_from_dict({
        "name": "shape", "duration": 5,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [{"a": "s1-p1", "b": "s2-p1", **bottleneck},
                      {"a": "h1", "b": "s1-p2", **host}, {"a": "h2", "b": "s2-p2", **host}],
        },
    }, known_protocols=None), Path("/tmp/unused"))


def by_sender(rows: list[shaping.Shaping], link: str) -> dict[str, shaping.Shaping]:
    return {r.sender: r for r in rows if r.link == link}


def test_netem_path_puts_delay_and_loss_at_the_root_then_rate_then_a_packet_queue() -> None:
    plan = dumbbell({"rate": "10Mbps", "delay": "20ms", "queue": 50, "loss": 0.01})
    rows = by_sender(shaping.shapings(plan, "bmv2", ALL), "s1-p1--s2-p1")
    assert rows["s1"].how == shaping.KERNEL and rows["s1"].where == "s1 s1-eth1"
    assert list(rows["s1"].commands) == [
        # 10 Mb/s x 20 ms in 64-byte frames is 391 on the delay line, plus the queue's 50
        "tc qdisc replace dev s1-eth1 root handle 1: netem delay 20000us loss 1% limit 1000",
        "tc qdisc add dev s1-eth1 parent 1:1 handle 2: htb default 1",
        "tc class add dev s1-eth1 parent 2: classid 2:1 htb rate 10000000bit ceil 10000000bit "
        "burst 1600b cburst 1600b",
        "tc qdisc add dev s1-eth1 parent 2:1 handle 3: pfifo limit 50",
    ]
    assert rows["s2"].where == "s2 s2-eth1"  # each switch shapes what it sends


def test_netem_limit_grows_with_the_frames_a_long_fast_delay_line_holds() -> None:
    plan = dumbbell({"rate": "100Mbps", "delay": "50ms", "queue": 200})
    cmd = by_sender(shaping.shapings(plan, "bmv2", ALL), "s1-p1--s2-p1")["s1"].commands[0]
    assert cmd.endswith("limit 9966")  # ceil(1e8 * 0.05 / 512) + 200


def test_a_byte_queue_is_a_bfifo_and_a_rate_only_link_has_no_netem() -> None:
    plan = dumbbell({"rate": "2Mbps", "delay": 0, "queue": {"bytes": 30000}})
    rows = by_sender(shaping.shapings(plan, "bmv2", NO_NETEM), "s1-p1--s2-p1")
    assert rows["s1"].how == shaping.KERNEL  # no delay, no loss: netem is not needed
    assert list(rows["s1"].commands) == [
        "tc qdisc replace dev s1-eth1 root handle 2: htb default 1",
        "tc class add dev s1-eth1 parent 2: classid 2:1 htb rate 2000000bit ceil 2000000bit "
        "burst 1600b cburst 1600b",
        "tc qdisc add dev s1-eth1 parent 2:1 handle 3: bfifo limit 30000",
    ]


def test_host_links_ingress_is_shaped_on_the_hosts_interface() -> None:
    plan = dumbbell({"rate": "10Mbps"}, {"rate": "100Mbps", "delay": "1ms", "queue": 100})
    rows = by_sender(shaping.shapings(plan, "bmv2", ALL), "h1--s1-p2")
    assert rows["h1"].where == "h1 h1-eth0" and rows["h1"].receiver == "s1"
    assert rows["s1"].where == "s1 s1-eth2" and rows["s1"].receiver == "h1"
    assert rows["h1"].commands[0] == "tc qdisc replace dev h1-eth0 root handle 1: netem delay 1000us limit 1000"


def test_without_netem_a_delayed_port_goes_through_a_link_process_both_ways() -> None:
    plan = dumbbell({"rate": "10Mbps", "delay": "20ms", "queue": 50}, {"rate": "100Mbps"})
    assert shaping.linkproc_ports(plan, NO_NETEM) == {"s1": {1}, "s2": {1}}
    rows = shaping.shapings(plan, "bmv2", NO_NETEM)
    bott = by_sender(rows, "s1-p1--s2-p1")
    assert {r.how for r in bott.values()} == {shaping.LINKPROC}
    assert "s1-eth1-bm" in bott["s1"].where and bott["s1"].commands == ()
    # the rate-only host links keep the kernel's htb and pfifo
    assert by_sender(rows, "h1--s1-p2")["h1"].how == shaping.KERNEL
    assert shaping.linkproc_ports(plan, ALL) == {"s1": set(), "s2": set()}


def test_builtin_target_shapes_every_direction_in_the_switch_and_unshaped_ones_are_none() -> None:
    plan = dumbbell({"rate": "10Mbps", "delay": "20ms"})
    rows = shaping.shapings(plan, "builtin")
    assert {r.how for r in rows if r.link == "s1-p1--s2-p1"} == {shaping.SWITCH}
    assert {r.how for r in rows if r.link != "s1-p1--s2-p1"} == {shaping.NONE}
    assert len(rows) == 6 and {r.target for r in rows} == {"builtin"}


def test_bmv2_opens_its_link_process_veth_for_ports_that_go_through_one() -> None:
    from p4mcc.emulation.mininet_net import bmv2_command

    plan = dumbbell({"rate": "10Mbps", "delay": "20ms"})
    sw = plan.switches["s1"]
    import shutil

    if shutil.which("simple_switch_grpc") is None:
        pytest.skip("simple_switch_grpc is not on PATH")
    argv = bmv2_command(sw, Path("/tmp"), via_links={1})
    assert argv[argv.index("-i") + 1] == "1@s1-eth1-bm"
    assert "2@s1-eth2" in argv
    assert argv[argv.index("--thrift-port") + 1] == str(int(sw.grpc_addr.rsplit(":", 1)[1]) + 1000)


def test_a_name_too_long_for_the_kernel_is_refused_with_the_interface() -> None:
    with pytest.raises(shaping.ShapingError, match="longer than 15"):
        shaping.bmv2_iface("sw1000-eth100")


def test_probe_keeps_what_the_kernel_accepts_and_removes_it_again() -> None:
    calls: list[list[str]] = []

    class R:
        def __init__(self, rc: int) -> None:
            self.returncode = rc

    def fake_run(argv: list[str], **_kw: object) -> R:
        calls.append(argv)
        return R(2 if "netem" in argv else 0)

    assert shaping.probe_qdiscs("s1-eth1", run=fake_run) == NO_NETEM
    assert ["tc", "qdisc", "del", "dev", "s1-eth1", "root"] in calls
    assert sum(1 for c in calls if "del" in c) == 3  # never one for the refused netem


@pytest.mark.parametrize("tools,want", [({"simple_switch_grpc", "p4c-bm2-ss"}, "bmv2"),
                                        ({"simple_switch_grpc"}, "builtin"), (set(), "builtin")])
def test_auto_picks_bmv2_only_with_switch_and_compiler(monkeypatch: pytest.MonkeyPatch, tools: set[str],
                                                       want: str) -> None:
    from p4mcc.emulation import run

    monkeypatch.setattr(run.shutil, "which", lambda t: f"/bin/{t}" if t in tools else None)
    assert run.resolve_target("auto") == want
    assert run.resolve_target("builtin") == "builtin"


def test_forced_bmv2_without_the_toolchain_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from p4mcc.emulation import run

    monkeypatch.setattr(run.shutil, "which", lambda t: None)
    with pytest.raises(run.EmulationError, match=r"^--target bmv2: simple_switch_grpc and p4c-bm2-ss not on PATH"):
        run.resolve_target("bmv2")
