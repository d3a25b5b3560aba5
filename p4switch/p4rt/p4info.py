"""P4Info generation from the front end's typed IR, following p4c.

What a controller sees must match what p4c would emit for the same v1model
program, so a controller (and its P4Info-based tests) work unchanged against
BMv2 and the built-in switch:

* **names** are fully qualified by the control instance path
  (``MyIngress.ipv4_lpm``); ``@name("x")`` renames the last component and
  ``@name(".x")`` makes the name global; top-level objects (``NoAction``)
  keep their own name;
* **ids** are ``prefix << 24 | jenkins(name) & 0xffffff`` (see :mod:`.ids`),
  ``@id`` wins;
* **aliases** are the shortest dot-suffix unique among objects of a kind;
* **match fields** and **action parameters** are numbered from 1 in
  declaration order; key fields are named by ``@name`` or by the key
  expression as written (``hdr.ipv4.dstAddr``);
* **controller packet metadata** come from headers annotated
  ``@controller_header("packet_in")``/``("packet_out")``;
* **digests** are named after the digested type, with its layout in
  ``type_info``; counters, meters, registers and their direct variants come
  from v1model extern instances.

Only actions reachable from tables appear (as with p4c: actions called
directly are inlined by its mid end and never visible to a controller).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from google.protobuf import text_format

from finsy.proto import p4i, p4t

from ..frontend import ast
from ..frontend import types as ty
from .ids import IdAllocator, Prefix

DEFAULT_TABLE_SIZE = 1024
"""p4c's default ``size`` for tables that declare none."""

# Annotations p4c consumes itself and does not copy into P4Info preambles.
_CONSUMED = {
    "name", "id", "brief", "description", "tableonly", "defaultonly", "controller_header",
    "hidden", "noWarn", "optional", "pure", "noSideEffects", "priority", "match",
    "atomic", "switchstack", "deprecated", "field_list",
}


class P4InfoError(ValueError):
    """The program cannot be described in P4Info (e.g. conflicting ``@id``)."""


# ---------------------------------------------------------------------------
# Helpers over the IR
# ---------------------------------------------------------------------------


def _anno(decl: Any, name: str) -> Optional[ast.Annotation]:
    return ast.find_annotation(getattr(decl, "annotations", []) or [], name)


def _local_name(decl: ast.Decl, prefix: str) -> str:
    """The fully qualified name of ``decl`` declared inside ``prefix``."""
    a = _anno(decl, "name")
    if a is not None and a.string_arg() is not None:
        n = a.string_arg() or ""
        if n.startswith("."):
            return n[1:]
        return f"{prefix}.{n}" if prefix else n
    return f"{prefix}.{decl.name}" if prefix else decl.name


def _fixed_id(decl: Any) -> Optional[int]:
    a = _anno(decl, "id")
    if a is not None and a.args and isinstance(a.args[0], ast.IntLit):
        return a.args[0].value
    return None


def expr_text(e: ast.Expression) -> str:
    """P4 source text of a key expression, the way p4c names key fields."""
    if isinstance(e, ast.PathExpr):
        return ("." if e.top_level else "") + e.name
    if isinstance(e, ast.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, ast.IntLit):
        return str(e.value)
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Cast):
        inner = expr_text(e.expr)
        if e.implicit:
            return inner
        return f"({_type_text(e.type)}){inner}"
    if isinstance(e, ast.MethodCall):
        args = ", ".join(expr_text(a.value) for a in e.args)
        return f"{expr_text(e.func)}({args})"
    if isinstance(e, ast.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, ast.Unary):
        return f"{e.op}{expr_text(e.expr)}"
    if isinstance(e, ast.EnumMember):
        return f"{e.enum_name}.{e.member}"
    return type(e).__name__


def _type_text(t: Optional[ty.P4Type]) -> str:
    return str(t) if t is not None else "?"


