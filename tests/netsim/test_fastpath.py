"""The P4 switch fast path (one lowering shared by all nodes, queue model consulted
only when the program reads queue metadata, multicast replicas sharing one
deparser run when egress left them unchanged) changes nothing a run reports:
the same seed gives the same summary.json with ``P4MCC_SIM_FASTPATH`` on
and off, every field but the wall time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4mcc.netsim.p4_switch import FASTPATH_ENV
from p4mcc.netsim.run import run_scenario
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import scenario_from_dict


def tfmcc_tree():
    return scenario_from_dict({
        "name": "fastpath", "duration": 6.0, "seed": 3, "metrics_interval": 0.5,
        "topology": {"generate": {"kind": "kary_tree", "k": 2, "receivers": 6, "rate": "20Mbps",
                                  "delay": "2ms", "leaf_rate": "5Mbps", "leaf_delay": "5ms",
                                  "loss_distribution": "tfmcc"}},
        "sessions": [{"name": "tfmcc", "protocol": "tfmcc", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.1.1", "port": 5001, "leave_at": {"r2": 3.0}}],
        "tcp_flows": [],
    }, known_protocols=None)


def summary(tmp: Path, monkeypatch: pytest.MonkeyPatch, fast: str) -> tuple[dict, dict]:
    monkeypatch.setenv(FASTPATH_ENV, fast)
    sc = tfmcc_tree()
    run = run_scenario(sc, tmp / f"fast{fast}", switch=choose_switch("p4", sc))
    assert all(n.sw._reads_queue for n in run.net.switches.values())  # mcc.p4's stamp reads deq_timedelta
    shared = sum(n.sw.shared_outputs for n in run.net.switches.values())
    # one lowering shared by every node on the fast path, one each without it
    codes = {id(n.sw._ingress.__code__) for n in run.net.switches.values()}
    assert len(codes) == (1 if fast == "1" else len(run.net.switches)) and len(run.net.switches) > 1
    # replicas egress left unchanged share one deparser run, only on the fast path
    assert (shared > 0) == (fast == "1")
    s = json.loads((tmp / f"fast{fast}" / "summary.json").read_text())
    stats = {name: (dict(n.sw.stats), n.counters) for name, n in run.net.switches.items()}
    return s, stats


def _without_wall(s: dict) -> dict:
    return json.loads(json.dumps(s), object_hook=lambda d: {k: v for k, v in d.items() if k != "wall_time_s"})


def test_same_summary_fast_path_on_and_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on, on_stats = summary(tmp_path, monkeypatch, "1")
    off, off_stats = summary(tmp_path, monkeypatch, "0")
    assert on["switch"] == off["switch"] == "p4"
    assert _without_wall(on) == _without_wall(off)
    assert on_stats == off_stats  # every node forwarded, replicated and dropped alike
    # the run did real work: data reached receivers through the switches
    assert on["sessions"]["tfmcc"]["mean_receiver_throughput_bps"] > 0
    assert sum(st["replicas"] for st, _ in on_stats.values()) > 60


def test_queue_model_asked_only_when_the_program_reads_queue_metadata() -> None:
    from p4mcc.p4switch.frontend import compile_file
    from p4mcc.p4switch.interp import Switch

    stf = Path(__file__).resolve().parents[1] / "stf" / "v1model"
    reads = Switch(compile_file(str(stf / "meta.p4"), [str(stf)]))  # copies enq_qdepth into a header
    assert reads._reads_queue
    forward = compile_file(str(stf / "forward.p4"), [str(stf)])
    assert not Switch(forward)._reads_queue  # never names queue metadata
    assert Switch(forward, fast=False)._reads_queue
    from p4mcc.netsim.p4_switch import load_program

    assert Switch(load_program())._reads_queue  # mcc.p4's stamp reads deq_timedelta
