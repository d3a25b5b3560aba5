"""Talking P4Runtime to every switch of a topology, through finsy.

A :class:`Fleet` opens one finsy ``Switch`` per target, arbitrates for
primary, pushes the pipeline when it differs (finsy compares the pipeline
cookie), reads state back and writes the diff.  Everything a switch refuses
becomes a :class:`SwitchFault` whose text is one line naming the switch, the
entity and the P4Runtime error detail, so the CLI can print it as is.

Faults it lives through:

* **unreachable switch**: connecting is retried with exponential backoff for
  ``retry_for`` seconds, then reported by name and address;
* **another controller is primary**: a one-shot command fails with a fault
  saying so (a primary with the command's own election id is waited for up
  to ``retry_for`` seconds first: the last command's stream, which a busy
  switch closes late); a long-running controller logs ``primary_lost`` and,
  when the switch hands primary back, re-synchronises;
* **restarted switch**: a long-running controller (``run``) sees the channel
  come back, finsy re-installs the pipeline, and the ready handler reads the
  switch back, logs ``restarted`` when it came back empty, and writes the
  diff, so the state returns without an operator.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Sequence

import finsy as fy
from finsy.p4client import P4ClientError

from p4mcc.controller.diff import Op, diff
from p4mcc.controller.errors import SwitchFault
from p4mcc.controller.events import EventLog
from p4mcc.controller.finsy_codec import SchemaError, canonical, state_from_finsy, to_finsy
from p4mcc.controller.pipeline import PipelineSpec
from p4mcc.controller.program import MCC, ProgramNames
from p4mcc.controller.state import SwitchState

LOG = logging.getLogger("p4mcc.controller")

WRITE_BATCH = 500
"""Updates per WriteRequest (keeps messages well under gRPC's 4 MB default)."""


@dataclass(frozen=True)
class Target:
    """A switch to manage: name, gRPC address, device id."""

    name: str
    address: str
    device_id: int = 0


def quiet_finsy(verbose: bool = False) -> None:
    """finsy logs every failed task at CRITICAL with a traceback; the CLI
    reports faults itself, one line each, so finsy's logger stays silent."""
    logging.getLogger("finsy").setLevel(logging.DEBUG if verbose else logging.CRITICAL + 1)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, P4ClientError):
        return f"{exc.code.name}: {exc.message}" if exc.message else exc.code.name
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _options(target: Target, pipeline: PipelineSpec | None, election_id: int, **kw: Any) -> fy.SwitchOptions:
    if pipeline is None:
        return fy.SwitchOptions(device_id=target.device_id, initial_election_id=election_id, **kw)
    return fy.SwitchOptions(
        p4info=pipeline.p4info,  # finsy's P4Schema accepts a P4Info message as well as a path
        p4blob=pipeline.device_config,
        device_id=target.device_id,
        initial_election_id=election_id,
        **kw,
    )


async def open_switch(
    target: Target,
    pipeline: PipelineSpec | None,
    *,
    election_id: int = 10,
    need_primary: bool = True,
    retry_for: float = 5.0,
    timeout: float = 10.0,
) -> fy.Switch:
    """An open finsy switch (ready; primary when ``need_primary``).

    Retries with backoff (0.2 s doubling, at most 2 s apart) while the switch
    is unreachable.  With a ``pipeline`` the switch gets it when its cookie
    differs (finsy's rule); without one the switch's own P4Info is used.
    """
    delay = 0.2
    deadline = time.monotonic() + retry_for
    attempts = 0
    while True:
        attempts += 1
        sw = fy.Switch(target.name, target.address, _options(target, pipeline, election_id))
        came_up: list[bool] = []
        sw.ee.on(fy.SwitchEvent.CHANNEL_UP, lambda _s: came_up.append(True))
        try:
            await asyncio.wait_for(sw.__aenter__(), timeout)
        except P4ClientError as exc:
            if exc.code == fy.GRPCStatusCode.UNAVAILABLE and time.monotonic() + delay < deadline:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if exc.code == fy.GRPCStatusCode.UNAVAILABLE:
                raise SwitchFault(
                    target.name, "connect", f"unreachable at {target.address} after {attempts} attempts ({_detail(exc)})"
                ) from None
            # the channel was up: the handshake worked and the pipeline step failed
            raise SwitchFault(target.name, "pipeline" if came_up else "connect", _detail(exc)) from None
        except asyncio.TimeoutError:
            raise SwitchFault(target.name, "connect", f"no answer from {target.address} within {timeout:g} s") from None
        except asyncio.CancelledError:
            # finsy cancels its own tasks when one fails (a refused pipeline,
            # a closed stream) and its setup then ends in CancelledError;
            # only a cancellation of this task itself is passed on.
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise
            raise SwitchFault(
                target.name, "pipeline" if came_up else "connect",
                "the switch ended the session while it was being set up "
                "(it refused the pipeline or the arbitration; -v shows its reason)",
            ) from None
        except SwitchFault:
            raise
        except Exception as exc:  # noqa: BLE001 - finsy raises plain errors on protocol trouble
            raise SwitchFault(target.name, "connect", _detail(exc)) from None
        if need_primary and not sw.is_primary:
            primary = sw.primary_id
            await close_switch(sw)
            if primary == election_id and time.monotonic() + delay < deadline:
                # Our own election id: most likely the stream of the last
                # one-shot command, whose process has exited but whose close
                # the switch has not handled yet (a busy machine).  Wait for it
                # as for an unreachable switch.
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            raise SwitchFault(
                target.name,
                "arbitration",
                f"another controller is primary (election id {primary}; ours {election_id}); "
                "retry with a higher --election-id",
            )
        if pipeline is not None and not sw.p4info.exists:
            await close_switch(sw)
            raise SwitchFault(target.name, "pipeline", "switch has no pipeline and none was pushed")
        return sw


