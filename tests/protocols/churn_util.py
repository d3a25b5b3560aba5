"""A sender and receivers on one drop-tail dumbbell of the in-process network, and the
faults the churn tests inject: a silent crash, a graceful leave, and the time to recover.

Shared by RLA's and VLMCC's churn tests (``rla/test_rla_churn.py``,
``vlmcc/test_vlmcc_churn.py``); ``testnet.TinyNet`` runs on the simulator's
clock, so every bound is in simulated seconds and holds on a busy machine.
"""

from __future__ import annotations

from testnet import Host, TinyNet

from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.wire import RlaData, decode

GROUP, PORT, SND = "239.1.1.1", 6000, "10.0.0.1"


def session(params, local: str) -> SessionConfig:
    return SessionConfig(1, GROUP, PORT, SND, local, params, seed=11)


def dumbbell(n: int, seed: int = 1, rate: float = 2e6, queue: int = 20) -> tuple[TinyNet, list[Host]]:
    """Sender - R1 - (rate, 10 ms, drop-tail queue) - R2 - n receivers."""
    net = TinyNet(seed=seed)
    net.router("R1")
    net.router("R2")
    net.host("s", SND)
    net.link("s", "R1", rate_bps=100e6, delay_s=0.001)
    net.link("R1", "R2", rate_bps=rate, delay_s=0.01, queue=queue)
    hosts = []
    for i in range(n):
        h = net.host(f"h{i}", f"10.0.2.{i + 1}")
        net.link("R2", h.name, rate_bps=100e6, delay_s=0.001)
        hosts.append(h)
    return net, hosts


def crash(net: TinyNet, h: Host, at: float) -> None:
    """The host stops dead at ``at``: no leave, no packet, no timer (a silent crash)."""

    def die() -> None:
        h.receive = lambda port, frame: None  # type: ignore[method-assign]
        if h._timer is not None:
            h._timer.cancel()
            h._timer = None
        h._flush = lambda: None  # type: ignore[method-assign]

    net.sim.at(at, die)


def leave(net: TinyNet, h: Host, at: float) -> None:
    """A graceful leave, as every driver stops an agent: its goodbye (``close``) goes out,
    the group is left, then the agent stops."""

    def go() -> None:
        h.ep.close(net.sim.now)
        h._flush()
        for g in list(h.groups):
            h.groups.discard(g)
            net.leave(g, h.name)

    net.sim.at(at, go)
    crash(net, h, at)


def data_times(h: Host, kind=RlaData) -> list[float]:
    out = []
    for t, payload in h.rx:
        try:
            m = decode(payload)
        except Exception:
            continue
        if isinstance(m, kind):
            out.append(t)
    return out


def recovery_time(times: list[float], fault: float, window: float = 1.0) -> float:
    """Seconds from ``fault`` until a ``window`` carries 80 % of the packets of the
    same window before it (averaged over the 3 s before the fault)."""
    before = sum(1 for t in times if fault - 3 <= t < fault) / 3 * window
    t = fault
    while t < max(times):
        if sum(1 for x in times if t <= x < t + window) >= 0.8 * before:
            return t - fault
        t += 0.1
    return float("inf")

