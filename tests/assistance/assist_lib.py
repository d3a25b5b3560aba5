"""Shared set-up of the switch-assistance tests: one session through P4 switch nodes.

The same k-ary tree and protocol runs with the session's ``assistance`` on
(the switches filter or fold its feedback) and off (they only replicate);
the sender's core is tapped so a test sees every feedback message it was
handed, in order, with its arrival time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts import registry
from p4mcc.hosts.core import Endpoint
from p4mcc.netsim.run import SimRun, registry_factory, run_scenario
from p4mcc.netsim.switches import SwitchChoice
from p4mcc.scenario.model import Session, scenario_from_dict

GROUP, PORT = "239.1.1.1", 5001


@dataclass
class Tapped:
    """A finished run and the feedback its sender core received."""

    run: SimRun
    feedback: list[tuple[float, Any]] = field(default_factory=list)

    @property
    def sender(self) -> Any:
        return self.run.agents["s/snd"]

    @property
    def receivers(self) -> list[Any]:
        return [a for label, a in self.run.agents.items() if label != "s/snd"]

    def received_bytes(self) -> list[int]:
        """Session payload bytes that reached each receiver host (engine-measured)."""
        hosts = self.run.net.hosts
        return [hosts[label.split("/", 1)[1]].rx_mcast_bytes.get(PORT, 0)
                for label in self.run.agents if label != "s/snd"]

    def absorbed(self) -> int:
        """Feedback the switches filtered or folded away (``session_feedback_absorbed``)."""
        return sum(node.sw.counter_read("session_feedback_absorbed", 0)[0]
                   for node in self.run.net.switches.values())


def run_tree(p4: SwitchChoice, protocol: str, params: dict[str, Any], *, receivers: int, k: int,
             assistance: bool, duration: float, leaf_loss: float | str = 0.0, seed: int = 1,
             rules: tuple[str, ...] | None = None) -> Tapped:
    """Run ``protocol`` to ``receivers`` hosts behind a k-ary tree of P4 switches
    (``rules``: the session's effective rule list; None: its default profile)."""
    topo: dict[str, Any] = {"kind": "kary_tree", "k": k, "receivers": receivers, "rate": "20Mbps",
                            "delay": "5ms", "leaf_rate": "2Mbps", "leaf_delay": "10ms", "queue": 100}
    if leaf_loss == "tfmcc":
        topo.update(loss_distribution="tfmcc", loss_seed=1)
    else:
        topo["leaf_loss"] = leaf_loss
    sc = scenario_from_dict({
        "name": f"{protocol}-{'on' if assistance else 'off'}",
        "topology": {"generate": topo},
        "sessions": [{"name": "s", "protocol": protocol, "sender": "snd", "receivers": ["r*"],
                      "group": GROUP, "port": PORT, "assistance": assistance, "params": params}],
        "duration": duration, "seed": seed, "metrics_interval": 1.0,
    })
    out = Tapped(run=None)  # type: ignore[arg-type]

    def factory(sess: Session, role: str, host: str, ip: str, sender_ip: str, s: int) -> Endpoint:
        agent = registry_factory(sess, role, host, ip, sender_ip, s)
        if rules is not None:
            proto = registry.get(protocol)
            agent = (proto.sender if role == "sender" else proto.receiver)(dataclasses.replace(agent.cfg, rules=rules))
        if role == "sender":
            inner = agent.on_datagram

            def on_datagram(data: bytes, src: Any, now: float) -> None:
                out.feedback.append((now, wire.decode(data)))
                inner(data, src, now)

            agent.on_datagram = on_datagram  # type: ignore[method-assign]
        return agent

    out.run = run_scenario(sc, agent_factory=factory, switch=p4)
    assert out.run.switch_kind == "p4"
    return out
