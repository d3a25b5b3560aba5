"""The packages import each other in one direction only, and no modules import each other in a circle.

The layer order (docs/architecture.md) is, bottom first::

    hosts -> p4switch -> controller -> scenario -> reporting -> netsim | emulation -> sweep -> cli

each installed as ``p4mcc.<name>`` from the repository folder of that name
(``cli`` from ``p4mcc_cli/``).

A module may import its own package and any package below it, never one above
it or beside it (``netsim`` and ``emulation`` are two engines on one layer and
know nothing of each other).  Every import counts: module level, inside a
function, and under ``if TYPE_CHECKING`` (a typing-only import still ties the
lower package to the upper one).  Within the whole project the module import
graph has no cycle, including inside a package.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Bottom first; packages on one layer share a tuple and may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("hosts",),
    ("p4switch",),
    ("controller",),
    ("scenario",),
    ("reporting",),
    ("netsim", "emulation"),
    ("sweep",),
    ("cli",),
)
#: import name -> repository folder (setup.py's mapping)
FOLDER = {pkg: "p4mcc_cli" if pkg == "cli" else pkg for layer in LAYERS for pkg in layer}
LEVEL = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def _module_name(path: Path, pkg: str) -> str:
    parts = list(path.relative_to(ROOT / FOLDER[pkg]).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["p4mcc", pkg, *parts])


def project_modules() -> dict[str, Path]:
    """Every module of the layered packages, by dotted name."""
    mods: dict[str, Path] = {}
    for pkg in LEVEL:
        for path in sorted((ROOT / FOLDER[pkg]).rglob("*.py")):
            mods[_module_name(path, pkg)] = path
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The project module an import names (its longest importable prefix), or None."""
    parts = name.split(".")
    while parts and ".".join(parts) not in mods:
        parts.pop()
    return ".".join(parts) or None


def imports_of(module: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports, anywhere in its body (ancestors' ``__init__`` excluded)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # "from pkg import sub" imports the submodule; "from mod import name" the module
            names += [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]
    out = set()
    for n in names:
        t = _resolve(n, mods)
        if t and t != module and not module.startswith(t + "."):
            out.add(t)
    return out


@functools.lru_cache(maxsize=1)
def import_graph() -> nx.DiGraph:
    """The module import graph of the layered packages (built once per test run)."""
    mods = project_modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, path in mods.items():
        g.add_edges_from((m, t) for t in imports_of(m, path, mods))
    return g


def test_the_walk_sees_every_kind_of_import():
    """The walker finds imports at module level, in functions and under TYPE_CHECKING."""
    edges = import_graph().edges
    assert ("p4mcc.netsim.run", "p4mcc.netsim.engine") in edges  # module level
    assert ("p4mcc.netsim.run", "p4mcc.netsim.faults") in edges  # inside a function
    assert ("p4mcc.netsim.faults", "p4mcc.reporting.results") in edges  # under TYPE_CHECKING
    assert ("p4mcc.p4switch.frontend", "p4mcc.p4switch.frontend.ast") in edges  # "from . import ast"


@pytest.mark.parametrize("pkg", sorted(LEVEL))
def test_no_package_imports_upward_or_sideways(pkg):
    bad = sorted(f"{m} -> {t}" for m, t in import_graph().edges
                 if m.split(".")[1] == pkg and t.split(".")[1] != pkg
                 and LEVEL[t.split(".")[1]] >= LEVEL[pkg])
    assert not bad, f"{pkg} (layer {LEVEL[pkg]}) imports a package at or above its layer: {bad}"


def test_no_import_cycles():
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1)
    assert not cycles, f"modules that import each other in a circle: {cycles}"


def test_every_python_package_is_in_a_layer():
    """A new top-level package must be given its place in :data:`LAYERS`."""
    tops = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "topologies"}
    assert tops <= set(FOLDER.values()), f"packages without a layer: {sorted(tops - set(FOLDER.values()))}"


def test_topologies_holds_only_scenario_files():
    """``topologies/`` keeps the scenario files; its code lives in the packages above."""
    code = sorted(p.name for p in (ROOT / "topologies").glob("*.py") if p.name != "__init__.py")
    assert not code, f"code in topologies/: {code}"


def test_one_top_level_import_name():
    """Every project import goes through ``p4mcc``: no module imports a folder by its bare name."""
    bare = set(FOLDER.values()) | {"topologies"}
    bad = []
    for pkg in LEVEL:
        for path in sorted((ROOT / FOLDER[pkg]).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                         else [])
                bad += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in bare]
    assert not bad, f"imports by a bare folder name: {bad}"
