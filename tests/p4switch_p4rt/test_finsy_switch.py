"""finsy, a real P4Runtime client, against a running ``p4mcc switch`` on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy as fy
import pytest
from finsy import P4ClientError

from switchproc import SwitchProc

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.p4rt.device import make_bundle
from p4mcc.p4switch.p4rt.p4info import build_p4info

PROGRAM = Path(__file__).parent / "programs" / "l2.p4"
CPU = 64


@pytest.fixture(scope="module")
def pipeline():
    return build_p4info(compile_file(str(PROGRAM))), make_bundle(str(PROGRAM))


@pytest.fixture
def switch():
    sp = SwitchProc("--no-p4", "--cpu-port", str(CPU), "--device-id", "1")
    yield sp
    assert sp.stop() == 0  # SIGTERM stops the switch cleanly


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def opts(pipeline, election=10, **kw):
    p4info, blob = pipeline
    return fy.SwitchOptions(p4info=p4info, p4blob=blob, device_id=1, initial_election_id=election, **kw)


def fwd(mac: int, port: int) -> fy.P4TableEntry:
    return fy.P4TableEntry("MyIngress.fwd", match=fy.Match({"hdr.ethernet.dstAddr": mac}),
                           action=fy.Action("MyIngress.forward", port=port))


async def expect_error(coro) -> P4ClientError:
    try:
        await coro
    except P4ClientError as e:
        return e
    raise AssertionError("the request succeeded")


def test_pipeline_push_write_read_every_kind(switch, pipeline):
    async def go():
        async with fy.Switch("s1", switch.address, opts(pipeline)) as sw:
            assert sw.is_primary
            cfg_cookie = sw.p4info.p4cookie
            # Table entries, incl. ternary+lpm with priority, and the default entry.
            await sw.insert([fwd(0x0A, 2), fwd(0x0B, 3)])
            await sw.insert([fy.P4TableEntry("MyIngress.acl", match=fy.Match({
                "hdr.ipv4.srcAddr": (0x0A000000, 0xFF000000), "hdr.ipv4.dstAddr": "10.1.0.0/16"}),
                action=fy.Action("MyIngress.drop"), priority=5)])
            await sw.modify([fy.P4TableEntry("MyIngress.fwd", is_default_action=True,
                                             action=fy.Action("MyIngress.to_cpu"))])
            await sw.modify([fwd(0x0B, 4)])
            rows = [e async for e in sw.read(fy.P4TableEntry("MyIngress.fwd"))]
            # finsy decodes with the shortest unique names (P4Info aliases).
            assert sorted((e.match["dstAddr"], e.action.args["port"]) for e in rows) == [(0x0A, 2), (0x0B, 4)]
            (acl,) = [e async for e in sw.read(fy.P4TableEntry("MyIngress.acl"))]
            assert acl.priority == 5
            (dflt,) = [e async for e in sw.read(fy.P4TableEntry("MyIngress.fwd", is_default_action=True))]
            assert dflt.action.name == "to_cpu"
            everything = [e async for e in sw.read(fy.P4TableEntry())]
            # Three written entries and the program's one const entry (fixed: 17 -> NoAction).
            assert len(everything) == 4
            (const,) = [e for e in everything if e.is_const]
            assert const.table_id == "fixed" and const.match["protocol"] == 17
            # Indirect counter, direct counter, meter, register.
            await sw.modify([fy.P4CounterEntry("MyIngress.port_pkts", index=3,
                                               data=fy.P4CounterData(packet_count=5, byte_count=500))])
            (c,) = [e async for e in sw.read(fy.P4CounterEntry("MyIngress.port_pkts", index=3))]
            assert (c.data.packet_count, c.data.byte_count) == (5, 500)
            await sw.modify([fy.P4DirectCounterEntry("MyIngress.fwd", table_entry=fwd(0x0A, 2),
                                                     data=fy.P4CounterData(packet_count=7, byte_count=70))])
            (dc,) = [e async for e in sw.read(fy.P4DirectCounterEntry(
                "MyIngress.fwd", table_entry=fy.P4TableEntry("MyIngress.fwd", match=fy.Match({"hdr.ethernet.dstAddr": 0x0A}))))]
            assert dc.data.packet_count == 7
            await sw.modify([fy.P4MeterEntry("MyIngress.police", index=1,
                                             config=fy.P4MeterConfig(cir=1000, cburst=100, pir=2000, pburst=200))])
            (m,) = [e async for e in sw.read(fy.P4MeterEntry("MyIngress.police", index=1))]
            assert (m.config.cir, m.config.pir) == (1000, 2000)
            acl_key = fy.P4TableEntry("MyIngress.acl", match=fy.Match({
                "hdr.ipv4.srcAddr": (0x0A000000, 0xFF000000), "hdr.ipv4.dstAddr": "10.1.0.0/16"}), priority=5)
            await sw.modify([fy.P4DirectMeterEntry(table_entry=acl_key,
                                                   config=fy.P4MeterConfig(cir=500, cburst=50, pir=800, pburst=80))])
            (dm,) = [e async for e in sw.read(fy.P4DirectMeterEntry(table_entry=fy.P4TableEntry("MyIngress.acl")))]
            assert (dm.config.cir, dm.config.pburst) == (500, 80)
            await sw.modify([fy.P4RegisterEntry("MyIngress.state", index=2, data=0x1234)])
            (r,) = [e async for e in sw.read(fy.P4RegisterEntry("MyIngress.state", index=2))]
            assert r.data == 0x1234
            # Multicast group and clone session.
            await sw.insert([fy.P4MulticastGroupEntry(7, replicas=[1, 2, (3, 1)])])
            (g,) = [e async for e in sw.read(fy.P4MulticastGroupEntry())]
            assert g.multicast_group_id == 7 and len(g.replicas) == 3
            await sw.insert([fy.P4CloneSessionEntry(100, replicas=[CPU])])
            (s,) = [e async for e in sw.read(fy.P4CloneSessionEntry())]
            assert s.session_id == 100
            await sw.delete([fwd(0x0A, 2)])
            assert len([e async for e in sw.read(fy.P4TableEntry("MyIngress.fwd"))]) == 1
            return cfg_cookie

    run(go())


def test_error_codes_for_bad_requests(switch, pipeline):
    async def go():
        async with fy.Switch("s1", switch.address, opts(pipeline)) as sw:
            await sw.insert([fwd(0x0A, 2)])
            dup = await expect_error(sw.insert([fwd(0x0A, 2)]))
            assert dup.details[0].canonical_code == fy.GRPCStatusCode.ALREADY_EXISTS.value
            missing = await expect_error(sw.delete([fwd(0x0C, 2)]))
            assert missing.details[0].canonical_code == fy.GRPCStatusCode.NOT_FOUND.value
            # Width: a 9-bit port parameter given 10 bits, sent as raw protobuf.
            from finsy.proto import p4r

            req = p4r.WriteRequest(device_id=1)
            req.election_id.low = 10
            u = req.updates.add(type=p4r.Update.INSERT)
            te = u.entity.table_entry
            te.table_id = sw.p4info.tables["MyIngress.fwd"].id
            te.match.add(field_id=1).exact.value = b"\x0d"
            te.action.action.action_id = sw.p4info.actions["MyIngress.forward"].id
            te.action.action.params.add(param_id=1, value=b"\x02\x00")
            u2 = req.updates.add(type=p4r.Update.INSERT)
            u2.entity.table_entry.table_id = 0x02ABCDEF  # unknown table
            err = await expect_error(sw._p4client.request(req))
            assert err.code == fy.GRPCStatusCode.UNKNOWN
            assert [d.canonical_code for d in err.details.values()] == [
                fy.GRPCStatusCode.OUT_OF_RANGE.value, fy.GRPCStatusCode.NOT_FOUND.value]
            # A backup client may read but not write.
            async with fy.Switch("s1b", switch.address, opts(pipeline, election=5)) as backup:
                assert not backup.is_primary
                denied = await expect_error(backup.insert([fwd(0x0E, 2)]))
                assert denied.code == fy.GRPCStatusCode.PERMISSION_DENIED
                assert len([e async for e in backup.read(fy.P4TableEntry("MyIngress.fwd"))]) == 1

    run(go())


def test_packet_out_in_and_digests(switch, pipeline):
    async def go():
        async with fy.Switch("s1", switch.address, opts(pipeline)) as sw:
            await sw.insert([fy.P4DigestEntry("learn_t", max_list_size=1, max_timeout_ns=0, ack_timeout_ns=10**9)])
            frame = bytes.fromhex("0000000000020000000000a1" "88b5") + b"hello"
            # finsy registers a reader when its generator first runs: start both
            # readers and let them reach their first await before sending.
            next_packet = asyncio.ensure_future(anext(sw.read_packets()))
            next_digest = asyncio.ensure_future(anext(sw.read_digests("learn_t")))
            await asyncio.sleep(0)
            await sw.write([fy.P4PacketOut(frame, egress_port=CPU, _pad=0)])
            pin = await asyncio.wait_for(next_packet, 10)
            assert pin.payload == frame and pin["ingress_port"] == CPU
            dl = await asyncio.wait_for(next_digest, 10)
            assert [(d["mac"], d["port"]) for d in dl] == [(0xA1, CPU)]
            await sw.write([dl.ack()])

    run(go())


def test_get_pipeline_reports_what_was_pushed(switch, pipeline):
    async def go():
        async with fy.Switch("s1", switch.address, opts(pipeline)) as sw:
            cookie = sw.p4info.p4cookie
        async with fy.Switch("s2", switch.address, fy.SwitchOptions(device_id=1, initial_election_id=20)) as sw2:
            # No local P4Info: finsy fetches the switch's and can name its tables.
            assert "MyIngress.fwd" in [t.name for t in sw2.p4info.tables]
            reply = await sw2._get_pipeline_config_request()
            assert reply.config.cookie.cookie == cookie

    run(go())
