"""Replication with data-plane IGMP membership on one switch (no upstream):
joins and leaves take effect at the next data packet, egress prunes ports
without members and never sends back out the ingress port, ageing."""

from __future__ import annotations

from p4src_harness import (ALLOW, DROP_IGMP_CONSUMED, DROP_UNKNOWN_GROUP, IS_EX, JOIN, LEAVE,
                           Group, Host, SwitchSetup, configure, counter, data_frame,
                           igmpv2_leave, igmpv2_report, igmpv3_report, ip2int, new_switch,
                           outputs)

H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")
H2 = Host("h2", "10.0.0.2", "00:00:00:00:00:02")
H3 = Host("h3", "10.0.0.3", "00:00:00:00:00:03")
G = ["239.1.1.1", "239.1.1.2", "239.1.1.3", "239.1.1.4"]
SENDER_PORT = 4


def switch(timeout_us: int = 0):
    sw = new_switch()
    configure(sw, SwitchSetup(
        ports=[1, 2, 3, 4],
        hosts={1: H1, 2: H2, 3: H3},
        groups=[Group(g, gidx=i, mgid=10 + i) for i, g in enumerate(G)],
        timeout_us=timeout_us,
    ))
    return sw


def test_data_without_members_reaches_no_port():
    sw = switch()
    assert outputs(sw, SENDER_PORT, data_frame(G[0])) == []
    assert counter(sw, "group_pruned", 0) == 4          # ports 1-3, and 4 = ingress
    assert counter(sw, "group_data_rx", 0) == 1
    assert counter(sw, "group_data_tx", 0) == 0


def test_igmpv2_report_is_consumed_and_next_packet_is_replicated():
    sw = switch()
    assert outputs(sw, 1, igmpv2_report(H1, G[0])) == []   # no upstream: consumed
    assert counter(sw, "drop_reasons", DROP_IGMP_CONSUMED) == 1
    frame = data_frame(G[0])
    assert outputs(sw, SENDER_PORT, frame) == [(1, frame)]
    assert counter(sw, "port_data_tx", 1) == 1


def test_two_members_get_one_copy_each():
    sw = switch()
    outputs(sw, 1, igmpv2_report(H1, G[0]))
    outputs(sw, 3, igmpv2_report(H3, G[0]))
    frame = data_frame(G[0])
    assert outputs(sw, SENDER_PORT, frame) == [(1, frame), (3, frame)]


def test_igmpv2_leave_stops_delivery_at_once():
    sw = switch()
    outputs(sw, 1, igmpv2_report(H1, G[0]))
    outputs(sw, 2, igmpv2_report(H2, G[0]))
    outputs(sw, 1, igmpv2_leave(H1, G[0]))
    frame = data_frame(G[0])
    assert outputs(sw, SENDER_PORT, frame) == [(2, frame)]


def test_igmpv3_report_with_four_records_joins_all_groups():
    sw = switch()
    assert outputs(sw, 2, igmpv3_report(H2, [(JOIN, g) for g in G])) == []
    for g in G:
        frame = data_frame(g)
        assert outputs(sw, SENDER_PORT, frame) == [(2, frame)], g
    assert counter(sw, "port_joins", 2) == 4
    for gidx in range(4):
        assert counter(sw, "group_joins", gidx) == 1


def test_igmpv3_leave_records_remove_only_those_groups():
    sw = switch()
    outputs(sw, 2, igmpv3_report(H2, [(JOIN, g) for g in G]))
    outputs(sw, 2, igmpv3_report(H2, [(LEAVE, G[1]), (LEAVE, G[3])]))
    for i, g in enumerate(G):
        frame = data_frame(g)
        expected = [] if i in (1, 3) else [(2, frame)]
        assert outputs(sw, SENDER_PORT, frame) == expected, g
    assert counter(sw, "port_leaves", 2) == 2


