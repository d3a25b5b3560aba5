"""A running link emulation takes new values (p4switch/linkemu.py, p4switch/linkctl.py).

Rates, delays and queues are changed on a fake clock, so every departure
and arrival instant is exact; the control socket is a real Unix socket.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from p4mcc.p4switch.linkctl import LinkControlError, LinkControlServer, parse_request, request
from p4mcc.p4switch.linkemu import (Link, LinkConfig, LinkConfigError, PortConfig, ShapedQueue, Wire,
                                    change_port_links)
from test_dataplane import frame, make, run_due


def departures(q: ShapedQueue[int], until: float, step: float = 1e-4) -> list[float]:
    """Each packet's departure instant (dequeued on a fine clock up to ``until``)."""
    out, t = [], q.epoch
    while t <= until:
        for _item, m in q.dequeue(t):
            out.append(round(q.epoch + (m.enq_timestamp_us + m.deq_timedelta_us) / 1e6, 6))
        t += step
    return out


def test_a_faster_rate_drains_the_queued_packets_at_the_new_rate() -> None:
    # 1000-byte packets: 8 ms each at 1 Mbit/s, 2 ms at 4 Mbit/s; a one-frame bucket
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=1e6, burst_bytes=1000, queue_packets=None))
    for i in range(4):
        q.enqueue(i, 1000, 0.0)
    assert departures(q, 0.0085) == [0.0, 0.008]
    q.reconfigure(LinkConfig(rate_bps=4e6, burst_bytes=1000, queue_packets=None), 0.010)
    # the bucket holds 2 ms of the old rate's bytes (250 B) at 10 ms; the rest at 4 Mbit/s
    assert departures(q, 0.03)[-2:] == [0.0115, 0.0135]


def test_a_smaller_queue_refuses_arrivals_until_it_is_below_the_limit() -> None:
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=1e6, queue_packets=10))
    for i in range(5):
        assert q.enqueue(i, 1000, 0.0)
    q.reconfigure(LinkConfig(rate_bps=1e6, queue_packets=3), 0.0)
    assert len(q) == 5  # nothing queued is thrown away
    assert not q.enqueue(5, 1000, 0.0)
    assert q.stats.dropped_packets_limit == 1


def test_a_longer_delay_applies_to_packets_sent_after_the_change() -> None:
    w: Wire[str] = Wire(LinkConfig(delay_s=0.010))
    w.send("a", 0.0)
    w.reconfigure(LinkConfig(delay_s=0.040))
    w.send("b", 0.001)
    assert w.receive_timed(1.0) == [("a", 0.010), ("b", 0.041)]


def test_a_shorter_delay_never_lets_a_packet_overtake_the_one_ahead() -> None:
    w: Wire[str] = Wire(LinkConfig(delay_s=0.040))
    w.send("a", 0.0)
    w.reconfigure(LinkConfig(delay_s=0.005))
    w.send("b", 0.001)
    w.send("c", 0.050)
    assert w.receive_timed(1.0) == [("a", 0.040), ("b", 0.040), ("c", 0.055)]


def test_the_switch_gives_a_transparent_port_a_link_and_takes_it_back() -> None:
    dp, ports, clock = make(PortConfig())
    dp.change_link(2, "egress", {"delay": "20ms"}, now=clock.t)
    dp.receive(1, frame(1), clock.t)
    run_due(dp, clock.t + 0.0199)
    assert ports[2].sent == []
    run_due(dp, clock.t + 0.020)
    assert len(ports[2].sent) == 1
    dp.change_link(2, "egress", None, now=clock.t + 0.02)  # back to its start: no delay
    dp.receive(1, frame(2), clock.t + 0.03)
    run_due(dp, clock.t + 0.03)
    assert len(ports[2].sent) == 2


def test_the_switch_changes_a_shaped_port_and_keeps_what_the_change_leaves_out() -> None:
    dp, ports, clock = make(PortConfig().with_flag("2:egress:rate=1Mbps,delay=5ms,queue=7"))
    dp.change_link(2, "egress", {"delay": "40ms", "loss": "0"}, now=clock.t)
    cfg = dp._egress[2].queue.config
    assert (cfg.rate_bps, cfg.delay_s, cfg.queue_packets) == (1e6, 0.040, 7)
    with pytest.raises(KeyError):
        dp.change_link(9, "egress", {"delay": "1ms"})
    with pytest.raises(LinkConfigError, match="unknown link parameter 'jitter'"):
        dp.change_link(2, "egress", {"jitter": "1ms"})


