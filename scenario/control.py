"""What the controller gets from a scenario: its topology and its switch options.

The controller (``controller/``) knows nothing of scenario files; this module
is the adapter one layer up.  It reads a file (a scenario or a tutorials
``topology.json``) into the controller's :class:`~controller.topology.Topology`
and turns a scenario's ``policing:`` and ``membership:`` into the
controller's :class:`~controller.desired.DesiredOptions` and querier period.
Both engines and ``p4mcc ctl`` call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from p4mcc.controller.desired import DesiredOptions
from p4mcc.controller.policing import FLOOR_BURST, host_budgets
from p4mcc.controller.querier import timings
from p4mcc.controller.topology import Topology, TopologyError, from_scenario_topology
from p4mcc.scenario.faults import Membership, Policing, membership_timeout, query_interval
from p4mcc.scenario.model import ScenarioError, load_scenario


def scenario_options(scenario: Any) -> tuple[Any, float | None]:
    """The controller's :class:`~controller.desired.DesiredOptions` for a
    scenario's ``policing:`` and ``membership:`` (``scenario/faults.py``),
    and the querier period (None: no querier).

    Both engines call it, so they age memberships and query the same way
    (``scenario.faults.membership_timeout`` owns the default).
    """

    pol = getattr(scenario, "policing", None) or Policing()
    mem = getattr(scenario, "membership", None) or Membership()
    timeout = membership_timeout(mem)
    ageing: dict[str, Any] = {}
    if timeout:
        ageing = {"membership_timeout_us": int(timeout * 1e6),
                  "proxy_refresh_us": int(timings(timeout)[1] * 1e6)}
    if pol.feedback_pps is None:
        opts = DesiredOptions(feedback_pps=None, **ageing)
    elif pol.feedback_pps == "auto":
        budgets = host_budgets(scenario.topology, scenario.sessions)
        if pol.burst is not None:
            budgets = {h: (p, pol.burst) for h, (p, _) in budgets.items()}
        opts = DesiredOptions(feedback_pps=None, feedback_by_host=budgets, **ageing)
    else:
        pps = int(pol.feedback_pps)
        opts = DesiredOptions(feedback_pps=pps, feedback_burst=pol.burst or max(FLOOR_BURST, pps // 10), **ageing)
    return opts, query_interval(mem, timeout)


def load_topology(path: str | Path) -> Topology:
    """Load a scenario file or a tutorials ``topology.json`` into a :class:`Topology`.

    Files are read by :func:`scenario.model.load_scenario` (which accepts
    both and names the offending field in its errors); the controller then
    numbers ports and checks connectivity.  Errors name the file.
    """
    return load_scenario_topology(path)[0]


def load_scenario_topology(path: str | Path) -> tuple[Topology, Any]:
    """The :class:`Topology` and the scenario object of a file."""
    p = Path(path)
    try:
        scn = load_scenario(p, known_protocols=None)
    except ScenarioError as exc:
        raise TopologyError("; ".join(exc.problems)) from None
    try:
        return from_scenario_topology(scn.topology), scn
    except TopologyError as exc:
        raise TopologyError(f"{p}: {exc}") from None
