"""Emit C for one v1model program from the front end's typed IR.

This module holds the C runtime text and the whole-program entry points;
expressions (``c_expr``), statements and calls (``c_stmt``), builtins and
externs (``c_extern``) and instances, parsers and tables (``c_block``) are
mixins, as in the interpreter's lowering.

The C module mirrors the interpreter's lowering (``p4switch/interp/codegen.py``)
instance by instance, with the same names for tables, actions, registers and
counters, so the Python ``Table``/``Pre`` objects stay the control plane's
view and are mirrored into native memory (``switch.NativeSwitch``).

Values: ``bit<W>``/``int<W>`` up to 64 bits are ``u64``, up to 128 bits
``u128`` (gcc's ``unsigned __int128``), always kept masked to their width
(a signed value is its two's-complement bits); ``bool``, ``error`` and
non-serializable enums are ``u64`` numbers (errors by declaration order).
Headers and structs are C structs (a header has ``_v``, its validity).

Control flow: ``exit``, a parser error and a run-time fault set ``W->stop``;
every generated call is followed by its copy-out and a check of the flag, so
``exit`` still copies out as the language requires.

What the emitter does not cover raises ``NativeUnsupported`` (the switch then
runs the interpreter): clone/resubmit/recirculate, header stacks indexed at
run time, unions inside stacks, varbits, widths above 128 bits, tuples, value
sets, loops, lookahead of aggregates, action profiles and selectors, table
actions with bound directional arguments, digests outside the top-level
ingress control or of computed values, hashes wider than 64 bits, signed
division.  Hashes, ``random``, checksums other than csum16 and ``log_msg``
call back into Python (``switch.NativeSwitch``).
"""

from __future__ import annotations

from typing import Any, Optional

from ..frontend import ast as A
from ..frontend import types as T
from ..interp.irutil import qualify, st
from .c_block import BlockMixin
from .c_expr import ExprMixin
from .c_extern import ExternMixin
from .c_stmt import StmtMixin
from ..interp.switch import REPLICATION
from .cbase import KINDS, QTABLE_PORTS, QUEUE, STOP_FAULT, STOP_PERR, Body, NativeUnsupported

PRELUDE = r"""
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
typedef unsigned __int128 u128;
typedef uint64_t u64;
typedef int64_t i64;
#define M64(w) ((w) >= 64 ? ~(u64)0 : (((u64)1 << (w)) - 1))
#define M128(w) ((w) >= 128 ? ~(u128)0 : (((u128)1 << (w)) - 1))
static inline u64 sx64(u64 v, int w) { if (w >= 64) return v; u64 s = (u64)1 << (w - 1); return (v ^ s) - s; }
static inline u64 sat_s(__int128 v, int w) {
    __int128 hi = ((__int128)1 << (w - 1)) - 1, lo = -((__int128)1 << (w - 1));
    if (v > hi) v = hi;
    if (v < lo) v = lo;
    return (u64)v & M64(w);
}
static inline u128 sx128(u128 v, int w) { if (w >= 128) return v; u128 s = (u128)1 << (w - 1); return (v ^ s) - s; }

typedef struct { u128 v[NK > 0 ? NK : 1], m[NK > 0 ? NK : 1], hi[NK > 0 ? NK : 1]; int act; int gid; u64 handle, cpk, cby; u128 p[NP > 0 ? NP : 1]; } ent_t;
typedef struct {
    int nk; int kinds[NK > 0 ? NK : 1]; int exact_only;
    int n, cap; ent_t *e; int *h; int hcap;
    int def_act, def_gid; u128 def_p[NP > 0 ? NP : 1];
} tbl_t;

static u64 khash(const u128 *k, int nk) {
    u64 h = 1469598103934665603ULL;
    for (int i = 0; i < nk; i++) { h ^= (u64)k[i]; h *= 1099511628211ULL; h ^= (u64)(k[i] >> 64); h *= 1099511628211ULL; }
    return h ^ (h >> 29);
}
static void tbl_index(tbl_t *t) {
    free(t->h); t->h = 0; t->hcap = 0;
    if (!t->exact_only || !t->n) return;
    int c = 16; while (c < 2 * t->n) c <<= 1;
    t->h = malloc(sizeof(int) * c); t->hcap = c;
    for (int i = 0; i < c; i++) t->h[i] = -1;
    for (int i = 0; i < t->n; i++) {
        u64 j = khash(t->e[i].v, t->nk) & (c - 1);
        while (t->h[j] >= 0) j = (j + 1) & (c - 1);
        t->h[j] = i;
    }
}
static ent_t *tbl_find(tbl_t *t, const u128 *k) {
    if (t->exact_only) {
        if (!t->hcap) return 0;
        u64 j = khash(k, t->nk) & (t->hcap - 1);
        for (;;) {
            int i = t->h[j];
            if (i < 0) return 0;
            ent_t *e = &t->e[i]; int ok = 1;
            for (int q = 0; q < t->nk; q++) if (e->v[q] != k[q]) { ok = 0; break; }
            if (ok) return e;
            j = (j + 1) & (t->hcap - 1);
        }
    }
    for (int i = 0; i < t->n; i++) {
        ent_t *e = &t->e[i]; int ok = 1;
        for (int q = 0; q < t->nk && ok; q++) {
            switch (t->kinds[q]) {
            case 0: ok = e->v[q] == k[q]; break;
            case 3: ok = e->v[q] <= k[q] && k[q] <= e->hi[q]; break;
            default: ok = (k[q] & e->m[q]) == e->v[q]; break;
            }
        }
        if (ok) return e;
    }
    return 0;
}

static inline u128 getbits(const uint8_t *d, i64 pos, int w) {
    if (w > 64) return (getbits(d, pos, w - 64) << 64) | getbits(d, pos + w - 64, 64);
    if (w <= 0) return 0;
    i64 b0 = pos >> 3, b1 = (pos + w + 7) >> 3;
    u128 v = 0;
    for (i64 i = b0; i < b1; i++) v = (v << 8) | d[i];
    v >>= (-(pos + w)) & 7;
    return v & M128(w);
}
"""


