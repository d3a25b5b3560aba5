"""The network of TFMCC's liar tests, in the simulator.

A 4 Mbit/s bottleneck (10 ms, 30 packets) carries one TFMCC session from h1
to three honest receivers; host ``rogue``, behind the same bottleneck and
not a receiver of the session, runs a :class:`hosts.rogue.Rogue` that lies
from ``start`` to ``stop``.
"""

from __future__ import annotations

from typing import Any

from p4mcc.hosts.rogue import Rogue

HONEST = ("r1", "r2", "r3")


def scenario_dict(name: str, duration: float) -> dict[str, Any]:
    """The scenario, as a test may still change it before it runs."""
    return {
        "name": name, "duration": duration, "seed": 1,
        "topology": {"hosts": ["h1", *HONEST, "rogue"], "switches": ["s1", "s2"],
                     "link_defaults": {"rate": "10Mbps", "delay": "2ms", "queue": 50},
                     "links": [{"a": "s1", "b": "s2", "rate": "4Mbps", "delay": "10ms", "queue": 30},
                               ["h1", "s1"], *([r, "s2"] for r in HONEST), ["rogue", "s2"]]},
        "sessions": [{"name": "tf", "protocol": "tfmcc", "sender": "h1", "receivers": list(HONEST)}],
    }


def build_with_rogue(raw: dict[str, Any], claim: dict[str, Any] | None, start: float,
                     stop: float) -> tuple[Any, Any, Rogue | None]:
    """The run of ``raw`` on model switches, with the rogue making ``claim`` (its keyword
    arguments, ``mode`` first; None: no rogue): the run, the sender's agent and the rogue."""
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import model_choice
    from p4mcc.scenario.model import scenario_from_dict

    sc = scenario_from_dict(raw)
    run = build_run(sc, switch=model_choice())
    if claim is None:
        return run, run.agents["tf/h1"], None
    kw = dict(claim)
    s, host = sc.sessions[0], run.net.hosts["rogue"]
    rogue = Rogue(kw.pop("mode"), "tfmcc", s.session_id, s.group, run.net.hosts["h1"].ip, host.ip, s.port,
                  stop_at=stop, **kw)
    host.add_endpoint(rogue, s.port, label="rogue", start_at=start, stop_at=stop)
    return run, run.agents["tf/h1"], rogue
