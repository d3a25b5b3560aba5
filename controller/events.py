"""The controller's event log: JSON lines, one event per line.

Events are what the controller learns or does that an operator wants to see
afterwards: membership changes the switches report (digests or packet-ins),
switches connecting, restarting and being restored, another controller
taking primary, switches that cannot be reached.  Each line is a JSON object
with at least ``time`` (Unix seconds), ``switch`` and ``event``.

Membership is never read from registers (BMv2 refuses register reads over
P4Runtime); ``members`` is the fold of the log's membership events, which is
exactly "memberships as the switches reported them".
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

JOIN_WORDS = ("join", "joined", "add", "1")
LEAVE_WORDS = ("leave", "left", "remove", "0")


@dataclass
class EventLog:
    """Appends events to a JSON-lines file and/or hands them to a callback."""

    path: Path | None = None
    sink: Callable[[dict[str, Any]], None] | None = None
    clock: Callable[[], float] = time.time
    _fh: TextIO | None = field(default=None, repr=False)

    def emit(self, switch: str, event: str, **fields: Any) -> dict[str, Any]:
        rec = {"time": round(self.clock(), 6), "switch": switch, "event": event, **fields}
        if self.path is not None:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "a", encoding="utf-8")
            self._fh.write(json.dumps(rec, sort_keys=False, default=_jsonable) + "\n")
            self._fh.flush()
        if self.sink is not None:
            self.sink(rec)
        return rec

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Events of a log file; malformed lines are skipped (a crash mid-write)."""
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield rec


def membership_change(rec: dict[str, Any]) -> tuple[str, str, int, bool] | None:
    """``(switch, group, port, joined)`` for a membership event, else None.

    The controller writes ``group`` (address), ``port`` and ``change``
    (``join``/``leave``); ``joined`` (bool) and integer groups are accepted
    too, so logs written by other tools fold the same way.
    """
    if rec.get("event") != "membership":
        return None
    group = rec.get("group")
    port = rec.get("port", rec.get("ingress_port"))
    if group is None or port is None:
        return None
    if isinstance(group, int):
        group = ".".join(str((group >> s) & 0xFF) for s in (24, 16, 8, 0))
    joined_raw = rec.get("change", rec.get("joined", rec.get("action", rec.get("kind"))))
    if isinstance(joined_raw, bool):
        joined = joined_raw
    elif str(joined_raw).lower() in JOIN_WORDS:
        joined = True
    elif str(joined_raw).lower() in LEAVE_WORDS:
        joined = False
    else:
        return None
    return str(rec.get("switch")), str(group), int(port), joined


def fold_members(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """switch -> group -> member ports, after replaying ``events`` in order.

    A ``restarted`` event clears that switch's memberships (join state lived
    in the switch's registers and is gone).
    """
    members: dict[str, dict[str, set[int]]] = {}
    for rec in events:
        if rec.get("event") == "restarted":
            members.pop(str(rec.get("switch")), None)
            continue
        ch = membership_change(rec)
        if ch is None:
            continue
        sw, group, port, joined = ch
        ports = members.setdefault(sw, {}).setdefault(group, set())
        if joined:
            ports.add(port)
        else:
            ports.discard(port)
    out = {
        sw: {g: sorted(p) for g, p in sorted(groups.items()) if p}
        for sw, groups in sorted(members.items())
    }
    return {sw: groups for sw, groups in out.items() if groups}
