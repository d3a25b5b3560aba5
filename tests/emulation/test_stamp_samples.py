"""The congestion stamp measured in Mininet: the agent's driver folds the
stamps of the data it receives into each "traffic" record, and the run's
collector turns them into the same samples the simulator writes
(``reporting.results.STAMP_QUEUE``/``STAMP_SPARE``; docs/stamp.md).
No network needed: the driver gets datagrams as its socket would give them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

from p4mcc.emulation.run import _collect_agent
from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint
from p4mcc.hosts.driver import UdpDriver
from p4mcc.hosts.registry import SessionConfig
from p4mcc.reporting import results as R

S = wire.Stamp


class Quiet(Endpoint):
    role = "quiet"

    def on_datagram(self, data: bytes, src: tuple[str, int], now: float) -> None:
        pass


def traffic_records(stamps: list[list[int]]) -> list[dict]:
    """The "traffic" records of a receiver's driver given, per interval, the data stamps."""
    metrics = io.StringIO()
    cfg = SessionConfig(session_id=1, group="239.1.1.1", port=5001, sender="10.0.0.1", local="10.0.0.2")
    drv = UdpDriver(Quiet(), cfg, role="recv", metrics=metrics)
    clock = [0.0]
    drv.loop = SimpleNamespace(time=lambda: clock[0], call_later=lambda *a: None)  # type: ignore[assignment]
    drv._done = SimpleNamespace(done=lambda: False)  # type: ignore[assignment]
    for interval in stamps:
        for st in interval:
            drv._on_datagram(wire.WebrcData(session_id=1, seq=0, payload=bytes(100), stamp=st).encode(),
                             ("10.0.0.1", 5001), multicast=True)
        clock[0] += 0.5
        drv._traffic()
    return [json.loads(line) for line in metrics.getvalue().splitlines()]


def test_each_traffic_record_carries_its_intervals_worst_stamp() -> None:
    recs = traffic_records([[S.pack(2, 9), S.pack(6, 4), S.pack(3, 5)],  # worst q 6, tightest s 4
                            [S.pack(2, 9), S.NOT_STAMPED],  # one unstamped: nothing to say
                            []])  # no data
    assert [r.get("stamp") for r in recs] == [S.pack(6, 4), None, None]


def test_the_collector_writes_the_simulators_samples(tmp_path: Path) -> None:
    recs = traffic_records([[S.pack(10, 0)], [S.pack(2, 7)]])
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "w-r1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rec = R.Recorder(SimpleNamespace(sessions=[]), "mininet")
    started = SimpleNamespace(plan=SimpleNamespace(session="w", host="r1", role="recv"), started_at=0.0)
    _collect_agent(started, 0.0, 0.5, rec, tmp_path, SimpleNamespace(sessions=[]))  # type: ignore[arg-type]
    got = [(s.time, s.metric, s.value) for s in rec.samples if s.metric in (R.STAMP_QUEUE, R.STAMP_SPARE)]
    assert got == [(0.5, R.STAMP_QUEUE, S.queue_delay_s(S.pack(10, 0))), (0.5, R.STAMP_SPARE, 0.0),
                   (1.0, R.STAMP_QUEUE, S.queue_delay_s(S.pack(2, 7))), (1.0, R.STAMP_SPARE, 40_000 * 2**7)]
