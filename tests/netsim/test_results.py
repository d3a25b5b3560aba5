"""A whole scenario run: results files, sane summary values, plots, report, the CLI."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from p4mcc.hosts.core import Endpoint, Metric
from p4mcc.netsim.run import run_scenario
from netsim_testlib import CbrSender, Sink
from p4mcc.reporting import results as R
from p4mcc.scenario.model import scenario_from_dict

RATE_BPS = 2e6  # CBR: 1000-byte datagrams every 4 ms


class MeteredSink(Sink):
    """A sink that reports loss/RTT metrics like protocol receivers do, and feedback."""

    role = "test-receiver"

    def __init__(self, group: str, sender: str) -> None:
        super().__init__(group, reply_to=(sender, 5001))
        self.n = 0

    def on_datagram(self, data, src, now) -> None:
        super().on_datagram(data, src, now)
        self.n += 1
        if self.n % 100 == 0:
            self.emit(Metric(now, self.role, {"loss_event_rate": 0.01, "rtt_s": 0.05}))


def factory(sess, role, host, ip, sender_ip, seed) -> Endpoint:
    if role == "sender":
        return CbrSender((sess.group, sess.port), 1000, 8000 / RATE_BPS, 10**9)
    return MeteredSink(sess.group, sender_ip)


def scenario(duration: float = 10.0, loss: float = 0.0):
    return scenario_from_dict({
        "name": "cbr", "duration": duration, "seed": 2, "metrics_interval": 0.5,
        "topology": {"generate": {"kind": "dumbbell", "receivers": 3, "tcp_pairs": 1,
                                  "rate": "10Mbps", "delay": "10ms", "loss": loss}},
        "sessions": [{"name": "cbr", "protocol": "cbr", "sender": "snd1", "receivers": ["r1", "r2", "r3"],
                      "group": "239.5.5.5", "port": 5001, "leave_at": {"r3": 5.0}}],
        "tcp_flows": [{"name": "bulk", "src": "tsrc1", "dst": "tdst1", "start": 1}],
    }, known_protocols=None)


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("res")
    run_scenario(scenario(), out, agent_factory=factory)
    return out


def test_results_layout(results_dir: Path) -> None:
    for f in ("summary.json", "timeseries.csv", "events.csv", "metrics.jsonl", "throughput.png",
              "loss.png", "rtt.png", "feedback.png", "membership.png", "queues.png"):
        assert (results_dir / f).stat().st_size > 0, f
    assert (results_dir / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_values_are_sane(results_dir: Path) -> None:
    s = json.loads((results_dir / "summary.json").read_text())
    assert s["engine"] == "netsim" and s["switch"] == "model" and s["seed"] == 2
    sess = s["sessions"]["cbr"]
    r1 = sess["receivers"]["r1"]
    # CBR at 2 Mb/s of UDP payload shares the 10 Mb/s bottleneck with TCP: all of it arrives
    assert r1["throughput_bps"] == pytest.approx(RATE_BPS, rel=0.05)
    assert r1["throughput_cov"] < 0.1
    assert r1["loss"] == pytest.approx(0.01) and r1["rtt_s"] == pytest.approx(0.05)
    assert sess["receivers"]["r3"]["throughput_bps"] == pytest.approx(RATE_BPS, rel=0.1)  # only while joined
    # every datagram answered by 3 receivers (r3 for half the run): feedback at the sender
    sent = RATE_BPS / 8000 * 10
    assert sess["feedback_msgs_at_sender"] == pytest.approx(sent * 2.5, rel=0.05)
    tcp = s["tcp_flows"]["bulk"]
    assert 5e6 < tcp["throughput_bps"] < 8.2e6  # the rest of the 10 Mb/s
    assert sess["tcp_friendliness"] == pytest.approx(r1["throughput_bps"] / tcp["throughput_bps"], rel=0.05)
    assert sess["jain_receivers"] > 0.99
    assert 0.5 < sess["jain_with_tcp"] < 0.9


def test_timeseries_and_events(results_dir: Path) -> None:
    with (results_dir / "timeseries.csv").open() as f:
        rows = list(csv.DictReader(f))
    thr_r3 = [float(r["time"]) for r in rows if r["node"] == "r3" and r["metric"] == R.THROUGHPUT]
    assert max(thr_r3) == pytest.approx(5.0)  # no samples after its leave
    with (results_dir / "events.csv").open() as f:
        ev = [(r["node"], r["event"]) for r in csv.DictReader(f)]
    assert ("r3", "leave") in ev and ev.count(("r1", "join")) == 1
    recs = [json.loads(l) for l in (results_dir / "metrics.jsonl").read_text().splitlines()]
    assert recs and all(r["label"].startswith("cbr/") for r in recs)


def test_jain_and_cov() -> None:
    assert R.jain([1, 1, 1, 1]) == 1.0
    assert R.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert R.jain([]) is None
    assert R.cov([2, 2, 2]) == 0.0
    assert R.cov([1, 3]) == pytest.approx(0.5)


def p4mcc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4mcc.cli.main", *args], capture_output=True,
                          text=True, timeout=120)


def test_report_rerenders_and_compares(results_dir: Path, tmp_path: Path, capsys) -> None:
    from p4mcc.cli.main import main

    (results_dir / "throughput.png").unlink()
    assert main(["report", str(results_dir), str(results_dir)]) == 0
    out = capsys.readouterr().out
    assert (results_dir / "throughput.png").exists() and (results_dir / "compare.png").exists()
    assert "cbr" in out and "1.00" in out  # a run compared with itself
    assert main(["report", str(tmp_path)]) == 1


def test_sim_cli_names_the_bad_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration: 5\ntopology: {hosts: {h1: {}}, switches: [s1], links: [[h1, s1]]}\n"
                   "sessions: [{protocol: tfmcc, sender: h1, receivers: [h9]}]\n")
    out = p4mcc("sim", str(bad), "--quiet")
    assert out.returncode == 2
    assert "sessions[0].receivers[0]: unknown host 'h9'" in out.stderr


def test_sim_cli_runs_a_tcp_scenario(tmp_path: Path) -> None:
    sc = tmp_path / "tcp.yaml"
    sc.write_text("# two TCP flows on a dumbbell\nname: tcp2\nduration: 5\n"
                  "topology: {generate: {kind: dumbbell, pairs: 0, tcp_pairs: 2, rate: 10Mbps}}\n"
                  "tcp_flows: [{src: tsrc1, dst: tdst1}, {src: tsrc2, dst: tdst2}]\n")
    from p4mcc.cli.main import main

    assert main(["sim", str(sc), "--out", str(tmp_path / "o"), "--switch", "model", "--seed", "3",
                 "--duration", "4", "--quiet"]) == 0
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["seed"] == 3 and s["duration_s"] == 4.0
    total = sum(f["throughput_bps"] for f in s["tcp_flows"].values())
    assert 7e6 < total < 10e6


def test_whole_run_is_reproducible_and_seed_sensitive() -> None:
    def samples(seed: int):
        sc = scenario(duration=4.0, loss=0.01)
        from dataclasses import replace

        run = run_scenario(replace(sc, seed=seed), None, agent_factory=factory)
        return [(s.time, s.flow, s.node, s.metric, s.value) for s in run.recorder.samples], run.sim.events

    a, b = samples(5), samples(5)
    assert a == b and a[1] > 1000
    assert samples(6)[0] != a[0]  # the loss process draws from the seed
