"""MTCP through the switch fold with one summary lost on its way up, at every position.

Three receivers behind one P4 switch that folds their summaries; a session of
``TOTAL`` packets.  The run is repeated with the n-th fold the sender would
receive dropped just before it (the switch-to-sender hop), for every n the
undisturbed run has, under the paper's rules (one packet in the first
window, so a lost fold closes it) and under ``default``.  Each run must still
deliver every packet to every receiver, and the sender must learn it, within
``BOUND_S`` of the undisturbed run's end: the fold goes up
again at the switch's refresh (aggregation.p4's AGG_REFRESH_US) once the
sender's timeout repair or a window update draws a summary from a receiver.
Before the refresh, a lost fold that no later change replaced stalled the
session for good."""

from __future__ import annotations

from typing import Any

import pytest

from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint
from p4mcc.netsim.run import build_run, registry_factory
from p4mcc.netsim.switches import choose_switch
from p4mcc.scenario.model import Scenario, Session
from p4mcc.scenario.shapes import star

TOTAL = 40
DURATION = 20.0
#: A lost fold costs at most one retransmission timeout (1 s floor, backed
#: off once) and the refresh interval (0.5 s) on top of the run without loss.
BOUND_S = 3.5
PORT = 5005


def _run(drop_at: int | None, profile: str = "default") -> tuple[Any, dict[str, float], int]:
    """One run; the times each receiver and the sender completed; the folds the sender got."""
    sess = Session(name="s", protocol="mtcp", sender="snd", receivers=("r1", "r2", "r3"), group="239.5.5.5",
                   port=PORT, params={"total_packets": TOTAL}, assistance=True, session_id=1,
                   profile=profile)
    sc = Scenario(name="fold-drop", description="", topology=star(receivers=3, rate="10Mbps", delay="5ms"),
                  sessions=[sess], tcp_flows=[], duration=DURATION, seed=1)
    folds = [0]

    def factory(s: Session, role: str, host: str, ip: str, sender_ip: str, seed: int) -> Endpoint:
        agent = registry_factory(s, role, host, ip, sender_ip, seed)
        if role == "sender":
            inner = agent.on_datagram

            def on_datagram(data: bytes, src: Any, now: float) -> None:
                msg = wire.decode(data)
                if isinstance(msg, (wire.MtcpAck, wire.MtcpWindowUpdate)) and msg.flags & wire.Flags.AGGREGATED:
                    folds[0] += 1
                    if folds[0] == drop_at:
                        return  # lost between the switch and the sender
                inner(data, src, now)

            agent.on_datagram = on_datagram  # type: ignore[method-assign]
        return agent

    run = build_run(sc, agent_factory=factory, switch=choose_switch("p4"))
    done: dict[str, float] = {}

    def watch() -> None:
        for r in sess.receivers:
            a = run.agents[f"s/{r}"]
            if r not in done and a.rbuf.cum_ack >= TOTAL:
                done[r] = run.sim.now
        if "snd" not in done and run.agents["s/snd"].done:
            done["snd"] = run.sim.now  # the sender knows every receiver holds everything
        if len(done) < len(sess.receivers) + 1:
            run.sim.at(run.sim.now + 0.05, watch)

    run.sim.at(0.05, watch)
    run.sim.run(until=DURATION)
    return run, done, folds[0]


@pytest.mark.parametrize("profile", ["paper", "default"])
def test_every_lost_fold_position_still_completes_the_session(profile: str) -> None:
    _run_, done, folds = _run(None, profile)
    assert len(done) == 4, "the undisturbed session must complete"
    end = max(done.values())
    assert folds >= 10  # a run long enough to lose folds in slow start and later
    late = {}
    for n in range(1, folds + 1):
        _run_, done, _ = _run(n, profile)
        finish = max(done.values()) if len(done) == 4 else float("inf")
        if finish > end + BOUND_S:
            late[n] = finish
    assert late == {}, f"folds whose loss stalled the session (position: completion time): {late}"
