"""Emit C for one v1model program from the front end's typed IR.

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
from ..interp.irutil import qualify, st, width


class NativeUnsupported(Exception):
    """A construct the C emitter does not cover (the interpreter runs the program)."""

    def __init__(self, what: str, node: Any = None) -> None:
        span = getattr(node, "span", None)
        super().__init__(f"{what}" + (f" at {span}" if span is not None else ""))


STOP_EXIT, STOP_PERR, STOP_FAULT = 1, 2, 4
KINDS = {"exact": 0, "lpm": 1, "ternary": 2, "range": 3, "optional": 4}
#: standard metadata the traffic manager stamps (switch.py ``_stamp_egress``)
QUEUE = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth")

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
            name = self.fresh(f"K_{et.name}_{t.size}_")
            ct = CType(name, "stack", t)
            ct.elem, ct.size = et, t.size  # type: ignore[attr-defined]
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


class Body:
    """Lines of one C function being generated."""

    def __init__(self, ind: int = 1) -> None:
        self.lines: list[str] = []
        self.ind = ind
        self.ret = "return;"

    def emit(self, s: str) -> None:
        self.lines.append("    " * self.ind + s)

    def sub(self) -> "Body":
        b = Body(self.ind + 1)
        b.ret = self.ret
        return b


def _pure(x: str) -> bool:
    return x.replace("_", "a").replace("ULL", "").isalnum()


class ExprMixin:
    """Expressions: each returns a side-effect-free C expression; calls are
    hoisted into statements (temporaries) in evaluation order."""

    def ex(self, e: Any, env: dict, b: Body) -> str:
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise NativeUnsupported(f"expression {type(e).__name__}", e)
        return m(e, env, b)

    def tmp(self, ct: str, val: str, b: Body) -> str:
        t = self.fresh("t")
        b.emit(f"{ct} {t} = {val};")
        return t

    def ex_IntLit(self, e: A.IntLit, env: dict, b: Body) -> str:
        if isinstance(st(e.type), T.IntType):
            if e.value < 0:
                raise NativeUnsupported("negative int literal", e)
            return self.lit(e.value, T.BitsType(128) if e.value >= 1 << 64 else T.BitsType(64))
        return self.lit(e.value, e.type)

    def ex_BoolLit(self, e: A.BoolLit, env: dict, b: Body) -> str:
        return "1" if e.value else "0"

    def ex_EnumMember(self, e: A.EnumMember, env: dict, b: Body) -> str:
        t = st(e.type)
        if e.value is not None:
            return self.lit(e.value, t.underlying if isinstance(t, T.EnumType) and t.underlying is not None else e.type)
        if isinstance(t, T.EnumType):
            return str(t.members.index(e.member))
        raise NativeUnsupported("enum value", e)

    def ex_ErrorMember(self, e: A.ErrorMember, env: dict, b: Body) -> str:
        return str(self.err_code(e.member))

    def ex_PathExpr(self, e: A.PathExpr, env: dict, b: Body) -> str:
        r = e.ref
        v = env.get(id(r))
        if v is None:
            v = self.global_env.get(id(r))
        if v is None and isinstance(r, A.ConstDecl):
            return self.lit(self.const_eval(r.value, env), r.value.type)
        if v is None and isinstance(r, A.Instantiation):
            self.global_instance(r)
            v = self.global_env[id(r)]
        if isinstance(v, str):
            return v
        if isinstance(v, tuple) and v[0] == "const":
            return self.lit(v[1], e.type)
        raise NativeUnsupported(f"cannot resolve {e.name!r}", e)

    def ex_Member(self, e: A.Member, env: dict, b: Body) -> str:
        bt = st(e.expr.type)
        if isinstance(bt, T.ApplyResultType):
            r = self.ex(e.expr, env, b)
            if e.name == "hit":
                return f"(({r} >> 32) & 1)"
            if e.name == "miss":
                return f"(!(({r} >> 32) & 1))"
            if e.name == "action_run":
                return f"({r} & 0xffffffffULL)"
        if isinstance(bt, T.StructLikeType):
            return f"({self.ex(e.expr, env, b)}).f_{e.name}"
        if isinstance(bt, T.StackType):
            x = self.ex(e.expr, env, b)
            if e.name == "lastIndex":
                return f"((({x}).nxt - 1) & 0xffffffffULL)"
            if e.name == "size":
                return f"{bt.size}ULL"
            return self.stack_elem(x, e.name, bt, b, e)
        raise NativeUnsupported(f"member {e.name!r} of {bt}", e)

    def stack_elem(self, x: str, which: str, t: Any, b: Body, node: Any) -> str:
        """``x.next`` (a parser error past the end) or ``x.last`` (a fault when empty)."""
        if which == "next":
            b.emit(f"if (({x}).nxt >= {t.size}) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('StackOutOfBounds')}; {b.ret} }}")
            return f"({x}).h[({x}).nxt]"
        if which == "last":
            b.emit(f"if (({x}).nxt == 0) {{ W->stop |= {STOP_FAULT}; {b.ret} }}")
            return f"({x}).h[({x}).nxt - 1]"
        raise NativeUnsupported(f"stack member {which}", node)

    def ex_Index(self, e: A.Index, env: dict, b: Body) -> str:
        bt = st(e.expr.type)
        if not isinstance(bt, T.StackType) or not isinstance(e.index, A.IntLit) or not 0 <= e.index.value < bt.size:
            raise NativeUnsupported("index other than a constant into a header stack", e)
        return f"({self.ex(e.expr, env, b)}).h[{e.index.value}]"

    def ex_Slice(self, e: A.Slice, env: dict, b: Body) -> str:
        x = self.ex(e.expr, env, b)
        hi = self.const_eval(e.hi, env)
        lo = self.const_eval(e.lo, env)
        w = hi - lo + 1
        sh = f"(({x}) >> {lo})" if lo else f"({x})"
        if w <= 64 and self.w_of(e.expr.type) > 64:
            sh = f"((u64){sh})"
        return self.mask(sh, w)

    def ex_Unary(self, e: A.Unary, env: dict, b: Body) -> str:
        t = st(e.type)
        if isinstance(t, T.IntType):
            return self.lit(self.const_eval(e, env), T.BitsType(64))
        x = self.ex(e.expr, env, b)
        if e.op == "!":
            return f"(!{x})"
        if e.op == "+":
            return x
        if isinstance(t, T.BitsType):
            zero = "(u128)0" if t.width > 64 else "(u64)0"
            if e.op == "-":
                return self.mask(f"{zero} - ({x})", t.width)
            if e.op == "~":
                return self.mask(f"~({x})", t.width)
        raise NativeUnsupported(f"unary {e.op} on {t}", e)

    def ex_seq(self, exprs: list, env: dict, b: Body) -> list[str]:
        texts: list[str] = []
        for x in exprs:
            sb = Body(b.ind)
            sb.ret = b.ret
            t = self.ex(x, env, sb)
            if sb.lines:
                for i, prev in enumerate(texts):
                    if not _pure(prev):
                        texts[i] = self.tmp(self.ctype(exprs[i].type).name if not isinstance(st(exprs[i].type), T.IntType) else "u128", prev, b)
                b.lines.extend(sb.lines)
            texts.append(t)
        return texts

    def ex_Binary(self, e: A.Binary, env: dict, b: Body) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.ex(e.left, env, b)
            sb = b.sub()
            r = self.ex(e.right, env, sb)
            if not sb.lines:
                return f"({a} {op} {r})"
            t = self.tmp("u64", a, b)
            b.emit(f"if ({'' if op == '&&' else '!'}{t}) {{")
            b.lines.extend(sb.lines)
            b.emit(f"    {t} = {r};")
            b.emit("}")
            return t
        if isinstance(st(e.type), T.IntType):
            return self.lit(self.const_eval(e, env), T.BitsType(64))
        lt = st(e.left.type)
        if op in ("<<", ">>"):
            a = self.ex(e.left, env, b)
            sb = Body(b.ind)
            sb.ret = b.ret
            n = self.ex(e.right, env, sb)
            if sb.lines:
                if not _pure(a):
                    a = self.tmp(self.ctype(lt).name, a, b)
                b.lines.extend(sb.lines)
            return self.shift(op, a, n, e)
        a, r = self.ex_seq([e.left, e.right], env, b)
        if op in ("==", "!="):
            if isinstance(lt, (T.StructLikeType, T.StackType)):
                raise NativeUnsupported("comparison of aggregates", e)
            return f"({a} {op} {r})"
        if op in ("<", "<=", ">", ">="):
            if self.signed(lt):
                return f"({self.sval(a, lt)} {op} {self.sval(r, lt)})"
            return f"({a} {op} {r})"
        t = st(e.type)
        if not isinstance(t, T.BitsType):
            raise NativeUnsupported(f"operator {op} on {t}", e)
        w = t.width
        ctn = "u128" if w > 64 else "u64"
        if op == "++":
            rw = self.w_of(e.right.type)
            return f"((({ctn}){a} << {rw}) | ({ctn}){r})"
        if op in ("+", "-", "*"):
            return self.mask(f"({ctn})({a}) {op} ({ctn})({r})", w)
        if op in ("&", "|", "^"):
            return f"({a} {op} {r})"
        if op in ("/", "%"):
            if t.signed:
                raise NativeUnsupported("signed division", e)
            if not _pure(r):
                r = self.tmp(ctn, r, b)
            b.emit(f"if (!{r}) {{ W->stop |= {STOP_FAULT}; {b.ret} }}")
            return f"(({a}) {op} ({r}))"
        if op in ("|+|", "|-|") and t.signed:
            if w > 64:
                raise NativeUnsupported("signed saturating arithmetic above 64 bits", e)
            sop = "+" if op == "|+|" else "-"
            return f"sat_s((__int128){self.sval(a, t)} {sop} (__int128){self.sval(r, t)}, {w})"
        if op in ("|+|", "|-|") and not t.signed:
            if not _pure(a):
                a = self.tmp(ctn, a, b)
            if not _pure(r):
                r = self.tmp(ctn, r, b)
            if op == "|-|":
                return f"({a} > {r} ? {a} - {r} : 0)"
            full = "(~(u128)0)" if w > 64 else "(~(u64)0)"
            m = full if w in (64, 128) else self.mask(full, w)
            return f"(({a} + {r} < {a} || {a} + {r} > {m}) ? {m} : {a} + {r})"
        raise NativeUnsupported(f"operator {op} on {t}", e)

    def shift(self, op: str, a: str, n: str, e: A.Binary) -> str:
        t = st(e.type)
        w = self.w_of(t)
        ctn = "u128" if w > 64 else "u64"
        if op == "<<":
            if n.endswith("ULL") and n[:-3].isdigit():
                k = int(n[:-3])
                return "0" if k >= w else self.mask(f"({ctn}){a} << {k}", w)
            return f"(({n}) >= {w} ? 0 : {self.mask(f'({ctn}){a} << ({n})', w)})"
        if self.signed(t):
            sv = self.sval(a, t)
            return self.mask(f"({ctn})({sv} >> (({n}) >= {w} ? {w - 1} : ({n})))", w)
        return f"(({n}) >= {w} ? 0 : ({a}) >> ({n}))"

    def ex_Cast(self, e: A.Cast, env: dict, b: Body) -> str:
        src, dst = st(e.expr.type), st(e.type)
        if isinstance(src, T.IntType):
            return self.lit(self.const_eval(e.expr, env), dst if not isinstance(dst, T.BoolType) else T.BitsType(1))
        x = self.ex(e.expr, env, b)
        if isinstance(dst, T.NewType):
            dst = st(dst.base)
        if isinstance(src, T.NewType):
            src = st(src.base)
        if isinstance(dst, T.BoolType):
            return f"(({x}) != 0)" if isinstance(src, T.BitsType) else x
        if isinstance(dst, T.EnumType) and dst.underlying is not None:
            dst = dst.underlying
        if isinstance(src, T.EnumType) and src.underlying is not None:
            src = src.underlying
        if isinstance(dst, T.BitsType):
            w = dst.width
            if isinstance(src, T.BoolType):
                return x
            if not isinstance(src, T.BitsType):
                raise NativeUnsupported(f"cast from {src} to {dst}", e)
            ws = src.width
            if src.signed and w > ws:
                x = f"sx128({x}, {ws})" if w > 64 else f"sx64({x}, {ws})"
            if w <= 64 and ws > 64:
                x = f"(u64)({x})"
            elif w > 64 and ws <= 64:
                x = f"(u128)({x})"
            return x if (w >= ws and not src.signed) else self.mask(x, w)
        return x

    def ex_Ternary(self, e: A.Ternary, env: dict, b: Body) -> str:
        c = self.ex(e.cond, env, b)
        s1, s2 = b.sub(), b.sub()
        x = self.ex(e.then, env, s1)
        y = self.ex(e.els, env, s2)
        if not s1.lines and not s2.lines:
            return f"({c} ? {x} : {y})"
        t = self.fresh("mx")
        b.emit(f"{self.ctype(e.type).name} {t};")
        b.emit(f"if ({c}) {{")
        b.lines.extend(s1.lines)
        b.emit(f"    {t} = {x};")
        b.emit("} else {")
        b.lines.extend(s2.lines)
        b.emit(f"    {t} = {y};")
        b.emit("}")
        return t

    def aggregate_value(self, e: Any, pairs: list, env: dict, b: Body) -> str:
        ct = self.ctype(e.type, e)
        t = self.fresh("ag")
        b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
        if ct.kind == "header":
            b.emit(f"{t}._v = 1;")
        names = [n for n, _ in pairs]
        vals = self.ex_seq([x for _, x in pairs], env, b)
        for n, v in zip(names, vals):
            b.emit(f"{t}.f_{n} = {v};")
        return t

    def ex_StructExpr(self, e: A.StructExpr, env: dict, b: Body) -> str:
        return self.aggregate_value(e, list(e.fields), env, b)

    def ex_ListExpr(self, e: A.ListExpr, env: dict, b: Body) -> str:
        t = st(e.type)
        if not isinstance(t, T.StructLikeType):
            raise NativeUnsupported("tuple value", e)
        return self.aggregate_value(e, [(f.name, x) for f, x in zip(t.fields, e.elems)], env, b)

    def ex_InvalidHeaderExpr(self, e: A.InvalidHeaderExpr, env: dict, b: Body) -> str:
        ct = self.ctype(e.type, e)
        t = self.fresh("ih")
        b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
        return t

    def ex_MethodCall(self, e: A.MethodCall, env: dict, b: Body) -> str:
        r = self.call(e, env, b)
        if r is None:
            raise NativeUnsupported("void call used as a value", e)
        return r


class StmtMixin:
    """Statements, assignments and calls with the language's copy-in/copy-out."""

    def lval(self, e: Any, env: dict, b: Body) -> str:
        if isinstance(e, A.PathExpr):
            v = self.ex_PathExpr(e, env, b)
            return v
        if isinstance(e, A.Member):
            bt = st(e.expr.type)
            if isinstance(bt, T.StructLikeType):
                return f"({self.lval(e.expr, env, b)}).f_{e.name}"
            if isinstance(bt, T.StackType) and e.name in ("next", "last"):
                return self.stack_elem(self.lval(e.expr, env, b), e.name, bt, b, e)
        if isinstance(e, A.Index):
            return self.ex_Index(e, env, b)
        raise NativeUnsupported(f"cannot assign to {type(e).__name__}", e)

    def assign(self, lhs: Any, value: str, env: dict, b: Body) -> None:
        if isinstance(lhs, A.DefaultExpr):
            return
        if isinstance(lhs, A.Slice):
            hi = self.const_eval(lhs.hi, env)
            lo = self.const_eval(lhs.lo, env)
            base = lhs.expr
            while isinstance(base, A.Slice):
                ilo = self.const_eval(base.lo, env)
                hi, lo = ilo + hi, ilo + lo
                base = base.expr
            x = self.lval(base, env, b)
            w = self.w_of(base.type)
            ctn = "u128" if w > 64 else "u64"
            sw = hi - lo + 1
            m = f"(({ctn})M128({sw}) << {lo})" if ctn == "u128" else f"((u64){hex((1 << sw) - 1)}ULL << {lo})"
            b.emit(f"{x} = ({x} & ~{m}) | ((({ctn})({value}) << {lo}) & {m});")
            return
        b.emit(f"{self.lval(lhs, env, b)} = {value};")

    def stop_check(self, b: Body) -> None:
        b.emit(f"if (W->stop) {b.ret}")

    def call(self, e: A.MethodCall, env: dict, b: Body) -> Optional[str]:
        k = e.kind
        if k == "builtin":
            return self.call_builtin(e, env, b)
        if k == "extern_method":
            return self.call_extern_method(e, env, b)
        if k == "extern_function":
            return self.call_extern_function(e, env, b)
        if k == "action":
            v = env.get(id(e.target)) or self.global_env.get(id(e.target))
            if v is None:
                v = self.global_action(e.target)
            return self.call_dirs(v[1], e.target.params, e.args, env, b, ["W", "E" if v[2] else "0"], None)
        if k == "function":
            name = self.function_fn(e.target)
            return self.call_dirs(name, e.target.params, e.args, env, b, ["W"], e.target.return_type.resolved)
        if k == "table_apply":
            v = env.get(id(e.target))
            if v is None:
                raise NativeUnsupported("table applied outside its control", e)
            r = self.tmp("u64", f"{v[1]}(W, E)", b)
            self.stop_check(b)
            return r
        if k == "block_apply":
            v = env.get(id(e.target))
            if v is None:
                raise NativeUnsupported("sub-block not instantiated here", e)
            _, fname, frame, decl = v
            return self.call_block(fname, frame, decl, e.args, env, b)
        raise NativeUnsupported(f"call kind {k!r}", e)

    def call_block(self, fname: str, frame: str, decl: Any, args: list, env: dict, b: Body) -> None:
        f = self.fresh("f")
        b.emit(f"{frame} {f};")
        outs: list[tuple[Any, str]] = []
        for p, a in zip(decl.params, args):
            v = a.value
            pt = st(p.type)
            if isinstance(pt, T.ExternType):
                continue
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                if ct.kind in ("header", "struct"):
                    lv = self.lval(v, env, b)  # by reference, as the interpreter passes it
                    b.emit(f"{f}.p_{p.name} = &{lv};")
                else:
                    t = self.fresh("io")
                    init = self.ex(v, env, b) if p.direction == "inout" else "0"
                    b.emit(f"{ct.name} {t} = {init};")
                    b.emit(f"{f}.p_{p.name} = &{t};")
                    outs.append((v, t))
            else:
                b.emit(f"{f}.p_{p.name} = {self.ex(v, env, b)};")
        b.emit(f"{fname}(W, &{f});")
        for v, t in outs:
            self.assign(v, t, env, b)
        self.stop_check(b)
        return None

    def call_dirs(self, name: str, params: list, args: list, env: dict, b: Body,
                  lead: list[str], ret_type: Any, tail: Optional[list[str]] = None) -> Optional[str]:
        texts = list(lead)
        outs: list[tuple[Any, str]] = []
        vals: list[tuple[Any, Any]] = []
        for p, a in zip(params, args):
            if isinstance(st(p.type), T.ExternType):
                raise NativeUnsupported("extern argument", p)
            vals.append((p, a.value))
        evald = self.ex_seq([v for p, v in vals if p.direction != "out"], env, b)
        it = iter(evald)
        for p, v in vals:
            ct = self.ctype(v.type if isinstance(st(p.type), T.TypeVar) else p.type, p)
            if p.direction in ("out", "inout"):
                t = self.fresh("io")
                if p.direction == "inout":
                    b.emit(f"{ct.name} {t} = {next(it)};")
                else:
                    b.emit(f"{ct.name} {t}; memset(&{t}, 0, sizeof {t});")
                texts.append(f"&{t}")
                outs.append((v, t))
            else:
                texts.append(next(it))
        texts.extend(tail or [])
        call = f"{name}({', '.join(texts)})"
        has_ret = ret_type is not None and not isinstance(st(ret_type), T.VoidType)
        r = None
        if has_ret:
            r = self.tmp(self.ctype(ret_type).name, call, b)
        else:
            b.emit(call + ";")
        for v, t in outs:
            self.assign(v, t, env, b)
        self.stop_check(b)
        return r

    def stmt(self, s: Any, env: dict, b: Body) -> None:
        if isinstance(s, A.AssignStmt):
            sb = Body(b.ind)
            sb.ret = b.ret
            v = self.ex(s.rhs, env, sb)
            b.lines.extend(sb.lines)
            self.assign(s.lhs, v, env, b)
        elif isinstance(s, A.CallStmt):
            r = self.call(s.call, env, b)
            if r is not None:
                b.emit(f"(void){r};")
        elif isinstance(s, A.BlockStmt):
            b.emit("{")
            inner = dict(env)
            b.ind += 1
            for x in s.stmts:
                self.stmt(x, inner, b)
            b.ind -= 1
            b.emit("}")
        elif isinstance(s, A.IfStmt):
            c = self.ex(s.cond, env, b)
            b.emit(f"if ({c}) {{")
            self.block(s.then, env, b)
            if s.els is not None:
                b.emit("} else {")
                self.block(s.els, env, b)
            b.emit("}")
        elif isinstance(s, A.SwitchStmt):
            self.switch(s, env, b)
        elif isinstance(s, A.ExitStmt):
            b.emit(f"W->stop |= {STOP_EXIT}; {b.ret}")
        elif isinstance(s, A.ReturnStmt):
            if s.value is not None:
                v = self.ex(s.value, env, b)
                b.emit(f"return {v};")
            else:
                b.emit(b.ret if not b.ret.startswith("return (") else "return;")
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, A.DeclStmt):
            d = s.decl
            if isinstance(d, A.ConstDecl):
                env[id(d)] = ("const", self.const_eval(d.value, env))
                return
            ct = self.ctype(d.typeref.resolved, d)
            name = self.fresh("v")
            if d.init is not None:
                init = self.ex(d.init, env, b)
                b.emit(f"{ct.name} {name} = {init};")
            else:
                b.emit(f"{ct.name} {name}; memset(&{name}, 0, sizeof {name});")
            env[id(d)] = name
        else:
            raise NativeUnsupported(f"statement {type(s).__name__}", s)

    def block(self, s: Any, env: dict, b: Body) -> None:
        b.ind += 1
        self.stmt(s, dict(env), b)
        b.ind -= 1

    def switch(self, s: A.SwitchStmt, env: dict, b: Body) -> None:
        v = self.tmp("u64", self.ex(s.expr, env, b), b)
        pending: list[str] = []
        first = True
        default_body = None
        for c in s.cases:
            lab = c.label
            if isinstance(lab, A.DefaultExpr):
                if c.body is not None:
                    default_body = c.body
                    pending = []
                continue
            if isinstance(lab, A.PathExpr) and isinstance(lab.ref, A.ActionDecl):
                pending.append(str(self.aid(self.action_name(lab.ref, env))))
            else:
                pending.append(self.ex(lab, env, b))
            if c.body is None:
                continue
            cond = " || ".join(f"{v} == {p}" for p in pending)
            b.emit(f"{'if' if first else '} else if'} ({cond}) {{")
            first = False
            self.block(c.body, env, b)
            pending = []
        if default_body is not None:
            b.emit("{" if first else "} else {")
            self.block(default_body, env, b)
            b.emit("}")
        elif not first:
            b.emit("}")

    def action_name(self, decl: A.ActionDecl, env: dict) -> str:
        names = env.get("__actions__")
        if names is not None and id(decl) in names:
            return names[id(decl)]
        return qualify("", decl)

    def global_action(self, decl: A.ActionDecl) -> tuple:
        name = self.fresh("act_" + decl.name + "_")
        v = ("action", name, False)
        self.global_env[id(decl)] = v
        self.gen_action(decl, name, dict(self.global_env), "void")
        return v

    def gen_action(self, decl: A.ActionDecl, name: str, env: dict, frame: str) -> None:
        env = dict(env)
        ps = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                ps.append(f"{ct.name} *{n}")
                env[id(p)] = f"(*{n})"
            else:
                ps.append(f"{ct.name} {n}")
                env[id(p)] = n
        sig = f"static void {name}(sw_t *W, {frame} *E{''.join(', ' + x for x in ps)})"
        self.protos.append(sig + ";")
        b = Body()
        b.emit("(void)E;")
        self.in_action = True
        for s in decl.body.stmts:
            self.stmt(s, env, b)
        self.in_action = False
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")

    def function_fn(self, decl: A.FunctionDecl) -> str:
        key = id(decl)
        if key in self.functions:
            return self.functions[key]
        name = self.fresh("fn_" + decl.name + "_")
        self.functions[key] = name
        env = dict(self.global_env)
        ps = []
        for p in decl.params:
            n = self.fresh("a_" + p.name + "_")
            ct = self.ctype(p.type, p)
            if p.direction in ("out", "inout"):
                ps.append(f"{ct.name} *{n}")
                env[id(p)] = f"(*{n})"
            else:
                ps.append(f"{ct.name} {n}")
                env[id(p)] = n
        rt = st(decl.return_type.resolved)
        rct = "void" if isinstance(rt, T.VoidType) else self.ctype(rt).name
        sig = f"static {rct} {name}(sw_t *W{''.join(', ' + x for x in ps)})"
        self.protos.append(sig + ";")
        b = Body()
        b.ret = "return;" if rct == "void" else f"return ({rct}){{0}};" if rct.startswith(("S_", "H_")) else "return 0;"
        for s in decl.body.stmts:
            self.stmt(s, env, b)
        if rct != "void":
            b.emit(b.ret)
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")
        return name


