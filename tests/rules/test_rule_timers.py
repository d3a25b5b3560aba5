"""Rules own their timers (``@timer``) and act at start (``@at_start``); none overrides the driver's
entry points (``on_timer``, ``on_start``), which the composition owns.

The composed class sends a timer a rule owns to that rule's handler and every
other timer to the core's ``on_timer``; two rules owning one timer, or a rule
owning a timer the core handles, is refused naming them; the rules' start
actions run after the core's ``on_start``, in composition order.  And no rule
of any protocol, in any profile, defines ``on_timer`` or ``on_start``.
"""

from __future__ import annotations

from typing import Any

import pytest

from p4mcc.hosts import explain, registry
from p4mcc.hosts.rules import (DRIVER_ENTRIES, Registrar, RuleError, at_start, core_timers, hook,
                               rule_methods, timer)


class Core:
    role = "toy-sender"
    TIMERS = frozenset({"rto"})

    def __init__(self) -> None:
        self.log: list[str] = []

    def on_start(self, now: float) -> None:
        self.log.append("core start")

    def on_timer(self, name: str, now: float) -> None:
        if name == "rto":
            self._on_rto(now)
        else:
            self.log.append(f"core ignores {name}")

    @hook
    def _on_rto(self, now: float) -> None:
        """The paper: a timeout is logged."""
        self.log.append("rto")


class Beacon(Core):
    @timer("beacon")
    def _beacon(self, now: float) -> None:
        self.log.append(f"beacon at {now}")

    @at_start
    def _arm(self, now: float) -> None:
        self.log.append("beacon armed")


class Quiet(Core):
    def _on_rto(self, now: float) -> None:
        self.log.append("quiet sees rto")
        super()._on_rto(now)

    @at_start
    def _hello(self, now: float) -> None:
        self.log.append("quiet armed")

    @timer("quiet")
    def _quiet(self, now: float) -> None:
        self.log.append("quiet")


class SecondBeacon(Core):
    @timer("beacon")
    def _other(self, now: float) -> None:
        self.log.append("other beacon")


class OwnsRto(Core):
    @timer("rto")
    def _mine(self, now: float) -> None:
        self.log.append("mine")


rule = Registrar("toy", reason="test")
rule("beacon", "a beacon timer")(Beacon)
rule("quiet", "a quiet timer, and sees timeouts")(Quiet)
rule("second_beacon", "a second beacon timer")(SecondBeacon)
rule("owns_rto", "takes the core's timeout")(OwnsRto)
BOOK = rule.book(default=("beacon", "quiet"))


def test_a_rules_timer_goes_to_its_handler_and_every_other_to_the_core() -> None:
    ep: Any = BOOK.compose(Core, ["beacon", "quiet"])()
    ep.on_timer("beacon", 1.5)
    ep.on_timer("quiet", 2.0)
    ep.on_timer("rto", 3.0)
    ep.on_timer("stale", 4.0)
    assert ep.log == ["beacon at 1.5", "quiet", "quiet sees rto", "rto", "core ignores stale"]


def test_start_actions_run_after_the_cores_on_start_in_composition_order() -> None:
    ep: Any = BOOK.compose(Core, ["beacon", "quiet"])()
    ep.on_start(0.0)
    assert ep.log == ["core start", "beacon armed", "quiet armed"]


def test_without_a_rule_timer_the_core_gets_every_timer() -> None:
    ep: Any = BOOK.compose(Core, ["quiet"])()
    ep.on_timer("beacon", 1.0)
    assert ep.log == ["core ignores beacon"]


def test_two_rules_owning_one_timer_are_refused_by_name() -> None:
    with pytest.raises(RuleError, match=r"rules 'beacon' and 'second_beacon' both own timer 'beacon'"):
        BOOK.compose(Core, ["beacon", "second_beacon"])


def test_a_rule_owning_a_timer_the_core_handles_is_refused() -> None:
    assert core_timers(Core) == {"rto"}
    with pytest.raises(RuleError, match=r"rule 'owns_rto' owns timer 'rto', which Core.on_timer handles"):
        BOOK.compose(Core, ["owns_rto"])


