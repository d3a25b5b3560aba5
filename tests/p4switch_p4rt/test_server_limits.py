"""The P4Runtime server under load and abuse: idle streams, a taken address,
oversized requests and metadata, and failed batches too large to report whole."""

from __future__ import annotations

import subprocess
import sys
import time

import grpc
import pytest
from test_server_grpc import FWD, Client, details, fwd_insert, primary, push, service, write  # noqa: F401

from finsy.proto import p4r
from p4mcc.p4switch.p4rt import device as device_mod
from p4mcc.p4switch.p4rt import server as server_mod
from switchproc import ROOT, SwitchProc


def test_a_stock_client_gets_every_detail_of_a_small_failed_batch(service):  # noqa: F811
    _, _, stub, _ = service
    c = primary(stub)
    push(stub)
    write(stub, fwd_insert(b"\x01"))
    batch = [fwd_insert(b"\x01") if i % 2 else fwd_insert(b"\x02", b"\xff\xff") for i in range(30)]
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, *batch)
    assert ei.value.code() == grpc.StatusCode.UNKNOWN
    assert [e.canonical_code for e in details(ei.value)] == [6 if i % 2 else 11 for i in range(30)]
    assert ei.value.details() == "Write failure."
    c.close()


def test_a_large_failed_batch_keeps_its_details_under_the_metadata_limit(service):  # noqa: F811
    """1000 failures: the spec's list is cut (a stock client would otherwise get
    a bare RESOURCE_EXHAUSTED); the prefix is exact and the message says the rest."""
    _, _, stub, _ = service
    c = primary(stub)
    push(stub)
    write(stub, fwd_insert(b"\x01"))
    batch = [fwd_insert(b"\x01") for _ in range(1000)]
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, *batch)
    assert ei.value.code() == grpc.StatusCode.UNKNOWN
    got = details(ei.value)
    assert 20 <= len(got) < 1000
    assert all(e.canonical_code == 6 and e.message for e in got)
    msg = ei.value.details()
    assert "1000 of 1000 updates failed" in msg and "the first at update 0 (ALREADY_EXISTS" in msg
    assert f"details cover updates 0-{len(got) - 1} only" in msg
    c.close()


def test_batch_failure_budget_holds_for_long_messages():
    results = [(3, "x" * 5000)] * 500 + [(0, "")] * 500
    err = server_mod.batch_failure(results)
    size = sum(a.ByteSize() + 3 for a in err.details)
    assert size <= server_mod.DETAILS_BUDGET
    assert all(len(a.value) < server_mod.ERROR_MESSAGE_CHARS + 16 for a in err.details)
    assert "500 of 1000 updates failed" in err.message


def test_too_many_streams_get_resource_exhausted(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    monkeypatch.setattr(server_mod, "MAX_STREAMS", 3)
    clients = [primary(stub, election=i) for i in (3, 2, 1)[:1]]
    for e in (2, 1):
        c = Client(stub, election=e)
        c.arbitrate()
        assert c.recv().arbitration.status.code == 6  # ALREADY_EXISTS: a backup
        clients.append(c)
    extra = Client(stub, election=9)
    extra.arbitrate()
    with pytest.raises(grpc.RpcError) as ei:
        extra.recv()
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # the service goes on for everybody else
    push(stub, election=3)
    for c in clients:
        c.close()


def test_an_oversized_request_gets_resource_exhausted(service):  # noqa: F811
    _, _, stub, _ = service
    c = primary(stub)
    push(stub)
    u = fwd_insert(b"\x05")
    u.entity.table_entry.metadata = bytes(server_mod.MAX_REQUEST_BYTES + 1)
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, u)
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    write(stub, fwd_insert(b"\x06"))  # and the service goes on
    c.close()


def test_entry_metadata_is_capped_per_entry_and_in_total(service, monkeypatch):  # noqa: F811
    dev, _, stub, _ = service
    c = primary(stub)
    push(stub)
    monkeypatch.setattr(device_mod, "MAX_METADATA_TOTAL", 2 * device_mod.MAX_METADATA_BYTES)
    big = fwd_insert(b"\x01")
    big.entity.table_entry.metadata = bytes(device_mod.MAX_METADATA_BYTES + 1)
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, big)
    assert [e.canonical_code for e in details(ei.value)] == [8]  # RESOURCE_EXHAUSTED
    assert "exceeds this switch's limit" in details(ei.value)[0].message
    full = []
    for i in range(3):
        u = fwd_insert(bytes([i + 1]))
        u.entity.table_entry.metadata = bytes(device_mod.MAX_METADATA_BYTES)
        full.append(u)
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, *full)
    assert [e.canonical_code for e in details(ei.value)] == [0, 0, 8]
    assert dev.pipeline.metadata_bytes == 2 * device_mod.MAX_METADATA_BYTES
    # deleting an entry gives its metadata back
    d = fwd_insert(b"\x01")
    d.type = p4r.Update.DELETE
    write(stub, d)
    write(stub, full[2])
    # and a read returns the metadata as written
    rows = [e for r in stub.Read(p4r.ReadRequest(device_id=7, entities=[p4r.Entity(table_entry=p4r.TableEntry(table_id=FWD))]))
            for e in r.entities]
    assert sorted(len(r.table_entry.metadata) for r in rows) == [device_mod.MAX_METADATA_BYTES] * 2
    c.close()


