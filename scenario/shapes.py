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

from p4mcc.p4switch.units import parse_fraction, parse_rate, parse_size, parse_time
from p4mcc.scenario.bounds import MAX_DELAY_S, MAX_QUEUE_PACKETS, MAX_RATE_BPS, too_large
from p4mcc.scenario.topology import DEFAULT_QUEUE_PACKETS, GilbertElliott, Host, Link, LinkEnd, Switch, Topology


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


#: Bounds of the tree generator: a root with a handful of bottlenecks, each
#: with its own TCP load and receivers (issue-sized trees, not scaling runs).
TREE_MAX_BRANCHES = 16
TREE_MAX_RECEIVERS = 1000
TREE_MAX_TCP = 64
_BRANCH_KEYS = ("rate", "delay", "queue", "tcp_pairs", "receivers")


class GeneratorFieldError(ValueError):
    """A generator argument that is wrong, with the field it sits in
    (``branches[1].rate``), so the scenario reader can name it in full."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.msg = msg


def tree_layout(branches: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Host names per branch of :func:`tree`: ``receivers`` and ``tcp`` (``(src, dst)`` pairs).

    Receivers ``r1..`` and TCP pairs ``tsrc<i>``/``tdst<i>`` are numbered over
    the whole tree in branch order, so a bench that builds the scenario's TCP
    flows or reads per-receiver rows finds each host's branch here and not by
    repeating the numbering."""
    out, r, t = [], 0, 0
    for br in branches:
        n, k = int(br.get("receivers", 1)), int(br.get("tcp_pairs", 0))
        out.append({"receivers": [f"r{r + i}" for i in range(1, n + 1)],
                    "tcp": [(f"tsrc{t + i}", f"tdst{t + i}") for i in range(1, k + 1)]})
        r, t = r + n, t + k
    return out


