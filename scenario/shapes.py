"""Generators for common topology shapes, returning scenario :class:`Topology`.

They produce the same dataclasses a scenario file does, so a generated network
runs in the simulator and (at Mininet size) in emulation alike.  A scenario
file may call them with ``topology: {generate: {kind: kary_tree, ...}}``.

Naming: the multicast sender is ``snd`` (``snd1..`` when several), receivers
``r1..rN``, TCP endpoints ``tsrc1..``/``tdst1..``, switches ``s1..``.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Sequence

from p4switch.units import parse_fraction, parse_rate, parse_size, parse_time
from scenario.topology import DEFAULT_QUEUE_PACKETS, GilbertElliott, Host, Link, LinkEnd, Switch, Topology


class _Builder:
    """Accumulates hosts, switches and links with automatic addresses."""

    def __init__(self) -> None:
        self.hosts: dict[str, Host] = {}
        self.switches: dict[str, Switch] = {}
        self.links: list[Link] = []

    def host(self, name: str) -> str:
        self._next = getattr(self, "_next", 0) + 1
        while self._next & 0xFF in (0, 255):  # skip .0 and .255 host parts
            self._next += 1
        i = self._next
        ip = f"10.{(i >> 16) & 0xFF}.{(i >> 8) & 0xFF}.{i & 0xFF}"
        mac = "08:00:%02x:%02x:%02x:%02x" % ((i >> 24) & 0xFF, (i >> 16) & 0xFF, (i >> 8) & 0xFF, i & 0xFF)
        self.hosts[name] = Host(name, ip, 8, mac)
        return name

    def switch(self, name: str | None = None) -> str:
        name = name or f"s{len(self.switches) + 1}"
        self.switches[name] = Switch(name)
        return name

    def link(self, a: str, b: str, **params: Any) -> None:
        self.links.append(Link(LinkEnd(a), LinkEnd(b), **_link_params(params)))

    def build(self) -> Topology:
        return Topology(self.hosts, self.switches, self.links)


def _link_params(p: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if p.get("rate") is not None:
        out["rate_bps"] = parse_rate(p["rate"])
    if p.get("delay") is not None:
        out["delay_s"] = parse_time(p["delay"])
    loss = p.get("loss")
    if isinstance(loss, GilbertElliott):
        out["loss"] = loss
    elif loss is not None:
        out["loss"] = parse_fraction(loss)
    q = p.get("queue")
    if q is not None:
        if isinstance(q, dict):
            out["queue_packets"] = int(q["packets"]) if "packets" in q else None
            out["queue_bytes"] = parse_size(q["bytes"]) if "bytes" in q else None
        else:
            out["queue_packets"] = int(q)
    return out


def dumbbell(
    pairs: int = 1,
    *,
    senders: int | None = None,
    receivers: int | None = None,
    tcp_pairs: int = 0,
    rate: Any = "10Mbps",
    delay: Any = "20ms",
    loss: Any = 0.0,
    queue: Any = None,
    access_rate: Any = "1Gbps",
    access_delay: Any = "1ms",
) -> Topology:
    """Two switches joined by one bottleneck; senders left, receivers right.

    ``senders`` hosts ``snd1..`` and ``receivers`` hosts ``r1..`` (default
    ``pairs`` each), plus ``tcp_pairs`` TCP endpoints ``tsrc_i`` (left) and
    ``tdst_i`` (right).  The bottleneck carries ``rate``/``delay``/``loss`` and
    a queue of ``queue`` packets (default: one bandwidth-delay product, at
    least 10 packets).
    """
    senders = pairs if senders is None else senders
    receivers = pairs if receivers is None else receivers
    b = _Builder()
    left, right = b.switch("s1"), b.switch("s2")
    if queue is None:
        bdp = parse_rate(rate) * 2 * (parse_time(delay) + 2 * parse_time(access_delay)) / 8 / 1500
        queue = max(10, int(math.ceil(bdp)))
    b.link(left, right, rate=rate, delay=delay, loss=loss, queue=queue)
    acc = dict(rate=access_rate, delay=access_delay, queue=DEFAULT_QUEUE_PACKETS)
    for i in range(1, senders + 1):
        b.link(b.host(f"snd{i}"), left, **acc)
    for i in range(1, tcp_pairs + 1):
        b.link(b.host(f"tsrc{i}"), left, **acc)
    for i in range(1, receivers + 1):
        b.link(b.host(f"r{i}"), right, **acc)
    for i in range(1, tcp_pairs + 1):
        b.link(b.host(f"tdst{i}"), right, **acc)
    return b.build()


def star(
    receivers: int = 4,
    *,
    rate: Any = "100Mbps",
    delay: Any | Sequence[Any] = "15ms",
    loss: Any | Sequence[Any] = 0.0,
    queue: Any = 100,
    tcp_pairs: int = 0,
    sender_rate: Any = "1Gbps",
) -> Topology:
    """One switch, a sender ``snd`` and receivers ``r1..``, each on its own link.

    ``delay`` and ``loss`` may be lists (one per receiver), as in the TFMCC
    paper's responsiveness experiments (four links with 0.1 %, 0.5 %, 2.5 %,
    12.5 % loss).  ``tcp_pairs`` adds ``tsrc_i`` beside the sender and
    ``tdst_i`` on receiver ``r_i``'s link parameters.
    """
    b = _Builder()
    sw = b.switch("s1")
    b.link(b.host("snd"), sw, rate=sender_rate, delay="0.5ms")
    for i in range(1, tcp_pairs + 1):
        b.link(b.host(f"tsrc{i}"), sw, rate=sender_rate, delay="0.5ms")

    def pick(v: Any, i: int) -> Any:
        return v[i % len(v)] if isinstance(v, (list, tuple)) else v

    for i in range(receivers):
        b.link(b.host(f"r{i + 1}"), sw, rate=rate, delay=pick(delay, i), loss=pick(loss, i), queue=queue)
    for i in range(tcp_pairs):
        b.link(b.host(f"tdst{i + 1}"), sw, rate=rate, delay=pick(delay, i), loss=pick(loss, i), queue=queue)
    return b.build()


def heterogeneous_losses(n: int, rng: random.Random, a: float = 1.0, mid_factor: float = 4.0) -> list[float]:
    """Per-receiver loss rates shaped like the TFMCC paper's scaling section.

    About ``a*ln(n)`` receivers in the high range 5-10 %, ``mid_factor`` times
    as many in 2-5 %, and the rest in 0.5-2 %, each uniform in its range and
    shuffled.  (The paper gives the ranges and the ``a log n`` size of the high
    group; the size of the middle group is our choice, a parameter here.)
    """
    if n <= 0:
        return []
    high = min(n, max(1, round(a * math.log(max(n, 2)))))
    mid = min(n - high, round(mid_factor * a * math.log(max(n, 2))))
    rates = [rng.uniform(0.05, 0.10) for _ in range(high)]
    rates += [rng.uniform(0.02, 0.05) for _ in range(mid)]
    rates += [rng.uniform(0.005, 0.02) for _ in range(n - high - mid)]
    rng.shuffle(rates)
    return rates


def kary_tree(
    receivers: int = 8,
    k: int = 2,
    *,
    depth: int | None = None,
    rate: Any = "100Mbps",
    delay: Any = "5ms",
    leaf_rate: Any | None = None,
    leaf_delay: Any | None = None,
    leaf_loss: Any = 0.0,
    loss_distribution: str | None = None,
    loss_seed: int = 1,
    queue: Any = 100,
    tcp_pairs: int = 0,
) -> Topology:
    """A k-ary tree of switches, the sender ``snd`` at the root switch and
    ``receivers`` hosts spread round-robin over the leaf switches.

    ``depth`` (levels of switches, root = 1) defaults to the smallest tree
    whose leaves number at least ``ceil(receivers / k)`` -- about k receivers
    per leaf switch.  Receiver links get ``leaf_*`` parameters; with
    ``loss_distribution='tfmcc'`` each receiver link gets a loss rate drawn by
    :func:`heterogeneous_losses` (seeded by ``loss_seed``).  ``tcp_pairs`` adds
    ``tsrc_i`` at the root and ``tdst_i`` on leaf switch i.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if receivers < 1:
        raise ValueError("receivers must be at least 1")
    if depth is None:
        depth = 1
        while k ** (depth - 1) * k < receivers and k > 1:
            depth += 1
    if depth < 1:
        raise ValueError("depth must be at least 1")
    b = _Builder()
    root = b.switch()
    level = [root]
    for _ in range(depth - 1):
        nxt = []
        for parent in level:
            for _ in range(k):
                child = b.switch()
                b.link(parent, child, rate=rate, delay=delay, queue=queue)
                nxt.append(child)
        level = nxt
    b.link(b.host("snd"), root, rate=rate, delay="0.5ms", queue=queue)
    for i in range(1, tcp_pairs + 1):
        b.link(b.host(f"tsrc{i}"), root, rate=rate, delay="0.5ms", queue=queue)
    if loss_distribution in (None, "none", "uniform"):
        losses = [leaf_loss] * receivers
    elif loss_distribution == "tfmcc":
        losses = heterogeneous_losses(receivers, random.Random(loss_seed))
    else:
        raise ValueError(f"unknown loss_distribution {loss_distribution!r} (none, tfmcc)")
    for i in range(receivers):
        b.link(b.host(f"r{i + 1}"), level[i % len(level)], rate=leaf_rate or rate,
               delay=leaf_delay or delay, loss=losses[i], queue=queue)
    for i in range(tcp_pairs):
        b.link(b.host(f"tdst{i + 1}"), level[i % len(level)], rate=leaf_rate or rate,
               delay=leaf_delay or delay, loss=losses[i % len(losses)], queue=queue)
    return b.build()


GENERATORS: dict[str, Callable[..., Topology]] = {
    "dumbbell": dumbbell,
    "star": star,
    "kary_tree": kary_tree,
}
