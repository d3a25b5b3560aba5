"""A sweep's output folder: finished points, the table, the DuckDB file.

``DIR/points/<id>.json`` holds one finished point (written atomically, so a
sweep stopped at any moment leaves only whole points); a point whose id is
there is not run again.  The id hashes the point's whole scenario and what
is collected from it, so changing the base scenario or the metrics re-runs
the points it affects and nothing else.

At the end the points of the current sweep are assembled, in sweep order,
into ``DIR/results.parquet`` (one row per point and flow, every axis a column
named by its path, each session's ``profile`` and effective ``rules``) and ``DIR/results.duckdb`` (tables ``results`` and, when
series were collected, ``series``), plus ``DIR/sweep.json`` describing the
axes and columns.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from p4mcc.hosts.input_files import parse_json, read_input_text
from p4mcc.sweep.spec import Point, Sweep


def _temporary(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place (hidden, named by the writer's pid)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _replace(path: Path, write: Any) -> None:
    """Write ``path`` whole or not at all: ``write(tmp)``, then a rename, so a run
    killed mid-write leaves the previous file (or none), never a truncated one
    that ``p4mcc report`` or a resumed sweep would read."""
    tmp = _temporary(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

RESULTS = "results.parquet"
SERIES = "series.parquet"
PROBES = "probes.parquet"
DUCKDB = "results.duckdb"
META = "sweep.json"
POINTS = "points"

#: Row columns before the metrics, and their Arrow types.
_ROW_TYPES = {"kind": "string", "flow": "string", "node": "string", "protocol": "string", "assistance": "bool",
              "profile": "string", "rules": "list<string>"}
"""``rules`` is the session's effective rule list, a list column, so a query
asks ``list_contains(rules, 'name')`` (DuckDB) rather than parsing text."""
_INT_METRICS = {"feedback_msgs", "queue_drops", "loss_drops", "delivered_packets"}


class Store:
    """Finished points of one output folder."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.points = self.out / POINTS

    def done(self) -> set[str]:
        if not self.points.is_dir():
            return set()
        return {f.stem for f in self.points.glob("*.json")}

    def save(self, result: dict[str, Any]) -> None:
        self.points.mkdir(parents=True, exist_ok=True)
        files = result.pop("files", None)
        _replace(self.points / f"{result['id']}.json", lambda tmp: tmp.write_text(json.dumps(result)))
        if files:
            d = self.points / result["id"]
            d.mkdir(exist_ok=True)
            for name, text in files.items():
                (d / name).write_text(text)

    def load(self, pid: str) -> dict[str, Any]:
        return json.loads((self.points / f"{pid}.json").read_text())

    def clear(self) -> None:
        """Forget every finished point (``--fresh``): only this folder's own files."""
        import shutil

        if self.points.is_dir():
            shutil.rmtree(self.points)
        for name in (RESULTS, SERIES, PROBES, DUCKDB, META):
            (self.out / name).unlink(missing_ok=True)


def _axis_type(values: list[Any]) -> Any:
    import pyarrow as pa

    vs = [v for v in values if v is not None]
    if vs and all(isinstance(v, bool) for v in vs):
        return pa.bool_(), values
    if vs and all(isinstance(v, int) and not isinstance(v, bool) for v in vs):
        return pa.int64(), values
    if vs and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs):
        return pa.float64(), [None if v is None else float(v) for v in values]
    return pa.string(), [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]


