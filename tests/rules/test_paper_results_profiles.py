"""``bench/paper_results.py`` runs every paper scenario under ``paper``,
``default`` and ``stamped`` with no parameter overrides, counts each run's
stalls, and writes its tables into the docs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import yaml

from p4mcc.sweep.spec import load_sweep, validate

ROOT = Path(__file__).resolve().parents[2]


def bench():
    if "paper_results" in sys.modules:
        return sys.modules["paper_results"]
    spec = importlib.util.spec_from_file_location("paper_results", ROOT / "bench" / "paper_results.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["paper_results"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_no_paper_sweep_sets_a_protocol_parameter() -> None:
    """Parameters come from the scenario file (what the paper sets) and the
    profile; a sweep may vary receivers, queues, start times, seeds and the profile."""
    b = bench()
    for job in b.JOBS:
        doc = yaml.safe_load(job.sweep_file.read_text())
        paths = list(doc.get("set", {}))
        for dim in doc["axes"].values():
            paths += list(dim["zip"]) if isinstance(dim, dict) else []
        paths += [k for k, v in doc["axes"].items() if not isinstance(v, dict)]
        derived = {"tree", "receivers"} if job.receivers else set()  # the receiver subset's own tree
        params = [p for p in paths if ".params." in p and p.rsplit(".", 1)[1] not in derived]
        assert params == [], f"{job.key} overrides {params}"
    assert not (b.SWEEP_DIR / "rla-tcp-rto02.yaml").exists()


def test_every_paper_job_runs_each_seed_under_every_profile() -> None:
    b = bench()
    for job in b.JOBS:
        points = validate(load_sweep(job.sweep_file))
        by_profile: dict[str, list[int]] = {}
        for p in points:
            profiles = {s.get("profile") for s in p.scenario["sessions"]}
            assert len(profiles) == 1, f"{job.key}: a point mixes profiles {profiles}"
            by_profile.setdefault(profiles.pop(), []).append(p.scenario["seed"])
        assert sorted(by_profile) == ["default", "paper", "stamped"], job.key
        for profile, seeds in by_profile.items():
            assert sorted(seeds) == b.SWEEP_SEEDS, (job.key, profile)
        assert job.build(profile="paper").sessions[0].profile == "paper"


def test_the_table_shows_paper_beside_default_and_goes_into_its_section(tmp_path: Path) -> None:
    from bench.docsection import sections

    b = bench()
    claim = next(c for c in b.CLAIMS if c.job == "vlmcc-fig4")
    rows = {"paper": [b.Row(claim, [0.6, 0.8])], "default": [b.Row(claim, [1.0, 1.2])]}
    assert b.table_header(b.PROFILES)[3:] == ["paper: ours", "paper: verdict", "default: ours", "default: verdict",
                                              "stamped: ours", "stamped: verdict"]
    assert b.table_rows(rows, b.PROFILES) == [[claim.protocol, claim.text, claim.paper,
                                               "0.70 ± 0.10", "reproduced", "1.10 ± 0.10", "reproduced", "-", "-"]]
    runs = {"paper": {"vlmcc-fig4": [b.Run("vlmcc-fig4", 1, 20.0, 60.0, stalls=2),
                                     b.Run("vlmcc-fig4", 2, 20.0, 60.0, stalls=1)]},
            "default": {"vlmcc-fig4": [b.Run("vlmcc-fig4", 1, 20.0, 60.0)]}}
    page = tmp_path / "paper-results.md"
    page.write_text("# Paper results\n\nprose\n\n<!-- generated:paper-results begin -->\nold\n"
                    "<!-- generated:paper-results end -->\n\nmore prose\n")
    b.write_docs(rows, [1, 2], True, "bench/paper_results.py --quick --docs", page=page, runs=runs)
    text = page.read_text()
    assert text.startswith("# Paper results\n\nprose\n\n") and text.endswith("\n\nmore prose\n")
    body = sections(text)["paper-results"]
    assert "old" not in body and "| 0.70 ± 0.10 | reproduced | 1.10 ± 0.10 | reproduced | - | - |" in body
    assert "| job | paper | default | stamped |" in body and "| vlmcc-fig4 | 3 | 0 | - |" in body


def test_the_probe_counts_the_runs_stalls() -> None:
    """A run's stall episodes travel from the liveness check through the probe into :class:`Run`."""
    b = bench()
    extra = {"name": "x", "seed": 1, "warmup": 0.0, "duration": 1.0, "goodput": {}, "sender": {}, "tcp": {},
             "records": [], "ips": {}, "receivers": {}, "profile": "stamped", "stalls": 4}
    run = b.run_from([], extra)
    assert (run.profile, run.stalls) == ("stamped", 4)
