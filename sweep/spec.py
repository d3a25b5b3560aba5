"""The sweep file: a base scenario, the axes to vary, the metrics to keep.

```yaml
base: base.yaml                 # a scenario file (relative to this file) or an inline mapping
switch: p4                      # p4 (default, as `p4mcc sim`) or model
set: {duration: 30}             # fixed overrides applied to every point
axes:
  seed: [1, 2, 3]                                   # a list
  topology.links[0].rate: {from: 2, to: 10, step: 4, unit: Mbps}   # a range
  bottleneck:                                       # a zipped group: one dimension,
    zip:                                            # its lists advance together
      topology.links[0].delay: [10ms, 50ms]
      topology.links[0].queue: [20, 80]
metrics:                        # optional; default: everything
  kinds: [session, receiver, tcp, link]
  windows: [run, steady]
  names: [throughput_bps, tcp_friendliness]
  series: false                 # also keep each flow's throughput time series
keep_results: false             # write every point's full results folder
```

Points are the Cartesian product of the dimensions (each plain axis and each
zipped group is one), in file order, the last varying fastest.  Every point's
scenario is built as a raw document (the base with the axis values written at
their paths) and validated by the scenario reader before anything runs, so
an axis that names a wrong field gets the reader's own field-path error.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4mcc.sweep.paths import PathError, parse_path, set_path

#: Rows of the results table, one per point and flow of this kind.
KINDS = ("session", "receiver", "tcp", "link")
#: ``run``: the whole run; ``steady``: the scenario's steady-state window.
WINDOWS = ("run", "steady")
#: Metric columns (before the ``steady_`` prefix of the steady window).
METRICS = (
    "throughput_bps", "throughput_cov", "loss", "rtt_s", "feedback_msgs",
    "min_receiver_throughput_bps", "jain_receivers", "tcp_friendliness", "jain_with_tcp",
    "sender_throughput_bps", "cwnd", "queue_pkts", "queue_drops", "loss_drops", "delivered_packets",
    "stalls",
)
#: Metrics that exist only for the whole run (counters and per-run totals).
RUN_ONLY = ("feedback_msgs", "queue_drops", "loss_drops", "delivered_packets", "stalls")
_TOP_KEYS = {"name", "description", "base", "switch", "set", "axes", "metrics", "keep_results"}


class SweepError(ValueError):
    """Problems in a sweep file, each prefixed by where it is."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Metrics:
    """Which rows and columns the results table keeps."""

    kinds: tuple[str, ...] = KINDS
    windows: tuple[str, ...] = WINDOWS
    names: tuple[str, ...] = METRICS
    series: bool = False

    def columns(self) -> list[str]:
        cols = []
        for n in self.names:
            if "run" in self.windows:
                cols.append(n)
            if "steady" in self.windows and n not in RUN_ONLY:
                cols.append(f"steady_{n}")
        return cols

    def as_dict(self) -> dict[str, Any]:
        return {"kinds": list(self.kinds), "windows": list(self.windows),
                "names": list(self.names), "series": self.series}


@dataclass(frozen=True)
class Dimension:
    """One dimension of the grid: one axis, or a zipped group of axes."""

    name: str
    paths: tuple[str, ...]
    #: One tuple per step: the value of each path (column value, value written).
    steps: tuple[tuple[tuple[Any, Any], ...], ...]


@dataclass
class Point:
    """One scenario to run: its index, axis values, and raw scenario document."""

    index: int
    values: dict[str, Any]
    scenario: dict[str, Any]
    id: str = ""