def test_query_answer_mode_is_exclude_joins_and_allow_changes_nothing():
    sw = switch()
    outputs(sw, 3, igmpv3_report(H3, [(IS_EX, G[0]), (ALLOW, G[1])]))
    f0, f1 = data_frame(G[0]), data_frame(G[1])
    assert outputs(sw, SENDER_PORT, f0) == [(3, f0)]
    assert outputs(sw, SENDER_PORT, f1) == []


def test_never_sent_back_out_of_its_ingress_port():
    sw = switch()
    outputs(sw, 1, igmpv2_report(H1, G[0]))
    outputs(sw, 2, igmpv2_report(H2, G[0]))
    frame = data_frame(G[0])
    assert outputs(sw, 1, frame) == [(2, frame)]   # a member sending to its own group


def test_unknown_group_is_dropped_and_counted():
    sw = switch()
    assert outputs(sw, SENDER_PORT, data_frame("239.9.9.9")) == []
    assert counter(sw, "drop_reasons", DROP_UNKNOWN_GROUP) == 1
    assert counter(sw, "port_drops", SENDER_PORT) == 1


def test_membership_times_out_unless_refreshed():
    sw = switch(timeout_us=1_000_000)
    outputs(sw, 1, igmpv2_report(H1, G[0]), now=0.0)
    outputs(sw, 2, igmpv2_report(H2, G[0]), now=0.0)
    frame = data_frame(G[0])
    assert outputs(sw, SENDER_PORT, frame, now=0.5) == [(1, frame), (2, frame)]
    outputs(sw, 2, igmpv3_report(H2, [(IS_EX, G[0])]), now=0.9)   # h2 answers a query
    assert outputs(sw, SENDER_PORT, frame, now=1.5) == [(2, frame)]   # h1 vanished
    assert outputs(sw, SENDER_PORT, frame, now=2.0) == []
    # a join after the whole group aged out starts afresh
    outputs(sw, 1, igmpv2_report(H1, G[0]), now=3.0)
    assert outputs(sw, SENDER_PORT, frame, now=3.1) == [(1, frame)]


def test_reports_handed_over_out_of_arrival_order_keep_both_ports():
    """The switch's host reads ports in turn, so a report that arrived first
    can be processed second.  Its ingress timestamp is then the previous
    packet's, not its earlier arrival: otherwise ``now - last`` wraps in the
    program's 48-bit arithmetic and the fresh group reads as aged out, and
    the second join wipes the first port's bit."""
    sw = switch(timeout_us=20_000_000)
    outputs(sw, 2, igmpv2_report(H2, G[0]), now=0.1902)
    outputs(sw, 3, igmpv2_report(H3, G[0]), now=0.1901)
    frame = data_frame(G[0])
    assert outputs(sw, SENDER_PORT, frame, now=0.2) == [(2, frame), (3, frame)]
    assert [d.fields["members"] for d in sw.poll_digests()] == [1 << 2, (1 << 2) | (1 << 3)]


def test_digest_reports_membership_changes_only():
    sw = switch()
    sw.poll_digests()
    outputs(sw, 1, igmpv2_report(H1, G[0]), now=0.25)
    digests = sw.poll_digests()
    assert len(digests) == 1
    assert digests[0].fields == {"group": ip2int(G[0]), "port": 1, "event": 1,
                                 "members": 1 << 1, "timestamp": 250_000}
    outputs(sw, 1, igmpv2_report(H1, G[0]), now=0.5)     # refresh: no change
    assert sw.poll_digests() == []
    outputs(sw, 1, igmpv2_leave(H1, G[0]), now=0.75)
    digests = sw.poll_digests()
    assert [(d.fields["event"], d.fields["members"]) for d in digests] == [(2, 0)]


def test_digest_of_a_multi_record_report_names_its_first_change():
    sw = switch()
    outputs(sw, 2, igmpv2_report(H2, G[0]))
    sw.poll_digests()
    outputs(sw, 2, igmpv3_report(H2, [(IS_EX, G[0]), (JOIN, G[2]), (JOIN, G[3])]), now=1.0)
    digests = sw.poll_digests()
    assert [(d.fields["group"], d.fields["event"]) for d in digests] == [(ip2int(G[2]), 1)]
