"""Makes the shared harness (p4src_harness.py) importable from these tests."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
