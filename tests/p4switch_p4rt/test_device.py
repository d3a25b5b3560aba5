"""P4Runtime entity semantics of the device layer, against the runtime API contract."""

from __future__ import annotations

import pytest

from finsy.proto import p4r
from p4rt_fakes import fake_builder

from p4mcc.p4switch.p4rt.device import Device
from p4mcc.p4switch.p4rt.errors import Code, P4RTError

FWD, ACL, FIXED = 33554433, 33554434, 33554435
FORWARD, DROP, TO_CPU = 16777217, 16777218, 16777219
PKTS, FWD_HITS, POLICE, STATE, LEARN = 302120961, 318767105, 335544321, 369098753, 385875969
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE


@pytest.fixture
def dev():
    d = Device(0, fake_builder(cpu_port=64), cpu_port=64)
    d.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                   p4r.ForwardingPipelineConfig(p4_device_config=b"x"))
    return d


def fwd_entry(mac: bytes, port: bytes = b"\x02", action=FORWARD) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=FWD)
    e.match.add(field_id=1).exact.value = mac
    e.action.action.action_id = action
    if action == FORWARD:
        e.action.action.params.add(param_id=1, value=port)
    return e


def upd(kind, entry) -> p4r.Update:
    u = p4r.Update(type=kind)
    field = {p4r.TableEntry: "table_entry", p4r.CounterEntry: "counter_entry", p4r.RegisterEntry: "register_entry",
             p4r.MeterEntry: "meter_entry", p4r.DigestEntry: "digest_entry",
             p4r.DirectCounterEntry: "direct_counter_entry",
             p4r.PacketReplicationEngineEntry: "packet_replication_engine_entry"}[type(entry)]
    getattr(u.entity, field).CopyFrom(entry)
    return u


def code_of(dev, update) -> Code:
    with pytest.raises(P4RTError) as ei:
        dev.write_update(update)
    return ei.value.code


def read(dev, **kw):
    return dev.read(p4r.Entity(**kw))


def test_write_before_pipeline_is_failed_precondition():
    d = Device(0, fake_builder())
    assert code_of(d, upd(INSERT, fwd_entry(b"\x01"))) == Code.FAILED_PRECONDITION


def test_insert_reaches_the_runtime_and_reads_back_canonical(dev):
    dev.write_update(upd(INSERT, fwd_entry(b"\x00\x00\x00\x00\x00\x01", b"\x00\x02")))
    sw = dev.pipeline.switch
    (entry,) = sw.tables["MyIngress.fwd"].values()
    assert entry.keys[0].value == 1 and entry.action == "MyIngress.forward" and entry.params == (2,)
    (ent,) = read(dev, table_entry=p4r.TableEntry(table_id=FWD))
    te = ent.table_entry
    assert te.match[0].exact.value == b"\x01"  # shortest encoding (read-write symmetry)
    assert te.action.action.params[0].value == b"\x02"


def test_duplicate_insert_is_already_exists_and_missing_delete_not_found(dev):
    dev.write_update(upd(INSERT, fwd_entry(b"\x01")))
    assert code_of(dev, upd(INSERT, fwd_entry(b"\x01"))) == Code.ALREADY_EXISTS
    assert code_of(dev, upd(DELETE, fwd_entry(b"\x09"))) == Code.NOT_FOUND
    assert code_of(dev, upd(MODIFY, fwd_entry(b"\x09"))) == Code.NOT_FOUND
    dev.write_update(upd(DELETE, fwd_entry(b"\x01")))
    assert read(dev, table_entry=p4r.TableEntry(table_id=FWD)) == []
    assert dev.pipeline.switch.tables["MyIngress.fwd"] == {}


def test_modify_changes_action_data(dev):
    dev.write_update(upd(INSERT, fwd_entry(b"\x01", b"\x02")))
    dev.write_update(upd(MODIFY, fwd_entry(b"\x01", b"\x05")))
    (entry,) = dev.pipeline.switch.tables["MyIngress.fwd"].values()
    assert entry.params == (5,)