@pytest.mark.parametrize("entry", DRIVER_ENTRIES)
def test_a_rule_that_overrides_a_driver_entry_point_is_refused(entry: str) -> None:
    def override(self: Any, *args: Any) -> None:
        super(Mixin, self).on_timer(*args)  # pragma: no cover - refused before it runs

    Mixin = type("Mixin", (Core,), {entry: override})
    with pytest.raises(RuleError, match=rf"overrides {entry}, which only the core defines.*@timer\(name\).*@at_start"):
        Registrar("toy", reason="test")("late", "overrides the driver")(Mixin)


def test_a_timer_needs_a_name() -> None:
    with pytest.raises(RuleError, match="timer's name"):
        timer("")


def test_the_cores_name_their_timers() -> None:
    """What the refusal reads: the timers each core declares its on_timer handles."""
    from p4mcc.hosts.mtcp.receiver import MtcpReceiver
    from p4mcc.hosts.mtcp.sender import MtcpSender
    from p4mcc.hosts.vlmcc.receiver import VlmccReceiver

    assert core_timers(MtcpSender) == {"pkt", "probe"}
    assert core_timers(MtcpReceiver) == {"nack", "ack", "wupdate", "pkt", "probe"}
    assert "probe" in core_timers(VlmccReceiver)


@pytest.mark.parametrize("protocol", registry.names())
def test_no_rule_of_any_profile_overrides_on_timer_or_on_start(protocol: str) -> None:
    entry = registry.get(protocol)
    book = entry.rules
    for profile in book.profiles:
        names = set(book.resolve(profile))
        for core in (entry.sender_factory, entry.receiver_factory):
            if not isinstance(core, type):
                continue
            book.compose(core, tuple(names))  # composes: no two owners, no core timer taken
            for r in book.rules:
                if r.name in names and core.role in r.mixins:
                    found = sorted(set(rule_methods(r.mixins[core.role], core)) & set(DRIVER_ENTRIES))
                    assert found == [], f"{protocol} {profile}: rule {r.name!r} defines {found}"


def test_the_tables_name_each_rule_timer_and_start_action() -> None:
    rows = {(e.role, e.label): e.chain for e in explain.entry_rows("mtcp", "default")}
    assert rows[("mtcp-sender", "timer rollcall")] == ("fold_roll_call",)
    assert rows[("mtcp-sender", "timer resume")] == ("resume_stream",)
    assert rows[("mtcp-sender", "at start")] == ("paper", "resume_stream")
    assert explain.entry_rows("mtcp", "paper") == []
    lines = explain.explain_lines("rla", "default")
    assert "  timer tick: (_Housekeeping)" in lines and "  timer ack: thin_acks" in lines


@pytest.mark.parametrize("profile", ["paper", "default", "stamped"])
@pytest.mark.parametrize("protocol", ["tfmcc", "webrc", "rla", "mtcp", "vlmcc"])
def test_every_timer_an_endpoint_sets_is_declared_by_its_core_or_owned_by_a_rule(
        protocol: str, profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timer set under a name neither the core declares nor a rule owns would reach the core's
    ``on_timer`` unannounced, and a rule could claim it without being refused."""
    from p4mcc.hosts.core import Endpoint
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from tests.protocols.tcp_dumbbell_util import dumbbell

    seen: dict[type, set[str]] = {}
    set_timer = Endpoint.set_timer

    def record(self: Endpoint, name: str, when: float) -> None:
        seen.setdefault(type(self), set()).add(name)
        set_timer(self, name, when)

    monkeypatch.setattr(Endpoint, "set_timer", record)
    sc = dumbbell(protocol, {}, rate="4Mbps", delay="10ms", queue=20, receivers=3, duration=4.0, profile=profile)
    run = build_run(sc, switch=choose_switch("model"))
    run.sim.run(until=sc.duration)
    assert {k.role for k in seen} == {f"{protocol}-sender", f"{protocol}-receiver"}
    for klass, names in seen.items():
        assert names <= klass.TIMERS, f"{klass.__qualname__} sets {sorted(names - klass.TIMERS)}, undeclared"
