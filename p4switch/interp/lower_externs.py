"""v1model externs lowered to calls on the runtime objects.

Extern objects (registers, counters, meters, direct resources) are created
here at build time; extern functions (hash, checksums, clone, resubmit,
recirculate, digest, truncate, ...) become inline code that sets the
per-packet context the traffic manager reads after the pipeline stage.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..frontend import ast as A
from ..frontend import types as T
from ..runtime import externs as X
from ..runtime import hashes as H
from .irutil import FieldList, Fn, UnsupportedError, is_aggregate, is_signed, qualify, st, width


class ExternLowering:
    """Mixin of ``codegen.Lowering``."""

    # attributes provided by Lowering
    g: dict
    out: list

    def call_extern_method(self, e: A.MethodCall, env: dict, fn: Fn) -> Optional[str]:
        obj = e.func.expr
        ot = st(obj.type)
        ename = ot.name if isinstance(ot, T.ExternType) else "?"
        m = e.func.name
        o = self.ex(obj, env, fn)
        args = [a.value for a in e.args]
        if ename == "packet_in":
            if m == "extract":
                target = args[0]
                tt = st(target.type)
                if isinstance(target, A.DefaultExpr):
                    # extract into ``_``: the bits are consumed and dropped
                    ht = st(e.resolved_type_args[0]) if e.resolved_type_args else None
                    if not isinstance(ht, T.HeaderType) or len(args) != 1:
                        raise UnsupportedError("extract into _ needs a fixed header type", e)
                    fn.emit(f"{o}.take({width(ht)})")
                    return None
                if len(args) == 1:
                    if isinstance(target, A.Member) and target.name == "next" and isinstance(st(target.expr.type), T.StackType):
                        s = self.ex(target.expr, env, fn)
                        h = self.fresh("h")
                        fn.emit(f"{h} = {s}.next()")
                        fn.emit(f"{h}.extract({o})")
                        fn.emit(f"{s}.nxt += 1")
                        return None
                    if (isinstance(target, A.Member) and isinstance(target.expr, A.Member)
                            and target.expr.name == "next" and isinstance(st(target.expr.expr.type), T.StackType)):
                        # a member of the next element of a header-union stack
                        s = self.ex(target.expr.expr, env, fn)
                        u = self.fresh("u")
                        fn.emit(f"{u} = {s}.next()")
                        fn.emit(f"{u}.f_{target.name}.extract({o})")
                        for f in st(target.expr.type).fields:
                            if f.name != target.name:
                                fn.emit(f"{u}.f_{f.name}._v = False")
                        fn.emit(f"{s}.nxt += 1")
                        return None
                    if not isinstance(tt, T.HeaderType):
                        raise UnsupportedError("extract into a non-header", e)
                    if any(isinstance(st(f.type), T.VarbitType) for f in tt.fields):
                        raise UnsupportedError("one-argument extract of a varbit header", e)
                    lv = self.ex(target, env, fn)
                    fn.emit(f"{lv}.extract({o})")
                    self._invalidate_siblings(target, env, fn)
                    return None
                lv = self.ex(target, env, fn)
                n = self.ex(args[1], env, fn)
                if isinstance(target, A.Member) and target.name == "next" and isinstance(st(target.expr.type), T.StackType):
                    s = self.ex(target.expr, env, fn)
                    fn.emit(f"{s}.next().extract_var({o}, {n})")
                    fn.emit(f"{s}.nxt += 1")
                    return None
                fn.emit(f"{lv}.extract_var({o}, {n})")
                return None
            if m == "lookahead":
                t = st(e.type)
                if isinstance(t, T.HeaderType):
                    h = self.fresh("h")
                    fn.emit(f"{h} = {self.cls(t)}()")
                    fn.emit(f"{h}.unpack({o}.peek({width(t)}))")
                    return h
                if isinstance(t, T.StructType):
                    v = self.fresh("la")
                    h = self.fresh("h")
                    fn.emit(f"{v} = {o}.peek({width(t)})")
                    fn.emit(f"{h} = {self.cls(t)}()")
                    shift = width(t)

                    def fill(tt: Any, path: str) -> None:
                        nonlocal shift
                        for f in tt.fields:
                            ft = st(f.type)
                            if isinstance(ft, T.StructType):
                                fill(ft, f"{path}.f_{f.name}")
                                continue
                            w = width(ft)
                            if w == 0:
                                raise UnsupportedError(f"lookahead of a struct with a {ft} field", e)
                            shift -= w
                            raw = f"(({v} >> {shift}) & {(1 << w) - 1})"
                            if isinstance(ft, T.BoolType):
                                raw = f"bool({raw})"
                            elif is_signed(ft):
                                raw = f"_s({raw}, {w})"
                            fn.emit(f"{path}.f_{f.name} = {raw}")

                    fill(t, h)
                    return h
                w = width(t)
                v = f"{o}.peek({w})"
                if isinstance(t, T.BoolType):
                    return f"bool({v})"
                return f"_s({v}, {w})" if is_signed(t) else v
            if m == "advance":
                fn.emit(f"{o}.advance({self.ex(args[0], env, fn)})")
                return None
            if m == "length":
                return f"(len({o}.data) & 0xffffffff)"
        if ename == "packet_out" and m == "emit":
            self.emit_value(args[0], o, env, fn)
            return None
        if ename == "register":
            reg = self.g.get(o)
            plain = type(reg) is X.RegisterArray  # bit<W> cells: RegisterArray.read/write inline
            if m == "read":
                if plain:
                    i = self.fresh("ri")
                    fn.emit(f"{i} = {self.ex(args[1], env, fn)}")
                    self.assign(args[0], f"({o}.values[{i}] if 0 <= {i} < {reg.size} else 0)", env, fn)
                else:
                    self.assign(args[0], f"{o}.read({self.ex(args[1], env, fn)})", env, fn)
                return None
            if m == "write":
                if plain and not reg.signed:
                    i, v = self.fresh("ri"), self.fresh("rv")
                    fn.emit(f"{i} = {self.ex(args[0], env, fn)}; {v} = {self.ex(args[1], env, fn)}")
                    fn.emit(f"if 0 <= {i} < {reg.size}: {o}.values[{i}] = {v} & {(1 << reg.width) - 1}")
                else:
                    fn.emit(f"{o}.write({self.ex(args[0], env, fn)}, {self.ex(args[1], env, fn)})")
                return None
        if ename == "counter" and m == "count":
            ctr = self.g.get(o)
            if type(ctr) is not X.CounterArray:
                fn.emit(f"{o}.count({self.ex(args[0], env, fn)}, _pk.length)")
                return None
            # CounterArray.count inline (no call per count): the lists are
            # read through the object, since a reset replaces them
            i = self.fresh("ci")
            fn.emit(f"{i} = {self.ex(args[0], env, fn)}")
            fn.emit(f"if 0 <= {i} < {ctr.size}: {o}.packets[{i}] += 1; {o}.bytes[{i}] += _pk.length")
            return None
        if ename == "direct_counter" and m == "count":
            return None  # counted on table hit, as BMv2 does
        if ename == "meter" and m == "execute_meter":
            self.assign(args[1], f"{o}.execute({self.ex(args[0], env, fn)}, _pk.now_us, _pk.length)", env, fn)
            return None
        if ename == "direct_meter" and m == "read":
            self.assign(args[0], "_pk.dm_color", env, fn)
            return None
        raise UnsupportedError(f"extern method {ename}.{m}", e)

    def emit_value(self, v: Any, o: str, env: dict, fn: Fn) -> None:
        t = st(v.type)
        x = self.ex(v, env, fn)
        self._emit_typed(t, x, o, fn)

    def _emit_typed(self, t: Any, x: str, o: str, fn: Fn) -> None:
        if isinstance(t, T.HeaderType):
            fixed = not any(isinstance(st(f.type), T.VarbitType) for f in t.fields)
            if fixed and not x.isidentifier():
                h = self.fresh("e")
                fn.emit(f"{h} = {x}")
                x = h
            if fixed:
                # the PacketOut.put body inline: one call (pack) per header, not two
                n = T.width_of(t)
                fn.emit(f"if {x}._v: {o}.acc = ({o}.acc << {n}) | {x}.pack(); {o}.n += {n}")
            else:
                fn.emit(f"if {x}._v: {o}.put({x}.pack(), {x}.nbits())")
        elif isinstance(t, (T.StructType, T.HeaderUnionType)):
            for f in t.fields:
                self._emit_typed(st(f.type), f"{x}.f_{f.name}", o, fn)
        elif isinstance(t, T.StackType):
            i = self.fresh("i")
            fn.emit(f"for {i} in {x}.h:")
            fn.ind += 1
            self._emit_typed(st(t.elem), i, o, fn)
            fn.ind -= 1
        elif isinstance(t, T.TupleType):
            raise UnsupportedError("emit of a tuple")
        else:
            raise UnsupportedError(f"emit of {t}")

    # -- extern functions

    def bits_list(self, e: Any, env: dict, fn: Fn) -> str:
        """Emit code building BMv2's field-list byte string for hash/checksum input."""
        acc, nb = self.bits_value(e, env, fn)
        return f"_tobytes({acc}, {nb})"

    def bits_value(self, e: Any, env: dict, fn: Fn) -> tuple[str, str]:
        """Emit code building BMv2's field list for hash/checksum input as an
        integer and its width in bits; returns the two variable names.

        Fields are concatenated MSB first into one integer; a field of an
        invalid header is left out, as BMv2's field-list builder does.
        Consecutive fields under the same validity guard become one
        expression."""
        acc = self.fresh("d")
        nb = self.fresh("n")
        fn.emit(f"{acc} = 0; {nb} = 0")
        groups: list[tuple[Optional[str], list[tuple[str, Any]]]] = []  # (guard, [(value, width or text)])

        def add(guard: Optional[str], val: str, w: Any) -> None:
            if groups and groups[-1][0] == guard:
                groups[-1][1].append((val, w))
            else:
                groups.append((guard, [(val, w)]))

        def walk(x: Any, guard: Optional[str]) -> None:
            t = st(x.type)
            if isinstance(x, (A.ListExpr, A.StructExpr)) and not isinstance(t, T.HeaderType):
                elems = x.elems if isinstance(x, A.ListExpr) else [v for _, v in x.fields]
                for y in elems:
                    walk(y, guard)
                return
            txt = self.ex(x, env, fn)
            g = guard
            if isinstance(x, A.Member) and isinstance(st(x.expr.type), T.HeaderType):
                g = f"{self.ex(x.expr, env, fn)}._v"
            if isinstance(t, T.VarbitType) and isinstance(x, A.Member):
                add(g, txt, f"{self.ex(x.expr, env, fn)}.w_{x.name}")
                return
            walk_text(txt, t, g)

        def walk_text(txt: str, t: Any, g: Optional[str]) -> None:
            if isinstance(t, T.HeaderType):
                add(f"{txt}._v", f"{txt}.pack()", f"{txt}.nbits()")
                return
            if isinstance(t, T.StructType):
                for f in t.fields:
                    walk_text(f"{txt}.f_{f.name}", st(f.type), g)
                return
            if isinstance(t, T.VarbitType):
                raise UnsupportedError("varbit value in a hash/checksum input")
            w = width(t)
            if w == 0:
                raise UnsupportedError(f"cannot serialise {t} for a hash/checksum")
            if isinstance(t, T.BoolType):
                val = f"int({txt})"
            elif is_signed(t):
                val = f"({txt} & {(1 << w) - 1})"
            else:
                val = txt
            add(g, val, w)

        walk(e, None)
        for guard, items in groups:
            expr = acc
            total: list[str] = []
            static = 0
            for val, w in items:
                expr = f"(({expr} << {w}) | {val})"
                if isinstance(w, int):
                    static += w
                else:
                    total.append(str(w))
            inc = " + ".join(([str(static)] if static else []) + total) or "0"
            line = f"{acc} = {expr}; {nb} += {inc}"
            fn.emit(f"if {guard}: {line}" if guard else line)
        return acc, nb

    def algo(self, e: Any, env: dict) -> Callable[[bytes], int]:
        name = self.const_eval(e, env)
        return H.algorithm(str(name), self.seed)

    def _hash_rt(self, fnc: Callable[[bytes], int], data: bytes, base: int, mx: int) -> int:
        if mx == 0:
            mx = 1
        return base + fnc(data) % mx

    def call_extern_function(self, e: A.MethodCall, env: dict, fn: Fn) -> Optional[str]:
        name = e.target.name
        args = [a.value for a in e.args]
        if name == "mark_to_drop":
            if args:
                sm = self.ex(args[0], env, fn)
            else:
                raise UnsupportedError("mark_to_drop() without standard_metadata", e)
            fn.emit(f"{sm}.f_egress_spec = 511; {sm}.f_mcast_grp = 0")
            return None
        if name == "hash":
            f = self.const(self.algo(args[1], env), "HA")
            data = self.bits_list(args[3], env, fn)
            w = width(args[0].type)
            val = f"(_hash({f}, {data}, {self.ex(args[2], env, fn)}, {self.ex(args[4], env, fn)}) & {(1 << w) - 1})"
            if is_signed(args[0].type):
                val = f"_s({val}, {w})"
            self.assign(args[0], val, env, fn)
            return None
        if name == "random":
            rng = self.const(__import__("random").Random(self.seed), "RNG")
            lo = self.ex(args[1], env, fn)
            hi = self.ex(args[2], env, fn)
            self.assign(args[0], f"({lo} + {rng}.getrandbits(64) % (({hi}) - ({lo}) + 1) if ({hi}) >= ({lo}) else {lo})", env, fn)
            return None
        if name in ("verify_checksum", "verify_checksum_with_payload", "update_checksum", "update_checksum_with_payload"):
            algo = self.algo(args[3], env)
            f = self.const(algo, "HA")
            cond = self.ex(args[0], env, fn)
            fn.emit(f"if {cond}:")
            fn.ind += 1
            w = width(args[2].type)
            if algo is H.csum16 and not name.endswith("_with_payload"):
                # the Internet checksum straight from the field-list integer
                acc, nb = self.bits_value(args[1], env, fn)
                comp = f"(_csum16_bits({acc}, {nb}) & {(1 << w) - 1})"
            else:
                data = self.bits_list(args[1], env, fn)
                if name.endswith("_with_payload"):
                    data = f"({data} + _pk.payload)"
                comp = f"({f}({data}) & {(1 << w) - 1})"
            if name.startswith("verify"):
                fn.emit(f"if {comp} != {self.ex(args[2], env, fn)}: _pk.checksum_error = True")
            else:
                self.assign(args[2], comp, env, fn)
            fn.ind -= 1
            return None
        if name == "digest":
            t = st(args[1].type)
            dname = t.name if isinstance(t, T.StructLikeType) else f"digest_{len(self.digests)}"
            fields = [f.name for f in t.fields] if isinstance(t, T.StructLikeType) else []
            self.digests.setdefault(dname, fields)
            x = self.ex(args[1], env, fn)
            conv = f"(lambda v=None: {x}.copy())" if is_aggregate(t) else f"(lambda v=None: {x})"
            fn.emit(f"_pk.digests.append(({dname!r}, {conv}))")
            return None
        if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            idx = self.const_eval(args[0], env)
            self.field_list(idx)
            attr = "resubmit" if name.startswith("resubmit") else "recirculate"
            fn.emit(f"_pk.{attr} = {idx!r}")
            return None
        if name in ("resubmit", "recirculate"):
            fl = self.field_list_from_data(args[0] if args else None, env)
            fn.emit(f"_pk.{name} = {fl!r}")
            return None
        if name in ("clone", "clone_preserving_field_list", "clone3"):
            sess = self.ex(args[1], env, fn)
            if name == "clone":
                fl: Any = None
            elif name == "clone3":
                fl = self.field_list_from_data(args[2], env)
            else:
                fl = self.const_eval(args[2], env)
                self.field_list(fl)
            fn.emit(f"_pk.clone = ({sess}, {fl!r})")
            return None
        if name == "truncate":
            fn.emit(f"_pk.truncate = {self.ex(args[0], env, fn)}")
            return None
        if name in ("assert", "assume"):
            fn.emit(f"if not {self.ex(args[0], env, fn)}: raise _Fault({name + ' failed at ' + str(e.span)!r})")
            return None
        if name == "log_msg":
            fmt = self.ex(args[0], env, fn)
            data = self.ex(args[1], env, fn) if len(args) > 1 else "None"
            fn.emit(f"if _pk.log_on: _pk.log(_pk.fmt({fmt}, {data}))")
            return None
        if name == "verify":
            fn.emit(f"if not {self.ex(args[0], env, fn)}: raise _PErr({self.ex(args[1], env, fn)})")
            return None
        if name == "static_assert":
            return "True"
        raise UnsupportedError(f"extern function {name!r}", e)

    # -- field lists

    def meta_paths(self, t: Any, prefix: tuple[str, ...], idx: int, out: list) -> None:
        for f in t.fields:
            hit = False
            for a in f.annotations:
                if a.name == "field_list":
                    for arg in a.args:
                        try:
                            if self.const_eval(arg, {}) == idx:
                                hit = True
                        except UnsupportedError:
                            pass
            ft = st(f.type)
            if hit:
                out.append((1, prefix + (f"f_{f.name}",)))
            elif isinstance(ft, T.StructType):
                self.meta_paths(ft, prefix + (f"f_{f.name}",), idx, out)

    def field_list(self, idx: int) -> int:
        if idx not in self.field_lists:
            fl = FieldList()
            if self.meta_type is not None:
                self.meta_paths(self.meta_type, (), idx, fl.paths)
            self.field_lists[idx] = fl
        return idx

    def field_list_from_data(self, data: Any, env: dict) -> Optional[int]:
        """Old-style ``clone3``/``resubmit(data)``: preserve the listed fields."""
        if data is None:
            return None
        elems = data.elems if isinstance(data, A.ListExpr) else ([v for _, v in data.fields] if isinstance(data, A.StructExpr) else [data])
        paths = []
        for x in elems:
            path: list[str] = []
            y = x
            while isinstance(y, A.Member):
                path.append(f"f_{y.name}")
                y = y.expr
            if not isinstance(y, A.PathExpr) or id(y.ref) not in self.cur_roles:
                continue  # not a field of the pipeline's metadata: nothing to preserve
            paths.append((self.cur_roles[id(y.ref)], tuple(reversed(path))))
        key = -1 - len(self.field_lists)
        self.field_lists[key] = FieldList(paths)
        return key

    def extern_instance(self, inst: A.Instantiation, fq: str, env: dict) -> str:
        t = st(inst.typeref.resolved)
        if not isinstance(t, T.ExternType):
            raise UnsupportedError(f"instance of {t}", inst)
        en = t.name
        args = [self.const_eval(a, env) for a in inst.args]
        gname = self.fresh("X_" + inst.name + "_")
        if en == "register":
            et = st(t.type_args[0]) if t.type_args else T.BitsType(32)
            obj: Any
            if is_aggregate(et):
                # a register of structs/headers holds value objects (copied in and out)
                cls = self.cls(et)
                obj = X.ObjectRegisterArray(fq, int(args[0]), lambda cls=cls: self.g[cls]())
            else:
                obj = X.RegisterArray(fq, int(args[0]), width(et), is_signed(et))
            self.registers[fq] = obj
        elif en == "counter":
            obj = X.CounterArray(fq, int(args[0]), str(args[1]) if len(args) > 1 else "packets_and_bytes")
            self.counters[fq] = obj
        elif en == "meter":
            obj = X.MeterArray(fq, int(args[0]), str(args[1]) == "packets")
            self.meters[fq] = obj
        elif en == "direct_counter":
            obj = ("direct_counter", fq, str(args[0]) if args else "packets_and_bytes")
        elif en == "direct_meter":
            obj = ("direct_meter", fq, str(args[0]) == "packets" if args else False)
        elif en in ("action_profile", "action_selector"):
            # a table implementation: its members and groups have no control-plane
            # API here; the table runs its default action and direct entries
            obj = (en, fq)
        else:
            raise UnsupportedError(f"extern {en!r} is not supported", inst)
        self.g[gname] = obj
        return gname

    def global_instance(self, inst: A.Instantiation) -> None:
        fq = qualify("", inst)
        self.global_env[id(inst)] = self.extern_instance(inst, fq, {})
