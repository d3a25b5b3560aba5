import sys
from pathlib import Path

# The protocol tests' fakes (tests/hosts_eq/fakes.py) drive the cores here too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hosts_eq"))