def bit_width(t: Optional[ty.P4Type]) -> int:
    """Width in bits of a type a controller writes as a bytestring."""
    if isinstance(t, ty.BitsType):
        return t.width
    if isinstance(t, ty.BoolType):
        return 1
    if isinstance(t, ty.EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ty.NewType):
        return bit_width(t.base)
    if isinstance(t, ty.VarbitType):
        return t.max_width
    if isinstance(t, ty.ErrorType):
        return 32
    raise P4InfoError(f"type {t} has no bit width a controller can use")


def _annotation_strings(decl: Any, skip: set[str] = _CONSUMED) -> list[str]:
    out = []
    for a in getattr(decl, "annotations", []) or []:
        if a.name in skip:
            continue
        if a.args:
            body = ", ".join(_anno_arg(x) for x in a.args)
            out.append(f"@{a.name}({body})")
        elif a.kv:
            body = ", ".join(f"{k}={_anno_arg(v)}" for k, v in a.kv.items())
            out.append(f"@{a.name}[{body}]")
        elif a.raw:
            out.append(f"@{a.name}({a.raw})")
        else:
            out.append(f"@{a.name}")
    return out


def _anno_arg(e: ast.Expression) -> str:
    if isinstance(e, ast.StringLit):
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return expr_text(e)


_SKIP_FIELDS = {"ref", "target", "decl", "next_state", "resolved", "type", "params", "resolved_type_args", "span"}


