"""The scenario format shared by ``p4mcc sim`` and ``p4mcc run``.

A scenario says what network to build (hosts, switches, links with rate,
delay, loss and queue), which multicast sessions and TCP flows run on it, for
how long, with which seed and how often metrics are sampled.  Both engines
read the same :class:`Scenario`, so a run in emulation and a run in simulation
of one file are comparable.  ``docs/scenario-format.md`` documents every field.

Validation collects every problem and names the field it is in, in the
dotted/indexed form a user can find in the file, e.g.
``sessions[1].receivers[0]: unknown host 'h9'``.  The topology part may also be
a p4lang/tutorials ``topology.json`` (hosts with ``ip``/``mac``, switches,
links ``[a, b, latency, bandwidth]`` with ``s1-p2`` port names).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import logging
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from p4mcc.hosts.addresses import group_problem
from p4mcc.hosts.registry import MAX_RATE_BPS
from p4mcc.scenario.reader import read_document  # noqa: F401 - the one reader, re-exported for sweeps
from p4mcc.hosts.tcp_rules import MIN_RTO
from p4mcc.p4switch.units import parse_fraction, parse_rate, parse_size, parse_time
from p4mcc.hosts.rules import DEFAULT as DEFAULT_PROFILE
from p4mcc.hosts.rules import PROFILE_NAMES, RuleError, parse_switch
from p4mcc.scenario import bounds
from p4mcc.scenario.bounds import MAX_DELAY_S, MAX_QUEUE_BYTES, MAX_QUEUE_PACKETS, MAX_SEED, MAX_TIME_S
from p4mcc.scenario.topology import (DEFAULT_QUEUE_PACKETS, DEFAULT_RATE_BPS, GilbertElliott, Host, Link, LinkEnd,
                               Switch, Topology, known_name)


class ScenarioError(ValueError):
    """One or more problems in a scenario, each prefixed by the field's path."""

    def __init__(self, problems: list[str], more: int = 0):
        self.problems = capped(problems, more)
        super().__init__("\n".join(self.problems))


def capped(problems: list[str], more: int = 0) -> list[str]:
    """At most :data:`MAX_PROBLEMS` problems, then one line counting the rest
    (with ``more`` found but never written out)."""
    rest = max(0, len(problems) - MAX_PROBLEMS) + more
    return [*problems[:MAX_PROBLEMS], *([f"... and {rest} more problems"] if rest else [])]


MIN_METRICS_INTERVAL = 1e-3
"""Finest sampling of a run's metrics: a millisecond is finer than any rate
or queue the plots resolve, and 1 us kept 5 GB of samples for a 10 s run."""


MAX_DURATION_S = MAX_TIME_S
"""Longest run (the bound of every time in a scenario): a larger figure
(1e300) is a typing slip that would run without end."""
MAX_PROBLEMS = 50
"""Problems listed for one scenario; the rest are counted in one more line
(300,000 unknown keys must not print 300,000 lines)."""
def _duration_problem(value: float) -> str | None:
    """Why ``value`` cannot be a run's duration (the file's field and ``--duration``)."""
    if not 0 < value < math.inf:
        return "must be a positive, finite number of seconds"
    if value > MAX_DURATION_S:
        return f"must be at most {MAX_DURATION_S:g} s (one day)"
    return None


def _seed_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a run's seed (the file's field and ``--seed``)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED
    return None if ok else f"expected an integer 0..2**64-1, got {_short(value)}"


# ---------------------------------------------------------------------------
# Dataclasses (the network's are in scenario/topology.py)


@dataclass(frozen=True)
class Session:
    """One multicast session: a protocol, a sender, its receivers."""

    name: str
    protocol: str
    sender: str
    receivers: tuple[str, ...]
    group: str
    port: int
    start: float = 0.0
    stop: float | None = None
    #: Whether switches assist this session (aggregation/filtering) or only
    #: replicate; ``"stamp"``: assist, and stamp its data packets with the
    #: path's congestion signal (docs/stamp.md).
    assistance: bool | str = True
    params: dict[str, Any] = field(default_factory=dict)
    #: Session id on the wire (common header); defaults to the session's index + 1.
    session_id: int = 0
    #: Per-receiver join times (receiver -> seconds); absent receivers join at ``start``.
    join_at: dict[str, float] = field(default_factory=dict)
    #: Per-receiver leave times (receiver -> seconds).
    leave_at: dict[str, float] = field(default_factory=dict)
    #: The protocol's profile (``hosts.rules``): ``paper``, ``default`` or ``stamped``.
    profile: str = DEFAULT_PROFILE
    #: Rules switched on (True) or off (False) by name, on top of ``profile``.
    rules: dict[str, bool] = field(default_factory=dict)

    def effective_rules(self) -> tuple[str, ...]:
        """The rule list the session's agents run: ``profile`` with ``rules`` applied.

        Resolved by the protocol's rule book (``hosts.registry``), in
        composition order, so equal choices give equal lists in the results.
        Raises ``hosts.registry.ParamError`` for names the book does not know
        (the scenario reader has refused those already for a loaded file).
        """
        from p4mcc.hosts import registry

        return registry.get(self.protocol).resolve_rules(self.profile, self.rules)


@dataclass(frozen=True)
class TcpFlow:
    """One bulk TCP transfer from ``src`` to ``dst`` (iperf3-like)."""

    name: str
    src: str
    dst: str
    start: float = 0.0
    stop: float | None = None
    port: int = 5201
    mss: int = 1460
    #: Receive window in bytes (the sender never has more in flight).
    rwnd: int = 4 * 1024 * 1024
    #: The simulator's retransmission-timeout rule (a key of ``TCP_RTO_RULES``);
    #: Mininet runs the kernel's TCP, whose rule is "linux".
    rto: str = "linux"
    #: The simulator's TCP's sending rule in loss recovery (one of
    #: ``TCP_RECOVERY_RULES``); Mininet runs the kernel's, which is "prr".
    recovery: str = "prr"


#: The simulator's TCP retransmission-timeout rules and their floors (s):
#: "linux" puts the floor on the variance term, RTO = SRTT + max(4 RTTVAR,
#: 200 ms), as the kernel that Mininet runs does; "rfc6298" floors the whole
#: RTO at RFC 6298 2.4's 1 s (``hosts.tcp_rules.MIN_RTO``).
TCP_RTO_RULES = {"linux": 0.2, "rfc6298": MIN_RTO}

