"""The tree design of ``bench/friendliness.py --design trees``: receivers behind different bottlenecks.

Each cell is a root switch with 2-4 branches (``topology: {generate: {kind:
tree}}``, :func:`scenario.shapes.tree`), each branch with its own bottleneck
(rate 1-20 Mb/s, RTT 10-200 ms, drop-tail queue 0.5-2 BDP and at least 10
packets), 0-3 TCP flows and 1-8 receivers, and in some cells one receiver on
a leaf with 0.5-5 % random loss.  24 cells: 16 corners of a two-level
fractional factorial design (2^(8-4), resolution IV: generators E=ABC,
F=BCD, G=ACD, H=ABD) over the contrast between a slow and a fast branch,
and 8 interior cells drawn on log scales from the ranges (fixed seed).

The measure, per cell:

* single-rate protocols (TFMCC, RLA, MTCP, VLMCC): the session's mean
  receiver throughput on the *limiting* branch over that branch's mean TCP
  throughput; the limiting branch is the one with the lowest fair share,
  rate / (TCP flows + 1);
* a cell whose lossy leaf limits more than any branch (the TCP throughput
  equation of RFC 5348 for a TCP flow to that leaf, with TCP's 1460-byte
  segments, is below every branch's fair share): the lossy receiver's
  throughput over that equation, marked ``eq``.  Its R and p are what such
  a flow would meet (:func:`leaf_path`): R the round trip the branch's TCP
  flows measure over the steady window (their srtt: the branch's queue
  included, as RFC 5348 3.1's R is), p the leaf's random loss combined
  with the loss those flows see upstream of it; a branch with no TCP flow
  gives its base round trip and the leaf's loss alone;
* WEBRC (each receiver at its own rate): every branch with TCP is one entry,
  its receivers (the lossy one apart) over its TCP flows, and the lossy
  receiver one more entry against the equation when that is below its
  branch's share.

Also per branch: Jain's index over {the session on that branch, its TCP
flows}, and on the branches that do not limit, the TCP flows' mean over the
branch's fair share: below 0.5 the session took more from that branch's TCP
than a fair share ("harmed").
"""

from __future__ import annotations

import itertools
import math
import re
import random
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from p4mcc.hosts.tfrc import tcp_rate
from p4mcc.scenario.shapes import tree_layout

ACCESS_DELAY = 0.001  # the tree generator's access links (one each side)
PKT = 1500
TCP_SEGMENT = 1460  # the simulator's TCP MSS: the equation's s for a TCP flow on the lossy leaf
PROTOCOLS = ("tfmcc", "webrc", "rla", "mtcp", "vlmcc")
SINGLE_RATE = ("tfmcc", "rla", "mtcp", "vlmcc")
#: Below this share of its branch's fair share, a non-limiting branch's TCP counts as harmed.
HARMED = 0.5


# The design ---------------------------------------------------------------------


def _branch(rate: float, rtt_ms: float, qf: float, tcp: int, receivers: int) -> dict[str, Any]:
    """A branch spec for the tree generator: one-way bottleneck delay from the RTT, queue in BDPs."""
    bdp = rate * 1e6 * rtt_ms / 1e3 / 8 / PKT
    return {"rate": int(rate * 1e6), "delay": round(rtt_ms / 2e3 - 2 * ACCESS_DELAY, 5),
            "queue": max(10, int(round(qf * bdp))), "tcp_pairs": tcp, "receivers": receivers}


