"""Link emulation components driven by a fake clock."""

from __future__ import annotations

import math
import random

import pytest

from p4mcc.p4switch.linkemu import (
    Link,
    LinkConfig,
    LinkConfigError,
    PortConfig,
    ShapedQueue,
    Wire,
    load_port_config,
    parse_rate,
    parse_time,
)


def drain_times(q: ShapedQueue, until: float, step: float = 1e-4) -> list[tuple[object, float]]:
    """Poll the queue the way the scheduler does, recording departure instants."""
    out = []
    t = 0.0
    while t <= until:
        for item, meta in q.dequeue(t):
            out.append((item, (meta.enq_timestamp_us + meta.deq_timedelta_us) / 1e6))
        nxt = q.next_departure(t)
        if nxt is None:
            break
        t = max(t + 1e-9, nxt)
    return out


def test_token_bucket_spaces_back_to_back_packets_at_the_rate():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=1e6, queue_packets=None))
    for i in range(50):
        assert q.enqueue(i, 1000, 0.0)
    deps = drain_times(q, 10.0)
    assert [i for i, _ in deps] == list(range(50))
    # First frame leaves at once (full bucket); each next one 8 ms later.
    assert deps[0][1] == pytest.approx(0.0, abs=1e-6)
    gaps = [b - a for (_, a), (_, b) in zip(deps, deps[1:])]
    assert all(g == pytest.approx(0.008, abs=2e-6) for g in gaps[1:])
    # Long-run rate: 49 frames after the first in 49 * 8 ms, minus the burst credit.
    assert deps[-1][1] == pytest.approx(49 * 0.008 - (1514 - 1000) * 8 / 1e6, abs=1e-5)


def test_unshaped_queue_releases_everything_now():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig())
    for i in range(5):
        q.enqueue(i, 100, 1.0)
    out = q.dequeue(1.0)
    assert [i for i, _ in out] == [0, 1, 2, 3, 4]
    assert q.next_departure(1.0) is None


def test_drop_tail_packet_limit_and_bmv2_queue_depths():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=8e3, queue_packets=3))  # 1 B/ms
    results = [q.enqueue(i, 1500, 0.0) for i in range(5)]
    assert results == [True, True, True, False, False]
    assert q.stats.dropped_packets_limit == 2
    first = q.dequeue(0.0)
    assert len(first) == 1
    _, meta = first[0]
    # BMv2: enq_qdepth = packets already queued at enqueue; deq_qdepth = left behind.
    assert (meta.enq_qdepth, meta.deq_qdepth, meta.deq_timedelta_us) == (0, 2, 0)
    nxt = q.next_departure(0.0)
    assert nxt == pytest.approx((1500 - 14) * 8 / 8e3)
    (_, m2), = q.dequeue(nxt)
    assert (m2.enq_qdepth, m2.deq_qdepth) == (1, 1)
    assert m2.deq_timedelta_us == round(nxt * 1e6)


def test_drop_tail_byte_limit():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=1e3, queue_packets=None, queue_bytes=2500))
    assert q.enqueue(1, 1000, 0.0) and q.enqueue(2, 1000, 0.0)
    assert not q.enqueue(3, 1000, 0.0)  # 3000 > 2500
    assert q.enqueue(4, 500, 0.0)  # exactly 2500 fits
    assert q.stats.dropped_bytes_limit == 1 and q.bytes_queued == 2500


def test_enqueue_timestamp_is_microseconds_since_epoch():
    q: ShapedQueue[str] = ShapedQueue(LinkConfig(), epoch=100.0)
    q.enqueue("a", 60, 100.25)
    (_, meta), = q.dequeue(100.25)
    assert meta.enq_timestamp_us == 250_000


def test_jumbo_frame_passes_at_average_rate():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=8e6, queue_packets=None))  # 1 B/us
    for i in range(3):
        q.enqueue(i, 9000, 0.0)
    deps = drain_times(q, 1.0, step=1e-5)
    assert [t for _, t in deps] == pytest.approx([0.0, 0.009, 0.018], abs=2e-6)


def test_wire_delays_every_packet_by_the_propagation_delay():
    w: Wire[int] = Wire(LinkConfig(delay_s=0.005))
    w.send(1, 0.0)
    w.send(2, 0.001)
    assert w.receive(0.0049) == []
    assert w.next_arrival() == pytest.approx(0.005)
    assert w.receive(0.005) == [1]
    assert w.receive(0.0061) == [2]


def test_wire_loss_rate_within_binomial_bounds():
    p, n = 0.1, 20000
    w: Wire[int] = Wire(LinkConfig(loss=p), random.Random(7))
    for i in range(n):
        w.send(i, 0.0)
    sd = math.sqrt(n * p * (1 - p))
    assert abs(w.lost - n * p) < 4 * sd
    assert len(w.receive(0.0)) == n - w.lost


