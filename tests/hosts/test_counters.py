"""Event counters declared in one place (hosts.core.Counters)."""

from __future__ import annotations

from p4mcc.hosts.core import Counters, Endpoint
from p4mcc.hosts.reliable import ReceiveBuffer


class _Base(Counters):
    COUNTERS = ("sent", "lost")


class _Child(_Base):
    COUNTERS = ("lost", "repaired")

    def __init__(self) -> None:
        self.zero_counters()


def test_counters_start_at_zero_and_add_to_their_bases() -> None:
    c = _Child()
    assert _Child.counter_names() == ("sent", "lost", "repaired")
    c.lost += 2
    c.repaired += 1
    assert c.counts() == {"sent": 0, "lost": 2, "repaired": 1}


def test_every_endpoint_counts_malformed_and_ignored_datagrams() -> None:
    assert Endpoint.counter_names() == ("malformed", "ignored")


def test_a_receive_buffer_counts_deliveries_duplicates_and_overflow() -> None:
    b = ReceiveBuffer(capacity=1)
    b.add(1, 10)
    b.add(1, 10)
    b.add(3, 10)
    b.add(4, 10)
    assert b.counts() == {"delivered_packets": 1, "delivered_bytes": 10, "duplicates": 1, "overflow": 1}
