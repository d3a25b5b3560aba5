"""Reading a scenario, topology or sweep file into plain data, within budgets.

A user's file is data: mappings, lists, text, numbers, booleans and null.
Everything else YAML can say (``!!binary``, ``!!set``, ``!!timestamp``, a
Python object) is refused, and an unquoted date stays text.  The document
is measured before it is built: more than :data:`MAX_LINES` lines, or more
than :data:`MAX_VALUES` values (what aliases repeat counted each time it is
repeated), or nesting deeper than :data:`MAX_NESTING`, is refused from the
parser's event stream, so a huge file costs a count, never the objects it
would build.  Errors give a position or a count, never the file's text.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from p4mcc.hosts.input_files import MAX_NESTING, DuplicateKey, check_nesting, parse_json, read_input_text

MAX_LINES = 20_000
"""Most lines in one file: ten times the largest shipped (a 1,785-line sweep)."""
MAX_VALUES = 50_000
"""Most values (keys, scalars, lists, mappings) in one document, aliases
expanded: 15 times the largest shipped file's (3,189), and what the reader
builds in well under a second."""

_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map"))
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def read_document(path: Path) -> Any:
    """A scenario, topology or sweep file's data (JSON by suffix, else YAML).

    ValueError says what is wrong and where (line and column, or a count),
    never what the file holds.  A key given twice in one mapping is an
    error: YAML and JSON parsers keep the last silently, so a second
    ``duration:`` or a session's ``params:`` repeated below would quietly
    replace the first.
    """
    text = read_input_text(path)
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > MAX_LINES:
        raise ValueError(f"{lines} lines, more than the {MAX_LINES} a scenario file may have")
    try:
        if path.suffix.lower() == ".json":
            return _parse_json(text)
        return check_nesting(_parse_yaml(text))
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels") from None


def _parse_json(text: str) -> Any:
    # Every value but a document's first is preceded by ',' or ':' or opens
    # with '[' or '{', so this count (characters inside strings included) is
    # at least the number of values: a bound the parser never has to reach.
    upper = 1 + sum(text.count(c) for c in ",:[{")
    if upper > 2 * MAX_VALUES:
        values = _json_values(text)
        if values > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES} values in one document")
    try:
        return parse_json(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid YAML/JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except DuplicateKey as e:
        raise ValueError(f"not valid YAML/JSON: key{_key_named(e.key)} given twice in one object") from None


def _json_values(text: str) -> int:
    """Values in a JSON text, counted by its structure outside strings (C speed:
    strings are cut out by one regular expression first)."""
    bare = _JSON_STRING.sub('""', text)
    return 1 + sum(bare.count(c) for c in ",:")


def _parse_yaml(text: str) -> Any:
    import yaml

    try:
        measure_yaml(text)
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader of plain data only
    except yaml.MarkedYAMLError as e:
        if "nesting depth" in str(e.problem):  # libyaml's own bound, past ours
            raise ValueError(f"nested deeper than {MAX_NESTING} levels") from None
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"not valid YAML/JSON{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"not valid YAML/JSON: {type(e).__name__}") from None


def measure_yaml(text: str) -> int:
    """The values a YAML text would build, aliases expanded; ValueError past
    :data:`MAX_VALUES` or :data:`MAX_NESTING`, or for a tag that is not plain data.

    Reads only the parser's events (libyaml when present): nothing is built."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    sizes: dict[str, int] = {}  # anchor -> the values its node holds
    open_: list[list[Any]] = []  # [anchor, values so far] per open list or mapping
    total = 0
    for ev in yaml.parse(text, Loader=loader):
        if isinstance(ev, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            tag = ev.tag
            if tag not in (None, "!") and tag not in _PLAIN_TAGS:
                mark = ev.start_mark
                raise ValueError(f"line {mark.line + 1}, column {mark.column + 1}: tag {_tag_named(tag)} "
                                 "is not plain data (mappings, lists, text, numbers, booleans, null)")
        if isinstance(ev, yaml.CollectionStartEvent):
            open_.append([ev.anchor, 1])
            if len(open_) > MAX_NESTING:
                raise ValueError(f"nested deeper than {MAX_NESTING} levels")
            n = 1
        elif isinstance(ev, yaml.CollectionEndEvent):
            anchor, n = open_.pop()
            if anchor is not None:
                sizes[anchor] = n
            if open_:
                open_[-1][1] += n
            continue
        elif isinstance(ev, yaml.ScalarEvent):
            n = 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
            if open_:
                open_[-1][1] += 1
        elif isinstance(ev, yaml.AliasEvent):
            n = sizes.get(ev.anchor, 1)
            if open_:
                open_[-1][1] += n
        else:
            continue
        total += n
        if total > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES} values in one document (aliases counted as often as used)")
    return total


def _tag_named(tag: str) -> str:
    short = tag.replace("tag:yaml.org,2002:", "!!")
    return repr(short[:40] + ("..." if len(short) > 40 else ""))


def _key_named(key: Any) -> str:
    """A repeated key for an error: its name when it is a field name, else
    nothing (an error never echoes a line of some other file)."""
    return f" {key!r}" if isinstance(key, str) and _NAME_RE.match(key) else ""


@functools.cache
def _yaml_loader() -> type:
    """libyaml's safe loader (PyYAML's when absent) building plain data only:
    a key given twice in one mapping is refused, an unquoted date is text."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class PlainLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<": merged keys may be overridden, as YAML allows
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: the base class reports it
                    break
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"key{_key_named(key)} given twice", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    PlainLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }

    def refuse(loader: Any, node: Any) -> Any:
        raise yaml.constructor.ConstructorError(
            None, None, f"tag {_tag_named(node.tag)} is not plain data", node.start_mark)

    for name in ("binary", "timestamp", "set", "omap", "pairs"):
        PlainLoader.add_constructor(f"tag:yaml.org,2002:{name}", refuse)
    return PlainLoader