#: The simulator's TCP's sending rules in loss recovery: "prr", RFC 6937's
#: Proportional Rate Reduction, as the kernel that Mininet runs does; "rfc6675",
#: cwnd set to ssthresh on entry and sending while the pipe is below it.
TCP_RECOVERY_RULES = ("prr", "rfc6675")

#: The smallest send-path time ``auto`` gives (s), a host kernel's send
#: path: 0.5 ms, under the service time of a 1500-byte packet on any
#: bottleneck up to 24 Mb/s (0.6 ms at 20 Mb/s).  Floyd and Jacobson (1992)
#: break phase effects with a random processing time at the sources of up
#: to one bottleneck service time; a fraction of it already broke the
#: lock-in measured here.  On a 4 Mb/s, 30 ms dumbbell with a 20-packet
#: queue, RLA with two receivers took 12.1x a TCP flow's throughput with an
#: exact clock (TCP lost every overflow and timed out 60 times in 60 s) and
#: 1.28x with it (``tests/netsim/test_phase_effects.py``).  The same lock
#: works against a session whose hosts keep an exact clock: MTCP with eight
#: receivers on an 8 Mb/s, 80 ms, 27-packet dumbbell lost the overflows
#: TCP's segments passed and took 0.48 of TCP, 1.17 once its own hosts had
#: the same send path (docs/friendliness.md).
SEND_PATH_FLOOR = 0.0005

LOG = logging.getLogger("p4mcc.scenario")

#: ``tcp_jitter: auto`` / ``agent_jitter: auto``, the default: Floyd and
#: Jacobson's size, one 1500-byte frame's service time on the topology's
#: slowest link (12 ms at 1 Mb/s), never below :data:`SEND_PATH_FLOOR` nor
#: above 100 ms; resolved when the simulator builds the network
#: (``netsim.run.send_path_time``).  A fixed 0.5 ms, a twelfth to a
#: twenty-fourth of a service time on 1-2 Mb/s links, left a paced
#: session's share next to TCP flipping with 15 % steps of the link's rate
#: (docs/simulator.md, "Its size"; ``tests/netsim/test_phase_effects.py``).
SEND_PATH_AUTO = "auto"
#: The largest send-path time a scenario may ask for, ``auto`` included (s).
SEND_PATH_MAX = 0.1


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    topology: Topology
    sessions: list[Session]
    tcp_flows: list[TcpFlow]
    duration: float
    seed: int = 1
    metrics_interval: float = 0.5
    #: Where the file came from (for relative paths), if anywhere.
    source: str = ""
    #: Per-port pcaps to write (``capture:``, see scenario/capture.py); None: none.
    capture: Any = None
    #: Faults to inject, policing and membership settings (scenario/faults.py).
    faults: tuple[Any, ...] = ()
    policing: Any = None
    membership: Any = None
    #: The steady-state window results report beside the whole-run mean: a
    #: fraction of the run (the window starts there and lasts to the end) or
    #: ``(start, end)`` in seconds.
    steady_window: float | tuple[float, float] = 0.5
    #: The simulated kernel's send-path time for TCP flows: each frame a TCP
    #: flow's hosts send (segments and ACKs) waits a uniform random time up to
    #: this (s) before it may start on the wire, as a real kernel's softirq,
    #: qdisc and NIC make it wait.  Without it the exact clock locks TCP and
    #: the sessions into fixed phases at drop-tail queues, where one loses
    #: every overflow (``netsim.link.Channel.set_jitter``).
    #: Emulation ignores it: its kernels are real.
    tcp_jitter: float | str = SEND_PATH_AUTO
    #: The same send-path time for the sessions' hosts (senders and
    #: receivers: data, feedback and IGMP alike).  The agents stamp their
    #: packets before it, as a real agent's socket call does before the
    #: kernel sends.  0: the exact clock, where a session can sit on either
    #: side of the phase lock (before this knob existed its hosts had none).
    agent_jitter: float | str = SEND_PATH_AUTO

    def steady_bounds(self) -> tuple[float, float]:
        """The steady-state window as ``(start, end)`` seconds of the run."""
        return steady_bounds(self.steady_window, self.duration)

    def with_overrides(
        self, *, seed: int | None = None, duration: float | None = None,
        steady_window: float | tuple[float, float] | None = None,
    ) -> "Scenario":
        """A copy with ``--seed``/``--duration``/``--steady-window`` applied (command-line overrides).

        Raises :class:`ScenarioError` naming the flag when an override is one
        the file's own field would refuse (a negative duration reached the
        simulator's clock as a traceback).
        """
        problems = []
        if seed is not None and (why := _seed_problem(seed)):
            problems.append(f"--seed: {why}")
        if duration is not None and (why := _duration_problem(duration)):
            problems.append(f"--duration: {why}, got {duration!r}")
        if problems:
            raise ScenarioError(problems)
        return replace(
            self,
            seed=self.seed if seed is None else seed,
            duration=self.duration if duration is None else duration,
            steady_window=self.steady_window if steady_window is None else steady_window,
        )


def steady_bounds(window: float | tuple[float, float], duration: float) -> tuple[float, float]:
    """``(start, end)`` of a steady-state window over a run of ``duration`` s."""
    if isinstance(window, tuple):
        return (min(window[0], duration), min(window[1], duration))
    return (duration * window, duration)


def parse_steady_window(value: Any) -> float | tuple[float, float]:
    """``0.5``/``'50%'`` (a fraction: from there to the end), ``[30, 60]`` or
    ``'30s:60s'`` (start and end in seconds)."""
    if isinstance(value, str) and ":" in value:
        value = value.split(":", 1)
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"expected [start, end], got {value!r}")
        lo, hi = parse_time(value[0]), parse_time(value[1])
        if why := bounds.too_large(hi, MAX_TIME_S, "s"):
            raise ValueError(f"the end {why}")
        if not 0 <= lo < hi:
            raise ValueError(f"expected 0 <= start < end, got {value!r}")
        return (lo, hi)
    frac = parse_fraction(value)
    if frac >= 1:
        raise ValueError(f"a fraction of the run below 1 (0.5: the second half), got {value!r}")
    return frac


# ---------------------------------------------------------------------------
# Loading