async def close_switch(sw: fy.Switch) -> None:
    try:
        await sw.__aexit__(None, None, None)
    except Exception:  # noqa: BLE001 - closing a broken channel must not mask the real error
        pass


# ---------------------------------------------------------------------------
# Reading state back


async def _read_all(sw: fy.Switch, query: Any) -> list[Any]:
    out = []
    try:
        async for ent in sw.read(query):
            out.append(ent)
    except P4ClientError as exc:
        if exc.code in (fy.GRPCStatusCode.NOT_FOUND, fy.GRPCStatusCode.UNIMPLEMENTED):
            return out
        raise SwitchFault(sw.name, f"read {type(query).__name__}", _detail(exc)) from None
    return out


async def read_state(sw: fy.Switch, desired: SwitchState | None = None, names: ProgramNames = MCC) -> SwitchState:
    """What the switch holds of the kinds the controller manages.

    Table entries, PRE groups and clone sessions are read by wildcard;
    meters, digests and default actions only for the objects named in
    ``desired`` (they are per-object in P4Runtime and always exist).
    """
    got: list[Any] = []
    got += await _read_all(sw, fy.P4TableEntry())
    got += await _read_all(sw, fy.P4MulticastGroupEntry())
    got += await _read_all(sw, fy.P4CloneSessionEntry())
    meters = {m.meter for m in desired.meters.values()} if desired else set()
    for meter in sorted(meters):
        if sw.p4info.meters.get(meter) is not None:
            got += await _read_all(sw, fy.P4MeterEntry(meter))
    digests = set(desired.digests) if desired else set()
    for d in sorted(digests):
        if sw.p4info.digests.get(d) is not None:
            got += await _read_all(sw, fy.P4DigestEntry(d))
    tables = {d.table for d in desired.defaults.values()} if desired else set()
    for t in sorted(tables):
        got += await _read_all(sw, fy.P4TableEntry(t, is_default_action=True))
    return state_from_finsy([e for e in got if not getattr(e, "is_const", False)], sw.p4info)


def canonical_for(sw: fy.Switch, desired: SwitchState) -> SwitchState:
    """``desired`` in the switch's P4Info names; a missing name is a fault."""
    try:
        return canonical(desired, sw.p4info)
    except SchemaError as exc:
        raise SwitchFault(sw.name, "pipeline", str(exc)) from None


async def read_counters(sw: fy.Switch) -> list[dict[str, Any]]:
    """Every indirect counter cell: ``{counter, index, packets, bytes}``.

    Counters are the controller's statistics source; registers are never read
    (BMv2 refuses register reads over P4Runtime).
    """
    if not sw.p4info.exists:
        raise SwitchFault(sw.name, "pipeline", "switch has no pipeline (run p4mcc ctl apply)")
    out = []
    for c in sw.p4info.counters:
        for e in await _read_all(sw, fy.P4CounterEntry(c.alias)):
            if e.index is not None:
                out.append({"counter": c.name, "index": e.index, "packets": e.packet_count, "bytes": e.byte_count})
    return out


# ---------------------------------------------------------------------------
# Writing


