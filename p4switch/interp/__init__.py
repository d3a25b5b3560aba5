"""The v1model interpreter: IR lowered once to Python, run as BMv2 simple_switch does."""

from .codegen import UnsupportedError
from .switch import Digest, Egress, Switch, load_switch

__all__ = ["Switch", "Egress", "Digest", "load_switch", "UnsupportedError"]
