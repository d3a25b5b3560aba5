"""The P4Runtime gRPC service of the built-in switch.

Each RPC checks what the spec asks in the order it asks (device id, then
primary, then pipeline), then hands the work to :class:`~.device.Device`.
Every handler is wrapped so that *any* exception becomes a status: a
malformed request can cost its sender an error, never the switch its
service.

Stream channels: each client stream gets an outgoing queue drained by the
RPC's response generator; a reader thread consumes the client's messages.
PacketIn and DigestList go to the primary client(s) only.

Limits (docs/p4runtime.md, "Limits"): RPCs run on an
:class:`~.workers.ElasticExecutor`, so open streams never leave a Write or a
Read waiting for a thread; at most :data:`MAX_STREAMS` streams are open at
once (the spec's ``RESOURCE_EXHAUSTED`` beyond), and streams that never
arbitrate are closed after :data:`ARBITRATION_TIMEOUT_S` and can never hold
more than :data:`MAX_PENDING` of those slots; backups hold at most
:data:`MAX_BACKUPS` slots and are closed after :data:`BACKUP_IDLE_S` without a
message, and roles are capped at :data:`MAX_ROLES`, so the slots left over
always admit a controller that arbitrates to be primary; requests are capped at
:data:`MAX_REQUEST_BYTES`; a failed batch's per-update details are cut to
what a stock gRPC client accepts; the listening address is never shared
with another server.
"""

from __future__ import annotations

import errno
import logging
import queue
import socket
import threading
import time
from typing import Any, Callable, Iterator

import grpc
from google.protobuf import any_pb2

from finsy.proto import p4r, rpc_status
from finsy.proto.p4.v1 import p4runtime_pb2_grpc

from .arbitration import Arbiter, Notice
from .device import Device
from .errors import Code, P4RTError
from .workers import ElasticExecutor

LOG = logging.getLogger("p4mcc.p4switch.p4rt")

API_VERSION = "1.4.0"
READ_BATCH = 1000
STREAM_QUEUE = 4096
MAX_STREAMS = 256
"""Open StreamChannels at once; the spec answers more with RESOURCE_EXHAUSTED."""
ARBITRATION_TIMEOUT_S = 5.0
"""A stream that has sent no MasterArbitrationUpdate this long after opening
is closed: every P4Runtime client arbitrates first (spec 5.3), so a stream
that does not only holds a slot."""
MAX_PENDING = 32
"""Streams waiting for their arbitration, from all peers together.  A new
stream beyond it closes the oldest waiting one, so waiting streams can never
fill :data:`MAX_STREAMS`: there is always room for a client that arbitrates."""
MAX_PENDING_PER_PEER = 8
"""Streams waiting for their arbitration from one peer address; a new one
beyond it closes that peer's oldest waiting stream first."""
MAX_ROLES = 16
"""Roles with live clients at once.  Each role has its own primary, so a
bound on roles bounds the primaries; a new role beyond it gets RESOURCE_EXHAUSTED."""
MAX_BACKUPS = MAX_STREAMS - MAX_PENDING - MAX_ROLES
"""Streams that arbitrated without becoming primary, from all roles together.
Waiting streams (at most :data:`MAX_PENDING`), primaries (at most one per
role) and backups then fit in :data:`MAX_STREAMS` together, so a controller's
new stream always opens and, arbitrating with an election id at least the
highest seen, always becomes primary.  A new backup beyond the bound gets
RESOURCE_EXHAUSTED; a primary whose arrival demotes the old one past it
closes the backup idle the longest."""
BACKUP_IDLE_S = 60.0
"""A backup that sends nothing for this long is closed: it can write nothing,
so a backup that wants to stay re-sends its MasterArbitrationUpdate (the
spec allows it at any time) at least this often."""
MAX_UNARY = 256
"""Unary and Read RPCs in progress at once, on top of the streams (gRPC refuses more)."""
MAX_REQUEST_BYTES = 32 << 20
"""Largest request accepted (the spec asks for at least gRPC's default 4 MB;
a P4 source bundle or a 20k-update batch is far below this)."""
DETAILS_BUDGET = 4096
"""Bytes of serialised ``google.rpc.Status`` sent with a failed batch.  gRPC
clients accept 8 KiB of metadata by default (the spec's "gRPC Metadata
Maximum Size"); binary metadata travels base64-encoded (4/3) next to the
status line and message, so 4 KiB of status keeps well inside it."""
ERROR_MESSAGE_CHARS = 120
"""Longest per-update error message sent in the details."""


