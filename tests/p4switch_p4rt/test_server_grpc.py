"""The gRPC service in process: statuses, error details, streams, and no crash on garbage."""

from __future__ import annotations

import queue
import threading

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finsy.proto import p4r, rpc_status
from finsy.proto.p4.v1 import p4runtime_pb2_grpc
from p4rt_fakes import fake_builder

from p4mcc.p4switch.p4rt.device import Device
from p4mcc.p4switch.p4rt.server import serve

FWD, FORWARD = 33554433, 16777217
LEARN = 385875969


@pytest.fixture
def service():
    dev = Device(7, fake_builder(cpu_port=64), cpu_port=64)
    injected: list[bytes] = []
    server, servicer, port = serve(dev, "127.0.0.1:0", inject=injected.append, max_workers=16)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stub.channel = channel
    yield dev, servicer, stub, injected
    servicer.close()
    channel.close()
    server.stop(0).wait()


class Client:
    """A StreamChannel with a blocking ``recv``."""

    def __init__(self, stub, device_id=7, election=1):
        self.q: queue.Queue = queue.Queue()
        self.responses = stub.StreamChannel(iter(self.q.get, None))
        self.election = election
        self.device_id = device_id

    def arbitrate(self, election=None):
        if election is not None:
            self.election = election
        m = p4r.StreamMessageRequest()
        m.arbitration.device_id = self.device_id
        m.arbitration.election_id.low = self.election
        self.q.put(m)

    def recv(self, timeout=5.0):
        box: list = []

        def get():
            try:
                box.append(next(self.responses))
            except BaseException as e:  # re-raised in the caller's thread
                box.append(e)

        t = threading.Thread(target=get, daemon=True)
        t.start()
        t.join(timeout)
        if not box:
            raise TimeoutError("no stream message")
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def close(self):
        self.q.put(None)


def primary(stub, election=1):
    c = Client(stub, election=election)
    c.arbitrate()
    msg = c.recv()
    assert msg.arbitration.status.code == 0
    return c


def push(stub, election=1):
    req = p4r.SetForwardingPipelineConfigRequest(device_id=7, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = election
    req.config.p4_device_config = b"program"
    stub.SetForwardingPipelineConfig(req)


def write(stub, *updates, election=1, device_id=7):
    req = p4r.WriteRequest(device_id=device_id)
    req.election_id.low = election
    req.updates.extend(updates)
    return stub.Write(req)


def fwd_insert(mac: bytes, port: bytes = b"\x02") -> p4r.Update:
    u = p4r.Update(type=p4r.Update.INSERT)
    e = u.entity.table_entry
    e.table_id = FWD
    e.match.add(field_id=1).exact.value = mac
    e.action.action.action_id = FORWARD
    e.action.action.params.add(param_id=1, value=port)
    return u


def details(err: grpc.RpcError) -> list[p4r.Error]:
    for k, v in err.trailing_metadata() or ():
        if k == "grpc-status-details-bin":
            st_ = rpc_status.Status.FromString(v)
            out = []
            for a in st_.details:
                e = p4r.Error()
                a.Unpack(e)
                out.append(e)
            return out
    return []


def test_capabilities(service):
    _, _, stub, _ = service
    assert stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")


def test_requests_before_pipeline_and_without_primary(service):
    _, _, stub, _ = service
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, fwd_insert(b"\x01"))
    assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
    c = primary(stub)
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, fwd_insert(b"\x01"))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as ei:
        stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=7))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "forwarding pipeline config" in ei.value.details()
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, fwd_insert(b"\x01"), device_id=99)
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    c.close()


def test_batch_reports_one_error_per_update(service):
    _, _, stub, _ = service
    c = primary(stub)
    push(stub)
    write(stub, fwd_insert(b"\x01"))
    bad_width = fwd_insert(b"\x02", b"\xff\xff")
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, fwd_insert(b"\x03"), fwd_insert(b"\x01"), bad_width)
    assert ei.value.code() == grpc.StatusCode.UNKNOWN
    assert [e.canonical_code for e in details(ei.value)] == [0, 6, 11]  # OK, ALREADY_EXISTS, OUT_OF_RANGE
    rows = [e for r in stub.Read(p4r.ReadRequest(device_id=7, entities=[p4r.Entity(table_entry=p4r.TableEntry())]))
            for e in r.entities]
    assert sorted(r.table_entry.match[0].exact.value for r in rows if r.table_entry.table_id == FWD) == [b"\x01", b"\x03"]
    c.close()


