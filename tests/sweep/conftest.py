"""Make this folder's shared test helpers (``sweeplib``) importable."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
