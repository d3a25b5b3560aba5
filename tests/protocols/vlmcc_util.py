"""VLMCC's classes under a profile, for tests that drive the cores directly.

``VlmccSender`` and ``VlmccReceiver`` from :mod:`hosts.vlmcc` are the
paper's algorithm; the registry composes a session's rules onto them.  Tests
of the default build the same classes here, and a rule's test builds them
with and without that rule.
"""

from __future__ import annotations

from typing import Any, Callable

from p4mcc.hosts.vlmcc import RULES, VlmccParams, VlmccReceiver, VlmccSender

DEFAULT_RULES = RULES.resolve("default")


def rules(without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The default rule list without ``without`` and without the rules that need them."""
    gone = set(without)
    while True:
        more = {r.name for r in RULES.rules if set(r.requires) & gone} - gone
        if not more:
            break
        gone |= more
    return tuple(n for n in DEFAULT_RULES if n not in gone)


def sender_class(names: tuple[str, ...] = DEFAULT_RULES) -> type[VlmccSender]:
    return RULES.compose(VlmccSender, names)


def receiver_class(names: tuple[str, ...] = DEFAULT_RULES) -> type[VlmccReceiver]:
    return RULES.compose(VlmccReceiver, names)


DefaultSender = sender_class()
DefaultReceiver = receiver_class()


def default_session(sender: Any, receivers: list[Any], session: Callable[[Any, str], Any],
                    stagger: float) -> VlmccSender:
    """A ``default`` session on ``testnet`` hosts: the sender on ``sender``, a receiver on each
    of ``receivers``, the i-th starting at i * ``stagger`` s; ``session(params, ip)`` is the
    caller's session config."""
    p = VlmccParams()
    snd = DefaultSender(session(p, sender.ip))
    sender.attach(snd)
    for i, h in enumerate(receivers):
        h.attach(DefaultReceiver(session(p, h.ip)), at=stagger * i)
    return snd
