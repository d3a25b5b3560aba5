"""RLA and MTCP as scenario sessions in the simulator (``netsim.run``).

The same cores built through ``hosts.registry`` by the simulator's runner,
over its host nodes (Linux-like IGMP) and switches: the reference model
switch, and -- when the program, interpreter and controller are all there --
the P4 program, whose MTCP fold the switch-assisted test exercises.
"""

from __future__ import annotations

import pytest

from p4mcc.hosts.mtcp import FOLD_ID
from p4mcc.netsim.run import run_scenario
from p4mcc.scenario.shapes import star
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import Scenario, Session


def _scenario(proto: str, params: dict, *, loss: float, assistance: bool, duration: float = 30.0) -> Scenario:
    topo = star(receivers=4, rate="10Mbps", delay="10ms", loss=loss, queue=50)
    sess = Session(name="s", protocol=proto, sender="snd", receivers=("r1", "r2", "r3", "r4"),
                   group="239.5.5.5", port=5005, params=params, assistance=assistance, session_id=1)
    return Scenario(name=f"{proto}-star", description="", topology=topo, sessions=[sess], tcp_flows=[],
                    duration=duration, seed=4)


def _receivers(run) -> list:
    return [a for label, a in run.agents.items() if not label.endswith("/snd")]


@pytest.mark.parametrize("proto,params", [
    ("rla", {"total_packets": 800, "receivers": 4, "packet_size": 1000}),
    ("mtcp", {"total_packets": 800, "packet_size": 1000}),
])
def test_reliable_sessions_deliver_everything_through_the_simulator(proto, params):
    run = run_scenario(_scenario(proto, {**params, **({"receivers": 4} if proto == "mtcp" else {})},
                                 loss=0.01, assistance=False), switch=choose_switch("model"))
    snd = run.agents["s/snd"]
    assert snd.done
    for r in _receivers(run):
        buf = r.buf if proto == "rla" else r.rbuf
        assert buf.cum_ack == 800 and buf.delivered_bytes == 800 * 1000 and r.corrupt == 0


def test_mtcp_switch_assisted_sender_sees_one_summary_per_switch():
    p4 = choose_switch("p4")
    runs = {}
    for assisted in (True, False):
        params = {"total_packets": 400, "assisted": assisted} if assisted else {"total_packets": 400,
                                                                               "receivers": 4}
        run = run_scenario(_scenario("mtcp", params, loss=0.0, assistance=assisted, duration=20.0), switch=p4)
        assert run.switch_kind == "p4"
        snd = run.agents["s/snd"]
        assert snd.done
        for r in _receivers(run):
            assert r.rbuf.cum_ack == 400
        runs[assisted] = snd
    # Four receivers behind one switch reach the sender as a single folded child ...
    assert [c.nid for c in runs[True]._acking()] == [FOLD_ID]
    assert len(runs[False]._acking()) == 4
    # ... so it hears far fewer summaries than four children send (not one in
    # four: the receivers' ACK delays are jittered, so the slowest one, which
    # moves the fold, changes from round to round).
    assert runs[True].summaries_in * 2 < runs[False].summaries_in


def _fig5_with_tcp() -> Scenario:
    """The paper's Fig. 5 topology and Fig. 6 timing, with TCP cross traffic.

    VLMCC at the paper's 1000-byte packets (section 3, footnote 3), as the
    paper scenario runs it; docs/protocols/vlmcc.md gives the leader changes
    with the default TCP-sized packets.
    """
    from p4mcc.scenario.model import scenario_from_dict

    hosts = ["vsrc", "tsrc", "v1", "v2", "t1", "v3", "v4", "t2"]
    edge = {"rate": "10Mbps", "delay": "1ms"}
    links = [{"a": "vsrc", "b": "s1", **edge}, {"a": "tsrc", "b": "s1", **edge},
             {"a": "s1", "b": "s2", "rate": "1Mbps", "delay": "1ms", "queue": 20},
             {"a": "s1", "b": "s3", "rate": "1Mbps", "delay": "1ms", "queue": 20}]
    links += [{"a": h, "b": "s2" if h in ("v1", "v2", "t1") else "s3", **edge} for h in hosts[2:]]
    return scenario_from_dict({
        "name": "vlmcc-fig5",
        "topology": {"hosts": {h: {"ip": f"10.0.0.{i + 1}/24"} for i, h in enumerate(hosts)},
                     "switches": {"s1": {}, "s2": {}, "s3": {}}, "links": links},
        "sessions": [{"name": "v", "protocol": "vlmcc", "sender": "vsrc", "receivers": ["v1", "v2", "v3", "v4"],
                      "group": "239.6.6.6", "port": 5006, "assistance": False,
                      # The paper's packet size (section 3, footnote 3) and its
                      # leader, which ACKs every packet (section 2.2).
                      "params": {"packet_size": 1000}, "rules": {"delayed_acks": "off"}}],
        "tcp_flows": [{"name": "tcp1a", "src": "tsrc", "dst": "t1", "start": 10, "stop": 25, "port": 5201},
                      {"name": "tcp2", "src": "tsrc", "dst": "t2", "start": 27, "stop": 45, "port": 5202},
                      {"name": "tcp1b", "src": "tsrc", "dst": "t1", "start": 41, "stop": 60, "port": 5203}],
        "duration": 60, "seed": 1,
    })


def test_vlmcc_fig5_leader_follows_tcp_congestion():
    from p4mcc.hosts.core import id_to_ip

    sc = _fig5_with_tcp()
    run = run_scenario(sc, switch=choose_switch("model"))
    snd = run.agents["v/vsrc"]
    branch = {h.ip: ("s2" if n in ("v1", "v2") else "s3") for n, h in sc.topology.hosts.items()}

    def leader_at(t: float) -> str:
        rid = 0
        for when, r in snd.leader_log:
            if when <= t:
                rid = r
        return branch.get(id_to_ip(rid), "?")

    assert [leader_at(t) for t in (15, 24)] == ["s2", "s2"]  # TCP 1 loads router 2's branch
    assert [leader_at(t) for t in (32, 35, 40)] == ["s3"] * 3  # TCP 2 from 27 s: router 3's
    assert [leader_at(t) for t in (50, 55, 59.9)] == ["s2"] * 3  # TCP 2 gone at 45 s
    assert len([t for t, _r in snd.leader_log if t > 1.0]) <= 8  # no flapping among equals
