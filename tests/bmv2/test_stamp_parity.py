"""Parity of the congestion stamp: its Scapy packet tests give the same
frames on BMv2 and on ``p4mcc switch`` (live processes on veth ports).

``stamping.stf`` and ``echo.stf`` take part in test_parity.py with the
other STF files. The Scapy tests here are those of
tests/p4src/test_stamping.py whose frames do not depend on the switch's own
queueing time or clock (each packet sent in already carries a queue code
worse than any wait on an idle switch), and the single-switch tests of
tests/p4src/test_feedback_echo.py (feedback is never stamped, so its
frames never depend on either).
Needs root, p4c-bm2-ss and simple_switch_grpc; skips and says which is
missing otherwise.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from test_parity import TARGETS, live  # noqa: F401  (the module's live switches)

pytestmark = [pytest.mark.root, pytest.mark.slow]

LIVE_TESTS = (
    ("test_stamping", "test_stamped_upstream_packet_keeps_the_worse_queue_and_the_tighter_spare_code"),
    ("test_stamping", "test_a_port_without_a_rate_never_limits_the_spare_code_or_the_share"),
    ("test_stamping", "test_sessions_without_stamping_and_feedback_pass_unchanged"),
    ("test_feedback_echo",
     "test_aggregated_ack_carries_the_worst_queue_and_tightest_spare_of_the_acks_it_stands_for"),
    ("test_feedback_echo", "test_an_absorbed_zero_echo_makes_the_aggregated_echo_zero"),
    ("test_feedback_echo", "test_aggregated_ack_carries_the_smallest_share_echo_and_a_missing_one_wins"),
    ("test_feedback_echo", "test_filtered_report_carries_the_smallest_share_echo_of_the_reports_it_suppressed"),
    ("test_feedback_echo", "test_an_echo_without_a_queue_code_goes_up_as_zero"),
    ("test_feedback_echo", "test_filtered_report_carries_the_echoes_of_the_reports_it_suppressed"),
    ("test_feedback_echo", "test_echoes_of_one_session_never_reach_another"),
)


@pytest.mark.parametrize("module,name", LIVE_TESTS)
def test_stamping_packet_test_passes_on_bmv2_and_on_p4mcc_switch(module: str, name: str,
                                                                  live: dict[str, Any],  # noqa: F811
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import p4src_harness

    mod = importlib.import_module(module)
    for target in TARGETS:
        sw = live[target]
        monkeypatch.setattr(mod, "new_switch", sw.reset, raising=False)
        monkeypatch.setattr(p4src_harness, "new_switch", sw.reset)
        try:
            getattr(mod, name)()
        except AssertionError as exc:
            raise AssertionError(f"on {target}: {exc}") from exc
        assert sw.mismatches == [], f"{target}: {sw.mismatches}"