def _update(op: Op) -> Any:
    ent = to_finsy(op.entity)
    if op.kind == "insert":
        return +ent
    if op.kind == "delete":
        return -ent
    return ~ent


def _phases(ops: Sequence[Op]) -> list[list[Op]]:
    """Split ops into requests that must not be reordered by the switch.

    P4Runtime does not order the updates inside one WriteRequest, so deletes
    and each kind of write go in their own requests, in ``diff`` order.
    """
    phases: list[list[Op]] = []
    last: tuple[str, str] | None = None
    for op in ops:
        tag = ("delete" if op.kind == "delete" else "write", type(op.entity).__name__)
        if tag != last or len(phases[-1]) >= WRITE_BATCH:
            phases.append([])
            last = tag
        phases[-1].append(op)
    return phases


async def write_ops(sw: fy.Switch, ops: Sequence[Op]) -> None:
    """Write ``ops``; the first refusal becomes a :class:`SwitchFault` naming the entity."""
    for batch in _phases(ops):
        try:
            updates = [_update(op) for op in batch]
        except (ValueError, KeyError) as exc:
            raise SwitchFault(sw.name, batch[0].describe(), f"cannot encode: {exc}") from None
        try:
            await sw.write(updates)
        except P4ClientError as exc:
            if exc.details:
                index, err = sorted(exc.details.items())[0]
                op = batch[index] if index < len(batch) else batch[0]
                more = f" (+{len(exc.details) - 1} more)" if len(exc.details) > 1 else ""
                raise SwitchFault(
                    sw.name, f"{op.kind} {op.entity.describe()}", f"{err.canonical_code.name}: {err.message}{more}"
                ) from None
            raise SwitchFault(sw.name, f"write of {len(batch)} updates", _detail(exc)) from None
        except (ValueError, KeyError) as exc:
            raise SwitchFault(sw.name, batch[0].describe(), f"cannot encode: {exc}") from None


async def sync(sw: fy.Switch, desired: SwitchState, *, dry_run: bool = False, prune: bool = True) -> list[Op]:
    """Read back, diff, write (unless ``dry_run``); returns the ops."""
    desired = canonical_for(sw, desired)
    actual = await read_state(sw, desired)
    ops = diff(desired, actual, prune=prune)
    if ops and not dry_run:
        await write_ops(sw, ops)
    return ops


# ---------------------------------------------------------------------------
# Many switches at once


@dataclass
class FleetResult:
    """Per-switch results and faults of a fleet-wide operation."""

    results: dict[str, Any] = field(default_factory=dict)
    faults: list[SwitchFault] = field(default_factory=list)


async def for_each(
    targets: Iterable[Target],
    fn: Callable[[fy.Switch], Awaitable[Any]],
    *,
    pipeline: PipelineSpec | None = None,
    election_id: int = 10,
    need_primary: bool = True,
    retry_for: float = 5.0,
) -> FleetResult:
    """Open every target concurrently, run ``fn`` on each, close them."""
    res = FleetResult()

    async def one(t: Target) -> None:
        try:
            sw = await open_switch(t, pipeline, election_id=election_id, need_primary=need_primary,
                                   retry_for=retry_for)
        except SwitchFault as f:
            res.faults.append(f)
            return
        try:
            res.results[t.name] = await fn(sw)
        except SwitchFault as f:
            res.faults.append(f)
        except P4ClientError as exc:
            res.faults.append(SwitchFault(t.name, "request", _detail(exc)))
        finally:
            await close_switch(sw)

    await asyncio.gather(*(one(t) for t in targets))
    res.faults.sort(key=lambda f: f.switch)
    return res