def _u128(msg: Any) -> int:
    return (msg.high << 64) | msg.low


class _Stream:
    """One client's StreamChannel."""

    _next = 0

    def __init__(self, peer: str = "") -> None:
        _Stream._next += 1
        self.n = _Stream._next
        self.peer = peer
        self.out: queue.Queue[Any] = queue.Queue(maxsize=STREAM_QUEUE)
        self.arbitrated = False
        self.closed = False  # given up by the server; its messages are ignored
        self.idle_since = time.monotonic()  # last client message, or demotion to backup
        self.dropped = 0

    def close_with(self, code: Code, message: str) -> None:
        """End the stream with a status, even when its queue is full."""
        try:
            self.out.put_nowait(P4RTError(code, message))
        except queue.Full:
            with self.out.mutex:
                self.out.queue.clear()
            self.out.put_nowait(P4RTError(code, message))

    def send(self, msg: Any) -> None:
        try:
            self.out.put_nowait(msg)
        except queue.Full:
            self.dropped += 1  # a slow client loses stream messages, the switch stays up

    def __hash__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"<stream {self.n}>"


_CLOSE = object()


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime service over one :class:`Device`."""

    def __init__(self, device: Device, inject: Callable[[bytes], None] | None = None) -> None:
        self.device = device
        self.arbiter = Arbiter(device.device_id)
        self.inject = inject
        self._lock = threading.Lock()  # arbitration and stream set
        self._streams: set[_Stream] = set()
        self._digest_cv = threading.Condition()
        self._stop = False
        self._digest_thread = threading.Thread(target=self._digest_loop, name="p4rt-digests", daemon=True)
        self._digest_thread.start()
        device.on_digest_ready = self.digests_pending
        self.stats = {"packet_out": 0, "packet_in": 0, "digest_lists": 0, "rpc_errors": 0}

    def close(self) -> None:
        self._stop = True
        with self._digest_cv:
            self._digest_cv.notify()
        with self._lock:
            for s in self._streams:
                s.send(_CLOSE)

    # -- helpers ----------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RTError(Code.NOT_FOUND, f"unknown device id {device_id} (this switch is {self.device.device_id})")

    def _check_primary(self, device_id: int, role: str, request: Any) -> None:
        election = _u128(request.election_id) if request.HasField("election_id") else None
        with self._lock:
            self.arbiter.check_write(device_id, role, election)

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: P4RTError, details: list[Any] | None = None) -> None:
        if details is not None:
            st = rpc_status.Status(code=int(err.code), message=err.message)
            st.details.extend(details)
            context.set_trailing_metadata((("grpc-status-details-bin", st.SerializeToString()),))
        context.abort(err.code.grpc, err.message)

    def _guard(self, context: grpc.ServicerContext, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except P4RTError as e:
            self.stats["rpc_errors"] += 1
            self._abort(context, e, getattr(e, "details", None))
        except Exception as e:  # never let a request take the service down
            LOG.exception("internal error while handling a request")
            self.stats["rpc_errors"] += 1
            self._abort(context, P4RTError(Code.INTERNAL, f"internal error: {type(e).__name__}: {e}"))

    # -- unary RPCs --------------------------------------------------------

    def Capabilities(self, request: p4r.CapabilitiesRequest, context: grpc.ServicerContext) -> p4r.CapabilitiesResponse:
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request: p4r.SetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext) -> p4r.SetForwardingPipelineConfigResponse:
        def run() -> p4r.SetForwardingPipelineConfigResponse:
            self._check_device(request.device_id)
            self._check_primary(request.device_id, request.role, request)
            cfg = request.config if request.HasField("config") else None
            self.device.set_pipeline(request.action, cfg)
            return p4r.SetForwardingPipelineConfigResponse()

        return self._guard(context, run)

    def GetForwardingPipelineConfig(self, request: p4r.GetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext) -> p4r.GetForwardingPipelineConfigResponse:
        def run() -> p4r.GetForwardingPipelineConfigResponse:
            self._check_device(request.device_id)
            self.device.require_pipeline()
            return p4r.GetForwardingPipelineConfigResponse(config=self.device.get_pipeline(request.response_type))

        return self._guard(context, run)

    def Write(self, request: p4r.WriteRequest, context: grpc.ServicerContext) -> p4r.WriteResponse:
        def run() -> p4r.WriteResponse:
            self._check_device(request.device_id)
            self._check_primary(request.device_id, request.role, request)
            self.device.require_pipeline()
            if request.atomicity != p4r.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(Code.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
            # The device lock is taken per update, not for the batch: with
            # CONTINUE_ON_ERROR the spec makes no promise about what packets see
            # mid-batch, and packets keep flowing between two updates.
            results: list[tuple[int, str]] = []
            for upd in request.updates:
                self.device.yield_to_packets()
                try:
                    self.device.write_update(upd)
                    results.append((0, ""))
                except P4RTError as e:
                    results.append((int(e.code), e.message))
                except Exception as e:  # a bug must not cost the batch its report
                    LOG.exception("internal error in a write update")
                    results.append((int(Code.INTERNAL), f"{type(e).__name__}: {e}"))
            if any(code for code, _ in results):
                raise batch_failure(results)
            return p4r.WriteResponse()

        return self._guard(context, run)

    def Read(self, request: p4r.ReadRequest, context: grpc.ServicerContext) -> Iterator[p4r.ReadResponse]:
        def collect() -> list[p4r.Entity]:
            self._check_device(request.device_id)
            self.device.require_pipeline()
            out: list[p4r.Entity] = []
            for ent in request.entities:
                out.extend(self.device.read(ent))
            return out

        entities = self._guard(context, collect)
        for i in range(0, len(entities), READ_BATCH):
            yield p4r.ReadResponse(entities=entities[i : i + READ_BATCH])
        if not entities:
            yield p4r.ReadResponse()

    # -- stream channel ---------------------------------------------------

    def StreamChannel(self, request_iterator: Iterator[p4r.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[p4r.StreamMessageResponse]:
        stream = _Stream(peer_host(context.peer()))
        with self._lock:
            evicted = self._make_room(stream.peer)
            full = len(self._streams) >= MAX_STREAMS
            if not full:
                self._streams.add(stream)
        for old in evicted:
            old.close_with(Code.RESOURCE_EXHAUSTED,
                           "closed unarbitrated: too many streams waiting for their arbitration")
        if full:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"this switch serves at most {MAX_STREAMS} open streams")
        context.add_callback(lambda: stream.send(_CLOSE))
        reader = threading.Thread(target=self._read_stream, args=(request_iterator, stream),
                                  name=f"p4rt-stream-{stream.n}", daemon=True)
        reader.start()
        deadline = time.monotonic() + ARBITRATION_TIMEOUT_S
        try:
            while True:
                try:
                    item = stream.out.get(timeout=self._wait_s(stream, deadline))
                except queue.Empty:
                    if not stream.arbitrated:
                        context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                      f"no MasterArbitrationUpdate within {ARBITRATION_TIMEOUT_S:g} s")
                    if self._close_if_idle_backup(stream):
                        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                      f"closed: a backup silent for {BACKUP_IDLE_S:g} s "
                                      "(re-send the arbitration update to stay)")
                    continue
                if item is _CLOSE:
                    return
                if isinstance(item, P4RTError):
                    context.abort(item.code.grpc, item.message)
                yield item
        finally:
            with self._lock:
                self._streams.discard(stream)
                notices = self.arbiter.remove(stream)
            self._deliver(notices)

    def _wait_s(self, stream: _Stream, deadline: float) -> float | None:
        """How long the stream's sender may wait for its next message: until
        the arbitration deadline, until a backup's idle bound, or for good
        (a primary; a demotion wakes it with its notice)."""
        now = time.monotonic()
        if not stream.arbitrated:
            return max(0.0, deadline - now)
        with self._lock:
            if self.arbiter.is_primary(stream):
                return None
        return max(0.0, stream.idle_since + BACKUP_IDLE_S - now)

    def _close_if_idle_backup(self, stream: _Stream) -> bool:
        """Release the slot of a backup past its idle bound; True if it was."""
        with self._lock:
            if (stream in self.arbiter.streams and not self.arbiter.is_primary(stream)
                    and time.monotonic() - stream.idle_since >= BACKUP_IDLE_S):
                self._drop(stream)
                return True
        return False

    def _drop(self, stream: _Stream) -> None:
        """Forget a backup or waiting stream at once (lock held), so its slot is free now."""
        stream.closed = True
        self._streams.discard(stream)
        self.arbiter.remove(stream)  # a backup's leaving notifies nobody

    def _arbitrate(self, stream: _Stream, device_id: int, role: str,
                   election: int | None) -> tuple[list[Notice], list[_Stream]]:
        """Arbitration with the slot bounds (lock held): the notices to send
        and the backups closed to make room for a new primary."""
        if stream not in self.arbiter.streams:
            roles = self.arbiter.live_roles()
            if role not in roles and len(roles) >= MAX_ROLES:
                raise P4RTError(Code.RESOURCE_EXHAUSTED, f"this switch serves at most {MAX_ROLES} roles at once")
            if not self.arbiter.becomes_primary(role, election) and len(self.arbiter.backups()) >= MAX_BACKUPS:
                raise P4RTError(Code.RESOURCE_EXHAUSTED,
                                f"this switch holds at most {MAX_BACKUPS} backup streams; "
                                "an election id at least the highest seen still gets in")
        before = set(self.arbiter.primary_streams())
        notices = self.arbiter.update(stream, device_id, role, election)
        now = time.monotonic()
        for demoted in before.difference(self.arbiter.primary_streams()):
            demoted.idle_since = now  # type: ignore[attr-defined]
        backups = self.arbiter.backups()
        excess = max(0, len(backups) - MAX_BACKUPS)
        evicted = sorted(backups, key=lambda s: s.idle_since)[:excess]  # type: ignore[attr-defined]
        for old in evicted:
            self._drop(old)  # type: ignore[arg-type]
        notices = [n for n in notices if n.stream not in evicted]
        return notices, evicted  # type: ignore[return-value]

    def _make_room(self, peer: str) -> list[_Stream]:
        """Waiting streams to close so a new one from ``peer`` fits (lock held).

        Only streams that never arbitrated are closed, oldest first: the
        peer's own beyond :data:`MAX_PENDING_PER_PEER`, anyone's beyond
        :data:`MAX_PENDING`, and one more when every slot is taken."""
        pending = sorted((s for s in self._streams if not s.arbitrated), key=lambda s: s.n)
        out: list[_Stream] = []
        mine = [s for s in pending if s.peer == peer]
        if len(mine) >= MAX_PENDING_PER_PEER:
            out.append(mine[0])
        elif len(pending) >= MAX_PENDING or (len(self._streams) >= MAX_STREAMS and pending):
            out.append(pending[0])
        for s in out:
            self._drop(s)
        return out

    def _read_stream(self, it: Iterator[p4r.StreamMessageRequest], stream: _Stream) -> None:
        try:
            for req in it:
                stream.idle_since = time.monotonic()
                try:
                    self._on_stream_message(req, stream)
                except P4RTError as e:
                    stream.send(e)  # closes the stream with this status
                    return
                except Exception:
                    LOG.exception("internal error on a stream message")
                    stream.send(p4r.StreamMessageResponse(error=p4r.StreamError(
                        canonical_code=int(Code.INTERNAL), message="internal error", other=p4r.StreamOtherError())))
        except Exception:
            pass  # the client went away
        finally:
            stream.send(_CLOSE)

    def _on_stream_message(self, req: p4r.StreamMessageRequest, stream: _Stream) -> None:
        if isinstance(req, Malformed):
            stream.send(p4r.StreamMessageResponse(error=p4r.StreamError(
                canonical_code=int(Code.INVALID_ARGUMENT), message=req.message, other=p4r.StreamOtherError())))
            return
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            a = req.arbitration
            election = _u128(a.election_id) if a.HasField("election_id") else None
            role = a.role.name if a.HasField("role") else ""
            with self._lock:
                if stream.closed:
                    return
                notices, evicted = self._arbitrate(stream, a.device_id, role, election)
                stream.arbitrated = True  # under the lock: _make_room never drops an arbitrated stream
            for old in evicted:
                old.close_with(Code.RESOURCE_EXHAUSTED, f"closed: the backup idle longest gives its slot to a new "
                                                        f"primary ({MAX_BACKUPS} backup slots)")
            self._deliver(notices)
            return
        if not stream.arbitrated:
            raise P4RTError(Code.FAILED_PRECONDITION, "the first stream message must be a MasterArbitrationUpdate")
        if kind == "packet":
            self._packet_out(req.packet, stream)
        elif kind == "digest_ack":
            try:
                self.device.ack_digest(req.digest_ack)
            except P4RTError as e:
                stream.send(p4r.StreamMessageResponse(error=p4r.StreamError(
                    canonical_code=int(e.code), message=e.message,
                    digest_list_ack=p4r.DigestListAckError(digest_list_ack=req.digest_ack))))
        else:
            stream.send(p4r.StreamMessageResponse(error=p4r.StreamError(
                canonical_code=int(Code.UNIMPLEMENTED), message=f"stream message {kind} is not supported",
                other=p4r.StreamOtherError(other=req.other) if kind == "other" else p4r.StreamOtherError())))

    def _packet_out(self, po: p4r.PacketOut, stream: _Stream) -> None:
        def err(code: Code, message: str) -> None:
            stream.send(p4r.StreamMessageResponse(error=p4r.StreamError(
                canonical_code=int(code), message=message, packet_out=p4r.PacketOutError(packet_out=po))))

        with self._lock:
            primary = self.arbiter.is_primary(stream)
        if not primary:
            err(Code.PERMISSION_DENIED, "only the primary client may send packets")
            return
        if self.inject is None or self.device.cpu_port is None:
            err(Code.FAILED_PRECONDITION, "this switch has no CPU port (start it with --cpu-port)")
            return
        try:
            frame = self.device.packet_out_frame(po)
        except P4RTError as e:
            err(e.code, e.message)
            return
        self.stats["packet_out"] += 1
        self.inject(frame)

    def _deliver(self, notices: list[Notice]) -> None:
        for n in notices:
            msg = p4r.StreamMessageResponse()
            a = msg.arbitration
            a.device_id = self.device.device_id
            if n.role:
                a.role.name = n.role
            if n.election_id is not None:
                a.election_id.high = n.election_id >> 64
                a.election_id.low = n.election_id & 0xFFFFFFFFFFFFFFFF
            a.status.code = int(n.code)
            a.status.message = {Code.OK: "primary", Code.ALREADY_EXISTS: "backup",
                                Code.NOT_FOUND: "no primary"}.get(n.code, "")
            n.stream.send(msg)  # type: ignore[attr-defined]

    def _to_primaries(self, msg: p4r.StreamMessageResponse) -> None:
        with self._lock:
            targets = list(self.arbiter.primary_streams())
        for s in targets:
            s.send(msg)  # type: ignore[attr-defined]

    # -- data plane to controller -----------------------------------------

    def packet_in(self, frame: bytes) -> None:
        """Called by the data plane for every frame sent to the CPU port."""
        pi = self.device.packet_in(frame)
        if pi is None:
            return
        self.stats["packet_in"] += 1
        self._to_primaries(p4r.StreamMessageResponse(packet=pi))

    def digests_pending(self) -> None:
        """Wake the digest thread (the data plane produced a digest)."""
        with self._digest_cv:
            self._digest_cv.notify()

    def _digest_loop(self) -> None:
        wake: float | None = None
        while not self._stop:
            with self._digest_cv:
                timeout = None if wake is None else max(0.0, wake - self.device.clock())
                self._digest_cv.wait(timeout=timeout)
            if self._stop:
                return
            try:
                lists, wake = self.device.poll_digests()
            except Exception:
                LOG.exception("digest delivery failed")
                lists, wake = [], None
            for dl in lists:
                self.stats["digest_lists"] += 1
                self._to_primaries(p4r.StreamMessageResponse(digest=dl))


def _packed(code: int, message: str) -> any_pb2.Any:
    a = any_pb2.Any()
    if len(message) > ERROR_MESSAGE_CHARS:
        message = message[: ERROR_MESSAGE_CHARS - 3] + "..."
    a.Pack(p4r.Error(canonical_code=code, message=message) if code else p4r.Error(canonical_code=0))
    return a


def batch_failure(results: list[tuple[int, str]], budget: int | None = None) -> P4RTError:
    """The UNKNOWN status of a batch with failed updates, per the spec's Write
    error reporting: one ``p4.v1.Error`` per update, in update order.

    When the whole list does not fit ``budget`` bytes (a stock client would
    see a bare RESOURCE_EXHAUSTED instead, with no detail at all), the list
    is cut after the last update that fits, and the status message says so,
    with the number of failures and the first failure's index and reason.
    """
    budget = DETAILS_BUDGET if budget is None else budget
    failures = [(i, c, m) for i, (c, m) in enumerate(results) if c]
    details: list[any_pb2.Any] = []
    used = 0
    for code, message in results:
        a = _packed(code, message)
        size = a.ByteSize() + 3  # field tag and length of the repeated entry
        if used + size > budget:
            break
        details.append(a)
        used += size
    message = "Write failure."
    if len(details) < len(results):
        i, c, m = failures[0]
        m = m if len(m) <= ERROR_MESSAGE_CHARS else m[: ERROR_MESSAGE_CHARS - 3] + "..."
        message = (f"Write failure: {len(failures)} of {len(results)} updates failed, the first at update {i} "
                   f"({Code(c).name}: {m}); details cover updates 0-{len(details) - 1} only "
                   "(the full list exceeds gRPC's default metadata size)")
    err = P4RTError(Code.UNKNOWN, message)
    err.details = details  # type: ignore[attr-defined]
    return err


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) checked before gRPC sees it: a bad
    port or an unknown host is one clear ValueError, never a traceback or a
    port gRPC silently wraps (80000 -> 14464)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--grpc-server-addr {text!r}: give HOST:PORT, e.g. 127.0.0.1:9559")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--grpc-server-addr {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--grpc-server-addr {text!r}: port {port} is outside 0..65535")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise ValueError(f"--grpc-server-addr {text!r}: cannot resolve host {bare!r} ({e})") from None
    return bare, port


def check_free(host: str, port: int) -> None:
    """OSError with a clear message when ``host:port`` is taken (port 0 is always free)."""
    if port == 0:
        return
    for family, kind, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: TIME_WAIT is no clash
            try:
                s.bind(addr)
            except OSError as e:
                why = "another switch or program uses this address" if e.errno == errno.EADDRINUSE else "not local"
                raise OSError(f"cannot listen on {host}:{port}: {e.strerror} ({why})") from None


class Malformed:
    """A request whose bytes did not parse; handlers answer INVALID_ARGUMENT."""

    def __init__(self, cls: type, error: Exception) -> None:
        self.message = f"cannot parse {cls.DESCRIPTOR.full_name}: {error}"


def _safe(cls: type) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except Exception as e:  # DecodeError and friends
            return Malformed(cls, e)

    return parse


def _checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    def handler(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Malformed):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
        return fn(request, context)

    return handler


def _add_servicer(servicer: P4RuntimeServicer, server: grpc.Server) -> None:
    """Register the service with parsers that never raise (garbage gets INVALID_ARGUMENT)."""
    u, s_ = grpc.unary_unary_rpc_method_handler, grpc.unary_stream_rpc_method_handler
    handlers = {
        "Write": u(_checked(servicer.Write), _safe(p4r.WriteRequest), p4r.WriteResponse.SerializeToString),
        "Read": s_(_checked(servicer.Read), _safe(p4r.ReadRequest), p4r.ReadResponse.SerializeToString),
        "SetForwardingPipelineConfig": u(_checked(servicer.SetForwardingPipelineConfig),
                                         _safe(p4r.SetForwardingPipelineConfigRequest),
                                         p4r.SetForwardingPipelineConfigResponse.SerializeToString),
        "GetForwardingPipelineConfig": u(_checked(servicer.GetForwardingPipelineConfig),
                                         _safe(p4r.GetForwardingPipelineConfigRequest),
                                         p4r.GetForwardingPipelineConfigResponse.SerializeToString),
        "StreamChannel": grpc.stream_stream_rpc_method_handler(
            servicer.StreamChannel, _safe(p4r.StreamMessageRequest), p4r.StreamMessageResponse.SerializeToString),
        "Capabilities": u(_checked(servicer.Capabilities), _safe(p4r.CapabilitiesRequest),
                          p4r.CapabilitiesResponse.SerializeToString),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("p4.v1.P4Runtime", handlers),))


def peer_host(peer: str) -> str:
    """The address part of gRPC's peer string (``ipv4:127.0.0.1:5000`` -> ``ipv4:127.0.0.1``)."""
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rsplit(":", 1)[0]
    return peer


def serve(device: Device, address: str, inject: Callable[[bytes], None] | None = None,
          max_workers: int = MAX_UNARY) -> tuple[grpc.Server, P4RuntimeServicer, int]:
    """Start the service on ``address``; returns (server, servicer, bound port).

    ``max_workers`` bounds the unary RPCs in progress (streams come on top, up
    to :data:`MAX_STREAMS`).  The address must be free: SO_REUSEPORT is off,
    so a second switch on a used address fails here instead of sharing it.
    Raises ValueError for a malformed address, OSError when it is in use.
    """
    host, port = parse_address(address)
    check_free(host, port)
    servicer = P4RuntimeServicer(device, inject)
    server = grpc.server(
        ElasticExecutor("p4rt"),
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
                 ("grpc.max_send_message_length", 256 << 20),
                 ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=MAX_STREAMS + max_workers,
    )
    _add_servicer(servicer, server)
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if bound == 0:
        servicer.close()
        raise OSError(f"cannot listen on {address} (address in use or not local)")
    server.start()
    return server, servicer, bound
