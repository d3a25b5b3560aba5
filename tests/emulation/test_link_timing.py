"""Emulated links keep their timing when the process that runs them is late,
and say so when they cannot (no root needed: fake clocks)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from p4mcc.p4switch.linkemu import LATE_FLOOR_S, Link, LinkConfig, TimingWatch, realtime_thread


def test_a_late_caller_gets_each_frame_at_its_own_arrival_instant() -> None:
    # 10 ms of delay at 1 Mb/s: frame 0 (1000 B) leaves at 0 and arrives at
    # 10 ms, frame 1 leaves at 8 ms and arrives at 18 ms.
    link: Link[int] = Link(LinkConfig(rate_bps=1e6, delay_s=0.010, queue_packets=None, burst_bytes=1000))
    assert link.offer(0, 1000, 0.0) and link.offer(1, 1000, 0.0)
    assert link.advance_timed(0.005) == []
    # the scheduler runs 30 ms late: both frames carry their real arrival
    # instants, so the next stage does not add the 12-20 ms of lateness
    out = link.advance_timed(0.038)
    assert [i for i, _ in out] == [0, 1]
    assert [t for _, t in out] == pytest.approx([0.010, 0.018], abs=1e-9)
    assert link.advance(1.0) == []  # the untimed form is the same stream


def test_timing_watch_flags_a_period_with_late_departures_and_not_a_punctual_one() -> None:
    w = TimingWatch(period_s=5.0)
    w.add_link("1@s1-eth1 egress", delay_s=0.020)  # tolerance 2 ms (10 %)
    w.add_link("2@s1-eth2 egress", delay_s=0.0)    # tolerance: the 1 ms floor
    assert w.report(0.0) == []                      # the first call starts the period
    for _ in range(100):
        w.note("1@s1-eth1 egress", 0.0005)          # on time
        w.note("2@s1-eth2 egress", 0.0005)
    assert w.report(5.0) == []
    for i in range(100):
        w.note("1@s1-eth1 egress", 0.0030 if i < 10 else 0.0001)  # 10 % of frames 3 ms late
        w.note("2@s1-eth2 egress", 0.0009)                         # under the floor
    lines = w.report(10.0)
    assert len(lines) == 1 and lines[0].startswith("link 1@s1-eth1 egress: 10 of 100 frames later than 2.00 ms")
    assert "worst 3.00 ms" in lines[0]
    assert w.report(12.0) == []                     # the next period has not ended
    w.note("1@s1-eth1 egress", 0.030)               # one late frame alone is no drift
    assert w.report(15.0) == []
    assert w.total["1@s1-eth1 egress"].count == 201 and w.total["1@s1-eth1 egress"].late == 11
    assert w.total["2@s1-eth2 egress"].tolerance_s == LATE_FLOOR_S


def test_realtime_priority_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4MCC_RT_PRIORITY", "0")
    assert "turned off" in (realtime_thread() or "")
    monkeypatch.setenv("P4MCC_RT_PRIORITY", "high")
    assert "not an integer" in (realtime_thread() or "")


def test_the_run_turns_switch_timing_warnings_into_events(tmp_path: Path) -> None:
    from p4mcc.reporting import results as R
    from p4mcc.emulation.run import _link_timing

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "s1.log").write_text(
        "p4mcc switch: device 0 serving P4Runtime on 127.0.0.1:50051, ports 1@s1-eth1\n"
        "link timing: the link scheduler runs without real-time priority (Operation not permitted); "
        "link delays may stretch while the CPU is busy\n"
        "link timing: link 1@s1-eth1 egress: 9 of 80 frames later than 2.00 ms (mean 0.900 ms, worst 4.10 ms)"
        " at 1000012.500\n")
    (logs / "s2.log").write_text("p4mcc switch: device 1 serving P4Runtime\n")
    plan = SimpleNamespace(switches={"s1": None, "s2": None})
    rec = R.Recorder(SimpleNamespace(name="x", sessions=[], tcp_flows=[]), "mininet")
    assert _link_timing(plan, logs, 1000000.0, rec) == 2  # type: ignore[arg-type]
    (t0, n0, e0, d0), (t1, n1, e1, d1) = rec.events
    assert (t0, n0, e0) == (0.0, "s1:links", "link_timing") and "without real-time priority" in d0
    assert (t1, n1, e1) == (pytest.approx(12.5), "s1:1@s1-eth1 egress", "link_timing")
    assert d1.startswith("9 of 80 frames later than 2.00 ms")


def test_a_late_timer_reaches_the_core_at_its_due_instant() -> None:
    """The UDP driver hands a timer that fired a little late to the core at
    the instant it was due, so pacing gaps do not grow by the lateness."""
    from p4mcc.hosts.driver import TIMER_LATE_S, UdpDriver

    seen: list[float] = []

    class Core:
        def handle_timer(self, now: float) -> None:
            seen.append(now)

        def datagrams_to_send(self) -> list:
            return []

        def next_event(self) -> None:
            return None

        def get_timer(self) -> None:
            return None

    async def go() -> None:
        loop = asyncio.get_running_loop()
        d = UdpDriver.__new__(UdpDriver)
        d.ep, d.loop, d._timer, d._main, d._rx_at = Core(), loop, None, None, 0.0
        d.stats = {"errors": 0}
        d._warned = False
        d._timer_at = loop.time() - TIMER_LATE_S / 2   # half the allowance late
        due = d._timer_at
        d._on_timer()
        assert seen[-1] == due
        d._timer_at = late = loop.time() - 0.050       # far too late: the real time
        d._on_timer()
        assert seen[-1] >= late + 0.050

    asyncio.run(go())


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE)")
def test_realtime_priority_is_granted_to_root() -> None:
    import threading

    result: list[object] = []

    def run() -> None:
        result.append(realtime_thread())
        result.append(os.sched_getscheduler(0))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert result == [None, os.SCHED_FIFO]