def _count(field: str, v: Any, lo: int, hi: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise GeneratorFieldError(field, f"expected a whole number, got {type(v).__name__} {v!r:.40}")
    if not lo <= v <= hi:
        raise GeneratorFieldError(field, f"{v} is outside {lo}..{hi}")
    return v


def _field(field: str, parse: Callable[[Any], Any], v: Any) -> Any:
    try:
        return parse(v)
    except (TypeError, ValueError) as e:
        raise GeneratorFieldError(field, str(e)) from None


def _checked_branch(i: int, br: Any, access_delay: float) -> dict[str, Any]:
    """One branch spec, checked field by field (defaults: 10 Mb/s, 20 ms, 1 BDP)."""
    where = f"branches[{i}]"
    if not isinstance(br, dict):
        raise GeneratorFieldError(where, f"expected a mapping with {', '.join(_BRANCH_KEYS)}")
    unknown = sorted(str(k) for k in br if k not in _BRANCH_KEYS)
    if unknown:
        raise GeneratorFieldError(f"{where}.{unknown[0]}", f"unknown field (known: {', '.join(_BRANCH_KEYS)})")
    rate = _field(f"{where}.rate", parse_rate, br.get("rate", "10Mbps"))
    if not rate > 0:
        raise GeneratorFieldError(f"{where}.rate", "must be positive")
    if why := too_large(rate, MAX_RATE_BPS, "b/s"):
        raise GeneratorFieldError(f"{where}.rate", why)
    delay = _field(f"{where}.delay", parse_time, br.get("delay", "20ms"))
    if delay < 0:
        raise GeneratorFieldError(f"{where}.delay", "must not be negative")
    if why := too_large(delay, MAX_DELAY_S, "s"):
        raise GeneratorFieldError(f"{where}.delay", why)
    receivers = _count(f"{where}.receivers", br.get("receivers", 1), 0, TREE_MAX_RECEIVERS)
    tcp = _count(f"{where}.tcp_pairs", br.get("tcp_pairs", 0), 0, TREE_MAX_TCP)
    queue = br.get("queue")
    if queue is None:
        bdp = rate * 2 * (delay + 2 * access_delay) / 8 / 1500
        queue = max(10, int(math.ceil(bdp)))
    else:
        queue = _count(f"{where}.queue", queue, 1, MAX_QUEUE_PACKETS)
    return {"rate": rate, "delay": delay, "queue": queue, "tcp_pairs": tcp, "receivers": receivers}


def tree(
    branches: Sequence[dict[str, Any]] = ({}, {}),
    *,
    lossy_leaf: dict[str, Any] | None = None,
    access_rate: Any = "1Gbps",
    access_delay: Any = "1ms",
) -> Topology:
    """A root switch ``s1`` with the sender ``snd1`` and one bottleneck per branch.

    Each entry of ``branches`` is a mapping: ``rate``, ``delay`` (one way),
    ``queue`` (drop-tail, packets; default one bandwidth-delay product of the
    branch's round trip, at least 10), ``tcp_pairs`` and ``receivers``.
    Branch i's bottleneck joins ``s1`` to switch ``s<i+1>``; its receivers and
    TCP sinks hang off that switch, its TCP sources off the root, all on
    access links (``access_rate``, ``access_delay``), so a branch's round trip
    is ``2 * (delay + 2 * access_delay)``, as on :func:`dumbbell`.

    ``lossy_leaf: {branch: i, loss: p}`` (i from 1) gives the last receiver of
    branch i an access link that drops each packet with probability ``p``:
    random loss that no congestion causes, as on a wireless leaf.  Host
    names per branch: :func:`tree_layout`.
    """
    if not isinstance(branches, (list, tuple)) or not 1 <= len(branches) <= TREE_MAX_BRANCHES:
        raise GeneratorFieldError("branches", f"expected a list of 1..{TREE_MAX_BRANCHES} branch mappings")
    acc_delay = _field("access_delay", parse_time, access_delay)
    _field("access_rate", parse_rate, access_rate)
    specs = [_checked_branch(i, br, acc_delay) for i, br in enumerate(branches)]
    lossy: tuple[int, float] | None = None
    if lossy_leaf is not None:
        if not isinstance(lossy_leaf, dict) or set(lossy_leaf) - {"branch", "loss"}:
            raise GeneratorFieldError("lossy_leaf", "expected a mapping {branch, loss}")
        bi = _count("lossy_leaf.branch", lossy_leaf.get("branch"), 1, len(specs))
        p = _field("lossy_leaf.loss", parse_fraction, lossy_leaf.get("loss"))
        if not 0 <= p < 1:
            raise GeneratorFieldError("lossy_leaf.loss", f"{p} is outside [0, 1)")
        if specs[bi - 1]["receivers"] < 1:
            raise GeneratorFieldError("lossy_leaf.branch", f"branch {bi} has no receivers")
        lossy = (bi, p)
    b = _Builder()
    root = b.switch("s1")
    acc = dict(rate=access_rate, delay=access_delay, queue=DEFAULT_QUEUE_PACKETS)
    b.link(b.host("snd1"), root, **acc)
    layout = tree_layout(specs)
    for i, (spec, names) in enumerate(zip(specs, layout), start=1):
        sw = b.switch(f"s{i + 1}")
        b.link(root, sw, rate=spec["rate"], delay=spec["delay"], queue=spec["queue"])
        for src, dst in names["tcp"]:
            b.link(b.host(src), root, **acc)
            b.link(b.host(dst), sw, **acc)
        for j, r in enumerate(names["receivers"]):
            loss = lossy[1] if lossy and lossy[0] == i and j == len(names["receivers"]) - 1 else 0.0
            b.link(b.host(r), sw, **{**acc, "loss": loss})
    return b.build()


GENERATORS: dict[str, Callable[..., Topology]] = {
    "dumbbell": dumbbell,
    "star": star,
    "kary_tree": kary_tree,
    "tree": tree,
}