@dataclass(eq=False)
class Controller:
    """A long-running controller: keeps every switch at its desired state.

    Runs each switch with finsy's reconnecting ``Switch.run``; on every
    ready (first connect, reconnect after a restart, primary regained) it
    re-synchronises.  Membership digests and packet-ins go to the event log.
    """

    targets: Sequence[Target]
    desired: dict[str, SwitchState]
    pipeline: PipelineSpec | None
    log: EventLog
    _: KW_ONLY
    names: ProgramNames = MCC
    election_id: int = 10
    on_sync: Callable[[str, list[Op]], None] | None = None
    reconnect_throttle: float = 1.0
    query_interval: float | None = None
    #: switch -> the switches whose proxied joins climb through it
    #: (``controller.desired.Plan.below``): a restore asks them to join again.
    below: dict[str, frozenset[str]] = field(default_factory=dict)
    synced: dict[str, int] = field(default_factory=dict, init=False)
    switches: dict[str, fy.Switch] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.targets = list(self.targets)
        # finsy waits 10 s before reconnecting a switch whose session lasted
        # under 2 s; a restarted switch should get its state back sooner.
        import finsy.switch as _fsw

        _fsw._FAIL_THROTTLE_SECS = min(_fsw._FAIL_THROTTLE_SECS, self.reconnect_throttle)
        _reconnect_promptly()

    async def _ready(self, sw: fy.Switch) -> None:
        if not sw.is_primary:
            return  # a backup may not write; primary_lost was logged
        try:
            desired = canonical_for(sw, self.desired.get(sw.name, SwitchState()))
            actual = await read_state(sw, desired, self.names)
            ops = diff(desired, actual)
            before = self.synced.get(sw.name, 0)
            lost = sum(o.kind == "insert" for o in ops)
            if before and lost:
                # the desired state does not change while we run, so state we
                # wrote and no longer find was lost: the switch restarted
                self.log.emit(sw.name, "restarted", detail=f"{lost} entities written earlier are gone")
            if ops:
                await write_ops(sw, ops)
            self.synced[sw.name] = before + 1
            self.log.emit(
                sw.name, "synced" if before == 0 else "restored",
                inserts=sum(o.kind == "insert" for o in ops),
                modifies=sum(o.kind == "modify" for o in ops),
                deletes=sum(o.kind == "delete" for o in ops),
            )
            if self.on_sync:
                self.on_sync(sw.name, ops)
        except SwitchFault as f:
            self.log.emit(sw.name, "error", entity=f.entity, detail=f.detail)
            return
        if self.names.membership_digest and sw.p4info.digests.get(self.names.membership_digest) is not None:
            sw.create_task(self._digests(sw), name="digests")
        sw.create_task(self._packets(sw), name="packets")
        if before or self.query_interval:
            # one task writes every query: a stream takes one write at a time
            sw.create_task(self._queries(sw, restored=bool(before)), name="querier")
        if before:
            for name in sorted(self.below.get(sw.name, ())):
                child = self.switches.get(name)
                if child is not None and child.is_up and child.is_primary:
                    child.create_task(self._rejoin(child), name="rejoin")

    async def _rejoin(self, sw: fy.Switch) -> None:
        """Have ``sw`` proxy its hosts' joins again toward a restored switch above
        it (``controller.querier.rejoin_state``): every report proxied for
        ``REJOIN_WINDOW_S``, its hosts queried meanwhile, then its own
        configuration back.  A disconnect in between leaves the eager
        configuration to the next sync, which writes the desired one."""
        from p4mcc.controller.querier import REJOIN_WINDOW_S, REQUERY_COUNT, REQUERY_GAP_S, rejoin_state

        plain = self.desired.get(sw.name, SwitchState())
        want = canonical_for(sw, plain)
        eager = canonical_for(sw, rejoin_state(plain, self.names))
        try:
            await write_ops(sw, diff(eager, want))
            self.log.emit(sw.name, "rejoin", window_s=REJOIN_WINDOW_S)
            await self._requery(sw)
            await asyncio.sleep(max(0.0, REJOIN_WINDOW_S - REQUERY_COUNT * REQUERY_GAP_S))
            await write_ops(sw, diff(want, eager))
        except SwitchFault as f:
            self.log.emit(sw.name, "error", entity=f.entity, detail=f.detail)

    async def _queries(self, sw: fy.Switch, restored: bool) -> None:
        """After a restore, general queries (``controller.querier.REQUERY_*``):
        membership lived in the restarted switch's registers, which no
        controller can write on every target, so the hosts are asked to report
        again.  Then, when memberships age, a query every ``query_interval``."""
        from p4mcc.controller.querier import general_query, max_response_ds

        if restored:
            await self._requery(sw, log=True)
        if not self.query_interval:
            return
        frame = general_query(max_resp_ds=max_response_ds(self.query_interval))
        while True:
            await self._packet_out(sw, frame)
            await asyncio.sleep(self.query_interval)

    async def _requery(self, sw: fy.Switch, log: bool = False) -> None:
        """The restore's general queries to ``sw``'s hosts (``controller.querier.REQUERY_*``),
        each logged as ``requeried`` when ``log``."""
        from p4mcc.controller.querier import REQUERY_COUNT, REQUERY_GAP_S, REQUERY_MAX_RESP_DS, general_query

        frame = general_query(max_resp_ds=REQUERY_MAX_RESP_DS)
        for i in range(REQUERY_COUNT):
            if await self._packet_out(sw, frame) and log:
                self.log.emit(sw.name, "requeried", attempt=i + 1)
            await asyncio.sleep(REQUERY_GAP_S)

    def _stream_lock(self, sw: fy.Switch) -> asyncio.Lock:
        """gRPC takes one write at a time on a stream; packet-outs and digest
        acks share the switch's StreamChannel."""
        locks = self.__dict__.setdefault("_locks", {})
        if sw.name not in locks:
            locks[sw.name] = asyncio.Lock()
        return locks[sw.name]

    async def _packet_out(self, sw: fy.Switch, frame: bytes) -> bool:
        try:
            async with self._stream_lock(sw):
                await sw.write([fy.P4PacketOut(frame, egress_port=0, flood=1, _pad=0)])
            return True
        except (P4ClientError, ValueError, KeyError) as exc:
            self.log.emit(sw.name, "error", entity="packet_out query", detail=_detail(exc))
            return False

    async def _digests(self, sw: fy.Switch) -> None:
        n = self.names
        async for dl in sw.read_digests(n.membership_digest):
            for item in dl:
                fields = {k: _plain(v) for k, v in (item if isinstance(item, dict) else {"value": item}).items()}
                code = fields.pop("event", None)  # "event" names the log record's kind
                change = {n.digest_join: "join", n.digest_leave: "leave"}.get(code, str(code))
                group = fields.pop("group", None)
                if isinstance(group, int):
                    group = str(ipaddress.IPv4Address(group))
                members = fields.pop("members", None)
                ports = [p for p in range(64) if isinstance(members, int) and members >> p & 1]
                self.log.emit(sw.name, "membership", group=group, port=fields.pop("port", None), change=change,
                              members=ports, **fields)
            async with self._stream_lock(sw):
                await sw.write([dl.ack()])

    async def _packets(self, sw: fy.Switch) -> None:
        async for pkt in sw.read_packets():
            self.log.emit(sw.name, "packet_in", length=len(pkt.payload),
                          metadata={k: _plain(v) for k, v in pkt.metadata.items()},
                          head=pkt.payload[:64].hex())

    def _watch_events(self, sw: fy.Switch) -> None:
        sw.ee.on(fy.SwitchEvent.BECOME_BACKUP, lambda s: self.log.emit(
            s.name, "primary_lost", primary_election_id=s.primary_id, ours=s.election_id))
        sw.ee.on(fy.SwitchEvent.CHANNEL_DOWN, lambda s: self.log.emit(s.name, "disconnected"))
        sw.ee.on(fy.SwitchEvent.CHANNEL_UP, lambda s: self.log.emit(
            s.name, "connected", primary=s.is_primary))

    async def run(self) -> None:
        """Run until cancelled."""
        tasks = []
        for t in self.targets:
            opts = _options(t, self.pipeline, self.election_id, ready_handler=self._ready)
            sw = fy.Switch(t.name, t.address, opts)
            self._watch_events(sw)
            self.switches[t.name] = sw
            tasks.append(asyncio.create_task(sw.run(), name=f"switch:{t.name}"))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


