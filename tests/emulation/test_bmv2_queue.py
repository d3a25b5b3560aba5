"""BMv2's egress queue per shaped port: the settings, and the Thrift bytes that set them.

No root and no BMv2: the settings are pure, and the Thrift client is driven
against a socket that answers as simple_switch's runtime service does
(strict binary protocol, multiplexed service name ``simple_switch``).
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from p4mcc.emulation import bmv2_queue as bq
from p4mcc.emulation.plan import make_plan
from p4mcc.emulation.shaping import directions, shapings
from p4mcc.scenario.model import scenario_from_dict


def plan(tmp_path, assistance: object = "stamp"):
    sc = scenario_from_dict({
        "name": "q", "duration": 5,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}},
            "switches": {"s1": {}, "s2": {}},
            "links": [{"a": "s1-p1", "b": "s2-p1", "rate": "10Mbps", "delay": "20ms", "queue": 50},
                      {"a": "h1", "b": "s1-p2", "rate": "100Mbps", "delay": "1ms", "queue": {"bytes": 30000}},
                      {"a": "h2", "b": "s2-p2", "rate": "1Gbps", "delay": "1ms"}],
        },
        "sessions": [{"name": "t", "protocol": "tfmcc", "sender": "h1", "receivers": ["h2"],
                      "group": "239.1.1.1", "port": 5001, "assistance": assistance}],
    }, known_protocols=None)
    return make_plan(sc, tmp_path)


def test_without_a_stamped_session_the_standing_queue_stays_in_the_byte_accurate_shaper(tmp_path) -> None:
    # BMv2 paces its queue in packets: frames smaller than the largest would get less
    # than their share, so only a session that reads the stamp moves the queue there
    rows = shapings(plan(tmp_path, assistance=True), "bmv2", {"htb", "pfifo", "bfifo", "netem"})
    assert rows and all(r.bmv2_queue is None for r in rows)


def test_queue_rate_never_lets_a_full_frame_out_faster_than_the_link() -> None:
    q = bq.queue_setting("s1", 1, 10e6, 50, None)
    assert (q.depth_packets, q.rate_pps) == (50, 825)  # 10e6 / (8 * 1514) = 825.6, rounded down
    assert q.rate_pps * 8 * bq.FRAME_BYTES <= 10e6
    assert bq.queue_setting("s1", 1, 4e6, None, None).rate_pps == 330
    assert bq.queue_setting("s1", 1, 4e6, None, None).depth_packets == bq.UNBOUNDED_DEPTH
    assert bq.queue_setting("s1", 1, 4e6, None, 30000).depth_packets == 19  # full frames in 30000 B
    assert bq.queue_setting("s1", 1, 4e6, 10, 30000).depth_packets == 10  # the tighter limit
    assert bq.queue_setting("s1", 1, 1000, 5, None).rate_pps == 1  # never zero: BMv2 would stop the port


def test_only_rate_shaped_egress_directions_get_a_bmv2_queue(tmp_path) -> None:
    p = plan(tmp_path)
    got = bq.plan_queues(directions(p))
    assert set(got) == {("s1", 1), ("s2", 1), ("s1", 2)}  # s2 port 2 is 1 Gb/s: unshaped rate
    assert got[("s1", 2)].depth_packets == 30000 // 1514
    rows = shapings(p, "bmv2", {"htb", "pfifo", "bfifo", "netem"})
    by = {(r.link, r.sender): r.bmv2_queue for r in rows}
    assert by[("s1-p1--s2-p1", "s1")] == {"switch": "s1", "port": 1, "depth_packets": 50,
                                          "rate_pps": 825, "frame_bytes": 1514}
    assert by[("h1--s1-p2", "h1")] is None  # ingress: shaped before BMv2
    assert all(r.bmv2_queue is None for r in shapings(p, "builtin"))


def test_a_switch_without_port_set_groups_keeps_its_standing_queue_in_the_shaper(tmp_path) -> None:
    # s1 with nine ports replicates multicast to each group's ports and prunes in
    # egress, after BMv2's queue: that queue would fill with pruned copies
    hosts = {f"h{i}": {"ip": f"10.0.0.{i}/24"} for i in range(1, 10)}
    links = [{"a": "s1-p1", "b": "s2-p1", "rate": "10Mbps", "delay": "20ms", "queue": 50}]
    links += [{"a": f"h{i}", "b": f"s1-p{i}"} for i in range(2, 10)] + [{"a": "h1", "b": "s2-p2"}]
    sc = scenario_from_dict({"name": "q", "duration": 5, "topology": {
        "hosts": hosts, "switches": {"s1": {}, "s2": {}}, "links": links},
        "sessions": [{"name": "t", "protocol": "tfmcc", "sender": "h2", "receivers": ["h1"],
                      "group": "239.1.1.1", "port": 5001, "assistance": "stamp"}]}, known_protocols=None)
    p = make_plan(sc, tmp_path)
    assert set(bq.plan_queues(directions(p))) == {("s1", 1), ("s2", 1)}
    rows = {(r.link, r.sender): r.bmv2_queue for r in shapings(p, "bmv2", {"htb", "pfifo", "bfifo", "netem"})}
    assert rows[("s1-p1--s2-p1", "s1")] is None
    assert rows[("s1-p1--s2-p1", "s2")] is not None


def test_encode_call_is_a_strict_binary_multiplexed_call() -> None:
    data = bq.encode_call("set_egress_queue_rate", [(8, 3), (10, 825)], seqid=7)
    name = b"simple_switch:set_egress_queue_rate"
    assert data == (struct.pack("!II", 0x80010001, len(name)) + name + struct.pack("!i", 7)
                    + struct.pack("!bhi", 8, 1, 3) + struct.pack("!bhq", 10, 2, 825) + b"\x00")


def serve_once(reply: bytes) -> tuple[int, list[bytes]]:
    """A listening socket that reads one request and answers ``reply``; (port, requests)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got: list[bytes] = []

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            got.append(conn.recv(4096))
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1], got


def reply(mtype: int, body: bytes) -> bytes:
    name = b"simple_switch:set_egress_queue_depth"
    return struct.pack("!II", 0x80010000 | mtype, len(name)) + name + struct.pack("!i", 1) + body


def test_call_returns_the_result_and_names_a_refusal() -> None:
    port, got = serve_once(reply(2, struct.pack("!bhi", 8, 0, 0) + b"\x00"))
    assert bq.call("127.0.0.1", port, "set_egress_queue_depth", [(8, 1), (8, 50)]) == 0
    assert got[0] == bq.encode_call("set_egress_queue_depth", [(8, 1), (8, 50)])
    msg = b"Invalid method name"
    port, _ = serve_once(reply(3, struct.pack("!bhI", 11, 1, len(msg)) + msg + struct.pack("!bhi", 8, 2, 1) + b"\x00"))
    with pytest.raises(bq.Bmv2QueueError, match="set_egress_queue_depth: Invalid method name"):
        bq.call("127.0.0.1", port, "set_egress_queue_depth", [])


def test_apply_names_the_switch_and_port_when_nothing_answers() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(bq.Bmv2QueueError, match=r"s1 port 1: set_egress_queue_depth over Thrift 127.0.0.1:\d+"):
        bq.apply(bq.QueueSetting("s1", 1, 50, 825), "127.0.0.1", port)
