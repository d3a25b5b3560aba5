"""Which switch nodes a simulation uses, and how they get configured.

``p4``: :class:`netsim.p4_switch.P4SwitchNode` running ``p4src/mcc.p4``,
configured by the controller's desired-state function.  ``model``: the
Python reference model (:mod:`netsim.model_switch`), configured with routes
and each group's upstream port.  ``auto`` picks ``p4`` when the program,
the interpreter and the controller are all importable, else ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from p4mcc.netsim.network import Network
    from p4mcc.scenario.model import Scenario


class SwitchUnavailable(RuntimeError):
    """The requested switch kind cannot run here (and why)."""


@dataclass
class SwitchChoice:
    kind: str
    #: factory(sim, name) -> node; None: the model switch
    factory: Callable[..., Any] | None
    #: configure(network, scenario), called once after the network is built
    configure: Callable[["Network", "Scenario"], None]


def session_groups(s: Any) -> tuple[str, ...]:
    """Every group a session uses (WEBRC's waves too), as the controller sees them."""
    try:
        from p4mcc.controller.desired import session_groups as sg

        return tuple(sg(s.protocol, s.group, s.params))
    except ImportError:
        return (s.group,)


def _configure_model(net: "Network", scenario: "Scenario") -> None:
    """Each group's source, and the scenario's membership ageing (the
    timeout the P4 nodes get from the same controller options)."""
    from p4mcc.scenario.control import scenario_options

    for s in scenario.sessions:
        for g in session_groups(s):
            net.set_group_source(g, s.sender)
    timeout_us = scenario_options(scenario)[0].membership_timeout_us
    for node in net.switches.values():
        if getattr(node, "is_model", False):
            node.membership_timeout_us = timeout_us


def model_choice() -> SwitchChoice:
    return SwitchChoice("model", None, _configure_model)


def p4_choice(seed: int = 0, program: Any = None) -> SwitchChoice:
    """P4 switch nodes running ``mcc.p4`` (or ``program``, already compiled),
    configured by the controller's desired state with the scenario's options
    (policing, membership ageing): the one P4 choice that ``p4mcc sim`` and
    sweep points share.  A topology whose routes a switch cannot hold is
    refused in one line when the run is configured."""
    from p4mcc.netsim import p4_switch

    from p4mcc.controller.program import P4_SOURCE
    from p4mcc.p4switch.frontend import P4Error

    try:
        program = program if program is not None else p4_switch.load_program()
    except (P4Error, OSError) as e:  # front-end errors carry file:line:col
        raise SwitchUnavailable(f"cannot compile {P4_SOURCE}: {e}") from e

    def factory(sim: Any, name: str) -> Any:
        return p4_switch.P4SwitchNode(sim, name, program, seed=seed)

    def configure(net: "Network", scenario: "Scenario") -> None:
        from p4mcc.scenario.control import scenario_options

        from p4mcc.controller.desired import DesiredStateError

        options, _ = scenario_options(scenario)
        try:
            want = p4_switch.configure(net.switches, scenario.topology, scenario.sessions, options)
            net.desired_states = want.switches  # type: ignore[attr-defined]
            net.desired_below = want.below  # type: ignore[attr-defined]
        except DesiredStateError as e:  # e.g. more routes than a switch's table holds
            raise SwitchUnavailable(f"P4 switch nodes cannot run this topology: {e}") from None

    return SwitchChoice("p4", factory, configure)


def choose_switch(kind: str, scenario: "Scenario | None" = None) -> SwitchChoice:
    seed = scenario.seed if scenario is not None else 0
    if kind == "model":
        return model_choice()
    if kind == "p4":
        return p4_choice(seed)
    raise ValueError(f"unknown switch kind {kind!r} (p4, model)")
