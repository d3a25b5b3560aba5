"""The paper-reproduction scenarios load, document themselves, and one quick
headline check per window-based protocol holds within bounds from its paper.

The full reproduction (several seeds, paper-length runs) is
``bench/paper_results.py``; these checks use short runs of the same files
and the same metric functions, so a change that breaks a headline result
shows here first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from p4mcc.scenario.model import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "topologies" / "scenarios" / "paper"
FILES = sorted(PAPER.glob("*.yaml"))


def _bench():
    if "paper_results" in sys.modules:
        return sys.modules["paper_results"]
    spec = importlib.util.spec_from_file_location("paper_results", ROOT / "bench" / "paper_results.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["paper_results"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_there_is_a_scenario_for_each_window_protocol():
    names = {f.stem for f in FILES}
    assert {"rla-tcp-sharing", "rla-two-sessions", "mtcp-scaling-tree", "mtcp-scaling-flat",
            "mtcp-interfairness-4", "mtcp-interfairness-12", "mtcp-independent-loss", "vlmcc-fig4", "vlmcc-fig5-6"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_scenario_loads_and_says_what_it_reproduces(path: Path):
    sc = load_scenario(path)
    assert sc.sessions, "a paper scenario runs at least one session"
    head = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        head.append(line)
    text = "\n".join(head)
    assert head and head[0].startswith(f"# {path.stem}:")
    for word in ("Paper", "Here", "Expect", "Run:"):
        assert word in text, f"{path.name}: header comment lacks {word!r}"
    assert f"paper/{path.stem}.yaml" in text


def test_every_bench_job_is_a_current_sweep_file_of_an_existing_scenario():
    import yaml

    b = _bench()
    for job in b.JOBS:
        assert (PAPER / f"{job.scenario}.yaml").exists(), job
        # The committed sweep file is what --write-sweeps makes of the scenario today.
        assert yaml.safe_load(job.sweep_file.read_text()) == job.sweep_doc(b.SWEEP_SEEDS), (
            f"{job.sweep_file.name} is stale: run bench/paper_results.py --write-sweeps")
        job.build()  # variants (receiver subsets, queue, start offsets) apply cleanly


def test_receiver_subset_keeps_the_tree_consistent():
    b = _bench()
    sc = b.with_receivers(b.load("mtcp-scaling-tree"), "mtcp", 5)
    s = sc.sessions[0]
    assert s.receivers == ("r1", "r2", "r3", "r4", "r5")
    children = [e.split(">")[0] for e in s.params["tree"].split(",")]
    assert sorted(children) == sorted(sc.topology.hosts[r].ip for r in s.receivers)


def test_rla_cuts_about_one_signal_in_n_and_is_essentially_fair():
    """RLA paper Fig. 7: cuts ~ 1/n of the signals when all n receivers are
    troubled; throughput within the proven essential-fairness bounds
    [1/4, 2n] times the TCP flows' on the soft bottleneck."""
    b = _bench()
    run = b.simulate(b.load("rla-tcp-sharing").with_overrides(seed=1, duration=60.0), warmup=15.0)
    n = len(run.receivers["rla"])
    assert run.sender["rla"]["congestion_signals"] >= 3 * n  # enough signals for the fraction to mean something
    assert 0.5 / n <= b.rla_cut_fraction(run) <= 2.0 / n
    assert 0.25 <= b.rla_tcp_ratio(run) <= 2 * n


def test_mtcp_tree_carries_about_the_papers_one_megabit():
    """MTCP paper Fig. 9: ~1 Mb/s of data on 1.5 Mb/s links with a multilevel tree."""
    b = _bench()
    sc = b.with_receivers(b.load("mtcp-scaling-tree"), "mtcp", 5).with_overrides(seed=1, duration=20.0)
    run = b.simulate(sc, warmup=5.0)
    assert 0.8 <= b.mtcp_mbps(run) <= 1.5


def test_vlmcc_leader_moves_to_the_newly_congested_branch():
    """VLMCC paper Fig. 6: a receiver under router 3 leads soon after TCP 2 starts at 27 s."""
    b = _bench()
    run = b.simulate(b.load("vlmcc-fig5-6").with_overrides(seed=1, duration=32.0), warmup=0.0)
    assert b.leader_share(run, 12.0, 25.0, {"v1", "v2"}) >= 0.9
    assert b.leader_move_delay(run, 27.0, {"v3", "v4"}, 32.0) <= 2.0


def test_verdict_bands():
    b = _bench()
    c = b.Claim("X", "claim", "1", "job", lambda r: 0.0, ".2f", ok=(0.9, 1.1), partly=(0.5, None))
    assert [b.verdict(c, x) for x in (1.0, 0.9, 1.2, 0.5, 0.49)] == [
        "reproduced", "reproduced", "partly", "partly", "not reproduced"]
