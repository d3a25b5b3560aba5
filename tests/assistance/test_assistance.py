"""The benefit of switch assistance, end to end through the P4 program.

Whole sessions run in the simulator through P4 switch nodes (``p4src/mcc.p4``
in the interpreter, configured by the controller's desired-state function),
once with the session's assistance on and once off (replication only), on a
4-ary tree: 16 receivers behind 4 leaf switches and a root switch.  What
``docs/p4-program.md`` promises is checked where the sender sees it:

* TFMCC filtering: within a feedback round the sender hears a report that
  is neither the CLR's nor a leaving notice only if it is worse than every
  report of the round it already heard (the root switch forwards nothing
  else); without filtering this does not hold.
* MTCP aggregation: the sender tracks one folded child instead of 16 and
  hears about one summary per ACK round instead of one per receiver.

Two tests pin fixed findings (``docs/assistance.md``): a fold never
passes one receiver's SACK bitmap as everyone's (MTCP under loss never
releases a packet a receiver lacks), and VLMCC's RTT probes (rate 0) pass
the filter without blocking its window.  A third checks that a scenario's
``filter_window_us`` reaches the switches.

``bench/assistance.py`` measures the same at 16-256 receivers
(``docs/assistance.md``).
"""

from __future__ import annotations

import pytest

from assist_lib import Tapped, run_tree
from p4mcc.hosts import wire
from p4mcc.hosts.mtcp import FOLD_ID, RULES
from p4mcc.netsim.switches import choose_switch

F = wire.TfmccReportFlags
RECEIVERS, K = 16, 4
MTCP_ACK_ROUND_S = 0.02  # MtcpParams.ack_delay: a receiver ACKs at most once per 20 ms


@pytest.fixture(scope="module")
def p4():
    return choose_switch("p4")


def not_worse_reports(t: Tapped) -> tuple[int, int]:
    """(reports, reports that should have been filtered) in the sender's arrival order.

    A round runs while consecutive ranked reports carry the same ``fb_round``
    (the switch opens a new one on any other value), for reports with an RTT
    and for those without one apart: each kind is ranked only among itself.
    IS_CLR and LEAVING reports always pass and neither open a round nor
    change its lowest rate (``p4src/include/filtering.p4``).  A round's first
    ranked report is free; after it, a ranked report must be strictly below
    every ranked report of its kind already heard in the round.
    """
    reports = violations = 0
    rounds: dict[bool, tuple[int, int]] = {}   # has an RTT -> (fb_round, lowest rate)
    for _t, m in t.feedback:
        if not isinstance(m, wire.TfmccReport):
            continue
        reports += 1
        if m.rflags & (F.IS_CLR | F.LEAVING):
            continue
        kind = bool(m.rflags & F.HAVE_RTT)
        cur, low = rounds.get(kind, (None, None))
        if m.fb_round != cur:
            rounds[kind] = (m.fb_round, m.rate)
            continue
        if m.rate >= low:
            violations += 1
        rounds[kind] = (cur, min(low, m.rate))
    return reports, violations


def test_tfmcc_sender_hears_only_ever_worse_reports_within_a_round_with_filtering(p4):
    heard_on = heard_off = rounds_on = rounds_off = 0
    for seed in (1, 2, 3):
        on = run_tree(p4, "tfmcc", {}, receivers=RECEIVERS, k=K, assistance=True, duration=20,
                      leaf_loss="tfmcc", seed=seed)
        off = run_tree(p4, "tfmcc", {}, receivers=RECEIVERS, k=K, assistance=False, duration=20,
                       leaf_loss="tfmcc", seed=seed)
        rep_on, bad_on = not_worse_reports(on)
        rep_off, bad_off = not_worse_reports(off)
        assert on.sender.fb_round >= 3 and rep_on > 50  # several rounds of real feedback
        assert bad_on == 0
        assert on.absorbed() > 0 and off.absorbed() == 0
        assert bad_off > 0  # the property is the filter's doing, not TFMCC's own suppression
        for t in (on, off):
            assert min(t.received_bytes()) > 100_000  # every receiver got the stream
        heard_on += rep_on - on.absorbed()
        rounds_on += on.sender.fb_round
        heard_off += rep_off
        rounds_off += off.sender.fb_round
    # What reached the sender per feedback round did not grow.  The runs with
    # and without filtering follow different trajectories, so the figures
    # are summed over three seeds before they are compared (one seed's pair
    # of runs differs by up to a fifth either way).
    assert heard_on / rounds_on <= heard_off / rounds_off


