"""RLA, the Random Listening Algorithm: the paper's core plus named rules (docs/protocols/rla.md)."""

from p4mcc.hosts.rla.sender import RlaSender
from p4mcc.hosts.rla.params import RlaParams
from p4mcc.hosts.rla.receiver import RlaReceiver
from p4mcc.hosts.rla.rules import RULES

__all__ = ["RULES", "RlaParams", "RlaReceiver", "RlaSender"]