RECONNECT_BACKOFF_MS = (100, 500)
"""gRPC's reconnect backoff for a long-running controller: first retry, longest gap.

gRPC's defaults (1 s, growing 1.6 times to finsy's 15 s) let a switch that
restarted in 2 s wait up to 2.6 s more for the controller; a controller on
the same machine retries every half second at most."""


def _reconnect_promptly() -> None:
    """Have finsy's channels retry a lost switch after :data:`RECONNECT_BACKOFF_MS`
    (finsy builds its channel options itself and has no setting for it)."""
    import finsy.p4client as _pc
    from finsy.grpcutil import GRPCOptions

    if getattr(_pc.GRPCOptions, "prompt_reconnect", False):
        return
    first, longest = RECONNECT_BACKOFF_MS

    class _Prompt(GRPCOptions):
        prompt_reconnect = True

        def to_native(self) -> Any:
            args = [a for a in super().to_native() if a[0] != "grpc.max_reconnect_backoff_ms"]
            return args + [("grpc.initial_reconnect_backoff_ms", first),
                           ("grpc.min_reconnect_backoff_ms", first),
                           ("grpc.max_reconnect_backoff_ms", longest)]

    _pc.GRPCOptions = _Prompt


def _plain(v: Any) -> Any:
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, bytes):
        return int.from_bytes(v, "big")
    try:
        return int(v)
    except (TypeError, ValueError):
        return str(v)


