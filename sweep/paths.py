"""Scenario field paths: ``topology.links[0].rate``, ``sessions[1].params.x``.

An axis of a sweep names the scenario field it varies by the same dotted and
indexed path the scenario reader uses in its error messages, so a user who
has seen ``sessions[1].receivers[0]: unknown host 'h9'`` already knows how to
address a field.  This module parses such a path and writes a value into the
raw (still unvalidated) scenario document; the scenario reader then checks
the result as it checks any file, so a bad value gets the reader's own error.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|(\.)")


class PathError(ValueError):
    """A path that does not name a field of the base scenario."""

    def __init__(self, path: str, msg: str):
        self.path = path
        super().__init__(f"{path}: {msg}")


def parse_path(path: str) -> list[str | int]:
    """``'a.b[2].c'`` -> ``['a', 'b', 2, 'c']``; raises :class:`PathError`."""
    if not isinstance(path, str) or not path:
        raise PathError(str(path), "a field path is a non-empty string like topology.links[0].rate")
    out: list[str | int] = []
    pos = 0
    want_name = True
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            raise PathError(path, f"cannot read the field path at {path[pos:]!r}")
        name, index, dot = m.groups()
        if name is not None:
            if not want_name:
                raise PathError(path, f"expected '.' or '[' before {name!r}")
            out.append(name)
            want_name = False
        elif index is not None:
            if not out:
                raise PathError(path, "a path starts with a field name")
            out.append(int(index))
        else:
            if want_name:
                raise PathError(path, "empty field name")
            want_name = True
        pos = m.end()
    if want_name:
        raise PathError(path, "ends with '.'")
    return out


def _render(parts: list[str | int]) -> str:
    s = ""
    for p in parts:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else p)
    return s


#: List-form links ``[a, b, latency, bandwidth_Mbps]`` (p4lang/tutorials) turn
#: into the mapping form when an axis sets one of their fields.
_LINK_LIST_KEYS = ("a", "b", "delay", "rate")


def _link_as_mapping(raw: list[Any]) -> dict[str, Any]:
    d: dict[str, Any] = {"a": raw[0], "b": raw[1]}
    if len(raw) > 2:
        d["delay"] = raw[2] if isinstance(raw[2], str) else f"{raw[2]}ms"
    if len(raw) > 3 and raw[3] is not None:
        d["rate"] = raw[3] if isinstance(raw[3], str) else f"{raw[3]}Mbps"
    return d


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Write ``value`` at ``path`` in the raw scenario ``doc`` (in place).

    Mappings may gain a new key (the scenario reader rejects unknown fields
    with the list of known ones); list indexes must exist in the base.  The
    error names the part of the path that does not exist.
    """
    parts = parse_path(path)
    node: Any = doc
    for i, key in enumerate(parts[:-1]):
        nxt_key = parts[i + 1]
        node = _step(node, key, parts[: i + 1], create=isinstance(nxt_key, str))
        if isinstance(node, list) and isinstance(nxt_key, str) and _is_link(parts[: i + 1]):
            mapping = _link_as_mapping(node)
            _put(_parent(doc, parts[: i + 1]), key, mapping)
            node = mapping
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(node, list):
            raise PathError(_render(parts), f"{_render(parts[:-1]) or 'the scenario'} is not a list")
        if last >= len(node):
            raise PathError(_render(parts), f"no element {last} (the base has {len(node)})")
        node[last] = value
    else:
        if not isinstance(node, dict):
            raise PathError(_render(parts), f"{_render(parts[:-1]) or 'the scenario'} is not a mapping")
        node[last] = value


def _is_link(parts: list[str | int]) -> bool:
    return len(parts) >= 2 and isinstance(parts[-1], int) and parts[-2] == "links"


def _parent(doc: Any, parts: list[str | int]) -> Any:
    node = doc
    for k in parts[:-1]:
        node = node[k]
    return node


def _put(parent: Any, key: str | int, value: Any) -> None:
    parent[key] = value


def _step(node: Any, key: str | int, upto: list[str | int], create: bool) -> Any:
    where = _render(upto)
    if isinstance(key, int):
        if not isinstance(node, list):
            raise PathError(where, f"{_render(upto[:-1])} is not a list")
        if key >= len(node):
            raise PathError(where, f"no element {key} (the base has {len(node)})")
        return node[key]
    if not isinstance(node, dict):
        raise PathError(where, f"{_render(upto[:-1]) or 'the scenario'} is not a mapping")
    if key not in node or node[key] is None:
        if not create:
            raise PathError(where, "not in the base scenario (a list cannot be created by an axis)")
        node[key] = {}
    return node[key]
