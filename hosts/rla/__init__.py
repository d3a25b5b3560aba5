"""RLA, the Random Listening Algorithm: the paper's core plus named rules.

``RlaSender`` and ``RlaReceiver`` are the paper's algorithm
(:mod:`hosts.rla.core`, :mod:`hosts.rla.receiver`); :data:`RULES` holds the
rules beyond it and the ``paper`` and ``default`` profiles.  The registry
composes a session's class with ``RULES.compose(RlaSender, names)``.
"""

from hosts.rla.core import RlaSender
from hosts.rla.params import RlaParams
from hosts.rla.receiver import RlaReceiver
from hosts.rla.rules import RULES

__all__ = ["RULES", "RlaParams", "RlaReceiver", "RlaSender"]
