"""Builtins and externs of the C emitter (a mixin of ``cgen.CProgram``)."""

from __future__ import annotations

from typing import Any, Optional

from ..frontend import ast as A
from ..frontend import types as T
from ..interp.irutil import st, width
from .cbase import STOP_FAULT, STOP_PERR, Body, NativeUnsupported, _pure


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
