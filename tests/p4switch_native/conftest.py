"""The native pipeline's tests build their C modules in a private cache.

This folder's helper module (``native_util``: the small trees the node tests
build) is importable by its tests."""

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("P4MCC_NATIVE_CACHE", os.path.join(tempfile.gettempdir(), "p4mcc-native-tests"))

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
