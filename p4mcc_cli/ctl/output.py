"""``p4mcc ctl``: how its results are shown.

Tables, JSON and labels for what the commands read from the switches; no
decisions and no switch access.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from p4mcc.cli.ctl.context import EXIT_ERROR, Ctx

if TYPE_CHECKING:  # pragma: no cover - annotations only
    import finsy as fy

    from p4mcc.controller.desired import Plan
    from p4mcc.controller.fleet import FleetResult
    from p4mcc.controller.state import SwitchState


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout."""
    print(json.dumps(obj, indent=2, sort_keys=False, default=str))


def text_table(headers: list[str], rows: list[list[Any]]) -> str:
    """Left-aligned columns under ``headers``, two spaces apart."""
    cols = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cols]
    return "\n".join(lines)


def faults_exit(res: FleetResult) -> int:
    """Print each failing switch's one-line fault; the exit status (2 if any)."""
    for f in res.faults:
        print(str(f), file=sys.stderr)
    return EXIT_ERROR if res.faults else 0


def group_rows(states: dict[str, SwitchState]) -> list[dict[str, Any]]:
    """One row per PRE group per switch, with the group address and upstream port the tables give it."""
    from p4mcc.controller.program import MCC

    rows = []
    for sw in sorted(states):
        st = states[sw]
        addr: dict[int, tuple[str, int, int]] = {}
        for e in st.entries.values():
            if e.table == MCC.group_tables[0]:
                prm = dict(e.params)
                g = str(ipaddress.IPv4Address(dict(e.match)[MCC.group_key]))
                addr[prm[MCC.group_mgid]] = (g, prm[MCC.group_upstream], prm[MCC.group_has_upstream])
        for g in sorted(st.groups.values(), key=lambda g: g.group_id):
            group, up, has_up = addr.get(g.group_id, ("", None, 0))
            if g.group_id == MCC.flood_mgid and not group:
                group = "(flood)"
            rows.append({"switch": sw, "mgid": g.group_id, "group": group or None,
                         "upstream_port": up if has_up else None, "ports": g.ports})
    return rows


def index_label(ctx: Ctx, sw: str, counter: str, index: int, p: Plan | None) -> str:
    """A counter index as a reader knows it: a port and its peer, a group address, a session."""
    short = counter.rsplit(".", 1)[-1]
    if short.startswith("port_") and ctx.topo is not None and sw in ctx.topo.switches:
        peer = ctx.topo.port_map(sw).get(index)
        return f"p{index}" + (f" ({peer})" if peer else "")
    if short.startswith("group_") and p is not None:
        for g, gi in p.gidx.items():
            if gi == index:
                return g
    if short.startswith("session_") and p is not None:
        for sid, si in p.sidx.items():
            if si == index:
                return f"session {sid}"
    return str(index)


_ADDR_WORDS = ("addr", "group", "tpa", "spa", "ip")


def fmt_value(name: str, width: int, value: Any) -> str:
    """Addresses as addresses (32-bit address fields, 48-bit MACs), the rest in decimal."""
    from p4mcc.controller.finsy_codec import _norm_match

    v = _norm_match(value)
    base, suffix = (v[0], f"/{v[1]}") if isinstance(v, tuple) else (v, "")
    if suffix == f"/{width}":
        suffix = ""
    low = name.rsplit(".", 1)[-1].lower()
    if width == 32 and any(w in low for w in _ADDR_WORDS):
        return f"{ipaddress.IPv4Address(base)}{suffix}"
    if width == 48 and "mac" in low:
        return ":".join(f"{(base >> s) & 0xFF:02x}" for s in range(40, -8, -8)) + suffix
    return f"{base}{suffix}"


def fmt_param(schema: fy.P4Schema, act: fy.P4TableAction, name: str, value: Any) -> str:
    try:
        return fmt_value(name, schema.actions[act.name].params[name].bitwidth, value)
    except Exception:  # noqa: BLE001 - fall back to the raw value
        return str(value)


def format_event(rec: dict[str, Any]) -> str:
    """One event-log record as a line: local time, switch, event, the rest as key=value."""
    t = time.strftime("%H:%M:%S", time.localtime(rec.get("time", 0)))
    rest = " ".join(f"{k}={v}" for k, v in rec.items() if k not in ("time", "switch", "event"))
    return f"{t} {rec.get('switch')} {rec.get('event')} {rest}".rstrip()