PROGRAM = ROOT / "tests" / "p4switch_p4rt" / "programs" / "l2.p4"


def group_insert(gid: int, ports=(1, 2)) -> p4r.Update:
    u = p4r.Update(type=p4r.Update.INSERT)
    mg = u.entity.packet_replication_engine_entry.multicast_group_entry
    mg.multicast_group_id = gid
    for port in ports:
        mg.replicas.add(egress_port=port, instance=0)
    return u


def test_a_hundred_idle_streams_leave_writes_and_reads_answered_within_a_second():
    """Each open StreamChannel holds a server thread for its lifetime; with a
    fixed pool, 32 of them used to starve every other RPC."""
    sp = SwitchProc(str(PROGRAM), "--cpu-port", "64", "--device-id", "1")
    channel = grpc.insecure_channel(sp.address)
    stub = server_mod.p4runtime_pb2_grpc.P4RuntimeStub(channel)
    streams = []
    try:
        for election in range(1, 101):
            c = Client(stub, device_id=1, election=election)
            c.arbitrate()
            c.recv(timeout=10)  # the server has taken the stream in
            streams.append(c)
        for gid in range(1, 6):
            t0 = time.monotonic()
            write(stub, group_insert(gid), election=100, device_id=1)
            got = [e for r in stub.Read(p4r.ReadRequest(device_id=1, entities=[p4r.Entity(
                packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
                    multicast_group_entry=p4r.MulticastGroupEntry()))]), timeout=1.0) for e in r.entities]
            took = time.monotonic() - t0
            assert len(got) == gid
            assert took < 1.0, f"Write+Read took {took:.2f} s with 100 open streams"
        stub.Capabilities(p4r.CapabilitiesRequest(), timeout=1.0)
    finally:
        for c in streams:
            c.close()
        channel.close()
        assert sp.stop() == 0


def test_a_second_switch_on_a_used_address_exits_with_one_clear_line():
    first = SwitchProc("--no-p4")
    try:
        r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "switch", "--no-p4", "--grpc-server-addr",
                            first.address], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr
        assert f"cannot listen on {first.address}: Address already in use" in lines[0]
        assert "serving P4Runtime" not in r.stdout
        # the first switch still answers
        with grpc.insecure_channel(first.address) as ch:
            server_mod.p4runtime_pb2_grpc.P4RuntimeStub(ch).Capabilities(p4r.CapabilitiesRequest(), timeout=5)
    finally:
        assert first.stop() == 0


@pytest.mark.parametrize("addr,needle", [
    ("nohost.invalid:1", "cannot resolve host 'nohost.invalid'"),
    (":80000", "give HOST:PORT"),
    ("127.0.0.1:80000", "port 80000 is outside 0..65535"),
    ("127.0.0.1:http", "port 'http' is not a number"),
])
def test_bad_grpc_addresses_get_one_clear_line(addr, needle, capsys):
    from p4mcc.cli.main import main

    assert main(["switch", "--no-p4", "--grpc-server-addr", addr]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_a_cpu_port_the_program_does_not_use_is_refused(capsys):
    from p4mcc.cli.main import main

    mcc = ROOT / "p4src" / "mcc.p4"
    rc = main(["switch", str(mcc), "-I", str(ROOT / "p4src" / "include"), "--cpu-port", "64",
               "--grpc-server-addr", "127.0.0.1:0"])
    assert rc == 1
    err = capsys.readouterr().err.strip()
    assert "--cpu-port 64 does not match the program's CPU_PORT 510" in err and "\n" not in err


def test_multicast_node_handles_stay_lowest_free_first():
    """BMv2's handle order survives the constant-time allocator large batches need."""
    from p4mcc.p4switch.runtime.pre import Pre

    pre = Pre()
    assert [pre.node_create(0, [1]) for _ in range(4)] == [0, 1, 2, 3]
    pre.node_destroy(2)
    pre.node_destroy(0)
    assert pre.node_create(0, [1]) == 0
    assert pre.node_create(0, [1]) == 2
    assert pre.node_create(0, [1]) == 4
    pre.set_group(7, [(1, 0), (2, 0), (3, 1)])  # two nodes: rid 0 and rid 1
    assert pre.replicate(7) == [(1, 0), (2, 0), (3, 1)]
    pre.delete_group(7)
    assert pre.node_create(0, [1]) == 5
