"""The runs whose results each profile must keep while the protocols are restructured.

``default``: the demo and four cells of the friendliness grid per protocol,
each at a fixed seed, in the simulator with the P4 switch.  ``paper`` and
``stamped``: the demo and two of those cells per protocol under that profile
(``stamped`` with ``assistance: stamp``, so the switches stamp and estimate
the share its rules read), named ``<profile>-<case>``.
``.venv/bin/python tests/equivalence/cases.py --write [NAME...]`` records their
``summary.json`` in ``golden/``; :mod:`tests.equivalence.test_profiles_keep_results`
checks that today's code gives the same summaries.  A change that moves
a profile on purpose (a rule retired after its ablation) writes them again
in the same commit, and says so in ``CHANGELOG.md``.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
DURATION = 40.0
"""Seconds of simulated time per case: long enough for every protocol's
start-up to end and its steady rules to act, short enough for ``make test``."""
SEED = 1
PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
VOLATILE = {"wall_time_s", "profile", "rules"}
"""Summary fields left out of the comparison: the wall time depends on the
machine, and a session's profile and rule list describe the run (adding a
rule to a profile that does not change the figures must not fail the check)."""


def _grid_cases() -> dict[str, dict[str, Any]]:
    from bench.friendliness import QUICK_CELLS, sweep_doc

    doc = sweep_doc(QUICK_CELLS, [SEED], DURATION, "equivalence")
    cols = doc["axes"]["cell"]["zip"]
    cases: dict[str, dict[str, Any]] = {}
    for i, proto in enumerate(cols["sessions[0].protocol"]):
        sc = copy.deepcopy(doc["base"])
        sc["seed"] = SEED
        sc["sessions"][0]["protocol"] = proto
        sc["sessions"][0]["params"] = cols["sessions[0].params"][i]
        gen = sc["topology"]["generate"]
        for key in ("rate", "delay", "queue", "receivers", "tcp_pairs"):
            gen[key] = cols[f"topology.generate.{key}"][i]
        sc["tcp_flows"] = cols["tcp_flows"][i]
        cell = i % len(QUICK_CELLS)
        cases[f"{proto}-cell{cell}"] = sc
    return cases


def _demo_case() -> dict[str, Any]:
    import yaml

    sc = yaml.safe_load((ROOT / "topologies" / "scenarios" / "demo.yaml").read_text())
    sc["duration"] = DURATION
    sc["seed"] = SEED
    return sc


#: The other profiles' cases: the demo and these quick cells of each protocol.
PROFILE_CELLS = (0, 2)


def _under(doc: dict[str, Any], profile: str) -> dict[str, Any]:
    """``doc`` with every session under ``profile`` (``stamped``: with stamping switches)."""
    out = copy.deepcopy(doc)
    for sess in out["sessions"]:
        sess["profile"] = profile
        if profile == "stamped":
            sess["assistance"] = "stamp"
    return out


def cases() -> dict[str, dict[str, Any]]:
    """Case name -> scenario document."""
    default = {"demo": _demo_case(), **_grid_cases()}
    picked = ["demo", *(f"{p}-cell{c}" for p in PROTOCOLS for c in PROFILE_CELLS)]
    others = {f"{prof}-{name}": _under(default[name], prof) for prof in ("paper", "stamped") for name in picked}
    return {**default, **others}


def run_case(doc: dict[str, Any]) -> dict[str, Any]:
    """The case's summary, with machine-dependent fields left out."""
    from p4mcc.netsim.run import run_scenario
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict(copy.deepcopy(doc), base=ROOT / "topologies" / "scenarios")
    run = run_scenario(sc, None)
    return comparable(run.summary)


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` as JSON would store it, without the volatile fields."""
    data = json.loads(json.dumps(summary, default=str))
    return _strip(data)


def _strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return x


def main(argv: list[str]) -> int:
    """``--write [NAME...]``: record every case, or only the named ones (a change that moves
    one protocol's figures writes that protocol's cases and leaves the others as recorded)."""
    if argv[:1] != ["--write"]:
        print("usage: tests/equivalence/cases.py --write [NAME...]", file=sys.stderr)
        return 2
    every = cases()
    unknown = [n for n in argv[1:] if n not in every]
    if unknown:
        print(f"cases.py: no case named {', '.join(unknown)} (cases: {', '.join(sorted(every))})",
              file=sys.stderr)
        return 2
    GOLDEN.mkdir(exist_ok=True)
    for name, doc in every.items():
        if argv[1:] and name not in argv[1:]:
            continue
        out = GOLDEN / f"{name}.json"
        out.write_text(json.dumps(run_case(doc), indent=1, sort_keys=True) + "\n")
        print(out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
