"""IGMP proxying: a switch sends a join toward the group's upstream port only
when the group goes from empty to non-empty here, a leave only when it
becomes empty; chains of switches show joins climbing and stopping."""

from __future__ import annotations

from p4src_harness import (ALLOW, JOIN, LEAVE, SENDER, Group, Host, Net, SwitchSetup,
                           configure, data_frame, igmp_checksum_ok, igmpv2_leave,
                           igmpv2_report, igmpv3_report, ipv4_header_ok, new_switch,
                           outputs, receivers)

H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")
H2 = Host("h2", "10.0.0.2", "00:00:00:00:00:02")
G1, G2 = "239.1.1.1", "239.1.1.2"
UP = 9


def leaf(refresh_us: int = 0):
    """A switch whose groups lead upstream through port 9."""
    sw = new_switch()
    configure(sw, SwitchSetup(
        ports=[1, 2, 3, UP], hosts={1: H1, 2: H2},
        groups=[Group(G1, 0, 10, upstream_port=UP), Group(G2, 1, 11, upstream_port=UP)],
        refresh_us=refresh_us, timeout_us=10_000_000 if refresh_us else 0,
    ))
    return sw


def test_first_join_is_proxied_unchanged_to_the_upstream_port():
    sw = leaf()
    report = igmpv2_report(H1, G1)
    assert outputs(sw, 1, report) == [(UP, report)]


def test_join_to_a_non_empty_group_stays_here():
    sw = leaf()
    outputs(sw, 1, igmpv2_report(H1, G1))
    assert outputs(sw, 2, igmpv2_report(H2, G1)) == []
    assert outputs(sw, 1, igmpv2_report(H1, G1)) == []   # repeated report


def test_leave_is_proxied_only_by_the_last_member():
    sw = leaf()
    outputs(sw, 1, igmpv2_report(H1, G1))
    outputs(sw, 2, igmpv2_report(H2, G1))
    assert outputs(sw, 1, igmpv2_leave(H1, G1)) == []
    last = igmpv2_leave(H2, G1)
    assert outputs(sw, 2, last) == [(UP, last)]
    # and the next join is a first join again
    again = igmpv2_report(H1, G1)
    assert outputs(sw, 1, again) == [(UP, again)]


def test_leave_from_a_non_member_is_not_proxied():
    sw = leaf()
    assert outputs(sw, 1, igmpv2_leave(H1, G1)) == []


def test_igmpv3_report_upstream_carries_only_the_transitions():
    sw = leaf()
    outputs(sw, 2, igmpv2_report(H2, G2))             # G2 already carried here
    out = outputs(sw, 1, igmpv3_report(H1, [(JOIN, G1), (JOIN, G2)]))
    # G2's record becomes ALLOW_NEW_SOURCES({}) (no change), checksum patched
    expected = igmpv3_report(H1, [(JOIN, G1), (ALLOW, G2)])
    assert out == [(UP, expected)]
    assert igmp_checksum_ok(out[0][1]) and ipv4_header_ok(out[0][1])


def test_refresh_proxies_a_join_again_after_the_refresh_interval():
    sw = leaf(refresh_us=1_000_000)
    report = igmpv2_report(H1, G1)
    assert outputs(sw, 1, report, now=0.0) == [(UP, report)]
    assert outputs(sw, 1, report, now=0.5) == []
    assert outputs(sw, 1, report, now=1.2) == [(UP, report)]


def test_data_from_upstream_reaches_members_only():
    sw = leaf()
    outputs(sw, 2, igmpv2_report(H2, G1))
    frame = data_frame(G1)
    assert outputs(sw, UP, frame) == [(2, frame)]


# ---------------------------------------------------------------------------
# Chain: sender - S1 -(2:1)- S2 -(2:1)- S3
#   S1: sender on port 4            S2: hC on port 3     S3: hA on 3, hB on 4
# ---------------------------------------------------------------------------

HA = Host("hA", "10.0.0.11", "00:00:00:00:00:0b")
HB = Host("hB", "10.0.0.12", "00:00:00:00:00:0c")
HC = Host("hC", "10.0.0.13", "00:00:00:00:00:0d")


def chain() -> Net:
    net = Net()
    net.add_switch("s1", SwitchSetup(ports=[2, 4], hosts={4: SENDER},
                                     groups=[Group(G1, 0, 10)]))
    net.add_switch("s2", SwitchSetup(ports=[1, 2, 3], hosts={3: HC},
                                     groups=[Group(G1, 0, 10, upstream_port=1)]))
    net.add_switch("s3", SwitchSetup(ports=[1, 3, 4], hosts={3: HA, 4: HB},
                                     groups=[Group(G1, 0, 10, upstream_port=1)]))
    net.link("s1", 2, "s2", 1)
    net.link("s2", 2, "s3", 1)
    net.attach("hs", "s1", 4)
    net.attach("hA", "s3", 3)
    net.attach("hB", "s3", 4)
    net.attach("hC", "s2", 3)
    return net


