"""A v1model switch whose pipeline runs as native code.

``NativeSwitch`` is the interpreter's ``Switch`` (same control-plane API, same
``Table`` and ``Pre`` objects) whose ``process`` calls the compiled module:
one call runs parser, verify and ingress, one more runs every replica's
egress, computeChecksum and deparser, as the queue model answers in
between.  A caller that keeps a table of every port's queue metadata
(``use_queue_table``: the simulator's nodes) has each packet run in one
call, replication included (the PRE's groups are copied into native memory
after each change).  Registers and counters live in native
memory (``registers``/``counters`` hold views of it); a table write marks the
table and the next packet copies its entries into native memory in the
lookup order the Python table uses.  Meters stay in Python (the native code
calls back), digests are read after ingress.  When the program or the
machine does not allow it, the switch says so in one line and runs the
interpreter.
"""

from __future__ import annotations

import ctypes
import random
from array import array
import sys
from typing import Any, Callable, Optional

from ..interp.switch import REPLICATION, Digest, Egress, Switch
from ..runtime import hashes as H
from ..runtime.externs import CounterArray
from ..runtime.pre import Pre
from ..runtime.tables import Exact, Lpm, Optional_, Range, Table, Ternary
from .build import BuildError, Module, load
from .c_python import (COUNT_MAX, DROPPED_SHIFT, FLAG_DIGESTS, FLAG_EGRESS_FAULT, FLAG_FAULT, FLAG_PARSER_ERROR,
                       REPLICAS_SHIFT, SHARED_SHIFT)
from .cbase import QTABLE_PORTS
from .cgen import NativeUnsupported

_new_tuple = tuple.__new__
_M64 = (1 << 64) - 1
_notified: set[int] = set()
_status: dict[int, str] = {}


def native_status(program: Any) -> str:
    """'native', or why the program runs on the interpreter."""
    return _status.get(id(program), "not tried")


class NativeRegister:
    """``register<bit<W>>`` cells in native memory, as ``RegisterArray``'s interface."""

    def __init__(self, name: str, size: int, width: int, signed: bool, addr: int, owner: Any = None) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self._owner = owner  # keeps the native memory alive while this view is
        self._wide = width > 64
        self._cells = (ctypes.c_uint64 * (size * (2 if self._wide else 1))).from_address(addr)
        self._mask = (1 << width) - 1

    def read(self, index: int) -> int:
        if not 0 <= index < self.size:
            return 0
        c = self._cells
        v = (c[2 * index] | (c[2 * index + 1] << 64)) if self._wide else c[index]
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            v = value & self._mask
            if self._wide:
                self._cells[2 * index], self._cells[2 * index + 1] = v & _M64, v >> 64
            else:
                self._cells[index] = v

    def reset(self) -> None:
        ctypes.memset(ctypes.addressof(self._cells), 0, ctypes.sizeof(self._cells))

    @property
    def values(self) -> list[int]:
        return [self.read(i) for i in range(self.size)]


class NativeCounter(CounterArray):
    """``counter`` cells in native memory, as ``CounterArray``'s interface
    (count, read and write are the runtime's; only the cells live elsewhere)."""

    def __init__(self, name: str, size: int, kind: str, packets: Any, nbytes: Any, owner: Any = None) -> None:
        self.name, self.size, self.kind = name, size, kind
        self._owner = owner  # keeps the native memory alive while this view is
        self.packets = (ctypes.c_uint64 * size).from_address(ctypes.addressof(packets.contents))
        self.bytes = (ctypes.c_uint64 * size).from_address(ctypes.addressof(nbytes.contents))

    def reset(self) -> None:
        for a in (self.packets, self.bytes):
            ctypes.memset(ctypes.addressof(a), 0, ctypes.sizeof(a))


_MUTATORS = ("add", "add_prepared", "modify", "delete", "clear", "set_default", "reset_default")
_mirrored_classes: dict[type, type] = {}


