"""The folder-to-package mapping of p4mcc's one import name.

The repository keeps the folders users know (``hosts/``, ``controller/``,
``p4src/``, ...); each installs as a subpackage of ``p4mcc``, so the wheel
puts one top-level name into site-packages.  ``p4mcc`` itself is a namespace
package: it has no code of its own, only these subpackages.  ``p4src/``
(the P4 program) ships as package data beside the code that compiles it.
Everything else about the build is in ``pyproject.toml``.
"""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent

#: repository folder -> subpackage of p4mcc
FOLDERS = {
    "p4switch": "p4switch", "controller": "controller", "hosts": "hosts",
    "scenario": "scenario", "reporting": "reporting", "netsim": "netsim",
    "emulation": "emulation", "topologies": "topologies", "sweep": "sweep",
    "p4mcc_cli": "cli",
}
#: folders of data only (no Python), installed as package data
DATA_FOLDERS = {"p4src": "p4src"}


def _mapping() -> tuple[dict[str, str], list[str]]:
    package_dir: dict[str, str] = {}
    packages: list[str] = []
    for folder, name in FOLDERS.items():
        top = f"p4mcc.{name}"
        package_dir[top] = folder
        packages.append(top)
        for sub in find_packages(str(ROOT / folder)):
            packages.append(f"{top}.{sub}")
            package_dir[f"{top}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    for folder, name in DATA_FOLDERS.items():
        top = f"p4mcc.{name}"
        package_dir[top] = folder
        packages.append(top)
        for sub in sorted(p for p in (ROOT / folder).rglob("*") if p.is_dir()):
            rel = sub.relative_to(ROOT / folder)
            packages.append(".".join([top, *rel.parts]))
            package_dir[packages[-1]] = f"{folder}/{rel.as_posix()}"
    return package_dir, packages


PACKAGE_DIR, PACKAGES = _mapping()
setup(package_dir=PACKAGE_DIR, packages=PACKAGES)
