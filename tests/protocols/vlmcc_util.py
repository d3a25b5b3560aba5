"""VLMCC's classes under a profile, for tests that drive the cores directly.

``VlmccSender`` and ``VlmccReceiver`` from :mod:`hosts.vlmcc` are the
paper's algorithm; the registry composes a session's rules onto them.  Tests
of the default build the same classes here, and a rule's test builds them
with and without that rule.
"""

from __future__ import annotations

from p4mcc.hosts.vlmcc import RULES, VlmccReceiver, VlmccSender

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
