"""Mininet smoke test: real hosts, two P4 switches, a session with a join and a leave.

Two receivers join a session through two ``p4mcc switch`` processes; both
receive; one leaves halfway and its switch port stops carrying the group while
the other receiver goes on; the sender's rate stays within what the
rate-limited link between the switches carries; the results folder is written
with sane values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from p4mcc.scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]

BOTTLENECK_BPS = 1e6
DURATION = 24.0
LEAVE_AT = 12.0
LAST_LEAVE_AT = 20.0


def scenario(protocol: str, params: dict[str, Any]):
    return scenario_from_dict({
        "name": f"smoke-{protocol}",
        "duration": DURATION,
        "metrics_interval": 1.0,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [
                {"a": "s1-p1", "b": "s2-p1", "rate": BOTTLENECK_BPS, "delay": "10ms", "queue": 20},
                {"a": "h1", "b": "s1-p2", "rate": "100Mbps"},
                {"a": "h2", "b": "s2-p2", "rate": "100Mbps"},
                {"a": "h3", "b": "s2-p3", "rate": "100Mbps"},
            ],
        },
        "sessions": [{"name": "s", "protocol": protocol, "sender": "h1", "receivers": ["h2", "h3"],
                      "group": "239.5.5.5", "port": 5005, "leave_at": {"h3": LEAVE_AT, "h2": LAST_LEAVE_AT}, "params": params}],
    })


class PortWatch:
    """Samples s2's data counters toward h2 (port 2) and h3 (port 3) over time."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int, int]] = []
        self.next_at = 2.0

    def __call__(self, now: float, net: Any, plan: Any) -> None:
        from p4mcc.emulation.run import read_counters

        if now < self.next_at:
            return
        self.next_at = now + 2.0
        tx = read_counters(plan, "s2")
        data = next(v for k, v in tx.items() if k.endswith("port_data_tx"))
        self.samples.append((now, data.get(2, (0, 0))[0], data.get(3, (0, 0))[0]))


def test_join_leave_and_rate_through_two_p4_switches(mininet_ready: None, tmp_path: Path) -> None:
    from p4mcc.emulation.run import run_emulation

    watch = PortWatch()
    summary = run_emulation(scenario("tfmcc", {"initial_rate_bps": 200000}), tmp_path,
                            progress=False, observe=watch)

    # both receivers got data while joined
    recv = summary["sessions"]["s"]["receivers"]
    assert recv["h2"]["throughput_bps"] > 100e3 and recv["h3"]["throughput_bps"] > 100e3, recv

    # after h3's leave, s2 stops sending the group to port 3 but goes on to port 2
    before = [s for s in watch.samples if s[0] < LEAVE_AT - 1]
    after = [s for s in watch.samples if s[0] > LEAVE_AT + 2]
    assert before and len(after) >= 2, watch.samples
    assert before[-1][2] > 0, "h3's port never carried the group"
    assert after[-1][2] == after[0][2], f"data still sent to h3 after its leave: {watch.samples}"
    while_h2 = [x for x in after if x[0] < LAST_LEAVE_AT]
    assert len(while_h2) >= 2 and while_h2[-1][1] > while_h2[0][1], f"h2 stopped receiving: {watch.samples}"

    # the sender's rate reacts to the 1 Mb/s link: never far above it
    sender = summary["sessions"]["s"]["sender_stats"]
    assert 0 < sender["throughput_bps"] <= 1.2 * BOTTLENECK_BPS, sender

    # the switches' own membership digests: the join climbs to s1 once (when
    # s2's membership goes from empty to non-empty) and the leave climbs only
    # when s2's last member leaves
    import csv

    events = [(float(r["time"]), r["node"], r["event"]) for r in csv.DictReader((tmp_path / "events.csv").open())
              if r["event"].startswith("switch_")]
    upstream = [(n, e) for _t, n, e in events if n == "s1-p1"]
    assert upstream == [("s1-p1", "switch_join"), ("s1-p1", "switch_leave")], events
    h3_leave = next(t for t, n, e in events if (n, e) == ("s2-p3", "switch_leave"))
    s1_leave = next(t for t, n, e in events if (n, e) == ("s1-p1", "switch_leave"))
    assert LEAVE_AT - 1 < h3_leave < LEAVE_AT + 3, events
    assert LAST_LEAVE_AT - 1 < s1_leave < LAST_LEAVE_AT + 3, events

    for name in ("summary.json", "timeseries.csv", "events.csv", "throughput.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["engine"] == "mininet"
