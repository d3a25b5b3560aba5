"""Mininet tests need root and Mininet; they skip with the reason otherwise."""

from __future__ import annotations

import pytest

from emulation.run import missing_requirements


@pytest.fixture
def mininet_ready() -> None:
    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