def _mirrored(cls: type) -> type:
    """``cls`` whose writes mark the table for copying into native memory."""
    sub = _mirrored_classes.get(cls)
    if sub is None:
        def wrap(name: str) -> Callable:
            base = getattr(cls, name)

            def method(self: Any, *a: Any, **k: Any) -> Any:
                r = base(self, *a, **k)
                self._native_dirty.add(self.name)
                return r
            method.__name__ = name
            return method
        sub = _mirrored_classes[cls] = type("Mirrored" + cls.__name__, (cls,), {n: wrap(n) for n in _MUTATORS})
    return sub


_PRE_MUTATORS = ("group_create", "group_destroy", "node_create", "node_update", "node_destroy",
                 "node_associate", "node_dissociate", "set_group", "delete_group")


def _pre_writer(name: str) -> Callable:
    base = getattr(Pre, name)

    def method(self: Any, *a: Any, **k: Any) -> Any:
        try:
            return base(self, *a, **k)
        finally:  # a refused request changed nothing; copying again costs only time
            self._native_stale = True
    method.__name__ = name
    return method


class MirroredPre(Pre):
    """``Pre`` whose writes mark its native copy stale (the one-call path
    replicates in native code; the next packet copies the groups again)."""

    _native_stale = True


for _n in _PRE_MUTATORS:
    setattr(MirroredPre, _n, _pre_writer(_n))


_KEY_CODES: dict[tuple, tuple] = {}
_KEY_CODES_MAX = 1 << 18


def _key_code(keys: tuple, widths: tuple[int, ...]) -> tuple:
    """An entry's match as the native table holds it: (values, masks, highs),
    each two words per key element.  Remembered: the switches of one network
    hold many equal matches (a route to every host)."""
    k = (keys, widths)
    code = _KEY_CODES.get(k)
    if code is not None:
        return code
    v: list[int] = []
    m: list[int] = []
    hi: list[int] = []
    for mk, w in zip(keys, widths):
        full = (1 << w) - 1
        tm = type(mk)
        if tm is Exact:
            x, y, z = mk.value, full, 0
        elif tm is Lpm:
            pm = (((1 << mk.prefix_len) - 1) << (w - mk.prefix_len)) if mk.prefix_len else 0
            x, y, z = mk.value & pm, pm, 0
        elif tm is Ternary:
            x, y, z = mk.value, mk.mask, 0
        elif tm is Range:
            x, y, z = mk.low, full, mk.high
        elif tm is Optional_ and mk.value is not None:
            x, y, z = mk.value, full, 0
        else:
            x, y, z = 0, 0, 0
        v += (x & _M64, x >> 64)
        m += (y & _M64, y >> 64)
        hi += (z & _M64, z >> 64)
    if len(_KEY_CODES) >= _KEY_CODES_MAX:
        _KEY_CODES.clear()
    code = _KEY_CODES[k] = (tuple(v), tuple(m), tuple(hi))
    return code


def _ptr(a: array) -> Any:
    """A ``u64 *`` argument over ``a``'s buffer (at least two words, as the C side may read a pair)."""
    if len(a) < 2:
        a.extend((0,) * (2 - len(a)))
    return (ctypes.c_uint64 * len(a)).from_buffer(a)


def _u128_pairs(values: list[int]) -> Any:
    arr = (ctypes.c_uint64 * max(2 * len(values), 2))()
    for i, v in enumerate(values):
        arr[2 * i], arr[2 * i + 1] = v & _M64, (v >> 64) & _M64
    return arr


