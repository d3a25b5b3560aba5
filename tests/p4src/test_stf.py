"""The STF versions of the behaviour tests (tests/stf/mcc/*.stf): they are
current with make_stf.py and pass on the built-in switch's STF runner."""

from __future__ import annotations

import io
import os

import pytest

import make_stf
from p4src_harness import INCLUDE, PROGRAM, program


def test_stf_files_are_generated_from_make_stf():
    for name, text in make_stf.render().items():
        path = os.path.join(make_stf.STF_DIR, name)
        assert os.path.exists(path), f"run python tests/p4src/make_stf.py ({name} missing)"
        with open(path, encoding="utf-8") as f:
            assert f.read() == text, f"{name} is stale: run python tests/p4src/make_stf.py"


@pytest.mark.parametrize("name", sorted(make_stf.FILES))
def test_stf_passes_on_the_builtin_switch(name):
    program()  # fails with the compiler's message
    from p4mcc.p4switch.stf import run_stf

    out = io.StringIO()
    result = run_stf(PROGRAM, os.path.join(make_stf.STF_DIR, name), (INCLUDE,), out=out)
    assert result.passed, "\n".join(result.messages) + out.getvalue()
