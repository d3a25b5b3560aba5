"""The toy protocol with a rule book (``toyproto``), registered for each test that asks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import toyproto  # noqa: E402

from p4mcc.hosts import registry  # noqa: E402


@pytest.fixture()
def toy() -> Iterator[registry.Protocol]:
    """The toy protocol, registered for the test only."""
    registry.register(toyproto.ENTRY)
    try:
        yield registry.get(toyproto.NAME)
    finally:
        registry.unregister(toyproto.NAME)


@pytest.fixture
def plain() -> Iterator[registry.Protocol]:
    """The toy cores as a protocol without named rules, registered for the test only."""
    registry.register(toyproto.PLAIN_ENTRY)
    try:
        yield registry.get(toyproto.PLAIN)
    finally:
        registry.unregister(toyproto.PLAIN)