class NativeSwitch(Switch):
    """``Switch`` running the compiled module (the interpreter when it cannot)."""

    def __init__(self, program: Any, **kw: Any) -> None:
        super().__init__(program, **kw)
        self.native = False
        if not kw.get("fast", True):
            return  # fast=False asks for the reference: the interpreter, each node with its own lowering
        try:
            self._mod = load(program)
        except (NativeUnsupported, BuildError) as exc:
            _status[id(program)] = str(exc)
            if id(program) not in _notified:
                _notified.add(id(program))
                print(f"p4mcc: native pipeline not used ({exc}); running the interpreter", file=sys.stderr)
            return
        _status[id(program)] = "native"
        self._attach(self._mod)
        self.native = True

    def _attach(self, mod: Module) -> None:
        lib, gen = mod.lib, mod.gen
        self._lib = lib
        self._W = lib.sw_new()
        self._outmax = mod.outmax
        self.registers = {}
        for k, (fq, size, w, signed) in enumerate(gen.registers):
            self.registers[fq] = NativeRegister(fq, size, w, signed, lib.sw_reg(self._W, k), self)
        old_ctr = self.counters
        self.counters = {}
        for k, (fq, size) in enumerate(gen.counters):
            self.counters[fq] = NativeCounter(fq, size, old_ctr[fq].kind, lib.sw_ctr(self._W, k, 0),
                                              lib.sw_ctr(self._W, k, 1), self)
        meters = [self.meters[fq] for fq in gen.meters]

        tables_by_ix = [self.tables[fq] for fq, _, _ in gen.tables]

        def meter_cb(k: int, index: int, now_us: int, nbytes: int) -> int:
            if k < 0:  # a direct meter: the entry's own (index is its handle)
                return tables_by_ix[-1 - k]._get(index).meter.execute(now_us, nbytes)
            return meters[k].execute(index, now_us, nbytes)
        self._meter_cb = mod.METER_CB(meter_cb)
        lib.sw_set_meter_cb(self._W, self._meter_cb)
        # hashes and checksums other than csum16: the runtime's own algorithms,
        # one instance per call site (the stateful ones keep state per site)
        seed = self._low.seed
        sites = [(kind, random.Random(seed) if kind == "random" else H.algorithm(name, seed))
                 for kind, name in gen.hash_sites]

        def hash_cb(k: int, buf: Any, n: int, a: int, b: int) -> int:
            kind, f = sites[k]
            if kind == "random":  # random(lo = a, hi = b), drawn as the interpreter draws it
                return (a + f.getrandbits(64) % (b - a + 1) if b >= a else a) & _M64
            h = f(ctypes.string_at(buf, n))
            if kind == "csum":
                return h & _M64
            return (a + h % (b or 1)) & _M64  # hash(base = a, max = b)
        self._hash_cb = mod.HASH_CB(hash_cb)
        lib.sw_set_hash_cb(self._W, self._hash_cb)
        log_sites = gen.log_sites

        def log_cb(k: int, vals: Any) -> None:
            fmt, kinds, is_list = log_sites[k]
            xs = []
            for i, kd in enumerate(kinds):
                v = vals[i]
                if kd == "bool":
                    v = bool(v)
                elif kd < 0 and v >> (-kd - 1):
                    v -= 1 << -kd
                xs.append(v)
            data = None if not kinds and is_list is False else (tuple(xs) if is_list else xs[0])
            if self._on_log is not None:
                self._on_log(self._ctx.fmt(fmt, data))
        self._log_cb = mod.LOG_CB(log_cb)
        lib.sw_set_log(self._W, int(self._on_log is not None), self._log_cb)
        self._tix = {fq: i for i, (fq, _, _) in enumerate(gen.tables)}
        self._alists = {fq: al for fq, _, al in gen.tables}
        self._direct_counted = {fq for fq, c, _ in gen.direct if c}
        self._truncates = gen.truncates
        self._aid = gen.action_ids
        self._native_dirty: set[str] = set(self._tix)
        for fq, t in self.tables.items():
            if fq not in self._tix:
                raise NativeUnsupported(f"table {fq} has no native counterpart")
            t.__class__ = _mirrored(type(t))
            t._native_dirty = self._native_dirty
        self._digest_meta = gen.digests
        self._dig_vals = (ctypes.c_uint64 * max(gen.ndigest_fields, 1))()
        self._rep_cache: dict[int, tuple] = {}
        self._bufs: dict[int, tuple] = {}
        self._bufs_n = -1  # the replica count whose buffers the module's inputs point at
        self._one_rid = (ctypes.c_uint64 * 1)()
        self._one_port = (ctypes.c_uint64 * 1)()
        # what sw_ingress leaves for Python (payload offset, mgid, egress_spec,
        # digests) and the inputs of the two entry points (cgen.py, ``sw_*_w``)
        self._res = (ctypes.c_uint64 * 8).from_address(self._W)
        self._in = (ctypes.c_uint64 * 24).from_address(self._W + 64)
        self._in[7] = self.queues_per_port if self._sm_prio else 1 << 30
        self._in[8] = self.drop_port
        self._Wp = ctypes.c_void_p(self._W)
        self._ingress_w, self._egress_w = self._lib.sw_ingress_w, self._lib.sw_egress_w
        self._process_w = self._lib.sw_process_w
        self._py = mod.py_process
        self._use_py = True  # False: through ctypes even so (the tests take both ways)
        self._one_call = False
        self._qtable: Any = None
        self._oports: Any = None
        self._one_port_a, self._one_rid_a = ctypes.addressof(self._one_port), ctypes.addressof(self._one_rid)

    def __del__(self) -> None:
        W = getattr(self, "_W", None)
        if W:
            self._W = None
            self._lib.sw_free(W)

    # ------------------------------------------------------------ tables
    def _gid(self, action: str) -> int:
        gid = self._aid.get(action)
        if gid is None:
            gid = self._aid[action] = len(self._aid)
        return gid

    def _sync(self, pull: bool = True) -> None:
        """Copy every marked table into native memory (``pull``: first read
        back its direct counters, which count natively)."""
        lib, W = self._lib, self._W
        for fq in sorted(self._native_dirty):
            t: Table = self.tables[fq]
            i = self._tix[fq]
            al = self._alists[fq]
            if pull and fq in self._direct_counted:
                self._pull_counters(fq)
            lib.tbl_clear(W, i)
            d = t.default
            lib.tbl_default(W, i, al.index(d.action) if d.action in al else -1, self._gid(d.action),
                            _u128_pairs(list(d.params)), len(d.params))
            if t._exact_only:
                order = list(t.entries.values())
            elif t._lpm_index >= 0:
                li = t._lpm_index
                order = sorted(t.entries.values(), key=lambda e: -e.keys[li].prefix_len)
            else:
                order = t._scan_order()
            widths = tuple(k.width for k in t.keys)
            np_ = max((len(e.params) for e in order), default=0)
            acts, v, m, hi, prm = array("Q"), array("Q"), array("Q"), array("Q"), array("Q")
            gid = self._gid
            act_ix: dict[str, tuple[int, int]] = {}
            for e in order:  # action ids in the order the entries first use them
                if e.action not in act_ix:
                    act_ix[e.action] = ((al.index(e.action) if e.action in al else -1) & _M64, gid(e.action))
            pad = (0, 0) * np_
            for e in order:
                c = e.counter or (0, 0)
                acts.extend(act_ix[e.action])
                acts.extend((e.handle, c[0] & _M64, c[1] & _M64))
                code = _key_code(e.keys, widths)
                v.extend(code[0])
                m.extend(code[1])
                hi.extend(code[2])
                if e.params:
                    for x in e.params:
                        prm.extend((x & _M64, x >> 64))
                    if len(e.params) < np_:
                        prm.extend(pad[:2 * (np_ - len(e.params))])
                elif np_:
                    prm.extend(pad)
            if order:
                lib.tbl_load(W, i, len(order), _ptr(acts), _ptr(v), _ptr(m), _ptr(hi), _ptr(prm), np_)
            lib.tbl_done(W, i)
        self._native_dirty.clear()

    @property
    def on_log(self) -> Optional[Callable[[str], None]]:
        """Called with each ``log_msg`` text; None: not formatted at all."""
        return self._on_log

    @on_log.setter
    def on_log(self, fn: Optional[Callable[[str], None]]) -> None:
        Switch.on_log.fset(self, fn)  # type: ignore[attr-defined]
        if getattr(self, "native", False):
            self._lib.sw_set_log(self._W, int(fn is not None), self._log_cb)

    def _pull_counters(self, fq: str) -> None:
        """Direct counters counted in native memory, back into the table's entries."""
        t = self.tables[fq]
        n = len(t.entries)
        if not n:
            return
        buf = (ctypes.c_uint64 * (3 * max(n, 1)))()
        got = self._lib.tbl_counters(self._W, self._tix[fq], buf)
        for j in range(got):
            e = t.entries.get(buf[3 * j])
            if e is not None and e.counter is not None:
                e.counter[0], e.counter[1] = buf[3 * j + 1], buf[3 * j + 2]

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        if self.native:
            if self._native_dirty:
                self._sync()
            self._pull_counters(self._table(table).name)
        return super().direct_counter_read(table, handle)

    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        if self.native:
            if self._native_dirty:
                self._sync()
            self._pull_counters(self._table(table).name)
        super().direct_counter_write(table, handle, packets, nbytes)
        if self.native:  # the value written is the one to count from
            self._native_dirty.add(self._table(table).name)
            self._sync(pull=False)

    # ------------------------------------------------------------ packets
    def use_queue_table(self) -> Any:
        """Run each packet in one native call from now on (ingress, replication,
        egress and deparser), with each replica's queue metadata read from a
        table instead of asked from ``queue_model`` between ingress and egress.

        Returns the table, ``QTABLE_PORTS`` x 3 words (``enq_qdepth``,
        ``deq_timedelta`` in us, ``deq_qdepth`` of a packet queued on that
        port; all 0 at first), which the caller keeps equal to what
        ``queue_model`` would answer at the time of the next packet, before
        each packet; None when the program reads no queue metadata (nothing
        to keep) or runs on the interpreter (the switch is unchanged)."""
        if not self.native:
            return None
        if not self._one_call:
            self._one_call = True
            self.pre.__class__ = MirroredPre
            self.pre._native_stale = True
            if self._reads_queue:
                self._qtable = (ctypes.c_uint64 * (3 * QTABLE_PORTS))()
                self._in[15] = ctypes.addressof(self._qtable)
        return self._qtable

    def _sync_pre(self) -> None:
        """Copy the replication engine's groups into native memory, and size
        the output buffers for the largest."""
        pre = self.pre
        mgids = array("Q", sorted(m for m in pre.groups if 0 <= m <= _M64))
        ng = len(mgids)
        off, ports, rids = array("Q", [0]), array("Q"), array("Q")
        for m in mgids:
            for p, r in pre.replicas(m):
                ports.append(p & _M64)
                rids.append(r & _M64)
            off.append(len(ports))
        n = max([1] + [off[i + 1] - off[i] for i in range(ng)])
        self._lib.sw_pre_load(self._W, ng, _ptr(mgids), _ptr(off), _ptr(ports), _ptr(rids))
        if self._oports is None or len(self._oports) < n:
            self._oports = (ctypes.c_uint64 * n)()
            self._in[16] = ctypes.addressof(self._oports)
        bufs = self._egress_bufs(n)
        a = self._in
        a[9] = bufs[8] if self._qtable is not None else 0
        a[7] = self.queues_per_port if self._sm_prio else 1 << 30
        a[8] = self.drop_port
        # the CPython entry point counts a packet's replicas in 16 bits
        self._py = self._mod.py_process if self._use_py and n <= COUNT_MAX else None
        pre._native_stale = False

    def process(self, port: int, data: bytes, now: float = 0.0) -> list[Egress]:
        if not self.native:
            return super().process(port, data, now)
        return [_new_tuple(Egress, t) for t in self.process_raw(port, data, now)]

    def process_raw(self, port: int, data: bytes, now: float = 0.0) -> list[tuple[int, bytes, int]]:
        """``process`` with each output a plain ``(port, data, instance_type)``
        tuple (what the simulator's nodes read; an ``Egress`` costs a few
        tenths of a microsecond more per replica to make)."""
        if not self.native:
            return super().process(port, data, now)
        if self._one_call:
            return self._process_one(port, data, now)
        now = self._begin(now)
        stats = self.stats
        out: list[tuple[int, bytes, int]] = []
        if type(data) is not bytes:
            data = bytes(data)
        self._now = now
        a = self._in
        a[5] = int(round((now - self.start_time) * 1e6))
        a[6] = len(data)
        a[13] = port & _M64
        if self._ingress_ended(self._ingress_w(self._Wp, data), now):
            return out
        res = self._res
        mgid = res[1]
        if mgid:
            reps = self.pre.replicas(mgid)
            if not reps:
                stats["dropped"] += 1
                return out
            stats["replicas"] += len(reps)
            c = self._rep_cache.get(mgid)
            if c is None or c[0] is not reps:
                n = len(reps)
                ports = (ctypes.c_uint64 * n)(*[p for p, _ in reps])
                rids = (ctypes.c_uint64 * n)(*[r for _, r in reps])
                c = self._rep_cache[mgid] = (reps, ctypes.addressof(ports), ctypes.addressof(rids),
                                             [p for p, _ in reps], ports, rids)
            self._native_egress(c[1], c[2], c[3], REPLICATION, 1, data[res[0]:], out)
        else:
            spec = res[2]
            if spec == self.drop_port:
                stats["dropped"] += 1
                return out
            self._one_port[0] = spec
            self._native_egress(self._one_port_a, self._one_rid_a, [spec], 0, 0, data[res[0]:], out)
        stats["tx"] += len(out)
        return out

    def _process_one(self, port: int, data: bytes, now: float) -> list[tuple[int, bytes, int]]:
        """``process_raw`` in one native call (``use_queue_table``): through
        the module's CPython entry point when it has one, else through ctypes.
        ``_begin`` is written out here: this runs once per packet a node
        forwards, and a call more per packet was a tenth of its cost."""
        if now < self._latest:
            now = self._latest
        else:
            self._latest = now
        stats = self.stats
        stats["rx"] += 1
        if self._native_dirty:
            self._sync()
        if self.pre._native_stale:
            self._sync_pre()
        if type(data) is not bytes:
            data = bytes(data)
        now_us = round((now - self.start_time) * 1e6)
        py = self._py
        if py is None:
            return self._process_ctypes(port, data, now, now_us)
        out, fl = py(self._W, data, port, now_us)
        if fl:
            if fl & 0xFF:  # what the two-call path meets in this order
                if fl & FLAG_PARSER_ERROR:
                    stats["parser_errors"] += 1
                if fl & FLAG_FAULT:
                    stats["errors"] += 1
                    self.last_error = "P4RuntimeFault: run-time fault in the native pipeline"
                    return out
                if fl & FLAG_DIGESTS:
                    self._take_digests(self._res[3], now)
                if fl & FLAG_EGRESS_FAULT:
                    stats["errors"] += 1
                    self.last_error = "P4RuntimeFault: run-time fault in the native pipeline"
            k = (fl >> DROPPED_SHIFT) & COUNT_MAX
            if k:
                stats["dropped"] += k
            k = (fl >> REPLICAS_SHIFT) & COUNT_MAX
            if k:
                stats["replicas"] += k
            k = fl >> SHARED_SHIFT
            if k:
                self.shared_outputs += k
        stats["tx"] += len(out)
        return out

    #: ``process_raw`` for a caller that has called ``use_queue_table`` on a
    #: native switch: the same outputs, without ``process_raw``'s dispatch
    process_queued = _process_one

    def _begin(self, now: float) -> float:
        """A packet arrives: the switch's clock never runs back, and table writes reach native memory
        (``_process_one`` does the same inline)."""
        if now < self._latest:
            now = self._latest
        else:
            self._latest = now
        self.stats["rx"] += 1
        if self._native_dirty:
            self._sync()
        return now

    def _ingress_ended(self, status: int, now: float) -> bool:
        """Count a ctypes call's ingress status; True when a run-time fault ended the packet
        (no output).  Digests its ingress made are taken here."""
        if status:
            if status & 2:
                self.stats["parser_errors"] += 1
            if status & 1:
                self.stats["errors"] += 1
                self.last_error = "P4RuntimeFault: run-time fault in the native pipeline"
                return True
        if self._digest_meta and self._res[3]:
            self._take_digests(self._res[3], now)
        return False

    def _process_ctypes(self, port: int, data: bytes, now: float, now_us: int) -> list[tuple[int, bytes, int]]:
        """``_process_one`` without the CPython entry point."""
        a = self._in
        a[5] = now_us & _M64
        a[6] = len(data)
        a[13] = port & _M64
        stats = self.stats
        out: list[tuple[int, bytes, int]] = []
        if self._ingress_ended(self._process_w(self._Wp, data), now):
            return out
        res = self._res
        n = res[4]
        if not n:
            stats["dropped"] += 1
            return out
        if res[1]:
            stats["replicas"] += n
        self._collect(self._oports[:n], res[5], data[res[0]:], out)
        stats["tx"] += len(out)
        return out

    def _take_digests(self, n: int, now: float) -> None:
        """The ``n`` digests the last ingress run left, to ``on_digest`` or the queue."""
        for i in range(n):
            k = self._lib.sw_dig(self._W, i, self._dig_vals)
            name, fields = self._digest_meta[k]
            d = Digest(name, {f: self._dig_vals[j] for j, (f, _) in enumerate(fields)}, now)
            if self.on_digest is not None:
                self.on_digest(d)
            else:
                self._digests.append(d)

    def _egress_bufs(self, n: int) -> tuple:
        """The output buffers for ``n`` replicas, their addresses written into
        the module's inputs (kept there until another ``n`` needs others)."""
        bufs = self._bufs.get(n)
        if bufs is None:
            b = (ctypes.create_string_buffer(n * self._outmax), (ctypes.c_int64 * n)(), (ctypes.c_uint64 * n)(),
                 (ctypes.c_uint64 * (3 * n))(), (ctypes.c_uint64 * n)())
            bufs = self._bufs[n] = b + tuple(ctypes.addressof(x) for x in b)
        a = self._in
        a[10], a[11], a[12] = bufs[5], bufs[6], bufs[7]
        a[14] = bufs[9] if self._truncates else 0
        self._bufs_n, self._cur_bufs = n, bufs
        return bufs

    def _native_egress(self, ports: int, rids: int, plist: list[int], itype: int, set_rid: int,
                       payload: bytes, out: list[tuple[int, bytes, int]]) -> None:
        """Every replica (port, rid) through egress, computeChecksum and the
        deparser in one native call; ``ports``/``rids`` are array addresses."""
        n = len(plist)
        bufs = self._bufs.get(n) if self._bufs_n == n else self._egress_bufs(n)
        buf, lens, itypes, q, truncs = bufs[:5]
        a = self._in
        a[0], a[1], a[2], a[3], a[4] = ports, rids, n, itype, set_rid
        a[7] = self.queues_per_port if self._sm_prio else 1 << 30
        a[8] = self.drop_port
        if self._reads_queue and self.queue_model is not None:
            now = self._now
            queue_model = self.queue_model
            for i, p in enumerate(plist):
                enq, delta, deq = queue_model(p, now)
                q[3 * i], q[3 * i + 1], q[3 * i + 2] = enq & _M64, delta & _M64, deq & _M64
            a[9] = bufs[8]
        else:
            a[9] = 0
        self._collect(plist, self._egress_w(self._Wp), payload, out)

    def _collect(self, plist: list[int], done: int, payload: bytes, out: list[tuple[int, bytes, int]]) -> None:
        """The outputs of an egress run over ``plist``'s replicas, ``done`` of them finished."""
        n = len(plist)
        buf, lens, itypes, _, truncs = self._cur_bufs[:5]
        if n == 1 and done == 1:  # unicast: no replica to share with
            L = lens[0]
            if L < 0:
                self.stats["dropped"] += 1
                return
            pkt = buf[:L] + payload
            if self._truncates and truncs[0]:
                pkt = pkt[:truncs[0]]
            out.append((plist[0], pkt, itypes[0]))
            return
        om = self._outmax
        last_h = last_pkt = None
        raw = buf.raw  # one copy of the whole buffer: cheaper than a ctypes call per replica
        its = itypes[:done]
        for i, L in enumerate(lens[:done]):
            if L < 0:
                self.stats["dropped"] += 1
                continue
            h = raw[i * om:i * om + L]
            if h != last_h:  # replicas with equal headers share one frame object, as the interpreter's do
                last_h, last_pkt = h, h + payload
            else:
                self.shared_outputs += 1
            if self._truncates and truncs[i]:
                out.append((plist[i], last_pkt[:truncs[i]], its[i]))
            else:
                out.append((plist[i], last_pkt, its[i]))
        if done < n:
            self.stats["errors"] += 1
            self.last_error = "P4RuntimeFault: run-time fault in the native pipeline"


def make_switch(program: Any, pipeline: str = "interp", **kw: Any) -> Switch:
    """A switch for ``program`` on the ``interp`` (reference) or ``native`` pipeline."""
    if pipeline == "interp":
        return Switch(program, **kw)
    if pipeline == "native":
        return NativeSwitch(program, **kw)
    raise ValueError(f"unknown pipeline {pipeline!r} (interp or native)")
