"""Phase effects: an exact clock must not decide who loses at a drop-tail queue.

Floyd and Jacobson (*On traffic phase effects in packet-switched gateways*,
1992) showed that in a simulator with exact timing, flows that meet at a
drop-tail queue lock into fixed phases, so that one of them loses every
overflow and the other none; a small random processing time at the sources
breaks the lock.  p4mcc's simulator gives every host such a send-path time
(``tcp_jitter`` for TCP flows' hosts, ``agent_jitter`` for sessions'; by
default ``auto``, one 1500-byte frame's service time on the slowest link,
at least 0.5 ms).  The first cell below is where the lock showed: RLA with
two receivers and one TCP flow on a 4 Mb/s, 30 ms dumbbell with a
20-packet queue.
"""

from __future__ import annotations

import pytest

from p4mcc.hosts.rla import RULES as RLA_RULES
from p4mcc.netsim.run import build_run, run_scenario
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import SEND_PATH_FLOOR, scenario_from_dict

DURATION = 60.0


def _dumbbell(protocol: str, duration: float, *, rate: int = 4_000_000, delay: float = 0.013,
              queue: int = 20, receivers: int = 2, tcp: int = 1, params: dict | None = None,
              **top: object) -> dict:
    """A dumbbell scenario: one session of ``protocol`` beside ``tcp`` TCP flows, seed 1."""
    return {
        "name": "phase", "duration": duration, "seed": 1, **top,
        "topology": {"generate": {"kind": "dumbbell", "receivers": receivers, "tcp_pairs": tcp,
                                  "rate": rate, "delay": delay, "queue": queue}},
        "sessions": [{"name": "mc", "protocol": protocol, "sender": "snd1", "receivers": ["r*"],
                      "params": params or {}}],
        "tcp_flows": [{"name": f"tcp{i}", "src": f"tsrc{i}", "dst": f"tdst{i}"} for i in range(1, tcp + 1)],
    }


def _ratio(jitter: float, monkeypatch: pytest.MonkeyPatch) -> tuple[float, int]:
    # RLA with the paper's SACK per packet (default without thin_acks): its
    # packets then follow the exact clock of the ACKs (thinned, spread SACKs
    # carry their own random phase, and the lock does not form: 1.8 with 2
    # TCP timeouts).
    monkeypatch.setitem(RLA_RULES.profiles, "default",
                        RLA_RULES.resolve("default", {"thin_acks": "off", "spread_acks": "off",
                                                      "spread_pairs": "off"}))
    doc = _dumbbell("rla", DURATION, tcp_jitter=jitter, agent_jitter=jitter)
    run = build_run(scenario_from_dict(doc), switch=model_choice())
    run.sim.run(DURATION / 2)
    rx0 = {r: run.agents[f"mc/{r}"].buf.delivered_bytes for r in ("r1", "r2")}
    tcp0 = run.tcp["tcp1"].receiver.delivered_bytes
    run.sim.run(DURATION)
    rx = sum(run.agents[f"mc/{r}"].buf.delivered_bytes - rx0[r] for r in rx0) / 2
    tcp = run.tcp["tcp1"].receiver.delivered_bytes - tcp0
    return rx / max(tcp, 1), run.tcp["tcp1"].sender.stats.timeouts


def test_send_jitter_breaks_the_phase_lock_of_an_exact_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SEND_PATH_FLOOR > 0  # the least a scenario gets by default
    locked, locked_timeouts = _ratio(0.0, monkeypatch)
    free, free_timeouts = _ratio(SEND_PATH_FLOOR, monkeypatch)
    # With the exact clock TCP loses every overflow and lives in timeouts.
    assert locked > 4 and locked_timeouts > 20
    # With the send-path time, RLA and TCP share within TFRC's band.
    assert 0.5 <= free <= 2.0 and free_timeouts <= 5


def _host_jitters(**jitters: float) -> dict[str, float]:
    net = build_run(scenario_from_dict(_dumbbell("tfmcc", 1, **jitters)), switch=model_choice()).net
    out = {}
    for host in net.hosts:
        link = net.host_link(host)
        out[host] = (link.ab if link.a is net.hosts[host] else link.ba).jitter_s
    return out


def test_every_host_gets_its_send_path_time() -> None:
    """Sessions' senders and receivers wait as TCP's hosts do, each with its own knob."""
    default = _host_jitters()  # auto: one 1500-byte frame at the 4 Mb/s bottleneck
    assert default == {h: 0.003 for h in ("snd1", "r1", "r2", "tsrc1", "tdst1")}
    exact_agents = _host_jitters(agent_jitter=0, tcp_jitter="2ms")
    assert exact_agents == {"snd1": 0.0, "r1": 0.0, "r2": 0.0, "tsrc1": 0.002, "tdst1": 0.002}


def test_auto_send_path_time_is_one_frame_on_the_slowest_link() -> None:
    """``auto``: Floyd and Jacobson's size, a 1500-byte frame's service time on
    the topology's slowest link (12 ms at 1 Mb/s), never below the 0.5 ms
    default (a 100 Mb/s path) nor above 100 ms."""
    from p4mcc.netsim.run import send_path_time

    assert send_path_time("auto", [100e6, 1e6, 100e6]) == 0.012
    assert send_path_time("auto", [100e6]) == SEND_PATH_FLOOR
    assert send_path_time("auto", [64e3]) == 0.1
    assert send_path_time(0.002, [1e6]) == 0.002
    auto = _host_jitters(agent_jitter="auto", tcp_jitter="auto")
    assert set(auto.values()) == {0.003}  # the dumbbell above: 4 Mb/s at its bottleneck


def _tfmcc_share(rate_bps: int) -> float:
    """TFMCC (three receivers) over the mean of three TCP flows, 50-100 s, seed 1."""
    doc = _dumbbell("tfmcc", 100, rate=rate_bps, delay=0.0169, queue=10, receivers=3, tcp=3,
                    steady_window=0.5)
    summary = run_scenario(scenario_from_dict(doc), switch=model_choice()).summary
    return summary["sessions"]["mc"]["steady_tcp_friendliness"]


def test_default_send_path_keeps_slow_links_off_the_phase_edge() -> None:
    """On slow links 0.5 ms is a small fraction of a service time (9.4 ms at
    1.28 Mb/s), and a paced session's share next to ACK-clocked TCP flipped
    with the link's rate (TFMCC 0.45, 1.26, 0.31, 1.38 of a TCP flow at 1.0,
    1.14, 1.28, 1.46 Mb/s).  The default (``auto``, one service time) keeps
    every rate within TFRC's [0.5, 2] band."""
    shares = [_tfmcc_share(r) for r in (1_000_000, 1_140_000, 1_280_000, 1_460_000)]
    assert all(0.5 <= x <= 2.0 for x in shares), shares