class CType:
    """A C type for one P4 type: ``name`` and, for aggregates, the fields."""

    def __init__(self, name: str, kind: str, t: Any, fields: Optional[list] = None) -> None:
        self.name, self.kind, self.t, self.fields = name, kind, t, fields or []


class CGen:
    """The C text for one program, with the layout the Python side needs."""

    def __init__(self, prog: A.Program) -> None:
        if prog.package != "V1Switch" or not prog.v1model:
            raise NativeUnsupported("package is not V1Switch")
        self.prog = prog
        self.errors = list(prog.errors)
        self.types: dict[int, CType] = {}
        #: one C type per (element, size): two stacks of one header type assign to each other
        self.stack_types: dict[tuple[str, int], CType] = {}
        self.typedefs: list[str] = []
        self.funcs: list[str] = []
        self.protos: list[str] = []
        self.n = 0
        self.tables: list[tuple[str, Any, list[str]]] = []  # (fq, TableDecl, local action names)
        self.table_ix: dict[str, int] = {}
        self.registers: list[tuple[str, int, int, bool]] = []  # (fq, size, width, signed)
        self.counters: list[tuple[str, int]] = []
        self.meters: list[str] = []
        self.digests: list[tuple[str, list[tuple[str, int]]]] = []
        self.action_ids: dict[str, int] = {"NoAction": 0}
        self.global_env: dict[int, Any] = {}
        self.functions: dict[int, str] = {}
        self.max_keys = 1
        self.max_params = 1
        self.max_hdr_bytes = 0
        self.reads_queue = False

    # ------------------------------------------------------------ utilities
    def fresh(self, base: str = "t") -> str:
        self.n += 1
        return f"{base}{self.n}"

    def aid(self, name: str) -> int:
        if name not in self.action_ids:
            self.action_ids[name] = len(self.action_ids)
        return self.action_ids[name]

    def err_code(self, name: str) -> int:
        if name not in self.errors:
            raise NativeUnsupported(f"unknown error {name!r}")
        return self.errors.index(name)

    # ------------------------------------------------------------ types
    def ctype(self, t: Any, node: Any = None) -> CType:
        t = st(t)
        if isinstance(t, T.NewType):
            t = st(t.base)
        key = id(t)
        if key in self.types:
            return self.types[key]
        if isinstance(t, T.BitsType):
            if t.width > 128 or t.width == 0:
                raise NativeUnsupported(f"{t} (width above 128)", node)
            ct = CType("u64" if t.width <= 64 else "u128", "bits", t)
        elif isinstance(t, (T.BoolType, T.ErrorType)):
            ct = CType("u64", "scalar", t)
        elif isinstance(t, T.EnumType):
            if t.underlying is not None and t.underlying.width > 64:
                raise NativeUnsupported("enum wider than 64 bits", node)
            ct = CType("u64", "scalar", t)
        elif isinstance(t, T.StackType):
            et = self.ctype(t.elem, node)
            if et.kind != "header":
                raise NativeUnsupported(f"stack of {t.elem}", node)
            known = self.stack_types.get((et.name, t.size))
            if known is not None:
                self.types[key] = known
                return known
            name = self.fresh(f"K_{et.name}_{t.size}_")
            ct = CType(name, "stack", t)
            ct.elem, ct.size = et, t.size  # type: ignore[attr-defined]
            self.stack_types[(et.name, t.size)] = ct
            self.typedefs.append(f"typedef struct {{\n    {et.name} h[{t.size}];\n    u64 nxt;\n}} {name};\n")
        elif isinstance(t, T.HeaderUnionType):
            fields = [(f.name, self.ctype(f.type, node)) for f in t.fields]
            if any(c.kind != "header" for _, c in fields):
                raise NativeUnsupported("union member that is not a header", node)
            name = self.fresh("U_" + "".join(c if c.isalnum() else "_" for c in t.name) + "_")
            ct = CType(name, "union", t, fields)
            body = "".join(f"    {c.name} f_{n};\n" for n, c in fields) or "    u64 _dummy;\n"
            self.typedefs.append(f"typedef struct {{\n{body}}} {name};\n")
        elif isinstance(t, (T.HeaderType, T.StructType)):
            name = self.fresh(("H_" if isinstance(t, T.HeaderType) else "S_") + "".join(c if c.isalnum() else "_" for c in t.name) + "_")
            fields = []
            for f in t.fields:
                ft = st(f.type)
                if isinstance(t, T.HeaderType) and not isinstance(ft, (T.BitsType, T.BoolType, T.EnumType, T.NewType)):
                    raise NativeUnsupported(f"header field of type {ft}", node)
                fields.append((f.name, self.ctype(ft, node)))
            ct = CType(name, "header" if isinstance(t, T.HeaderType) else "struct", t, fields)
            body = "".join(f"    {c.name} f_{n};\n" for n, c in fields)
            if ct.kind == "header":
                body = "    u64 _v;\n" + body
            if not body:
                body = "    u64 _dummy;\n"
            self.typedefs.append(f"typedef struct {{\n{body}}} {name};\n")
        else:
            raise NativeUnsupported(f"type {t}", node)
        self.types[key] = ct
        return ct

    @staticmethod
    def w_of(t: Any) -> int:
        t = st(t)
        if isinstance(t, T.NewType):
            t = st(t.base)
        if isinstance(t, T.BitsType):
            return t.width
        if isinstance(t, T.BoolType):
            return 1
        if isinstance(t, T.EnumType) and t.underlying is not None:
            return t.underlying.width
        return 64

    def mask(self, x: str, w: int) -> str:
        if w == 64 or w == 128:
            return x
        if w < 64:
            return f"(({x}) & {hex((1 << w) - 1)}ULL)"
        return f"(({x}) & M128({w}))"

    def signed(self, t: Any) -> bool:
        t = st(t)
        return isinstance(t, T.BitsType) and t.signed

    def sval(self, x: str, t: Any) -> str:
        """A signed value as a C signed integer (for comparisons and shifts)."""
        w = self.w_of(t)
        if w <= 64:
            return f"((i64)sx64({x}, {w}))"
        return f"((__int128)sx128({x}, {w}))"

    # ------------------------------------------------------------ constants
    def const_eval(self, e: Any, env: dict) -> Any:
        if isinstance(e, A.Argument):
            e = e.value
        if isinstance(e, (A.IntLit, A.BoolLit, A.StringLit)):
            return e.value
        if isinstance(e, A.EnumMember):
            return e.value if e.value is not None else e.member
        if isinstance(e, A.ErrorMember):
            return e.member
        if isinstance(e, A.Cast):
            v = self.const_eval(e.expr, env)
            dt = st(e.type)
            if isinstance(dt, T.BitsType) and isinstance(v, int):
                v &= (1 << dt.width) - 1
                if dt.signed and v >> (dt.width - 1):
                    v -= 1 << dt.width
            return v
        if isinstance(e, A.PathExpr):
            if id(e.ref) in env and isinstance(env[id(e.ref)], tuple) and env[id(e.ref)][0] == "const":
                return env[id(e.ref)][1]
            if isinstance(e.ref, A.ConstDecl):
                return self.const_eval(e.ref.value, env)
        if isinstance(e, A.Unary) and e.op == "-":
            return -self.const_eval(e.expr, env)
        if isinstance(e, A.Binary):
            a, b = self.const_eval(e.left, env), self.const_eval(e.right, env)
            ops = {"+": a + b, "-": a - b, "*": a * b} if isinstance(a, int) and isinstance(b, int) else {}
            if e.op in ops:
                return ops[e.op]
        raise NativeUnsupported(f"compile-time value of {type(e).__name__}", e)

    def lit(self, v: Any, t: Any) -> str:
        t = st(t)
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, str):
            if isinstance(t, T.ErrorType):
                return str(self.err_code(v))
            if isinstance(t, T.EnumType):
                return str(t.members.index(v))
            raise NativeUnsupported(f"string value {v!r}")
        if isinstance(v, int):
            w = self.w_of(t)
            v &= (1 << w) - 1 if w else -1
            if v < 0:
                raise NativeUnsupported("negative literal of infinite precision")
            if v < (1 << 64):
                return f"{v}ULL"
            return f"(((u128){v >> 64}ULL << 64) | {v & ((1 << 64) - 1)}ULL)"
        raise NativeUnsupported(f"literal {v!r}")


