"""Make this folder's helper modules importable from the protocol tests below it.

``win_util`` (a fake clock and scripted packets), ``rla_util``, ``mtcp_util``
and ``vlmcc_util`` (each protocol's classes under a profile), ``acker_util``
(RLA's and MTCP's acker runs), ``churn_util`` (crashes and leaves on the
in-process dumbbell), ``tcp_dumbbell_util`` (a session beside one TCP flow in
the simulator) and ``testnet`` (the in-process networks)
serve the tests of several protocols, so they live here rather than in one
protocol's folder.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
