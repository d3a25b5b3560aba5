"""Make this folder's helper module (``warm_agents``) importable by its tests."""

import sys
from pathlib import Path

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