def test_backup_cannot_write_and_primary_leaving_leaves_no_primary(service):
    _, _, stub, _ = service
    a = primary(stub, election=10)
    push(stub, election=10)
    b = Client(stub, election=5)
    b.arbitrate()
    assert b.recv().arbitration.status.code == 6  # ALREADY_EXISTS: backup
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, fwd_insert(b"\x01"), election=5)
    assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
    a.close()
    note = b.recv()
    assert note.arbitration.status.code == 5 and note.arbitration.election_id.low == 10  # NOT_FOUND
    b.arbitrate(11)
    assert b.recv().arbitration.status.code == 0
    write(stub, fwd_insert(b"\x01"), election=11)
    b.close()


def test_duplicate_election_id_closes_the_stream(service):
    _, _, stub, _ = service
    a = primary(stub, election=3)
    b = Client(stub, election=3)
    b.arbitrate()
    with pytest.raises(grpc.RpcError) as ei:
        b.recv()
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    a.close()


def test_packet_out_in_and_errors(service):
    dev, servicer, stub, injected = service
    c = primary(stub)
    push(stub)
    m = p4r.StreamMessageRequest()
    m.packet.payload = b"abc"
    m.packet.metadata.add(metadata_id=1, value=b"\x02")
    c.q.put(m)
    m2 = p4r.StreamMessageRequest()
    m2.packet.payload = b"x"
    m2.packet.metadata.add(metadata_id=9, value=b"\x02")
    c.q.put(m2)
    err = c.recv()
    assert err.error.canonical_code == 3 and err.error.packet_out.packet_out.payload == b"x"
    assert injected == [bytes([0x01, 0x00]) + b"abc"]
    servicer.packet_in(bytes([5 >> 1, (5 & 1) << 7]) + b"payload")
    pi = c.recv()
    assert pi.packet.payload == b"payload" and pi.packet.metadata[0].value == b"\x05"
    c.close()


def test_digest_list_on_the_stream(service):
    dev, _, stub, _ = service
    c = primary(stub)
    push(stub)
    u = p4r.Update(type=p4r.Update.INSERT)
    u.entity.digest_entry.digest_id = LEARN
    u.entity.digest_entry.config.max_list_size = 1
    write(stub, u)
    dev.pipeline.switch.process(3, b"\xfe" + bytes([0, 0, 0, 0, 0, 9]))
    msg = c.recv()
    assert msg.digest.digest_id == LEARN and msg.digest.list_id == 1
    assert [m.bitstring for m in msg.digest.data[0].struct.members] == [b"\x09", b"\x03"]
    ack = p4r.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = LEARN, 1
    c.q.put(ack)
    c.close()


# ---------------------------------------------------------------------------
# Robustness: any bytes, any well-formed-but-nonsense message, at every RPC.
# ---------------------------------------------------------------------------

_RPCS = [
    ("Write", p4r.WriteRequest, p4r.WriteResponse),
    ("Read", p4r.ReadRequest, p4r.ReadResponse),
    ("SetForwardingPipelineConfig", p4r.SetForwardingPipelineConfigRequest, p4r.SetForwardingPipelineConfigResponse),
    ("GetForwardingPipelineConfig", p4r.GetForwardingPipelineConfigRequest, p4r.GetForwardingPipelineConfigResponse),
    ("Capabilities", p4r.CapabilitiesRequest, p4r.CapabilitiesResponse),
]


def _repeated(f) -> bool:
    rep = getattr(f, "is_repeated", None)
    return bool(rep) if rep is not None else f.label == f.LABEL_REPEATED


