"""Mininet tests need root and Mininet; they skip with the reason otherwise."""

from __future__ import annotations

import pytest

from p4mcc.emulation.run import missing_requirements


@pytest.fixture(scope="session")
def mininet_ready() -> None:
    """Skips every test that needs Mininet, root or ping when one is missing;
    session-wide, so module fixtures that build a network can rest on it."""
    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