def test_both_directions_change_the_link_there_and_build_the_missing_one() -> None:
    # What the switch and the link process beside BMv2 both run (Dataplane / LinkRelay.change_link).
    start = PortConfig().with_flag("2:egress:rate=1Mbps,delay=5ms").for_port(2)
    egress = Link(start.egress)
    added, woken = [], []
    change_port_links({"egress": egress, "ingress": None}, start, "both", {"delay": "30ms"}, 1.5,
                      add=lambda what, cfg: added.append((what, cfg)), wake=lambda what, t: woken.append((what, t)))
    assert (egress.config.rate_bps, egress.config.delay_s) == (1e6, 0.030)
    assert added == [("ingress", LinkConfig(delay_s=0.030, queue_packets=None))]
    assert woken == [("egress", 1.5), ("ingress", 1.5)]
    change_port_links({"egress": egress}, start, "egress", None, 2.0, add=added.append, wake=lambda *_: None)
    assert egress.config == start.egress and len(added) == 1
    with pytest.raises(LinkConfigError, match="direction must be egress, ingress or both, got 'up'"):
        change_port_links({}, start, "up", None, 2.0, add=added.append, wake=lambda *_: None)


@pytest.mark.parametrize("line, parsed", [
    ("2:egress:delay=40ms,loss=1%", (2, "egress", {"delay": "40ms", "loss": "1%"})),
    ("3:both:rate=1Mbps", (3, "both", {"rate": "1Mbps"})),
    ("2:ingress:initial", (2, "ingress", None)),
    ("4:initial", (4, "egress", None)),
])
def test_requests_parse_as_link_flags(line: str, parsed: tuple) -> None:
    assert parse_request(line) == parsed


@pytest.mark.parametrize("line", ["2:egress:", "x:egress:delay=1ms", "2:sideways:delay=1ms", "2:egress:delay"])
def test_bad_requests_are_refused(line: str) -> None:
    with pytest.raises(LinkConfigError):
        parse_request(line)


def test_the_control_socket_applies_a_change_and_answers_why_it_refuses_one(tmp_path: Path) -> None:
    seen: list[tuple] = []

    def apply(port: int, direction: str, settings: dict[str, str] | None) -> None:
        if port != 2:
            raise KeyError(port)
        if settings and "jitter" in settings:
            raise LinkConfigError("unknown link parameter 'jitter'")
        seen.append((port, direction, settings))

    path = tmp_path / "s1.links"
    server = LinkControlServer(path, apply)
    server.start()
    try:
        request(path, "2:egress:delay=40ms")
        request(path, "2:egress:initial")
        with pytest.raises(LinkControlError, match="no port 7"):
            request(path, "7:egress:delay=1ms")
        with pytest.raises(LinkControlError, match="unknown link parameter 'jitter'"):
            request(path, "2:egress:jitter=1ms")
        with pytest.raises(OSError, match="exists"):
            LinkControlServer(path, apply)
    finally:
        server.stop()
    assert seen == [(2, "egress", {"delay": "40ms"}), (2, "egress", None)]
    assert (server.changes, server.refused) == (2, 2)
    assert not path.exists()  # the server removes only its own socket file


def test_a_dead_servers_socket_is_taken_over_and_other_files_are_not(tmp_path: Path) -> None:
    path = tmp_path / "s1.links"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # bound, never listening: what a killed server leaves
    server = LinkControlServer(path, lambda *_: None)
    server.start()
    try:
        request(path, "1:egress:delay=1ms")
    finally:
        server.stop()
    plain = tmp_path / "notes.txt"
    plain.write_text("keep me")
    with pytest.raises(OSError, match="exists"):
        LinkControlServer(plain, lambda *_: None)
    assert plain.read_text() == "keep me"


def test_a_client_with_no_server_gets_one_line(tmp_path: Path) -> None:
    with pytest.raises(LinkControlError, match=r"link control .*nothing\.sock: "):
        request(tmp_path / "nothing.sock", "2:egress:delay=1ms")


def test_a_silent_peer_does_not_hang_the_client(tmp_path: Path) -> None:
    path = tmp_path / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen(1)
        with pytest.raises(LinkControlError):
            request(path, "2:egress:delay=1ms", timeout=0.2)
