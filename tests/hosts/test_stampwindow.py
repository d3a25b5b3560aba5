"""The stamp window the stamped rules read (hosts/stampwindow.py)."""

from __future__ import annotations

from p4mcc.hosts.stampwindow import StampWindow
from p4mcc.hosts.wire import Stamp


def test_folds_the_worst_queue_and_the_tightest_spare() -> None:
    w = StampWindow()
    for q, s in ((1, 9), (5, 7), (3, 8)):
        w.add(Stamp.pack(q, s))
    assert w.stamped and (w.q_max, w.s_min) == (5, 7)
    assert w.queue_s() == Stamp.queue_delay_s(Stamp.pack(5, 0))  # 4.096 ms
    assert w.spare_bps() == 40_000 * 2**7
    assert w.byte() == Stamp.pack(5, 7)


def test_one_unstamped_packet_makes_the_window_say_nothing() -> None:
    w = StampWindow()
    w.add(Stamp.pack(1, 12))
    w.add(Stamp.NOT_STAMPED)
    assert not w.stamped
    assert w.queue_s() is None and w.spare_bps() is None and w.byte() == 0


def test_an_empty_window_says_nothing_and_reset_empties() -> None:
    w = StampWindow()
    assert not w.stamped and w.byte() == 0
    w.add(Stamp.pack(2, 3))
    w.reset()
    assert not w.stamped and (w.q_max, w.s_min) == (0, 15)


def test_take_gives_the_byte_once_and_starts_a_fresh_window() -> None:
    from p4mcc.hosts.stampwindow import StampWindow
    from p4mcc.hosts.wire import Stamp

    w = StampWindow()
    w.add(Stamp.pack(5, 3))
    w.add(Stamp.pack(2, 9))
    assert w.take() == Stamp.pack(5, 3)
    assert (w.packets, w.take()) == (0, Stamp.NOT_STAMPED)  # an empty window says nothing


def test_feedback_sent_with_the_echoed_stamp_carries_the_windows_share() -> None:
    from p4mcc.hosts.core import Endpoint
    from p4mcc.hosts.stampwindow import StampEcho
    from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack, Share, decode

    class Rx(StampEcho, Endpoint):
        def on_datagram(self, data: bytes, src: object, now: float) -> None:
            self.decode_session(data, 1)

    rx = Rx()
    for share in (120, 100):
        rx.receive_datagram(MtcpData(session_id=1, stamp=Stamp.pack(3, 2), share=share).encode(), ("s", 1), 0.1)
    stamp = rx._echo_stamp()
    for _ in range(2):  # two ACKs of one flush
        rx.send(("s", 1), MtcpAck(session_id=1, stamp=stamp).encode())
    rx.send(("s", 1), MtcpNack(session_id=1, stamp=0).encode())  # no echo: no share
    sent = [decode(d.data) for d in rx.datagrams_to_send()]
    assert [m.share for m in sent] == [100, 100, Share.NONE]
    rx.receive_datagram(MtcpData(session_id=1, stamp=0, share=120).encode(), ("s", 1), 0.2)  # unstamped
    assert rx._echo_stamp() == 0 and rx._share_echo is None
