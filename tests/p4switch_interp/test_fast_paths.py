"""The per-packet shortcuts give the answers of the plain paths they replace.

Multicast replicas share only what egress never names
(``replicas.touched_members``) and stay isolated; the PRE's cached replica
lists follow every change; the Internet checksum taken straight from the
field-list integer equals the one over its bytes; a header's ``extract``
reads the bits ``PacketIn.take`` + ``unpack`` read, at any bit offset.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4mcc.p4switch.interp import load_switch
from p4mcc.p4switch.interp import values as V
from p4mcc.p4switch.interp.replicas import rebound, touched_members, written_members
from p4mcc.p4switch.runtime import bits, hashes
from p4mcc.p4switch.runtime.pre import Pre

#: two one-byte headers, parsed in order, and an empty verifyChecksum
TWO_HEADERS = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<8> y; }
struct headers_t { a_t a; b_t b; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); pkt.extract(h.b); transition accept; }
}
control VC(inout headers_t h, inout meta_t meta) { apply { } }
"""

PROGRAM = TWO_HEADERS + r"""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.mcast_grp = 1; }
}
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action stamp(bit<8> v) { h.b.y = v; }
    apply {
        stamp((bit<8>) sm.egress_port);
        if (sm.egress_port == 2) { h.b.setInvalid(); }
    }
}
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_touched_members_of_generated_code() -> None:
    text = "\n".join([
        "def ctl_E_1(a_hdr, a_meta):",
        "    E = _Frame()",
        "    E.p_hdr = a_hdr",
        "    h2 = E.p_hdr.f_ipv4",
        "    E.p_hdr.f_udp.f_checksum = 0",
        "    X.count(E.p_meta.f_idx, 1)",
        "    _x.outs = (E.p_hdr, E.p_meta, )",
        "    return (E.p_hdr, E.p_meta, )",
    ])
    assert touched_members(text, "hdr") == {"ipv4", "udp"}
    assert touched_members(text, "meta") == {"idx"}
    assert touched_members(text, "hdr_x") == set()
    # the whole struct handed to a call or aliased: nothing can be shared
    assert touched_members(text + "\n    t = ctl_sub(E.p_hdr, E.p_meta)", "hdr") is None
    assert touched_members(text + "\n    x = E.p_hdr", "hdr") is None
    # an apply function reading its argument instead of the frame
    applied = "def ctl_E_1(a_hdr, a_meta):\n    a_hdr.f_tcp._v = False\n    return (a_hdr, a_meta, )"
    assert touched_members(applied, "hdr") == {"tcp"}
    assert touched_members(applied + "\n    t = ctl_sub(a_hdr)", "hdr") is None


def test_written_members_sees_every_assignment() -> None:
    base = "def ctl_E_1(a_hdr, a_meta):\n    E.p_meta = a_meta\n    if a_meta.f_kind == 1: v = E.p_meta.f_gidx\n"
    assert written_members(base, "meta") == set()  # reads only: replicas may share the struct
    assert written_members(base + "    E.p_meta.f_drop = 1\n", "meta") == {"drop"}
    assert written_members(base + "    a_meta.f_n += 1\n", "meta") == {"n"}
    assert written_members(base + "    a_meta.f_x, v = t\n", "meta") == {"x"}
    assert written_members(base + "    t = ctl_sub(E.p_meta)\n", "meta") is None


def test_rebound_sees_every_rebinding() -> None:
    base = "    E.p_hdr = a_hdr\n    E.p_hdr.f_ipv4.f_ttl = 3\n    _x.outs = (E.p_hdr, )\n    return (E.p_hdr, )"
    assert not rebound(base, "hdr")
    assert not rebound(base + "\n    if E.p_hdr == x: pass", "hdr")
    assert rebound(base + "\n    E.p_hdr = t5[0]", "hdr")
    assert rebound(base + "\n    E.p_hdr += 1", "hdr")
    assert rebound(base + "\n    E.p_x, E.p_hdr = t", "hdr")
    assert not rebound(base + "\n    E.p_hdrs = t", "hdr")


def test_replicas_isolated_and_untouched_headers_shared(tmp_path: Path) -> None:
    src = tmp_path / "rep.p4"
    src.write_text(PROGRAM)
    sw = load_switch(str(src))
    sw.set_multicast_group(1, [(1, 0), (2, 0), (3, 0)])
    outs = sw.process(0, bytes([0xAA, 0x00]))
    # each replica's egress wrote its own port; port 2 dropped header b
    assert [(o.port, o.data) for o in outs] == [(1, b"\xaa\x01"), (2, b"\xaa"), (3, b"\xaa\x03")]
    hdr = sw._new_H()
    hdr.f_a.f_x, hdr.f_a._v = 7, True
    rep = sw._rep_H(hdr)
    assert rep.f_a is hdr.f_a  # egress never names h.a: shared
    assert rep.f_b is not hdr.f_b  # egress writes h.b: copied
    meta = sw._new_M()
    assert sw._rep_M(meta) is meta  # egress never changes meta: one struct for all replicas
    assert load_switch(str(src), fast=False)._rep_M(meta) is not meta  # the reference path copies


def test_pre_replica_cache_follows_every_change() -> None:
    pre = Pre()
    pre.group_create(1)
    n0 = pre.node_create(0, [1, 2])
    pre.node_associate(1, n0)
    assert pre.replicas(1) == ((1, 0), (2, 0))
    pre.node_update(n0, [3])
    assert pre.replicas(1) == ((3, 0),)
    n1 = pre.node_create(9, [4])
    pre.node_associate(1, n1)
    assert pre.replicas(1) == ((3, 0), (4, 9))
    pre.node_dissociate(1, n0)
    assert pre.replicas(1) == ((4, 9),)
    pre.node_destroy(n1)
    assert pre.replicas(1) == ()
    pre.set_group(1, [(5, 1)])
    assert pre.replicas(1) == ((5, 1),)
    pre.delete_group(1)
    assert pre.replicas(1) == ()
    pre.group_create(1)
    pre.node_associate(1, pre.node_create(2, [6]))
    assert pre.replicas(1) == ((6, 2),)
    pre.group_destroy(1)
    assert pre.replicas(1) == ()


def test_csum16_bits_equals_csum16_of_serialised_bytes() -> None:
    rng = random.Random(7)
    for width in list(range(0, 40)) + [144, 160, 296, 511]:
        for _ in range(30):
            v = rng.getrandbits(width) if width else 0
            assert hashes.csum16_bits(v, width) == hashes.csum16(bits.bits_to_bytes(v, width)), (v, width)
    # all-ones words: the sum folds to 0xFFFF, the checksum to 0
    assert hashes.csum16_bits(0xFFFFFFFF, 32) == 0
    assert hashes.csum16_bits(0, 16) == 0xFFFF


@pytest.mark.parametrize("offset", [0, 1, 3, 8, 13])
def test_extract_reads_the_bits_take_reads(offset: int, tmp_path: Path) -> None:
    src = tmp_path / "x.p4"
    src.write_text(PROGRAM.replace("header a_t { bit<8> x; }", "header a_t { bit<3> p; bit<17> q; bit<4> r; }"))
    sw = load_switch(str(src))
    rng = random.Random(offset)
    for _ in range(20):
        data = bytes(rng.getrandbits(8) for _ in range(6))
        a, b = sw._new_H().f_a, sw._new_H().f_a
        p1, p2 = V.PacketIn(data), V.PacketIn(data)
        p1.pos = p2.pos = offset
        a.extract(p1)
        b.unpack(p2.take(24))
        assert (a.f_p, a.f_q, a.f_r, a._v, p1.pos) == (b.f_p, b.f_q, b.f_r, True, p2.pos)
    short = V.PacketIn(bytes(3))
    short.pos = 1
    with pytest.raises(V.ParserError, match="PacketTooShort"):
        sw._new_H().f_a.extract(short)


DEDUP_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<8> y; bit<16> c; }
struct headers_t { a_t a; b_t b; }
struct meta_t { bit<8> fix; }
register<bit<8>>(8) mark;
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); pkt.extract(h.b); transition accept; }
}
control VC(inout headers_t h, inout meta_t meta) { apply { } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (h.a.x != 0) { mark.write((bit<32>)(h.a.x & 7), h.a.x); }
        sm.mcast_grp = 1;
    }
}
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> v;
        mark.read(v, (bit<32>)sm.egress_port);
        if (v != 0) { h.b.y = v; }
        if (sm.egress_port == 3) { meta.fix = 1; }
    }
}
control CC(inout headers_t h, inout meta_t meta) {
    apply { update_checksum(meta.fix == 1, { h.b.y }, h.b.c, HashAlgorithm.csum16); }
}
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_replicas_share_deparser_output_only_when_egress_changed_nothing(tmp_path: Path) -> None:
    """Replicas whose egress left headers (and the metadata computeChecksum
    reads) as ingress made them share one computeChecksum + deparser run;
    a replica changed by a register cell or by metadata gets its own, and
    the bytes equal those of a switch without the shortcut."""
    src = tmp_path / "dedup.p4"
    src.write_text(DEDUP_PROGRAM)
    fast, plain = load_switch(str(src)), load_switch(str(src), fast=False)
    assert fast._same_output is not None and plain._same_output is None
    runs = {"n": 0}
    deparse = fast._deparse

    def counting(*a: object) -> bytes:
        runs["n"] += 1
        return deparse(*a)  # type: ignore[arg-type]

    fast._deparse = counting  # type: ignore[method-assign]
    ports = [(1, 0), (2, 0), (3, 0), (4, 0)]
    for sw in (fast, plain):
        sw.set_multicast_group(1, ports)
    expected_runs = []
    # x=0 writes no register; x=2 marks port 2 (its replica's b.y changes);
    # x=4 then marks port 4 as well; port 3 always sets meta.fix (checksum)
    for x in (0, 2, 4, 0):
        frame = bytes([x, 0x11, 0x00, 0x00])
        got, want = fast.process(0, frame), plain.process(0, frame)
        assert [(o.port, o.data) for o in got] == [(o.port, o.data) for o in want]
        expected_runs.append(runs["n"])
    by_port = {o.port: o.data for o in fast.process(0, bytes([0, 0x11, 0, 0]))}
    assert by_port[1] == bytes([0, 0x11, 0, 0]) and by_port[2][1] == 2 and by_port[4][1] == 4
    assert by_port[3][2:] != b"\x00\x00"  # computeChecksum ran for the replica whose metadata says so
    # one shared run for ports 1,2,4 then port 3 alone; later packets: port 2
    # (and then 4) changed by the registers each run on their own
    assert expected_runs == [2, 5, 9, 13]


def test_register_and_counter_cells_are_compact_and_keep_their_semantics() -> None:
    """Large arrays keep only the cells ever written and small ones up to
    64 bits live in machine-word arrays (so thousands of switch nodes fit in
    memory); values stay masked to the width, signed cells wrap to
    negative, wider cells keep Python ints, and meters exist only once
    configured (an unconfigured one is GREEN)."""
    from p4mcc.p4switch.runtime.externs import GREEN, RED, CounterArray, MeterArray, RegisterArray

    r = RegisterArray("r", 1 << 16, 48)
    assert len(r.values) == 0 and r.read(70) == 0 and len(r.values) == 0  # reading stores nothing
    r.write(5, (1 << 50) + 7)
    assert r.read(5) == ((1 << 50) + 7) & ((1 << 48) - 1) and r.read(1 << 16) == 0 and len(r.values) == 1
    r.write(1 << 16, 9)  # out of range: ignored
    assert len(r.values) == 1
    small = RegisterArray("small", 64, 32)
    assert small.values.itemsize == 8
    small.write(63, -1)
    assert small.read(63) == 0xFFFFFFFF
    s = RegisterArray("s", 4, 8, signed=True)
    s.write(1, 0xFF)
    assert s.read(1) == -1
    wide = RegisterArray("w", 2, 128)
    wide.write(0, (1 << 127) | 1)
    assert wide.read(0) == (1 << 127) | 1
    r.reset()
    assert r.read(5) == 0 and len(r.values) == 0
    for c in (CounterArray("c", 512), CounterArray("d", 16)):
        c.count(3, 1500)
        c.count(3, 64)
        c.count(c.size, 64)  # out of range: not counted
        assert c.read(3) == (2, 1564) and c.read(4) == (0, 0)
    m = MeterArray("m", 512, packets=True)
    assert m.meters == {} and m.execute(7, 10, 100) == GREEN
    m.set_rates(7, [(0.0, 1), (0.0, 1)], 0)  # one packet of burst, no refill
    assert [m.execute(7, 1, 100) for _ in range(2)] == [GREEN, RED] and list(m.meters) == [7]
    m._m(7).reset()
    assert m.execute(7, 2, 100) == GREEN


CLONE_PROGRAM = TWO_HEADERS + r"""
action copy_to(in bit<32> session) { clone(CloneType.E2E, session); }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.mcast_grp = 1;
        if (h.a.x == 1) { clone(CloneType.I2E, 5); }