def _corner(a: int, b: int, c: int, d: int) -> dict[str, Any]:
    """One corner of the 2^(8-4) design from its four base factors (0/1 each).

    A: which branch has the long round trip (0: the fast one, beside a slow
    short one; 1: the slow one, beside a fast short one); B: slow rate 1 or
    4 Mb/s (fast: 16 or 20); C: short RTT 10 or 30 ms; D: long RTT 80 or
    200 ms; E=ABC: TCP flows on the slow branch 1 or 3 (fast: 2 or 0);
    F=BCD: receivers slow 1 / fast 8, or the reverse; G=ACD: queue 0.5 or 2
    BDP; H=ABD: a lossy leaf on the fast branch (5 % when that branch has
    the long round trip, where the equation limits below the slow branch's
    share; 2 % on the short one, where it does not).  Two more branches when A != B (one) and C != D (two):
    6 Mb/s 50 ms and 8 Mb/s 120 ms, with 1 and 2 TCP flows."""
    e, f, g, h = a ^ b ^ c, b ^ c ^ d, a ^ c ^ d, a ^ b ^ d
    slow, fast = (1.0, 16.0) if b == 0 else (4.0, 20.0)
    short, long_ = (10.0, 30.0)[c], (80.0, 200.0)[d]
    qf = (0.5, 2.0)[g]
    rtt_slow, rtt_fast = (short, long_) if a == 0 else (long_, short)
    branches = [_branch(slow, rtt_slow, qf, (1, 3)[e], (1, 8)[f]),
                _branch(fast, rtt_fast, qf, (2, 0)[e], (8, 1)[f])]
    if a != b:
        branches.append(_branch(6.0, 50.0, qf, 1, 2))
    if c != d:
        branches.append(_branch(8.0, 120.0, qf, 2, 4))
    lossy = {"branch": 2, "loss": 0.05 if rtt_fast > rtt_slow else 0.02} if h else None
    return {"branches": branches, "lossy_leaf": lossy}


def _log(rng: random.Random, lo: float, hi: float) -> float:
    return lo * (hi / lo) ** rng.random()


def _drawn_tree(rng: random.Random, nb: int, lossy: bool) -> dict[str, Any]:
    """A tree drawn from the design's ranges (each factor on its scale); the
    lowest-rate branch gets at least one TCP flow, so the limiting branch has one."""
    specs = []
    for _ in range(nb):
        specs.append([round(_log(rng, 1, 20), 2), round(_log(rng, 10, 200), 1), _log(rng, 0.5, 2),
                      rng.randint(0, 3), int(round(_log(rng, 1, 8)))])
    slowest = min(range(nb), key=lambda i: specs[i][0])
    specs[slowest][3] = max(1, specs[slowest][3])
    branches = [_branch(*s) for s in specs]
    leaf = {"branch": rng.randint(1, nb), "loss": round(_log(rng, 0.005, 0.05), 4)} if lossy else None
    return {"branches": branches, "lossy_leaf": leaf}


def design() -> list[dict[str, Any]]:
    """24 cells: the 16 corners, then 8 interior trees (2, 3, 4 branches in turn; 3 with a lossy leaf)."""
    cells = [_corner(*bits) for bits in itertools.product((0, 1), repeat=4)]
    rng = random.Random(62)
    cells += [_drawn_tree(rng, 2 + i % 3, i in (1, 4, 6)) for i in range(8)]
    return cells


