"""``link_corrupt`` in the simulator behaves as in Mininet: every bit a link
flips in a p4mcc message is caught by the receiving host's UDP checksum
check, the datagram is dropped before the agent and counted
(``rx_bad_checksum``, ``host_drops`` in the results), and the session keeps
delivering.  Corrupting the sender's own link hits the data on its way into
the tree (the P4 switches stamp it, their incremental checksum update keeps
the damage visible) and the folded ACKs on their way out of it (the fold
keeps a valid checksum, so a damaged fold is caught too)."""

from __future__ import annotations

import pytest
import yaml

SCENARIO = """
name: corrupt-mtcp
duration: 12
seed: 3
topology:
  hosts: [h1, r1, r2]
  switches: [s1, s2]
  link_defaults: {rate: 20Mbps, delay: 2ms, queue: 50}
  links:
    - {a: s1, b: s2, rate: 4Mbps, delay: 10ms, queue: 30}
    - [h1, s1]
    - [r1, s2]
    - [r2, s2]
sessions:
  - {name: mtcp, protocol: mtcp, sender: h1, receivers: [r1, r2], params: {assisted: true}}
faults:
  - {type: link_corrupt, target: [h1, s1], fraction: 5%, at: 4, for: 4}
"""
AT, FOR, DURATION = 4.0, 4.0, 12


@pytest.fixture(scope="module")
def corrupted_run():
    """The run, and the original (msg_type, flags, udp checksum, destination) of
    every UDP frame the fault damaged."""
    from p4mcc.hosts import wire
    from p4mcc.netsim import faults
    from p4mcc.netsim import packets as pk
    from p4mcc.netsim.run import run_scenario
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.model import scenario_from_dict

    hit: list[tuple[int, int, int, int]] = []
    flip = faults.corrupt

    def recording(frame: bytes, rng):
        p = pk.parse(frame)
        if p is not None and p.proto == pk.PROTO_UDP and len(p.payload) >= wire.COMMON_LEN:
            udp = 14 + (frame[14] & 0xF) * 4
            csum = int.from_bytes(frame[udp + 6:udp + 8], "big")
            hit.append((p.payload[4], p.payload[5], csum, p.dst))
        return flip(frame, rng)

    sc = scenario_from_dict(yaml.safe_load(SCENARIO))
    mp = pytest.MonkeyPatch()
    mp.setattr(faults, "corrupt", recording)
    try:
        run = run_scenario(sc, switch=choose_switch("p4", sc))
    finally:
        mp.undo()
    return run, hit


def _endpoints(host):
    return [slot.endpoint for slots in host._udp.values() for slot in slots]


def test_every_damaged_folded_ack_is_dropped_and_counted_at_the_sender(corrupted_run):
    from p4mcc.hosts import wire

    run, hit = corrupted_run
    h1 = run.net.hosts["h1"]
    to_h1 = [h for h in hit if h[3] == h1.ip_int]
    folds = [h for h in to_h1 if h[0] in (wire.MsgType.MTCP_ACK, wire.MsgType.MTCP_WUPDATE)
             and h[1] & wire.Flags.AGGREGATED]
    assert folds and all(h[2] != 0 for h in folds)   # folds with a checksum were damaged
    # s1 -> h1 is the last hop: every damaged datagram to h1 is caught, none is missed
    assert h1.counters.rx_bad_checksum == len(to_h1)
    assert run.summary["host_drops"]["h1"]["rx_bad_checksum"] == len(to_h1)
    assert all(ep.malformed == 0 for ep in _endpoints(h1))


def test_damaged_data_is_dropped_and_counted_at_the_receivers_and_the_session_keeps_delivering(corrupted_run):
    from p4mcc.hosts import wire

    run, hit = corrupted_run
    data = [h for h in hit if h[0] == wire.MsgType.MTCP_DATA]
    assert data
    for r in ("r1", "r2"):
        host = run.net.hosts[r]
        # each damaged packet reaches each receiver at most once (s2 replicates it)
        assert 1 <= host.counters.rx_bad_checksum <= len(data)
        assert run.summary["host_drops"][r]["rx_bad_checksum"] == host.counters.rx_bad_checksum
        # no damaged message reaches the core: its codec never sees one
        assert all(ep.malformed == 0 for ep in _endpoints(host))
        # every second of the fault and after it delivers (a lost packet may
        # leave a sample interval empty while it is repaired, not a second)
        tput = [(s.time, s.value) for s in run.recorder.samples if s.node == r and s.metric == "throughput_bps"]
        for start in range(int(AT), DURATION):
            assert sum(v for t, v in tput if start < t <= start + 1) > 0, (r, start)
    assert not any(run.liveness.stalls.values())