class ExternMixin:
    """Builtins (validity), the packet, registers, counters, meters, checksums, digests."""

    def call_builtin(self, e: A.MethodCall, env: dict, b: Body) -> Optional[str]:
        name = e.target
        obj = e.func.expr if isinstance(e.func, A.Member) else None
        ot = st(obj.type) if obj is not None else None
        if isinstance(ot, T.HeaderUnionType):
            if name != "isValid":
                raise NativeUnsupported(f"{name} on {ot}", e)
            x = self.ex(obj, env, b)
            return "(" + " || ".join(f"({x}).f_{f.name}._v" for f in ot.fields) + ")" if ot.fields else "0"
        if isinstance(ot, T.StackType):
            if name not in ("push_front", "pop_front"):
                raise NativeUnsupported(f"{name} on {ot}", e)
            x = self.lval(obj, env, b)
            n = self.tmp("u64", self.ex(e.args[0].value, env, b), b)
            N = ot.size
            b.emit(f"if ({n} > {N}) {n} = {N};")
            if name == "push_front":
                b.emit(f"for (i64 i = {N} - 1; i >= (i64){n}; i--) {x}.h[i] = {x}.h[i - {n}];")
                b.emit(f"for (i64 i = 0; i < (i64){n}; i++) memset(&{x}.h[i], 0, sizeof {x}.h[i]);")
                b.emit(f"{x}.nxt = {x}.nxt + {n} < {N} ? {x}.nxt + {n} : {N};")
            else:
                b.emit(f"for (i64 i = 0; i < (i64)({N} - {n}); i++) {x}.h[i] = {x}.h[i + {n}];")
                b.emit(f"for (i64 i = {N} - (i64){n}; i < {N}; i++) memset(&{x}.h[i], 0, sizeof {x}.h[i]);")
                b.emit(f"{x}.nxt = {x}.nxt > {n} ? {x}.nxt - {n} : 0;")
            return None
        if name == "isValid":
            return f"({self.ex(obj, env, b)})._v"
        if name == "setValid":
            x = self.lval(obj, env, b)
            b.emit(f"if (!{x}._v) {{ memset(&{x}, 0, sizeof {x}); {x}._v = 1; }}")
            self.invalidate_siblings(obj, env, b)
            return None
        if name == "setInvalid":
            b.emit(f"{self.lval(obj, env, b)}._v = 0;")
            return None
        if name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
            w = width(ot)
            return f"{w if 'Bits' in name else (w + 7) // 8}ULL"
        raise NativeUnsupported(f"builtin {name!r}", e)

    def invalidate_siblings(self, h: Any, env: dict, b: Body) -> None:
        """A union member made valid leaves its siblings invalid."""
        if isinstance(h, A.Member) and isinstance(st(h.expr.type), T.HeaderUnionType):
            u = self.lval(h.expr, env, b)
            for f in st(h.expr.type).fields:
                if f.name != h.name:
                    b.emit(f"{u}.f_{f.name}._v = 0;")

    def hash_site(self, kind: str, algo: Optional[str] = None) -> int:
        """A call site (``hash``, ``csum`` or ``random``) answered by the runtime's
        own algorithms; stateful ones keep state per site, as BMv2's do."""
        self.hash_sites.append((kind, algo))
        return len(self.hash_sites) - 1

    def perr(self, code: str, b: Body) -> None:
        b.emit(f"W->stop |= {STOP_PERR}; W->perr = {self.err_code(code)}; {b.ret}")

    def hdr_bits(self, t: Any) -> int:
        return sum(self.w_of(f.type) for f in st(t).fields)

    def extract_fn(self, t: Any, node: Any) -> str:
        ct = self.ctype(t, node)
        name = "ext_" + ct.name
        if name not in self.helpers:
            lines = [f"static int {name}(sw_t *W, {ct.name} *h) {{",
                     f"    i64 pos = W->pos; if (pos + {self.hdr_bits(t)} > W->nbits) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('PacketTooShort')}; return 1; }}"]
            for n, fct in ct.fields:
                w = self.w_of(fct.t)
                lines.append(f"    h->f_{n} = ({fct.name})getbits(W->data, pos, {w}); pos += {w};")
            lines.append("    h->_v = 1; W->pos = pos; return 0;\n}\n")
            self.helpers[name] = "\n".join(lines)
        return name

    def emit_fn(self, t: Any, node: Any) -> str:
        ct = self.ctype(t, node)
        name = "emit_" + ct.name
        if name not in self.helpers:
            lines = [f"static void {name}(sw_t *W, const {ct.name} *h) {{", "    if (!h->_v) return;"]
            for n, fct in ct.fields:
                lines.append(f"    putbits(W, h->f_{n}, {self.w_of(fct.t)});")
            lines.append("}\n")
            self.helpers[name] = "\n".join(lines)
        return name

    def emit_value(self, x: str, t: Any, b: Body, node: Any) -> None:
        t = st(t)
        if isinstance(t, T.HeaderType):
            b.emit(f"{self.emit_fn(t, node)}(W, &{x});")
            self.out_bits += self.hdr_bits(t)
        elif isinstance(t, (T.StructType, T.HeaderUnionType)):
            for f in t.fields:
                self.emit_value(f"{x}.f_{f.name}", f.type, b, node)
        elif isinstance(t, T.StackType):
            for i in range(t.size):
                self.emit_value(f"{x}.h[{i}]", t.elem, b, node)
        else:
            raise NativeUnsupported(f"emit of {t}", node)

    def call_extern_method(self, e: A.MethodCall, env: dict, b: Body) -> Optional[str]:
        obj = e.func.expr
        ot = st(obj.type)
        ename = ot.name if isinstance(ot, T.ExternType) else "?"
        m = e.func.name
        args = [a.value for a in e.args]
        if ename == "packet_in":
            if m == "extract" and len(args) == 1:
                target = args[0]
                if isinstance(target, A.DefaultExpr):
                    ht = st(e.resolved_type_args[0]) if e.resolved_type_args else None
                    if not isinstance(ht, T.HeaderType):
                        raise NativeUnsupported("extract into _", e)
                    n = self.hdr_bits(ht)
                    b.emit(f"if (W->pos + {n} > W->nbits) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('PacketTooShort')}; {b.ret} }}")
                    b.emit(f"W->pos += {n};")
                    return None
                if not isinstance(st(target.type), T.HeaderType):
                    raise NativeUnsupported("extract into a non-header", e)
                fn = self.extract_fn(target.type, e)
                if isinstance(target, A.Member) and target.name == "next" and isinstance(st(target.expr.type), T.StackType):
                    s = self.lval(target.expr, env, b)
                    h = self.stack_elem(s, "next", st(target.expr.type), b, e)
                    b.emit(f"if ({fn}(W, &{h})) {b.ret}")
                    b.emit(f"{s}.nxt += 1;")
                    return None
                if isinstance(target, A.Member) and isinstance(target.expr, A.Member) and target.expr.name == "next":
                    raise NativeUnsupported("extract into a union in a stack", e)
                b.emit(f"if ({fn}(W, &{self.lval(target, env, b)})) {b.ret}")
                self.invalidate_siblings(target, env, b)
                return None
            if m == "lookahead":
                t = st(e.type)
                if not isinstance(t, (T.BitsType, T.BoolType)):
                    raise NativeUnsupported(f"lookahead of {t}", e)
                w = self.w_of(t)
                b.emit(f"if (W->pos + {w} > W->nbits) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('PacketTooShort')}; {b.ret} }}")
                return self.tmp(self.ctype(t).name, f"({self.ctype(t).name})getbits(W->data, W->pos, {w})", b)
            if m == "advance":
                n = self.tmp("u64", self.ex(args[0], env, b), b)
                b.emit(f"if (W->pos + (i64){n} > W->nbits) {{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('PacketTooShort')}; {b.ret} }}")
                b.emit(f"W->pos += (i64){n};")
                return None
            raise NativeUnsupported(f"packet_in.{m}", e)
        if ename == "packet_out" and m == "emit":
            x = self.ex(args[0], env, b)
            if not _pure(x.replace("(", "").replace(")", "").replace("*", "").replace("->", "_").replace(".", "_")):
                x = self.tmp(self.ctype(args[0].type).name, x, b)
            self.emit_value(x, args[0].type, b, e)
            return None
        v = self.ex(obj, env, b) if not isinstance(obj, A.PathExpr) else None
        ref = env.get(id(obj.ref)) or self.global_env.get(id(obj.ref)) if isinstance(obj, A.PathExpr) else v
        if ref is None and isinstance(obj, A.PathExpr) and isinstance(obj.ref, A.Instantiation):
            self.global_instance(obj.ref)
            ref = self.global_env[id(obj.ref)]
        if not isinstance(ref, tuple):
            raise NativeUnsupported(f"extern object {ename}", e)
        if ename == "register" and ref[0] == "reg":
            k, size, w = ref[1], ref[2], ref[3]
            cell = "u128" if w > 64 else "u64"
            if m == "read":
                i = self.tmp("u64", self.ex(args[1], env, b), b)
                self.assign(args[0], f"(({i}) < {size} ? ({self.ctype(args[0].type).name})W->r{k}[{i}] : 0)", env, b)
                return None
            if m == "write":
                i, val = self.ex_seq([args[0], args[1]], env, b)
                i = self.tmp("u64", i, b)
                b.emit(f"if ({i} < {size}) W->r{k}[{i}] = ({cell})({val});")
                return None
        if ename == "counter" and m == "count" and ref[0] == "ctr":
            k, size = ref[1], ref[2]
            i = self.tmp("u64", self.ex(args[0], env, b), b)
            b.emit(f"if ({i} < {size}) {{ W->c{k}p[{i}] += 1; W->c{k}b[{i}] += W->length; }}")
            return None
        if ename == "meter" and m == "execute_meter" and ref[0] == "meter":
            i = self.tmp("u64", self.ex(args[0], env, b), b)
            self.assign(args[1], f"({self.ctype(args[1].type).name})W->meter_cb({ref[1]}, {i}, W->now_us, W->length)", env, b)
            return None
        if ename == "direct_counter" and m == "count":
            return None  # counted on a table hit, as BMv2 does
        if ename == "direct_meter" and m == "read":
            self.assign(args[0], f"({self.ctype(args[0].type).name})W->dm_color", env, b)
            return None
        raise NativeUnsupported(f"extern method {ename}.{m}", e)

    def csum_input(self, e: Any, env: dict, b: Body, ck: str, push: str = "ck_push") -> None:
        """Push BMv2's field list (fields of invalid headers left out) into checksum state ``ck``."""
        def push_text(x: str, t: Any, guard: Optional[str]) -> None:
            t = st(t)
            if isinstance(t, T.HeaderType):
                ct = self.ctype(t)
                g = f"{x}._v"
                for n, fct in ct.fields:
                    b.emit(f"if ({g}) {push}(&{ck}, {x}.f_{n}, {self.w_of(fct.t)});")
                return
            if isinstance(t, (T.StructType, T.HeaderUnionType)):
                for f in t.fields:
                    push_text(f"{x}.f_{f.name}", f.type, guard)
                return
            if isinstance(t, T.StackType):
                for i in range(t.size):
                    push_text(f"{x}.h[{i}]", t.elem, guard)
                return
            w = self.w_of(t)
            line = f"{push}(&{ck}, {x}, {w});"
            b.emit(f"if ({guard}) {line}" if guard else line)

        def walk(x: Any, guard: Optional[str]) -> None:
            t = st(x.type)
            if isinstance(x, (A.ListExpr, A.StructExpr)) and not isinstance(t, T.HeaderType):
                elems = x.elems if isinstance(x, A.ListExpr) else [v for _, v in x.fields]
                for y in elems:
                    walk(y, guard)
                return
            txt = self.ex(x, env, b)
            g = guard
            if isinstance(x, A.Member) and isinstance(st(x.expr.type), T.HeaderType):
                g = f"({self.ex(x.expr, env, b)})._v"
            push_text(txt, t, g)

        walk(e, None)

    def call_extern_function(self, e: A.MethodCall, env: dict, b: Body) -> Optional[str]:
        name = e.target.name
        args = [a.value for a in e.args]
        if name == "mark_to_drop":
            if not args:
                raise NativeUnsupported("mark_to_drop() without standard_metadata", e)
            sm = self.lval(args[0], env, b)
            b.emit(f"{sm}.f_egress_spec = 511; {sm}.f_mcast_grp = 0;")
            return None
        if name == "hash":
            k = self.hash_site("hash", str(self.const_eval(args[1], env)))
            base, mx = self.ex_seq([args[2], args[4]], env, b)
            bb = self.fresh("bb")
            b.emit(f"bb_t {bb}; {bb}.pos = 0;")
            self.csum_input(args[3], env, b, bb, "bb_push")
            w = self.w_of(args[0].type)
            if w > 64 or self.w_of(args[2].type) > 64 or self.w_of(args[4].type) > 64:
                raise NativeUnsupported("hash wider than 64 bits", e)
            self.assign(args[0], self.mask(f"W->hash_cb({k}, {bb}.b, (int)(({bb}.pos + 7) >> 3), {base}, {mx})", w), env, b)
            return None
        if name == "random":
            w = self.w_of(args[0].type)
            if w > 64:
                raise NativeUnsupported("random wider than 64 bits", e)
            k = self.hash_site("random")
            lo, hi = self.ex_seq([args[1], args[2]], env, b)
            self.assign(args[0], self.mask(f"W->hash_cb({k}, 0, 0, {lo}, {hi})", w), env, b)
            return None
        if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload") \
                and str(self.const_eval(args[3], env)) != "csum16":
            k = self.hash_site("csum", str(self.const_eval(args[3], env)))
            cond = self.ex(args[0], env, b)
            b.emit(f"if ({cond}) {{")
            b.ind += 1
            bb = self.fresh("bb")
            b.emit(f"bb_t {bb}; {bb}.pos = 0;")
            self.csum_input(args[1], env, b, bb, "bb_push")
            if name.endswith("_with_payload"):
                b.emit(f"{bb}.pos = ({bb}.pos + 7) & ~(i64)7;")
                b.emit(f"for (i64 i = W->payload_off; i < W->nbits / 8; i++) bb_push(&{bb}, W->data[i], 8);")
            w = self.w_of(args[2].type)
            comp = self.mask(f"W->hash_cb({k}, {bb}.b, (int)(({bb}.pos + 7) >> 3), 0, 0)", w)
            if name.startswith("verify"):
                b.emit(f"if ({comp} != {self.ex(args[2], env, b)}) W->cksum_err = 1;")
            else:
                self.assign(args[2], comp, env, b)
            b.ind -= 1
            b.emit("}")
            return None
        if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload"):
            cond = self.ex(args[0], env, b)
            b.emit(f"if ({cond}) {{")
            b.ind += 1
            ck = self.fresh("ck")
            b.emit(f"ck_t {ck} = {{0, 0, 0, 0, 0}};")
            self.csum_input(args[1], env, b, ck)
            if name.endswith("_with_payload"):
                # the field list padded to whole bytes, then the payload (BMv2's input)
                b.emit(f"ck_push(&{ck}, 0, (int)((8 - {ck}.total % 8) % 8));")
                b.emit(f"for (i64 i = W->payload_off; i < W->nbits / 8; i++) ck_push(&{ck}, W->data[i], 8);")
            w = self.w_of(args[2].type)
            comp = self.mask(f"ck_done(&{ck})", w)
            if name.startswith("verify"):
                b.emit(f"if ({comp} != {self.ex(args[2], env, b)}) W->cksum_err = 1;")
            else:
                self.assign(args[2], comp, env, b)
            b.ind -= 1
            b.emit("}")
            return None
        if name == "digest":
            # BMv2 reads a digest's fields at the end of ingress: keep a
            # pointer to each field (into the packet's root structs) and read
            # them then; a literal is kept as its value
            t = st(args[1].type)
            if not isinstance(t, T.StructType) or any(not isinstance(st(f.type), (T.BitsType, T.BoolType)) or self.w_of(f.type) > 64 for f in t.fields):
                raise NativeUnsupported("digest of anything but a struct of bit<=64> fields", e)
            if self.depth != 1:
                raise NativeUnsupported("digest outside the top-level ingress control", e)
            data = args[1]
            if isinstance(data, (A.ListExpr, A.StructExpr)):
                elems = list(data.elems) if isinstance(data, A.ListExpr) else [x for _, x in data.fields]
            else:
                lv = self.lval(data, env, b)
                elems = [f"{lv}.f_{f.name}" for f in t.fields]
            k = len(self.digests)
            self.digests.append((t.name, [(f.name, self.w_of(f.type)) for f in t.fields]))
            self.ndigest_fields = max(self.ndigest_fields, len(t.fields))
            reads = []
            b.emit("if (W->ndig < 8) {")
            for j, x in enumerate(elems):
                if isinstance(x, str):
                    text = x
                elif isinstance(x, (A.IntLit, A.BoolLit)):
                    reads.append(f"d[{j}] = {self.ex(x, env, b)};")
                    continue
                else:
                    text = self.lval(x, env, b)
                if not text.lstrip("(").startswith("*E->p_") or ".f_" not in text:
                    raise NativeUnsupported("digest field that is not a member of a top-level parameter", e)
                b.emit(f"    W->dig_fp[W->ndig][{j}] = &{text};")
                reads.append(f"d[{j}] = *p[{j}];")
            b.emit(f"    W->dig_id[W->ndig] = {k}; W->ndig++;")
            b.emit("}")
            self.helpers[f"dig_{k}"] = (f"static void dig_{k}(u64 *d, const u64 *const *p) {{ (void)p; {' '.join(reads)} }}\n")
            return None
        if name == "truncate":
            b.emit(f"W->trunc = (u64)({self.ex(args[0], env, b)}) & 0xFFFFFFFFULL;")
            return None
        if name == "log_msg":
            fmt = args[0]
            if not isinstance(fmt, A.StringLit):
                raise NativeUnsupported("log_msg with a format that is not a literal", e)
            data = args[1] if len(args) > 1 else None
            elems = [] if data is None else (list(data.elems) if isinstance(data, A.ListExpr) and not isinstance(st(data.type), T.StructLikeType) else [data])
            kinds = []
            for x in elems:
                t = st(x.type)
                if not isinstance(t, (T.BitsType, T.BoolType)) or self.w_of(t) > 64:
                    raise NativeUnsupported(f"log_msg of {t}", e)
                kinds.append("bool" if isinstance(t, T.BoolType) else (-t.width if t.signed else t.width))
            k = len(self.log_sites)
            self.log_sites.append((fmt.value, kinds, isinstance(data, A.ListExpr) or data is None))
            b.emit("if (W->log_on) {")
            b.ind += 1
            vals = self.ex_seq(elems, env, b)
            arr = self.fresh("lv")
            b.emit(f"u64 {arr}[{max(len(vals), 1)}] = {{{', '.join(vals) or '0'}}};")
            b.emit(f"W->log_cb({k}, {arr});")
            b.ind -= 1
            b.emit("}")
            return None
        if name in ("assert", "assume"):
            b.emit(f"if (!({self.ex(args[0], env, b)})) {{ W->stop |= {STOP_FAULT}; {b.ret} }}")
            return None
        if name == "verify":
            c = self.ex(args[0], env, b)
            code = self.ex(args[1], env, b)
            b.emit(f"if (!({c})) {{ W->stop |= {STOP_PERR}; W->perr = {code}; {b.ret} }}")
            return None
        if name == "static_assert":
            return "1"
        raise NativeUnsupported(f"extern function {name!r}", e)


