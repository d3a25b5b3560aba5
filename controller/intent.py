"""What the operator added by hand, kept so ``apply`` stays declarative.

``p4mcc ctl sessions add`` and ``groups add`` record their additions here
(a small JSON file) and then apply the whole desired state; ``del`` removes
them and applies again.  So every write goes through one path, the diff,
and a later ``apply`` keeps hand-added state instead of pruning it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from p4mcc.controller.desired import SessionSpec
from p4mcc.hosts.input_files import parse_json, read_input_text


class IntentError(ValueError):
    """An unreadable or inconsistent intent file."""


@dataclass
class Intent:
    """Sessions and PRE groups added by hand."""

    sessions: dict[int, SessionSpec] = field(default_factory=dict)
    groups: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    """mgid -> switch -> ports."""

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": [
                {**asdict(s), "groups": list(s.groups), "receivers": list(s.receivers)}
                for s in sorted(self.sessions.values(), key=lambda s: s.session_id)
            ],
            "groups": {str(g): {sw: sorted(p) for sw, p in sorted(per.items())} for g, per in sorted(self.groups.items())},
        }


def load_intent(path: Path) -> Intent:
    """The intent stored at ``path`` (empty when the file does not exist)."""
    try:
        raw = parse_json(read_input_text(path))
    except FileNotFoundError:
        return Intent()
    except (OSError, ValueError) as exc:
        raise IntentError(f"{path}: cannot read the controller's intent file: {exc}") from None
    try:
        sessions = {}
        for s in raw.get("sessions", []):
            spec = SessionSpec(
                session_id=int(s["session_id"]),
                source=str(s["source"]),
                groups=tuple(s["groups"]),
                protocol=str(s.get("protocol", "")),
                receivers=tuple(s.get("receivers", ())),
                mode=str(s.get("mode", "auto")),
                filter_window_us=s.get("filter_window_us"),
            )
            sessions[spec.session_id] = spec
        groups = {
            int(g): {str(sw): [int(p) for p in ports] for sw, ports in per.items()}
            for g, per in raw.get("groups", {}).items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IntentError(f"{path}: malformed intent file ({exc})") from None
    return Intent(sessions, groups)


def save_intent(path: Path, intent: Intent) -> None:
    """Write atomically (a crash never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(intent.to_json(), indent=2) + "\n")
    os.replace(tmp, path)
