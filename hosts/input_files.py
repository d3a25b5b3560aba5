"""Reading a file a user names, without trusting what it is.

Every command that reads a user's file (a scenario, a topology, a sweep, a
P4 source, an STF file, an agent's parameter file) goes through here, the
lowest layer, so each has the same guard: a device such as ``/dev/zero``,
a FIFO or a huge file would otherwise be read until memory runs out, and
errors say what is wrong, never what the file holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_INPUT_BYTES = 16 << 20
"""Largest input file read: far above any real one (p4src/mcc.p4 with its
includes is ~100 kB, the largest scenario a few kB)."""


def input_file_problem(path: str | Path, limit: int = MAX_INPUT_BYTES) -> str | None:
    """Why ``path`` cannot be read as an input file, or None.

    Checked before reading.  A missing file is left to the reader's own
    message (None here).
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file"
    if st.st_size > limit:
        return f"{path}: {st.st_size} bytes, more than the {limit >> 20} MiB an input file may have"
    return None


def read_input_text(path: str | Path, limit: int = MAX_INPUT_BYTES) -> str:
    """A regular file's UTF-8 text, at most ``limit`` bytes.

    Raises OSError when the file cannot be opened, ValueError (without the
    path, which the caller names) when it is not a regular file, too large
    or not UTF-8.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    if st.st_size > limit:
        raise ValueError(f"{st.st_size} bytes, more than the {limit >> 20} MiB an input file may have")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise ValueError(f"more than the {limit >> 20} MiB an input file may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte {e.start})") from None


class DuplicateKey(ValueError):
    """A key given twice in one mapping of a user's file (``key``)."""

    def __init__(self, key: Any) -> None:
        super().__init__(f"key {key!r} given twice")
        self.key = key


def json_pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that raises :class:`DuplicateKey`
    where the parser would keep the last of two values silently."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


MAX_NESTING = 64
"""Deepest nesting of lists and mappings in a user's file: real scenarios,
sweeps and parameter files nest about six deep, and a deeper one is refused
before any code walks it recursively (Python's recursion limit would
otherwise end the command with a traceback)."""


def nesting_depth(data: Any, limit: int = MAX_NESTING) -> int:
    """How deep lists and mappings nest in ``data``, counted up to ``limit + 1``
    (iteratively: the point is to stop what would recurse too deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def check_nesting(data: Any, limit: int = MAX_NESTING) -> Any:
    """``data`` itself, or ValueError when it nests deeper than ``limit``."""
    if nesting_depth(data, limit) > limit:
        raise ValueError(f"nested deeper than {limit} levels")
    return data


def parse_json(text: str) -> Any:
    """JSON from a user's file: a key given twice is :class:`DuplicateKey`,
    nesting beyond :data:`MAX_NESTING` (even deep enough to exhaust the
    parser's recursion) is ValueError; syntax errors stay ``JSONDecodeError``."""
    import json

    try:
        data = json.loads(text, object_pairs_hook=json_pairs_once)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels") from None
    return check_nesting(data)