class BlockMixin:
    """Parser/control instances, tables, extern instances, the whole program."""

    def extern_instance(self, inst: A.Instantiation, fq: str, env: dict) -> tuple:
        t = st(inst.typeref.resolved)
        if not isinstance(t, T.ExternType):
            raise NativeUnsupported(f"instance of {t}", inst)
        args = [self.const_eval(a, env) for a in inst.args]
        if t.name == "register":
            et = st(t.type_args[0]) if t.type_args else T.BitsType(32)
            if not isinstance(et, (T.BitsType, T.BoolType)) or self.w_of(et) > 128:
                raise NativeUnsupported(f"register of {et}", inst)
            k = len(self.registers)
            self.registers.append((fq, int(args[0]), self.w_of(et), self.signed(et)))
            return ("reg", k, int(args[0]), self.w_of(et))
        if t.name == "counter":
            k = len(self.counters)
            self.counters.append((fq, int(args[0])))
            return ("ctr", k, int(args[0]))
        if t.name == "meter":
            k = len(self.meters)
            self.meters.append(fq)
            return ("meter", k)
        if t.name in ("direct_counter", "direct_meter"):
            return (t.name,)
        raise NativeUnsupported(f"extern {t.name!r}", inst)

    def global_instance(self, inst: A.Instantiation) -> None:
        self.global_env[id(inst)] = self.extern_instance(inst, qualify("", inst), {})

    def frame_param(self, p: Any) -> tuple[str, str]:
        """(C member declaration, expression inside the instance) for one block parameter."""
        ct = self.ctype(p.type, p)
        if p.direction in ("out", "inout"):
            return f"{ct.name} *p_{p.name};", f"(*E->p_{p.name})"
        return f"{ct.name} p_{p.name};", f"E->p_{p.name}"

    def instantiate(self, decl: Any, prefix: str, ctor_args: list, outer_env: dict) -> tuple[str, str]:
        """C functions of one parser/control instance; returns (apply function, frame type)."""
        self.depth += 1
        try:
            return self._instantiate(decl, prefix, ctor_args, outer_env)
        finally:
            self.depth -= 1

    def _instantiate(self, decl: Any, prefix: str, ctor_args: list, outer_env: dict) -> tuple[str, str]:
        env: dict[Any, Any] = dict(self.global_env)
        actions: dict[int, str] = {}
        env["__actions__"] = actions
        for p, a in zip(decl.ctor_params, ctor_args):
            env[id(p)] = ("const", self.const_eval(a, outer_env))
        for p in decl.ctor_params[len(ctor_args):]:
            if p.default is not None:
                env[id(p)] = ("const", self.const_eval(p.default, env))
        tag = "".join(c if c.isalnum() else "_" for c in prefix)
        frame = self.fresh(f"F_{tag}_")
        members: list[str] = []
        for p in decl.params:
            pt = st(p.type)
            if isinstance(pt, T.ExternType):
                if pt.name not in ("packet_in", "packet_out"):
                    raise NativeUnsupported(f"extern parameter {pt.name}", p)
                env[id(p)] = ("packet", pt.name)
                continue
            m, x = self.frame_param(p)
            members.append(m)
            env[id(p)] = x
        inits = Body()
        local_vars = []
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                env[id(d)] = ("action", self.fresh(f"act_{tag}_{d.name}_"), True)
                actions[id(d)] = qualify(prefix, d)
                self.aid(actions[id(d)])
            elif isinstance(d, A.TableDecl):
                env[id(d)] = ("table", self.fresh(f"tbl_{tag}_{d.name}_"))
            elif isinstance(d, A.ConstDecl):
                env[id(d)] = ("const", self.const_eval(d.value, env))
            elif isinstance(d, A.VarDecl):
                n = self.fresh("l")
                members.append(f"{self.ctype(d.typeref.resolved, d).name} {n};")
                env[id(d)] = f"E->{n}"
                local_vars.append(d)
            elif isinstance(d, A.Instantiation):
                t = st(d.typeref.resolved)
                if isinstance(t, T.ExternType):
                    env[id(d)] = self.extern_instance(d, qualify(prefix, d), env)
                else:
                    sub = d.decl
                    if not isinstance(sub, (A.ControlDecl, A.ParserDecl)):
                        raise NativeUnsupported(f"instance of {type(sub).__name__}", d)
                    fname, fr = self.instantiate(sub, qualify(prefix, d), list(d.args), env)
                    env[id(d)] = ("inst", fname, fr, sub)
            else:
                raise NativeUnsupported(f"local {type(d).__name__}", d)
        self.typedefs.append(f"typedef struct {{\n    {' '.join(members) or 'int _dummy;'}\n}} {frame};\n")
        for d in decl.locals:
            if isinstance(d, A.ActionDecl):
                self.gen_action(d, env[id(d)][1], env, frame)
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.gen_table(d, env[id(d)][1], qualify(prefix, d), env, frame)
        for d in local_vars:
            if d.init is not None:
                v = self.ex(d.init, env, inits)
                inits.emit(f"{env[id(d)]} = {v};")
            else:
                inits.emit(f"memset(&{env[id(d)]}, 0, sizeof {env[id(d)]});")
        fname = self.fresh(("prs_" if isinstance(decl, A.ParserDecl) else "ctl_") + tag + "_")
        sig = f"static void {fname}(sw_t *W, {frame} *E)"
        self.protos.append(sig + ";")
        b = Body()
        b.lines.extend(inits.lines)
        if isinstance(decl, A.ParserDecl):
            self.gen_states(decl, env, b)
        else:
            for s in decl.body.stmts:
                self.stmt(s, env, b)
        self.funcs.append(sig + " {\n    (void)E;\n" + "\n".join(b.lines) + "\n}\n")
        return fname, frame

    def gen_states(self, decl: A.ParserDecl, env: dict, b: Body) -> None:
        names = {s.name: self.fresh(f"st_{s.name}_") for s in decl.states}
        if "start" not in names:
            raise NativeUnsupported("parser has no start state", decl)

        def goto(ns: Any) -> str:
            n = ns if isinstance(ns, str) else getattr(ns, "name", None)
            if n == "accept" and n not in names:
                return "return;"
            if n == "reject" and n not in names:
                return f"{{ W->stop |= {STOP_PERR}; W->perr = {self.err_code('NoError')}; return; }}"
            return f"goto {names[n]};"

        b.emit(f"goto {names['start']};")
        for s in decl.states:
            b.emit(f"{names[s.name]}: {{")
            b.ind += 1
            senv = dict(env)
            for x in s.stmts:
                self.stmt(x, senv, b)
            tr = s.transition
            if tr is None:
                b.emit(goto("reject"))
            elif tr.select is None:
                b.emit(goto(tr.next_state if tr.next_state is not None else tr.state))
            else:
                self.gen_select(tr.select, senv, b, goto)
            b.ind -= 1
            b.emit("}")

    def gen_select(self, sel: A.SelectExpr, env: dict, b: Body, goto: Any) -> None:
        keys = []
        for x in sel.exprs:
            t = st(x.type)
            ctn = self.ctype(t, x).name
            keys.append((self.tmp(ctn, self.ex(x, env, b), b), t))
        for c in sel.cases:
            ks = c.keyset
            parts = ks.elems if (len(keys) > 1 and isinstance(ks, A.ListExpr)) else [ks]
            if len(keys) > 1 and not isinstance(ks, A.ListExpr):
                if not isinstance(ks, A.DefaultExpr):
                    raise NativeUnsupported("select case", ks)
                parts = [ks] * len(keys)
            conds = []
            for (k, t), p in zip(keys, parts):
                w = self.w_of(t)
                if isinstance(p, A.DefaultExpr):
                    continue
                if isinstance(p, A.Mask):
                    v, m = self.ex(p.value, env, b), self.ex(p.mask, env, b)
                    conds.append(f"(({k} & {m}) == ({v} & {m}))")
                elif isinstance(p, A.Range):
                    conds.append(f"({self.ex(p.lo, env, b)} <= {k} && {k} <= {self.ex(p.hi, env, b)})")
                elif isinstance(p, A.PathExpr) and isinstance(p.ref, A.ValueSetDecl):
                    raise NativeUnsupported("value set", p)
                else:
                    conds.append(f"({k} == {self.mask(self.ex(p, env, b), w)})")
            b.emit(f"if ({' && '.join(conds) or '1'}) {goto(c.next_state if c.next_state is not None else c.state)}")
        b.emit(f"W->stop |= {STOP_PERR}; W->perr = {self.err_code('NoMatch')}; return;")

    def gen_table(self, d: A.TableDecl, name: str, fq: str, env: dict, frame: str) -> None:
        if d.prop("implementation") is not None:
            raise NativeUnsupported("table implementation", d)
        b = Body()
        b.ret = "return 0;"
        keys = []
        kinds = []
        for ke in d.keys:
            if ke.match_kind not in KINDS:
                raise NativeUnsupported(f"match kind {ke.match_kind}", ke)
            t = st(ke.expr.type)
            if not isinstance(t, (T.BitsType, T.BoolType, T.ErrorType, T.EnumType)):
                raise NativeUnsupported(f"table key of type {t}", ke)
            keys.append(self.ex(ke.expr, env, b))
            kinds.append(KINDS[ke.match_kind])
        self.max_keys = max(self.max_keys, len(keys))
        ix = len(self.tables)
        alist: list[str] = []
        cases = []
        for ar in d.actions:
            adecl = ar.decl
            if adecl is None or ar.args:
                raise NativeUnsupported("table action with bound arguments", ar)
            aname = self.action_name(adecl, env)
            v = env.get(id(adecl)) or self.global_env.get(id(adecl)) or self.global_action(adecl)
            params = adecl.params
            if any(p.direction for p in params):
                raise NativeUnsupported("action with directional parameters in a table", ar)
            self.max_params = max(self.max_params, len(params))
            args = ", ".join(f"({self.ctype(p.type).name})p[{i}]" for i, p in enumerate(params))
            cases.append(f"    case {len(alist)}: {v[1]}(W, {'E' if v[2] else '0'}{', ' + args if args else ''}); break;")
            alist.append(aname)
            self.aid(aname)
        da = d.default_action
        if da is not None and da.decl is not None:
            dname = self.action_name(da.decl, env)
            if dname not in alist:
                v = env.get(id(da.decl)) or self.global_env.get(id(da.decl)) or self.global_action(da.decl)
                if da.decl.params:
                    raise NativeUnsupported("default action outside the action list with parameters", d)
                cases.append(f"    case {len(alist)}: {v[1]}(W, {'E' if v[2] else '0'}); break;")
                alist.append(dname)
                self.aid(dname)
        self.tables.append((fq, d, alist))
        self.table_ix[fq] = ix
        b.emit("u128 k[NK > 0 ? NK : 1];")
        for i, (k, kd) in enumerate(zip(keys, kinds)):
            b.emit(f"k[{i}] = (u128)({k});")
        b.emit(f"tbl_t *t = &W->t[{ix}];")
        b.emit("ent_t *e = tbl_find(t, k); int a, gid; u64 hit; u128 *p;")
        b.emit("if (e) { a = e->act; gid = e->gid; p = e->p; hit = 1; } else { a = t->def_act; gid = t->def_gid; p = t->def_p; hit = 0; }")
        if d.counters is not None:
            b.emit("if (e) { e->cpk += 1; e->cby += W->length; }")
        if d.meters is not None:
            b.emit(f"if (e) W->dm_color = W->meter_cb({-1 - ix}, e->handle, W->now_us, W->length);")
        self.direct.append((fq, d.counters is not None, d.meters is not None))
        b.emit("(void)p;")
        b.emit("switch (a) {")
        b.lines.extend(cases)
        b.emit("    default: break;")
        b.emit("}")
        b.emit("return (hit << 32) | (u64)gid;")
        sig = f"static u64 {name}(sw_t *W, {frame} *E)"
        self.protos.append(sig + ";")
        self.funcs.append(sig + " {\n" + "\n".join(b.lines) + "\n}\n")


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
        sw = (f"typedef struct sw {{\n    u64 res[4]; u64 in[16]; int stop; u64 perr; u64 cksum_err; u64 dm_color;\n"
              "    u64 (*hash_cb)(int, const uint8_t *, int, u64, u64);\n"
              "    int log_on; void (*log_cb)(int, const u64 *); u64 trunc, trunc_in;\n"
              "    const uint8_t *data; i64 nbits, pos; u64 length, now_us;\n"
              "    uint8_t *obuf; i64 opos, omax; i64 payload_off; u64 out_mgid, out_spec;\n"
              f"    int ndig; int dig_id[8]; const u64 *dig_fp[8][{self.ndigest_fields}]; u64 dig_vals[8][{self.ndigest_fields}];\n"
              "    u64 (*meter_cb)(int, u64, u64, u64);\n"
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
        api = f"""
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