def walk(node: Any) -> Iterator[Any]:
    """Every IR node under ``node`` (syntax children only, no resolved references)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
            continue
        if isinstance(n, tuple):
            stack.extend(reversed(list(n)))
            continue
        if not isinstance(n, ast.Node):
            continue
        yield n
        for f in dataclasses.fields(n):
            if f.name in _SKIP_FIELDS:
                continue
            v = getattr(n, f.name, None)
            if isinstance(v, (ast.Node, list, tuple)):
                stack.append(v)
            elif isinstance(v, dict):
                stack.extend(v.values())


def _extern_name(inst: ast.Instantiation) -> str:
    tr = inst.typeref
    return tr.name if isinstance(tr, ast.NamedTypeRef) else ""


def _type_args(inst: ast.Instantiation) -> list[ty.P4Type]:
    r = inst.typeref.resolved
    if isinstance(r, ty.ExternType) and r.type_args:
        return list(r.type_args)
    if isinstance(inst.typeref, ast.NamedTypeRef):
        return [a.resolved for a in inst.typeref.args if a.resolved is not None]
    return []


def _const_int(e: ast.Expression) -> Optional[int]:
    if isinstance(e, ast.IntLit):
        return e.value
    if isinstance(e, ast.Cast):
        return _const_int(e.expr)
    return None


def _enum_member(e: ast.Expression) -> Optional[str]:
    if isinstance(e, ast.EnumMember):
        return e.member
    if isinstance(e, ast.Member):
        return e.name
    return None


# ---------------------------------------------------------------------------
# Collection
# ---------------------------------------------------------------------------


@dataclass
class _Obj:
    prefix: Prefix
    name: str
    decl: Any
    extra: dict[str, Any] = field(default_factory=dict)
    id: int = 0


@dataclass
class _Collected:
    tables: list[_Obj] = field(default_factory=list)
    actions: dict[Any, _Obj] = field(default_factory=dict)  # by (id(ActionDecl), instance prefix)
    externs: list[_Obj] = field(default_factory=list)
    value_sets: list[_Obj] = field(default_factory=list)
    controller_headers: list[_Obj] = field(default_factory=list)
    digests: dict[str, _Obj] = field(default_factory=dict)
    inst_names: dict[int, str] = field(default_factory=dict)  # id(Instantiation) -> name


def _collect(program: ast.Program) -> _Collected:
    c = _Collected()

    # Top-level extern instances first: controls may refer to them.
    for d in program.decls:
        if isinstance(d, ast.Instantiation) and d is not program.main:
            _collect_instance(c, d, "")

    seen_blocks: set[int] = set()
    for role in ("parser", "verify", "ingress", "egress", "compute", "deparser"):
        blk = program.v1model.get(role)
        if blk is None or id(blk.decl) in seen_blocks:
            continue
        seen_blocks.add(id(blk.decl))
        _collect_block(c, blk.decl, _block_instance_name(blk.decl))
    if not program.v1model:
        for blk in program.blocks.values():
            _collect_block(c, blk.decl, _block_instance_name(blk.decl))

    for d in program.decls:
        if isinstance(d, ast.StructDecl) and d.kind == "header":
            a = _anno(d, "controller_header")
            if a is not None and a.string_arg():
                c.controller_headers.append(_Obj(Prefix.CONTROLLER_HEADER, a.string_arg() or "", d))

    for n in walk(program.decls):
        if isinstance(n, ast.MethodCall) and _is_digest_call(n):
            t = _digest_type(n)
            if t is not None:
                name = t.name
                if name not in c.digests:
                    c.digests[name] = _Obj(Prefix.DIGEST, name, getattr(t, "decl", None), {"type": t})
    return c


def _block_instance_name(decl: Any) -> str:
    a = _anno(decl, "name")
    if a is not None and a.string_arg():
        return (a.string_arg() or "").lstrip(".")
    return decl.name


def _is_digest_call(mc: ast.MethodCall) -> bool:
    tgt = mc.target
    if isinstance(tgt, ast.ExternFunctionDecl) and tgt.name == "digest":
        return True
    f = mc.func
    return mc.kind in ("", "extern_function") and isinstance(f, ast.PathExpr) and f.name == "digest"


def _digest_type(mc: ast.MethodCall) -> Optional[ty.StructLikeType]:
    if mc.resolved_type_args and isinstance(mc.resolved_type_args[0], ty.StructLikeType):
        return mc.resolved_type_args[0]
    if mc.type_args and isinstance(mc.type_args[0].resolved, ty.StructLikeType):
        return mc.type_args[0].resolved
    if len(mc.args) >= 2 and isinstance(mc.args[1].value.type, ty.StructLikeType):
        return mc.args[1].value.type
    return None


def _collect_block(c: _Collected, decl: Any, prefix: str) -> None:
    if isinstance(decl, ast.ControlDecl):
        for d in decl.locals:
            if isinstance(d, ast.Instantiation):
                _collect_instance(c, d, prefix)
        for d in decl.locals:
            if isinstance(d, ast.TableDecl):
                tobj = _Obj(Prefix.TABLE, _local_name(d, prefix), d, {"prefix": prefix, "action_keys": {}})
                c.tables.append(tobj)
                for ref in d.actions + ([d.default_action] if d.default_action else []):
                    key = _collect_action(c, ref, prefix, decl)
                    if key is not None:
                        tobj.extra["action_keys"][id(ref.decl)] = key
    elif isinstance(decl, ast.ParserDecl):
        for d in decl.locals:
            if isinstance(d, ast.ValueSetDecl):
                c.value_sets.append(_Obj(Prefix.VALUE_SET, _local_name(d, prefix), d))
            elif isinstance(d, ast.Instantiation):
                _collect_instance(c, d, prefix)


def _collect_action(c: _Collected, ref: ast.ActionRef, prefix: str, control: ast.ControlDecl) -> Any:
    # A control-local action belongs to its control *instance*: a control
    # instantiated twice has two actions (``c1.a``, ``c2.a``), as in p4c.
    adecl = ref.decl
    if adecl is None:
        return None
    local = any(d is adecl for d in control.locals)
    key = (id(adecl), prefix if local else "")
    if key in c.actions:
        return key
    name = _local_name(adecl, prefix) if local else _local_name(adecl, "")
    c.actions[key] = _Obj(Prefix.ACTION, name, adecl, {"key": key})
    return key


_EXTERN_PREFIX = {
    "counter": Prefix.COUNTER,
    "direct_counter": Prefix.DIRECT_COUNTER,
    "meter": Prefix.METER,
    "direct_meter": Prefix.DIRECT_METER,
    "register": Prefix.REGISTER,
    "action_profile": Prefix.ACTION_PROFILE,
    "action_selector": Prefix.ACTION_PROFILE,
}


def _collect_instance(c: _Collected, inst: ast.Instantiation, prefix: str) -> None:
    name = _local_name(inst, prefix)
    c.inst_names[id(inst)] = name
    if isinstance(inst.decl, ast.ControlDecl):
        _collect_block(c, inst.decl, name)
        return
    if isinstance(inst.decl, ast.ParserDecl):
        _collect_block(c, inst.decl, name)
        return
    kind = _extern_name(inst)
    if kind in _EXTERN_PREFIX:
        c.externs.append(_Obj(_EXTERN_PREFIX[kind], name, inst, {"kind": kind}))


# ---------------------------------------------------------------------------
# Building the message
# ---------------------------------------------------------------------------


def _aliases(objs: list[_Obj]) -> dict[int, str]:
    """Shortest dot-suffix of each name that no other object of the list shares."""
    out: dict[int, str] = {}
    parts = [o.name.split(".") for o in objs]
    for i, p in enumerate(parts):
        for k in range(1, len(p) + 1):
            cand = ".".join(p[-k:])
            clash = any(j != i and ".".join(q[-k:]) == cand for j, q in enumerate(parts) if len(q) >= k)
            if not clash:
                out[i] = cand
                break
        else:
            out[i] = objs[i].name
    return out


def _preamble(msg: Any, o: _Obj, alias: str) -> None:
    msg.preamble.id = o.id
    msg.preamble.name = o.name
    msg.preamble.alias = alias
    if o.decl is not None:
        msg.preamble.annotations.extend(_annotation_strings(o.decl))
        b = _anno(o.decl, "brief")
        if b is not None and b.string_arg():
            msg.preamble.doc.brief = b.string_arg() or ""
        d = _anno(o.decl, "description")
        if d is not None and d.string_arg():
            msg.preamble.doc.description = d.string_arg() or ""


_MATCH = {
    "exact": p4i.MatchField.EXACT,
    "lpm": p4i.MatchField.LPM,
    "ternary": p4i.MatchField.TERNARY,
    "range": p4i.MatchField.RANGE,
    "optional": p4i.MatchField.OPTIONAL,
}


def build_p4info(program: ast.Program) -> p4i.P4Info:
    """The P4Info message describing ``program`` (a checked v1model program)."""
    c = _collect(program)
    alloc = IdAllocator()
    everything: list[_Obj] = (
        c.tables + list(c.actions.values()) + c.externs + c.value_sets + c.controller_headers + list(c.digests.values())
    )
    # Reserve fixed ids first so hashed ones never take them (p4c's order).
    for o in everything:
        fixed = _fixed_id(o.decl) if o.decl is not None else None
        if fixed is not None:
            try:
                o.id = alloc.reserve(o.prefix, fixed)
            except ValueError as e:
                raise P4InfoError(f"{o.name}: {e}") from None
    for o in sorted(everything, key=lambda o: (int(o.prefix), o.name)):
        if not o.id:
            o.id = alloc.assign(o.prefix, o.name)

    info = p4i.P4Info()
    info.pkg_info.arch = "v1model"
    type_info = info.type_info

    # Actions.
    acts = sorted(c.actions.values(), key=lambda o: o.name)
    alias = _aliases(acts)
    for i, o in enumerate(acts):
        m = info.actions.add()
        _preamble(m, o, alias[i])
        pid = 0
        for prm in o.decl.params:
            if prm.direction:
                continue  # only directionless parameters are action data
            pid += 1
            p = m.params.add()
            p.id = pid
            p.name = prm.name
            p.bitwidth = bit_width(prm.type)
            p.annotations.extend(_annotation_strings(prm))
            _maybe_type_name(p, prm.type)

    action_id = {o.extra["key"]: o.id for o in c.actions.values()}
    inst_id = {id(o.decl): o.id for o in c.externs}

    # Tables.
    tables = sorted(c.tables, key=lambda o: o.name)
    alias = _aliases(tables)
    direct_owner: dict[int, int] = {}
    for i, o in enumerate(tables):
        t: ast.TableDecl = o.decl
        m = info.tables.add()
        _preamble(m, o, alias[i])
        fid = 0
        for k in t.keys:
            if k.match_kind == "selector":
                continue
            fid += 1
            mf = m.match_fields.add()
            mf.id = fid
            na = _anno(k, "name")
            mf.name = (na.string_arg() if na is not None and na.string_arg() else expr_text(k.expr)) or ""
            mf.bitwidth = bit_width(k.expr.type)
            if k.match_kind in _MATCH:
                mf.match_type = _MATCH[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            mf.annotations.extend(_annotation_strings(k))
            _maybe_type_name(mf, k.expr.type)
        listed: set[int] = set()
        for ref in t.actions:
            if ref.decl is None or id(ref.decl) in listed:
                continue
            listed.add(id(ref.decl))
            ar = m.action_refs.add()
            ar.id = action_id[o.extra["action_keys"][id(ref.decl)]]
            if _anno(ref, "tableonly") is not None:
                ar.scope = p4i.ActionRef.TABLE_ONLY
            elif _anno(ref, "defaultonly") is not None:
                ar.scope = p4i.ActionRef.DEFAULT_ONLY
            # p4c keeps @tableonly/@defaultonly as annotations of the reference too.
            ar.annotations.extend(_annotation_strings(ref, _CONSUMED - {"tableonly", "defaultonly"}))
        da = t.default_action
        if da is not None and da.decl is not None and id(da.decl) not in listed:
            # A table without default_action gets NoAction as its default;
            # p4c lists it as a @defaultonly action of the table.
            ar = m.action_refs.add()
            ar.id = action_id[o.extra["action_keys"][id(da.decl)]]
            ar.scope = p4i.ActionRef.DEFAULT_ONLY
            ar.annotations.append("@defaultonly")
        if t.default_action is not None and t.default_action_const and t.default_action.decl is not None:
            m.const_default_action_id = action_id[o.extra["action_keys"][id(t.default_action.decl)]]
        if t.implementation is not None and id(t.implementation) in inst_id:
            m.implementation_id = inst_id[id(t.implementation)]
        for res in (t.counters, t.meters):
            if res is not None and id(res) in inst_id:
                m.direct_resource_ids.append(inst_id[id(res)])
                direct_owner[id(res)] = o.id
        m.size = t.size if t.size is not None else DEFAULT_TABLE_SIZE
        if t.prop("support_timeout") is not None and _truthy(t.prop("support_timeout")):
            m.idle_timeout_behavior = p4i.Table.NOTIFY_CONTROL
        if t.entries_const:
            m.is_const_table = True
        ep = t.prop("entries")
        if t.entries or (ep is not None and isinstance(ep.value, list) and ep.value):
            m.has_initial_entries = True

    # Externs.
    for o in sorted(c.externs, key=lambda o: o.name):
        _build_extern(info, o, direct_owner, type_info)

    # Value sets.
    for o in sorted(c.value_sets, key=lambda o: o.name):
        vs: ast.ValueSetDecl = o.decl
        m = info.value_sets.add()
        _preamble(m, o, o.name.split(".")[-1])
        m.size = _const_int(vs.size) or 0
        elem = vs.elem.resolved
        fields = elem.fields if isinstance(elem, ty.StructLikeType) else [ty.FieldInfo("", elem)]  # type: ignore[arg-type]
        for j, f in enumerate(fields, 1):
            mf = m.match.add()
            mf.id = j
            mf.name = f.name
            mf.bitwidth = bit_width(f.type)
            mf.match_type = p4i.MatchField.EXACT

    # Controller packet metadata.
    for o in sorted(c.controller_headers, key=lambda o: o.name):
        h: ast.StructDecl = o.decl
        m = info.controller_packet_metadata.add()
        m.preamble.id = o.id
        m.preamble.name = o.name
        m.preamble.alias = o.name
        m.preamble.annotations.append(f'@controller_header("{o.name}")')
        for j, f in enumerate(h.fields, 1):
            md = m.metadata.add()
            md.id = j
            md.name = f.name
            md.bitwidth = bit_width(f.typeref.resolved)
            md.annotations.extend(_annotation_strings(f))
            _maybe_type_name(md, f.typeref.resolved)

    # Digests.
    for o in sorted(c.digests.values(), key=lambda o: o.name):
        m = info.digests.add()
        m.preamble.id = o.id
        m.preamble.name = o.name
        m.preamble.alias = o.name
        _type_spec(m.type_spec, o.extra["type"], type_info)
    return info


def _truthy(prop: ast.TableProperty) -> bool:
    v = prop.value
    return isinstance(v, ast.BoolLit) and v.value


def _maybe_type_name(msg: Any, t: Optional[ty.P4Type]) -> None:
    if isinstance(t, ty.NewType):
        msg.type_name.name = t.name


_COUNTER_UNIT = {"packets": p4i.CounterSpec.PACKETS, "bytes": p4i.CounterSpec.BYTES,
                 "packets_and_bytes": p4i.CounterSpec.BOTH}
_METER_UNIT = {"packets": p4i.MeterSpec.PACKETS, "bytes": p4i.MeterSpec.BYTES}


def _arg(inst: ast.Instantiation, i: int) -> Optional[ast.Expression]:
    return inst.args[i].value if i < len(inst.args) else None


def _build_extern(info: p4i.P4Info, o: _Obj, direct_owner: dict[int, int], type_info: Any) -> None:
    inst: ast.Instantiation = o.decl
    kind = o.extra["kind"]
    alias = o.name.split(".")[-1]
    if kind == "counter":
        m = info.counters.add()
        _preamble(m, o, alias)
        m.spec.unit = _COUNTER_UNIT.get(_enum_member(_arg(inst, 1)) or "", p4i.CounterSpec.UNSPECIFIED)  # type: ignore[arg-type]
        m.size = _const_int(_arg(inst, 0)) or 0  # type: ignore[arg-type]
    elif kind == "direct_counter":
        m = info.direct_counters.add()
        _preamble(m, o, alias)
        m.spec.unit = _COUNTER_UNIT.get(_enum_member(_arg(inst, 0)) or "", p4i.CounterSpec.UNSPECIFIED)  # type: ignore[arg-type]
        m.direct_table_id = direct_owner.get(id(inst), 0)
    elif kind == "meter":
        m = info.meters.add()
        _preamble(m, o, alias)
        m.spec.unit = _METER_UNIT.get(_enum_member(_arg(inst, 1)) or "", p4i.MeterSpec.UNSPECIFIED)  # type: ignore[arg-type]
        m.size = _const_int(_arg(inst, 0)) or 0  # type: ignore[arg-type]
    elif kind == "direct_meter":
        m = info.direct_meters.add()
        _preamble(m, o, alias)
        m.spec.unit = _METER_UNIT.get(_enum_member(_arg(inst, 0)) or "", p4i.MeterSpec.UNSPECIFIED)  # type: ignore[arg-type]
        m.direct_table_id = direct_owner.get(id(inst), 0)
    elif kind == "register":
        m = info.registers.add()
        _preamble(m, o, alias)
        targs = _type_args(inst)
        if targs:
            _type_spec(m.type_spec, targs[0], type_info)
        m.size = _const_int(_arg(inst, 0)) or 0  # type: ignore[arg-type]
    elif kind in ("action_profile", "action_selector"):
        m = info.action_profiles.add()
        _preamble(m, o, alias)
        m.with_selector = kind == "action_selector"
        size_arg = _arg(inst, 1 if kind == "action_selector" else 0)
        m.size = (_const_int(size_arg) or 0) if size_arg is not None else 0


def _type_spec(spec: Any, t: ty.P4Type, type_info: Any) -> None:
    """Fill a ``P4DataTypeSpec`` for ``t``, registering named types in ``type_info``."""
    if isinstance(t, ty.BitsType):
        if t.signed:
            spec.bitstring.int.bitwidth = t.width
        else:
            spec.bitstring.bit.bitwidth = t.width
    elif isinstance(t, ty.VarbitType):
        spec.bitstring.varbit.max_bitwidth = t.max_width
    elif isinstance(t, ty.BoolType):
        spec.bool.SetInParent()
    elif isinstance(t, ty.ErrorType):
        spec.error.SetInParent()
    elif isinstance(t, ty.NewType):
        spec.new_type.name = t.name
        if t.name not in type_info.new_types:
            _type_spec(type_info.new_types[t.name].original_type, t.base, type_info)
    elif isinstance(t, ty.EnumType):
        if t.underlying is not None:
            spec.serializable_enum.name = t.name
            if t.name not in type_info.serializable_enums:
                e = type_info.serializable_enums[t.name]
                e.underlying_type.bitwidth = t.underlying.width
                for mname in t.members:
                    mem = e.members.add()
                    mem.name = mname
                    v = t.values.get(mname, 0)
                    mem.value = v.to_bytes(max(1, (t.underlying.width + 7) // 8), "big")
        else:
            spec.enum.name = t.name
            if t.name not in type_info.enums:
                e = type_info.enums[t.name]
                for mname in t.members:
                    e.members.add().name = mname
    elif isinstance(t, ty.HeaderType):
        spec.header.name = t.name
        if t.name not in type_info.headers:
            h = type_info.headers[t.name]
            for f in t.fields:
                mem = h.members.add()
                mem.name = f.name
                if isinstance(f.type, ty.BitsType) and f.type.signed:
                    mem.type_spec.int.bitwidth = f.type.width
                else:
                    mem.type_spec.bit.bitwidth = bit_width(f.type)
    elif isinstance(t, ty.HeaderUnionType):
        spec.header_union.name = t.name
    elif isinstance(t, ty.StructType):
        spec.struct.name = t.name
        if t.name not in type_info.structs:
            s = type_info.structs[t.name]
            for f in t.fields:
                mem = s.members.add()
                mem.name = f.name
                _type_spec(mem.type_spec, f.type, type_info)
    elif isinstance(t, ty.TupleType):
        for e in t.elems:
            _type_spec(spec.tuple.members.add(), e, type_info)
    elif isinstance(t, ty.StackType):
        if isinstance(t.elem, ty.HeaderType):
            spec.header_stack.header.name = t.elem.name
            spec.header_stack.size = t.size
            _type_spec(p4t.P4DataTypeSpec(), t.elem, type_info)
    else:
        raise P4InfoError(f"type {t} cannot appear in P4Info")


def p4info_text(program: ast.Program) -> str:
    """P4Info as protobuf text (what ``p4c --p4runtime-files x.txtpb`` writes)."""
    return text_format.MessageToString(build_p4info(program))


def write_p4info(program: ast.Program, path: str) -> None:
    """Write P4Info to ``path``: binary protobuf for ``.bin``/``.pb``, JSON for ``.json``, text otherwise."""
    info = build_p4info(program)
    if path.endswith((".bin", ".pb")):
        data = info.SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        return
    if path.endswith(".json"):
        from google.protobuf import json_format

        text = json_format.MessageToJson(info)
    else:
        text = text_format.MessageToString(info)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
