"""The fault types beyond crashes and link flaps: sender crash, a link down
one way, reordering, duplication and corruption in flight, a controller cut
off from a switch, a switch that loses its tables, a starved switch and a
full disk.  Parsing (errors name the field), the simulator's exact effect,
and the Mininet commands each one issues (built, not run)."""

from __future__ import annotations

import random
import threading

import pytest


RECOVERY_BOUND_S = 5.0

BASE = """
name: t
duration: 20
topology:
  hosts: [h1, r1, r2]
  switches: [s1, s2]
  links: [[s1, s2], [h1, s1], [r1, s2], [r2, s2]]
sessions:
  - {name: a, protocol: vlmcc, sender: h1, receivers: [r1, r2]}
"""


def parse(fault: str):
    """(faults, problems) of BASE with one fault mapping."""
    from p4mcc.scenario.model import ScenarioError, scenario_from_dict
    import yaml

    raw = yaml.safe_load(BASE)
    raw["faults"] = [yaml.safe_load(fault)]
    try:
        return scenario_from_dict(raw).faults, []
    except ScenarioError as e:
        return (), e.problems


# -- parsing ------------------------------------------------------------------

@pytest.mark.parametrize("text, kind, params", [
    ("{type: sender_crash, target: h1, at: 5, for: 2}", "sender_crash", {}),
    ("{type: link_down, target: [s1, s2], from: s2, at: 5, for: 2}", "link_down", {"from": "s2"}),
    ("{type: link_reorder, target: s1--s2, fraction: 5%, at: 5, for: 2}", "link_reorder",
     {"fraction": 0.05, "delay": 0.01}),
    ("{type: link_reorder, target: s1--s2, fraction: 1, delay: 3ms, at: 5}", "link_reorder",
     {"fraction": 1.0, "delay": 0.003}),
    ("{type: link_duplicate, target: [s1, s2], fraction: 0.5, from: s1, at: 5}", "link_duplicate",
     {"fraction": 0.5, "from": "s1"}),
    ("{type: link_corrupt, target: [s1, s2], fraction: 1%, at: 5}", "link_corrupt", {"fraction": 0.01}),
    ("{type: controller_cut, target: s2, at: 5, for: 3}", "controller_cut", {}),
    ("{type: switch_wipe, target: s2, at: 5}", "switch_wipe", {}),
    ("{type: switch_slow, target: s2, cpu: 20%, at: 5, for: 4}", "switch_slow", {"cpu": 0.2}),
    ("{type: disk_full, at: 0, free: 1KiB}", "disk_full", {"free": 1024}),
    ("{type: disk_full, at: 0}", "disk_full", {"free": 0}),
])
def test_each_new_fault_type_parses_with_its_fields(text, kind, params):
    faults, problems = parse(text)
    assert problems == []
    assert [(f.kind, f.params) for f in faults] == [(kind, params)]


@pytest.mark.parametrize("text, field, words", [
    ("{type: sender_crash, target: r1, at: 5}", "faults[0].target", "not the sender"),
    ("{type: link_down, target: [s1, s2], from: r1, at: 5}", "faults[0].from", "not an end"),
    ("{type: switch_crash, target: s2, from: s1, at: 5}", "faults[0].from", "only"),
    ("{type: link_corrupt, target: [s1, s2], at: 5}", "faults[0].fraction", "required"),
    ("{type: link_duplicate, target: [s1, s2], fraction: 0, at: 5}", "faults[0].fraction", "(0, 1]"),
    ("{type: link_down, target: [s1, s2], fraction: 0.1, at: 5}", "faults[0].fraction", "only"),
    ("{type: link_reorder, target: [s1, s2], fraction: 0.1, delay: 2s, at: 5}", "faults[0].delay", "(0, 1 s]"),
    ("{type: link_duplicate, target: [s1, s2], fraction: 0.1, delay: 2ms, at: 5}", "faults[0].delay", "only"),
    ("{type: switch_slow, target: s2, at: 5}", "faults[0].cpu", "required"),
    ("{type: switch_slow, target: s2, cpu: 1, at: 5}", "faults[0].cpu", "(0, 1)"),
    ("{type: switch_crash, target: s2, cpu: 0.5, at: 5}", "faults[0].cpu", "only"),
    ("{type: disk_full, at: 0, free: lots}", "faults[0].free", ""),
    ("{type: disk_full, target: s1, at: 0}", "faults[0].target", "no target"),
    ("{type: switch_wipe, target: r1, at: 5}", "faults[0].target", "unknown switch"),
])
def test_a_bad_new_fault_names_its_field(text, field, words):
    _, problems = parse(text)
    assert any(p.startswith(field) and words in p for p in problems), problems