def _random_message(draw, cls, depth=0):
    """A random instance of ``cls``: random scalars, random submessages, repeated fields."""
    msg = cls()
    for f in cls.DESCRIPTOR.fields:
        if not draw(st.booleans()):
            continue
        n = draw(st.integers(0, 2)) if _repeated(f) else 1
        for _ in range(n):
            if f.type == f.TYPE_MESSAGE:
                if depth > 4:
                    continue
                sub = _random_message(draw, f.message_type._concrete_class, depth + 1)
                if _repeated(f):
                    if f.message_type.GetOptions().map_entry:
                        continue
                    getattr(msg, f.name).add().CopyFrom(sub)
                else:
                    getattr(msg, f.name).CopyFrom(sub)
                continue
            if f.type in (f.TYPE_BYTES,):
                v = draw(st.binary(max_size=8))
            elif f.type == f.TYPE_STRING:
                v = draw(st.text(max_size=4))
            elif f.type == f.TYPE_BOOL:
                v = draw(st.booleans())
            elif f.type == f.TYPE_ENUM:
                v = draw(st.sampled_from([x.number for x in f.enum_type.values]))
            elif f.type in (f.TYPE_INT32, f.TYPE_SINT32, f.TYPE_SFIXED32):
                v = draw(st.integers(-(2**31), 2**31 - 1))
            elif f.type in (f.TYPE_INT64, f.TYPE_SINT64, f.TYPE_SFIXED64):
                v = draw(st.integers(-(2**63), 2**63 - 1))
            elif f.type in (f.TYPE_UINT32, f.TYPE_FIXED32):
                v = draw(st.sampled_from([0, 1, 7, FWD, FORWARD, LEARN, 33554434, 2**32 - 1]))
            elif f.type in (f.TYPE_UINT64, f.TYPE_FIXED64):
                v = draw(st.sampled_from([0, 1, 7, 2**64 - 1]))
            elif f.type in (f.TYPE_DOUBLE, f.TYPE_FLOAT):
                v = draw(st.floats(allow_nan=False, width=32))
            else:
                continue
            if _repeated(f):
                getattr(msg, f.name).append(v)
            else:
                setattr(msg, f.name, v)
    return msg


@st.composite
def requests(draw):
    name, req_cls, resp_cls = draw(st.sampled_from(_RPCS))
    if draw(st.integers(0, 4)) == 0:
        payload = draw(st.binary(max_size=64))  # raw garbage on the wire
    else:
        payload = _random_message(draw, req_cls).SerializeToString()
    return name, payload, resp_cls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reqs=st.lists(requests(), min_size=1, max_size=4))
def test_random_requests_never_break_the_service(service, reqs):
    dev, _, stub, _ = service
    c = getattr(test_random_requests_never_break_the_service, "_client", None)
    if dev.pipeline is None:
        c = primary(stub)
        push(stub)
        test_random_requests_never_break_the_service._client = c  # type: ignore[attr-defined]
    ch = stub.channel  # the raw channel lets us send arbitrary bytes
    for name, payload, resp_cls in reqs:
        path = f"/p4.v1.P4Runtime/{name}"
        if name == "Read":
            call = ch.unary_stream(path, request_serializer=None, response_deserializer=resp_cls.FromString)
            try:
                list(call(payload, timeout=5))
            except grpc.RpcError as e:
                assert e.code() != grpc.StatusCode.UNAVAILABLE
        else:
            call = ch.unary_unary(path, request_serializer=None, response_deserializer=resp_cls.FromString)
            try:
                call(payload, timeout=5)
            except grpc.RpcError as e:
                assert e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL), e.details()
    # The service still answers and still holds a pipeline.
    assert stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_stream_messages_never_break_the_service(service, data):
    dev, _, stub, _ = service
    if dev.pipeline is None:
        c = primary(stub, election=99)
        push(stub, election=99)
        test_random_stream_messages_never_break_the_service._client = c  # type: ignore[attr-defined]
    msgs = []
    for _ in range(data.draw(st.integers(1, 4))):
        if data.draw(st.integers(0, 3)) == 0:
            msgs.append(data.draw(st.binary(max_size=48)))
        else:
            msgs.append(_random_message(data.draw, p4r.StreamMessageRequest).SerializeToString())
    call = stub.channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=None,
                                      response_deserializer=p4r.StreamMessageResponse.FromString)
    responses = call(iter(msgs), timeout=5)
    try:
        for _ in responses:
            pass
    except grpc.RpcError as e:
        assert e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), e.details()
    # The service survives and still serves its pipeline.
    assert stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version
    list(stub.Read(p4r.ReadRequest(device_id=7, entities=[p4r.Entity(table_entry=p4r.TableEntry())])))
