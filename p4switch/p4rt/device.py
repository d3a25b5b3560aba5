"""The P4Runtime device: pipeline life cycle, entity writes and reads.

This module translates P4Runtime entities (ids, bytestrings) into calls on
the interpreter's runtime API (fully qualified names, integers; see
docs/p4switch-api.md) and back.  It has no gRPC in it: the server calls
:meth:`Device.write_update`, :meth:`Device.read` and friends and maps the
:class:`~.errors.P4RTError` they raise to statuses, which keeps every rule of
the spec testable without sockets.

The device keeps its own record of what the controller wrote (table entries
by key, PRE entries, digest configs, meter configs).  The runtime keeps the
data-plane state; the record exists because P4Runtime identifies a table
entry by its match key while the runtime identifies it by handle, and because
a ``Read`` must return entries exactly as written (canonical bytestrings).

One re-entrant lock (:attr:`Device.lock`) serialises control-plane updates
and packet processing, so a batch is applied between two packets, never in
the middle of one.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from finsy.proto import p4i, p4r

from .devconfig import BUNDLE_FORMAT, compile_device_config, make_bundle  # noqa: F401 - re-exported
from .digests import DigestBuffer
from .entries import (
    MatchKey,
    call_runtime,
    check_against,
    check_meter_config,
    copy_msg,
    digest_data,
    entry_from_runtime,
    meter_rates,
    normalise_match,
    param_values,
    register_width,
    runtime_keys,
    strip_entry,
    translate_entry,
)
from .errors import Code, P4RTError
from .schema import Schema, TableInfo, decode_uint, encode_uint, encode_width

MAX_PORT = 511
MAX_METADATA_BYTES = 64 << 10
"""Largest controller ``metadata`` of one table entry or multicast group.

