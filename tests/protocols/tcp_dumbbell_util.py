"""One multicast session and one TCP flow on a short drop-tail dumbbell of the
simulator (model switches, TCP NewReno/SACK), and the session's steady-state
ratio to TCP: mean receiver goodput over TCP's in the second half of the run,
bounded in the tests by the TFRC range [0.5, 2].  Shared by RLA's and VLMCC's
fairness tests.
"""

from __future__ import annotations

from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import scenario_from_dict

PORT = 5999  # the session's port


def dumbbell(proto: str, params: dict, *, rate: str, delay: str, queue: int, receivers: int,
             duration: float, seed: int = 1, rules: dict | None = None, profile: str = "default"):
    hosts = {"snd": {"ip": "10.9.0.1/16"}, "tsrc": {"ip": "10.9.0.2/16"}, "tdst": {"ip": "10.9.2.1/16"}}
    hosts.update({f"r{i}": {"ip": f"10.9.1.{i}/16"} for i in range(1, receivers + 1)})
    links = [{"a": "s1", "b": "s2", "rate": rate, "delay": delay, "queue": queue}]
    links += [{"a": h, "b": "s1" if h in ("snd", "tsrc") else "s2"} for h in hosts]
    return scenario_from_dict({
        "name": f"{proto}-dumbbell", "duration": duration, "seed": seed,
        "topology": {"hosts": hosts, "switches": {"s1": {}, "s2": {}},
                     "link_defaults": {"rate": "1Gbps", "delay": "1ms", "queue": 1000}, "links": links},
        "sessions": [{"name": "m", "protocol": proto, "sender": "snd", "receivers": ["r*"],
                      "group": "239.9.9.1", "port": PORT, "assistance": False, "params": params,
                      "profile": profile, "rules": rules or {}}],
        "tcp_flows": [{"name": "tcp", "src": "tsrc", "dst": "tdst", "port": 6001}],
    })


def steady_ratio(sc) -> float:
    """Mean receiver goodput over TCP's, second half of the run."""
    run = build_run(sc, switch=choose_switch("model"))
    half = sc.duration / 2
    recv = [n for n in sc.topology.hosts if n.startswith("r")]

    def snap() -> tuple[list[int], int]:
        return ([run.net.hosts[r].rx_mcast_bytes.get(PORT, 0) for r in recv],
                run.tcp["tcp"].receiver.delivered_bytes)

    run.sim.run(until=half)
    m0, t0 = snap()
    run.sim.run(until=sc.duration)
    m1, t1 = snap()
    mc = sum(b - a for a, b in zip(m0, m1)) / len(recv)
    return mc / max(1, t1 - t0)