def drawn(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` trees drawn off the design (``random.Random(seed)``): 2-4 branches, a lossy leaf in one of three."""
    rng = random.Random(seed)
    return [_drawn_tree(rng, rng.randint(2, 4), rng.random() < 1 / 3) for _ in range(n)]


#: ``--quick``: the issue's failing shape (fast branch at ~2.7x the slow one's
#: RTT), its reverse, a three-branch tree with a limiting lossy leaf, and a
#: four-branch tree (all at most 10 Mb/s per branch, so short and cheap).
QUICK_CELLS = [
    {"branches": [_branch(2, 30, 1.0, 1, 2), _branch(10, 80, 1.0, 1, 2)], "lossy_leaf": None},
    {"branches": [_branch(2, 120, 1.0, 1, 2), _branch(10, 20, 1.0, 1, 2)], "lossy_leaf": None},
    {"branches": [_branch(4, 40, 1.0, 1, 2), _branch(8, 60, 0.5, 2, 2), _branch(6, 20, 2.0, 0, 3)],
     "lossy_leaf": {"branch": 2, "loss": 0.05}},
    {"branches": [_branch(1.5, 15, 2.0, 1, 1), _branch(6, 150, 0.5, 2, 4), _branch(10, 40, 1.0, 3, 2),
                  _branch(5, 100, 1.0, 0, 2)], "lossy_leaf": None},
]


def rtt_ms(branch: dict[str, Any]) -> float:
    return 2e3 * (branch["delay"] + 2 * ACCESS_DELAY)


def share(branch: dict[str, Any]) -> float:
    """The branch's fair share, bits/s: rate / (TCP flows + 1)."""
    return branch["rate"] / (branch["tcp_pairs"] + 1)


def leaf_equation(cell: dict[str, Any], path: tuple[float, float] | None = None) -> float | None:
    """RFC 5348's TCP throughput for a TCP flow to the lossy leaf, bits/s (None: no leaf).

    ``path`` is (round trip s, upstream loss) as the leaf's branch's TCP flows
    measure them (:func:`leaf_path`); None gives the branch's base round trip
    and no upstream loss, the most the leaf could give."""
    leaf = cell.get("lossy_leaf")
    if not leaf:
        return None
    rtt_s, upstream = path or (rtt_ms(cell["branches"][leaf["branch"] - 1]) / 1e3, 0.0)
    loss = 1 - (1 - leaf["loss"]) * (1 - upstream)
    return 8 * tcp_rate(TCP_SEGMENT, rtt_s, loss)


def leaf_path(flows: list[str], paths: dict[str, tuple[float | None, float | None]]) -> tuple[float, float] | None:
    """The (round trip s, loss) a TCP flow to the lossy leaf would meet before
    the leaf: the means over ``flows``, the TCP flows of the leaf's branch
    (``paths``: flow -> steady srtt, steady loss), or None when the branch
    carries none or they measured nothing."""
    mine = [paths.get(f) for f in flows]
    rtts = [m[0] for m in mine if m and m[0]]
    losses = [m[1] for m in mine if m and m[1] is not None]
    if not rtts:
        return None
    return statistics.fmean(rtts), statistics.fmean(losses) if losses else 0.0


def branch_flows(layout: list[dict[str, Any]]) -> list[list[str]]:
    """Each branch's TCP flow names, as the sweep names them (tcp1, tcp2, ... in layout order)."""
    out, i = [], 0
    for names in layout:
        out.append([f"tcp{i + j}" for j in range(1, len(names["tcp"]) + 1)])
        i += len(names["tcp"])
    return out


def describe(cell: dict[str, Any]) -> str:
    """One line per cell: each branch as rate/RTT/queue/TCP/receivers, and the lossy leaf."""
    parts = [f"{b['rate'] / 1e6:g}M/{rtt_ms(b):g}ms/q{b['queue']}/t{b['tcp_pairs']}/r{b['receivers']}"
             for b in cell["branches"]]
    leaf = cell.get("lossy_leaf")
    if leaf:
        parts.append(f"leaf b{leaf['branch']} {leaf['loss']:.1%}")
    return "; ".join(parts)


# The sweep --------------------------------------------------------------------


def _tcp_flows(cell: dict[str, Any]) -> list[dict[str, Any]]:
    layout = tree_layout(cell["branches"])
    return [{"name": name, "src": src, "dst": dst}
            for names, flows in zip(layout, branch_flows(layout)) for name, (src, dst) in zip(flows, names["tcp"])]


def run_length(cell: dict[str, Any], floor: float, epochs: int) -> float:
    """``floor`` seconds, or longer where a branch's TCP flows need it for ``epochs`` congestion
    epochs in the second half (``bench.friendliness.run_length`` per branch; 0: ``floor``)."""
    from bench.friendliness import run_length as dumbbell_length

    return max([floor] + [dumbbell_length({"rate_mbps": b["rate"] / 1e6, "rtt_ms": rtt_ms(b), "queue": b["queue"],
                                           "tcp": b["tcp_pairs"]}, floor, epochs)
                          for b in cell["branches"] if epochs and b["tcp_pairs"]])


def sweep_doc(cells: list[dict[str, Any]], seeds: list[int], duration: float, name: str,
              protocols: tuple[str, ...] = PROTOCOLS, switch: str = "p4",
              variant: dict[str, Any] | None = None, epochs: int = 0) -> dict[str, Any]:
    """The sweep file: one zipped group over (protocol, cell), crossed with the seeds.

    WEBRC's session rate is twice the fastest branch's rate (its own ceiling
    well above any fair share); ``variant`` (``profile``, ``rules``) is set on
    the session of every point (a column of the cell group: each point's
    rules are checked against its own protocol); ``epochs``: a cell runs
    longer than ``duration`` where its branches' TCP flows need it
    (``run_length``)."""
    cols: dict[str, list[Any]] = defaultdict(list)
    for proto in protocols:
        for c in cells:
            top = max(b["rate"] for b in c["branches"])
            cols["sessions[0].protocol"].append(proto)
            cols["sessions[0].params"].append({"session_rate_bps": 2 * top} if proto == "webrc" else {})
            cols["topology.generate.branches"].append(c["branches"])
            cols["topology.generate.lossy_leaf"].append(c["lossy_leaf"])
            cols["tcp_flows"].append(_tcp_flows(c))
            for k, v in (variant or {}).items():
                cols[f"sessions[0].{k}"].append(v)
            if epochs:
                cols["duration"].append(run_length(c, duration, epochs))
    session: dict[str, Any] = {"name": "mc", "protocol": "tfmcc", "sender": "snd1", "receivers": ["r*"]}
    return {
        "name": name,
        "description": "tree design of bench/friendliness.py --design trees",
        "switch": switch,
        "base": {
            "name": name,
            "duration": duration,
            "steady_window": 0.5,
            "topology": {"generate": {"kind": "tree", "branches": [{"tcp_pairs": 1}, {}]}},
            "sessions": [session],
            "tcp_flows": [{"name": "tcp1", "src": "tsrc1", "dst": "tdst1"}],
        },
        "axes": {"cell": {"zip": dict(cols)}, "seed": seeds},
        "metrics": {"kinds": ["session", "receiver", "tcp"], "windows": ["steady"]},
    }


# The measure --------------------------------------------------------------------


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def point_entries(cell: dict[str, Any], proto: str, rcv: dict[str, float],
                  tcp: dict[str, float],
                  paths: dict[str, tuple[float | None, float | None]] | None = None) -> dict[str, Any]:
    """The measure of one run: entries (one for a single-rate protocol, one per
    branch with TCP for WEBRC), per-branch Jain and the non-limiting branches' TCP over their share.

    ``rcv``: receiver -> steady throughput; ``tcp``: flow name -> steady
    throughput (bits/s); ``paths``: flow name -> (steady srtt s, steady loss),
    for the lossy leaf's equation (:func:`leaf_path`)."""
    branches = cell["branches"]
    layout = tree_layout(branches)
    leaf = cell.get("lossy_leaf")
    lossy_rcv = layout[leaf["branch"] - 1]["receivers"][-1] if leaf else None
    flow_names = branch_flows(layout)
    per_branch = []
    for b, names, fnames in zip(branches, layout, flow_names):
        sess = [rcv.get(r, 0.0) for r in names["receivers"] if r != lossy_rcv]
        flows = [tcp.get(f, 0.0) for f in fnames]
        s_mean = statistics.fmean(sess) if sess else None
        t_mean = statistics.fmean(flows) if flows else None
        shares = ([s_mean] if s_mean is not None else []) + flows
        sq = sum(x * x for x in shares)
        per_branch.append({"session": s_mean, "tcp": t_mean, "share": share(b), "rtt_ms": rtt_ms(b),
                           "rate_mbps": b["rate"] / 1e6,
                           "jain": sum(shares) ** 2 / (len(shares) * sq) if flows and sq > 0 else None})
    eq = leaf_equation(cell, leaf_path(flow_names[leaf["branch"] - 1], paths or {}) if leaf else None)
    lossy_tp = rcv.get(lossy_rcv, 0.0) if lossy_rcv else None
    limiting = min(range(len(branches)), key=lambda i: per_branch[i]["share"])
    entries = []
    max_rtt = max(pb["rtt_ms"] for pb in per_branch)
    if proto in SINGLE_RATE:
        pb = per_branch[limiting]
        if eq is not None and eq < pb["share"]:
            entries.append({"ratio": _ratio(lossy_tp or 0.0, eq), "against": "eq", "branch": leaf["branch"],
                            "rtt_ms": per_branch[leaf["branch"] - 1]["rtt_ms"]})
        else:
            # the limiting branch's session mean: its lossy receiver too if it is the only one
            s = pb["session"] if pb["session"] is not None else lossy_tp or 0.0
            against = "tcp" if pb["tcp"] else "link"
            entries.append({"ratio": _ratio(s, pb["tcp"] or pb["share"]), "against": against,
                            "branch": limiting + 1, "rtt_ms": pb["rtt_ms"]})
    else:
        for i, pb in enumerate(per_branch):
            if pb["tcp"] and pb["session"] is not None:
                entries.append({"ratio": _ratio(pb["session"], pb["tcp"]), "against": "tcp",
                                "branch": i + 1, "rtt_ms": pb["rtt_ms"]})
        if eq is not None and eq < per_branch[leaf["branch"] - 1]["share"]:
            entries.append({"ratio": _ratio(lossy_tp or 0.0, eq), "against": "eq", "branch": leaf["branch"],
                            "rtt_ms": per_branch[leaf["branch"] - 1]["rtt_ms"]})
    for e in entries:
        e["rtt_spread"] = max_rtt / e["rtt_ms"]
    others = [pb["tcp"] / pb["share"] for i, pb in enumerate(per_branch)
              if i != limiting and pb["tcp"] is not None]
    return {"entries": entries, "limiting": limiting + 1, "jain": [pb["jain"] for pb in per_branch],
            "fast_tcp": min(others) if others else None}


def points(rows: list[dict[str, Any]], cells_by_key: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One measure per sweep point (run) from the results table's rows."""
    by_point: dict[int, dict[str, Any]] = {}
    rcv: dict[int, dict[str, float]] = defaultdict(dict)
    tcp: dict[int, dict[str, float]] = defaultdict(dict)
    paths: dict[int, dict[str, tuple[float | None, float | None]]] = defaultdict(dict)
    for r in rows:
        v = r.get("steady_throughput_bps") or 0.0
        if r["kind"] == "session":
            by_point[r["point"]] = r
        elif r["kind"] == "receiver":
            rcv[r["point"]][r["node"]] = v
        elif r["kind"] == "tcp":
            tcp[r["point"]][r["flow"]] = v
            paths[r["point"]][r["flow"]] = (r.get("steady_rtt_s"), r.get("steady_loss"))
    out = []
    for p, r in sorted(by_point.items()):
        cell = cells_by_key[cell_key(r["topology.generate.branches"], r["topology.generate.lossy_leaf"])]
        m = point_entries(cell, r["protocol"], rcv[p], tcp[p], paths[p])
        out.append({"protocol": r["protocol"], "seed": r["seed"], "cell": cell, **m,
                    "stalls": r.get("stalls") or 0})  # netsim/liveness.py
    return out


def cell_key(branches: Any, leaf: Any) -> str:
    """A cell's identity in the results table (its branches and leaf; the table holds them as JSON)."""
    import json

    branches = json.loads(branches) if isinstance(branches, str) else branches
    leaf = json.loads(leaf) if isinstance(leaf, str) else leaf

    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in sorted(x.items()) if v is not None}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        if isinstance(x, float) and x.is_integer():
            return int(x)
        return x

    return json.dumps([plain(branches), plain(leaf) if leaf else None], sort_keys=True)


def per_cell(pts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """protocol -> cells, each entry's ratio averaged over the seeds.

    Whether the lossy leaf limits is decided per run (its equation uses what
    the run's TCP flows measured); a cell's entries are those most of its
    seeds chose, averaged over those seeds (the first seed's on a tie)."""
    acc: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for p in pts:
        acc[(p["protocol"], cell_key(p["cell"]["branches"], p["cell"]["lossy_leaf"]))].append(p)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def kinds(p: dict[str, Any]) -> tuple[tuple[str, int], ...]:
        return tuple((e["against"], e["branch"]) for e in p["entries"])

    for (proto, _), ps in acc.items():
        votes = [kinds(p) for p in ps]
        chosen = max(votes, key=votes.count)
        same = [p for p in ps if kinds(p) == chosen]
        entries = []
        for j, e in enumerate(same[0]["entries"]):
            rs = [p["entries"][j]["ratio"] for p in same if p["entries"][j]["ratio"] is not None]
            entries.append({**e, "ratio": statistics.fmean(rs) if rs else 0.0})
        jains = [[p["jain"][i] for p in ps if p["jain"][i] is not None] for i in range(len(ps[0]["jain"]))]
        fast = [p["fast_tcp"] for p in ps if p["fast_tcp"] is not None]
        out[proto].append({"cell": ps[0]["cell"], "entries": entries, "limiting": ps[0]["limiting"],
                           "jain": [statistics.fmean(j) if j else None for j in jains],
                           "fast_tcp": statistics.fmean(fast) if fast else None, "seeds": len(ps),
                           "stalls": sum(p.get("stalls", 0) for p in ps)})
    return out


def _worst(xs: list[float]) -> float:
    return max(xs, key=lambda x: abs(math.log(x)) if x > 0 else math.inf)


def summary_rows(cells: dict[str, list[dict[str, Any]]], order: tuple[str, ...] = PROTOCOLS) -> list[dict[str, Any]]:
    """Per protocol (or variant, in ``order``) over its entries: median, worst, share in [0.5, 2],
    the limiting branch's Jain (median), the entries against the equation, and harmed fast branches."""
    rows = []
    for proto in order:
        cs = cells.get(proto, [])
        if not cs:
            continue
        ratios = [e["ratio"] for c in cs for e in c["entries"]]
        if not ratios:
            continue
        lim_jain = [c["jain"][c["limiting"] - 1] for c in cs if c["jain"][c["limiting"] - 1] is not None]
        fast = [c["fast_tcp"] for c in cs if c["fast_tcp"] is not None]
        rows.append({"protocol": proto, "cells": len(cs), "entries": len(ratios),
                     "median": statistics.median(ratios), "worst": _worst(ratios),
                     "in_bound": sum(0.5 <= x <= 2 for x in ratios) / len(ratios),
                     "eq": sum(e["against"] == "eq" for c in cs for e in c["entries"]),
                     "jain": statistics.median(lim_jain) if lim_jain else None,
                     "fast_tcp_min": min(fast) if fast else None,
                     "harmed": sum(x < HARMED for x in fast), "fast_cells": len(fast),
                     "stalls": sum(c.get("stalls", 0) for c in cs)})
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| protocol | cells (entries) | median ratio | worst ratio | entries in [0.5, 2] "
             "| of which against the equation | Jain, limiting branch (median) "
             "| other branches' TCP / fair share, min (cells harmed) | stalls |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        jain = "-" if r["jain"] is None else f"{r['jain']:.3f}"
        fast = "-" if r["fast_tcp_min"] is None else f"{r['fast_tcp_min']:.2f} ({r['harmed']} of {r['fast_cells']})"
        lines.append(f"| {r['protocol']} | {r['cells']} ({r['entries']}) | {r['median']:.2f} | {r['worst']:.2f} "
                     f"| {r['in_bound']:.0%} | {r['eq']} | {jain} | {fast} | {r.get('stalls', 0)} |")
    return "\n".join(lines)


def cell_lines(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every cell of every protocol: its entries (``eq``: against the equation) and per-branch Jain."""
    out = []
    for proto in PROTOCOLS:
        for c in cells.get(proto, []):
            ents = " ".join(f"b{e['branch']}{'(eq)' if e['against'] == 'eq' else '(link)' if e['against'] == 'link' else ''}"
                            f"={e['ratio']:.2f}" for e in c["entries"])
            jain = "/".join("-" if j is None else f"{j:.2f}" for j in c["jain"])
            fast = "-" if c["fast_tcp"] is None else f"{c['fast_tcp']:.2f}"
            out.append(f"{proto:6} {describe(c['cell'])}: {ents}; limiting b{c['limiting']}; "
                       f"Jain {jain}; other TCP/share {fast}")
    return out


def markdown_cells(cells: dict[str, list[dict[str, Any]]], order: tuple[str, ...] = PROTOCOLS) -> str:
    lines = ["| protocol | cell (rate/RTT/queue/TCP/receivers per branch; lossy leaf) | ratio(s) "
             "| limiting | Jain per branch | other TCP / share |", "|---|---|---|---|---|---|"]
    for proto in order:
        for c in cells.get(proto, []):
            ents = ", ".join(f"b{e['branch']} {e['ratio']:.2f}" + (" (eq)" if e["against"] == "eq" else "")
                             for e in c["entries"])
            jain = " / ".join("-" if j is None else f"{j:.2f}" for j in c["jain"])
            fast = "-" if c["fast_tcp"] is None else f"{c['fast_tcp']:.2f}"
            lines.append(f"| {proto} | {describe(c['cell'])} | {ents} | b{c['limiting']} | {jain} | {fast} |")
    return "\n".join(lines)


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for col in ("protocol", "cells (entries)", "median", "worst", "in [0.5, 2]", "vs eq", "Jain lim.",
                "other TCP/share min", "harmed", "stalls"):
        t.add_column(col, justify="left" if col == "protocol" else "right")
    for r in rows:
        t.add_row(r["protocol"], f"{r['cells']} ({r['entries']})", f"{r['median']:.2f}", f"{r['worst']:.2f}",
                  f"{r['in_bound']:.0%}", str(r["eq"]), "-" if r["jain"] is None else f"{r['jain']:.3f}",
                  "-" if r["fast_tcp_min"] is None else f"{r['fast_tcp_min']:.2f}",
                  f"{r['harmed']} of {r['fast_cells']}", str(r.get("stalls", 0)))
    Console(width=160).print(t)


def draw(cells: dict[str, list[dict[str, Any]]], out: Path, tag: str) -> list[Path]:
    """One heatmap per protocol: each entry by its branch's RTT and the tree's RTT
    spread (longest RTT / the branch's), coloured by the ratio; squares are against the equation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for proto, cs in sorted(cells.items()):
        fig, ax = plt.subplots(figsize=(5.6, 4.4))
        sc = None
        for marker, against in (("o", ("tcp", "link")), ("s", ("eq",))):
            es = [e for c in cs for e in c["entries"] if e["against"] in against]
            if not es:
                continue
            sc = ax.scatter([e["rtt_ms"] for e in es], [e["rtt_spread"] for e in es],
                            c=[min(max(e["ratio"], 1 / 16), 16) for e in es], marker=marker, s=60,
                            cmap="RdBu_r", norm=LogNorm(vmin=1 / 8, vmax=8), edgecolors="k", linewidths=0.5)
            for e in es:
                ax.annotate(f"{e['ratio']:.2f}", (e["rtt_ms"], e["rtt_spread"]), textcoords="offset points",
                            xytext=(0, 8), ha="center", fontsize=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(8, 250)
        ax.set_ylim(0.8, 30)
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(plain)
        ax.set_xlabel("RTT of the measured branch, ms")
        ax.set_ylabel("longest RTT in the tree / the branch's")
        ax.set_title(f"{proto}: ratio to TCP on trees (squares: lossy leaf vs RFC 5348)\n{tag}", fontsize=8)
        if sc is not None:
            bar = fig.colorbar(sc, label="session / TCP throughput")
            ticks = [1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8]
            bar.set_ticks(ticks, labels=["1/8", "1/4", "1/2", "1", "2", "4", "8"])
            bar.minorticks_off()
        fig.tight_layout()
        f = out / f"friendliness-trees-{re.sub(r'[^a-z0-9_-]+', '-', proto)}.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files


def docs_body(rows: list[dict[str, Any]], cells: dict[str, list[dict[str, Any]]], tag: str,
              images: list[Path], order: tuple[str, ...] = PROTOCOLS) -> str:
    """The ``friendliness-trees`` section of docs/friendliness.md."""
    pics = "\n".join(f"![{p.stem}](img/{p.name})" for p in images)
    return (f"Tree design ({tag}; steady state = second half).\n\n{markdown_table(rows)}\n\n{pics}\n\n"
            f"<details><summary>Every cell</summary>\n\n{markdown_cells(cells, order)}\n\n</details>\n")


# The command ------------------------------------------------------------------------


def chosen_cells(args: Any) -> list[dict[str, Any]]:
    """The cells of ``--design trees`` for the command's options (``--quick``, ``--cells``, ``--draw``)."""
    if args.draw:
        return drawn(args.draw, args.draw_seed)
    cells = QUICK_CELLS if args.quick else design()
    if args.cells:
        try:
            cells = [cells[int(i)] for i in args.cells.split(",")]
        except (ValueError, IndexError):
            raise SystemExit(f"friendliness: --cells: indices 0-{len(cells) - 1} expected, got {args.cells!r}")
    return cells


def rule_switches(specs: list[str] | None) -> dict[str, bool]:
    """``--rule NAME=on|off`` options (the friendliness and fault benches) as rule name -> on, read
    as ``p4mcc host --rule`` reads them; ValueError names a bad one."""
    from p4mcc.hosts.cli import rule_switches as switch_pairs
    from p4mcc.hosts.registry import ParamError
    from p4mcc.hosts.rules import RuleError, parse_switch

    try:
        return {name: parse_switch(name, value) for name, value in switch_pairs(specs or []).items()}
    except (ParamError, RuleError) as e:
        raise ValueError(str(e)) from None


def session_variant(args: Any) -> dict[str, Any]:
    """``--profile`` and ``--rule NAME=on|off`` as the session's profile and rules."""
    out: dict[str, Any] = {}
    if args.profile:
        out["profile"] = args.profile
    try:
        rules = rule_switches(args.rule)
    except ValueError as e:
        raise SystemExit(f"friendliness: {e}") from None
    if rules:
        out["rules"] = {name: "on" if on else "off" for name, on in rules.items()}
    return out


def run(args: Any, argv: list[str], root: Path) -> int:
    """``bench/friendliness.py --design trees``: write the sweep, run it through ``p4mcc sweep``, print, draw."""
    import subprocess
    import sys

    import pyarrow.parquet as pq
    import yaml

    protocols = tuple(p.strip() for p in args.protocols.split(",")) if args.protocols else PROTOCOLS
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        raise SystemExit(f"friendliness: --protocols: unknown {', '.join(unknown)} (known: {', '.join(PROTOCOLS)})")
    cells = chosen_cells(args)
    seeds = list(range(1, (args.seeds or (1 if args.quick else 3)) + 1))
    duration = args.duration or (60.0 if args.quick else 100.0)
    variant = session_variant(args)
    stem = "friendliness-trees" + ("-quick" if args.quick else "") + (
        f"-draw{args.draw}-seed{args.draw_seed}" if args.draw else "")
    out = Path(args.out or root / "results" / "sweeps" / stem)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "trees.yaml"
    doc = sweep_doc(cells, seeds, duration, stem, protocols, args.switch, variant, epochs=args.epochs)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    cmd = [sys.executable, "-m", "p4mcc.cli.main", "sweep", str(path), "--out", str(out)]
    if args.scheduler:
        cmd += ["--scheduler", args.scheduler]
    if subprocess.run(cmd).returncode != 0:
        print("friendliness: p4mcc sweep failed; run it again to resume", file=sys.stderr)
        return 1
    rows = pq.read_table(out / "results.parquet").to_pylist()
    by_key = {cell_key(c["branches"], c["lossy_leaf"]): c for c in cells}
    wanted = {(p, cell_key(c["branches"], c["lossy_leaf"])) for p in protocols for c in cells}
    rows = [r for r in rows if r["seed"] in seeds and r["protocol"] in protocols or r["kind"] != "session"]
    pts = [p for p in points([r for r in rows if _in_cells(r, by_key)], by_key)
           if (p["protocol"], cell_key(p["cell"]["branches"], p["cell"]["lossy_leaf"])) in wanted]
    cells_out = per_cell(pts)
    tag = (f"{args.draw} drawn trees, seed {args.draw_seed}" if args.draw
           else f"{len(cells)} {'quick ' if args.quick else ''}tree cells") + (
        f", {len(seeds)} seed{'s' if len(seeds) > 1 else ''}, {duration:g} s runs, {args.switch} switches"
        + (f", {variant}" if variant else ""))
    if args.per_cell:
        print("\n".join(cell_lines(cells_out)))
    summary = summary_rows(cells_out)
    print_table(summary, f"TCP-friendliness on trees ({tag}; steady state = second half)")
    img = root / "docs" / "img" if args.docs else out / "plots"
    files = draw(cells_out, img, tag)
    print(f"pictures: {', '.join(str(f) for f in files)}")
    if args.docs:
        from bench.docsection import write_section

        page = root / "docs" / "friendliness.md"
        write_section(page, "friendliness-trees", docs_body(summary, cells_out, tag, files),
                      "bench/friendliness.py " + " ".join(argv))
        print(f"wrote the friendliness-trees section of {page.relative_to(root)}")
    return 0


def _in_cells(row: dict[str, Any], by_key: dict[str, dict[str, Any]]) -> bool:
    """The row belongs to one of the chosen cells (a resumed folder may hold others)."""
    return cell_key(row.get("topology.generate.branches"), row.get("topology.generate.lossy_leaf")) in by_key