class _Ctx:
    """Collects problems with the path of the field they are in."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.more = 0  # problems found past MAX_PROBLEMS, counted only

    def err(self, path: str, msg: str) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.more += 1
            return
        self.problems.append(f"{path}: {msg}" if path else msg)

    def conv(self, path: str, fn: Any, value: Any, default: Any = None) -> Any:
        try:
            return fn(value)
        except (ValueError, TypeError, OverflowError) as e:  # int(inf) overflows
            self.err(path, str(e))
            return default

    def expect(self, path: str, value: Any, kinds: type | tuple[type, ...], what: str) -> bool:
        ok = isinstance(value, bool) if kinds is bool else (
            isinstance(value, kinds) and not isinstance(value, bool))
        if not ok:
            self.err(path, f"expected {what}, got {type(value).__name__} {_short(value)}")
        return ok

    def unknown_keys(self, path: str, d: dict, allowed: Iterable[str]) -> None:
        allowed = set(allowed)
        known = ", ".join(sorted(allowed))
        odd = 0
        for k in d:
            if k in allowed:
                continue
            if len(self.problems) >= MAX_PROBLEMS:
                self.more += 1
                continue
            if isinstance(k, str) and _NAME_RE.match(k):
                self.err(f"{path}.{k}" if path else k, f"unknown field (known: {known})")
            else:
                odd += 1  # not a field name: perhaps a line of some other file; never echoed
        if odd:
            self.err(path, f"{odd} unknown field(s) whose names are not identifiers (known: {known}); "
                           "is this the right file?")


def _mac_for(index: int) -> str:
    return "08:00:00:00:%02x:%02x" % ((index >> 8) & 0xFF, index & 0xFF)


_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def _parse_end(ctx: _Ctx, path: str, value: Any, topo_nodes: set[str]) -> LinkEnd | None:
    if not ctx.expect(path, value, str, "a node name like 'h1' or 's1-p2'"):
        return None
    m = re.match(r"^(.+)-p(\d+)$", value)
    node, port = (m.group(1), int(m.group(2))) if m else (value, None)
    if node not in topo_nodes:
        ctx.err(path, f"unknown node {node!r}")
        return None
    return LinkEnd(node, port)


def _parse_loss(ctx: _Ctx, path: str, value: Any) -> float | GilbertElliott:
    if isinstance(value, dict):
        ctx.unknown_keys(path, value, {"model", "p_gb", "p_bg", "loss_good", "loss_bad", "p"})
        model = value.get("model", "bernoulli")
        if model == "bernoulli":
            return ctx.conv(f"{path}.p", parse_fraction, value.get("p", 0.0), 0.0)
        if model in ("gilbert", "gilbert-elliott", "gilbert_elliott"):
            for k in ("p_gb", "p_bg"):
                if k not in value:
                    ctx.err(f"{path}.{k}", "required for the Gilbert-Elliott model")
            return GilbertElliott(
                p_gb=ctx.conv(f"{path}.p_gb", parse_fraction, value.get("p_gb", 0.0), 0.0),
                p_bg=ctx.conv(f"{path}.p_bg", parse_fraction, value.get("p_bg", 1.0), 1.0),
                loss_good=ctx.conv(f"{path}.loss_good", parse_fraction, value.get("loss_good", 0.0), 0.0),
                loss_bad=ctx.conv(f"{path}.loss_bad", parse_fraction, value.get("loss_bad", 1.0), 1.0),
            )
        ctx.err(f"{path}.model", f"unknown loss model {model!r} (bernoulli, gilbert)")
        return 0.0
    return ctx.conv(path, parse_fraction, value, 0.0)


_LINK_KEYS = {"a", "b", "rate", "bw", "bandwidth", "delay", "latency", "loss", "queue"}


def _parse_link_rate(ctx: _Ctx, path: str, raw: Any) -> float | None:
    """A link's rate: positive bits per second (``10Mbps``, ``1e6``)."""
    rate = ctx.conv(path, parse_rate, raw, DEFAULT_RATE_BPS)
    if rate is not None and rate <= 0:
        ctx.err(path, "must be positive")
    elif rate is not None and rate > MAX_RATE_BPS:
        ctx.err(path, f"must be at most {MAX_RATE_BPS / 1e9:g} Gb/s")
    return rate


def _parse_link_delay(ctx: _Ctx, path: str, raw: Any) -> float | None:
    """A link's one-way delay: not negative (``20ms``, ``0.02``)."""
    delay = ctx.conv(path, parse_time, raw, 0.0)
    if delay is not None and delay < 0:
        ctx.err(path, "must not be negative")
    elif not bounds.check(ctx, path, delay, MAX_DELAY_S, "s"):
        return None
    return delay


def _parse_queue(ctx: _Ctx, path: str, q: Any) -> tuple[int | None, int | None]:
    """A link's drop-tail limit as (packets, bytes): a count of packets, or
    ``{packets, bytes}`` (either or both); None: the default packet limit."""
    qp: int | None = DEFAULT_QUEUE_PACKETS
    qb: int | None = None
    if q is None:
        return qp, qb
    if isinstance(q, dict):
        ctx.unknown_keys(path, q, {"packets", "bytes"})
        qp = ctx.conv(f"{path}.packets", int, q["packets"]) if "packets" in q else None
        qb = ctx.conv(f"{path}.bytes", parse_size, q["bytes"]) if "bytes" in q else None
        if qp is None and qb is None and not q:
            ctx.err(path, "give packets and/or bytes")
    else:
        qp = ctx.conv(path, int, q)
    for name, v, hi in (("packets", qp, MAX_QUEUE_PACKETS), ("bytes", qb, MAX_QUEUE_BYTES)):
        if v is not None and v < 1:
            ctx.err(f"{path}.{name}", "must be at least 1")
        elif v is not None and v > hi:
            ctx.err(f"{path}.{name}", f"must be at most {hi:,}, got {v:.3g}")
    return qp, qb


