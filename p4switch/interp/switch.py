"""The v1model switch: the lowered pipeline plus BMv2 simple_switch's traffic manager.

``Switch.process`` follows simple_switch's ingress and egress threads step
by step (``targets/simple_switch/simple_switch.cpp`` in behavioral-model):

after ingress: ingress clone (the original packet re-parsed, metadata reset,
preserved field list copied, ``instance_type`` 1), digests, resubmit (the
original packet re-enters ingress with ``instance_type`` 6 and nothing else
happens), multicast (one replica per PRE (port, rid), ``egress_rid`` set,
``instance_type`` 5), else unicast to ``egress_spec`` unless it is the drop
port.  In egress: ``egress_port`` set, ``egress_spec`` zeroed, egress clone
(headers as egress left them, metadata reset, ``instance_type`` 2), drop if
``egress_spec`` is the drop port, computeChecksum, deparser, recirculate
(the deparsed packet re-enters ingress with ``instance_type`` 4).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

from ..runtime.externs import CounterArray, MeterArray, RegisterArray
from ..runtime.pre import MAX_MIRROR_SESSION_ID, MirrorSession, Pre, PreError
from ..runtime.tables import ActionCall, Table, TableEntry, TableError
from . import values as V
from .codegen import FieldList, Lowering, UnsupportedError
from .shared import instance as shared_instance
from .values import ExitSignal, PacketIn, PacketOut, ParserError

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
#: standard metadata queue fields the traffic manager fills for egress (``_stamp_egress``)
QUEUE_FIELDS = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth")
MAX_PASSES = 64  # resubmit/recirculate passes per input packet before the switch gives up


class Egress(NamedTuple):
    """A packet leaving the switch."""

    port: int
    data: bytes
    instance_type: int = 0


_new_tuple = tuple.__new__


@dataclass
class Digest:
    """One ``digest()`` message: the P4Info digest name and its field values."""

    name: str
    fields: Any
    time: float


def _get_path(root: Any, path: Sequence[str]) -> Any:
    for p in path:
        root = getattr(root, p)
    return root


def _copy_fields(fl: Optional[FieldList], src: tuple, dst: tuple) -> None:
    if fl is None:
        return
    for role, path in fl.paths:
        if not path:
            continue
        s = _get_path(src[role], path[:-1])
        d = _get_path(dst[role], path[:-1])
        v = getattr(s, path[-1])
        setattr(d, path[-1], v.copy() if hasattr(v, "copy") else v)


def _plain(v: Any) -> Any:
    """A struct/header/tuple value as plain Python data (dicts, tuples, ints)."""
    if hasattr(v, "__slots__") and not isinstance(v, V.Stack):
        return {s[2:]: _plain(getattr(v, s)) for s in v.__slots__ if s.startswith("f_")}
    if isinstance(v, V.Stack):
        return [_plain(h) for h in v.h]
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return v


def resolve_name(names: Any, name: str, kind: str) -> str:
    """Exact name, else the unique name ending in ``.name`` (as p4c's STF runner allows)."""
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise KeyError(f"no {kind} named {name!r}; known: {sorted(names)}")
    raise KeyError(f"{kind} name {name!r} is ambiguous: {sorted(cands)}")


class Switch:
    """A v1model switch running one compiled program (see docs/p4switch-api.md)."""

    def __init__(self, program: Any, *, cpu_port: Optional[int] = None, drop_port: int = 511,
                 start_time: float = 0.0, seed: int = 0, queues_per_port: int = 1,
                 fast: bool = True) -> None:
        # fast=False: this switch compiles its own copy of the generated code
        # and always asks the queue model (the reference for fast-path checks)
        if fast:  # one lowering per program, shared code and classes (shared.py)
            self._low, p = shared_instance(program, seed)
        else:
            self._low = Lowering(program, seed, share_code=False)
            p = self._low.build()
        self._parser = p["parser"]
        self._verify = p["verify"]
        self._ingress = p["ingress"]
        self._egress = p["egress"]
        self._compute = p["compute"]
        self._deparser = p["deparser"]
        self._new_H: Callable[[], Any] = p["new_H"]
        self._new_M: Callable[[], Any] = p["new_M"]
        self._new_SM: Callable[[], Any] = p["new_SM"]
        # copies for multicast replicas: share what egress never names (replicas.py)
        self._rep_H: Callable[[Any], Any] = p["rep_copy_H"]
        self._rep_M: Callable[[Any], Any] = p["rep_copy_M"]
        # replicas whose egress left the deparsed state as ingress made it
        # share one computeChecksum + deparser run (fast path only)
        self._same_output: Optional[Callable[..., bool]] = p["same_output"] if fast else None
        # ... and, when egress leaves the packet context alone, run one
        # after another as soon as ingress made them (_replicate_now)
        self._at_once = self._same_output is not None and self._low.egress_plain_context
        self._ctx: V.PacketCtx = self._low.ctx
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.start_time = start_time
        #: the latest instant a packet entered ingress (see :meth:`process`)
        self._latest = start_time
        self.tables: dict[str, Table] = self._low.tables
        self.registers: dict[str, RegisterArray] = self._low.registers
        self.counters: dict[str, CounterArray] = self._low.counters
        self.meters: dict[str, MeterArray] = self._low.meters
        self.direct_counters: dict[str, str] = self._low.direct_counters
        self.direct_meters: dict[str, str] = self._low.direct_meters
        self.value_sets = self._low.value_sets
        self.digest_names = self._low.digests
        self.pre = Pre()
        self.mirror: dict[int, MirrorSession] = {}
        self.queue_model: Optional[Callable[[int, float], tuple[int, int, int]]] = None
        self.on_digest: Optional[Callable[[Digest], None]] = None
        self._on_log: Optional[Callable[[str], None]] = None
        self._digests: list[Digest] = []
        self.stats = {k: 0 for k in ("rx", "tx", "dropped", "errors", "parser_errors",
                                     "resubmits", "recirculations", "clones", "replicas")}
        self.last_error: Optional[str] = None
        #: replicas that reused another replica's deparsed bytes (fast path)
        self.shared_outputs = 0
        sm = self._new_SM()
        self._sm_has = {n for n in dir(sm) if n.startswith("f_")}
        self._sm_queue = all(f"f_{n}" in self._sm_has for n in QUEUE_FIELDS)
        self._sm_ts = "f_ingress_global_timestamp" in self._sm_has and "f_egress_global_timestamp" in self._sm_has
        self._sm_prio = "f_priority" in self._sm_has
        self._sm_rid = "f_egress_rid" in self._sm_has
        self._sm_mcast = "f_mcast_grp" in self._sm_has
        self._sm_cksum = "f_checksum_error" in self._sm_has
        self.queues_per_port = queues_per_port
        self.source = self._low.source
        # queue metadata is only worth computing when the program reads it
        # (a field list or digest that carries it names it in the source too)
        self._reads_queue = self._sm_queue and (not fast or self._low.reads_queue)
        # replicas run at once share one standard metadata struct: what each
        # one's set-up writes, plus a restore of what egress may assign
        written = self._low.egress_sm_written if self._at_once else None
        if written is not None:
            per_replica = self._stamped_fields() | ({"egress_rid"} if self._sm_rid else set())
            self._sm_restore: Optional[tuple[str, ...]] = tuple(
                f"f_{n}" for n in sorted(written - per_replica) if f"f_{n}" in self._sm_has)
        else:
            self._sm_restore = None

    # ================================================================== packets
    def process(self, port: int, data: bytes, now: float = 0.0) -> list[Egress]:
        """Run one packet (and every copy it causes) through the switch.

        ``now`` is when the packet arrived; it enters ingress no earlier than
        the packet before it.  Packets are processed one at a time, so, as in
        BMv2, which stamps ``ingress_global_timestamp`` in its ingress thread,
        the stamps never go backward.  A host of the switch may hand over
        arrival stamps from several sources out of order (the port reader's
        kernel stamps, link emulation); an earlier stamp processed later would
        make a program's ``now - last`` wrap in 48-bit arithmetic, and
        mcc.p4's membership ageing would read a fresh group as expired.
        """
        if now < self._latest:
            now = self._latest
        else:
            self._latest = now
        self.stats["rx"] += 1
        out: list[Egress] = []
        try:
            self._run(port, bytes(data), now, out)
        except Exception as exc:  # noqa: BLE001 - a packet must never take the switch down
            # Program faults (assert, stack index, division by zero) land here; the
            # packet is dropped and counted, and the message kept for diagnosis.
            self.stats["errors"] += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
        self.stats["tx"] += len(out)
        return out

    def _now_us(self, now: float) -> int:
        return max(0, int(round((now - self.start_time) * 1e6)))

    def _set_sm(self, sm: Any, name: str, value: int) -> None:
        if "f_" + name in self._sm_has:
            setattr(sm, "f_" + name, value)

    def _parse(self, data: bytes, hdr: Any, meta: Any, sm: Any) -> tuple[Any, Any, Any, bytes]:
        P = V.PacketIn(data)
        try:
            hdr, meta, sm = self._parser(P, hdr, meta, sm)
        except V.ParserError as e:
            self._set_sm(sm, "parser_error", e.code)  # type: ignore[arg-type]
            self.stats["parser_errors"] += 1
        return hdr, meta, sm, data[(P.pos + 7) >> 3:]

    def _run(self, port: int, data: bytes, now: float, out: list[Egress]) -> None:
        now_us = int(round((now - self.start_time) * 1e6))  # >= 0: process() keeps now >= start_time
        ingress_q: deque = deque([(data, port, NORMAL, None, None, len(data))])
        egress_q: deque = deque()
        ingress_pass, egress_pass = self._ingress_pass, self._egress_pass
        passes = 0
        while ingress_q:
            passes += 1
            if passes > MAX_PASSES:
                raise V.P4RuntimeFault("too many resubmit/recirculate passes")
            data, in_port, itype, fl, old_roots, length = ingress_q.popleft()
            ingress_pass(data, in_port, itype, fl, old_roots, length, now, now_us, ingress_q, egress_q, out)
            while egress_q:
                egress_pass(egress_q.popleft(), now, now_us, ingress_q, egress_q, out)

    def _ingress_pass(self, data: bytes, in_port: int, itype: int, fl: Optional[FieldList],
                      old_roots: Optional[tuple], length: int, now: float, now_us: int,
                      ingress_q: deque, egress_q: deque, out: list[Egress]) -> None:
        ctx = self._ctx
        ctx.reset(now_us, length, b"")
        hdr, meta, sm = self._new_H(), self._new_M(), self._new_SM()
        if old_roots is not None:
            _copy_fields(fl, old_roots, (hdr, meta, sm))
        if itype == NORMAL:
            # a new packet; resubmitted and recirculated ones start from reset
            # metadata (BMv2 sets port and timestamp only on reception)
            sm.f_ingress_port = in_port & 0x1FF
            if self._sm_ts:
                sm.f_ingress_global_timestamp = now_us & 0xFFFFFFFFFFFF
        sm.f_packet_length = length
        sm.f_instance_type = itype
        P = PacketIn(data)
        try:
            hdr, meta, sm = self._parser(P, hdr, meta, sm)
        except ParserError as e:
            self._set_sm(sm, "parser_error", e.code)  # type: ignore[arg-type]
            self.stats["parser_errors"] += 1
        ctx.payload = payload = data[(P.pos + 7) >> 3:]
        try:
            hdr, meta = self._verify(hdr, meta)  # copy-out of the block's inout params
        except ExitSignal as x:
            hdr, meta = x.outs or (hdr, meta)
        if self._sm_cksum:
            sm.f_checksum_error = int(ctx.checksum_error)
        try:
            hdr, meta, sm = self._ingress(hdr, meta, sm)
        except ExitSignal as x:
            hdr, meta, sm = x.outs or (hdr, meta, sm)
        mgid = sm.f_mcast_grp if self._sm_mcast else 0
        if ctx.clone is not None or ctx.digests or ctx.resubmit is not None:
            if self._after_ingress(data, in_port, length, now, (hdr, meta, sm), ingress_q, egress_q):
                return
        if mgid:
            sm.f_instance_type = REPLICATION
            self._multicast(mgid, (hdr, meta, sm), payload, length, egress_q, ctx.truncate, (now, now_us, out))
            return
        egress_spec = sm.f_egress_spec
        if egress_spec == self.drop_port:
            self.stats["dropped"] += 1
            return
        sm.f_instance_type = NORMAL
        egress_q.append((egress_spec, hdr, meta, sm, payload, length, ctx.truncate, None))

    def _after_ingress(self, data: bytes, in_port: int, length: int, now: float, roots: tuple,
                       ingress_q: deque, egress_q: deque) -> bool:
        """Ingress clone, digests and resubmit, in BMv2's order; True when the
        packet was resubmitted (nothing else happens to it then)."""
        ctx = self._ctx
        # ingress clone
        if ctx.clone is not None:
            sess, fli = ctx.clone
            ctx.clone = None
            cfg = self.mirror.get(sess & MAX_MIRROR_SESSION_ID)
            if cfg is not None:
                self.stats["clones"] += 1
                h2, m2, s2 = self._new_H(), self._new_M(), self._new_SM()
                s2.f_ingress_port = in_port & 0x1FF
                saved = (ctx.checksum_error,)
                h2, m2, s2, p2 = self._parse(data, h2, m2, s2)
                ctx.checksum_error = saved[0]
                m2, s2 = self._new_M(), self._new_SM()  # BMv2 resets metadata after the re-parse
                _copy_fields(self._low.field_lists.get(fli) if fli is not None else None, roots, (h2, m2, s2))
                s2.f_instance_type = INGRESS_CLONE
                self._to_session(cfg, (h2, m2, s2), p2, length, egress_q)
        # digests
        for name, fn in ctx.digests:
            d = Digest(name, _plain(fn()), now)
            if self.on_digest is not None:
                self.on_digest(d)
            else:
                self._digests.append(d)
        if ctx.resubmit is not None:
            self.stats["resubmits"] += 1
            rfl = self._low.field_lists.get(ctx.resubmit)
            ingress_q.append((data, in_port, RESUBMIT, rfl, roots, length))
            return True
        return False

    def _multicast(self, mgid: int, roots: tuple, payload: bytes, length: int, egress_q: deque,
                   truncate: int, at_once: Optional[tuple[float, int, list[Egress]]] = None) -> None:
        """One replica per PRE entry of ``mgid``, queued for egress; with
        ``at_once`` (now, now_us, out) and nothing else waiting for egress,
        run through egress here (``_replicate_now``)."""
        reps = self.pre.replicas(mgid)
        if not reps:
            self.stats["dropped"] += 1
            return
        self.stats["replicas"] += len(reps)
        if at_once is not None and self._at_once and not egress_q:
            self._replicate_now(reps, roots, payload, length, truncate, *at_once)
            return
        hdr, meta, sm = roots
        rep_h, rep_m, set_rid, last = self._rep_H, self._rep_M, self._sm_rid, len(reps) - 1
        # [pre-egress headers, metadata, deparsed output once known]
        shared = [rep_h(hdr), rep_m(meta), None] if last and self._same_output is not None else None
        for i, (port, rid) in enumerate(reps):
            if i == last:
                h, m, s = hdr, meta, sm
            else:
                h, m, s = rep_h(hdr), rep_m(meta), sm.copy()
            if set_rid:
                s.f_egress_rid = rid
            egress_q.append((port, h, m, s, payload, length, truncate, shared))

    def _replicate_now(self, reps: Sequence[tuple[int, int]], roots: tuple, payload: bytes, length: int,
                       truncate: int, now: float, now_us: int, out: list[Egress]) -> None:
        """``_egress_pass`` for every replica of one packet, in PRE order.

        What the queue would do, minus the queue: valid when egress requests
        nothing of the traffic manager (no clone, recirculation, truncation
        or digest) and reads of the packet context only what is the same for
        every replica (``Lowering.egress_plain_context``), and when no other
        copy waits for egress before them (so the output order is the
        queue's).  computeChecksum and the deparser are then pure
        (``same_output`` is defined), so one run serves the replicas whose
        egress changed nothing they read.

        Replicas run one after another, so they need not be copies made
        up front: the next replica reuses the headers (and metadata) the last
        one left while ``same_output`` says they still equal the pre-egress
        state (it compares every member egress or computeChecksum can
        change), else it starts from a fresh copy of that state; and it
        reuses the standard metadata struct, restoring the members egress
        may assign (``_sm_restore``), else a copy."""
        hdr, meta, sm = roots
        stats = self.stats
        if self._sm_prio and sm.f_priority >= self.queues_per_port:
            stats["dropped"] += len(reps)  # every replica carries the packet's priority
            return
        self._ctx.reset(now_us, length, payload)
        rep_h, rep_m, set_rid = self._rep_H, self._rep_M, self._sm_rid
        same, egress, deparse, drop_port = self._same_output, self._egress, self._deparse, self.drop_port
        h0, m0 = rep_h(hdr), rep_m(meta)  # the pre-egress state; shares what egress never names
        meta_fixed = m0 is meta  # egress and computeChecksum never change the metadata
        restore = self._sm_restore
        sm0 = sm.copy() if restore is None else None
        saved = [(n, getattr(sm, n)) for n in restore] if restore else ()
        stamp = self._stamp_egress
        shared_pkt: Optional[bytes] = None
        h, m, s = hdr, meta, sm
        for i, (port, rid) in enumerate(reps):
            if i:
                if sm0 is not None:
                    s = sm0.copy()
                else:
                    for n, v in saved:
                        setattr(s, n, v)
            if set_rid:
                s.f_egress_rid = rid
            stamp(s, port, length, now, now_us)
            try:
                h2, m2, s2 = egress(h, m, s)
            except ExitSignal as x:
                h2, m2, s2 = x.outs or (h, m, s)
            fresh = h2 is h and m2 is m  # else a fresh copy either way (below)
            if s2.f_egress_spec == drop_port:
                stats["dropped"] += 1
                fresh = fresh and same(h, m, h0, m0)  # type: ignore[misc]
            else:
                if same(h2, m2, h0, m0):  # type: ignore[misc]
                    if shared_pkt is None:
                        pkt = shared_pkt = deparse(h2, m2, payload)
                        fresh = fresh and same(h, m, h0, m0)  # type: ignore[misc]  # computeChecksum's writes
                    else:
                        pkt = shared_pkt
                        self.shared_outputs += 1
                else:
                    pkt = deparse(h2, m2, payload)
                    fresh = False
                if truncate:
                    pkt = pkt[:truncate]
                out.append(_new_tuple(Egress, (port, pkt, s2.f_instance_type)))
            if not fresh:
                h = rep_h(h0)
            if not meta_fixed:
                m = rep_m(m0)  # metadata egress may change: a fresh copy for each replica

    def _to_session(self, cfg: MirrorSession, roots: tuple, payload: bytes, length: int,
                    egress_q: deque) -> None:
        if cfg.mgid is not None:
            self._multicast(cfg.mgid, (roots[0].copy(), roots[1].copy(), roots[2].copy()), payload, length,
                            egress_q, cfg.truncate)
        if cfg.port is not None:
            egress_q.append((cfg.port, roots[0], roots[1], roots[2], payload, length, cfg.truncate, None))

    def _egress_pass(self, job: tuple, now: float, now_us: int, ingress_q: deque, egress_q: deque,
                     out: list[Egress]) -> None:
        port, hdr, meta, sm, payload, length, truncate, shared = job
        if self._sm_prio and sm.f_priority >= self.queues_per_port:
            # simple_switch: "Priority out of range, dropping packet" at enqueue
            self.stats["dropped"] += 1
            return
        ctx = self._ctx
        ctx.reset(now_us, length, payload)
        self._stamp_egress(sm, port, length, now, now_us)
        try:
            hdr, meta, sm = self._egress(hdr, meta, sm)
        except ExitSignal as x:
            hdr, meta, sm = x.outs or (hdr, meta, sm)
        if ctx.clone is not None:
            sess, fli = ctx.clone
            ctx.clone = None
            cfg = self.mirror.get(sess & MAX_MIRROR_SESSION_ID)
            if cfg is not None:
                self.stats["clones"] += 1
                h2, m2, s2 = hdr.copy(), self._new_M(), self._new_SM()
                _copy_fields(self._low.field_lists.get(fli) if fli is not None else None, (hdr, meta, sm), (h2, m2, s2))
                s2.f_instance_type = EGRESS_CLONE
                self._to_session(cfg, (h2, m2, s2), payload, length, egress_q)
        if sm.f_egress_spec == self.drop_port:
            self.stats["dropped"] += 1
            return
        recirc = ctx.recirculate
        trunc = ctx.truncate or truncate
        if (shared is not None and recirc is None
                and self._same_output(hdr, meta, shared[0], shared[1])):  # type: ignore[misc]
            pkt = shared[2]
            if pkt is None:
                pkt = shared[2] = self._deparse(hdr, meta, payload)
            else:
                self.shared_outputs += 1
        else:
            if recirc is not None:
                hdr, meta = self._checksummed(hdr, meta)  # recirculation carries them on
                pkt = self._emit(hdr, payload)
            else:
                pkt = self._deparse(hdr, meta, payload)
        if recirc is not None:
            self.stats["recirculations"] += 1
            ingress_q.append((pkt, 0, RECIRC, self._low.field_lists.get(recirc), (hdr, meta, sm), len(pkt)))
            return
        if trunc:
            pkt = pkt[:trunc]
        out.append(_new_tuple(Egress, (port, pkt, sm.f_instance_type)))  # Egress(...) minus one call

    def _stamp_egress(self, sm: Any, port: int, length: int, now: float, now_us: int) -> None:
        """Standard metadata as the traffic manager hands a copy to egress on
        ``port``: queue depths and times (from the queue model when the
        program reads them), the port, the length, ``egress_spec`` zeroed."""
        queue_model = self.queue_model
        if queue_model is not None and self._reads_queue:
            enq_depth, deq_delta, deq_depth = queue_model(port, now)
        else:
            enq_depth = deq_delta = deq_depth = 0
        if self._sm_queue:
            sm.f_enq_timestamp = now_us & 0xFFFFFFFF
            sm.f_enq_qdepth = enq_depth & 0x7FFFF
            sm.f_deq_timedelta = deq_delta & 0xFFFFFFFF
            sm.f_deq_qdepth = deq_depth & 0x7FFFF
        if self._sm_ts:
            sm.f_egress_global_timestamp = (now_us + deq_delta) & 0xFFFFFFFFFFFF
        sm.f_egress_port = port
        sm.f_egress_spec = 0  # BMv2 writes drop_port + 1, which wraps to 0 in 9 bits
        sm.f_packet_length = length

    def _stamped_fields(self) -> set[str]:
        """The standard metadata members ``_stamp_egress`` sets."""
        out = {"egress_port", "egress_spec", "packet_length"}
        if self._sm_queue:
            out.update(QUEUE_FIELDS)
        if self._sm_ts:
            out.add("egress_global_timestamp")
        return out

    def _checksummed(self, hdr: Any, meta: Any) -> tuple[Any, Any]:
        """Headers and metadata after computeChecksum."""
        try:
            return self._compute(hdr, meta)
        except ExitSignal as x:
            return x.outs or (hdr, meta)

    def _emit(self, hdr: Any, payload: bytes) -> bytes:
        """The deparser: the packet's bytes."""
        O = PacketOut()
        self._deparser(O, hdr)
        n = O.n  # PacketOut.to_bytes inline
        return (O.acc << (-n & 7)).to_bytes((n + 7) >> 3, "big") + payload

    def _deparse(self, hdr: Any, meta: Any, payload: bytes) -> bytes:
        """computeChecksum, then the deparser: the packet's bytes."""
        return self._emit(self._checksummed(hdr, meta)[0], payload)

    @property
    def on_log(self) -> Optional[Callable[[str], None]]:
        """Called with each ``log_msg`` text (formatted as BMv2 does); None: not formatted at all."""
        return self._on_log

    @on_log.setter
    def on_log(self, fn: Optional[Callable[[str], None]]) -> None:
        self._on_log = fn
        self._ctx.log = fn
        self._ctx.log_on = fn is not None

    # ================================================================== description
    @property
    def info(self) -> dict[str, dict[str, Any]]:
        """What the control plane can name: tables (keys, actions, size,
        default), registers, counters, meters, direct resources and digests."""
        tables = {}
        for n, t in self.tables.items():
            tables[n] = {
                "keys": [(k.name, k.match_kind, k.width) for k in t.keys],
                "actions": {a.name: list(a.params) for a in t.actions.values()},
                "size": t.size,
                "default": (t.initial_default.action, t.initial_default.params),
                "default_const": t.default_const,
                "needs_priority": t.needs_priority,
                "const_entries": sum(1 for e in t.entries.values() if e.is_const),
            }
        return {
            "tables": tables,
            "registers": {n: {"size": r.size, "width": r.width} for n, r in self.registers.items()},
            "counters": {n: {"size": c.size, "kind": c.kind} for n, c in self.counters.items()},
            "meters": {n: {"size": m.size, "packets": m.packets} for n, m in self.meters.items()},
            "direct_counters": dict(self.direct_counters),
            "direct_meters": dict(self.direct_meters),
            "digests": {n: list(f) for n, f in self.digest_names.items()},
        }

    # ================================================================== tables
    def _table(self, name: str) -> Table:
        return self.tables[resolve_name(self.tables, name, "table")]

    def table_add(self, table: str, keys: Any, action: str, params: Any = (),
                  priority: Optional[int] = None) -> int:
        return self._table(table).add(keys, action, params, priority)

    def table_add_prepared(self, table: str, rows: Any) -> list[int]:
        """Add entries ``Table.prepare`` made (see there): the bulk form of ``table_add``."""
        return self._table(table).add_prepared(rows)

    def table_modify(self, table: str, handle: int, action: str, params: Any = ()) -> None:
        self._table(table).modify(handle, action, params)

    def table_delete(self, table: str, handle: int) -> None:
        self._table(table).delete(handle)

    def table_clear(self, table: str) -> None:
        self._table(table).clear()

    def table_find(self, table: str, keys: Any, priority: Optional[int] = None) -> Optional[int]:
        return self._table(table).find(keys, priority)

    def table_entries(self, table: str) -> list[TableEntry]:
        return sorted(self._table(table).entries.values(), key=lambda e: e.handle)

    def table_set_default(self, table: str, action: str, params: Any = ()) -> None:
        self._table(table).set_default(action, params)

    def table_get_default(self, table: str) -> tuple[str, tuple[int, ...]]:
        d: ActionCall = self._table(table).default
        return d.action, d.params

    def table_reset_default(self, table: str) -> None:
        self._table(table).reset_default()

    # ================================================================== PRE / mirroring
    def mc_group_create(self, mgid: int) -> None:
        self.pre.group_create(mgid)

    def mc_group_destroy(self, mgid: int) -> None:
        self.pre.group_destroy(mgid)

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        return self.pre.node_create(rid, ports)

    def mc_node_update(self, handle: int, ports: Sequence[int]) -> None:
        self.pre.node_update(handle, ports)

    def mc_node_destroy(self, handle: int) -> None:
        self.pre.node_destroy(handle)

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        self.pre.node_associate(mgid, handle)

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        self.pre.node_dissociate(mgid, handle)

    def set_multicast_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        self.pre.set_group(mgid, replicas)

    def delete_multicast_group(self, mgid: int) -> None:
        self.pre.delete_group(mgid)

    def _check_session(self, session: int) -> None:
        if not 0 <= session <= MAX_MIRROR_SESSION_ID:
            raise PreError(f"mirror session {session} out of range [0, {MAX_MIRROR_SESSION_ID}]")

    def mirroring_add(self, session: int, port: int) -> None:
        self._check_session(session)
        self.mirror[session] = MirrorSession(port=port)

    def mirroring_add_mc(self, session: int, mgid: int) -> None:
        self._check_session(session)
        self.mirror[session] = MirrorSession(mgid=mgid)

    def mirroring_delete(self, session: int) -> None:
        if self.mirror.pop(session, None) is None:
            raise PreError(f"no mirror session {session}")

    def set_clone_session(self, session: int, replicas: Sequence[tuple[int, int]], packet_length: int = 0) -> None:
        """P4Runtime ``CloneSessionEntry``: one replica -> a port, several -> a hidden group."""
        self._check_session(session)
        if len(replicas) == 1:
            self.mirror[session] = MirrorSession(port=replicas[0][0], truncate=packet_length)
            return
        mgid = (1 << 16) + session  # outside the 16-bit space the program can name
        self.pre.set_group(mgid, replicas)
        self.mirror[session] = MirrorSession(mgid=mgid, truncate=packet_length)

    # ================================================================== stateful externs
    def _reg(self, name: str) -> RegisterArray:
        return self.registers[resolve_name(self.registers, name, "register")]

    def register_read(self, name: str, index: int) -> int:
        r = self._reg(name)
        if not 0 <= index < r.size:
            raise IndexError(f"register {r.name!r} index {index} out of range [0, {r.size})")
        return r.read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        r = self._reg(name)
        if not 0 <= index < r.size:
            raise IndexError(f"register {r.name!r} index {index} out of range [0, {r.size})")
        r.write(index, value)

    def register_reset(self, name: str) -> None:
        self._reg(name).reset()

    def register_size(self, name: str) -> int:
        return self._reg(name).size

    def _ctr(self, name: str) -> CounterArray:
        return self.counters[resolve_name(self.counters, name, "counter")]

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self._ctr(name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self._ctr(name).write(index, packets, nbytes)

    def counter_reset(self, name: str) -> None:
        self._ctr(name).reset()

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        e = self._table(table)._get(handle)
        if e.counter is None:
            raise TableError(f"table {table!r} has no direct counter")
        return e.counter[0], e.counter[1]

    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        e = self._table(table)._get(handle)
        if e.counter is None:
            raise TableError(f"table {table!r} has no direct counter")
        e.counter[0], e.counter[1] = packets, nbytes

    def _mtr(self, name: str) -> MeterArray:
        return self.meters[resolve_name(self.meters, name, "meter")]

    def meter_set_rates(self, name: str, index: int, rates: Sequence[tuple[float, int]], now: float = 0.0) -> None:
        """Rates per second (bytes or packets), bursts in bytes or packets."""
        self._mtr(name).set_rates(index, [(r / 1e6, b) for r, b in rates], self._now_us(now))

    def meter_get_rates(self, name: str, index: int) -> list[tuple[float, int]]:
        return [(r * 1e6, b) for r, b in self._mtr(name)._m(index).get_rates()]

    def meter_reset(self, name: str, index: int) -> None:
        self._mtr(name)._m(index).reset()

    def direct_meter_set_rates(self, table: str, handle: int, rates: Sequence[tuple[float, int]], now: float = 0.0) -> None:
        e = self._table(table)._get(handle)
        if e.meter is None:
            raise TableError(f"table {table!r} has no direct meter")
        e.meter.set_rates([(r / 1e6, b) for r, b in rates], self._now_us(now))

    # ================================================================== parser value sets
    def value_set_write(self, name: str, members: Sequence[Any]) -> None:
        """Replace the members of a parser ``value_set`` (exact values; a
        tuple per member when the select has several expressions)."""
        vs = self.value_sets[resolve_name(self.value_sets, name, "value set")]
        vs.clear()
        vs.update(tuple(m) if isinstance(m, (list, tuple)) else int(m) for m in members)

    def value_set_read(self, name: str) -> list[Any]:
        return sorted(self.value_sets[resolve_name(self.value_sets, name, "value set")])

    # ================================================================== digests
    def poll_digests(self) -> list[Digest]:
        d, self._digests = self._digests, []
        return d


def load_switch(path: str, include_dirs: Sequence[str] = (), defines: Optional[dict] = None,
                **kw: Any) -> Switch:
    """Compile ``path`` with the front end and build a ``Switch`` for it."""
    from ..frontend import compile_file

    return Switch(compile_file(path, include_dirs, defines), **kw)


__all__ = ["Switch", "Egress", "Digest", "load_switch", "UnsupportedError", "resolve_name",
           "TableError", "PreError"]

_ = Union