def test_link_combines_queue_rate_and_delay():
    link: Link[int] = Link(LinkConfig(rate_bps=1e6, delay_s=0.010, queue_packets=None))
    for i in range(3):
        link.offer(i, 1000, 0.0)
    arrivals = []
    t = 0.0
    while (nxt := link.next_event(t)) is not None:
        t = max(t, nxt)
        arrivals += [(i, t) for i in link.advance(t)]
    times = [a for _, a in arrivals]
    assert [i for i, _ in arrivals] == [0, 1, 2]
    assert times[0] == pytest.approx(0.010, abs=1e-6)
    assert times[1] - times[0] == pytest.approx(0.008 - 514 * 8 / 1e6, abs=1e-6)
    assert times[2] - times[1] == pytest.approx(0.008, abs=1e-6)


@pytest.mark.parametrize(
    "text,value", [("10Mbps", 1e7), ("1.5m", 1.5e6), ("2e6", 2e6), ("100kbit", 1e5), ("1G", 1e9)]
)
def test_parse_rate(text, value):
    assert parse_rate(text) == pytest.approx(value)


def test_parse_time_and_errors():
    assert parse_time("5ms") == pytest.approx(0.005)
    assert parse_time("200us") == pytest.approx(0.0002)
    with pytest.raises(LinkConfigError, match="unknown delay unit"):
        parse_time("5 fortnights")
    for endless in (float("inf"), float("nan"), "1e400", 10 ** 400):
        with pytest.raises(ValueError, match="is not a finite number"):
            parse_time(endless)


def test_invalid_config_values_are_refused():
    with pytest.raises(LinkConfigError, match="loss"):
        LinkConfig(loss=1.5)
    with pytest.raises(LinkConfigError, match="rate"):
        LinkConfig(rate_bps=0)
    with pytest.raises(LinkConfigError, match="queue"):
        LinkConfig(queue_packets=0)


def test_port_config_document_and_flags():
    cfg = load_port_config(
        {
            "default": {"egress": {"queue": 32}},
            "ports": {1: {"egress": {"rate": "10Mbps", "delay": "5ms"}, "ingress": {"loss": "1%"}}, "2": {"rate": "1Mbps"}},
        }
    )
    p1 = cfg.for_port(1)
    assert p1.egress.rate_bps == 1e7 and p1.egress.delay_s == pytest.approx(0.005)
    assert p1.egress.queue_packets == 32  # inherited from the default
    assert p1.ingress.loss == pytest.approx(0.01)
    assert cfg.for_port(2).egress.rate_bps == 1e6
    assert cfg.for_port(9).egress.queue_packets == 32 and cfg.for_port(9).egress.rate_bps is None
    cfg = cfg.with_flag("3:both:delay=2ms,queue_bytes=10000")
    assert cfg.for_port(3).egress.delay_s == pytest.approx(0.002) and cfg.for_port(3).ingress.queue_bytes == 10000
    cfg = PortConfig().with_flag("4:loss=0.5")
    assert cfg.for_port(4).egress.loss == 0.5


@pytest.mark.parametrize(
    "doc,msg",
    [
        ({"ports": {1: {"speed": "1M"}}}, "unknown link parameter 'speed'"),
        ({"ports": {"x": {}}}, "not an integer"),
        ({"bogus": 1}, "unknown top-level"),
        ({"ports": {1: {"egress": {}, "rate": 1}}}, "mix of direction keys"),
        ({"ports": {1: {"queue": "lots"}}}, "queue must be an integer"),
    ],
)
def test_port_config_errors_name_the_problem(doc, msg):
    with pytest.raises(LinkConfigError, match=msg):
        load_port_config(doc)


def test_port_flag_errors():
    with pytest.raises(LinkConfigError, match="direction"):
        PortConfig().with_flag("1:sideways:rate=1M")
    with pytest.raises(LinkConfigError, match="key=value"):
        PortConfig().with_flag("1:egress:rate")


def test_predicted_wait_equals_the_actual_departure():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=1e6, queue_packets=None))
    for i in range(5):
        q.enqueue(i, 1000, 0.0)
    depth, backlog_wait = q.predict(0.001)
    _, own_wait = q.predict(0.001, size=1000)
    assert depth == 5
    q.enqueue(99, 1000, 0.001)
    deps = dict(drain_times(q, 10.0))
    # The backlog has gone at backlog_wait; the new packet leaves once its own tokens accrued.
    assert deps[4] == pytest.approx(0.001 + backlog_wait, abs=1e-6)
    assert deps[99] == pytest.approx(0.001 + own_wait, abs=1e-6)
    assert deps[99] == pytest.approx(deps[4] + 0.008, abs=1e-6)


def test_predicted_wait_of_an_idle_queue_is_zero_and_after_a_burst_is_the_token_wait():
    q: ShapedQueue[int] = ShapedQueue(LinkConfig(rate_bps=8e6, queue_packets=None))  # 1 B/us
    assert q.predict(0.0, size=1000) == (0, 0.0)
    q.enqueue(1, 1000, 0.0)
    (_, meta), = q.dequeue(0.0)  # leaves at once, bucket down to 514 B
    assert q.predict(0.0, size=1000)[1] == pytest.approx(486e-6)
    assert q.predict(0.001, size=1000)[1] == 0.0