POST_STATE = r"""
static inline void putbits(sw_t *W, u128 v, int w) {
    if (W->opos + w > W->omax) { W->stop |= 4; return; }
    while (w > 0) {
        int off = W->opos & 7, room = 8 - off, n = w < room ? w : room;
        unsigned chunk = (unsigned)((v >> (w - n)) & ((1u << n) - 1));
        uint8_t *o = &W->obuf[W->opos >> 3];
        if (!off) *o = 0;
        *o |= (uint8_t)(chunk << (room - n));
        W->opos += n; w -= n;
    }
}
typedef struct { uint8_t b[2048]; i64 pos; } bb_t;
static inline void bb_push(bb_t *c, u128 v, int w) {
    while (w > 0) {
        if (c->pos >= 8 * 2048) return;
        int off = c->pos & 7, room = 8 - off, n = w < room ? w : room;
        unsigned ch = (unsigned)((v >> (w - n)) & ((1u << n) - 1));
        uint8_t *o = &c->b[c->pos >> 3];
        if (!off) *o = 0;
        *o |= (uint8_t)(ch << (room - n));
        c->pos += n; w -= n;
    }
}
typedef struct { u64 sum, cur; int nb; int nz; u64 total; } ck_t;
static inline void ck_push(ck_t *c, u128 v, int w) {
    if (v) c->nz = 1;
    c->total += w;
    while (w > 0) {
        int n = 16 - c->nb; if (n > w) n = w;
        c->cur = (c->cur << n) | (u64)((v >> (w - n)) & (((u128)1 << n) - 1));
        c->nb += n; w -= n;
        if (c->nb == 16) { c->sum += c->cur; c->cur = 0; c->nb = 0; }
    }
}
static inline u64 ck_done(ck_t *c) {
    u64 s = c->sum;
    if (c->nb) s += c->cur << (16 - c->nb);
    s %= 0xFFFF;
    if (s == 0 && c->nz) s = 0xFFFF;
    return (~s) & 0xFFFF;
}
"""