def _parse_link(ctx: _Ctx, path: str, raw: Any, nodes: set[str], defaults: dict) -> Link | None:
    if isinstance(raw, list):
        # p4lang/tutorials: [a, b] or [a, b, latency] or [a, b, latency, bandwidth_mbps]
        if not 2 <= len(raw) <= 4:
            ctx.err(path, "a list link is [a, b] or [a, b, latency, bandwidth_Mbps]")
            return None
        d: dict[str, Any] = {"a": raw[0], "b": raw[1]}
        if len(raw) > 2:
            d["delay"] = raw[2] if isinstance(raw[2], str) else f"{raw[2]}ms"
        if len(raw) > 3 and raw[3] is not None:
            d["rate"] = f"{raw[3]}Mbps" if not isinstance(raw[3], str) else raw[3]
        raw = d
    if not ctx.expect(path, raw, dict, "a link (mapping or list)"):
        return None
    ctx.unknown_keys(path, raw, _LINK_KEYS)
    merged = {**defaults, **raw}
    a = _parse_end(ctx, f"{path}.a", raw.get("a"), nodes) if "a" in raw else None
    b = _parse_end(ctx, f"{path}.b", raw.get("b"), nodes) if "b" in raw else None
    for k in ("a", "b"):
        if k not in raw:
            ctx.err(f"{path}.{k}", "required")
    rate_raw = merged.get("rate", merged.get("bw", merged.get("bandwidth", DEFAULT_RATE_BPS)))
    rate = _parse_link_rate(ctx, f"{path}.rate", rate_raw)
    delay = _parse_link_delay(ctx, f"{path}.delay", merged.get("delay", merged.get("latency", 0)))
    loss = _parse_loss(ctx, f"{path}.loss", merged.get("loss", 0.0))
    qp, qb = _parse_queue(ctx, f"{path}.queue", merged.get("queue"))
    if a is None or b is None:
        return None
    if a.node == b.node:
        ctx.err(path, f"link from {a.node!r} to itself")
        return None
    return Link(a, b, rate or DEFAULT_RATE_BPS, delay or 0.0, loss, qp, qb)


def _names_once(ctx: _Ctx, path: str, names: list[Any]) -> dict[Any, dict]:
    """A list of node names as a mapping to no options; a name listed twice
    is an error (most likely a typo for another node), not merged silently."""
    out: dict[Any, dict] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            ctx.err(f"{path}[{i}]", f"expected a name, got {type(name).__name__} {_short(name)}")
        elif name in out:
            ctx.err(f"{path}[{i}]", f"{_short(name)} is listed twice")
        else:
            out[name] = {}
    return out


def _parse_topology(ctx: _Ctx, path: str, raw: Any, base: Path | None) -> Topology:
    if isinstance(raw, str):
        p = Path(raw)
        if base is not None and not p.is_absolute():
            p = base / p
        try:
            raw = read_document(p)
        except OSError as e:
            ctx.err(path, f"cannot read topology file {str(p)!r}: {e.strerror or type(e).__name__}")
            return Topology({}, {}, [])
        except ValueError as e:  # messages carry positions only, never the file's text
            ctx.err(path, f"topology file {str(p)!r}: {e}")
            return Topology({}, {}, [])
        if not isinstance(raw, dict):
            ctx.err(path, f"topology file {str(p)!r} holds a {type(raw).__name__}, "
                          "not a mapping with hosts, switches, links")
            return Topology({}, {}, [])
    if not ctx.expect(path, raw, dict, "a mapping with hosts, switches, links"):
        return Topology({}, {}, [])
    if "generate" in raw:
        ctx.unknown_keys(path, raw, {"generate"})
        return _generate(ctx, f"{path}.generate", raw["generate"])
    ctx.unknown_keys(path, raw, {"hosts", "switches", "links", "link_defaults"})
    hosts: dict[str, Host] = {}
    raw_hosts = raw.get("hosts", {})
    if isinstance(raw_hosts, list):  # allow a list of names
        raw_hosts = _names_once(ctx, f"{path}.hosts", raw_hosts)
    if ctx.expect(f"{path}.hosts", raw_hosts, dict, "a mapping of host name -> {ip, mac}"):
        for i, (name, h) in enumerate(raw_hosts.items()):
            hp = f"{path}.hosts.{name}"
            h = h or {}
            if not ctx.expect(hp, h, dict, "a mapping with ip, mac"):
                continue
            ctx.unknown_keys(hp, h, {"ip", "mac", "commands"})
            ip_raw = h.get("ip", f"10.0.{(i + 1) // 250}.{(i + 1) % 250 + 1}/24")
            try:
                iface = ipaddress.IPv4Interface(str(ip_raw))
            except ValueError:
                ctx.err(f"{hp}.ip", f"not an IPv4 address: {ip_raw!r}")
                continue
            if iface.ip.is_multicast:
                ctx.err(f"{hp}.ip", f"{iface.ip} is a multicast address")
            if "/" not in str(ip_raw):
                iface = ipaddress.IPv4Interface(f"{iface.ip}/24")
            mac = str(h.get("mac", _mac_for(i + 1))).lower()
            if not _MAC_RE.match(mac):
                ctx.err(f"{hp}.mac", f"not a MAC address: {mac!r}")
            commands = h.get("commands", [])
            if not (isinstance(commands, list) and all(isinstance(c, str) for c in commands)):
                ctx.err(f"{hp}.commands", f"expected a list of command lines, got {type(commands).__name__}")
                commands = []
            hosts[str(name)] = Host(str(name), str(iface.ip), iface.network.prefixlen, mac, tuple(commands))
    seen_ip: dict[str, str] = {}
    for h in hosts.values():
        if h.ip in seen_ip:
            ctx.err(f"{path}.hosts.{h.name}.ip", f"{h.ip} is also {seen_ip[h.ip]}'s address")
        seen_ip[h.ip] = h.name
    switches: dict[str, Switch] = {}
    raw_sw = raw.get("switches", {})
    if isinstance(raw_sw, list):
        raw_sw = _names_once(ctx, f"{path}.switches", raw_sw)
    if ctx.expect(f"{path}.switches", raw_sw, dict, "a mapping of switch name -> options"):
        for name, s in raw_sw.items():
            if name in hosts:
                ctx.err(f"{path}.switches.{name}", "name is also a host")
            options = s or {}
            if ctx.expect(f"{path}.switches.{name}", options, dict, "a mapping of switch options"):
                switches[str(name)] = Switch(str(name), dict(options))
    links: list[Link] = []
    defaults = raw.get("link_defaults", {}) or {}
    if defaults:
        ctx.expect(f"{path}.link_defaults", defaults, dict, "a mapping of link fields")
        if isinstance(defaults, dict):
            ctx.unknown_keys(f"{path}.link_defaults", defaults, _LINK_KEYS - {"a", "b"})
    nodes = set(hosts) | set(switches)
    raw_links = raw.get("links", [])
    if ctx.expect(f"{path}.links", raw_links, list, "a list of links"):
        for i, l in enumerate(raw_links):
            link = _parse_link(ctx, f"{path}.links[{i}]", l, nodes,
                               defaults if isinstance(defaults, dict) else {})
            if link is not None:
                links.append(link)
    topo = Topology(hosts, switches, links)
    _check_topology(ctx, path, topo)
    return topo


