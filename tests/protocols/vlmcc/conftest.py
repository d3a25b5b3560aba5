"""Make this folder's test modules importable by name: some tests here reuse
another test module's scripted helpers (``from test_vlmcc_stamp import ...``)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