def test_join_climbs_two_hops_to_the_source_switch():
    net = chain()
    report = igmpv3_report(HA, [(JOIN, G1)])
    assert net.send("s3", 3, report) == []             # consumed at s1
    assert net.sent_on("s3", 1) == [report]
    assert net.sent_on("s2", 1) == [report]
    assert receivers(net.send("s1", 4, data_frame(G1))) == ["hA"]


def test_join_stops_at_the_first_switch_already_carrying_the_group():
    net = chain()
    net.send("s3", 3, igmpv3_report(HA, [(JOIN, G1)]))
    net.trace.clear()
    net.send("s2", 3, igmpv3_report(HC, [(JOIN, G1)]))  # s2 carries G1 already
    assert net.sent_on("s2", 1) == []
    net.send("s3", 4, igmpv3_report(HB, [(JOIN, G1)]))  # s3 carries G1 already
    assert net.sent_on("s3", 1) == []
    frame = data_frame(G1)
    deliveries = net.send("s1", 4, frame)
    assert receivers(deliveries) == ["hA", "hB", "hC"]
    assert all(d.data == frame for d in deliveries)


def test_leave_prunes_upward_only_at_the_last_member():
    net = chain()
    for host, sw, port in ((HA, "s3", 3), (HB, "s3", 4), (HC, "s2", 3)):
        net.send(sw, port, igmpv3_report(host, [(JOIN, G1)]))
    net.trace.clear()

    net.send("s3", 3, igmpv3_report(HA, [(LEAVE, G1)]))
    assert net.sent_on("s3", 1) == []                    # hB still here
    assert receivers(net.send("s1", 4, data_frame(G1))) == ["hB", "hC"]

    net.trace.clear()
    leave_b = igmpv3_report(HB, [(LEAVE, G1)])
    net.send("s3", 4, leave_b)
    assert net.sent_on("s3", 1) == [leave_b]             # s3 empty: tell s2
    assert net.sent_on("s2", 1) == []                    # s2 still has hC
    net.trace.clear()
    assert receivers(net.send("s1", 4, data_frame(G1))) == ["hC"]
    assert net.sent_on("s2", 2) == []                    # pruned toward s3

    net.trace.clear()
    leave_c = igmpv3_report(HC, [(LEAVE, G1)])
    net.send("s2", 3, leave_c)
    assert net.sent_on("s2", 1) == [leave_c]             # s2 empty: tell s1
    net.trace.clear()
    assert net.send("s1", 4, data_frame(G1)) == []
    assert net.sent_on("s1", 2) == []


def test_refreshed_joins_keep_a_chain_alive_and_silence_ages_it_out():
    """Timeout 1 s, refresh 0.5 s on every switch: a host answering queries
    keeps every hop of its branch alive; a host that vanishes ages out of
    all of them within the timeout."""
    net = Net()
    timers = dict(timeout_us=1_000_000, refresh_us=500_000)
    net.add_switch("s1", SwitchSetup(ports=[2, 4], hosts={4: SENDER},
                                     groups=[Group(G1, 0, 10)], **timers))
    net.add_switch("s2", SwitchSetup(ports=[1, 2, 3], hosts={3: HC},
                                     groups=[Group(G1, 0, 10, upstream_port=1)], **timers))
    net.add_switch("s3", SwitchSetup(ports=[1, 3, 4], hosts={3: HA, 4: HB},
                                     groups=[Group(G1, 0, 10, upstream_port=1)], **timers))
    net.link("s1", 2, "s2", 1)
    net.link("s2", 2, "s3", 1)
    for name, sw, port in (("hs", "s1", 4), ("hA", "s3", 3), ("hB", "s3", 4), ("hC", "s2", 3)):
        net.attach(name, sw, port)
    net.send("s3", 3, igmpv3_report(HA, [(JOIN, G1)]), now=0.0)
    net.trace.clear()
    net.send("s3", 3, igmpv3_report(HA, [(2, G1)]), now=0.8)   # hA answers a query
    assert len(net.sent_on("s3", 1)) == 1 and len(net.sent_on("s2", 1)) == 1   # refreshed upward
    assert receivers(net.send("s1", 4, data_frame(G1), now=1.5)) == ["hA"]
    # hA falls silent: by 0.8 + 1 s every hop has aged it out
    net.trace.clear()
    assert net.send("s1", 4, data_frame(G1), now=1.9) == []
    assert net.sent_on("s1", 2) == []
