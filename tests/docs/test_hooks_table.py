"""Each protocol page's hook table is the code's (``python -m p4mcc.hosts.explain --write``),
and ``--explain`` reads a composition back as it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from p4mcc.hosts import explain, registry
from p4mcc.hosts.rules import PROFILE_NAMES, Registrar, hook

PROTOCOLS = registry.names()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_page_carries_the_hook_table_of_the_code(protocol: str) -> None:
    text = explain.page_of(protocol).read_text()
    assert explain.section_text(protocol) in text, (
        f"docs/protocols/{protocol}.md: the hook table drifted from the code; "
        "regenerate with `python -m p4mcc.hosts.explain --write`")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_explain_runs_for_every_protocol_and_profile(protocol: str, profile: str) -> None:
    if profile not in registry.get(protocol).rules.profiles:
        pytest.skip(f"{protocol} has no {profile} profile")
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "host", "send", "--proto", protocol,
                        "--profile", profile, "--explain"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{protocol} ({profile}): each hook a rule changes, outermost first"
    if profile == "paper":
        assert lines[1:] == ["  no rule: the paper's cores run as they are"]
    else:
        names = set(registry.get(protocol).resolve_rules(profile))
        for line in lines[1:]:
            if line.startswith("  "):
                chain = line.split(": ", 1)[1].split("   (")[0].split(" -> ")
                assert all(c in names or c == "paper" or c.startswith("(") for c in chain), line


class Core:
    role = "toy"

    @hook
    def on_data(self) -> list[str]:
        return ["paper"]


rule = Registrar("toy", reason="test")


@rule("outer", "wraps")
class Outer(Core):
    def on_data(self) -> list[str]:
        return ["outer", *super().on_data()]


@rule("replaces", "replaces the paper's hook")
class Replaces(Core):
    def on_data(self) -> list[str]:
        return ["replaces"]


def test_a_rule_that_does_not_call_super_is_shown_ending_the_chain() -> None:
    book = rule.book(default=("outer", "replaces"))
    (row,) = explain.hook_rows(Core, {r.name: r.mixins["toy"] for r in book.rules})
    assert row.chain == ("outer", "replaces", "paper")
    assert row.stops == "replaces"
    assert book.compose(Core, ["outer", "replaces"])().on_data() == ["outer", "replaces"]


def test_crowded_counts_the_rules_that_wrap_a_hook_and_leaves_out_paper_and_helpers() -> None:
    rows = explain.hook_rows(Core, {"outer": Outer, "replaces": Replaces})
    assert [explain.rules_of(r) for r in rows] == [("outer", "replaces")]
    crowded = {(r.role, r.hook): explain.rules_of(r) for r in explain.crowded("rla", "stamped", 2)}
    assert crowded[("rla-sender", "_on_sack")] == ("join_at_window_edge", "resume_stream", "stalled_receivers")
    assert explain.crowded("rla", "paper", 0) == []
