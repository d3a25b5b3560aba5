"""A late start the receiver refused: the sender serves the child from its report.

A receiver behind a long branch answers a roll call with cum_ack 0 before the
data reaches it; the sender starts it at its oldest buffered packet and tells
it so, but data arrives first, and a receiver that has delivered a packet
keeps its own stream (``MtcpReceiver._on_join``).  Its NACKs then name holes
below the start; the sender must repair them or the child waits for good."""

from __future__ import annotations

from mtcp_util import PaperSender, composed
from win_util import SENDER, cfg, feed, out

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import NO_CWND, MtcpParams
from p4mcc.hosts.wire import MtcpAck, MtcpData, MtcpNack

A = "10.0.1.1"


def _sender() -> object:
    s = composed(PaperSender, initial_window=False)(cfg(MtcpParams(tree=f"{A}>{SENDER}")))
    s.start(0.0)
    feed(s, MtcpAck(session_id=9, cum_ack=0, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=256, node_id=node_id(A)),
         0.0, src=A)
    for seq in range(1, 7):  # A acknowledges 1..6: released
        feed(s, MtcpAck(session_id=9, cum_ack=seq, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=256,
                        node_id=node_id(A)), 0.1 * seq, src=A)
    out(s)
    return s


def test_a_refused_late_start_is_undone_and_the_holes_below_it_repaired():
    s = _sender()
    low = min(s.buf)
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(A), missing=()), 1.0, src=A)
    assert s.late_joins == 1 and s.children[node_id(A)].sb.cum_ack == low - 1
    out(s)
    # A had delivered packet 1 when the start reached it: it keeps its stream and NACKs 2..4.
    feed(s, MtcpNack(session_id=9, cum_ack=1, node_id=node_id(A), missing=(2, 3, 4)), 1.2, src=A)
    repairs = sorted(m.seq for _d, m in out(s) if isinstance(m, MtcpData))
    assert s.refused_joins == 1 and s.children[node_id(A)].sb.cum_ack == 1
    assert repairs and repairs[0] == 2  # served from the stream, lowest first (the repair window allows)


def test_a_report_at_or_past_the_start_is_no_refusal():
    s = _sender()
    low = min(s.buf)
    feed(s, MtcpNack(session_id=9, cum_ack=0, node_id=node_id(A), missing=()), 1.0, src=A)
    out(s)
    feed(s, MtcpNack(session_id=9, cum_ack=low - 1, node_id=node_id(A), missing=(low,)), 1.2, src=A)
    assert s.refused_joins == 0 and s.children[node_id(A)].sb.cum_ack == low - 1