#ifdef EGRESS_CLONE
        if (h.a.x == 9) { copy_to(6); }  /* the global action is generated here first */
#endif
    }
}
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        /* mark_to_drop zeroes mcast_grp: the next replica must see it again */
        h.b.y = (bit<8>) sm.egress_port | ((bit<8>) sm.mcast_grp << 4);
        if (sm.egress_port == 3) { mark_to_drop(sm); }
#ifdef EGRESS_CLONE
        if (h.a.x == 2 && sm.instance_type == 5 && sm.egress_port == 2) { copy_to(6); }
#endif
    }
}
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("egress_clone", [False, True])
def test_replicas_run_at_once_only_when_egress_leaves_the_traffic_manager_alone(
        egress_clone: bool, tmp_path: Path) -> None:
    """A packet's replicas skip the egress queue when egress requests no
    clone, recirculation, truncation or digest (also through an action
    generated in ingress's code) and nothing waits before them, and then
    share one standard metadata struct whose members egress assigned are
    restored for the next replica; either way the outputs, their order and
    the stats equal the reference path's."""
    src = tmp_path / "clone.p4"
    src.write_text(CLONE_PROGRAM)
    defines = {"EGRESS_CLONE": "1"} if egress_clone else {}
    fast, plain = load_switch(str(src), defines=defines), load_switch(str(src), defines=defines, fast=False)
    assert fast._at_once is (not egress_clone)
    for sw in (fast, plain):
        sw.set_multicast_group(1, [(1, 0), (2, 0), (3, 0), (4, 0)])
        sw.mirroring_add(5, 9)
        sw.mirroring_add(6, 8)
    for x in (0, 1, 2, 0):  # 1: an ingress clone waits in the queue before the replicas
        frame = bytes([x, 0x55])
        got, want = fast.process(0, frame), plain.process(0, frame)
        assert got == want
    assert fast.stats == plain.stats
    outs = fast.process(0, bytes([1, 0x55]))
    assert [o.port for o in outs] == [9, 1, 2, 4]  # the clone first, port 3 dropped by egress
    assert [o.data[1] for o in outs] == [0x09, 0x11, 0x12, 0x14]  # the clone's metadata was reset
    if egress_clone:
        assert [o.port for o in fast.process(0, bytes([2, 0x55]))] == [1, 2, 4, 8]  # egress clone queued last
