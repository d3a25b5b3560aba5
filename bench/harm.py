"""Harm to TCP (Ware et al., "Beyond Jain's fairness index", HotNets 2019) on the share's two-TCP case.

A 10 Mb/s, 42-packet bottleneck carries two TCP flows of different round
trips (``tcp1`` about 24 ms, ``tcp2`` about 200 ms).  A multicast session
(one receiver, about 48 ms) joins them; so, in a second run, does a TCP flow
on the session's own path instead.  The harm the newcomer does to flow i is
``(x_alone - x_with) / x_alone`` for its throughput over the second half of
the run, ``x_alone`` with the two TCP flows alone (0: none).  The issue's
bound: the session's harm to each TCP flow is at most the harm of a TCP flow
in its place plus 0.1.  Used by ``bench/assistance.py --stamp --harm``.
"""

from __future__ import annotations

import ipaddress
import statistics
from functools import lru_cache
from typing import Any

from bench.assistance import PORT, bottleneck_frames
from p4mcc.scenario.model import Scenario, scenario_from_dict

HOSTS = {"snd1": "10.0.0.1", "r1": "10.0.0.2", "tsrc1": "10.0.0.11", "tdst1": "10.0.0.12",
         "tsrc2": "10.0.0.21", "tdst2": "10.0.0.22"}
#: One-way delay of each host's access link (ms): the round trips above with the 10 ms bottleneck.
ACCESS_MS = {"snd1": 1, "r1": 13, "tsrc1": 1, "tdst1": 1, "tsrc2": 1, "tdst2": 88}
TCP = ("tsrc1", "tsrc2")
#: The newcomer beside the two TCP flows: nothing, the session, or a TCP flow on its path.
OCCUPANTS = ("none", "session", "tcp")
HARM_SLACK = 0.1


def harm_scenario(proto: str, profile: str, occupant: str, seed: int, duration: float) -> Scenario:
    left, right = ("snd1", "tsrc1", "tsrc2"), ("r1", "tdst1", "tdst2")
    links = [{"a": h, "b": "s1", "rate": "100Mbps", "delay": f"{ACCESS_MS[h]}ms"} for h in left]
    links.append({"a": "s1", "b": "s2", "rate": "10Mbps", "delay": "10ms", "queue": 42})
    links += [{"a": "s2", "b": h, "rate": "100Mbps", "delay": f"{ACCESS_MS[h]}ms"} for h in right]
    tcp = [{"name": "tcp1", "src": "tsrc1", "dst": "tdst1"}, {"name": "tcp2", "src": "tsrc2", "dst": "tdst2"}]
    sessions = []
    if occupant == "session":
        sessions.append({"name": "mc1", "protocol": proto, "sender": "snd1", "receivers": ["r1"],
                         "group": "239.1.1.1", "port": PORT + 1, "assistance": "stamp", "profile": profile,
                         "params": {"session_rate_bps": 20_000_000} if proto == "webrc" else {}})
    elif occupant == "tcp":
        tcp.append({"name": "tcp3", "src": "snd1", "dst": "r1"})
    return scenario_from_dict({
        "name": f"harm-{proto}-{profile}-{occupant}",
        "topology": {"hosts": {h: {"ip": f"{ip}/24"} for h, ip in HOSTS.items()},
                     "switches": {"s1": {}, "s2": {}}, "links": links},
        "sessions": sessions, "tcp_flows": tcp,
        "duration": duration, "seed": seed, "metrics_interval": 1.0,
    })


def tcp_throughputs(proto: str, profile: str, occupant: str, seed: int, duration: float) -> dict[str, float]:
    """Each TCP flow's throughput (bit/s) into the bottleneck over the second half of the run."""
    frames = bottleneck_frames(harm_scenario(proto, profile, occupant, seed, duration))
    half = duration / 2
    out = dict.fromkeys(TCP, 0.0)
    src = {ipaddress.IPv4Address(HOSTS[h]).packed: h for h in TCP}
    for t, flow, size, _wait in frames:
        if t >= half and flow[0] == "tcp" and flow[1] in src:
            out[src[flow[1]]] += size * 8 / (duration - half)
    return out


@lru_cache(maxsize=None)
def _baseline(occupant: str, seed: int, duration: float) -> tuple[tuple[str, float], ...]:
    return tuple(tcp_throughputs("tfmcc", "default", occupant, seed, duration).items())


def harm(alone: float, with_: float) -> float:
    """Ware et al.'s harm for a more-is-better metric: the share of ``alone`` the newcomer took."""
    return max(0.0, (alone - with_) / alone) if alone > 0 else 0.0


def harm_run(proto: str, profile: str, seed: int, duration: float) -> dict[str, Any]:
    """The session's harm and a TCP flow's (in its place) to each TCP flow, one seed."""
    alone = dict(_baseline("none", seed, duration))
    in_place = dict(_baseline("tcp", seed, duration))
    got = tcp_throughputs(proto, profile, "session", seed, duration)
    return {f: (harm(alone[f], got[f]), harm(alone[f], in_place[f])) for f in TCP}


def harm_table(protos: list[str], profiles: tuple[str, ...], seeds: int, duration: float) -> str:
    """Medians over the seeds of each protocol and profile's harm beside the TCP flow's in its place."""
    lines = ["| protocol | profile | harm to tcp1 (24 ms) | TCP in its place | harm to tcp2 (200 ms) | "
             "TCP in its place | within +0.1 |", "|---|---|---|---|---|---|---|"]
    for proto in protos:
        for prof in profiles:
            rs = [harm_run(proto, prof, s, duration) for s in range(1, seeds + 1)]
            cells, ok = [], True
            for f in TCP:
                h = statistics.median(r[f][0] for r in rs)
                t = statistics.median(r[f][1] for r in rs)
                ok &= h <= t + HARM_SLACK
                cells += [f"{h:.2f}", f"{t:.2f}"]
            lines.append(f"| {proto} | {prof} | " + " | ".join(cells) + f" | {'yes' if ok else 'no'} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)