def build_table(sweep: Sweep, points: list[Point], store: Store) -> tuple[Any, Any, Any]:
    """The results table, the series table and the probes table (None when
    not collected) of the finished ``points``."""
    import pyarrow as pa

    done = store.done()
    cols = sweep.metrics.columns()
    rows: list[dict[str, Any]] = []
    series: list[dict[str, Any]] = []
    probes: list[tuple[int, str, str]] = []
    for p in points:
        if p.id not in done:
            continue
        res = store.load(p.id)
        if res.get("probe") is not None:
            probes.append((p.index, p.id, json.dumps(res["probe"], sort_keys=True)))
        for r in res["rows"]:
            rows.append({"point": p.index, "point_id": p.id, **{f"@{k}": v for k, v in p.values.items()}, **r})
        for r in res.get("series", []):
            series.append({"point": p.index, "point_id": p.id, **r})
    fields = [pa.field("point", pa.int64()), pa.field("point_id", pa.string())]
    arrays: list[Any] = [pa.array([r["point"] for r in rows], pa.int64()),
                         pa.array([r["point_id"] for r in rows], pa.string())]
    for path in sweep.axis_paths:
        typ, vals = _axis_type([r.get(f"@{path}") for r in rows])
        fields.append(pa.field(path, typ))
        arrays.append(pa.array(vals, typ))
    for c, t in _ROW_TYPES.items():
        typ = {"bool": pa.bool_(), "list<string>": pa.list_(pa.string())}.get(t, pa.string())
        fields.append(pa.field(c, typ))
        arrays.append(pa.array([r.get(c) for r in rows], typ))
    for c in cols:
        base = c.removeprefix("steady_")
        typ = pa.int64() if base in _INT_METRICS else pa.float64()
        vals = [r.get(c) for r in rows]
        if typ == pa.float64():
            vals = [None if v is None else float(v) for v in vals]
        fields.append(pa.field(c, typ))
        arrays.append(pa.array(vals, typ))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    stable = None
    if sweep.metrics.series:
        stable = pa.table({
            "point": pa.array([r["point"] for r in series], pa.int64()),
            "point_id": pa.array([r["point_id"] for r in series], pa.string()),
            "time": pa.array([r["time"] for r in series], pa.float64()),
            "kind": pa.array([r["kind"] for r in series], pa.string()),
            "flow": pa.array([r["flow"] for r in series], pa.string()),
            "throughput_bps": pa.array([r["throughput_bps"] for r in series], pa.float64()),
        })
    ptable = None
    if probes:
        ptable = pa.table({"point": pa.array([x[0] for x in probes], pa.int64()),
                           "point_id": pa.array([x[1] for x in probes], pa.string()),
                           "probe": pa.array([x[2] for x in probes], pa.string())})
    return table, stable, ptable


def write_outputs(sweep: Sweep, points: list[Point], store: Store, *, complete: bool) -> Path:
    """Write the Parquet table(s), the DuckDB file and ``sweep.json``; returns the table's path."""
    import duckdb
    import pyarrow.parquet as pq

    table, stable, ptable = build_table(sweep, points, store)
    out = store.out
    out.mkdir(parents=True, exist_ok=True)
    _replace(out / RESULTS, lambda tmp: pq.write_table(table, tmp))
    if stable is not None:
        _replace(out / SERIES, lambda tmp: pq.write_table(stable, tmp))
    if ptable is not None:
        _replace(out / PROBES, lambda tmp: pq.write_table(ptable, tmp))
    db = out / DUCKDB
    tmp = _temporary(db)
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.execute(f"CREATE TABLE results AS SELECT * FROM read_parquet('{(out / RESULTS).as_posix()}')")
        if stable is not None:
            con.execute(f"CREATE TABLE series AS SELECT * FROM read_parquet('{(out / SERIES).as_posix()}')")
        if ptable is not None:
            con.execute(f"CREATE TABLE probes AS SELECT * FROM read_parquet('{(out / PROBES).as_posix()}')")
    finally:
        con.close()
    os.replace(tmp, db)
    done = store.done()
    meta = {
        "name": sweep.name,
        "source": sweep.source,
        "switch": sweep.switch,
        "axes": [{"name": d.name, "paths": list(d.paths), "values": [[c for c, _ in step] for step in d.steps]}
                 for d in sweep.dimensions],
        "metrics": sweep.metrics.as_dict(),
        "points": len(points),
        "finished": sum(p.id in done for p in points),
        "complete": complete,
        "columns": table.column_names,
    }
    (out / META).write_text(json.dumps(meta, indent=2) + "\n")
    return out / RESULTS


def load_meta(d: str | Path) -> dict[str, Any]:
    return parse_json(read_input_text(Path(d) / META))
