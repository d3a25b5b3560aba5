"""The simulator's liveness check (netsim/liveness.py) reports a session that stops
delivering while it could, as a ``stall`` event in events.csv and a count in
summary.json, and stays silent for a live session and during a link outage."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from p4mcc.hosts.core import Endpoint
from p4mcc.netsim.liveness import IDLE_LIMIT_S, count_stalls
from p4mcc.netsim.run import registry_factory, run_scenario
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import scenario_from_dict

BLACKHOLE_AT = 4.0
DURATION = 14.0


def _scenario(protocol: str, faults: list[dict[str, Any]] | None = None) -> Any:
    return scenario_from_dict({
        "name": f"live-{protocol}", "duration": DURATION, "seed": 1,
        "topology": {"generate": {"kind": "star", "receivers": 2, "rate": "4Mbps", "delay": "10ms"}},
        "sessions": [{"name": "s", "protocol": protocol, "sender": "snd", "receivers": ["r*"],
                      "port": 5005}],
        "faults": faults or [],
    })


def _blackholed(after: float | None):
    """Agents as the registry builds them; from ``after`` on, the sender's data never leaves it."""
    def factory(sess: Any, role: str, host: str, ip: str, sender_ip: str, seed: int) -> Endpoint:
        agent = registry_factory(sess, role, host, ip, sender_ip, seed, switch_assists=False)
        if role == "sender" and after is not None:
            inner = agent.send

            def send(dst: Any, data: bytes) -> None:
                if agent.now < after:
                    inner(dst, data)

            agent.send = send  # type: ignore[method-assign]
        return agent
    return factory


def _events(out: Path) -> list[dict[str, str]]:
    with open(out / "events.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("protocol", ["mtcp", "tfmcc"])
def test_a_session_that_stops_delivering_is_reported_once_per_receiver(protocol: str, tmp_path: Path) -> None:
    run = run_scenario(_scenario(protocol), tmp_path, agent_factory=_blackholed(BLACKHOLE_AT),
                       switch=choose_switch("model"))
    stalls = [e for e in _events(tmp_path) if e["event"] == "stall"]
    assert sorted(e["node"] for e in stalls) == ["r1", "r2"]
    for e in stalls:
        # the last delivery came after the blackhole (what was in flight and queued), and the
        # stall is reported once the receiver has been idle the limit (the check looks every
        # metrics interval)
        since = float(e["detail"].removeprefix("s: nothing delivered since ").removesuffix(" s"))
        assert BLACKHOLE_AT <= since <= BLACKHOLE_AT + 1.0
        step = _scenario(protocol).metrics_interval
        assert IDLE_LIMIT_S < float(e["time"]) - since <= IDLE_LIMIT_S + step + 1e-6
    assert json.loads((tmp_path / "summary.json").read_text())["stalls"] == {"s": 2}
    assert count_stalls(run.recorder.events) == 2


@pytest.mark.parametrize("protocol", ["mtcp", "tfmcc"])
def test_a_live_session_is_not_reported(protocol: str, tmp_path: Path) -> None:
    run = run_scenario(_scenario(protocol), tmp_path, agent_factory=_blackholed(None),
                       switch=choose_switch("model"))
    assert count_stalls(run.recorder.events) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["stalls"] == {"s": 0}


def test_a_link_outage_longer_than_the_limit_is_not_a_stall() -> None:
    """r1's link is down 4-11 s: no delivery for 7 s, excused while it is down."""
    sc = _scenario("tfmcc", faults=[{"type": "link_down", "at": 4.0, "target": ["s1", "r1"], "for": 7.0}])
    run = run_scenario(sc, None, agent_factory=_blackholed(None), switch=choose_switch("model"))
    assert count_stalls(run.recorder.events) == 0
