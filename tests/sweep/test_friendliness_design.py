"""The friendliness grid covers the corners of every factor pair and stays in its ranges."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import yaml

from sweep.spec import load_sweep, validate

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
    assert full == b.sweep_doc(b.design(), [1, 2, 3], 200, "friendliness"), \
        "bench/sweeps/friendliness.yaml is stale: run bench/friendliness.py --write-sweeps"
    assert yaml.safe_load(b.QUICK.read_text()) == b.sweep_doc(b.QUICK_CELLS, [1], 60, "friendliness-quick")
    points = validate(load_sweep(b.FULL))
    assert len(points) == 5 * 24 * 3
    webrc = [p for p in points if p.values["sessions[0].protocol"] == "webrc"]
    assert all(p.scenario["sessions"][0]["params"]["session_rate_bps"]
               == 2 * p.scenario["topology"]["generate"]["rate"] for p in webrc)
