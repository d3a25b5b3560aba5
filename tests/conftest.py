"""Settings shared by every test directory.

Property tests check behaviour, not speed: Hypothesis' default 200 ms
deadline per example fails them on a busy 2-core machine for no fault of
the code, so no test runs with a deadline (timed checks live in `bench/`).
This folder's helper module (``fakes``: a fake clock for the cores, loopback
ports) is importable by every test; the host and the protocol tests use it.
"""

import sys
from pathlib import Path

from hypothesis import settings

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)

settings.register_profile("p4mcc", deadline=None)
settings.load_profile("p4mcc")