def test_mtcp_sender_tracks_one_folded_child_and_one_summary_per_ack_round(p4):
    duration = 3.0
    # The paper's Vegas window leaves slow start before the queue overflows, so
    # these lossless links stay lossless and both runs move the same data; the
    # default reno window overshoots in slow start like TCP, and the 3 s would
    # measure loss recovery instead of the fold.
    vegas = RULES.resolve("default", {"reno_window": False, "recovery_hold": False})
    on = run_tree(p4, "mtcp", {"assisted": True}, receivers=RECEIVERS, k=K, assistance=True,
                  duration=duration, rules=vegas)
    off = run_tree(p4, "mtcp", {"receivers": RECEIVERS}, receivers=RECEIVERS, k=K, assistance=False,
                   duration=duration, rules=vegas)

    def summaries(t: Tapped) -> int:
        return sum(isinstance(m, (wire.MtcpAck, wire.MtcpWindowUpdate)) for _t, m in t.feedback)

    assert [c.nid for c in on.sender._acking()] == [FOLD_ID]
    assert len(off.sender._acking()) == RECEIVERS
    rounds = duration / MTCP_ACK_ROUND_S
    # Two levels of folding: a few summaries per ACK round reach the sender
    # (the receivers' ACK delays are jittered, so the slowest one, which moves
    # the fold, changes within a round), against one per receiver without assistance.
    assert summaries(on) <= 3 * rounds
    assert summaries(off) >= 0.5 * RECEIVERS * rounds
    assert summaries(on) * 4 < summaries(off)
    # The same transfer either way (lossless links: the fold costs nothing).
    sent_on, sent_off = on.sender.next_seq - 1, off.sender.next_seq - 1
    assert sent_on > 300 and abs(sent_on - sent_off) <= 0.1 * sent_off
    for t in (on, off):
        assert min(r.rbuf.cum_ack for r in t.receivers) >= (t.sender.next_seq - 1) - 64


def test_mtcp_with_folding_under_loss_never_releases_a_packet_a_receiver_lacks(p4):
    # A fold carries no SACK bits (the switch clears them; the sender ignores
    # any on AGGREGATED messages): it acknowledges by the folded cum_ack alone.
    t = run_tree(p4, "mtcp", {"assisted": True}, receivers=RECEIVERS, k=K, assistance=True, duration=3.0,
                 leaf_loss=0.01)
    snd = t.sender
    released_to = (min(snd.buf) - 1) if snd.buf else snd.next_seq - 1
    assert min(r.rbuf.cum_ack for r in t.receivers) >= released_to


def _vlmcc_receivers_with_rtt(p4, assistance: bool) -> int:
    t = run_tree(p4, "vlmcc", {}, receivers=RECEIVERS, k=K, assistance=assistance, duration=2.0,
                 leaf_loss=0.0)
    return sum(r.rtt is not None for r in t.receivers)


def test_vlmcc_every_receiver_gets_its_rtt_at_once_through_replication_only(p4):
    # Each receiver's probe is answered with Start within a round trip or two.
    assert _vlmcc_receivers_with_rtt(p4, assistance=False) == RECEIVERS


def test_vlmcc_challenge_filtering_lets_every_receiver_get_its_rtt(p4):
    # RTT probes (win_size 0) pass every filter and never become a window's worst.
    assert _vlmcc_receivers_with_rtt(p4, assistance=True) == RECEIVERS


def test_vlmcc_filter_window_comes_from_the_session_params(p4):
    t = run_tree(p4, "vlmcc", {"filter_window_us": 50_000}, receivers=RECEIVERS, k=K, assistance=True,
                 duration=0.1)
    assert t.run.agents["s/snd"].p.filter_window_us == 50_000
    windows = set()
    for node in t.run.net.switches.values():
        for e in node.sw.table_entries("MccIngress.sessions"):
            windows.add(tuple(e.params)[-1])
    assert windows == {50_000}
