"""The ``faults:``, ``policing:`` and ``membership:`` parts of a scenario.

A fault is something a real network does to a session: a receiver or a
sender crashes, a receiver leaves, an agent is killed and restarted, a
switch crashes and comes back empty, loses its tables while it runs, or is
starved of CPU, the controller restarts, another one takes over or its
stream to one switch is cut, a link goes down (both ways or one), flaps,
changes its rate/delay/loss, reorders, duplicates or corrupts frames, a
receiver misbehaves (floods feedback, reports a false rate, claims to be the
CLR), a host forges a reliable session's ACKs (``forged_ack``: under another
receiver's id, as a switch's fold, or claiming packets never sent), malformed frames arrive at a switch port, or the disk fills while the
results are written.  Both engines read the same :class:`Fault` list
(``netsim/faults.py`` injects them in virtual time, ``emulation/run``
in Mininet) and both record every fault instance and every recovery in
``events.csv`` (:func:`recovery_events`).

A fault fires at ``at``; with ``every`` it repeats until ``until`` or for
``count`` times.  ``for`` is how long one instance lasts (a switch's or an
agent's down time, a link's down time, a flood's length); without it a crash
is permanent and a change stays.  ``docs/scenario-format.md`` lists the
fields and ``docs/faults.md`` what each fault does in each engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from p4mcc.scenario.topology import known_name

#: fault type -> what its ``target`` names
KINDS: dict[str, str] = {
    "receiver_crash": "host",
    "receiver_leave": "host",
    "agent_kill": "host",
    "switch_crash": "switch",
    "controller_restart": "none",
    "link_down": "link",
    "link_change": "link",
    "feedback_flood": "host",
    "false_report": "host",
    "spoof_clr": "host",
    "forged_ack": "host",
    "malformed": "port",
    "sender_crash": "host",
    "link_reorder": "link",
    "link_duplicate": "link",
    "link_corrupt": "link",
    "controller_cut": "switch",
    "switch_wipe": "switch",
    "switch_slow": "switch",
    "disk_full": "none",
}

#: Link faults that hit a share (``fraction``) of the frames in flight.
IMPAIRMENTS = ("link_reorder", "link_duplicate", "link_corrupt")
#: Link faults that may hit one direction only (``from``: the end whose
#: outgoing direction fails).
DIRECTED = ("link_down", "link_change", *IMPAIRMENTS)
#: How long a reordered frame is held by default: later frames on a 10 Mb/s
#: link overtake it by about eight 1500-byte frames.
REORDER_DELAY_S = 0.01

#: A fault instance repeats at most this often (keeps an ``every`` typo from
#: scheduling millions of events).
MAX_INSTANCES = 1000

_KEYS = {"type", "target", "session", "at", "every", "until", "count", "for", "duration",
         "rate", "delay", "loss", "queue", "claim", "takeover", "size", "from", "fraction", "cpu",
         "free", "victim", "fold", "ahead"}
#: The protocols whose ACKs a ``forged_ack`` forges (the reliable ones).
FORGED_ACK_PROTOCOLS = ("rla", "mtcp")
#: The most packets a ``forged_ack`` may claim beyond the highest it saw sent.
MAX_AHEAD = 1 << 30


@dataclass(frozen=True)
class Fault:
    """One entry of ``faults:`` (see the module doc)."""

    kind: str
    at: float
    #: host, switch, ``(node, node)`` link, ``(switch, port)`` port, or "" (controller)
    target: Any = ""
    session: str | None = None
    every: float | None = None
    until: float | None = None
    count: int | None = None
    #: how long one instance lasts (None: permanent / until changed again)
    duration: float | None = None
    #: kind-specific values: rate (bit/s for links, packets/s for floods),
    #: delay (s), loss (probability), queue (packets), claim (bit/s), takeover, size
    params: dict[str, Any] = field(default_factory=dict)

    def times(self, end: float) -> list[float]:
        """Start time of every instance before ``end``."""
        if self.every is None:
            return [self.at] if self.at < end else []
        out = []
        t = self.at
        limit = self.until if self.until is not None else end
        while t < min(limit, end) + 1e-9 and len(out) < (self.count or MAX_INSTANCES):
            out.append(t)
            t += self.every
        return out

    def describe(self) -> str:
        t = self.target
        tgt = "--".join(t) if isinstance(t, tuple) and self.kind.startswith("link") else (
            f"{t[0]}-p{t[1]}" if isinstance(t, tuple) else str(t))
        parts = [self.kind, tgt] if tgt else [self.kind]
        if self.session:
            parts.append(f"session={self.session}")
        if self.every is not None:
            parts.append(f"every={self.every:g}s")
        if self.duration is not None:
            parts.append(f"for={self.duration:g}s")
        parts += [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(self.params.items())]
        return " ".join(parts)


@dataclass(frozen=True)
class Policing:
    """Feedback policing per host port: ``auto`` sizes it from the sessions
    (``controller.policing``), an int is packets/s for every host port, None is off."""

    feedback_pps: int | str | None = "auto"
    burst: int | None = None


@dataclass(frozen=True)
class Membership:
    """IGMP membership ageing on the switches and the controller's querier.

    ``timeout`` 0 never ages (then no querier is needed).  ``None`` is the
    default, the same in both engines (:data:`DEFAULT_TIMEOUT`, through
    :func:`membership_timeout`).  ``query_interval`` None derives it from the
    timeout (IGMPv2's proportions at robustness 3, 125/385,
    ``controller.querier.timings``).
    """

    timeout: float | None = None
    query_interval: float | None = None


#: Membership timeout of both engines when a scenario does not say: IGMPv2's
#: Group Membership Interval is 260 s (RFC 2236 sec. 8.4); p4mcc scales it
#: down so that a receiver that dies silently stops costing its port within
#: a run of a minute, and keeps the RFC's proportions for the rest
#: (``controller.querier``).
DEFAULT_TIMEOUT = 20.0


def membership_timeout(m: "Membership | None") -> float:
    """The membership timeout a scenario gets (the one owner of the default)."""
    if m is None or m.timeout is None:
        return DEFAULT_TIMEOUT
    return m.timeout


MIN_FAULT_PERIOD = 1e-3
"""Shortest period of a repeating fault: a link flapping every millisecond is
already beyond any real one, and every microsecond the run never ended."""


def parse_faults(ctx: Any, raw: Any, topo: Any, sessions: list[Any], duration: float) -> list[Fault]:
    """Validate ``faults:``; problems go to ``ctx`` with their field path."""
    from p4mcc.p4switch.units import parse_fraction, parse_rate, parse_time
    from p4mcc.scenario import bounds

    if raw is None:
        return []
    if not ctx.expect("faults", raw, list, "a list of faults"):
        return []
    out: list[Fault] = []
    links = {frozenset((l.a.node, l.b.node)) for l in topo.links}
    snames = {s.name: s for s in sessions}
    for i, f in enumerate(raw):
        p = f"faults[{i}]"
        if not ctx.expect(p, f, dict, "a fault mapping with a type"):
            continue
        ctx.unknown_keys(p, f, _KEYS)
        kind = f.get("type")
        if not known_name(kind, KINDS):
            ctx.err(f"{p}.type", f"unknown fault type {kind!r} (known: {', '.join(sorted(KINDS))})")
            continue
        want = KINDS[kind]
        ok = True

        def time_of(key: str, default: Any = None, *, positive: bool = False) -> float | None:
            nonlocal ok
            if f.get(key) is None:
                return default
            v = ctx.conv(f"{p}.{key}", parse_time, f[key], None)
            if v is None:
                ok = False
            elif v < 0 or (positive and v == 0):
                ctx.err(f"{p}.{key}", "must be positive" if positive else "must not be negative")
                ok = False
            elif not bounds.check(ctx, f"{p}.{key}", v, bounds.MAX_TIME_S, "s"):
                ok = False
            return v

        if "at" not in f:
            ctx.err(f"{p}.at", "required")
            ok = False
        at = time_of("at", 0.0)
        every = time_of("every", positive=True)
        if every is not None and 0 < every < MIN_FAULT_PERIOD:
            ctx.err(f"{p}.every", f"must be at least {MIN_FAULT_PERIOD * 1e3:g} ms, got {every:g} s")
            ok = False
        until = time_of("until")
        dur = time_of("for") if "for" in f else time_of("duration")
        count = f.get("count")
        if count is not None and not (isinstance(count, int) and not isinstance(count, bool)
                                      and 0 < count <= MAX_INSTANCES):
            ctx.err(f"{p}.count", f"expected an integer 1..{MAX_INSTANCES}, got {str(count)[:40]}")
            ok = False
        if (until is not None or count is not None) and every is None:
            ctx.err(f"{p}.every", "required with until/count (a repeating fault)")
            ok = False
        if at is not None and at > duration:
            ctx.err(f"{p}.at", f"after the run's end ({duration:g} s)")
            ok = False
        if until is not None and at is not None and until < at:
            ctx.err(f"{p}.until", f"before at ({at:g} s)")
            ok = False
        if every is not None and dur is not None and dur >= every:
            ctx.err(f"{p}.for", f"must be shorter than every ({every:g} s)")
            ok = False
        # target
        raw_t = f.get("target")
        target: Any = ""
        if want == "none":
            if raw_t is not None:
                ctx.err(f"{p}.target", f"{kind} takes no target")
                ok = False
        elif raw_t is None:
            ctx.err(f"{p}.target", f"required (a {want})")
            ok = False
        elif want == "host":
            if not known_name(raw_t, topo.hosts):
                ctx.err(f"{p}.target", f"unknown host {raw_t!r}")
                ok = False
            target = str(raw_t)
        elif want == "switch":
            if not known_name(raw_t, topo.switches):
                ctx.err(f"{p}.target", f"unknown switch {raw_t!r}")
                ok = False
            target = str(raw_t)
        elif want == "link":
            ends = raw_t.split("--") if isinstance(raw_t, str) and "--" in raw_t else raw_t
            if isinstance(ends, str) and ends in topo.hosts:
                peer = [l.b.node if l.a.node == ends else l.a.node for l in topo.links
                        if ends in (l.a.node, l.b.node)]
                ends = [ends, peer[0]] if peer else [ends]
            if not (isinstance(ends, list) and len(ends) == 2 and frozenset(map(str, ends)) in links):
                ctx.err(f"{p}.target", f"not a link: {raw_t!r} (give [a, b], 'a--b', or a host name)")
                ok = False
            else:
                target = (str(ends[0]), str(ends[1]))
        elif want == "port":
            import re

            m = re.match(r"^(.+)-p(\d+)$", str(raw_t))
            if m and m.group(1) in topo.switches:
                target = (m.group(1), int(m.group(2)))
            elif known_name(raw_t, topo.hosts):
                target = str(raw_t)  # the switch port this host is attached to
            else:
                ctx.err(f"{p}.target", f"expected a switch port like 's1-p2' or a host, got {raw_t!r}")
                ok = False
        # session
        sess = f.get("session")
        if sess is not None and not known_name(sess, snames):
            ctx.err(f"{p}.session", f"unknown session {sess!r}")
            ok = False
        if kind in ("receiver_crash", "receiver_leave", "agent_kill", "feedback_flood", "false_report",
                    "spoof_clr") and isinstance(target, str) and target:
            mine = [s for s in sessions if (sess is None or s.name == sess)
                    and (target in s.receivers or (kind == "agent_kill" and target == s.sender))]
            if not mine:
                ctx.err(f"{p}.target", f"{target!r} is not a receiver of "
                        + (f"session {sess!r}" if sess else "any session"))
                ok = False
            if kind.startswith("receiver") and any(target == s.sender for s in sessions if s.name == sess):
                ctx.err(f"{p}.target", "a sender is not a receiver (use agent_kill)")
                ok = False
        if kind == "sender_crash" and isinstance(target, str) and target:
            if not any(target == s.sender for s in sessions if sess is None or s.name == sess):
                ctx.err(f"{p}.target", f"{target!r} is not the sender of "
                        + (f"session {sess!r}" if sess else "any session"))
                ok = False
        if kind == "forged_ack" and ok:
            sess = _forged_ack(ctx, p, f, target, sess, sessions)
            ok = sess is not None
        if kind in ("feedback_flood", "false_report", "spoof_clr") and sess is None and ok:
            mine = [s for s in sessions if target in s.receivers]
            if len(mine) > 1:
                ctx.err(f"{p}.session", "required: the host is a receiver of several sessions")
                ok = False
            elif mine:
                sess = mine[0].name
        # kind-specific values
        params: dict[str, Any] = {}
        ok = _parse_new_kinds(ctx, p, f, kind, target, params) and ok
        if kind in ("link_change",):
            for k, fn in (("rate", parse_rate), ("delay", parse_time), ("loss", parse_fraction)):
                if k in f:
                    v = ctx.conv(f"{p}.{k}", fn, f[k], None)
                    hi = {"rate": bounds.MAX_RATE_BPS, "delay": bounds.MAX_DELAY_S}.get(k, 1.0)
                    if v is None or (k == "rate" and v <= 0) or v < 0:
                        if v is not None:
                            ctx.err(f"{p}.{k}", "must be positive")
                        ok = False
                    elif not bounds.check(ctx, f"{p}.{k}", v, hi, {"rate": "b/s", "delay": "s"}.get(k, "")):
                        ok = False
                    else:
                        params[k] = float(v)
            if "queue" in f:
                q = f["queue"]
                if not (isinstance(q, int) and not isinstance(q, bool) and 1 <= q <= bounds.MAX_QUEUE_PACKETS):
                    ctx.err(f"{p}.queue", f"expected packets 1..{bounds.MAX_QUEUE_PACKETS:,}, got {str(q)[:40]}")
                    ok = False
                else:
                    params["queue"] = q
            if not set(params) - {"from"} and ok:
                ctx.err(p, "link_change needs rate, delay, loss and/or queue")
                ok = False
        elif "rate" in f:
            r = f["rate"]
            if not (isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r <= bounds.MAX_PACKET_RATE):
                ctx.err(f"{p}.rate", f"expected packets/s in (0, {bounds.MAX_PACKET_RATE:g}], got {str(r)[:40]}")
                ok = False
            else:
                params["rate"] = float(r)
        if "claim" in f:
            v = ctx.conv(f"{p}.claim", parse_rate, f["claim"], None)
            if v is None or v <= 0:
                ok = False if v is None else ok
                if v is not None:
                    ctx.err(f"{p}.claim", "must be positive")
                    ok = False
            elif not bounds.check(ctx, f"{p}.claim", v, bounds.MAX_RATE_BPS, "b/s"):
                ok = False
            else:
                params["claim"] = float(v)
        if kind == "forged_ack":
            params.update({k: f[k] for k in ("victim", "fold", "ahead") if k in f})
        elif set(f) & {"victim", "fold", "ahead"}:
            extra = sorted(set(f) & {"victim", "fold", "ahead"})[0]
            ctx.err(f"{p}.{extra}", "for forged_ack only")
            ok = False
        if "takeover" in f:
            if kind != "controller_restart" or not isinstance(f["takeover"], bool):
                ctx.err(f"{p}.takeover", "true/false, for controller_restart only")
                ok = False
            else:
                params["takeover"] = f["takeover"]
        if "size" in f:
            sz = f["size"]
            if not (isinstance(sz, int) and not isinstance(sz, bool) and 1 <= sz <= 1500):
                ctx.err(f"{p}.size", f"expected bytes 1..1500, got {sz!r}")
                ok = False
            else:
                params["size"] = sz
        if ok:
            out.append(Fault(kind, float(at or 0.0), target, sess, every, until, count, dur, params))
    return out


def _forged_ack(ctx: Any, p: str, f: dict[str, Any], target: str, sess: str | None,
                sessions: list[Any]) -> str | None:
    """The session a ``forged_ack`` forges for (None: refused, the error
    names the field): a reliable session the host does not send, and a
    ``victim`` among its receivers."""
    mine = [s for s in sessions if (sess is None or s.name == sess) and s.protocol in FORGED_ACK_PROTOCOLS]
    if sess is None and len(mine) != 1:
        ctx.err(f"{p}.session", "required: name the rla or mtcp session whose ACKs are forged"
                if mine else "no rla or mtcp session to forge ACKs for")
        return None
    if not mine:
        ctx.err(f"{p}.session", f"session {sess!r} is not rla or mtcp: forged ACKs are for "
                + ", ".join(FORGED_ACK_PROTOCOLS))
        return None
    s = mine[0]
    if target == s.sender:
        ctx.err(f"{p}.target", "the sender does not ACK its own session")
        return None
    victim = f.get("victim")
    if victim is not None and (not isinstance(victim, str) or victim not in s.receivers):
        ctx.err(f"{p}.victim", f"expected a receiver of session {s.name!r}, got {str(victim)[:40]!r}")
        return None
    if "fold" in f and (not isinstance(f["fold"], bool) or (f["fold"] and s.protocol != "mtcp")):
        ctx.err(f"{p}.fold", "true/false; only MTCP's switches fold ACKs")
        return None
    ahead = f.get("ahead", 0)
    if not (isinstance(ahead, int) and not isinstance(ahead, bool) and 0 <= ahead <= MAX_AHEAD):
        ctx.err(f"{p}.ahead", f"expected packets 0..{MAX_AHEAD}, got {str(ahead)[:40]}")
        return None
    return str(s.name)


def _parse_new_kinds(ctx: Any, p: str, f: dict[str, Any], kind: str, target: Any,
                     params: dict[str, Any]) -> bool:
    """``from``, ``fraction``, the reorder ``delay``, ``cpu`` and ``free``:
    each checked against its fault type, errors naming the field."""
    from p4mcc.p4switch.units import parse_fraction, parse_size, parse_time
    from p4mcc.scenario import bounds

    ok = True
    if "from" in f:
        if kind not in DIRECTED:
            ctx.err(f"{p}.from", f"for {', '.join(DIRECTED)} only")
            ok = False
        elif isinstance(target, tuple) and str(f["from"]) not in target:
            ctx.err(f"{p}.from", f"{f['from']!r} is not an end of the link {'--'.join(target)}")
            ok = False
        elif isinstance(target, tuple):
            params["from"] = str(f["from"])
    if kind in IMPAIRMENTS:
        if "fraction" not in f:
            ctx.err(f"{p}.fraction", f"required for {kind} (the share of frames hit, e.g. 1%)")
            ok = False
        else:
            v = ctx.conv(f"{p}.fraction", parse_fraction, f["fraction"], None)
            if v is None:
                ok = False
            elif not 0 < v <= 1:
                ctx.err(f"{p}.fraction", f"must be in (0, 1], got {v:g}")
                ok = False
            else:
                params["fraction"] = float(v)
        if kind == "link_reorder":
            d = REORDER_DELAY_S
            if "delay" in f:
                d = ctx.conv(f"{p}.delay", parse_time, f["delay"], None)
                if d is None or not 0 < d <= 1:
                    if d is not None:
                        ctx.err(f"{p}.delay", f"the hold of a reordered frame must be in (0, 1 s], got {d:g}")
                    ok = False
            if ok:
                params["delay"] = float(d)
        elif "delay" in f:
            ctx.err(f"{p}.delay", "for link_change and link_reorder only")
            ok = False
    elif "fraction" in f:
        ctx.err(f"{p}.fraction", f"for {', '.join(IMPAIRMENTS)} only")
        ok = False
    if kind == "switch_slow":
        c = f.get("cpu")
        if c is None:
            ctx.err(f"{p}.cpu", "required for switch_slow (the share of CPU time the switch gets, e.g. 20%)")
            ok = False
        else:
            v = ctx.conv(f"{p}.cpu", parse_fraction, c, None)
            if v is None:
                ok = False
            elif not 0 < v < 1:
                ctx.err(f"{p}.cpu", f"must be in (0, 1), got {v:g}")
                ok = False
            else:
                params["cpu"] = float(v)
    elif "cpu" in f:
        ctx.err(f"{p}.cpu", "for switch_slow only")
        ok = False
    if kind == "disk_full":
        v = ctx.conv(f"{p}.free", parse_size, f.get("free", 0), None)
        if v is None:
            ok = False
        elif v < 0:
            ctx.err(f"{p}.free", "must not be negative")
            ok = False
        elif not bounds.check(ctx, f"{p}.free", v, bounds.MAX_DISK_BYTES, "bytes"):
            ok = False
        else:
            params["free"] = int(v)
    elif "free" in f:
        ctx.err(f"{p}.free", "for disk_full only")
        ok = False
    return ok


def parse_policing(ctx: Any, raw: Any) -> Policing:
    from p4mcc.scenario.bounds import MAX_PACKET_RATE, MAX_QUEUE_PACKETS

    if raw is None:
        return Policing()
    if raw in ("off", False):
        return Policing(None)
    if not ctx.expect("policing", raw, dict, "a mapping {feedback_pps: auto|off|N, burst: N} or off"):
        return Policing()
    ctx.unknown_keys("policing", raw, {"feedback_pps", "burst"})
    pps = raw.get("feedback_pps", "auto")
    if pps in ("off", False, None):
        pps = None
    elif pps != "auto" and not (isinstance(pps, int) and not isinstance(pps, bool) and 0 < pps <= MAX_PACKET_RATE):
        ctx.err("policing.feedback_pps", f"expected auto, off or packets/s 1..{MAX_PACKET_RATE:g}, got {str(pps)[:40]}")
        pps = "auto"
    burst = raw.get("burst")
    if burst is not None and not (isinstance(burst, int) and not isinstance(burst, bool)
                                  and 0 < burst <= MAX_QUEUE_PACKETS):
        ctx.err("policing.burst", f"expected packets 1..{MAX_QUEUE_PACKETS:,}, got {str(burst)[:40]}")
        burst = None
    return Policing(pps, burst)


def parse_membership(ctx: Any, raw: Any) -> Membership:
    from p4mcc.p4switch.units import parse_time
    from p4mcc.scenario.bounds import MAX_TIME_S, too_large

    if raw is None:
        return Membership()
    if not ctx.expect("membership", raw, dict, "a mapping {timeout, query_interval}"):
        return Membership()
    ctx.unknown_keys("membership", raw, {"timeout", "query_interval"})
    out = {}
    for k in ("timeout", "query_interval"):
        if raw.get(k) is not None:
            v = ctx.conv(f"membership.{k}", parse_time, raw[k], None)
            if v is not None and (v < 0 or (k == "query_interval" and v == 0)):
                ctx.err(f"membership.{k}", "must be positive" if k == "query_interval" else "must not be negative")
                v = None
            elif v is not None and (why := too_large(v, MAX_TIME_S, "s")):
                ctx.err(f"membership.{k}", why)
                v = None
            out[k] = v
    m = Membership(**out)
    if m.timeout and m.query_interval and m.query_interval >= m.timeout:
        ctx.err("membership.query_interval", f"must be shorter than the timeout ({m.timeout:g} s)")
    from p4mcc.controller.querier import MIN_QUERY_INTERVAL_S

    # A query interval below IGMP's shortest response time would query
    # faster than hosts may answer (and flood the run with events).
    if m.query_interval and m.query_interval <= MIN_QUERY_INTERVAL_S:
        ctx.err("membership.query_interval", f"must be longer than IGMP's shortest response time "
                                             f"({MIN_QUERY_INTERVAL_S:g} s), got {m.query_interval:g} s")
    elif m.timeout and not m.query_interval and (q := query_interval(m, m.timeout)) <= MIN_QUERY_INTERVAL_S:
        ctx.err("membership.timeout", f"{m.timeout:g} s gives a query interval of {q:.3g} s, not longer than "
                                      f"IGMP's shortest response time ({MIN_QUERY_INTERVAL_S:g} s)")
    return m


def query_interval(m: Membership, timeout: float) -> float | None:
    """The querier period for ``timeout`` (None: no ageing, no querier)."""
    if not timeout:
        return None
    if m.query_interval:
        return m.query_interval
    from p4mcc.controller.querier import timings

    return timings(timeout)[0]


# ---------------------------------------------------------------------------
# Recovery (the same analysis for both engines)

#: A receiver's throughput must be back to this fraction of its pre-fault mean to count as recovered.
RECOVERED_FRACTION = 0.8
#: Seconds of samples before a fault that define its pre-fault throughput.
BASELINE_S = 5.0


#: Faults that hit one element of the network: the receivers behind it are the ones judged.
SWITCH_FAULTS = ("switch_crash", "switch_wipe", "switch_slow", "controller_cut")
#: Faults of one receiver's host or agent.
HOST_FAULTS = ("receiver_crash", "receiver_leave", "agent_kill")


def behind(scenario: Any, session: Any, fault: Fault) -> list[str]:
    """The receivers of ``session`` whose path from its sender crosses the
    element ``fault`` hits (a switch, a link, the switch a malformed port
    belongs to); every receiver for a fault of the whole session (the
    sender, the controller, a misbehaving receiver's claims).

    Why: a leaf's receivers are a few of many, so the session's mean hides
    them (losing every receiver of one leaf out of five never takes the mean
    below 80 %); only the receivers behind the fault can show whether it
    recovered.  Paths are hop-count shortest paths, as the controller's
    multicast trees are (the only path on a tree)."""
    import networkx as nx

    k, tgt = fault.kind, fault.target
    if k in SWITCH_FAULTS:
        hit = lambda nodes: tgt in nodes  # noqa: E731
    elif k.startswith("link_"):
        edge = frozenset(tgt)
        hit = lambda nodes: any(frozenset(e) == edge for e in zip(nodes, nodes[1:]))  # noqa: E731
    elif k == "malformed":
        sw = tgt[0] if isinstance(tgt, tuple) else next(
            (l.b.node if l.a.node == tgt else l.a.node for l in scenario.topology.links
             if tgt in (l.a.node, l.b.node)), tgt)
        hit = lambda nodes: sw in nodes  # noqa: E731
    else:
        return list(session.receivers)
    g = nx.Graph()
    g.add_edges_from((l.a.node, l.b.node) for l in scenario.topology.links)
    out = []
    for r in session.receivers:
        try:
            if hit(nx.shortest_path(g, session.sender, r)):
                out.append(r)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            continue
    return out


def recovery_time(pts: list[tuple[float, float]], t: float, t_end: float) -> float | None:
    """Seconds after ``t_end`` until the series ``pts`` ((time, bit/s),
    sorted) is back to :data:`RECOVERED_FRACTION` of its mean over the
    :data:`BASELINE_S` before ``t`` and holds there for a second (None: never
    within the series; 0: it never fell below).  The caller checks that the
    baseline is positive."""
    before = [v for tm, v in pts if t - BASELINE_S <= tm < t]
    target = RECOVERED_FRACTION * sum(before) / len(before)
    after = [(tm, v) for tm, v in pts if tm >= t]
    dipped = False
    for i, (tm, v) in enumerate(after):
        if v < target:
            dipped = True
            continue
        if tm < t_end:
            continue  # the fault still lasts
        # back up: hold for a second (two samples at 0.5 s) to count
        hold = [w for tw, w in after[i:] if tw < tm + 1.0]
        if all(w >= target for w in hold):
            return max(0.0, tm - t_end) if dipped else 0.0
    return None


def recovery_times(samples: list[Any], scenario: Any, fault: Fault, t: float,
                   dt: float | None = None) -> dict[str, float | None]:
    """Per session: seconds after the fault instance at ``t`` ends (``t`` plus
    its ``for``) until every receiver the fault hit is back to 80 % of its
    own throughput over the :data:`BASELINE_S` before ``t`` and holds there
    for a second (None: one never is within the run; 0: none fell below).

    The receivers judged are those behind the faulted element
    (:func:`behind`), each on its own series against its own baseline; a
    sampling instant where it has no sample counts as nothing received.  A
    receiver the fault removed (crash/leave without restart) is not judged,
    the others are; one that comes back is judged alone.  A receiver with no
    throughput before ``t`` is not judged, and a session with none left is
    skipped.
    """
    dt = dt or scenario.metrics_interval
    out: dict[str, float | None] = {}
    if fault.kind == "disk_full" or (fault.kind == "sender_crash" and fault.duration is None):
        return out  # no throughput to come back: results refused / the session is over
    gone: set[str] = set()
    only: set[str] | None = None
    if fault.kind in (*HOST_FAULTS, "sender_crash"):
        if fault.duration is None or fault.kind == "receiver_leave":
            gone.add(fault.target)  # the others are the survivors
        else:
            only = {fault.target}  # it comes back: its own throughput must
    t_end = t + (fault.duration or 0.0)
    for s in scenario.sessions:
        if fault.session and fault.session != s.name and fault.kind != "malformed":
            continue
        if fault.kind == "sender_crash" and fault.target != s.sender:
            continue
        hit = set(behind(scenario, s, fault))
        judged = [r for r in s.receivers if r in hit and r not in gone and (only is None or r in only)
                  and s.join_at.get(r, s.start) < t - dt and s.leave_at.get(r, 1e18) > t]
        if only is not None and fault.target == s.sender:
            judged = [r for r in s.receivers if s.join_at.get(r, s.start) < t - dt]
        if not judged:
            continue
        # every sampling instant of the session; a receiver's missing sample is 0
        series: dict[str, dict[float, float]] = {r: {} for r in judged}
        grid: set[float] = set()
        for x in samples:
            if x.kind == "session" and x.flow == s.name and x.metric == "throughput_bps":
                tm = round(x.time / dt) * dt
                grid.add(tm)
                if x.node in series:
                    series[x.node][tm] = series[x.node].get(tm, 0.0) + x.value
        times: list[float | None] = []
        for r in judged:
            pts = [(tm, series[r].get(tm, 0.0)) for tm in sorted(grid)]
            if sum(v for tm, v in pts if t - BASELINE_S <= tm < t) <= 0:
                continue  # nothing before the fault to come back to
            times.append(recovery_time(pts, t, t_end))
        if times:
            out[s.name] = None if None in times else max(times)
    return out


def recovery_events(samples: list[Any], scenario: Any, run_end: float) -> list[tuple[float, str, str, str]]:
    """``events.csv`` rows: one ``fault`` per instance and one ``recovered``
    (or ``not_recovered``) per affected session, in both engines."""
    rows: list[tuple[float, str, str, str]] = []
    for i, f in enumerate(getattr(scenario, "faults", ()) or ()):
        node = _node(f)
        for t in f.times(run_end):
            rows.append((t, node, "fault", f"faults[{i}] {f.describe()}"))
            for sess, rt in sorted(recovery_times(samples, scenario, f, t).items()):
                if rt is None:
                    rows.append((run_end, node, "not_recovered", f"faults[{i}] session={sess}"))
                else:
                    rows.append((t + (f.duration or 0.0) + rt, node, "recovered",
                                 f"faults[{i}] session={sess} after={rt:.2f}s"))
    return rows


class FullDisk:
    """A results writer's file with ``free`` bytes left on its disk: the
    write that goes past them fails as ``write(2)`` does, with ENOSPC.

    ``disk_full`` puts every results file of a run behind one budget
    (:func:`fill_disk`), so a run whose disk fills while it writes leaves no
    completion mark and ``p4mcc report`` refuses the folder."""

    def __init__(self, f: Any, budget: list[int]) -> None:
        self._f = f
        self._budget = budget

    def write(self, text: str) -> int:
        n = len(text.encode())
        if n > self._budget[0]:
            import errno
            import os

            self._budget[0] = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._budget[0] -= n
        return self._f.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def fill_disk(recorder: Any, free: int) -> None:
    """Make ``recorder``'s results files share ``free`` bytes of disk (the
    ``disk_full`` fault, the same in both engines): its CSV and metrics
    writers get :class:`FullDisk` files."""
    budget = [int(free)]
    for name in ("_write_samples", "_write_events", "_write_records"):
        fill = getattr(recorder, name)
        setattr(recorder, name, lambda f, fill=fill: fill(FullDisk(f, budget)))


def _node(f: Fault) -> str:
    t = f.target
    if isinstance(t, tuple):
        return "--".join(t) if f.kind.startswith("link") else f"{t[0]}-p{t[1]}"
    return t or "controller"


def with_protocol(sc: Any, proto: str) -> Any:
    """The scenario with its sessions' protocol replaced (their names too, and
    the faults that name the first session), so that one fault scenario
    serves every protocol (``bench/faults.py`` and the fault tests).

    A session's parameters and rule switches belong to its own protocol
    (``mtcp-receiver-crash`` sets MTCP's ``assisted``): another protocol runs
    with its defaults (its profile is kept: every protocol has ``paper`` and
    ``default``)."""
    old = sc.sessions[0].name
    sessions = [dataclasses.replace(s, protocol=proto, name=proto,
                                    params=s.params if s.protocol == proto else {},
                                    rules=s.rules if s.protocol == proto else {}) for s in sc.sessions]
    faults = tuple(dataclasses.replace(f, session=proto if f.session == old else f.session) for f in sc.faults)
    return dataclasses.replace(sc, sessions=sessions, faults=faults, name=f"{sc.name}-{proto}")


def with_rules(sc: Any, profile: str, rules: dict[str, bool] | None = None) -> Any:
    """The scenario with every session on ``profile`` and ``rules`` switched
    (an ablation's variant: ``bench/friendliness.py --ablate``'s fault rows)."""
    sessions = [dataclasses.replace(s, profile=profile, rules=dict(rules or {})) for s in sc.sessions]
    return dataclasses.replace(sc, sessions=sessions)


def faults_later(sc: Any, by: float, tail: float = 0.0) -> Any:
    """The scenario with every fault ``by`` seconds later and the run ``by +
    tail`` longer: past a protocol's start-up, with time left to measure a
    slow recovery."""
    faults = tuple(dataclasses.replace(f, at=f.at + by, until=None if f.until is None else f.until + by)
                   for f in sc.faults)
    return dataclasses.replace(sc, faults=faults, duration=sc.duration + by + tail)
