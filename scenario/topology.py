"""The network a scenario runs on: hosts, switches, links and their loss models.

Plain frozen data, read by both engines and written by the topology
generators (:mod:`scenario.shapes`) as well as by the scenario reader
(:mod:`scenario.model`); it depends on neither, so neither depends on the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

#: Link defaults when the scenario does not say (Linux veth-like: fast, short).
DEFAULT_RATE_BPS = 1e9
DEFAULT_QUEUE_PACKETS = 1000


@dataclass(frozen=True)
class GilbertElliott:
    """Two-state bursty loss: per packet, move good->bad with ``p_gb`` and
    bad->good with ``p_bg``; lose with ``loss_good`` / ``loss_bad`` in each."""

    p_gb: float
    p_bg: float
    loss_good: float = 0.0
    loss_bad: float = 1.0

    @property
    def mean_loss(self) -> float:
        """Stationary loss rate (what a long run measures)."""
        pi_bad = self.p_gb / (self.p_gb + self.p_bg) if self.p_gb + self.p_bg > 0 else 0.0
        return (1 - pi_bad) * self.loss_good + pi_bad * self.loss_bad


@dataclass(frozen=True)
class Host:
    name: str
    ip: str
    prefix_len: int = 24
    mac: str = ""
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Switch:
    name: str
    #: Free-form per-switch options (e.g. tutorials' ``runtime_json``); engines
    #: ignore keys they do not know.
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkEnd:
    node: str
    #: Switch port number; None lets the engine number ports in link order
    #: (hosts always use their single interface).
    port: int | None = None

    def __str__(self) -> str:
        return self.node if self.port is None else f"{self.node}-p{self.port}"


@dataclass(frozen=True)
class Link:
    """A full-duplex link; the parameters apply to each direction."""

    a: LinkEnd
    b: LinkEnd
    rate_bps: float = DEFAULT_RATE_BPS
    delay_s: float = 0.0
    #: Bernoulli loss probability per packet, or a Gilbert-Elliott model.
    loss: float | GilbertElliott = 0.0
    queue_packets: int | None = DEFAULT_QUEUE_PACKETS
    queue_bytes: int | None = None

    @property
    def name(self) -> str:
        return f"{self.a}--{self.b}"


@dataclass(frozen=True)
class Topology:
    hosts: dict[str, Host]
    switches: dict[str, Switch]
    links: list[Link]

    def nodes(self) -> set[str]:
        return set(self.hosts) | set(self.switches)


def known_name(name: Any, names: Iterable[str] | dict[str, Any]) -> bool:
    """``name`` is one of ``names`` (hosts, switches, sessions, fault types).

    A scenario file can put a list or a mapping where a name goes; that is
    simply not a known name, where ``in`` would raise on it.
    """
    return isinstance(name, str) and name in names
