"""RLA, the Random Listening Algorithm: the paper's core plus named rules (docs/protocols/rla.md)."""

from hosts.rla.core import RlaSender
from hosts.rla.params import RlaParams
from hosts.rla.receiver import RlaReceiver
from hosts.rla.rules import RULES

__all__ = ["RULES", "RlaParams", "RlaReceiver", "RlaSender"]
