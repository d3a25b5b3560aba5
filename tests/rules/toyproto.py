"""A toy protocol with a rule book, registered by the tests of the rule plumbing.

The sender sends ``payload``-byte datagrams to the group at ``rate_pps``;
receivers count them.  Two rules change the sender and one the receiver, so
a test can see which rules reached which agent by the class that runs and
by the rate the receivers measure:

- ``double``: the sender sends twice as often;
- ``quiet``: needs ``double``; halves the payload;
- ``eager_join``: the receiver records that it ran (it changes no traffic).

``paper`` runs the cores; ``default`` is ``double``; ``stamped`` adds
``quiet``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4mcc.hosts.core import Address, JoinGroup
from p4mcc.hosts.registry import Protocol, SessionConfig, SessionEndpoint
from p4mcc.hosts.rules import Rule, RuleBook, hook

NAME = "toyrules"


@dataclass
class ToyParams:
    rate_pps: int = 20
    payload: int = 100


class ToySender(SessionEndpoint[ToyParams], role="toy-sender"):
    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.sent = 0

    @hook
    def interval(self) -> float:
        return 1.0 / self.p.rate_pps

    @hook
    def size(self) -> int:
        return self.p.payload

    def on_start(self, now: float) -> None:
        self.set_timer("tx", now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        pass  # no feedback

    def on_timer(self, name: str, now: float) -> None:
        self.send((self.cfg.group, self.cfg.port), bytes(self.size()))
        self.sent += 1
        self.set_timer("tx", now + self.interval())


class ToyReceiver(SessionEndpoint[ToyParams], role="toy-receiver"):
    unicast_on_session_port = False

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.received = 0

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.cfg.group))

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        self.received += 1

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return {"received": self.received}, "member"


class Double:
    def interval(self) -> float:
        return super().interval() / 2  # type: ignore[misc]


class Quiet:
    def size(self) -> int:
        return super().size() // 2  # type: ignore[misc]


class EagerJoin:
    eager = True


RULES = RuleBook(
    NAME,
    rules=(
        Rule("double", "sends twice as often", "a toy", {"toy-sender": Double}),
        Rule("quiet", "halves the payload", "a toy", {"toy-sender": Quiet}, requires=("double",)),
        Rule("eager_join", "marks the receiver", "a toy", {"toy-receiver": EagerJoin}),
    ),
    profiles={"paper": (), "default": ("double",), "stamped": ("double", "quiet")},
)

ENTRY = Protocol(NAME, __name__, "ToyParams", "ToySender", "ToyReceiver", "a toy with named rules")
PLAIN = "toyplain"
PLAIN_ENTRY = Protocol(PLAIN, __name__, "ToyParams", "ToySender", "ToyReceiver", "the toy without a rule book",
                       rulebook="NO_RULE_BOOK")
"""The same toy cores with no rule book: every profile is its bare cores."""