@pytest.mark.parametrize(
    "mutate,code",
    [
        (lambda e: setattr(e, "table_id", 0x02FFFFFF), Code.NOT_FOUND),
        (lambda e: setattr(e.match[0], "field_id", 7), Code.INVALID_ARGUMENT),
        (lambda e: setattr(e.match[0].exact, "value", b"\x01\x00\x00\x00\x00\x00\x00"), Code.OUT_OF_RANGE),
        (lambda e: setattr(e.match[0].exact, "value", b""), Code.INVALID_ARGUMENT),
        (lambda e: setattr(e.action.action.params[0], "value", b""), Code.INVALID_ARGUMENT),
        (lambda e: setattr(e.action.action.params[0], "value", b"\x02\x00"), Code.OUT_OF_RANGE),
        (lambda e: setattr(e.action.action.params[0], "param_id", 9), Code.INVALID_ARGUMENT),
        (lambda e: e.action.action.ClearField("params"), Code.INVALID_ARGUMENT),
        (lambda e: setattr(e.action.action, "action_id", 0x01FFFFFF), Code.INVALID_ARGUMENT),
        (lambda e: setattr(e, "priority", 5), Code.INVALID_ARGUMENT),
        (lambda e: e.ClearField("match"), Code.INVALID_ARGUMENT),
        (lambda e: e.ClearField("action"), Code.INVALID_ARGUMENT),
    ],
    ids=["unknown-table", "unknown-field", "key-too-wide", "empty-bytes", "empty-param", "param-too-wide",
         "unknown-param", "missing-param", "action-not-in-table", "priority-on-exact", "missing-exact", "no-action"],
)
def test_malformed_entries_get_the_spec_codes(dev, mutate, code):
    e = fwd_entry(b"\x01")
    mutate(e)
    assert code_of(dev, upd(INSERT, e)) == code
    assert dev.pipeline.switch.tables["MyIngress.fwd"] == {}


def test_default_only_action_refused_in_entries(dev):
    assert code_of(dev, upd(INSERT, fwd_entry(b"\x01", action=TO_CPU))) == Code.PERMISSION_DENIED


def test_table_full_is_resource_exhausted(dev):
    for i in range(4):
        dev.write_update(upd(INSERT, fwd_entry(bytes([i + 1]))))
    assert code_of(dev, upd(INSERT, fwd_entry(b"\x10"))) == Code.RESOURCE_EXHAUSTED


def acl_entry(src: bytes, mask: bytes, dst: bytes, plen: int, prio: int) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=ACL, priority=prio)
    t = e.match.add(field_id=1).ternary
    t.value, t.mask = src, mask
    lpm = e.match.add(field_id=2).lpm
    lpm.value, lpm.prefix_len = dst, plen
    e.action.action.action_id = DROP
    return e