# -- simulator: exact effects ---------------------------------------------------

class _Sink:
    def __init__(self) -> None:
        self.got: list[tuple[float, bytes]] = []
        self.sim = None

    def receive(self, port: int, frame: bytes) -> None:
        self.got.append((self.sim.now, frame))


def _chain(mode: str, fraction: float, delay: float = 0.0):
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.faults import Impairment
    from p4mcc.netsim.link import Channel, NoLoss

    sim = Simulator(seed=1)
    sink = _Sink()
    sink.sim = sim
    ch = Channel(sim, "l:a->b", sink, 1, rate_bps=8e6, delay_s=0.001, loss=NoLoss(),
                 queue_packets=100, queue_bytes=None)
    imp = Impairment(sim, ch.dst, mode, fraction, random.Random(7), delay)
    ch.dst = imp
    return sim, ch, sink, imp


def _frames(n: int) -> list[bytes]:
    from p4mcc.netsim import packets as pk

    return [pk.udp_frame(b"\x02" * 6, b"\x04" * 6, pk.ip_int("10.0.0.1"), pk.ip_int("10.0.0.2"), 1, 2,
                         bytes([i]) * 100) for i in range(n)]


def test_duplication_delivers_every_hit_frame_twice_and_stops_when_removed():
    sim, ch, sink, imp = _chain("duplicate", 1.0)
    a, b, c = _frames(3)
    ch.send(a)
    ch.send(b)
    sim.run(until=0.01)
    imp.remove_from(ch)
    ch.send(c)
    sim.run(until=0.02)
    assert [f for _, f in sink.got] == [a, a, b, b, c]
    assert imp.hit == 2 and ch.dst is sink


def test_reordering_holds_a_hit_frame_so_the_next_overtakes_it():
    sim, ch, sink, imp = _chain("reorder", 1.0, delay=0.01)
    a, b = _frames(2)
    ch.send(a)
    sim.run(until=0.0015)  # a arrived at the impairment (0.14 ms + 1 ms) and is held
    imp.fraction = 0.0
    ch.send(b)
    sim.run(until=0.05)
    assert [f for _, f in sink.got] == [b, a]
    assert sink.got[1][0] == pytest.approx(len(a) * 8 / 8e6 + 0.001 + 0.01)  # serialized, propagated, held


def test_corruption_flips_exactly_one_bit_of_the_udp_payload():
    from p4mcc.netsim import packets as pk

    sim, ch, sink, imp = _chain("corrupt", 1.0)
    frames = _frames(20)
    for f in frames:
        ch.send(f)
    sim.run(until=1.0)
    assert len(sink.got) == 20
    for sent, (_, got) in zip(frames, sink.got):
        diff = [i for i in range(len(sent)) if sent[i] != got[i]]
        assert len(diff) == 1 and bin(sent[diff[0]] ^ got[diff[0]]).count("1") == 1
        assert diff[0] >= 14 + 20 + 8  # never the Ethernet, IP or UDP header
        assert pk.parse(got).payload != pk.parse(sent).payload


def test_a_corrupted_p4mcc_header_is_dropped_and_counted_by_the_receivers_codec():
    """Bit 0 of the payload is the magic's: the core's codec refuses the
    message, counts it, and does not raise.  In a run the host's UDP checksum
    check drops such a datagram first (test_sim_corruption.py); the codec is
    what stands for one sent without a checksum (0)."""
    from p4mcc.hosts import wire
    from p4mcc.netsim.faults import corrupt
    from p4mcc.netsim.run import registry_factory
    from p4mcc.scenario.model import load_scenario
    from tests.faults.conftest import SCENARIOS

    sc = load_scenario(SCENARIOS / "link-corrupt.yaml")
    s = sc.sessions[0]
    rx = registry_factory(s, "receiver", "r1", "10.0.0.2", "10.0.0.1", 1)
    rx.start(0.0)
    good = wire.VlmccData(session_id=s.session_id, seq=1, timestamp=0, payload=b"\0" * 100).encode()
    wire.decode(good)  # the intact message decodes

    class Bit0(random.Random):
        def randrange(self, *a, **k):  # the first bit of the payload
            return 0

    from p4mcc.netsim import packets as pk

    frame = pk.udp_frame(b"\x02" * 6, b"\x04" * 6, pk.ip_int("10.0.0.1"), pk.ip_int("239.1.1.1"), 1, 2, good)
    bad = pk.parse(corrupt(frame, Bit0())).payload
    with pytest.raises(wire.WireError):
        wire.decode(bad)
    before = rx.malformed
    rx.receive_datagram(bad, ("10.0.0.1", 5000), 0.02)
    assert rx.malformed == before + 1


