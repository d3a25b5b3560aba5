"""The friendliness grid covers the corners of every factor pair and stays in its ranges."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
import yaml

from p4mcc.sweep.spec import load_sweep, validate

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    if "friendliness" in sys.modules:
        return sys.modules["friendliness"]
    spec = importlib.util.spec_from_file_location("friendliness", ROOT / "bench" / "friendliness.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["friendliness"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_design_has_24_cells_in_range_with_every_pair_of_factors_at_its_four_corners() -> None:
    b = _bench()
    cells = b.design()
    assert len(cells) == 24 and cells == b.design()  # deterministic
    for c in cells:
        assert 1 <= c["rate_mbps"] <= 20 and 20 <= c["rtt_ms"] <= 200
        assert 1 <= c["tcp"] <= 4 and 2 <= c["receivers"] <= 32
        bdp = c["rate_mbps"] * 1e6 * c["rtt_ms"] / 1e3 / 8 / 1500
        assert c["queue"] >= 10 and (c["queue"] == 10 or 0.5 * bdp - 1 <= c["queue"] <= 2 * bdp + 1)
    corners = cells[:16]
    lows = {"rate_mbps": 1.0, "rtt_ms": 20.0, "tcp": 1, "receivers": 2}
    for f, g in itertools.combinations(lows, 2):
        seen = {(c[f] == lows[f], c[g] == lows[g]) for c in corners}
        assert seen == {(True, True), (True, False), (False, True), (False, False)}, (f, g)


def test_sweep_files_are_current_and_valid() -> None:
    b = _bench()
    full = yaml.safe_load(b.FULL.read_text())
    assert full == b.sweep_doc(b.design(), [1, 2, 3], 200, "friendliness", epochs=b.EPOCHS), \
        "bench/sweeps/friendliness.yaml is stale: run bench/friendliness.py --write-sweeps"
    assert yaml.safe_load(b.QUICK.read_text()) == b.sweep_doc(b.QUICK_CELLS, [1], 60, "friendliness-quick",
                                                             epochs=b.EPOCHS)
    points = validate(load_sweep(b.FULL))
    assert len(points) == 5 * 24 * 3
    webrc = [p for p in points if p.values["sessions[0].protocol"] == "webrc"]
    assert all(p.scenario["sessions"][0]["params"]["session_rate_bps"]
               == 2 * p.scenario["topology"]["generate"]["rate"] for p in webrc)


def test_the_tcp_reference_puts_one_more_tcp_flow_in_the_sessions_place(tmp_path: Path) -> None:
    b = _bench()
    cells = b.design()
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(b.reference_doc(cells, [1, 2], 100, "reference")))
    points = validate(load_sweep(path))
    distinct = {(c["rate_mbps"], c["rtt_ms"], c["queue"], c["tcp"]) for c in cells}
    assert len(points) == len(distinct) * 2  # cells that differ only in receivers share one
    for p in points:
        sc = p.scenario
        gen = sc["topology"]["generate"]
        cell = next(c for c in cells if int(c["rate_mbps"] * 1e6) == gen["rate"] and c["queue"] == gen["queue"]
                    and round(c["rtt_ms"] / 2e3 - 2 * b.ACCESS_DELAY, 5) == gen["delay"]
                    and c["tcp"] + 1 == gen["tcp_pairs"])
        assert not sc.get("sessions") and gen["pairs"] == 0
        names = [f["name"] for f in sc["tcp_flows"]]
        assert names[-1] == b.REF_FLOW and len(names) == cell["tcp"] + 1 and len(set(names)) == len(names)
        assert all(f.get("start", 0) == 0 for f in sc["tcp_flows"])  # the same start as the grid's session


def test_the_reference_ratio_is_the_stand_in_flow_over_the_other_flows_mean() -> None:
    b = _bench()
    axes = {"topology.generate.rate": 4_000_000, "topology.generate.delay": 0.018,
            "topology.generate.queue": 27, "topology.generate.tcp_pairs": 3, "seed": 1, "point": 0}
    rows = [{**axes, "kind": "tcp", "flow": f, "steady_throughput_bps": v}
            for f, v in (("tcp1", 1.5e6), ("tcp2", 0.9e6), (b.REF_FLOW, 0.6e6))]
    series = [{"point": 0, "kind": "tcp", "flow": b.REF_FLOW, "time": t, "throughput_bps": v}
              for t, v in ((0.5, 0.4e6), (1.0, 1.0e6), (1.5, 1.6e6), (2.0, 1.7e6))]
    (fig,) = b.reference_figures(rows, series)
    assert fig["protocol"] == b.REFERENCE and fig["cell"] == (4_000_000, 0.018, 27, 2, 0)
    assert abs(fig["ratio"] - 0.6 / 1.2) < 1e-9
    assert abs(fig["util"] - 3.0 / 4.0) < 1e-9
    assert abs(fig["jain"] - 3.0 ** 2 / (3 * (1.5 ** 2 + 0.9 ** 2 + 0.6 ** 2))) < 1e-9
    # 80 % of the fair share, 4 Mb/s over 3 flows: the 2 s moving mean passes 1.067 Mb/s at 2.0 s (1.0 at 1.5 s)
    assert fig["t80"] == 2.0


def test_a_send_jitter_reaches_every_host_of_the_grid_and_of_the_reference(tmp_path: Path) -> None:
    """``--send-jitter`` sets tcp_jitter and agent_jitter in every point; without it neither is set."""
    b = _bench()
    cells = b.QUICK_CELLS
    for name, doc in (("grid", b.sweep_doc(cells, [1], 60, "g", send_jitter="10ms")),
                      ("reference", b.reference_doc(cells, [1], 60, "r", send_jitter="10ms"))):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        points = validate(load_sweep(path))
        assert points and all(p.scenario["tcp_jitter"] == p.scenario["agent_jitter"] == "10ms" for p in points)
    plain = b.sweep_doc(cells, [1], 60, "g")
    assert "tcp_jitter" not in plain["base"] and "agent_jitter" not in plain["base"]


def test_a_bad_send_jitter_is_refused_before_any_run() -> None:
    b = _bench()
    for bad in ("1s", "fast"):
        with pytest.raises(SystemExit, match="--send-jitter: a time of 0-100ms or .auto. expected"):
            b.main(["--send-jitter", bad, "--cells", "0", "--protocols", "tfmcc"])


def test_a_tcp_start_delays_every_tcp_flow_of_every_point_and_nothing_else(tmp_path: Path) -> None:
    """``--tcp-start``: the session holds the link alone first, then TCP arrives."""
    b = _bench()
    path = tmp_path / "late.yaml"
    path.write_text(yaml.safe_dump(b.sweep_doc(b.QUICK_CELLS, [1], 60, "g", tcp_start=20.0)))
    points = validate(load_sweep(path))
    assert points and all(f["start"] == 20.0 for p in points for f in p.scenario["tcp_flows"])
    assert all(p.scenario["sessions"][0].get("start", 0) == 0 for p in points)
    together = b.sweep_doc(b.QUICK_CELLS, [1], 60, "g")
    assert all("start" not in f for flows in together["axes"]["cell"]["zip"]["tcp_flows"] for f in flows)


def test_a_tcp_start_past_half_the_run_is_refused() -> None:
    b = _bench()
    with pytest.raises(SystemExit, match="--tcp-start: seconds from 0 to less than half the run"):
        b.main(["--tcp-start", "30", "--duration", "60", "--cells", "0", "--protocols", "tfmcc"])


def test_with_a_tcp_start_the_reference_flow_holds_the_link_first(tmp_path: Path) -> None:
    """The stand-in takes the session's place, so it starts at 0 and the others late."""
    b = _bench()
    path = tmp_path / "ref.yaml"
    path.write_text(yaml.safe_dump(b.reference_doc(b.QUICK_CELLS, [1], 60, "r", tcp_start=20.0)))
    points = validate(load_sweep(path))
    for p in points:
        starts = {f["name"]: f.get("start", 0) for f in p.scenario["tcp_flows"]}
        assert starts.pop(b.REF_FLOW) == 0 and starts and set(starts.values()) == {20.0}


