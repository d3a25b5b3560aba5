"""Shared fixtures for the tests that run p4src/mcc.p4 on the real toolchain.

They need p4c's BMv2 compiler (``p4c-bm2-ss``) and, for the packet tests,
BMv2's ``simple_switch_grpc`` on PATH; without them they skip and say so.
p4mcc itself never needs either (they are test oracles).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bmv2_harness import P4cBuild, p4c_compile  # noqa: E402


@pytest.fixture(scope="session")
def p4c_build(tmp_path_factory: pytest.TempPathFactory) -> P4cBuild:
    """p4src/mcc.p4 compiled by the real p4c, once per test session."""
    return p4c_compile(tmp_path_factory.mktemp("p4c"))
