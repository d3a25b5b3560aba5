"""Shared fixtures of the switch/P4Runtime tests."""

from __future__ import annotations

import gc
import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _collections_see_only_this_tests_objects() -> Iterator[None]:
    """Keep what the rest of the suite built out of this test's garbage collections.

    These tests run the P4Runtime server in their own process and hold its
    replies to time bounds.  A full collection walks every object the
    process holds, and by the time the whole suite reaches this folder that
    is enough for one collection to take seconds, while it stops every
    thread of the server and of its clients.  A switch process holds none
    of that heap, so the test freezes it (``gc.freeze``: objects the
    collector then skips) and gives it back afterwards.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