def test_sender_crash_stops_the_session_then_a_fresh_sender_brings_it_back(sim_fault):
    run, ev = sim_fault("sender-crash", "model")
    assert [(e[0], e[2]) for e in ev if e[2] in ("crash", "restart")] == [(8.0, "crash"), (10.0, "restart")]
    # nothing reaches the receivers while the sender's host is down
    rx = [s for s in run.recorder.samples if s.node == "r1" and s.metric == "throughput_bps"
          and 8.6 <= s.time <= 10.0]
    assert rx and all(s.value == 0 for s in rx)
    after = [float(e[3].rsplit("after=", 1)[1].rstrip("s")) for e in ev if e[2] == "recovered"]
    assert after and max(after) <= RECOVERY_BOUND_S


def test_a_one_way_link_failure_drops_one_direction_only(sim_fault):
    run, ev = sim_fault("link-oneway", "model")
    link = next(l for l in run.net.links.values() if {l.a.name, l.b.name} == {"s1", "s2"})
    up, down = (link.ab, link.ba) if link.a.name == "s1" else (link.ba, link.ab)
    assert down.counters.down_drops > 0  # s2 -> s1: feedback lost
    assert up.counters.down_drops == 0  # s1 -> s2: data still flows
    assert [e[:3] for e in ev if e[2] in ("link_down", "link_up")] == [
        (8.0, "s2->s1", "link_down"), (10.0, "s2->s1", "link_up")]
    rx = [s.value for s in run.recorder.samples if s.node == "r1" and s.metric == "throughput_bps"
          and 8.5 <= s.time <= 10.0]
    assert rx and min(rx) > 0


def test_a_wiped_switch_is_found_by_the_read_back_and_written_again(sim_fault):
    run, ev = sim_fault("switch-wipe")
    wiped = [e for e in ev if e[2] == "wiped"]
    assert [e[0] for e in wiped] == [8.0] and int(wiped[0][3].split("=")[1]) > 0
    restored = [e[0] for e in ev if e[2] == "restored" and e[1] == "s2"]
    assert restored and 8.0 <= restored[0] <= 9.0  # within one read-back period
    assert not [e for e in ev if e[2] == "not_recovered"]
    # the restored tables forward again: r1 and r2 receive in the second after
    for r in ("r1", "r2"):
        assert sum(s.value for s in run.recorder.samples if s.node == r and s.metric == "throughput_bps"
                   and 9.5 <= s.time <= 12.0) > 0


def test_a_controller_cut_leaves_forwarding_alone_and_resyncs_on_reconnect(sim_fault):
    run, ev = sim_fault("controller-cut")
    assert [e[:3] for e in ev if e[2] in ("controller_cut", "controller_reconnect", "restored")] == [
        (8.0, "s2", "controller_cut"), (11.0, "s2", "controller_reconnect"), (11.0, "s2", "restored")]
    assert [e[3].rsplit("after=", 1)[1] for e in ev if e[2] == "recovered"] == ["0.00s"]


def test_a_starved_switch_delays_frames_and_recovers_after(sim_fault):
    run, ev = sim_fault("switch-slow", "model")
    assert [e[:3] for e in ev if e[2] in ("slow_start", "slow_end")] == [
        (8.0, "s2", "slow_start"), (12.0, "s2", "slow_end")]
    after = [float(e[3].rsplit("after=", 1)[1].rstrip("s")) for e in ev if e[2] == "recovered"]
    assert after and max(after) <= RECOVERY_BOUND_S