def test_drawn_dumbbells_stay_in_the_grid_ranges_and_repeat_for_one_seed() -> None:
    b = _bench()
    cells = b.drawn(40, 7)
    assert cells == b.drawn(40, 7) and cells != b.drawn(40, 8)
    assert not {tuple(c.values()) for c in cells} & {tuple(c.values()) for c in b.design()}
    for c in cells:
        assert 1 <= c["rate_mbps"] <= 20 and 20 <= c["rtt_ms"] <= 200
        assert 1 <= c["tcp"] <= 4 and 2 <= c["receivers"] <= 32
        bdp = c["rate_mbps"] * 1e6 * c["rtt_ms"] / 1e3 / 8 / 1500
        assert c["queue"] >= 10 and (c["queue"] == 10 or 0.5 * bdp - 1 <= c["queue"] <= 2 * bdp + 1)
    # Every level of the TCP flows is drawn, and the draws are spread, not clustered at one end.
    assert {c["tcp"] for c in cells} == {1, 2, 3, 4}
    assert min(c["rate_mbps"] for c in cells) < 3 and max(c["rate_mbps"] for c in cells) > 8


def test_a_cell_runs_long_enough_for_three_tcp_epochs_in_its_second_half() -> None:
    """The epoch rule: 20 Mb/s, 200 ms and a 667-packet queue beside one TCP flow give each of
    the two flows a 500-packet window (a 333-packet BDP plus the queue, split), which climbs from
    half to full in 250 round trips of 0.6 s at the full queue: 150 s, so a 200 s run's second
    half held less than one epoch."""
    b = _bench()
    slow = {"rate_mbps": 20.0, "rtt_ms": 200.0, "queue": 667, "tcp": 1, "receivers": 32}
    rtt_full = 0.2 + 667 * 1500 * 8 / 20e6
    assert b.epoch_s(slow) == pytest.approx((20e6 * 0.2 / 8 / 1500 + 667) / 2 / 2 * rtt_full)
    assert b.run_length(slow, 200) >= 2 * 3 * b.epoch_s(slow) > 200
    assert b.run_length(slow, 200) % 10 == 0
    fast = {"rate_mbps": 1.0, "rtt_ms": 20.0, "queue": 10, "tcp": 1, "receivers": 2}
    assert b.run_length(fast, 200) == 200  # epochs of a second: the floor holds them
    assert b.run_length(slow, 200, epochs=0) == 200
    doc = b.sweep_doc([slow, fast], [1], 200, "g", ("tfmcc",), epochs=3)
    assert doc["axes"]["cell"]["zip"]["duration"] == [b.run_length(slow, 200), 200]
    ref = b.reference_doc([slow, fast], [1], 200, "r", epochs=3)
    assert ref["axes"]["cell"]["zip"]["duration"] == [b.run_length(slow, 200), 200]
    assert "duration" not in b.sweep_doc([slow], [1], 200, "g", ("tfmcc",))["axes"]["cell"]["zip"]
