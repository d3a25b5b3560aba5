"""RLA's classes under a profile, for tests that drive the cores directly.

``RlaSender`` and ``RlaReceiver`` from :mod:`hosts.rla` are the paper's
algorithm; the registry composes a session's rules onto them.  Tests that
exercise the default build the same classes here, and a rule's test builds
them with and without that rule.
"""

from __future__ import annotations

from p4mcc.hosts.rla import RULES, RlaReceiver, RlaSender

DEFAULT_RULES = RULES.resolve("default")


def rules(without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The default rule list without ``without`` (and without rules that need them)."""
    return RULES.resolve("default", {name: "off" for name in without})


def sender_class(names: tuple[str, ...] = DEFAULT_RULES) -> type[RlaSender]:
    return RULES.compose(RlaSender, names)


def receiver_class(names: tuple[str, ...] = DEFAULT_RULES) -> type[RlaReceiver]:
    return RULES.compose(RlaReceiver, names)


DefaultSender = sender_class()
DefaultReceiver = receiver_class()
