"""Default feedback policing: what one host port may send, from its sessions.

The program polices p4mcc feedback (unicast messages whose type is not data)
per ingress port with ``MccIngress.feedback_meter``.  A fixed budget either
polices honest receivers or polices nothing (20 000 packets/s let a rogue's
~10 000 reports/s through).  So the budget of a host port is the most
feedback the sessions that host receives can honestly produce, with
headroom, sized by each protocol's own feedback rule:

* RLA (one SACK per data packet), MTCP (one ACK per data packet, NACKs and
  window updates in their place) and VLMCC (one ACK per data packet): at
  most one message per data packet, and data cannot reach the host faster
  than the bottleneck of its path from the sender, ``R / (8 s)`` packets/s;
* TFMCC (the TFMCC paper, sec. 2.5: the CLR reports without suppression,
  about once per RTT; other receivers at most once per feedback round of
  several RTTs): two reports per path RTT, the RTT floored at :data:`RTT_FLOOR_S` (a LAN's RTT would otherwise
  make the budget unbounded);
* WEBRC has no feedback.

The budget is :data:`HEADROOM` times the sum over the host's sessions, at
least :data:`FLOOR_PPS`; the burst is a tenth of it (at least
:data:`FLOOR_BURST`).  ``docs/faults.md`` gives the numbers this yields.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

HEADROOM = 2.0
FLOOR_PPS = 50
FLOOR_BURST = 20
RTT_FLOOR_S = 0.01
PER_PACKET = {"rla": 1.0, "mtcp": 1.0, "vlmcc": 1.0}
PER_RTT = {"tfmcc": 2.0}


def _packet_size(s: Any) -> int:
    size = (getattr(s, "params", None) or {}).get("packet_size")
    if isinstance(size, int) and size > 0:
        return size
    try:
        from p4mcc.hosts import registry

        return int(getattr(registry.get(s.protocol).parse_params({}), "packet_size", 1000))
    except Exception:  # noqa: BLE001 - unknown protocol: the common default
        return 1000


def _graph(topo: Any) -> Any:
    """The scenario topology as a graph whose edges carry their links."""
    import networkx as nx

    g = nx.Graph()
    for l in topo.links:
        g.add_edge(l.a.node, l.b.node, link=l)
    return g


def _path(topo: Any, a: str, b: str, graph: Any = None) -> list[Any]:
    """Links of a shortest (hop count) path from node ``a`` to node ``b``
    (``graph``: :func:`_graph` of ``topo``, built once by callers that ask
    for many paths)."""
    import networkx as nx

    g = graph if graph is not None else _graph(topo)
    try:
        nodes = nx.shortest_path(g, a, b)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return []
    return [g.edges[u, v]["link"] for u, v in zip(nodes, nodes[1:])]


def session_pps(topo: Any, s: Any, host: str, graph: Any = None) -> float:
    """Honest feedback packets/s of ``host`` in session ``s`` (before headroom)."""
    proto = s.protocol.lower()
    path = _path(topo, s.sender, host, graph)
    if not path:
        return 0.0
    if proto in PER_PACKET:
        rate = min(l.rate_bps for l in path)
        return PER_PACKET[proto] * rate / (8.0 * _packet_size(s))
    if proto in PER_RTT:
        rtt = max(RTT_FLOOR_S, 2.0 * sum(l.delay_s for l in path))
        return PER_RTT[proto] / rtt
    return 0.0


def host_budgets(topo: Any, sessions: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """host -> (packets/s, burst packets) for every host of the scenario topology."""
    sessions = list(sessions)
    graph = _graph(topo)
    out: dict[str, tuple[int, int]] = {}
    for h in topo.hosts:
        pps = sum(session_pps(topo, s, h, graph) for s in sessions if h in s.receivers)
        budget = max(FLOOR_PPS, int(math.ceil(HEADROOM * pps)))
        out[h] = (budget, max(FLOOR_BURST, budget // 10))
    return out
