"""A restarted, switch-assisted MTCP sender that began below its receivers moves on to its fold.

A member that joined while the sender was down and has not reported holds
its switch's fold at 0 (``aggregation.p4``), so the restarted sender's first
fold carries nothing and it starts the stream afresh.  Once that member
reports, the fold is the lowest point of every member below: past what this
sender sent.  ``resume_stream`` moves the stream on to after it; without the
move the sender re-sends, one refresh-clocked window at a time, packets
every receiver already holds, and no receiver gets a new byte until the
stream climbs back to where it was (Mininet: 710-805 packets delivered in
22 s, against 2,090-3,212 once moved)."""

from __future__ import annotations

from mtcp_util import PaperSender, composed
from win_util import cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import NO_CWND, MtcpParams
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpWindowUpdate

R1 = "10.0.1.1"
HELD = 790  # where the receivers stood when the sender's host went down


def _fold(cum: int, cls=MtcpWindowUpdate):
    return cls(session_id=9, flags=Flags.AGGREGATED, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0,
               adv_wnd=4096, node_id=node_id(R1))


def _new_data(msgs) -> list[int]:
    return [m.seq for _d, m in msgs if isinstance(m, MtcpData) and not m.flags & Flags.RETRANSMIT]


def _afresh(**switches: bool):
    """An assisted sender whose first fold carried nothing: it starts at packet 1."""
    s = composed(PaperSender, "default", **switches)(cfg(MtcpParams(assisted=True)))
    s.start(0.0)
    feed(s, _fold(0), 0.05, src=R1)
    run_timers(s, 2.0)
    sent = _new_data(out(s))
    assert sent and sent[0] == 1
    return s, sent


def test_a_fold_past_the_stream_moves_it_on_to_after_the_fold():
    s, sent = _afresh()
    feed(s, _fold(HELD), 2.1, src=R1)
    assert s.wound_forward == 1 and s.resumed_from == HELD + 1 and s.forged == 0
    after = _new_data(out(s))
    assert after and after[0] == HELD + 1 and all(q > HELD for q in after)
    # the fold then acknowledges the new stream as usual: nothing moves again
    feed(s, _fold(after[-1], MtcpAck), 2.2, src=R1)
    assert s.wound_forward == 1 and _new_data(out(s))[0] == after[-1] + 1


def test_a_fold_more_than_a_receive_buffer_ahead_is_a_restart_not_a_lie():
    s, _sent = _afresh()
    far = 100 * s.p.rcv_buffer
    feed(s, _fold(far), 2.1, src=R1)
    assert s.forged == 0 and s.resumed_from == far + 1
    assert _new_data(out(s))[0] == far + 1


def test_one_receivers_claim_past_the_stream_moves_nothing():
    """Only a switch's fold speaks for every member; one unfolded report past the buffer is dropped."""
    s, sent = _afresh()
    feed(s, MtcpAck(session_id=9, cum_ack=100 * s.p.rcv_buffer, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=4096,
                    node_id=node_id(R1)), 2.1, src=R1)
    assert s.wound_forward == 0 and s.forged == 1 and s.resumed_from == 0


def test_without_the_rule_the_sender_resends_what_every_receiver_holds():
    s, sent = _afresh(resume_stream=False)
    feed(s, _fold(HELD), 2.1, src=R1)
    after = _new_data(out(s))
    assert after and after[0] == sent[-1] + 1 and max(after) < HELD