class CProgram(ExprMixin, StmtMixin, ExternMixin, BlockMixin, CGen):
    """``CProgram(prog).source()``: the C module; the attributes describe its layout."""

    def __init__(self, prog: A.Program) -> None:
        CGen.__init__(self, prog)
        self.helpers: dict[str, str] = {}
        self.out_bits = 0
        self.in_action = False
        self.ndigest_fields = 1
        self.depth = 0  # instances being generated: 1 is a top-level block
        self.direct: list[tuple[str, bool, bool]] = []  # (table, direct counter, direct meter)
        self.hash_sites: list[tuple[str, Optional[str]]] = []
        self.log_sites: list[tuple[str, list, bool]] = []  # (format, value kinds, data is a list)

    def source(self) -> str:
        roles = self.prog.v1model
        pdecl = roles["parser"].decl
        if len(pdecl.params) < 4:
            raise NativeUnsupported("v1model parser needs (packet_in, out H, inout M, inout standard_metadata_t)")
        H = self.ctype(pdecl.params[1].type)
        Mt = self.ctype(pdecl.params[2].type)
        SM = self.ctype(pdecl.params[3].type)
        self.sm_fields = {n for n, _ in SM.fields}
        fns = {}
        for role in ("parser", "verify", "ingress", "egress", "compute", "deparser"):
            blk = roles[role]
            fns[role] = (blk.decl, *self.instantiate(blk.decl, qualify("", blk.decl), list(blk.args), {}))
        roots = {0: "W->hdr", 1: "W->meta", 2: "W->sm"}

        def run(role: str, b: Body) -> None:
            decl, fname, frame = fns[role]
            f = "f_" + role
            b.emit(f"{frame} {f};")
            i = 0
            for p in decl.params:
                if isinstance(st(p.type), T.ExternType):
                    continue
                root = roots[i]
                i += 1
                if p.direction in ("out", "inout"):
                    b.emit(f"{f}.p_{p.name} = &{root};")
                else:
                    b.emit(f"{f}.p_{p.name} = {root};")
            b.emit(f"{fname}(W, &{f});")

        smf = self.sm_fields
        has = lambda n: n in smf  # noqa: E731
        ing = Body()
        ing.emit("memset(&W->hdr, 0, sizeof W->hdr); memset(&W->meta, 0, sizeof W->meta); memset(&W->sm, 0, sizeof W->sm);")
        ing.emit("W->data = data; W->nbits = len * 8; W->pos = 0; W->length = (u64)len; W->now_us = now_us;")
        ing.emit("W->stop = 0; W->perr = 0; W->cksum_err = 0; W->ndig = 0; W->dm_color = 0; W->trunc = 0; int status = 0;")
        ing.emit("W->sm.f_ingress_port = port & 0x1FF;")
        if has("ingress_global_timestamp"):
            ing.emit("W->sm.f_ingress_global_timestamp = now_us & 0xFFFFFFFFFFFFULL;")
        ing.emit("W->sm.f_packet_length = (u64)len & 0xFFFFFFFFULL; W->sm.f_instance_type = 0;")
        run("parser", ing)
        ing.emit(f"if (W->stop & {STOP_FAULT}) return 1;")
        ing.emit(f"if (W->stop & {STOP_PERR}) {{ status |= 2;{' W->sm.f_parser_error = W->perr;' if has('parser_error') else ''} }}")
        ing.emit("W->stop = 0; W->payload_off = (W->pos + 7) >> 3;")
        run("verify", ing)
        ing.emit(f"if (W->stop & {STOP_FAULT}) return status | 1; W->stop = 0;")
        if has("checksum_error"):
            ing.emit("W->sm.f_checksum_error = W->cksum_err;")
        run("ingress", ing)
        ing.emit(f"if (W->stop & {STOP_FAULT}) return status | 1; W->stop = 0;")
        ing.emit("for (int i = 0; i < W->ndig; i++) switch (W->dig_id[i]) {")
        for k in range(len(self.digests)):
            ing.emit(f"    case {k}: dig_{k}(W->dig_vals[i], W->dig_fp[i]); break;")
        ing.emit("    default: break; }")
        ing.emit(f"W->out_mgid = {'W->sm.f_mcast_grp' if has('mcast_grp') else '0'}; W->out_spec = W->sm.f_egress_spec;")
        ing.emit("W->trunc_in = W->trunc;")
        ing.emit("W->res[0] = (u64)W->payload_off; W->res[1] = W->out_mgid; W->res[2] = W->out_spec; W->res[3] = (u64)W->ndig;")
        ing.emit("return status;")

        eg = Body()
        eg.emit("u64 *truncs = (u64 *)W->in[14];")
        eg.emit(f"{H.name} h0 = W->hdr; {Mt.name} m0 = W->meta; {SM.name} s0 = W->sm;")
        eg.emit("W->length = length; W->now_us = now_us;")
        eg.emit("for (int i = 0; i < n; i++) {")
        eg.ind += 1
        eg.emit("W->hdr = h0; W->meta = m0; W->sm = s0; W->stop = 0; W->dm_color = 0; W->trunc = 0;")
        eg.emit("static const u64 qzero[3] = {0, 0, 0}; const u64 *qm = q ? q + 3 * i : qzero; (void)qm;")
        if has("egress_rid"):
            eg.emit("if (set_rid) W->sm.f_egress_rid = rids[i];")
        eg.emit("W->sm.f_instance_type = (u64)itype;")
        if has("priority"):
            eg.emit("if (W->sm.f_priority >= (u64)qpp) { lens[i] = -2; continue; }")
        if all(has(q) for q in QUEUE):
            eg.emit("W->sm.f_enq_timestamp = now_us & 0xFFFFFFFFULL; W->sm.f_enq_qdepth = qm[0] & 0x7FFFF; "
                    "W->sm.f_deq_timedelta = qm[1] & 0xFFFFFFFFULL; W->sm.f_deq_qdepth = qm[2] & 0x7FFFF;")
        if has("ingress_global_timestamp") and has("egress_global_timestamp"):
            eg.emit("W->sm.f_egress_global_timestamp = (now_us + qm[1]) & 0xFFFFFFFFFFFFULL;")
        eg.emit("W->sm.f_egress_port = ports[i]; W->sm.f_egress_spec = 0; W->sm.f_packet_length = length & 0xFFFFFFFFULL;")
        run("egress", eg)
        eg.emit(f"if (W->stop & {STOP_FAULT}) {{ W->hdr = h0; W->meta = m0; W->sm = s0; return i; }}")
        eg.emit("W->stop = 0;")
        eg.emit("if (W->sm.f_egress_spec == (u64)drop_port) { lens[i] = -1; continue; }")
        run("compute", eg)
        eg.emit(f"if (W->stop & {STOP_FAULT}) {{ W->hdr = h0; W->meta = m0; W->sm = s0; return i; }}")
        eg.emit("W->stop = 0; W->obuf = out + (i64)i * OUTMAX; W->opos = 0; W->omax = OUTMAX * 8;")
        run("deparser", eg)
        eg.emit(f"if (W->stop & {STOP_FAULT}) {{ W->hdr = h0; W->meta = m0; W->sm = s0; return i; }}")
        eg.emit("W->stop = 0; lens[i] = (W->opos + 7) >> 3; itypes[i] = W->sm.f_instance_type;")
        eg.emit("if (truncs) truncs[i] = W->trunc ? W->trunc : W->trunc_in;")
        eg.ind -= 1
        eg.emit("}")
        eg.emit("W->hdr = h0; W->meta = m0; W->sm = s0;")
        eg.emit("return n;")

        nt = len(self.tables)
        regs = "".join(f"    {'u128' if w > 64 else 'u64'} *r{k};\n" for k, (_, _, w, _) in enumerate(self.registers))
        ctrs = "".join(f"    u64 *c{k}p, *c{k}b;\n" for k in range(len(self.counters)))
        sw = (f"typedef struct sw {{\n    u64 res[8]; u64 in[24]; int stop; u64 perr; u64 cksum_err; u64 dm_color;\n"
              "    u64 (*hash_cb)(int, const uint8_t *, int, u64, u64);\n"
              "    int log_on; void (*log_cb)(int, const u64 *); u64 trunc, trunc_in;\n"
              "    const uint8_t *data; i64 nbits, pos; u64 length, now_us;\n"
              "    uint8_t *obuf; i64 opos, omax; i64 payload_off; u64 out_mgid, out_spec;\n"
              f"    int ndig; int dig_id[8]; const u64 *dig_fp[8][{self.ndigest_fields}]; u64 dig_vals[8][{self.ndigest_fields}];\n"
              "    u64 (*meter_cb)(int, u64, u64, u64);\n"
              "    int pre_ng; u64 *pre_mgid; u64 *pre_off; u64 *pre_port; u64 *pre_rid; u64 one_port, zero_rid;\n"
              f"    tbl_t t[{max(nt, 1)}];\n{regs}{ctrs}"
              f"    {H.name} hdr; {Mt.name} meta; {SM.name} sm;\n}} sw_t;\n")
        alloc = []
        for k, (_, size, w, _) in enumerate(self.registers):
            alloc.append(f"W->r{k} = calloc({max(size, 1)}, sizeof *W->r{k});")
        for k, (_, size) in enumerate(self.counters):
            alloc.append(f"W->c{k}p = calloc({max(size, 1)}, 8); W->c{k}b = calloc({max(size, 1)}, 8);")
        for i, (_, d, _) in enumerate(self.tables):
            kinds = [KINDS[k.match_kind] for k in d.keys]
            alloc.append(f"W->t[{i}].nk = {len(kinds)}; W->t[{i}].exact_only = {int(all(k == 0 for k in kinds))}; "
                         f"W->t[{i}].def_act = -1;" + "".join(f" W->t[{i}].kinds[{q}] = {kd};" for q, kd in enumerate(kinds)))
        frees = [f"free(W->r{k});" for k in range(len(self.registers))]
        frees += [f"free(W->c{k}p); free(W->c{k}b);" for k in range(len(self.counters))]
        frees += [f"free(W->t[{i}].e); free(W->t[{i}].h);" for i in range(nt)]
        frees.append("sw_pre_load(W, 0, 0, 0, 0, 0);")
        api = f"""
void sw_pre_load(sw_t *W, int ng, const u64 *mgid, const u64 *off, const u64 *port, const u64 *rid);
sw_t *sw_new(void) {{
    sw_t *W = calloc(1, sizeof *W);
    {' '.join(alloc)}
    return W;
}}
void sw_free(sw_t *W) {{ {' '.join(frees)} free(W); }}
void *sw_reg(sw_t *W, int k) {{ switch (k) {{ {' '.join(f'case {k}: return W->r{k};' for k in range(len(self.registers)))} default: return 0; }} }}
u64 *sw_ctr(sw_t *W, int k, int bytes) {{ switch (k) {{ {' '.join(f'case {k}: return bytes ? W->c{k}b : W->c{k}p;' for k in range(len(self.counters)))} default: return 0; }} }}
void sw_set_meter_cb(sw_t *W, u64 (*cb)(int, u64, u64, u64)) {{ W->meter_cb = cb; }}
void sw_set_log(sw_t *W, int on, void (*cb)(int, const u64 *)) {{ W->log_on = on; W->log_cb = cb; }}
void sw_set_hash_cb(sw_t *W, u64 (*cb)(int, const uint8_t *, int, u64, u64)) {{ W->hash_cb = cb; }}
i64 sw_payload_off(sw_t *W) {{ return W->payload_off; }}
u64 sw_out(sw_t *W, int which) {{ return which ? W->out_spec : W->out_mgid; }}
int sw_ndig(sw_t *W) {{ return W->ndig; }}
int sw_dig(sw_t *W, int i, u64 *vals) {{ memcpy(vals, W->dig_vals[i], sizeof W->dig_vals[i]); return W->dig_id[i]; }}
static u128 u128of(const u64 *x) {{ return ((u128)x[1] << 64) | x[0]; }}
void tbl_clear(sw_t *W, int i) {{ tbl_t *t = &W->t[i]; t->n = 0; tbl_index(t); }}
void tbl_default(sw_t *W, int i, int act, int gid, const u64 *p, int np) {{
    tbl_t *t = &W->t[i]; t->def_act = act; t->def_gid = gid;
    for (int j = 0; j < np; j++) t->def_p[j] = u128of(p + 2 * j);
}}
void tbl_add(sw_t *W, int i, int act, int gid, const u64 *v, const u64 *m, const u64 *hi, const u64 *p, int np) {{
    tbl_t *t = &W->t[i];
    if (t->n == t->cap) {{ t->cap = t->cap ? 2 * t->cap : 8; t->e = realloc(t->e, sizeof(ent_t) * t->cap); }}
    ent_t *e = &t->e[t->n++]; memset(e, 0, sizeof *e); e->act = act; e->gid = gid;
    for (int q = 0; q < t->nk; q++) {{ e->v[q] = u128of(v + 2 * q); e->m[q] = u128of(m + 2 * q); e->hi[q] = u128of(hi + 2 * q); }}
    for (int j = 0; j < np; j++) e->p[j] = u128of(p + 2 * j);
}}
void tbl_done(sw_t *W, int i) {{ tbl_index(&W->t[i]); }}
/* n entries at once: keys as (lo, hi) pairs, n * nk of each, params n * np pairs */
void tbl_load(sw_t *W, int i, int n, const u64 *acts, const u64 *v, const u64 *m, const u64 *hi, const u64 *p, int np) {{
    tbl_t *t = &W->t[i]; int nk = t->nk;
    for (int j = 0; j < n; j++) {{
        tbl_add(W, i, (int)(i64)acts[5 * j], (int)acts[5 * j + 1], v + 2 * nk * j, m + 2 * nk * j, hi + 2 * nk * j, p + 2 * np * j, np);
        ent_t *e = &t->e[t->n - 1]; e->handle = acts[5 * j + 2]; e->cpk = acts[5 * j + 3]; e->cby = acts[5 * j + 4];
    }}
}}
/* direct counters: (handle, packets, bytes) of every entry */
int tbl_counters(sw_t *W, int i, u64 *out) {{
    tbl_t *t = &W->t[i];
    for (int j = 0; j < t->n; j++) {{ out[3 * j] = t->e[j].handle; out[3 * j + 1] = t->e[j].cpk; out[3 * j + 2] = t->e[j].cby; }}
    return t->n;
}}
int sw_ingress(sw_t *W, const uint8_t *data, i64 len, u64 port, u64 now_us) {{
{chr(10).join(ing.lines)}
}}
int sw_egress(sw_t *W, const u64 *ports, const u64 *rids, int n, int itype, int set_rid, u64 now_us,
              u64 length, int qpp, int drop_port, const u64 *q, uint8_t *out, i64 *lens, u64 *itypes) {{
{chr(10).join(eg.lines)}
}}
int sw_outmax(void) {{ return OUTMAX; }}
/* the same two entry points with their arguments in W->in (a call with
   two arguments costs the caller far less than one with thirteen) */
int sw_ingress_w(sw_t *W, const uint8_t *data) {{ return sw_ingress(W, data, (i64)W->in[6], W->in[13], W->in[5]); }}
/* the packet replication engine's groups, sorted by mgid: group g's replicas
   are (port, rid) pairs off[g] .. off[g + 1] (ng + 1 offsets) */
void sw_pre_load(sw_t *W, int ng, const u64 *mgid, const u64 *off, const u64 *port, const u64 *rid) {{
    free(W->pre_mgid); free(W->pre_off); free(W->pre_port); free(W->pre_rid);
    W->pre_mgid = 0; W->pre_off = 0; W->pre_port = 0; W->pre_rid = 0; W->pre_ng = 0;
    if (ng <= 0) return;
    u64 nr = off[ng];
    W->pre_mgid = malloc(8 * (size_t)ng); W->pre_off = malloc(8 * (size_t)(ng + 1));
    W->pre_port = malloc(8 * (size_t)(nr + 1)); W->pre_rid = malloc(8 * (size_t)(nr + 1));
    memcpy(W->pre_mgid, mgid, 8 * (size_t)ng); memcpy(W->pre_off, off, 8 * (size_t)(ng + 1));
    memcpy(W->pre_port, port, 8 * (size_t)nr); memcpy(W->pre_rid, rid, 8 * (size_t)nr);
    W->pre_ng = ng;
}}
/* one packet in one call: ingress, the replication engine (or egress_spec),
   each replica's queue metadata from the table at in[15] (three words per
   port: enq_qdepth, deq_timedelta, deq_qdepth; 0: none), then every
   replica's egress and deparser.  res[4]: the replicas sent to egress (0:
   dropped), res[5]: those done; in[16]: where each replica's port goes. */
int sw_process_w(sw_t *W, const uint8_t *data) {{
    int st = sw_ingress(W, data, (i64)W->in[6], W->in[13], W->in[5]);
    W->res[4] = 0; W->res[5] = 0;
    if (st & 1) return st;
    const u64 *ports, *rids; int n, itype, set_rid;
    u64 mgid = W->res[1];
    if (mgid) {{
        int lo = 0, hi = W->pre_ng - 1, g = -1;
        while (lo <= hi) {{
            int mid = (lo + hi) >> 1; u64 m = W->pre_mgid[mid];
            if (m == mgid) {{ g = mid; break; }}
            if (m < mgid) lo = mid + 1; else hi = mid - 1;
        }}
        if (g < 0) return st;
        u64 a = W->pre_off[g], b = W->pre_off[g + 1];
        if (b == a) return st;
        ports = W->pre_port + a; rids = W->pre_rid + a; n = (int)(b - a); itype = {REPLICATION}; set_rid = 1;
    }} else {{
        if (W->res[2] == W->in[8]) return st;
        W->one_port = W->res[2]; W->zero_rid = 0;
        ports = &W->one_port; rids = &W->zero_rid; n = 1; itype = 0; set_rid = 0;
    }}
    u64 *oports = (u64 *)W->in[16];
    const u64 *qt = (const u64 *)W->in[15];
    u64 *q = (u64 *)W->in[9];
    for (int i = 0; i < n; i++) {{
        oports[i] = ports[i];
        if (q) {{
            if (qt && ports[i] < {QTABLE_PORTS}) {{ const u64 *e = qt + 3 * ports[i]; q[3 * i] = e[0]; q[3 * i + 1] = e[1]; q[3 * i + 2] = e[2]; }}
            else {{ q[3 * i] = 0; q[3 * i + 1] = 0; q[3 * i + 2] = 0; }}
        }}
    }}
    W->res[4] = (u64)n;
    W->res[5] = (u64)sw_egress(W, ports, rids, n, itype, set_rid, W->in[5], W->in[6], (int)W->in[7], (int)W->in[8],
                               q, (uint8_t *)W->in[10], (i64 *)W->in[11], (u64 *)W->in[12]);
    return st;
}}
int sw_egress_w(sw_t *W) {{
    return sw_egress(W, (const u64 *)W->in[0], (const u64 *)W->in[1], (int)W->in[2], (int)W->in[3], (int)W->in[4],
                     W->in[5], W->in[6], (int)W->in[7], (int)W->in[8], (const u64 *)W->in[9], (uint8_t *)W->in[10],
                     (i64 *)W->in[11], (u64 *)W->in[12]);
}}
"""
        self.truncates = "W->trunc" in "".join(self.funcs)
        head = (f"#define NK {self.max_keys}\n#define NP {self.max_params}\n"
                # twice every emit site's bits: a deparser that applies one sub-control
                # instance twice emits its headers twice
                f"#define OUTMAX {2 * ((self.out_bits + 7) // 8) + 64}\n")
        return (head + PRELUDE + "".join(self.typedefs) + sw + POST_STATE
                + "\n".join(self.protos) + "\n" + "\n".join(self.helpers.values())
                + "\n".join(self.funcs) + api)