@dataclass
class Sweep:
    name: str
    source: str
    base: dict[str, Any]
    base_dir: Path
    switch: str = "p4"
    fixed: dict[str, Any] = field(default_factory=dict)
    dimensions: list[Dimension] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    keep_results: bool = False

    @property
    def axis_paths(self) -> list[str]:
        return [p for d in self.dimensions for p in d.paths]

    def points(self) -> list[Point]:
        """Every point, built but not validated (see :func:`validate`)."""
        out = []
        steps = [d.steps for d in self.dimensions] or [()]
        combos = itertools.product(*steps) if self.dimensions else [()]
        for i, combo in enumerate(combos):
            doc = copy.deepcopy(self.base)
            values: dict[str, Any] = {}
            for path, v in self.fixed.items():
                set_path(doc, path, v)
            for d, step in zip(self.dimensions, combo):
                for path, (col, written) in zip(d.paths, step):
                    set_path(doc, path, copy.deepcopy(written))
                    values[path] = col
            p = Point(i, values, doc)
            p.id = point_id(doc, self.switch, self.metrics, self.keep_results)
            out.append(p)
        return out


def point_id(doc: dict[str, Any], switch: str, metrics: Metrics, keep: bool) -> str:
    """A stable id of what a point computes (its finished results are reused by id).

    It covers the scenario, the switch, the metric selection and the p4mcc
    code itself (:func:`code_fingerprint`), so results of different code
    never mix in one table."""
    blob = json.dumps({"scenario": doc, "switch": switch, "metrics": metrics.as_dict(), "keep": keep,
                       "code": code_fingerprint()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the source files a simulation runs (protocols, simulator,
    switch, results layer, P4 program)."""
    import importlib

    h = hashlib.sha256()
    for pkg in ("hosts", "netsim", "p4switch", "controller", "scenario", "reporting", "emulation", "topologies", "sweep"):
        root = Path(importlib.import_module(f"p4mcc.{pkg}").__file__ or "").parent
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    try:
        from p4mcc.controller.program import P4_SOURCE

        for f in sorted(P4_SOURCE.parent.rglob("*.p4")):
            h.update(f.read_bytes())
    except (ImportError, OSError):
        pass
    return h.hexdigest()[:16]


# Reading ---------------------------------------------------------------------


def _read(path: Path) -> Any:
    """The file's data, read as scenario files are (size-capped, a key
    given twice refused, errors by position only)."""
    from p4mcc.scenario.model import read_document

    return read_document(path)


def _inline_topology(doc: dict[str, Any], base_dir: Path, problems: list[str]) -> None:
    """A ``topology: net.json`` reference travels inline, so workers need no files."""
    topo = doc.get("topology")
    if isinstance(topo, str):
        p = Path(topo)
        p = p if p.is_absolute() else base_dir / p
        try:
            doc["topology"] = _read(p)
        except (OSError, ValueError) as e:
            problems.append(f"base: topology: cannot read topology file {str(p)!r}: {e}")


MAX_POINTS = 100_000
"""Most points one sweep may have: each is a whole run, and the largest
sweep in bench/ has a few hundred.  A range whose step is a typo (``to:
1e12``) would otherwise be built in memory until the machine runs out."""


def _count(n: float) -> str:
    return f"{n:.3g}" if math.isfinite(n) else "endless"


def _range(where: str, spec: dict[str, Any], problems: list[str]) -> list[Any]:
    known = {"from", "to", "step", "num", "scale", "unit"}
    for k in spec:
        if k not in known:
            problems.append(f"{where}.{k}: unknown field (known: {', '.join(sorted(known))})")
    lo, hi = spec.get("from"), spec.get("to")
    nums = [x for x in (lo, hi, spec.get("step"), spec.get("num")) if x is not None]
    if lo is None or hi is None or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in nums):
        problems.append(f"{where}: a range needs numbers from and to, and step or num")
        return []
    scale = spec.get("scale", "linear")
    if scale not in ("linear", "log"):
        problems.append(f"{where}.scale: expected linear or log, got {scale!r}")
        return []
    if "step" in spec and "num" not in spec:
        step = spec["step"]
        if step == 0 or (hi - lo) / step < 0 or scale == "log":
            problems.append(f"{where}.step: must move from 'from' toward 'to' (log ranges take num)")
            return []
        count = (hi - lo) / step
        if not math.isfinite(count) or count + 1 > MAX_POINTS:
            problems.append(f"{where}: {_count(count + 1)} values, more than the {MAX_POINTS} points a sweep may have")
            return []
        n = int(math.floor(count + 1e-9)) + 1
        vals = [lo + i * step for i in range(n)]
        if all(isinstance(x, int) for x in (lo, hi, step)):
            vals = [int(v) for v in vals]
        else:
            vals = [round(v, 12) for v in vals]
    elif "num" in spec and "step" not in spec:
        n = spec["num"]
        if not isinstance(n, int) or n < 1:
            problems.append(f"{where}.num: expected a positive integer, got {n!r}")
            return []
        if n > MAX_POINTS:
            problems.append(f"{where}.num: {n} values, more than the {MAX_POINTS} points a sweep may have")
            return []
        if scale == "log":
            if lo <= 0 or hi <= 0:
                problems.append(f"{where}: a log range needs positive from and to")
                return []
            vals = [lo * (hi / lo) ** (i / (n - 1)) if n > 1 else lo for i in range(n)]
        else:
            vals = [lo + (hi - lo) * i / (n - 1) if n > 1 else lo for i in range(n)]
        vals = [round(v, 12) for v in vals]
    else:
        problems.append(f"{where}: give step or num (not both)")
        return []
    return vals


def _values(where: str, raw: Any, problems: list[str]) -> list[tuple[Any, Any]]:
    """An axis's values as (column value, value written into the scenario)."""
    if isinstance(raw, list):
        if not raw:
            problems.append(f"{where}: no values")
        return [(_column_value(v), v) for v in raw]
    if isinstance(raw, dict) and ("from" in raw or "to" in raw):
        vals = _range(where, raw, problems)
        unit = raw.get("unit")
        if unit is not None and not isinstance(unit, str):
            problems.append(f"{where}.unit: expected a unit like Mbps or ms, got {unit!r}")
            unit = None
        return [(v, f"{v}{unit}" if unit else v) for v in vals]
    problems.append(f"{where}: expected a list of values, a range {{from, to, step|num}} "
                    f"or a zipped group {{zip: {{path: [...], ...}}}}")
    return []


def _column_value(v: Any) -> Any:
    """Scalars stay as they are; lists and mappings become compact JSON text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def _check_path(where: str, path: str, problems: list[str]) -> bool:
    try:
        parse_path(path)
        return True
    except PathError as e:
        problems.append(f"{where}: {e}")
        return False


def _dimension(name: str, raw: Any, problems: list[str]) -> Dimension | None:
    where = f"axes.{name}"
    if isinstance(raw, dict) and "zip" in raw:
        for k in raw:
            if k != "zip":
                problems.append(f"{where}.{k}: unknown field (a zipped group has only zip)")
        group = raw["zip"]
        if not isinstance(group, dict) or not group:
            problems.append(f"{where}.zip: expected a mapping of field path -> list of values")
            return None
        paths, cols = [], []
        for path, vals in group.items():
            if _check_path(f"{where}.zip", str(path), problems):
                paths.append(str(path))
                cols.append(_values(f"{where}.zip.{path}", vals, problems))
        lens = {len(c) for c in cols}
        if len(lens) > 1:
            problems.append(f"{where}.zip: the lists have different lengths "
                            f"({', '.join(f'{p}: {len(c)}' for p, c in zip(paths, cols))})")
            return None
        if not paths:
            return None
        return Dimension(name, tuple(paths), tuple(tuple(step) for step in zip(*cols)))
    if not _check_path("axes", name, problems):
        return None
    vals = _values(where, raw, problems)
    return Dimension(name, (name,), tuple((v,) for v in vals)) if vals else None


def _metrics(raw: Any, problems: list[str]) -> Metrics:
    if raw is None:
        return Metrics()
    if isinstance(raw, list):
        raw = {"names": raw}
    if not isinstance(raw, dict):
        problems.append("metrics: expected a mapping with kinds, windows, names, series")
        return Metrics()
    known = {"kinds": KINDS, "windows": WINDOWS, "names": METRICS}
    for k in raw:
        if k not in (*known, "series"):
            problems.append(f"metrics.{k}: unknown field (known: kinds, names, series, windows)")
    picked: dict[str, tuple[str, ...]] = {}
    for key, allowed in known.items():
        vals = raw.get(key, list(allowed))
        if isinstance(vals, str):
            vals = [vals]
        if not isinstance(vals, list) or not vals:
            problems.append(f"metrics.{key}: expected a non-empty list (known: {', '.join(allowed)})")
            picked[key] = allowed
            continue
        for i, v in enumerate(vals):
            if v not in allowed:
                problems.append(f"metrics.{key}[{i}]: unknown {key[:-1]} {v!r} (known: {', '.join(allowed)})")
        picked[key] = tuple(v for v in allowed if v in vals)
    series = raw.get("series", False)
    if not isinstance(series, bool):
        problems.append(f"metrics.series: expected true/false, got {series!r}")
        series = False
    return Metrics(picked["kinds"], picked["windows"], picked["names"], series)


def load_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep file; raises :class:`SweepError` listing every problem."""
    p = Path(path)
    try:
        raw = _read(p)
    except OSError as e:
        raise SweepError([f"cannot read: {e.strerror or e}"]) from e
    except ValueError as e:  # too large, not a file, syntax (positions only)
        raise SweepError([str(e)]) from e
    return sweep_from_dict(raw, base_dir=p.parent, source=str(p))


def sweep_from_dict(raw: Any, *, base_dir: Path = Path("."), source: str = "") -> Sweep:
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise SweepError([f"a sweep file is a mapping, got {type(raw).__name__}"])
    for k in raw:
        if k not in _TOP_KEYS:
            problems.append(f"{k}: unknown field (known: {', '.join(sorted(_TOP_KEYS))})")
    base_raw = raw.get("base")
    base_path_dir = base_dir
    base: dict[str, Any] = {}
    if base_raw is None:
        problems.append("base: required (a scenario file or an inline scenario)")
    elif isinstance(base_raw, str):
        bp = Path(base_raw)
        bp = bp if bp.is_absolute() else base_dir / bp
        base_path_dir = bp.parent
        try:
            loaded = _read(bp)
        except OSError as e:
            problems.append(f"base: cannot read {str(bp)!r}: {e.strerror or e}")
            loaded = {}
        except ValueError as e:
            problems.append(f"base: {str(bp)!r}: {e}")
            loaded = {}
        if isinstance(loaded, dict):
            base = loaded
        else:
            problems.append(f"base: {str(bp)!r} is not a scenario mapping")
    elif isinstance(base_raw, dict):
        base = copy.deepcopy(base_raw)
    else:
        problems.append(f"base: expected a file name or a scenario mapping, got {base_raw!r}")
    _inline_topology(base, base_path_dir, problems)
    switch = raw.get("switch", "p4")
    if switch not in ("p4", "model"):
        problems.append(f"switch: expected p4 or model, got {switch!r}")
    fixed = raw.get("set", {}) or {}
    if not isinstance(fixed, dict):
        problems.append("set: expected a mapping of field path -> value")
        fixed = {}
    for k in list(fixed):
        if not _check_path("set", str(k), problems):
            fixed.pop(k)
    axes = raw.get("axes", {}) or {}
    dims: list[Dimension] = []
    if not isinstance(axes, dict):
        problems.append("axes: expected a mapping of field path -> values")
    else:
        for name, vals in axes.items():
            d = _dimension(str(name), vals, problems)
            if d is not None:
                dims.append(d)
    total = math.prod(len(d.steps) for d in dims)
    if total > MAX_POINTS:
        problems.append(f"axes: {total} points ({' x '.join(str(len(d.steps)) for d in dims)}), "
                        f"more than the {MAX_POINTS} a sweep may have")
    seen: dict[str, str] = {}
    for d in dims:
        for path in d.paths:
            if path in seen or path in fixed:
                problems.append(f"axes.{d.name}: {path} is varied twice" if path in seen
                                else f"axes.{d.name}: {path} is also fixed in set")
            seen[path] = d.name
    metrics = _metrics(raw.get("metrics"), problems)
    keep = raw.get("keep_results", False)
    if not isinstance(keep, bool):
        problems.append(f"keep_results: expected true/false, got {keep!r}")
        keep = False
    if problems:
        raise SweepError(problems)
    name = str(raw.get("name") or (Path(source).stem if source else "sweep"))
    return Sweep(name, source, base, base_path_dir, str(switch), dict(fixed), dims, metrics, keep)


# Validation --------------------------------------------------------------------


def _axis_of(problem: str, axis_paths: list[str]) -> str | None:
    """The axis a scenario problem is about (its field path and the axis's overlap), if any."""
    where = problem.split(": ", 1)[0]
    for path in axis_paths:
        if where == path or where.startswith((path + ".", path + "[")) \
                or path.startswith((where + ".", where + "[")):
            return path
    return None


def _check(doc: dict[str, Any], sweep: Sweep) -> list[str]:
    """Scenario-reader and protocol-parameter problems of one scenario document."""
    from p4mcc.scenario.model import ScenarioError, scenario_from_dict

    try:
        sc = scenario_from_dict(copy.deepcopy(doc), base=sweep.base_dir, source=sweep.source)
    except ScenarioError as e:
        return list(e.problems)
    out = []
    for i, s in enumerate(sc.sessions):
        msg = _param_problem(s.protocol, s.params)
        if msg:
            out.append(f"sessions[{i}].params: {msg}")
    return out


def validate(sweep: Sweep, points: list[Point] | None = None) -> list[Point]:
    """Build every point and check it with the scenario reader (and protocol
    parameters with the registry); raises :class:`SweepError` naming fields.

    The base (with ``set``) is checked first, so a problem of the base is
    reported once as ``base:``; a point's problem is reported as ``axes:``
    with the value of the axis whose field it is in."""
    base = copy.deepcopy(sweep.base)
    try:
        for path, v in sweep.fixed.items():
            set_path(base, path, v)
    except PathError as e:
        raise SweepError([f"set: {e}"]) from e
    base_problems = _check(base, sweep)
    if base_problems:
        raise SweepError([(f"set: {p}" if _axis_of(p, list(sweep.fixed)) else f"base: {p}")
                          for p in base_problems])
    try:
        points = sweep.points() if points is None else points
    except PathError as e:
        raise SweepError([f"axes: {e}"]) from e
    problems: list[str] = []
    seen: set[str] = set()
    ids: dict[str, int] = {}
    for p in points:
        found = _check(p.scenario, sweep)
        blamed = [(prob, _axis_of(prob, sweep.axis_paths)) for prob in found]
        if any(a for _, a in blamed):
            blamed = [(prob, a) for prob, a in blamed if a]
        for prob, axis in blamed:
            if prob in seen:
                continue
            seen.add(prob)
            where = f" (value {p.values[axis]!r})" if axis else _at(p)
            problems.append(f"axes: {prob}{where}")
        if p.id in ids:
            problems.append(f"axes: points {ids[p.id]} and {p.index} run the same scenario{_at(p)}")
        ids[p.id] = p.index
    if problems:
        raise SweepError(problems)
    return points


def _at(p: Point) -> str:
    if not p.values:
        return ""
    return " (at " + ", ".join(f"{k}={v!r}" for k, v in p.values.items()) + ")"


def _param_problem(protocol: str, params: dict[str, Any]) -> str | None:
    try:
        from p4mcc.hosts import registry
    except ImportError:
        return None
    try:
        registry.get(protocol).parse_params(params)
    except (registry.ParamError, KeyError, ValueError, TypeError) as e:
        return str(e).strip("'\"")
    return None
