"""The rogue receiver's crafted messages, malformed frames, and per-host policing budgets."""

from __future__ import annotations

import random

import pytest

from p4mcc.hosts import wire
from p4mcc.hosts.core import JoinGroup, node_id
from p4mcc.hosts.rogue import Rogue, malformed_frames


def rogue(mode: str, proto: str, **kw) -> Rogue:
    return Rogue(mode, proto, 7, "239.1.0.1", "10.0.0.1", "10.0.0.9", 5000, **kw)


def test_spoofed_clr_claim_is_a_tfmcc_report_with_is_clr_and_the_claimed_rate():
    r = rogue("spoof_clr", "tfmcc", claim_bps=8000, rate=10)
    r.start(0.0)
    assert r.next_event() == JoinGroup("239.1.0.1")
    data = wire.TfmccData(session_id=7, seq=41, timestamp=1234, fb_round=9).encode()
    r.receive_datagram(data, ("10.0.0.1", 5000), 0.05)
    r.handle_timer(0.5)  # due at 0.0, 0.1, ..., 0.5
    out = r.datagrams_to_send()
    assert len(out) == 6 and all(d.dest == ("10.0.0.1", 5000) for d in out)
    m = wire.decode(out[-1].data)
    assert isinstance(m, wire.TfmccReport)
    assert m.rflags & wire.TfmccReportFlags.IS_CLR and m.rate == 8000 and m.fb_round == 9
    assert m.rcvr_id == node_id("10.0.0.9") and m.session_id == 7 and m.echo_ts == 1234


def test_false_reports_and_floods_use_each_protocols_feedback_message():
    kinds = {("false_report", "vlmcc"): wire.VlmccChallenge, ("spoof_clr", "vlmcc"): wire.VlmccAck,
             ("flood", "rla"): wire.RlaSack, ("flood", "mtcp"): wire.MtcpAck, ("flood", "tfmcc"): wire.TfmccReport}
    for (mode, proto), cls in kinds.items():
        r = rogue(mode, proto, claim_bps=8000)
        m = wire.decode(r.craft(1.0))
        assert isinstance(m, cls), (mode, proto)
        if mode == "false_report":
            assert m.rate == 8000


def test_the_rogue_stops_at_its_end_and_leaves():
    r = rogue("flood", "rla", rate=1000, stop_at=0.01)
    r.start(0.0)
    r.next_event()
    r.handle_timer(0.02)
    assert r.sent == 10 and r.get_timer() is None
    assert type(r.next_event()).__name__ == "LeaveGroup"


def test_malformed_frames_never_decode_as_valid_p4mcc_or_igmp():
    from p4mcc.netsim import packets as pk

    rng = random.Random(3)
    seen_lengths = set()
    for _ in range(200):
        f = malformed_frames(rng, b"\x02" * 6, b"\xff" * 6, 0x0A000009, 0x0A000001)
        seen_lengths.add(len(f) < 14)
        p = pk.parse(f)
        if p is None or p.proto != pk.PROTO_UDP:
            continue
        with pytest.raises(wire.WireError):
            wire.decode(p.payload)
    assert seen_lengths == {True, False}  # runts and full frames both occur


def test_policing_budgets_follow_each_protocols_feedback_rule():
    from p4mcc.controller.desired import DesiredOptions, desired_state
    from p4mcc.controller.policing import host_budgets
    from p4mcc.controller.topology import from_scenario_topology
    from p4mcc.controller.desired import session_from_scenario
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict({
        "topology": {"hosts": ["h1", "r1", "r2", "r3"], "switches": ["s1"],
                     "links": [{"a": "h1", "b": "s1", "rate": "8Mbps", "delay": "5ms"},
                               {"a": "r1", "b": "s1", "rate": "4Mbps"}, ["r2", "s1"], ["r3", "s1"]]},
        "sessions": [{"name": "a", "protocol": "rla", "sender": "h1", "receivers": ["r1", "r2"],
                      "params": {"packet_size": 1000}},
                     {"name": "b", "protocol": "tfmcc", "sender": "h1", "receivers": ["r2"], "port": 6000,
                      "group": "239.1.0.9"},
                     {"name": "c", "protocol": "webrc", "sender": "h1", "receivers": ["r3"], "port": 6001,
                      "group": "239.1.0.10"}],
    })
    b = host_budgets(sc.topology, sc.sessions)
    assert b["r1"] == (1000, 100)  # one SACK per packet: 4 Mb/s / 8000 bits, doubled
    # r2: RLA over an 8 Mb/s path (1000 pps) + TFMCC 2 reports per RTT (10 ms floor) = 1200, doubled
    assert b["r2"] == (2400, 240)
    assert b["r3"] == (50, 20)  # WEBRC has no feedback: the floor
    ctopo = from_scenario_topology(sc.topology)
    st = desired_state(ctopo, [session_from_scenario(s) for s in sc.sessions],
                       DesiredOptions(feedback_pps=None, feedback_by_host=b))["s1"]
    by_port = {m.index: (m.cir, m.cburst) for m in st.meters.values()}
    port = {peer: p for p, peer in ctopo.port_map("s1").items()}
    assert by_port[port["r2"]] == (2400, 240) and by_port[port["r3"]] == (50, 20)
    assert port["h1"] in by_port  # the sender's port: the floor (it receives no session)


def test_a_rogue_process_ends_at_its_faults_end_however_late_it_started(capsys):
    # The runner passes the fault's end on the machine's monotonic clock (--until), not a
    # duration from the rogue's own start: a rogue whose interpreter came up after the fault's
    # end lies not at all (with --for it would lie its whole duration past the end).
    import time

    from p4mcc.emulation.faults import EmuFaults
    from p4mcc.hosts.rogue import main

    before = time.monotonic()
    flag, until = EmuFaults._rogue_end(10.0)
    assert flag == "--until" and before + 10.0 <= float(until) <= time.monotonic() + 10.0 + 1e-3
    assert main(["false_report", "--local", "127.0.0.1", "--port", "0", "--for", "5",
                 "--until", f"{before - 1.0:.3f}"]) == 0
    assert capsys.readouterr().out.strip() == "rogue false_report sent 0"