def _check_topology(ctx: _Ctx, path: str, topo: Topology) -> None:
    host_links: dict[str, int] = {}
    used_ports: dict[tuple[str, int], int] = {}
    seen_pairs: dict[frozenset[str], int] = {}
    for i, l in enumerate(topo.links):
        for end, key in ((l.a, "a"), (l.b, "b")):
            if end.node in topo.hosts:
                host_links[end.node] = host_links.get(end.node, 0) + 1
                if host_links[end.node] > 1:
                    ctx.err(f"{path}.links[{i}].{key}",
                            f"host {end.node!r} already has a link (hosts have one interface)")
            elif end.port is not None:
                if (end.node, end.port) in used_ports:
                    ctx.err(f"{path}.links[{i}].{key}",
                            f"port {end} is already used by links[{used_ports[(end.node, end.port)]}]")
                used_ports[(end.node, end.port)] = i
        pair = frozenset((l.a.node, l.b.node))
        if pair in seen_pairs:
            ctx.err(f"{path}.links[{i}]", f"parallel link between {l.a.node} and {l.b.node} "
                    f"(also links[{seen_pairs[pair]}]); parallel links are not supported")
        seen_pairs.setdefault(pair, i)
        if l.a.node in topo.hosts and l.b.node in topo.hosts:
            ctx.err(f"{path}.links[{i}]", "host-to-host links are not supported; put a switch between")


def _generate(ctx: _Ctx, path: str, raw: Any) -> Topology:
    if not ctx.expect(path, raw, dict, "a generator spec with a 'kind'"):
        return Topology({}, {}, [])
    from p4mcc.scenario import shapes  # lazy: the generators live in scenario/shapes.py

    kind = raw.get("kind")
    args = {k: v for k, v in raw.items() if k != "kind"}
    gens = shapes.GENERATORS
    if kind not in gens:
        ctx.err(f"{path}.kind", f"unknown generator {_short(kind)} (known: {', '.join(sorted(gens))})")
        return Topology({}, {}, [])
    if not _generator_size_ok(ctx, path, kind, args) or not _generator_links_ok(ctx, path, args):
        return Topology({}, {}, [])
    try:
        return gens[kind](**args)
    except TypeError as e:
        ctx.err(path, f"bad arguments for {kind}: {e}")
    except shapes.GeneratorFieldError as e:
        ctx.err(f"{path}.{e.field}", e.msg)
    except ValueError as e:
        ctx.err(path, str(e))
    return Topology({}, {}, [])


MAX_GENERATED_HOSTS = 10_000
"""Most hosts a generator may build: ten times the largest paper scenario
(TFMCC's 1000 receivers), and still a few hundred MB of simulator state."""
MAX_GENERATED_SWITCHES = 10_000
_COUNT_ARGS = ("receivers", "senders", "pairs", "tcp_pairs")


def _generator_size_ok(ctx: _Ctx, path: str, kind: str, args: dict[str, Any]) -> bool:
    """Refuse generator sizes that would build an unbounded network (before building it)."""
    ok = True
    for key in (*_COUNT_ARGS, "k", "depth"):
        v = args.get(key)
        if v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool):
            ctx.err(f"{path}.{key}", f"expected a whole number, got {type(v).__name__} {_short(v)}")
            ok = False
        elif key in _COUNT_ARGS and not 0 <= v <= MAX_GENERATED_HOSTS:
            ctx.err(f"{path}.{key}", f"{v} is outside 0..{MAX_GENERATED_HOSTS}")
            ok = False
    if not ok:
        return False
    hosts = sum(int(args.get(k) or 0) for k in _COUNT_ARGS)
    if hosts > MAX_GENERATED_HOSTS:
        ctx.err(path, f"{hosts} hosts in all; a generated topology has at most {MAX_GENERATED_HOSTS}")
        return False
    if kind == "kary_tree" and args.get("depth") is not None:
        k, depth = int(args.get("k", 2)), int(args["depth"])
        switches = depth if k <= 1 else (k ** min(depth, 64) - 1) // (k - 1)
        if depth > 64 or switches > MAX_GENERATED_SWITCHES:
            ctx.err(f"{path}.depth", f"a {k}-ary tree of depth {depth} has more than "
                                     f"{MAX_GENERATED_SWITCHES} switches")
            return False
    return True


#: A generator's link arguments, each checked as a written link's field is
#: (``star`` takes a list of delays or losses, one per receiver).
_GENERATOR_RATES = ("rate", "access_rate", "sender_rate", "leaf_rate")
_GENERATOR_DELAYS = ("delay", "access_delay", "leaf_delay")
_GENERATOR_LOSSES = ("loss", "leaf_loss")


def _generator_links_ok(ctx: _Ctx, path: str, args: dict[str, Any]) -> bool:
    """Check a generator's rates, delays, losses and queue before building,
    so that an error names the argument (a negative queue was accepted)."""
    before = len(ctx.problems)

    def each(key: str) -> list[tuple[str, Any]]:
        v = args.get(key)
        if isinstance(v, (list, tuple)):
            return [(f"{path}.{key}[{i}]", x) for i, x in enumerate(v)]
        return [] if v is None else [(f"{path}.{key}", v)]

    for key in _GENERATOR_RATES:
        for where, v in each(key):
            _parse_link_rate(ctx, where, v)
    for key in _GENERATOR_DELAYS:
        for where, v in each(key):
            _parse_link_delay(ctx, where, v)
    for key in _GENERATOR_LOSSES:
        for where, v in each(key):
            ctx.conv(where, parse_fraction, v)
    if args.get("queue") is not None:
        _parse_queue(ctx, f"{path}.queue", args["queue"])
    return len(ctx.problems) == before


_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def _short(value: Any, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters: an error names a value, never dumps one."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_SESSION_KEYS = {
    "name", "protocol", "sender", "receivers", "group", "port", "start", "stop",
    "assistance", "params", "parameters", "session_id", "join_at", "leave_at", "profile", "rules",
}


