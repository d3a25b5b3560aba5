"""The shared reliable-delivery pieces: receive buffer, scoreboard, RTT estimator."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4mcc.hosts.core import Delivered
from p4mcc.hosts.reliable import ReceiveBuffer, Scoreboard, blocks_from_set, nack_blocks, payload_for


def test_receive_buffer_delivers_in_order_only():
    b = ReceiveBuffer(capacity=8)
    assert b.add(2, 10) == (True, [])
    assert b.add(3, 10) == (True, [])
    new, out = b.add(1, 10)
    assert new and out == [Delivered(1, 10), Delivered(2, 10), Delivered(3, 10)]
    assert b.cum_ack == 3 and b.free == 8
    assert b.add(2, 10) == (False, []) and b.duplicates == 1


def test_receive_buffer_describes_holes_blocks_and_bitmap():
    b = ReceiveBuffer(capacity=8)
    for s in (1, 3, 4, 7):
        b.add(s, 1)
    assert b.cum_ack == 1
    assert b.missing() == [2, 5, 6]
    assert b.sack_blocks() == ((7, 8), (3, 5))  # the block with the latest arrival first
    assert b.sack_bitmap() == 0b100110  # 3, 4 and 7 relative to cum_ack + 1 = 2
    assert b.free == 5 and b.highest == 7


def test_receive_buffer_full_drops_and_counts_but_always_takes_the_next_in_order():
    b = ReceiveBuffer(capacity=2)
    b.add(3, 1)
    b.add(4, 1)
    assert b.add(5, 1) == (False, []) and b.overflow == 1
    new, out = b.add(1, 1)
    assert new and [d.seq for d in out] == [1]
    with pytest.raises(ValueError):
        b.add(0, 1)


def test_scoreboard_merges_reports_and_finds_losses_three_above():
    sb = Scoreboard()
    assert sb.update(1, [(3, 4)]) == [1, 3]
    assert sb.lost(3) == []
    assert sb.update(1, [(5, 6)]) == [5]  # an earlier block left out is remembered
    assert sb.acked(3) and not sb.acked(2)
    assert sb.lost(3) == [2]
    assert sb.update(0) == []  # an old cumulative ACK never moves it back
    assert sb.update(2) == [2] and sb.cum_ack == 3  # 3 was SACKed: folded in
    assert sb.update_bitmap(3, 0b101) == [4, 6]


@given(st.sets(st.integers(1, 60)), st.integers(0, 60))
def test_starting_after_a_point_is_an_update_to_it_that_lists_nothing(sacked, start):
    """``start_after(c)`` leaves the record ``update(c)`` would, SACKed packets that
    touch ``c`` folded in, without listing the packets up to ``c``."""
    blocks = blocks_from_set(sacked)
    quick, listed = Scoreboard(), Scoreboard()
    quick.update(0, blocks)
    listed.update(0, blocks)
    quick.start_after(start)
    listed.update(start)
    assert (quick.cum_ack, quick.sacked, quick.highest) == (listed.cum_ack, listed.sacked, listed.highest)


@given(st.permutations(list(range(1, 30))))
def test_any_arrival_order_delivers_each_packet_once_in_order(order):
    b = ReceiveBuffer(capacity=64)
    got = []
    for s in order:
        got += [d.seq for d in b.add(s, 5)[1]]
    assert got == list(range(1, 30))
    assert b.delivered_bytes == 29 * 5


@given(st.sets(st.integers(1, 200), max_size=60))
def test_blocks_cover_exactly_the_set(seqs):
    blocks = blocks_from_set(seqs)
    covered = {s for a, b in blocks for s in range(a, b)}
    assert covered == seqs
    assert all(b1 < a2 for (_a1, b1), (a2, _b2) in zip(blocks, blocks[1:]))


@given(st.sets(st.integers(1, 120), max_size=80), st.integers(1, 64))
def test_a_nack_acknowledges_exactly_what_arrived_below_its_last_hole(arrived, limit):
    """What a receiver's NACK (its holes, lowest first, cut at ``limit``) says it
    holds: every arrived packet above its cumulative ACK and below the last
    hole named, and nothing it lacks."""
    b = ReceiveBuffer(capacity=256)
    for s in sorted(arrived):
        b.add(s, 5)
    missing = b.missing(limit)
    said = {s for lo, hi in nack_blocks(b.cum_ack, missing) for s in range(lo, hi)}
    top = max(missing, default=b.cum_ack)
    assert said == {s for s in arrived if b.cum_ack < s < top}


def test_payload_is_a_checkable_function_of_seq():
    assert payload_for(1, 6) == b"\x00\x00\x00\x01\x00\x00"
    assert payload_for(2, 6) != payload_for(1, 6)
    assert payload_for(5, 0) == b""
