"""A leaving receiver says goodbye the same way under both drivers.

The simulator (``leave_at``) and the asyncio UDP driver (the process stops)
both end an agent through :meth:`hosts.core.Endpoint.close`.  For TFMCC that
is the LEAVING report of RFC 4654 section 3.1 (a receiver that leaves tells
the sender, so a leaving CLR is replaced at once).  The same session -- one
sender, one receiver that leaves while the sender runs on -- is run in the
simulator and over loopback multicast, and the sender must get the same leave
report from the receiver: one LEAVING report, the receiver's last, naming it.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from p4mcc.hosts import registry, wire
from p4mcc.hosts.core import Endpoint, node_id
from p4mcc.hosts.driver import UdpDriver
from p4mcc.hosts.wire import TfmccReport, TfmccReportFlags
from p4mcc.netsim.run import build_run
from p4mcc.netsim.switches import model_choice
from p4mcc.scenario.model import scenario_from_dict

from fakes import LO, free_port

PARAMS = {"packet_size": 200, "initial_rate_bps": 32_000}
LEAVE_AT, END = 1.5, 2.5


def _record_reports(ep: Endpoint) -> list[TfmccReport]:
    """Wrap ``ep.receive_datagram`` so every TFMCC report it gets is kept."""
    got: list[TfmccReport] = []
    inner = ep.receive_datagram

    def receive(data: bytes, src: Any, now: float) -> None:
        try:
            msg = wire.decode(data)
        except wire.WireError:
            msg = None
        if isinstance(msg, TfmccReport):
            got.append(msg)
        inner(data, src, now)

    ep.receive_datagram = receive  # type: ignore[method-assign]
    return got


def _leave_report(reports: list[TfmccReport], rcvr: int) -> tuple[int, int, bool, int]:
    """(LEAVING reports, reports after the first one, in session 1?, its flags) from ``rcvr``."""
    mine = [r for r in reports if r.rcvr_id == rcvr]
    leaving = [i for i, r in enumerate(mine) if r.rflags & TfmccReportFlags.LEAVING]
    assert leaving, f"no LEAVING report among {len(mine)} reports"
    first = mine[leaving[0]]
    return len(leaving), len(mine) - 1 - leaving[0], first.session_id == 1, first.rflags


def _simulated() -> tuple[tuple[int, int, bool, int], list[TfmccReport]]:
    sc = scenario_from_dict({
        "name": "leave-parity", "duration": END, "seed": 1,
        "topology": {"hosts": {"snd": {"ip": "10.9.0.1/24"}, "r1": {"ip": "10.9.1.1/24"}},
                     "switches": {"s1": {}},
                     "links": [["snd", "s1"], ["r1", "s1"]]},
        "sessions": [{"name": "tf", "protocol": "tfmcc", "sender": "snd", "receivers": ["r1"],
                      "group": "239.9.9.1", "port": 5900, "session_id": 1, "params": PARAMS,
                      "leave_at": {"r1": LEAVE_AT}}],
    })
    run = build_run(sc, switch=model_choice())
    reports = _record_reports(run.agents["tf/snd"])
    run.sim.run(END)
    return _leave_report(reports, node_id(run.net.hosts["r1"].ip)), reports


def _over_udp() -> tuple[tuple[int, int, bool, int], list[TfmccReport]]:
    rng = random.Random()
    group = f"239.{rng.randint(100, 200)}.{rng.randint(0, 255)}.{rng.choice([1, 65, 129])}"
    proto = registry.get("tfmcc")
    cfg = registry.SessionConfig(1, group, free_port(), LO, LO, proto.parse_params(PARAMS))
    snd, rcv = proto.sender(cfg), proto.receiver(cfg)
    reports = _record_reports(snd)

    async def main() -> None:
        sender = UdpDriver(snd, cfg, role="send")
        receiver = UdpDriver(rcv, cfg, role="recv")
        await asyncio.gather(sender.run(END), receiver.run(LEAVE_AT))

    asyncio.run(main())
    return _leave_report(reports, node_id(LO)), reports


def test_leaving_receiver_sends_the_same_leave_report_in_simulation_and_over_udp() -> None:
    sim, _ = _simulated()
    udp, _ = _over_udp()
    # One LEAVING report, the receiver's last, in the session, with the same
    # flags (still in slowstart: the session is young): in both.
    assert sim == udp
    assert sim[:3] == (1, 0, True) and sim[3] & TfmccReportFlags.LEAVING