def _expand_hosts(ctx: _Ctx, path: str, raw: Any, hosts: dict[str, Host], exclude: set[str]) -> list[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not ctx.expect(path, raw, list, "a list of host names (patterns like 'r*' allowed)"):
        return []
    out: dict[str, None] = {}  # ordered, with constant-time membership (10,000 receivers)
    for i, r in enumerate(raw):
        if not isinstance(r, str):
            ctx.err(f"{path}[{i}]", f"expected a host name, got {_short(r)}")
            continue
        if any(c in r for c in "*?["):
            matched = [h for h in hosts if fnmatch.fnmatchcase(h, r) and h not in exclude]
            if not matched:
                ctx.err(f"{path}[{i}]", f"pattern {_short(r)} matches no host")
            out.update(dict.fromkeys(matched))
        elif r not in hosts:
            ctx.err(f"{path}[{i}]", f"unknown host {_short(r)}")
        elif r in out:
            ctx.err(f"{path}[{i}]", f"host {_short(r)} listed twice")
        else:
            out[r] = None
    return list(out)


def _parse_session(ctx: _Ctx, path: str, raw: Any, index: int, topo: Topology,
                   duration: float, known_protocols: set[str] | None) -> Session | None:
    if not ctx.expect(path, raw, dict, "a session mapping"):
        return None
    ctx.unknown_keys(path, raw, _SESSION_KEYS)
    ok = True
    for k in ("protocol", "sender", "receivers"):
        if k not in raw:
            ctx.err(f"{path}.{k}", "required")
            ok = False
    proto = str(raw.get("protocol", "")).lower()
    if proto and known_protocols is not None and proto not in known_protocols:
        ctx.err(f"{path}.protocol", f"unknown protocol {proto!r} (known: {', '.join(sorted(known_protocols))})")
    sender = raw.get("sender")
    if sender is not None and not known_name(sender, topo.hosts):
        ctx.err(f"{path}.sender", f"unknown host {_short(sender)}")
        if not isinstance(sender, str):
            sender = None
    receivers = _expand_hosts(ctx, f"{path}.receivers", raw.get("receivers", []), topo.hosts, {sender})
    if sender in receivers and "receivers" in raw:
        ctx.err(f"{path}.receivers", f"the sender {sender!r} cannot also be a receiver")
    if not receivers and "receivers" in raw:
        ctx.err(f"{path}.receivers", "no receivers")
    group = str(raw.get("group", f"239.1.{(index + 1) // 256}.{(index + 1) % 256}"))
    if why := group_problem(group):
        ctx.err(f"{path}.group", why)
    port = raw.get("port", 5000 + index)
    if not (isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535):
        ctx.err(f"{path}.port", f"expected a UDP port 1..65535, got {port!r}")
        port = 5000 + index
    start = ctx.conv(f"{path}.start", parse_time, raw.get("start", 0), 0.0)
    stop = ctx.conv(f"{path}.stop", parse_time, raw["stop"], None) if raw.get("stop") is not None else None
    if start is not None and start < 0:
        ctx.err(f"{path}.start", "must not be negative")
    bounds.check(ctx, f"{path}.start", start, MAX_TIME_S, "s")
    bounds.check(ctx, f"{path}.stop", stop, MAX_TIME_S, "s")
    if stop is not None and start is not None and stop <= start:
        ctx.err(f"{path}.stop", f"must be after start ({start} s)")
    assistance = raw.get("assistance", True)
    if not isinstance(assistance, bool):
        if assistance in ("on", "off"):
            assistance = assistance == "on"
        elif assistance != "stamp":
            ctx.err(f"{path}.assistance", f"expected true/false (or on/off) or stamp, got {assistance!r}")
            assistance = True
    params = raw.get("params", raw.get("parameters", {})) or {}
    ctx.expect(f"{path}.params", params, dict, "a mapping of protocol parameters")
    if proto == "mtcp" and isinstance(params, dict) and params.get("tree"):
        # A logical tree of agents: a switch fold would hide each agent's children
        # from it (docs/protocols/mtcp.md, "Switch-assisted mode"), so no assistance.
        if raw.get("assistance") not in (None, False, "off"):
            ctx.err(f"{path}.assistance", "an MTCP session with a tree cannot be switch-assisted "
                    "(set assistance: false or drop params.tree)")
        assistance = False
    profile, switches = _parse_rules(ctx, path, raw, proto, known_protocols)
    sid = raw.get("session_id", index + 1)
    if not (isinstance(sid, int) and 0 < sid < 2**16):
        ctx.err(f"{path}.session_id", f"expected an integer 1..65535, got {sid!r}")
        sid = index + 1
    times: dict[str, dict[str, float]] = {}
    for key in ("join_at", "leave_at"):
        d = raw.get(key, {}) or {}
        times[key] = {}
        if ctx.expect(f"{path}.{key}", d, dict, "a mapping receiver -> time"):
            for r, t in d.items():
                if r not in receivers:
                    ctx.err(f"{path}.{key}.{r}", f"{r!r} is not a receiver of this session")
                    continue
                v = ctx.conv(f"{path}.{key}.{r}", parse_time, t, None)
                if v is not None and v < 0:
                    ctx.err(f"{path}.{key}.{r}", "must not be negative")
                elif v is not None and bounds.check(ctx, f"{path}.{key}.{r}", v, MAX_TIME_S, "s"):
                    times[key][r] = v
    for r, leave in times["leave_at"].items():
        join = times["join_at"].get(r, start or 0.0)
        if leave <= join:
            ctx.err(f"{path}.leave_at.{r}", f"{leave:g} s is not after {r}'s join at {join:g} s")
    if not ok:
        return None
    return Session(
        name=str(raw.get("name", f"{proto}{index + 1}")), protocol=proto, sender=str(sender),
        receivers=tuple(receivers), group=group, port=int(port), start=start or 0.0, stop=stop,
        assistance=assistance if assistance == "stamp" else bool(assistance), params=dict(params) if isinstance(params, dict) else {},
        session_id=int(sid), join_at=times["join_at"], leave_at=times["leave_at"],
        profile=profile, rules=switches,
    )


def _parse_rules(ctx: _Ctx, path: str, raw: dict[str, Any], proto: str,
                 known_protocols: set[str] | None) -> tuple[str, dict[str, bool]]:
    """A session's ``profile`` and ``rules`` (name -> on/off), checked against
    the protocol's rule book when the registry knows the protocol.

    Every problem names its field: ``sessions[0].rules.foo: unknown rule``,
    ``sessions[0].profile: ...``; a rule that needs another names both.
    """
    profile = raw.get("profile", DEFAULT_PROFILE)
    if not isinstance(profile, str) or profile not in PROFILE_NAMES:
        ctx.err(f"{path}.profile", f"expected one of {', '.join(PROFILE_NAMES)}, got {_short(profile)}")
        profile = DEFAULT_PROFILE
    switches: dict[str, bool] = {}
    given = raw.get("rules", {}) or {}
    if ctx.expect(f"{path}.rules", given, dict, "a mapping of rule name -> on/off"):
        for name, value in given.items():
            where = f"{path}.rules.{name}" if isinstance(name, str) and _NAME_RE.match(name) else f"{path}.rules"
            if not isinstance(name, str) or not _NAME_RE.match(name):
                ctx.err(where, f"a rule name is an identifier, got {_short(name)}")
                continue
            try:
                switches[name] = parse_switch(name, value)
            except RuleError:
                ctx.err(where, f"expected on or off, got {_short(value)}")
    book = _rule_book(proto, known_protocols)
    if book is None:
        return profile, switches
    known = ", ".join(book.names()) or "none"
    bad = False
    for name in switches:
        if name not in book.names():
            ctx.err(f"{path}.rules.{name}", f"unknown rule of {proto} (known: {known})")
            bad = True
    if profile not in book.profiles:
        ctx.err(f"{path}.profile", f"{proto} has no profile {profile!r} (known: {', '.join(book.profiles)})")
        bad = True
    if not bad:
        try:
            book.resolve(profile, switches)
        except RuleError as e:
            ctx.err(f"{path}.rules", str(e))
    return profile, switches


def _rule_book(proto: str, known_protocols: set[str] | None) -> Any:
    """The protocol's rule book, or None when no check is asked for or the
    protocol cannot be loaded (building its agents reports that)."""
    if known_protocols is None or proto not in known_protocols:
        return None
    try:
        from p4mcc.hosts import registry

        return registry.get(proto).rules
    except (ImportError, AttributeError, ValueError):
        return None


def _parse_tcp(ctx: _Ctx, path: str, raw: Any, index: int, topo: Topology) -> TcpFlow | None:
    if not ctx.expect(path, raw, dict, "a TCP flow mapping"):
        return None
    ctx.unknown_keys(path, raw, {"name", "src", "dst", "start", "stop", "port", "mss", "rwnd", "rto", "recovery"})
    ok = True
    for k in ("src", "dst"):
        if k not in raw:
            ctx.err(f"{path}.{k}", "required")
            ok = False
        elif not known_name(raw[k], topo.hosts):
            ctx.err(f"{path}.{k}", f"unknown host {raw[k]!r}")
            ok = False
    if ok and raw["src"] == raw["dst"]:
        ctx.err(f"{path}.dst", "same host as src")
    start = ctx.conv(f"{path}.start", parse_time, raw.get("start", 0), 0.0)
    stop = ctx.conv(f"{path}.stop", parse_time, raw["stop"], None) if raw.get("stop") is not None else None
    if start is not None and start < 0:
        ctx.err(f"{path}.start", "must not be negative")
    bounds.check(ctx, f"{path}.start", start, MAX_TIME_S, "s")
    bounds.check(ctx, f"{path}.stop", stop, MAX_TIME_S, "s")
    if stop is not None and start is not None and stop <= start:
        ctx.err(f"{path}.stop", f"must be after start ({start} s)")
    mss = raw.get("mss", 1460)
    if not (isinstance(mss, int) and 64 <= mss <= 8960):
        ctx.err(f"{path}.mss", f"expected an integer 64..8960, got {mss!r}")
        mss = 1460
    port = raw.get("port", 5201 + index)
    if not (isinstance(port, int) and 1 <= port <= 65535):
        ctx.err(f"{path}.port", f"expected a TCP port 1..65535, got {port!r}")
        port = 5201 + index
    rwnd = ctx.conv(f"{path}.rwnd", parse_size, raw.get("rwnd", 4 * 1024 * 1024), 4 * 1024 * 1024)
    if rwnd < mss:
        ctx.err(f"{path}.rwnd", f"{rwnd} bytes is less than one segment ({mss} bytes)")
    bounds.check(ctx, f"{path}.rwnd", rwnd, bounds.MAX_WINDOW_BYTES, "bytes (TCP's largest window)")
    rto = raw.get("rto", "linux")
    if rto not in TCP_RTO_RULES:
        ctx.err(f"{path}.rto", f"expected one of {', '.join(TCP_RTO_RULES)}, got {rto!r}")
        rto = "linux"
    recovery = raw.get("recovery", "prr")
    if recovery not in TCP_RECOVERY_RULES:
        ctx.err(f"{path}.recovery", f"expected one of {', '.join(TCP_RECOVERY_RULES)}, got {recovery!r}")
        recovery = "prr"
    if not ok:
        return None
    return TcpFlow(str(raw.get("name", f"tcp{index + 1}")), raw["src"], raw["dst"],
                   start or 0.0, stop, int(port), int(mss), int(rwnd), str(rto), str(recovery))


_TOP_KEYS = {"name", "description", "topology", "sessions", "tcp_flows", "tcp",
             "duration", "seed", "metrics_interval", "capture", "faults", "policing", "membership",
             "steady_window", "tcp_jitter", "agent_jitter"}


def _known_protocols() -> set[str] | None:
    """Protocol names the registry knows, or None when it cannot be imported."""
    try:
        from p4mcc.hosts import registry  # type: ignore[attr-defined]
    except ImportError:
        return None
    names = getattr(registry, "names", None)
    if callable(names):
        return {str(n).lower() for n in names()}
    protos = getattr(registry, "PROTOCOLS", None) or getattr(registry, "REGISTRY", None)
    return {str(n).lower() for n in protos} if isinstance(protos, dict) else None


def scenario_from_dict(raw: Any, *, base: Path | None = None, source: str = "",
                       known_protocols: set[str] | None | bool = True) -> Scenario:
    """Validate a parsed scenario document and build a :class:`Scenario`.

    Raises :class:`ScenarioError` listing every problem found.  A document that
    is a bare p4lang/tutorials topology (hosts/switches/links at top level) is
    accepted as a scenario with no sessions.  ``known_protocols=True`` asks
    ``hosts.registry`` for the names; pass a set or None (no check) to override.
    """
    ctx = _Ctx()
    if not isinstance(raw, dict):
        raise ScenarioError([f"a scenario is a mapping, got {type(raw).__name__}"])
    if "topology" not in raw and {"hosts", "links"} & set(raw):
        raw = {"topology": {k: raw[k] for k in ("hosts", "switches", "links") if k in raw},
               "duration": 10}
    ctx.unknown_keys("", raw, _TOP_KEYS)
    if "topology" not in raw:
        ctx.err("topology", "required")
    topo = _parse_topology(ctx, "topology", raw.get("topology", {}), base)
    duration = ctx.conv("duration", parse_time, raw.get("duration", 10), 10.0)
    if duration is not None and (why := _duration_problem(duration)):
        ctx.err("duration", why)
    seed = raw.get("seed", 1)
    if why := _seed_problem(seed):
        ctx.err("seed", why)
        seed = 1
    mi = ctx.conv("metrics_interval", parse_time, raw.get("metrics_interval", 0.5), 0.5)
    if mi is not None and mi < MIN_METRICS_INTERVAL:
        ctx.err("metrics_interval", f"must be at least {MIN_METRICS_INTERVAL * 1e3:g} ms, got {mi:g} s")
    bounds.check(ctx, "metrics_interval", mi, MAX_TIME_S, "s")
    steady = ctx.conv("steady_window", parse_steady_window, raw.get("steady_window", 0.5), 0.5)
    jitters = {key: _send_jitter(ctx, raw, key) for key in ("tcp_jitter", "agent_jitter")}
    protos = _known_protocols() if known_protocols is True else known_protocols
    sessions: list[Session] = []
    raw_s = raw.get("sessions", []) or []
    if ctx.expect("sessions", raw_s, list, "a list of sessions"):
        for i, s in enumerate(raw_s):
            sess = _parse_session(ctx, f"sessions[{i}]", s, i, topo, duration or 10.0,
                                  protos if isinstance(protos, set) else None)
            if sess is not None:
                sessions.append(sess)
    names = [s.name for s in sessions]
    for i, n in enumerate(names):
        if names.index(n) != i:
            ctx.err(f"sessions[{i}].name", f"duplicate session name {n!r}")
    sids = [s.session_id for s in sessions]
    for i, n in enumerate(sids):
        if sids.index(n) != i:
            ctx.err(f"sessions[{i}].session_id", f"duplicate session id {n}")
    groups = [(s.group, s.port) for s in sessions]
    for i, g in enumerate(groups):
        if groups.index(g) != i:
            ctx.err(f"sessions[{i}].group", f"{g[0]}:{g[1]} already used by sessions[{groups.index(g)}]")
    flows: list[TcpFlow] = []
    raw_t = raw.get("tcp_flows", raw.get("tcp", [])) or []
    key = "tcp_flows" if "tcp_flows" in raw else "tcp"
    if ctx.expect(key, raw_t, list, "a list of TCP flows"):
        for i, t in enumerate(raw_t):
            f = _parse_tcp(ctx, f"{key}[{i}]", t, i, topo)
            if f is not None:
                flows.append(f)
    from p4mcc.scenario.capture import parse_capture

    capture, cap_problems = parse_capture(raw.get("capture"), set(topo.switches),
                                          {s.name for s in sessions} | {f.name for f in flows})
    ctx.problems += cap_problems
    from p4mcc.scenario import faults as F

    faults = F.parse_faults(ctx, raw.get("faults"), topo, sessions, float(duration or 10.0))
    policing = F.parse_policing(ctx, raw.get("policing"))
    membership = F.parse_membership(ctx, raw.get("membership"))
    if ctx.problems:
        raise ScenarioError(ctx.problems, ctx.more)
    scenario = Scenario(
        name=str(raw.get("name", Path(source).stem if source else "scenario")),
        description=str(raw.get("description", "")).strip(),
        topology=topo, sessions=sessions, tcp_flows=flows, duration=float(duration or 10.0),
        seed=int(seed), metrics_interval=float(mi or 0.5), source=source, capture=capture,
        faults=tuple(faults), policing=policing, membership=membership,
        steady_window=0.5 if steady is None else steady,
        tcp_jitter=jitters["tcp_jitter"], agent_jitter=jitters["agent_jitter"],
    )
    scenario, notes = fit_sessions_to_links(scenario)
    for note in notes:
        LOG.warning("%s: %s", source or scenario.name, note)
    return scenario


def sender_link_bps(topology: Topology, host: str) -> float | None:
    """The rate of ``host``'s link to the network (the slowest, if it has several)."""
    rates = [ln.rate_bps for ln in topology.links if host in (ln.a.node, ln.b.node)]
    return min(rates) if rates else None


def fit_sessions_to_links(scenario: Scenario) -> tuple[Scenario, list[str]]:
    """The scenario with each session's defaults fitted to its sender's link.

    A protocol whose sender does not adapt its rate (WEBRC sends its whole
    session rate, every channel, joined or not) gets the parameters its
    registry entry names for that link (``hosts.registry.Protocol.sender_link``)
    unless the session sets them; a value the session sets that the link
    cannot carry is kept and reported.  Returns the scenario (the same object
    when nothing changed) and one message per such session, naming its field.
    Both engines call this where they build a run, so a scenario edited after
    loading is fitted too; fitting twice changes nothing.
    """
    try:
        from p4mcc.hosts import registry
    except ImportError:  # pragma: no cover - the registry ships with the project
        return scenario, []
    sessions: list[Session] = []
    notes: list[str] = []
    changed = False
    for i, sess in enumerate(scenario.sessions):
        link = sender_link_bps(scenario.topology, sess.sender)
        try:
            add, note = ({}, None) if link is None else \
                registry.get(sess.protocol).fit_sender_link(dict(sess.params), link)
        except ValueError:  # unknown protocol, bad parameters: reported where agents are built
            add, note = {}, None
        if note:
            notes.append(f"sessions[{i}].params ({sess.name}): {note}")
        if add:
            sess = replace(sess, params={**sess.params, **add})
            changed = True
        sessions.append(sess)
    if not changed:
        return scenario, notes
    return replace(scenario, sessions=sessions), notes


def _send_jitter(ctx: _Ctx, raw: dict[str, Any], key: str) -> float | str:
    """A send-path time (``tcp_jitter``, ``agent_jitter``): 0-100 ms, or
    ``auto`` (:data:`SEND_PATH_AUTO`)."""
    if raw.get(key, SEND_PATH_AUTO) == SEND_PATH_AUTO:
        return SEND_PATH_AUTO
    value = ctx.conv(key, parse_time, raw[key])
    if value is None:
        return SEND_PATH_AUTO  # the error is recorded; the scenario is refused
    if not 0 <= value <= SEND_PATH_MAX:
        ctx.err(key, f"must be between 0 and 100ms, got {raw[key]!r}")
    return float(value)


def load_scenario(path: str | Path, **kw: Any) -> Scenario:
    """Read a YAML or JSON scenario file (or a tutorials ``topology.json``)."""
    p = Path(path)
    try:
        raw = read_document(p)
    except OSError as e:
        raise ScenarioError([f"{p}: cannot read: {e.strerror or type(e).__name__}"]) from None
    except ValueError as e:  # too large, not a file, syntax (positions only)
        raise ScenarioError([f"{p}: {e}"]) from None
    return scenario_from_dict(raw, base=p.parent, source=str(p), **kw)
