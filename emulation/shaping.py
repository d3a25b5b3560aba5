"""How each direction of each link is shaped, on each switch target.

The plan (:mod:`emulation.plan`) says *what* every link direction must do:
rate, delay, queue, loss, as ``--link PORT:DIR:PARAMS`` values of the
switch that owns it.  This module decides *how*, per switch port:

* built-in switch: its own link emulation (p4switch/linkemu.py) does it all;
* BMv2 where the kernel has every queueing discipline the port needs: the
  kernel's standard shaping, as Mininet's TCLink does -- ``netem`` for delay
  and loss, ``htb`` for the rate, ``pfifo`` (or ``bfifo`` for a byte limit)
  for the drop-tail queue.  The egress direction is shaped on the switch's
  own interface (BMv2 sends into it), the ingress direction of a host link on
  the host's interface (the host sends into it);
* BMv2 where a discipline is missing (a kernel without ``netem``): p4mcc's
  link emulation in a process of its own (:mod:`emulation.linkproc`) between
  BMv2's port and the cable: BMv2 opens ``<iface>-bm``, the link process
  opens ``<iface>-le`` (the other end of that veth pair) and the cable's
  ``<iface>``.  Both directions of such a port pass through it.

On BMv2 the shaper is the byte-accurate limit.  In a scenario with a
stamped session, BMv2's own egress queue for every rate-shaped egress
direction is also given the link's depth and a packet rate no faster than
the link (:mod:`emulation.bmv2_queue`), so the standing queue forms in BMv2
and its queue metadata describe the link (:func:`stamped`).

Everything here is pure; :func:`probe_qdiscs` is the one function that asks
the kernel, and the runner calls it once per run.
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import asdict, dataclass
from typing import Iterable

from p4mcc.emulation.plan import EmulationPlan

#: How a port direction is shaped (the ``how`` field of summary.json's ``links``).
SWITCH = "switch"      # the built-in switch's own link emulation
KERNEL = "tc"          # the kernel's qdiscs on the sending interface
LINKPROC = "linkproc"  # p4mcc's link emulation in its own process beside BMv2
NONE = "none"          # nothing to shape: a plain veth

#: Suffixes of the veth pair a link process sits on (BMv2 side, link-process side).
BMV2_SUFFIX = "-bm"
LINKPROC_SUFFIX = "-le"
#: Interface names are at most 15 characters (IFNAMSIZ - 1).
IFNAME_MAX = 15

#: Queueing disciplines the kernel path needs, probed at run time.
QDISCS = ("htb", "pfifo", "bfifo", "netem")
#: Below this rate (bit/s) a link is shaped; at it or above, a veth is fast enough.
UNSHAPED_RATE_BPS = 1e9
#: netem's own packet limit: it holds the packets in flight on the delay line
#: (the drop-tail queue is the leaf below it), so it must never be the limit.
NETEM_MIN_LIMIT = 1000
MIN_FRAME_BITS = 64 * 8


class ShapingError(ValueError):
    """A link direction that no shaping available here can emulate; names the link and the field."""


@dataclass(frozen=True)
class Direction:
    """One direction of one link, as the switch that owns it shapes it."""

    link: str        # "s1-p1--s2-p1" or "h1--s1-p2"
    sender: str      # the node that sends into this direction
    receiver: str
    switch: str      # the switch whose port this direction belongs to
    port: int
    iface: str       # the switch's interface for the port
    direction: str   # "egress" (switch -> peer) or "ingress" (peer -> switch)
    rate_bps: float | None
    delay_s: float
    queue_packets: int | None
    queue_bytes: int | None
    loss: float

    @property
    def rate_shaped(self) -> bool:
        """Its rate is below what counts as unshaped (a real bottleneck)."""
        return self.rate_bps is not None and self.rate_bps < UNSHAPED_RATE_BPS

    @property
    def shaped(self) -> bool:
        return self.delay_s > 0 or self.loss > 0 or self.rate_shaped

    def needs(self) -> set[str]:
        """The kernel disciplines this direction needs."""
        out: set[str] = set()
        if not self.shaped:
            return out
        if self.rate_shaped:
            out.add("htb")
            out.add("bfifo" if self.queue_bytes is not None and self.queue_packets is None else "pfifo")
        if self.delay_s > 0 or self.loss > 0:
            out.add("netem")
        return out


@dataclass(frozen=True)
class Shaping:
    """How one direction is shaped on one target (one row of summary.json's ``links``)."""

    link: str
    sender: str
    receiver: str
    target: str
    how: str          # SWITCH, KERNEL, LINKPROC or NONE
    where: str        # the node and interface (or switch port) that shapes it
    params: str       # the direction's link parameters, as the switch's --link flag writes them
    commands: tuple[str, ...] = ()  # the tc commands (KERNEL only)
    #: BMv2's egress queue for this direction (emulation/bmv2_queue.py), as a dict
    bmv2_queue: dict[str, object] | None = None

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["commands"] = list(self.commands)
        return d


def _params(flag: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in flag.split(":", 2)[2].split(",") if "=" in kv)


def directions(plan: EmulationPlan) -> list[Direction]:
    """Every shaped-or-not link direction the plan's switches own, in flag order."""
    from p4mcc.p4switch.units import parse_rate

    peer: dict[tuple[str, int], tuple[str, str]] = {}
    for c in plan.cables:
        a = f"{c.a}-p{c.a_port}" if c.a in plan.switches else c.a
        b = f"{c.b}-p{c.b_port}" if c.b in plan.switches else c.b
        name = f"{a}--{b}"
        peer[(c.a, c.a_port)] = (c.b, name)
        peer[(c.b, c.b_port)] = (c.a, name)
    out = []
    for sw in plan.switches.values():
        for flag in sw.link_flags:
            port_s, direction, _ = flag.split(":", 2)
            port = int(port_s)
            other, name = peer[(sw.name, port)]
            p = _params(flag)
            q = p.get("queue", "none")
            rate = parse_rate(p["rate"]) if "rate" in p else None
            sender, receiver = (sw.name, other) if direction == "egress" else (other, sw.name)
            out.append(Direction(
                name, sender, receiver, sw.name, port, sw.ports[port], direction, rate,
                float(p.get("delay", "0ms").removesuffix("ms") or 0) / 1e3,
                None if q == "none" else int(q),
                int(p["queue_bytes"]) if "queue_bytes" in p else None,
                float(p.get("loss", 0) or 0)))
    return out


def _flag_params(flag: str) -> str:
    return flag.split(":", 2)[2]


def linkproc_ports(plan: EmulationPlan, available: Iterable[str]) -> dict[str, set[int]]:
    """Switch -> the ports whose traffic goes through a link process on BMv2.

    A port goes through one when any direction on it needs a discipline the
    kernel lacks (then both its directions do: the process sits on the port).
    """
    have = set(available)
    out: dict[str, set[int]] = {s: set() for s in plan.switches}
    for d in directions(plan):
        if d.needs() - have:
            out[d.switch].add(d.port)
    return out


def tc_commands(d: Direction, dev: str) -> list[str]:
    """The ``tc`` commands that shape ``d`` on interface ``dev`` (without netns prefix).

    netem (delay, loss) at the root, its child an htb class at the rate, and
    the class's leaf the drop-tail queue (pfifo in packets, bfifo in bytes).
    netem's own limit covers the frames on its delay line, never the queue's.
    Delay then queue drops the same frames as queue then delay (a constant
    delay shifts every arrival alike); loss before the queue keeps lost
    frames out of it, as a lossy wire upstream would.
    """
    cmds: list[str] = []
    shaped_rate = d.rate_bps is not None and d.rate_bps < UNSHAPED_RATE_BPS
    parent = "root"
    if d.delay_s > 0 or d.loss > 0:
        in_flight = 0
        if d.rate_bps is not None:
            in_flight = math.ceil(d.rate_bps * d.delay_s / MIN_FRAME_BITS)
        limit = max(NETEM_MIN_LIMIT, in_flight + (d.queue_packets or 0))
        netem = f"tc qdisc replace dev {dev} root handle 1: netem"
        if d.delay_s > 0:
            netem += f" delay {d.delay_s * 1e6:.0f}us"
        if d.loss > 0:
            netem += f" loss {d.loss * 100:.6g}%"
        cmds.append(netem + f" limit {limit}")
        parent = "parent 1:1"
    if shaped_rate:
        assert d.rate_bps is not None
        rate = f"{d.rate_bps:.0f}bit"
        # one full frame per burst, or one timer tick's worth of the rate (1 ms)
        burst = max(1600, math.ceil(d.rate_bps / 8 / 1000))
        verb = "replace" if parent == "root" else "add"
        cmds.append(f"tc qdisc {verb} dev {dev} {parent} handle 2: htb default 1")
        cmds.append(f"tc class add dev {dev} parent 2: classid 2:1 htb rate {rate} ceil {rate} "
                    f"burst {burst}b cburst {burst}b")
        if d.queue_packets is not None:
            cmds.append(f"tc qdisc add dev {dev} parent 2:1 handle 3: pfifo limit {d.queue_packets}")
        elif d.queue_bytes is not None:
            cmds.append(f"tc qdisc add dev {dev} parent 2:1 handle 3: bfifo limit {d.queue_bytes}")
        else:
            cmds.append(f"tc qdisc add dev {dev} parent 2:1 handle 3: pfifo limit {NETEM_MIN_LIMIT}")
    return cmds


def host_of(plan: EmulationPlan, d: Direction) -> tuple[str, str] | None:
    """(host, its interface) at the other end of a host link direction, None for a switch peer."""
    other = d.sender if d.direction == "ingress" else d.receiver
    h = plan.hosts.get(other)
    return (h.name, h.iface) if h is not None else None


def stamped(plan: EmulationPlan) -> bool:
    """Whether a session reads the congestion stamp, so queue metadata must see the bottleneck.

    Only then does BMv2's egress queue hold a shaped link's standing queue
    (:mod:`emulation.bmv2_queue`): it paces departures in packets, not bytes,
    so flows of frames smaller than the largest would get less than their
    share of the link; elsewhere the shaper's byte-accurate queue is the
    faithful one."""
    return any(s.assistance == "stamp" for s in plan.scenario.sessions)


def exact_replication(plan: EmulationPlan) -> set[str]:
    """The switches that get port-set groups, so replicate data to member ports only."""
    from p4mcc.controller.desired import port_sets_fit
    from p4mcc.controller.program import CPU_PORT

    return {name for name, sw in plan.switches.items() if port_sets_fit(p for p in sw.ports if p != CPU_PORT)}


def shapings(plan: EmulationPlan, target: str, available: Iterable[str] = ()) -> list[Shaping]:
    """How every link direction is shaped on ``target`` ("builtin" or "bmv2").

    ``available`` is the kernel's disciplines (:func:`probe_qdiscs`), for BMv2.
    """
    from p4mcc.emulation.bmv2_queue import plan_queues

    have = set(available)
    via_proc = linkproc_ports(plan, have) if target == "bmv2" else {}
    queues = plan_queues(directions(plan), exact_replication(plan)) if target == "bmv2" and stamped(plan) else {}
    out = []
    for d in directions(plan):
        q = queues.get((d.switch, d.port)) if d.direction == "egress" else None
        bq = q.as_dict() if q is not None else None
        flag_params = next(_flag_params(f) for f in plan.switches[d.switch].link_flags
                           if f.startswith(f"{d.port}:{d.direction}:"))
        at_port = f"{d.switch} port {d.port} ({d.iface}) {d.direction}"
        if not d.shaped:
            out.append(Shaping(d.link, d.sender, d.receiver, target, NONE, at_port, flag_params))
        elif target == "builtin":
            out.append(Shaping(d.link, d.sender, d.receiver, target, SWITCH, at_port, flag_params))
        elif d.port in via_proc.get(d.switch, set()):
            out.append(Shaping(d.link, d.sender, d.receiver, target, LINKPROC,
                               f"link process of {d.switch} between {bmv2_iface(d.iface)} and {d.iface} "
                               f"({d.direction})", flag_params, bmv2_queue=bq))
        else:
            if d.direction == "egress":
                node, dev = d.switch, d.iface
            else:
                peer = host_of(plan, d)
                if peer is None:  # the plan gives ingress flags only to host links
                    raise ShapingError(f"{d.link}: an ingress direction without a host to shape it on")
                node, dev = peer
            out.append(Shaping(d.link, d.sender, d.receiver, target, KERNEL, f"{node} {dev}", flag_params,
                               tuple(tc_commands(d, dev)), bmv2_queue=bq))
    return out


def bmv2_iface(iface: str) -> str:
    """The interface BMv2 opens for a port whose traffic goes through a link process."""
    return _suffixed(iface, BMV2_SUFFIX)


def linkproc_iface(iface: str) -> str:
    """The link process's end of the veth pair toward BMv2."""
    return _suffixed(iface, LINKPROC_SUFFIX)


def _suffixed(iface: str, suffix: str) -> str:
    name = iface + suffix
    if len(name) > IFNAME_MAX:
        raise ShapingError(f"{iface}: interface name {name!r} is longer than {IFNAME_MAX} characters "
                           "(use shorter switch names for BMv2 with link processes)")
    return name


def probe_qdiscs(dev: str, kinds: Iterable[str] = QDISCS, run=subprocess.run) -> frozenset[str]:
    """The disciplines the kernel lets us attach, tried on ``dev`` (an interface of this run).

    Each is added as the root qdisc and deleted again; a kernel without the
    module (and no way to load it) refuses with "unknown qdisc kind".
    """
    args = {"htb": ["htb"], "pfifo": ["pfifo", "limit", "10"], "bfifo": ["bfifo", "limit", "15000"],
            "netem": ["netem", "delay", "1ms"]}
    have = set()
    for kind in kinds:
        r = run(["tc", "qdisc", "add", "dev", dev, "root", *args[kind]], capture_output=True, text=True)
        if r.returncode == 0:
            have.add(kind)
            run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True, text=True)
    return frozenset(have)