The spec makes ``metadata`` opaque bytes the switch must hand back on Read;
it sets no size, so the switch sets one and answers ``RESOURCE_EXHAUSTED``
(the spec's code for what the target cannot hold) beyond it."""
MAX_METADATA_TOTAL = 16 << 20
"""All controller metadata one pipeline keeps (bounds memory however many entries)."""


@dataclass
class Pipeline:
    """A realised forwarding pipeline and the controller state written to it."""

    config: p4r.ForwardingPipelineConfig
    schema: Schema
    switch: Any
    program: Any = None
    entries: dict[int, dict[tuple[MatchKey, int], "_Stored"]] = field(default_factory=dict)
    default_entries: dict[int, p4r.TableEntry] = field(default_factory=dict)
    mc_groups: dict[int, p4r.MulticastGroupEntry] = field(default_factory=dict)
    clone_sessions: dict[int, p4r.CloneSessionEntry] = field(default_factory=dict)
    digest_configs: dict[int, p4r.DigestEntry.Config] = field(default_factory=dict)
    meter_configs: dict[tuple[int, int], p4r.MeterConfig] = field(default_factory=dict)
    const_cache: dict[int, list] = field(default_factory=dict)  # table id -> the program's const entries
    metadata_bytes: int = 0  # controller metadata held, see MAX_METADATA_TOTAL


@dataclass
class _Stored:
    entry: p4r.TableEntry  # as written, minus counter/meter data
    handle: int
    meter_config: p4r.MeterConfig | None = None


PipelineBuilder = Callable[[p4r.ForwardingPipelineConfig], tuple[Any, Any, p4i.P4Info]]
"""Builds ``(switch, program, generated_p4info)`` from a pipeline config; raises P4RTError."""


class Device:
    """State of one P4Runtime device (one switch)."""

    def __init__(self, device_id: int, builder: PipelineBuilder, cpu_port: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.device_id = device_id
        self.builder = builder
        self.cpu_port = cpu_port
        self.clock = clock
        self.lock = threading.RLock()
        # Packets that asked for / got ``lock`` (see packet_turn, yield_to_packets).
        self._arrived = 0
        self._entered = 0
        self._turn_lock = threading.Lock()
        self.pipeline: Pipeline | None = None
        self.saved: Pipeline | None = None
        self.digests = DigestBuffer()
        self.on_pipeline: list[Callable[[Pipeline], None]] = []
        self.stats = {"digests_dropped": 0, "packet_in_errors": 0}
        self.on_digest_ready: Callable[[], None] | None = None

    # ------------------------------------------------------------------
    # Sharing the lock with packets
    # ------------------------------------------------------------------

    @contextmanager
    def packet_turn(self) -> Iterator[None]:
        """Hold :attr:`lock` for one packet, announced so a batch lets it in.

        Python locks are not fair: a Write that releases the lock after one
        update and takes it again for the next one keeps it nearly always,
        and a packet waiting for it waited for the whole batch.
        """
        with self._turn_lock:
            self._arrived += 1
        try:
            self.lock.acquire()
        finally:
            with self._turn_lock:
                self._entered += 1
        try:
            yield
        finally:
            self.lock.release()

    def yield_to_packets(self, limit_s: float = 0.01) -> None:
        """Between two updates of a batch (lock not held): let the packets
        waiting now go first -- only those, so a batch still progresses, one
        update per round, when packets keep coming."""
        target = self._arrived
        if self._entered >= target:
            return
        end = time.monotonic() + limit_s
        while self._entered < target and time.monotonic() < end:
            time.sleep(0.0001)

    # ------------------------------------------------------------------
    # Pipeline configuration
    # ------------------------------------------------------------------

    def require_pipeline(self) -> Pipeline:
        if self.pipeline is None:
            raise P4RTError(Code.FAILED_PRECONDITION, "No forwarding pipeline config set for this device")
        return self.pipeline

    def commit_initial(self) -> None:
        """Realise the program the switch was started with (no controller needed)."""
        with self.lock:
            self._commit(self._realise(p4r.ForwardingPipelineConfig(), allow_empty=True))

    def _realise(self, config: p4r.ForwardingPipelineConfig, allow_empty: bool = False) -> Pipeline:
        if not allow_empty and not config.HasField("p4info") and not config.p4_device_config:
            raise P4RTError(Code.INVALID_ARGUMENT, "no forwarding pipeline config provided")
        switch, program, generated = self.builder(config)
        info = config.p4info if config.HasField("p4info") and len(config.p4info.tables) + len(config.p4info.actions) else generated
        schema = Schema.build(info)
        check_against(schema, generated)
        stored = p4r.ForwardingPipelineConfig()
        stored.CopyFrom(config)
        if not config.HasField("p4info"):
            stored.p4info.CopyFrom(info)
        p = Pipeline(stored, schema, switch, program)
        self._attach(p)
        return p

    def _attach(self, p: Pipeline) -> None:
        if self.cpu_port is not None and hasattr(p.switch, "cpu_port"):
            try:
                p.switch.cpu_port = self.cpu_port
            except AttributeError:
                pass
        try:
            p.switch.on_digest = self._on_digest
        except AttributeError:
            pass

    def set_pipeline(self, action: int, config: p4r.ForwardingPipelineConfig | None) -> None:
        A = p4r.SetForwardingPipelineConfigRequest
        has_config = config is not None and (config.HasField("p4info") or bool(config.p4_device_config))
        with self.lock:
            if action == A.VERIFY:
                if not has_config:
                    raise P4RTError(Code.INVALID_ARGUMENT, "VERIFY needs a config")
                self._realise(config)  # type: ignore[arg-type]
            elif action == A.VERIFY_AND_SAVE:
                if not has_config:
                    raise P4RTError(Code.INVALID_ARGUMENT, "VERIFY_AND_SAVE needs a config")
                self.saved = self._realise(config)  # type: ignore[arg-type]
            elif action == A.VERIFY_AND_COMMIT:
                if not has_config:
                    raise P4RTError(Code.INVALID_ARGUMENT, "VERIFY_AND_COMMIT needs a config")
                self._commit(self._realise(config))  # type: ignore[arg-type]
            elif action == A.COMMIT:
                if has_config:
                    raise P4RTError(Code.INVALID_ARGUMENT, "COMMIT takes no config (it commits the saved one)")
                if self.saved is None:
                    raise P4RTError(Code.NOT_FOUND, "no saved config to commit (send VERIFY_AND_SAVE first)")
                saved, self.saved = self.saved, None
                self._commit(saved)
            elif action == A.RECONCILE_AND_COMMIT:
                if not has_config:
                    raise P4RTError(Code.INVALID_ARGUMENT, "RECONCILE_AND_COMMIT needs a config")
                new = self._realise(config)  # type: ignore[arg-type]
                if self.pipeline is not None:
                    self._reconcile(self.pipeline, new)
                self._commit(new)
            else:
                raise P4RTError(Code.INVALID_ARGUMENT, f"unknown pipeline config action {action}")

    def _commit(self, p: Pipeline) -> None:
        self.pipeline = p
        self.digests.clear()
        for cb in self.on_pipeline:
            cb(p)

    def _reconcile(self, old: Pipeline, new: Pipeline) -> None:
        """Replay the forwarding state of ``old`` onto ``new`` by name; any loss is an error."""
        old_s, new_s = old.schema, new.schema
        new_tables = {t.name: t for t in new_s.tables.values()}
        for table_id, entries in old.entries.items():
            oti = old_s.tables[table_id]
            nti = new_tables.get(oti.name)
            if nti is None:
                if entries:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"cannot reconcile: table {oti.name} has entries but is gone")
                continue
            for stored in entries.values():
                e = translate_entry(stored.entry, old_s, new_s, nti)
                self._table_write(new, p4r.Update.INSERT, e)
        for table_id, dflt in old.default_entries.items():
            nti = new_tables.get(old_s.tables[table_id].name)
            if nti is None:
                raise P4RTError(Code.INVALID_ARGUMENT, f"cannot reconcile: table {old_s.tables[table_id].name} is gone")
            self._table_write(new, p4r.Update.MODIFY, translate_entry(dflt, old_s, new_s, nti))
        for digest_id, cfg in old.digest_configs.items():
            d = new_s.digests_by_name.get(old_s.digests[digest_id].preamble.name)
            if d is None:
                raise P4RTError(Code.INVALID_ARGUMENT,
                                f"cannot reconcile: digest {old_s.digests[digest_id].preamble.name} is gone")
            new.digest_configs[d.preamble.id] = copy_msg(cfg)
        for mg in old.mc_groups.values():
            self._pre_write(new, p4r.Update.INSERT, p4r.PacketReplicationEngineEntry(multicast_group_entry=mg))
        for cs in old.clone_sessions.values():
            self._pre_write(new, p4r.Update.INSERT, p4r.PacketReplicationEngineEntry(clone_session_entry=cs))

    def get_pipeline(self, response_type: int) -> p4r.ForwardingPipelineConfig:
        R = p4r.GetForwardingPipelineConfigRequest
        out = p4r.ForwardingPipelineConfig()
        with self.lock:
            p = self.pipeline
            if p is None:
                return out
            cfg = p.config
            if cfg.HasField("cookie"):
                out.cookie.CopyFrom(cfg.cookie)
            if response_type in (R.ALL, R.P4INFO_AND_COOKIE):
                out.p4info.CopyFrom(cfg.p4info)
            if response_type in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
                out.p4_device_config = cfg.p4_device_config
            if response_type not in (R.ALL, R.P4INFO_AND_COOKIE, R.DEVICE_CONFIG_AND_COOKIE, R.COOKIE_ONLY):
                raise P4RTError(Code.INVALID_ARGUMENT, f"unknown response type {response_type}")
        return out

    # ------------------------------------------------------------------
    # Write
    # ------------------------------------------------------------------

    def write_update(self, update: p4r.Update) -> None:
        """Apply one update; raise P4RTError with the spec's code on refusal."""
        with self.lock:
            p = self.require_pipeline()
            if update.type not in (p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE):
                raise P4RTError(Code.INVALID_ARGUMENT, f"update type {update.type} is not INSERT, MODIFY or DELETE")
            kind = update.entity.WhichOneof("entity")
            ent = update.entity
            if kind == "table_entry":
                self._table_write(p, update.type, ent.table_entry)
            elif kind == "counter_entry":
                self._counter_write(p, update.type, ent.counter_entry)
            elif kind == "direct_counter_entry":
                self._direct_counter_write(p, update.type, ent.direct_counter_entry)
            elif kind == "meter_entry":
                self._meter_write(p, update.type, ent.meter_entry)
            elif kind == "direct_meter_entry":
                self._direct_meter_write(p, update.type, ent.direct_meter_entry)
            elif kind == "register_entry":
                self._register_write(p, update.type, ent.register_entry)
            elif kind == "packet_replication_engine_entry":
                self._pre_write(p, update.type, ent.packet_replication_engine_entry)
            elif kind == "digest_entry":
                self._digest_write(p, update.type, ent.digest_entry)
            elif kind == "value_set_entry":
                self._value_set_write(p, update.type, ent.value_set_entry)
            elif kind is None:
                raise P4RTError(Code.INVALID_ARGUMENT, "update without an entity")
            else:
                raise P4RTError(Code.UNIMPLEMENTED, f"{kind} is not supported by this switch")

    # -- tables ---------------------------------------------------------

    def _match_key(self, ti: TableInfo, entry: p4r.TableEntry) -> MatchKey:
        seen: set[int] = set()
        out: list[tuple[int, str, int, int]] = []
        for fm in entry.match:
            mf = ti.fields.get(fm.field_id)
            if mf is None:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} has no match field id {fm.field_id}")
            if fm.field_id in seen:
                raise P4RTError(Code.INVALID_ARGUMENT, f"match field {mf.name} given twice")
            seen.add(fm.field_id)
            out.append(normalise_match(mf, fm))
        for fid, mf in ti.fields.items():
            if fid not in seen and mf.match_type == p4i.MatchField.EXACT:
                raise P4RTError(Code.INVALID_ARGUMENT, f"exact match field {mf.name} is missing")
        return tuple(sorted(out))

    def _check_priority(self, ti: TableInfo, entry: p4r.TableEntry) -> int:
        if ti.needs_priority:
            if entry.priority <= 0:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} needs a priority > 0")
        elif entry.priority != 0:
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} takes no priority (exact/lpm keys only)")
        return entry.priority

    def _action_args(self, p: Pipeline, ti: TableInfo, action: p4r.Action, default: bool) -> tuple[str, dict[str, int]]:
        if action.action_id not in ti.actions:
            raise P4RTError(Code.INVALID_ARGUMENT, f"action id {action.action_id:#x} is not an action of table {ti.name}")
        scope = ti.actions[action.action_id]
        if default and scope == p4i.ActionRef.TABLE_ONLY:
            raise P4RTError(Code.PERMISSION_DENIED, "this action is @tableonly and cannot be the default action")
        if not default and scope == p4i.ActionRef.DEFAULT_ONLY:
            raise P4RTError(Code.PERMISSION_DENIED, "this action is @defaultonly and cannot be used in an entry")
        a = p.schema.action(action.action_id)
        params = {prm.id: prm for prm in a.params}
        values: dict[str, int] = {}
        seen: set[int] = set()
        for pv in action.params:
            prm = params.get(pv.param_id)
            if prm is None:
                raise P4RTError(Code.INVALID_ARGUMENT, f"action {a.preamble.name} has no parameter id {pv.param_id}")
            if pv.param_id in seen:
                raise P4RTError(Code.INVALID_ARGUMENT, f"parameter {prm.name} given twice")
            seen.add(pv.param_id)
            values[prm.name] = decode_uint(pv.value, prm.bitwidth, f"parameter {prm.name}")
        missing = [prm.name for pid, prm in params.items() if pid not in seen]
        if missing:
            raise P4RTError(Code.INVALID_ARGUMENT, f"action {a.preamble.name} misses parameter(s) {', '.join(missing)}")
        return a.preamble.name, values

    def _entry_action(self, entry: p4r.TableEntry) -> p4r.Action:
        which = entry.action.WhichOneof("type")
        if which is None:
            raise P4RTError(Code.INVALID_ARGUMENT, "table entry without an action")
        if which != "action":
            raise P4RTError(Code.INVALID_ARGUMENT, "this table is direct: it takes an action, not an action profile member or group")
        return entry.action.action

    def _table_write(self, p: Pipeline, utype: int, entry: p4r.TableEntry) -> None:
        ti = p.schema.table(entry.table_id)
        sw = p.switch
        if entry.is_default_action:
            self._default_write(p, ti, utype, entry)
            return
        if entry.HasField("time_since_last_hit") or entry.idle_timeout_ns:
            raise P4RTError(Code.UNIMPLEMENTED, "idle timeouts are not supported")
        key = self._match_key(ti, entry)
        prio = self._check_priority(ti, entry)
        table = p.entries.setdefault(entry.table_id, {})
        ident = (key, prio)
        if ti.is_const:
            raise P4RTError(Code.PERMISSION_DENIED, f"table {ti.name} is const: its entries cannot be changed")
        if utype == p4r.Update.INSERT:
            if ident in table or self._const_handle(p, ti, key, prio) is not None:
                raise P4RTError(Code.ALREADY_EXISTS, f"an entry with this key already exists in {ti.name}")
            if ti.msg.size and len(table) >= ti.msg.size:
                raise P4RTError(Code.RESOURCE_EXHAUSTED, f"table {ti.name} is full ({ti.msg.size} entries)")
            aname, params = self._action_args(p, ti, self._entry_action(entry), default=False)
            self._check_metadata(p, 0, len(entry.metadata), f"table {ti.name} entry")
            keys = runtime_keys(ti, key)
            handle = call_runtime(sw.table_add, ti.name, keys, aname, params, prio if ti.needs_priority else None)
            stored = _Stored(strip_entry(entry), handle)
            table[ident] = stored
            p.metadata_bytes += len(entry.metadata)
            self._apply_direct_data(p, ti, stored, entry)
        elif utype == p4r.Update.MODIFY:
            stored = table.get(ident)
            if stored is None:
                raise P4RTError(Code.NOT_FOUND, f"no entry with this key in {ti.name}")
            aname, params = self._action_args(p, ti, self._entry_action(entry), default=False)
            old = len(stored.entry.metadata)
            self._check_metadata(p, old, len(entry.metadata), f"table {ti.name} entry")
            call_runtime(sw.table_modify, ti.name, stored.handle, aname, params)
            stored.entry = strip_entry(entry)
            p.metadata_bytes += len(entry.metadata) - old
            self._apply_direct_data(p, ti, stored, entry)
        else:
            stored = table.pop(ident, None)
            if stored is None:
                raise P4RTError(Code.NOT_FOUND, f"no entry with this key in {ti.name}")
            try:
                call_runtime(sw.table_delete, ti.name, stored.handle)
            except P4RTError:
                table[ident] = stored
                raise
            p.metadata_bytes -= len(stored.entry.metadata)

    @staticmethod
    def _check_metadata(p: Pipeline, old: int, new: int, what: str) -> None:
        """Refuse controller metadata beyond the per-entry and per-pipeline caps."""
        if new > MAX_METADATA_BYTES:
            raise P4RTError(Code.RESOURCE_EXHAUSTED,
                            f"{what}: metadata of {new} bytes exceeds this switch's limit of {MAX_METADATA_BYTES}")
        if p.metadata_bytes - old + new > MAX_METADATA_TOTAL:
            raise P4RTError(Code.RESOURCE_EXHAUSTED,
                            f"{what}: the switch already holds {p.metadata_bytes} bytes of controller metadata "
                            f"(limit {MAX_METADATA_TOTAL})")

    def _apply_direct_data(self, p: Pipeline, ti: TableInfo, stored: _Stored, entry: p4r.TableEntry) -> None:
        if entry.HasField("counter_data") and ti.direct_counter_id:
            call_runtime(p.switch.direct_counter_write, ti.name, stored.handle,
                  entry.counter_data.packet_count, entry.counter_data.byte_count)
        if entry.HasField("meter_config") and ti.direct_meter_id:
            check_meter_config(entry.meter_config)
            call_runtime(p.switch.direct_meter_set_rates, ti.name, stored.handle, meter_rates(entry.meter_config))
            stored.meter_config = copy_msg(entry.meter_config)

    def _default_write(self, p: Pipeline, ti: TableInfo, utype: int, entry: p4r.TableEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "the default entry can only be modified (not inserted or deleted)")
        if len(entry.match) or entry.priority:
            raise P4RTError(Code.INVALID_ARGUMENT, "the default entry has no match fields and no priority")
        if ti.const_default_action_id:
            raise P4RTError(Code.PERMISSION_DENIED, f"the default action of {ti.name} is const")
        if entry.action.WhichOneof("type") is None:
            call_runtime(p.switch.table_reset_default, ti.name)
            p.default_entries.pop(ti.msg.preamble.id, None)
            return
        aname, params = self._action_args(p, ti, self._entry_action(entry), default=True)
        call_runtime(p.switch.table_set_default, ti.name, aname, params)
        p.default_entries[ti.msg.preamble.id] = strip_entry(entry)

    def _const_handle(self, p: Pipeline, ti: TableInfo, key: MatchKey, prio: int) -> int | None:
        for e in self._const_entries(p, ti):
            k, pr, _, handle = e
            if k == key and pr == prio:
                return handle
        return None

    def _const_entries(self, p: Pipeline, ti: TableInfo) -> list[tuple[MatchKey, int, p4r.TableEntry, int]]:
        """Entries the program declares (``entries = {...}``), as P4Runtime entries.

        They never change while the pipeline lives, so they are converted once.
        """
        cached = p.const_cache.get(ti.msg.preamble.id)
        if cached is not None:
            return cached
        p.const_cache[ti.msg.preamble.id] = out = self._convert_const(p, ti)
        return out

    def _convert_const(self, p: Pipeline, ti: TableInfo) -> list[tuple[MatchKey, int, p4r.TableEntry, int]]:
        try:
            rt_entries = p.switch.table_entries(ti.name)
        except Exception:
            return []
        out = []
        for e in rt_entries:
            if not getattr(e, "is_const", False):
                continue
            te = entry_from_runtime(p.schema, ti, e)
            if te is None:
                continue
            key = self._match_key(ti, te)
            out.append((key, te.priority, te, e.handle))
        return out

    def _find_handle(self, p: Pipeline, ti: TableInfo, entry: p4r.TableEntry) -> int:
        if entry.is_default_action:
            raise P4RTError(Code.UNIMPLEMENTED, "direct resources of the default entry are not supported")
        key = self._match_key(ti, entry)
        prio = self._check_priority(ti, entry)
        stored = p.entries.get(entry.table_id, {}).get((key, prio))
        if stored is not None:
            return stored.handle
        handle = self._const_handle(p, ti, key, prio)
        if handle is None:
            raise P4RTError(Code.NOT_FOUND, f"no entry with this key in {ti.name}")
        return handle

    # -- counters, meters, registers -------------------------------------

    def _index_range(self, size: int, entry: Any, what: str) -> range:
        if entry.HasField("index"):
            i = entry.index.index
            if i < 0:
                raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: negative index {i}")
            if i >= size:
                raise P4RTError(Code.OUT_OF_RANGE, f"{what}: index {i} outside 0..{size - 1}")
            return range(i, i + 1)
        return range(size)

    def _counter_write(self, p: Pipeline, utype: int, ce: p4r.CounterEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "counter entries can only be modified")
        c = p.schema.lookup("counters", ce.counter_id)
        for i in self._index_range(c.size, ce, c.preamble.name):
            call_runtime(p.switch.counter_write, c.preamble.name, i, ce.data.packet_count, ce.data.byte_count)

    def _direct_counter_write(self, p: Pipeline, utype: int, dce: p4r.DirectCounterEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "direct counter entries can only be modified")
        ti = p.schema.table(dce.table_entry.table_id)
        if not ti.direct_counter_id:
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} has no direct counter")
        handle = self._find_handle(p, ti, dce.table_entry)
        call_runtime(p.switch.direct_counter_write, ti.name, handle, dce.data.packet_count, dce.data.byte_count)

    def _meter_write(self, p: Pipeline, utype: int, me: p4r.MeterEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "meter entries can only be modified")
        m = p.schema.lookup("meters", me.meter_id)
        if me.HasField("counter_data"):
            raise P4RTError(Code.UNIMPLEMENTED, "meter counter data is not supported")
        if me.HasField("config"):
            check_meter_config(me.config)
        for i in self._index_range(m.size, me, m.preamble.name):
            if me.HasField("config"):
                call_runtime(p.switch.meter_set_rates, m.preamble.name, i, meter_rates(me.config))
                p.meter_configs[(me.meter_id, i)] = copy_msg(me.config)
            else:
                call_runtime(p.switch.meter_reset, m.preamble.name, i)
                p.meter_configs.pop((me.meter_id, i), None)

    def _direct_meter_write(self, p: Pipeline, utype: int, dme: p4r.DirectMeterEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "direct meter entries can only be modified")
        ti = p.schema.table(dme.table_entry.table_id)
        if not ti.direct_meter_id:
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} has no direct meter")
        if dme.HasField("counter_data"):
            raise P4RTError(Code.UNIMPLEMENTED, "meter counter data is not supported")
        handle = self._find_handle(p, ti, dme.table_entry)
        if dme.HasField("config"):
            check_meter_config(dme.config)
            rates = meter_rates(dme.config)
        else:
            rates = []
        call_runtime(p.switch.direct_meter_set_rates, ti.name, handle, rates)
        key = self._match_key(ti, dme.table_entry)
        stored = p.entries.get(ti.msg.preamble.id, {}).get((key, dme.table_entry.priority))
        if stored is not None:
            stored.meter_config = copy_msg(dme.config) if dme.HasField("config") else None

    def _register_write(self, p: Pipeline, utype: int, re_: p4r.RegisterEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "register entries can only be modified")
        r = p.schema.lookup("registers", re_.register_id)
        width = register_width(r)
        if re_.data.WhichOneof("data") != "bitstring":
            raise P4RTError(Code.INVALID_ARGUMENT, f"register {r.preamble.name} takes a bitstring value")
        value = decode_uint(re_.data.bitstring, width, f"register {r.preamble.name}")
        for i in self._index_range(r.size, re_, r.preamble.name):
            call_runtime(p.switch.register_write, r.preamble.name, i, value)

    # -- packet replication engine ---------------------------------------

    def _replicas(self, replicas: Iterable[p4r.Replica], what: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()
        for r in replicas:
            if r.backup_replicas:
                raise P4RTError(Code.UNIMPLEMENTED, "backup replicas are not supported")
            which = r.WhichOneof("port_kind")
            port = decode_uint(r.port, 32, f"{what} port") if which == "port" else r.egress_port
            if port > MAX_PORT:
                raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: port {port} is outside 0..{MAX_PORT}")
            pair = (port, r.instance)
            if pair in seen:
                raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: replica (port {port}, instance {r.instance}) given twice")
            seen.add(pair)
            out.append(pair)
        return out

    def _pre_write(self, p: Pipeline, utype: int, pre: p4r.PacketReplicationEngineEntry) -> None:
        which = pre.WhichOneof("type")
        sw = p.switch
        if which == "multicast_group_entry":
            mg = pre.multicast_group_entry
            gid = mg.multicast_group_id
            if gid == 0 or gid > 0xFFFF:
                raise P4RTError(Code.INVALID_ARGUMENT, f"multicast group id {gid} is outside 1..65535")
            exists = gid in p.mc_groups
            if utype == p4r.Update.INSERT and exists:
                raise P4RTError(Code.ALREADY_EXISTS, f"multicast group {gid} exists")
            if utype in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
                raise P4RTError(Code.NOT_FOUND, f"no multicast group {gid}")
            old = len(p.mc_groups[gid].metadata) if exists else 0
            if utype == p4r.Update.DELETE:
                call_runtime(sw.delete_multicast_group, gid)
                del p.mc_groups[gid]
                p.metadata_bytes -= old
                return
            reps = self._replicas(mg.replicas, f"multicast group {gid}")
            self._check_metadata(p, old, len(mg.metadata), f"multicast group {gid}")
            call_runtime(sw.set_multicast_group, gid, reps)
            p.mc_groups[gid] = copy_msg(mg)
            p.metadata_bytes += len(mg.metadata) - old
        elif which == "clone_session_entry":
            cs = pre.clone_session_entry
            sid = cs.session_id
            exists = sid in p.clone_sessions
            if utype == p4r.Update.INSERT and exists:
                raise P4RTError(Code.ALREADY_EXISTS, f"clone session {sid} exists")
            if utype in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
                raise P4RTError(Code.NOT_FOUND, f"no clone session {sid}")
            if utype == p4r.Update.DELETE:
                call_runtime(sw.mirroring_delete, sid)
                del p.clone_sessions[sid]
                return
            if cs.class_of_service:
                raise P4RTError(Code.UNIMPLEMENTED, "clone session class of service is not supported")
            reps = self._replicas(cs.replicas, f"clone session {sid}")
            call_runtime(sw.set_clone_session, sid, reps, cs.packet_length_bytes)
            p.clone_sessions[sid] = copy_msg(cs)
        else:
            raise P4RTError(Code.INVALID_ARGUMENT, "packet replication engine entry without a type")

    # -- parser value sets -----------------------------------------------

    def _value_set_write(self, p: Pipeline, utype: int, vse: p4r.ValueSetEntry) -> None:
        if utype != p4r.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "value set entries can only be modified (the set is replaced)")
        vs = p.schema.lookup("value_sets", vse.value_set_id)
        name = vs.preamble.name
        fields = {f.id: f for f in vs.match}
        values: set[Any] = set()
        for member in vse.members:
            got: dict[int, int] = {}
            for fm in member.match:
                f = fields.get(fm.field_id)
                if f is None:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"value set {name} has no field id {fm.field_id}")
                if fm.WhichOneof("field_match_type") != "exact":
                    raise P4RTError(Code.INVALID_ARGUMENT, f"value set {name} members are exact values")
                got[fm.field_id] = decode_uint(fm.exact.value, f.bitwidth, f"{name}.{f.name or 'value'}")
            if set(got) != set(fields):
                raise P4RTError(Code.INVALID_ARGUMENT, f"a member of value set {name} must give every field")
            ordered = tuple(got[f.id] for f in vs.match)
            key = ordered[0] if len(ordered) == 1 else ordered
            if key in values:
                raise P4RTError(Code.ALREADY_EXISTS, f"value set {name}: duplicate member")
            values.add(key)
        if vs.size and len(values) > vs.size:
            raise P4RTError(Code.RESOURCE_EXHAUSTED, f"value set {name} holds at most {vs.size} members")
        target = call_runtime(lambda n: p.switch.value_sets[n], name)
        target.clear()
        target.update(values)

    def _read_value_sets(self, p: Pipeline, q: p4r.ValueSetEntry) -> Iterator[p4r.Entity]:
        ids = [q.value_set_id] if q.value_set_id else sorted(p.schema.value_sets)
        for vid in ids:
            vs = p.schema.lookup("value_sets", vid)
            members = call_runtime(lambda n: p.switch.value_sets[n], vs.preamble.name)
            e = p4r.Entity()
            e.value_set_entry.value_set_id = vid
            for m in sorted(members, key=lambda v: v if isinstance(v, tuple) else (v,)):
                vals = m if isinstance(m, tuple) else (m,)
                mem = e.value_set_entry.members.add()
                for f, v in zip(vs.match, vals):
                    mem.match.add(field_id=f.id).exact.value = encode_uint(v)
            yield e

    # -- digests ----------------------------------------------------------

    def _digest_write(self, p: Pipeline, utype: int, de: p4r.DigestEntry) -> None:
        p.schema.lookup("digests", de.digest_id)
        exists = de.digest_id in p.digest_configs
        if utype == p4r.Update.INSERT and exists:
            raise P4RTError(Code.ALREADY_EXISTS, f"digest {de.digest_id:#x} is already configured")
        if utype in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
            raise P4RTError(Code.NOT_FOUND, f"digest {de.digest_id:#x} is not configured")
        if utype == p4r.Update.DELETE:
            del p.digest_configs[de.digest_id]
            self.digests.remove(de.digest_id)
            return
        if not de.HasField("config"):
            raise P4RTError(Code.INVALID_ARGUMENT, "digest entry without a config")
        if de.config.max_timeout_ns < 0 or de.config.max_list_size < 0 or de.config.ack_timeout_ns < 0:
            raise P4RTError(Code.INVALID_ARGUMENT, "digest config values must be >= 0")
        p.digest_configs[de.digest_id] = copy_msg(de.config)

    def _on_digest(self, digest: Any) -> None:
        """Runtime callback: one digest message generated by the data plane."""
        p = self.pipeline
        if p is None:
            return
        d = p.schema.digests_by_name.get(getattr(digest, "name", ""))
        if d is None or d.preamble.id not in p.digest_configs:
            self.stats["digests_dropped"] += 1
            return
        data = digest_data(p.schema, d, getattr(digest, "fields", {}))
        if self.digests.offer(d.preamble.id, data, self.clock()) and self.on_digest_ready is not None:
            self.on_digest_ready()

    def poll_digests(self) -> tuple[list[p4r.DigestList], float | None]:
        """Digest lists due now, and when to poll again (None: nothing buffered)."""
        with self.lock:
            p = self.pipeline
            if p is None:
                return [], None
            return self.digests.poll(p.digest_configs, self.clock())

    def ack_digest(self, ack: p4r.DigestListAck) -> None:
        with self.lock:
            p = self.require_pipeline()
            p.schema.lookup("digests", ack.digest_id)
            self.digests.ack(ack.digest_id, ack.list_id)

    # ------------------------------------------------------------------
    # Read
    # ------------------------------------------------------------------

    def read(self, entity: p4r.Entity) -> list[p4r.Entity]:
        with self.lock:
            p = self.require_pipeline()
            kind = entity.WhichOneof("entity")
            if kind == "table_entry":
                return list(self._read_tables(p, entity.table_entry))
            if kind == "counter_entry":
                return list(self._read_counters(p, entity.counter_entry))
            if kind == "direct_counter_entry":
                return list(self._read_direct_counters(p, entity.direct_counter_entry))
            if kind == "meter_entry":
                return list(self._read_meters(p, entity.meter_entry))
            if kind == "direct_meter_entry":
                return list(self._read_direct_meters(p, entity.direct_meter_entry))
            if kind == "register_entry":
                return list(self._read_registers(p, entity.register_entry))
            if kind == "packet_replication_engine_entry":
                return list(self._read_pre(p, entity.packet_replication_engine_entry))
            if kind == "digest_entry":
                return list(self._read_digests(p, entity.digest_entry))
            if kind == "value_set_entry":
                return list(self._read_value_sets(p, entity.value_set_entry))
            if kind is None:
                raise P4RTError(Code.INVALID_ARGUMENT, "read of an empty entity")
            raise P4RTError(Code.UNIMPLEMENTED, f"{kind} is not supported by this switch")

    def _tables_for(self, p: Pipeline, table_id: int) -> list[TableInfo]:
        if table_id == 0:
            return sorted(p.schema.tables.values(), key=lambda t: t.msg.preamble.id)
        return [p.schema.table(table_id)]

    def _read_tables(self, p: Pipeline, q: p4r.TableEntry) -> Iterator[p4r.Entity]:
        for ti in self._tables_for(p, q.table_id):
            tid = ti.msg.preamble.id
            if q.is_default_action:
                yield p4r.Entity(table_entry=self._default_entry(p, ti))
                continue
            rows: list[tuple[p4r.TableEntry, int, p4r.MeterConfig | None]] = []
            for _, _, te, handle in self._const_entries(p, ti):
                rows.append((te, handle, None))
            for stored in p.entries.get(tid, {}).values():
                rows.append((stored.entry, stored.handle, stored.meter_config))
            if len(q.match) and q.table_id:
                key = self._match_key(ti, q)
                rows = [r for r in rows if self._match_key(ti, r[0]) == key and r[0].priority == q.priority]
            elif q.priority and q.table_id:
                rows = [r for r in rows if r[0].priority == q.priority]
            for te, handle, mc in rows:
                out = copy_msg(te)
                if q.HasField("counter_data") and ti.direct_counter_id:
                    pk, by = call_runtime(p.switch.direct_counter_read, ti.name, handle)
                    out.counter_data.packet_count, out.counter_data.byte_count = pk, by
                if q.HasField("meter_config") and ti.direct_meter_id and mc is not None:
                    out.meter_config.CopyFrom(mc)
                yield p4r.Entity(table_entry=out)

    def _default_entry(self, p: Pipeline, ti: TableInfo) -> p4r.TableEntry:
        tid = ti.msg.preamble.id
        te = p4r.TableEntry(table_id=tid, is_default_action=True)
        try:
            aname, params = p.switch.table_get_default(ti.name)
        except Exception:
            written = p.default_entries.get(tid)
            if written is not None:
                return copy_msg(written)
            return te
        a = next((a for a in p.schema.actions.values() if a.preamble.name == aname), None)
        if a is None:
            return te
        te.action.action.action_id = a.preamble.id
        values = param_values(a, params)
        for prm in a.params:
            te.action.action.params.add(param_id=prm.id, value=encode_uint(values.get(prm.name, 0)))
        return te

    def _read_counters(self, p: Pipeline, q: p4r.CounterEntry) -> Iterator[p4r.Entity]:
        ids = [q.counter_id] if q.counter_id else sorted(p.schema.counters)
        for cid in ids:
            c = p.schema.lookup("counters", cid)
            for i in self._index_range(c.size, q, c.preamble.name):
                pk, by = call_runtime(p.switch.counter_read, c.preamble.name, i)
                e = p4r.Entity()
                e.counter_entry.counter_id = cid
                e.counter_entry.index.index = i
                e.counter_entry.data.packet_count = pk
                e.counter_entry.data.byte_count = by
                yield e

    def _read_direct_counters(self, p: Pipeline, q: p4r.DirectCounterEntry) -> Iterator[p4r.Entity]:
        te_q = q.table_entry
        for ti in self._tables_for(p, te_q.table_id):
            if not ti.direct_counter_id:
                if te_q.table_id:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} has no direct counter")
                continue
            sel = p4r.TableEntry(table_id=ti.msg.preamble.id)
            sel.match.extend(te_q.match)
            sel.priority = te_q.priority
            for ent in self._read_tables(p, sel):
                e = p4r.Entity()
                e.direct_counter_entry.table_entry.CopyFrom(ent.table_entry)
                pk, by = call_runtime(p.switch.direct_counter_read, ti.name, self._find_handle(p, ti, ent.table_entry))
                e.direct_counter_entry.data.packet_count = pk
                e.direct_counter_entry.data.byte_count = by
                yield e

    def _read_meters(self, p: Pipeline, q: p4r.MeterEntry) -> Iterator[p4r.Entity]:
        ids = [q.meter_id] if q.meter_id else sorted(p.schema.meters)
        for mid in ids:
            m = p.schema.lookup("meters", mid)
            for i in self._index_range(m.size, q, m.preamble.name):
                e = p4r.Entity()
                e.meter_entry.meter_id = mid
                e.meter_entry.index.index = i
                cfg = p.meter_configs.get((mid, i))
                if cfg is not None:
                    e.meter_entry.config.CopyFrom(cfg)
                yield e

    def _read_direct_meters(self, p: Pipeline, q: p4r.DirectMeterEntry) -> Iterator[p4r.Entity]:
        te_q = q.table_entry
        for ti in self._tables_for(p, te_q.table_id):
            if not ti.direct_meter_id:
                if te_q.table_id:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"table {ti.name} has no direct meter")
                continue
            for stored in p.entries.get(ti.msg.preamble.id, {}).values():
                if len(te_q.match) and self._match_key(ti, te_q) != self._match_key(ti, stored.entry):
                    continue
                e = p4r.Entity()
                e.direct_meter_entry.table_entry.CopyFrom(stored.entry)
                if stored.meter_config is not None:
                    e.direct_meter_entry.config.CopyFrom(stored.meter_config)
                yield e

    def _read_registers(self, p: Pipeline, q: p4r.RegisterEntry) -> Iterator[p4r.Entity]:
        ids = [q.register_id] if q.register_id else sorted(p.schema.registers)
        for rid in ids:
            r = p.schema.lookup("registers", rid)
            for i in self._index_range(r.size, q, r.preamble.name):
                e = p4r.Entity()
                e.register_entry.register_id = rid
                e.register_entry.index.index = i
                e.register_entry.data.bitstring = encode_uint(call_runtime(p.switch.register_read, r.preamble.name, i))
                yield e

    def _read_pre(self, p: Pipeline, q: p4r.PacketReplicationEngineEntry) -> Iterator[p4r.Entity]:
        which = q.WhichOneof("type")
        if which == "multicast_group_entry":
            gid = q.multicast_group_entry.multicast_group_id
            groups = [p.mc_groups[g] for g in sorted(p.mc_groups) if gid in (0, g)]
            for mg in groups:
                e = p4r.Entity()
                e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(mg)
                yield e
        elif which == "clone_session_entry":
            sid = q.clone_session_entry.session_id
            for s in sorted(p.clone_sessions):
                if sid in (0, s):
                    e = p4r.Entity()
                    e.packet_replication_engine_entry.clone_session_entry.CopyFrom(p.clone_sessions[s])
                    yield e
        else:
            raise P4RTError(Code.INVALID_ARGUMENT, "packet replication engine read without a type")

    def _read_digests(self, p: Pipeline, q: p4r.DigestEntry) -> Iterator[p4r.Entity]:
        if q.digest_id:
            p.schema.lookup("digests", q.digest_id)
        for did in sorted(p.digest_configs):
            if q.digest_id in (0, did):
                e = p4r.Entity()
                e.digest_entry.digest_id = did
                e.digest_entry.config.CopyFrom(p.digest_configs[did])
                yield e

    # ------------------------------------------------------------------
    # Packet I/O
    # ------------------------------------------------------------------

    def packet_out_frame(self, po: p4r.PacketOut) -> bytes:
        """The frame to inject at the CPU port: ``packet_out`` header + payload."""
        with self.lock:
            p = self.require_pipeline()
            hdr = p.schema.packet_out
            if hdr is None:
                if len(po.metadata):
                    raise P4RTError(Code.INVALID_ARGUMENT, "the program has no packet_out header but metadata was given")
                return bytes(po.payload)
            fields = {m.id: m for m in hdr.metadata}
            values: dict[int, int] = {}
            for md in po.metadata:
                f = fields.get(md.metadata_id)
                if f is None:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"packet_out has no metadata id {md.metadata_id}")
                values[md.metadata_id] = decode_uint(md.value, f.bitwidth, f"packet_out.{f.name}")
            acc, width = 0, 0
            for m in hdr.metadata:
                acc = (acc << m.bitwidth) | values.get(m.id, 0)
                width += m.bitwidth
            if width % 8:
                raise P4RTError(Code.INTERNAL, f"packet_out header is {width} bits, not whole bytes")
            return encode_width(acc, width) + bytes(po.payload)

    def packet_in(self, frame: bytes) -> p4r.PacketIn | None:
        """A frame the program sent to the CPU port, as a PacketIn (None if too short)."""
        p = self.pipeline
        if p is None:
            return None
        hdr = p.schema.packet_in
        if hdr is None:
            return p4r.PacketIn(payload=frame)
        width = sum(m.bitwidth for m in hdr.metadata)
        nbytes = (width + 7) // 8
        if len(frame) < nbytes:
            self.stats["packet_in_errors"] += 1
            return None
        acc = int.from_bytes(frame[:nbytes], "big") >> (nbytes * 8 - width)
        pi = p4r.PacketIn(payload=frame[nbytes:])
        shift = width
        for m in hdr.metadata:
            shift -= m.bitwidth
            v = (acc >> shift) & ((1 << m.bitwidth) - 1)
            pi.metadata.add(metadata_id=m.id, value=encode_uint(v))
        return pi
