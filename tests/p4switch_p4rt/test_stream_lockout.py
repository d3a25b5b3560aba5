"""Streams that never arbitrate cannot lock a controller out of the switch.

Every P4Runtime client arbitrates first (spec 5.3).  A stream that does not
is closed after ``ARBITRATION_TIMEOUT_S``, and waiting streams never hold
more than ``MAX_PENDING`` slots, so a client that arbitrates always gets in.
"""

from __future__ import annotations

import time

import grpc
import pytest
from test_server_grpc import Client, primary, push, service  # noqa: F401

from finsy.proto.p4.v1 import p4runtime_pb2_grpc
from p4mcc.p4switch.p4rt import server as server_mod


def _silent_streams(port: int, count: int, per_channel: int = 64) -> tuple[list, list[Client]]:
    """``count`` streams that never arbitrate, each opened on the server before this returns."""
    first = server_mod._Stream._next
    channels, streams = [], []
    for i in range(0, count, per_channel):
        ch = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        channels.append(ch)
        streams += [Client(stub) for _ in range(min(per_channel, count - i))]
    deadline = time.monotonic() + 30
    while server_mod._Stream._next - first < count:
        assert time.monotonic() < deadline, "the server did not see every stream open"
        time.sleep(0.01)
    return channels, streams


@pytest.fixture
def port(service):  # noqa: F811
    _, _, stub, _ = service
    target = stub.channel._channel.target().decode()
    return int(target.rsplit(":", 1)[1])


def test_a_controller_gets_in_past_256_streams_that_never_arbitrate(service, port):  # noqa: F811
    _, servicer, stub, _ = service
    channels, silent = _silent_streams(port, server_mod.MAX_STREAMS)
    try:
        # every silent stream is open (or already closed for room); none arbitrated
        c = primary(stub, election=5)  # arbitrates and is made primary at once
        push(stub, election=5)
        pending = sum(1 for s in servicer._streams if not s.arbitrated)
        assert pending <= server_mod.MAX_PENDING
        c.close()
    finally:
        for s in silent:
            s.close()
        for ch in channels:
            ch.close()


def test_a_stream_that_never_arbitrates_is_closed_after_the_timeout(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    monkeypatch.setattr(server_mod, "ARBITRATION_TIMEOUT_S", 0.3)
    quiet = Client(stub)
    with pytest.raises(grpc.RpcError) as ei:
        quiet.recv(timeout=5.0)
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no MasterArbitrationUpdate within 0.3 s" in ei.value.details()
    # a stream that arbitrates in time stays open past the timeout
    c = primary(stub, election=2)
    with pytest.raises(TimeoutError):
        c.recv(timeout=0.6)
    c.close()


def test_one_peer_holds_at_most_its_share_of_waiting_streams(service, port):  # noqa: F811
    _, servicer, stub, _ = service
    channels, silent = _silent_streams(port, 3 * server_mod.MAX_PENDING_PER_PEER)
    try:
        c = primary(stub, election=3)
        waiting = [s for s in servicer._streams if not s.arbitrated]
        assert len(waiting) <= server_mod.MAX_PENDING_PER_PEER
        closed = 0
        for s in silent:
            try:
                s.recv(timeout=0.05)
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                closed += 1
            except TimeoutError:
                pass
        assert closed >= len(silent) - server_mod.MAX_PENDING_PER_PEER
        c.close()
    finally:
        for s in silent:
            s.close()
        for ch in channels:
            ch.close()


def test_peer_host_drops_the_port() -> None:
    assert server_mod.peer_host("ipv4:127.0.0.1:5123") == "ipv4:127.0.0.1"
    assert server_mod.peer_host("ipv6:[::1]:5123") == "ipv6:[::1]"
    assert server_mod.peer_host("unix:/tmp/s") == "unix:/tmp/s"
