"""The wheel installs one top-level name, ``p4mcc``, and runs the demo outside a checkout.

The repository's folders (``hosts/``, ``controller/``, ``p4src/``, ...) map to
``p4mcc.*`` subpackages (``setup.py``); the P4 program ships as package data, so
an installed wheel finds ``mcc.p4`` without the source tree.  The test builds
the wheel from this checkout, installs it into a fresh virtual environment
that borrows the running environment's dependencies, and runs ``p4mcc sim``
from an empty folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Setuptools' scratch folders go to the test's own directory (DIST_EXTRA_CONFIG is
    # read by every setuptools command), so a build neither races another nor trips on
    # what an interrupted one left in the checkout's build/.
    work = tmp_path_factory.mktemp("setuptools")
    cfg = work / "build.cfg"
    cfg.write_text(f"[build]\nbuild_base = {work / 'build'}\n[bdist_wheel]\nbdist_dir = {work / 'bdist'}\n"
                   f"[egg_info]\negg_base = {work}\n")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "DIST_EXTRA_CONFIG": str(cfg)})
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("p4mcc-*.whl")
    return whl


def test_the_wheel_installs_one_top_level_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"p4mcc"}
    assert "p4mcc/p4src/mcc.p4" in names and "p4mcc/p4src/include/aggregation.p4" in names
    assert "p4mcc/cli/main.py" in names and "p4mcc/hosts/wire.py" in names


def test_the_installed_wheel_runs_the_demo_outside_a_checkout(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    site = next(env_dir.glob("lib/python*/site-packages"))
    # The dependencies come from the running environment; p4mcc itself only from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(py), "-c", "import p4mcc.controller.program as p; print(p.P4_SOURCE)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout
    scenario = site / "p4mcc" / "topologies" / "scenarios" / "demo.yaml"
    run = subprocess.run([str(env_dir / "bin" / "p4mcc"), "sim", str(scenario), "--duration", "2",
                          "--out", str(work / "out")], cwd=work, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (work / "out" / "summary.json").is_file()