def test_ternary_and_lpm_validation_and_priorities(dev):
    ok = acl_entry(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00", b"\x0a\x01\x00\x00", 16, 10)
    dev.write_update(upd(INSERT, ok))
    same_key_other_prio = acl_entry(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00", b"\x0a\x01\x00\x00", 16, 11)
    dev.write_update(upd(INSERT, same_key_other_prio))
    assert code_of(dev, upd(INSERT, acl_entry(b"\x0a", b"\xff", b"\x0a\x01\x00\x00", 16, 0))) == Code.INVALID_ARGUMENT
    # value bits outside the mask, host bits beyond the prefix, zero mask, /0
    assert code_of(dev, upd(INSERT, acl_entry(b"\x0a\x01", b"\xff\x00", b"\x0a", 8, 1))) == Code.INVALID_ARGUMENT
    assert code_of(dev, upd(INSERT, acl_entry(b"\x0a", b"\xff", b"\x0a\x01", 8, 1))) == Code.INVALID_ARGUMENT
    assert code_of(dev, upd(INSERT, acl_entry(b"\x00", b"\x00", b"\x0a", 8, 1))) == Code.INVALID_ARGUMENT
    assert code_of(dev, upd(INSERT, acl_entry(b"\x0a", b"\xff", b"\x00", 0, 1))) == Code.INVALID_ARGUMENT
    rows = read(dev, table_entry=p4r.TableEntry(table_id=ACL))
    assert sorted(r.table_entry.priority for r in rows) == [10, 11]
    # A read naming the key and priority returns just that entry.
    (one,) = read(dev, table_entry=acl_entry(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00", b"\x0a\x01\x00\x00", 16, 11))
    assert one.table_entry.priority == 11


def test_const_table_refuses_writes_and_reads_its_entries(dev):
    e = p4r.TableEntry(table_id=FIXED)
    e.match.add(field_id=1).exact.value = b"\x11"
    e.action.action.action_id = DROP
    assert code_of(dev, upd(INSERT, e)) == Code.PERMISSION_DENIED
    (row,) = read(dev, table_entry=p4r.TableEntry(table_id=FIXED))
    assert row.table_entry.is_const
    assert row.table_entry.match[0].exact.value == b"\x06"
    assert row.table_entry.action.action.params[0].value == b"\x03"


def test_default_entry_modify_reset_and_rules(dev):
    d = p4r.TableEntry(table_id=FWD, is_default_action=True)
    d.action.action.action_id = TO_CPU
    dev.write_update(upd(MODIFY, d))
    assert dev.pipeline.switch.defaults["MyIngress.fwd"] == ("MyIngress.to_cpu", ())
    (row,) = read(dev, table_entry=p4r.TableEntry(table_id=FWD, is_default_action=True))
    assert row.table_entry.action.action.action_id == TO_CPU
    assert code_of(dev, upd(INSERT, d)) == Code.INVALID_ARGUMENT
    assert code_of(dev, upd(DELETE, d)) == Code.INVALID_ARGUMENT
    reset = p4r.TableEntry(table_id=FWD, is_default_action=True)
    dev.write_update(upd(MODIFY, reset))
    assert dev.pipeline.switch.defaults["MyIngress.fwd"] == ("MyIngress.drop", ())
    const_default = p4r.TableEntry(table_id=FIXED, is_default_action=True)
    const_default.action.action.action_id = DROP
    assert code_of(dev, upd(MODIFY, const_default)) == Code.PERMISSION_DENIED


def test_counters_indexed_and_wildcard(dev):
    c = p4r.CounterEntry(counter_id=PKTS)
    c.index.index = 3
    c.data.packet_count, c.data.byte_count = 7, 700
    dev.write_update(upd(MODIFY, c))
    (one,) = read(dev, counter_entry=c)
    assert (one.counter_entry.data.packet_count, one.counter_entry.data.byte_count) == (7, 700)
    assert len(read(dev, counter_entry=p4r.CounterEntry(counter_id=PKTS))) == 8
    assert len(read(dev, counter_entry=p4r.CounterEntry())) == 8
    assert code_of(dev, upd(INSERT, c)) == Code.INVALID_ARGUMENT
    c.index.index = 8
    assert code_of(dev, upd(MODIFY, c)) == Code.OUT_OF_RANGE


def test_direct_counter_follows_the_entry(dev):
    dev.write_update(upd(INSERT, fwd_entry(b"\x01")))
    dc = p4r.DirectCounterEntry()
    dc.table_entry.CopyFrom(fwd_entry(b"\x01"))
    dc.data.packet_count, dc.data.byte_count = 3, 300
    dev.write_update(upd(MODIFY, dc))
    (row,) = read(dev, direct_counter_entry=p4r.DirectCounterEntry(table_entry=p4r.TableEntry(table_id=FWD)))
    assert row.direct_counter_entry.data.byte_count == 300
    q = p4r.TableEntry(table_id=FWD)
    q.counter_data.SetInParent()
    (row,) = read(dev, table_entry=q)
    assert row.table_entry.counter_data.packet_count == 3


def test_registers_write_read_and_width(dev):
    r = p4r.RegisterEntry(register_id=STATE)
    r.index.index = 2
    r.data.bitstring = b"\x12\x34"
    dev.write_update(upd(MODIFY, r))
    assert dev.pipeline.switch.registers[2] == 0x1234
    (row,) = read(dev, register_entry=p4r.RegisterEntry(register_id=STATE, index=p4r.Index(index=2)))
    assert row.register_entry.data.bitstring == b"\x12\x34"
    r.data.bitstring = b"\x01\x00\x00"
    assert code_of(dev, upd(MODIFY, r)) == Code.OUT_OF_RANGE
    assert len(read(dev, register_entry=p4r.RegisterEntry())) == 8


def test_meter_config_round_trip_and_reset(dev):
    m = p4r.MeterEntry(meter_id=POLICE, index=p4r.Index(index=1))
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 1000, 100, 2000, 200
    dev.write_update(upd(MODIFY, m))
    assert dev.pipeline.switch.meters[1] == [(1000.0, 100), (2000.0, 200)]
    (row,) = read(dev, meter_entry=p4r.MeterEntry(meter_id=POLICE, index=p4r.Index(index=1)))
    assert row.meter_entry.config.pir == 2000
    m.config.pir = 10
    assert code_of(dev, upd(MODIFY, m)) == Code.INVALID_ARGUMENT  # pir < cir
    dev.write_update(upd(MODIFY, p4r.MeterEntry(meter_id=POLICE, index=p4r.Index(index=1))))
    assert 1 not in dev.pipeline.switch.meters


def mc(gid, *replicas):
    pre = p4r.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = gid
    for port, inst in replicas:
        pre.multicast_group_entry.replicas.add(egress_port=port, instance=inst)
    return pre


def test_multicast_groups(dev):
    dev.write_update(upd(INSERT, mc(5, (1, 0), (2, 0), (3, 1))))
    assert dev.pipeline.switch.groups[5] == [(1, 0), (2, 0), (3, 1)]
    assert code_of(dev, upd(INSERT, mc(5, (1, 0)))) == Code.ALREADY_EXISTS
    assert code_of(dev, upd(MODIFY, mc(6, (1, 0)))) == Code.NOT_FOUND
    assert code_of(dev, upd(INSERT, mc(7, (1, 0), (1, 0)))) == Code.INVALID_ARGUMENT
    assert code_of(dev, upd(INSERT, mc(0, (1, 0)))) == Code.INVALID_ARGUMENT
    dev.write_update(upd(MODIFY, mc(5, (4, 0))))
    assert dev.pipeline.switch.groups[5] == [(4, 0)]
    dev.write_update(upd(INSERT, mc(9, (1, 0))))
    rows = read(dev, packet_replication_engine_entry=mc(0))
    assert [r.packet_replication_engine_entry.multicast_group_entry.multicast_group_id for r in rows] == [5, 9]
    dev.write_update(upd(DELETE, mc(5)))
    assert 5 not in dev.pipeline.switch.groups


def test_clone_sessions(dev):
    pre = p4r.PacketReplicationEngineEntry()
    cs = pre.clone_session_entry
    cs.session_id, cs.packet_length_bytes = 100, 64
    cs.replicas.add(egress_port=64, instance=0)
    dev.write_update(upd(INSERT, pre))
    assert dev.pipeline.switch.sessions[100] == ([(64, 0)], 64)
    rows = read(dev, packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        clone_session_entry=p4r.CloneSessionEntry()))
    assert rows[0].packet_replication_engine_entry.clone_session_entry.packet_length_bytes == 64
    dev.write_update(upd(DELETE, pre))
    assert dev.pipeline.switch.sessions == {}


def test_digest_entries_and_delivery_with_list_size(dev):
    de = p4r.DigestEntry(digest_id=LEARN)
    de.config.max_list_size, de.config.max_timeout_ns, de.config.ack_timeout_ns = 2, 10**12, 10**12
    assert code_of(dev, upd(MODIFY, de)) == Code.NOT_FOUND
    dev.write_update(upd(INSERT, de))
    assert code_of(dev, upd(INSERT, de)) == Code.ALREADY_EXISTS
    sw = dev.pipeline.switch
    sw.process(1, b"\xfe" + bytes(6))
    assert dev.poll_digests()[0] == []  # one of two buffered, timeout far away
    sw.process(2, b"\xfe" + bytes([0, 0, 0, 0, 0, 7]))
    sw.process(1, b"\xfe" + bytes(6))  # same data as the first, not acknowledged yet
    (lst,), _ = dev.poll_digests()
    assert lst.digest_id == LEARN and lst.list_id == 1 and len(lst.data) == 2
    mac, port = lst.data[1].struct.members
    assert (mac.bitstring, port.bitstring) == (b"\x07", b"\x02")
    dev.ack_digest(p4r.DigestListAck(digest_id=LEARN, list_id=1))
    assert len(read(dev, digest_entry=p4r.DigestEntry())) == 1
    dev.write_update(upd(DELETE, de))
    assert read(dev, digest_entry=p4r.DigestEntry()) == []


def test_packet_out_header_and_packet_in_metadata(dev):
    po = p4r.PacketOut(payload=b"hello")
    po.metadata.add(metadata_id=1, value=b"\x01\x05")  # port 261
    frame = dev.packet_out_frame(po)
    assert frame == bytes([261 >> 1, (261 & 1) << 7]) + b"hello"
    po.metadata[0].value = b"\x02\x00"  # 512 does not fit 9 bits
    with pytest.raises(P4RTError) as ei:
        dev.packet_out_frame(po)
    assert ei.value.code == Code.OUT_OF_RANGE
    pi = dev.packet_in(bytes([3 >> 1, (3 & 1) << 7]) + b"data")
    assert pi.payload == b"data" and pi.metadata[0].value == b"\x03" and pi.metadata[0].metadata_id == 1


def test_pipeline_actions(dev):
    A = p4r.SetForwardingPipelineConfigRequest
    dev.write_update(upd(INSERT, fwd_entry(b"\x01")))
    cfg = p4r.ForwardingPipelineConfig(p4_device_config=b"y")
    cfg.cookie.cookie = 42
    dev.set_pipeline(A.VERIFY, cfg)
    assert dev.pipeline.config.cookie.cookie == 0  # VERIFY changes nothing
    with pytest.raises(P4RTError) as ei:
        dev.set_pipeline(A.COMMIT, None)
    assert ei.value.code == Code.NOT_FOUND
    dev.set_pipeline(A.VERIFY_AND_SAVE, cfg)
    assert dev.pipeline.config.cookie.cookie == 0
    dev.set_pipeline(A.COMMIT, None)
    assert dev.pipeline.config.cookie.cookie == 42
    assert read(dev, table_entry=p4r.TableEntry(table_id=FWD)) == []  # state cleared
    dev.write_update(upd(INSERT, fwd_entry(b"\x01")))
    dev.write_update(upd(INSERT, mc(3, (1, 0))))
    dflt = p4r.TableEntry(table_id=FWD, is_default_action=True)
    dflt.action.action.action_id = TO_CPU
    dev.write_update(upd(MODIFY, dflt))
    dev.write_update(upd(INSERT, p4r.DigestEntry(digest_id=LEARN, config=p4r.DigestEntry.Config(max_list_size=1))))
    dev.set_pipeline(A.RECONCILE_AND_COMMIT, cfg)
    assert len(read(dev, table_entry=p4r.TableEntry(table_id=FWD))) == 1  # state preserved
    assert dev.pipeline.switch.groups == {3: [(1, 0)]}
    assert dev.pipeline.switch.defaults["MyIngress.fwd"] == ("MyIngress.to_cpu", ())
    assert len(read(dev, digest_entry=p4r.DigestEntry())) == 1
    R = p4r.GetForwardingPipelineConfigRequest
    assert dev.get_pipeline(R.COOKIE_ONLY).cookie.cookie == 42
    assert not dev.get_pipeline(R.COOKIE_ONLY).HasField("p4info")
    assert dev.get_pipeline(R.P4INFO_AND_COOKIE).HasField("p4info")
    assert dev.get_pipeline(R.DEVICE_CONFIG_AND_COOKIE).p4_device_config == b"y"


def test_p4info_that_does_not_describe_the_program_is_refused():
    from p4rt_fakes import sample_p4info

    generated = sample_p4info()

    def builder(config):
        return fake_builder()(config)[0], None, generated

    d = Device(0, builder)
    wrong = sample_p4info()
    wrong.tables[0].match_fields[0].bitwidth = 32
    cfg = p4r.ForwardingPipelineConfig(p4info=wrong, p4_device_config=b"x")
    with pytest.raises(P4RTError) as ei:
        d.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, cfg)
    assert ei.value.code == Code.INVALID_ARGUMENT and "hdr.ethernet.dstAddr" in ei.value.message
    assert d.pipeline is None
    renumbered = sample_p4info()
    renumbered.tables[0].preamble.id = 0x02000099  # other ids, same names and widths: fine
    d.set_pipeline(p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                   p4r.ForwardingPipelineConfig(p4info=renumbered, p4_device_config=b"x"))
    assert 0x02000099 in d.pipeline.schema.tables


def test_digest_buffer_timeout_and_ack_timeout():
    from finsy.proto import p4d

    from p4mcc.p4switch.p4rt.digests import DigestBuffer

    buf = DigestBuffer()
    cfg = {1: p4r.DigestEntry.Config(max_list_size=10, max_timeout_ns=5_000_000, ack_timeout_ns=50_000_000)}
    a = p4d.P4Data(bitstring=b"\x01")
    assert buf.offer(1, a, 0.0)
    lists, wake = buf.poll(cfg, 0.001)
    assert lists == [] and wake == pytest.approx(0.005)  # waits for max_timeout
    (lst,), _ = buf.poll(cfg, 0.005)
    assert lst.list_id == 1 and list(lst.data) == [a]
    assert not buf.offer(1, a, 0.010)  # suppressed until ack or ack timeout
    assert buf.offer(1, a, 0.056)  # the ack timeout passed
    buf.poll(cfg, 0.070)
    buf.ack(1, 2)
    assert buf.offer(1, a, 0.071)  # acknowledged: reportable again
