"""WEBRC's session rate fitted to its sender's own link.

A WEBRC sender sends every channel whether or not anyone joined it, so its
own link carries the whole session rate.  The 20 Mbit/s default on a
10 Mbit/s sender link lost half of every channel at the sender's queue and
no receiver got past the base channel.  A session that leaves the rate to
the default gets one its sender's link can carry; one that sets a rate the
link cannot carry keeps it and is warned about, by field.
"""

from __future__ import annotations

import logging

import pytest

from p4mcc.hosts import webrc
from p4mcc.hosts.registry import get
from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import fit_sessions_to_links, scenario_from_dict


def _doc(sender_rate: str, params: dict | None = None) -> dict:
    return {
        "name": "webrc-sender-link", "duration": 20, "seed": 1,
        "topology": {
            "hosts": {"snd": {"ip": "10.7.0.1/24"}, "r1": {"ip": "10.7.1.1/24"},
                      "r2": {"ip": "10.7.1.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "link_defaults": {"rate": "100Mbps", "delay": "2ms", "queue": 50},
            "links": [{"a": "snd", "b": "s1", "rate": sender_rate},
                      {"a": "s1", "b": "s2", "rate": "4Mbps", "delay": "10ms", "queue": 30},
                      ["s2", "r1"], ["s2", "r2"]],
        },
        "sessions": [{"name": "wb", "protocol": "webrc", "sender": "snd", "receivers": ["r1", "r2"],
                      "params": params or {}}],
    }


def test_the_default_rate_is_cut_to_what_the_sender_link_carries() -> None:
    sc = scenario_from_dict(_doc("10Mbps"))
    rate = sc.sessions[0].params["session_rate_bps"]
    p = get("webrc").parse_params({"session_rate_bps": rate})
    assert webrc.wire_rate_bps(p) <= webrc.SENDER_LINK_SHARE * 10e6
    assert webrc.wire_rate_bps(p) > 0.99 * webrc.SENDER_LINK_SHARE * 10e6  # no more cut than needed
    assert fit_sessions_to_links(sc)[0] is sc  # fitting twice changes nothing


def test_a_sender_link_with_room_keeps_the_default() -> None:
    sc = scenario_from_dict(_doc("100Mbps"))
    assert "session_rate_bps" not in sc.sessions[0].params


def test_a_rate_the_session_sets_is_kept_and_reported_by_field(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="p4mcc.scenario"):
        sc = scenario_from_dict(_doc("10Mbps", {"session_rate_bps": 20e6}))
    assert sc.sessions[0].params == {"session_rate_bps": 20e6}
    assert any("sessions[0].params" in r.getMessage() and "session_rate_bps" in r.getMessage()
               for r in caplog.records)


def test_receivers_behind_a_10mbps_sender_link_get_their_share() -> None:
    """With the default rate on the sender's 10 Mbit/s link both receivers
    climb to the 4 Mbit/s bottleneck; with 20 Mbit/s they stayed under 0.2."""
    run = build_run(scenario_from_dict(_doc("10Mbps")), switch=model_choice())
    run.sim.run(14.0)
    before = {r: run.agents[f"wb/{r}"].bytes_received for r in ("r1", "r2")}
    run.sim.run(20.0)
    for r, b in before.items():
        assert (run.agents[f"wb/{r}"].bytes_received - b) * 8 / 6.0 > 0.6 * 4e6, r