def test_slow_switch_holds_frames_while_stopped_and_releases_them_in_order():
    """cpu 0.2: the switch runs [0, 20 ms) of every 100 ms; a frame at 50 ms
    waits to 100 ms, one at 110 ms passes at once."""
    from types import SimpleNamespace

    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.faults import FaultInjector
    from p4mcc.scenario.faults import Fault

    sim = Simulator(seed=1)
    seen: list[tuple[float, int]] = []
    node = SimpleNamespace(receive=lambda port, frame: seen.append((round(sim.now, 6), port)))
    events: list = []
    run = SimpleNamespace(sim=sim, net=SimpleNamespace(switches={"s2": node}),
                          recorder=SimpleNamespace(event=lambda *e: events.append(e)))
    inj = FaultInjector.__new__(FaultInjector)
    inj.run, inj.scenario = run, SimpleNamespace(duration=10.0)
    f = Fault("switch_slow", 0.0, "s2", duration=0.3, params={"cpu": 0.2})
    sim.at(0.0, inj._switch_slow, f)
    sim.at(0.05, lambda: node.receive(1, b"x"))
    sim.at(0.06, lambda: node.receive(2, b"y"))
    sim.at(0.11, lambda: node.receive(3, b"z"))
    sim.at(0.5, lambda: node.receive(4, b"w"))
    sim.run(until=1.0)
    assert seen == [(0.1, 1), (0.1, 2), (0.11, 3), (0.5, 4)]
    assert [e[2] for e in events] == ["slow_start", "slow_end"]


def test_a_full_disk_leaves_no_completion_mark_and_report_refuses_the_folder(tmp_path):
    from p4mcc.reporting.results import COMPLETE, Recorder, results_folder_problem
    from p4mcc.scenario.faults import fill_disk
    from p4mcc.scenario.model import load_scenario
    from tests.faults.conftest import SCENARIOS

    sc = load_scenario(SCENARIOS / "disk-full.yaml")
    rec = Recorder(sc, "sim")
    for i in range(100):
        rec.sample(i * 0.5, "session", "vlmcc", "r1", "throughput_bps", 1e6)
    fill_disk(rec, 100)
    with pytest.raises(OSError) as e:
        rec.write(tmp_path)
    assert e.value.errno == 28
    assert not (tmp_path / COMPLETE).exists()
    assert results_folder_problem(tmp_path) is not None


# -- Mininet: the commands each fault issues -------------------------------------

def test_one_way_link_down_drops_on_the_sending_ends_egress_only():
    from p4mcc.emulation.faults import oneway_commands

    assert oneway_commands("s2-eth1", down=True) == [
        "tc qdisc replace dev s2-eth1 root handle 1: prio",
        "tc filter add dev s2-eth1 parent 1: protocol all matchall action drop"]
    assert oneway_commands("s2-eth1", down=False) == ["tc qdisc del dev s2-eth1 root"]


def test_controller_cut_resets_the_switchs_p4runtime_port_both_ways():
    from p4mcc.emulation.faults import cut_commands

    rule = "INPUT -p tcp --{} 50002 -m comment --comment p4mcc-cut -j REJECT --reject-with tcp-reset"
    assert cut_commands("127.0.0.1:50002", on=True) == [f"iptables -I {rule.format('dport')}",
                                                        f"iptables -I {rule.format('sport')}"]
    assert cut_commands("127.0.0.1:50002", on=False) == [f"iptables -D {rule.format('dport')}",
                                                         f"iptables -D {rule.format('sport')}"]


def test_a_starved_switch_process_is_stopped_and_continued_on_its_duty_cycle():
    import signal

    from p4mcc.emulation.faults import duty_cycle

    now = [0.0]
    sent: list[tuple[float, int]] = []

    class Clock(threading.Event):
        def wait(self, timeout=None):
            now[0] += timeout
            return False

    n = duty_cycle(42, 0.25, 0.4, Clock(), kill=lambda pid, sig: sent.append((round(now[0], 3), sig)),
                   period=0.1, clock=lambda: now[0])
    stop, cont = signal.SIGSTOP, signal.SIGCONT
    assert n == 4
    assert sent == [(0.025, stop), (0.1, cont), (0.125, stop), (0.2, cont), (0.225, stop), (0.3, cont),
                    (0.325, stop), (0.4, cont), (0.4, cont)]


@pytest.mark.parametrize("kind, text", [
    ("switch_wipe", "{type: switch_wipe, target: s2, at: 5}"),
])
def test_mininet_refuses_what_it_cannot_inject_in_one_line_with_the_reason(kind, text):
    from types import SimpleNamespace

    from p4mcc.emulation.faults import check_supported

    faults, _ = parse(text)
    with pytest.raises(ValueError) as e:
        check_supported(SimpleNamespace(faults=faults))
    msg = str(e.value)
    assert msg.startswith(f"faults[0]: {kind} cannot be injected in Mininet (") and "\n" not in msg
