"""Conversions between P4Runtime entities and the interpreter's runtime API.

P4Runtime speaks ids and bytestrings; the runtime API (docs/p4switch-api.md)
speaks fully qualified names and integers.  These functions translate in both
directions and apply the spec's validity rules on the way in (one canonical
match key per entry, don't-care fields omitted, widths respected), so the
device layer only orchestrates.
"""

from __future__ import annotations

from typing import Any, Callable

from finsy.proto import p4i, p4r

from .errors import Code, P4RTError
from .schema import Schema, TableInfo, decode_uint, encode_uint

MatchKey = tuple[tuple[int, str, int, int], ...]
"""A table entry's match, normalised: sorted (field_id, kind, a, b)."""


def copy_msg(msg: Any) -> Any:
    out = type(msg)()
    out.CopyFrom(msg)
    return out


def strip_entry(entry: p4r.TableEntry) -> p4r.TableEntry:
    """The entry as Read returns it: canonical bytestrings, no counter/meter data."""
    out = copy_msg(entry)
    out.ClearField("counter_data")
    out.ClearField("meter_config")
    out.ClearField("meter_counter_data")
    for fm in out.match:
        which = fm.WhichOneof("field_match_type")
        sub = getattr(fm, which)
        for attr in ("value", "mask", "low", "high"):
            if hasattr(sub, attr):
                setattr(sub, attr, encode_uint(int.from_bytes(getattr(sub, attr), "big")))
    if out.action.WhichOneof("type") == "action":
        for prm in out.action.action.params:
            prm.value = encode_uint(int.from_bytes(prm.value, "big"))
    return out


def normalise_match(mf: p4i.MatchField, fm: p4r.FieldMatch) -> tuple[int, str, int, int]:
    which = fm.WhichOneof("field_match_type")
    w = mf.bitwidth
    full = (1 << w) - 1
    name = mf.name
    expected = {p4i.MatchField.EXACT: "exact", p4i.MatchField.LPM: "lpm", p4i.MatchField.TERNARY: "ternary",
                p4i.MatchField.RANGE: "range", p4i.MatchField.OPTIONAL: "optional"}.get(mf.match_type, "other")
    if which != expected:
        raise P4RTError(Code.INVALID_ARGUMENT, f"match field {name} is {expected}, got {which}")
    if which == "exact":
        return (mf.id, which, decode_uint(fm.exact.value, w, name), 0)
    if which == "lpm":
        v = decode_uint(fm.lpm.value, w, name)
        plen = fm.lpm.prefix_len
        if plen <= 0 or plen > w:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: prefix length {plen} outside 1..{w} (omit the field for /0)")
        if v & (full >> plen):
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: bits beyond the /{plen} prefix must be zero")
        return (mf.id, which, v, plen)
    if which == "ternary":
        v = decode_uint(fm.ternary.value, w, name)
        m = decode_uint(fm.ternary.mask, w, name)
        if m == 0:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: an all-zero mask is a don't care; omit the field")
        if v & ~m:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: value has bits set outside the mask")
        return (mf.id, which, v, m)
    if which == "range":
        lo = decode_uint(fm.range.low, w, name)
        hi = decode_uint(fm.range.high, w, name)
        if lo > hi:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: range low {lo} > high {hi}")
        if lo == 0 and hi == full:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{name}: a full range is a don't care; omit the field")
        return (mf.id, which, lo, hi)
    if which == "optional":
        return (mf.id, which, decode_uint(fm.optional.value, w, name), 0)
    raise P4RTError(Code.UNIMPLEMENTED, f"{name}: match kind {mf.other_match_type or which} is not supported")


def runtime_keys(ti: TableInfo, key: MatchKey) -> dict[str, Any]:
    from ..runtime import tables as rt

    out: dict[str, Any] = {}
    for fid, kind, a, b in key:
        name = ti.fields[fid].name
        if kind == "exact":
            out[name] = rt.Exact(a)
        elif kind == "lpm":
            out[name] = rt.Lpm(a, b)
        elif kind == "ternary":
            out[name] = rt.Ternary(a, b)
        elif kind == "range":
            out[name] = rt.Range(a, b)
        else:
            out[name] = rt.Optional_(a)
    return out


def entry_from_runtime(schema: Schema, ti: TableInfo, e: Any) -> p4r.TableEntry | None:
    """A runtime (const) entry as a P4Runtime TableEntry."""
    te = p4r.TableEntry(table_id=ti.msg.preamble.id, is_const=True)
    fields = [ti.fields[k] for k in sorted(ti.fields)]
    for mf, m in zip(fields, e.keys):
        full = (1 << mf.bitwidth) - 1
        fm = p4r.FieldMatch(field_id=mf.id)
        mt = mf.match_type
        if mt == p4i.MatchField.EXACT:
            fm.exact.value = encode_uint(getattr(m, "value", m))
        elif mt == p4i.MatchField.LPM:
            if m.prefix_len == 0:
                continue
            fm.lpm.value, fm.lpm.prefix_len = encode_uint(m.value), m.prefix_len
        elif mt == p4i.MatchField.TERNARY:
            if m.mask == 0:
                continue
            fm.ternary.value, fm.ternary.mask = encode_uint(m.value & m.mask), encode_uint(m.mask)
        elif mt == p4i.MatchField.RANGE:
            if m.low == 0 and m.high == full:
                continue
            fm.range.low, fm.range.high = encode_uint(m.low), encode_uint(m.high)
        elif mt == p4i.MatchField.OPTIONAL:
            if m.value is None:
                continue
            fm.optional.value = encode_uint(m.value)
        else:
            return None
        te.match.append(fm)
    if ti.needs_priority:
        te.priority = e.priority or 0
    a = next((a for a in schema.actions.values() if a.preamble.name == e.action), None)
    if a is None:
        return None
    te.action.action.action_id = a.preamble.id
    values = param_values(a, e.params)
    for prm in a.params:
        te.action.action.params.add(param_id=prm.id, value=encode_uint(values.get(prm.name, 0)))
    return te


def param_values(a: p4i.Action, params: Any) -> dict[str, int]:
    if isinstance(params, dict):
        return {k: int(v) for k, v in params.items()}
    return {prm.name: int(v) for prm, v in zip(a.params, params or ())}


def translate_entry(entry: p4r.TableEntry, old: Schema, new: Schema, nti: TableInfo) -> p4r.TableEntry:
    """``entry`` re-expressed with ``new``'s ids (matched by names); raises if impossible."""
    oti = old.tables[entry.table_id]
    out = copy_msg(entry)
    out.table_id = nti.msg.preamble.id
    new_fields = {f.name: f.id for f in nti.fields.values()}
    for fm in out.match:
        name = oti.fields[fm.field_id].name
        if name not in new_fields:
            raise P4RTError(Code.INVALID_ARGUMENT, f"cannot reconcile: {oti.name} lost match field {name}")
        fm.field_id = new_fields[name]
    if out.action.WhichOneof("type") == "action":
        oa = old.actions[entry.action.action.action_id]
        na = next((a for a in new.actions.values() if a.preamble.name == oa.preamble.name), None)
        if na is None:
            raise P4RTError(Code.INVALID_ARGUMENT, f"cannot reconcile: action {oa.preamble.name} is gone")
        out.action.action.action_id = na.preamble.id
        pnames = {p.id: p.name for p in oa.params}
        nparams = {p.name: p.id for p in na.params}
        for prm in out.action.action.params:
            prm.param_id = nparams.get(pnames.get(prm.param_id, ""), 0)
    return out


def check_meter_config(cfg: p4r.MeterConfig) -> None:
    if cfg.cir < 0 or cfg.pir < 0 or cfg.cburst < 0 or cfg.pburst < 0:
        raise P4RTError(Code.INVALID_ARGUMENT, "meter rates and bursts must be >= 0")
    if cfg.eburst:
        raise P4RTError(Code.INVALID_ARGUMENT, "eburst is not used by two-rate three-colour meters")
    if cfg.pir < cfg.cir:
        raise P4RTError(Code.INVALID_ARGUMENT, f"peak rate {cfg.pir} is below committed rate {cfg.cir}")


def meter_rates(cfg: p4r.MeterConfig) -> list[tuple[float, int]]:
    return [(float(cfg.cir), int(cfg.cburst)), (float(cfg.pir), int(cfg.pburst))]


def register_width(r: p4i.Register) -> int:
    ts = r.type_spec
    if ts.WhichOneof("type_spec") == "bitstring":
        bs = ts.bitstring
        kind = bs.WhichOneof("type_spec")
        if kind == "bit":
            return bs.bit.bitwidth
        if kind == "int":
            return bs.int.bitwidth
    raise P4RTError(Code.UNIMPLEMENTED, f"register {r.preamble.name}: only bit<W>/int<W> cells are supported")


def digest_data(schema: Schema, d: p4i.Digest, fields: dict[str, int]) -> Any:
    from finsy.proto import p4d

    data = p4d.P4Data()
    ts = d.type_spec
    if ts.WhichOneof("type_spec") == "struct":
        st = schema.p4info.type_info.structs.get(ts.struct.name)
        members = [m.name for m in st.members] if st is not None else list(fields)
        for name in members:
            data.struct.members.add().bitstring = encode_uint(int(fields.get(name, 0)))
    else:
        data.bitstring = encode_uint(int(next(iter(fields.values()), 0)))
    return data


def check_against(schema: Schema, generated: p4i.P4Info | None) -> None:
    """A client-supplied P4Info must describe the program: same names and widths.

    Ids may differ (a P4Info from p4c or an older generator works); what the
    runtime is called with -- names and bit widths -- must match.
    """
    if generated is None:
        return

    def bad(what: str) -> P4RTError:
        return P4RTError(Code.INVALID_ARGUMENT, f"P4Info does not match the program: {what}")

    ours_t = {t.preamble.name: t for t in generated.tables}
    ours_a = {a.preamble.name: a for a in generated.actions}
    for ti in schema.tables.values():
        t = ours_t.get(ti.name)
        if t is None:
            raise bad(f"the program has no table {ti.name}")
        widths = {f.name: (f.bitwidth, f.match_type) for f in t.match_fields}
        for f in ti.fields.values():
            if widths.get(f.name) != (f.bitwidth, f.match_type):
                raise bad(f"{ti.name} key {f.name} ({f.bitwidth} bits) differs from the program's {widths.get(f.name)}")
    for a in schema.actions.values():
        ours = ours_a.get(a.preamble.name)
        if ours is None:
            raise bad(f"the program has no action {a.preamble.name}")
        widths = {p.name: p.bitwidth for p in ours.params}
        for prm in a.params:
            if widths.get(prm.name) != prm.bitwidth:
                raise bad(f"action {a.preamble.name} parameter {prm.name} is {widths.get(prm.name)} bits in the program")
    for kind in ("counters", "meters", "registers", "direct_counters", "direct_meters"):
        names = {x.preamble.name for x in getattr(generated, kind)}
        for x in getattr(schema.p4info, kind):
            if x.preamble.name not in names:
                raise bad(f"the program has no {kind[:-1].replace('_', ' ')} {x.preamble.name}")


def call_runtime(fn: Callable[..., Any], *args: Any) -> Any:
    """Call the runtime API, translating its exceptions to P4Runtime codes."""
    try:
        return fn(*args)
    except P4RTError:
        raise
    except KeyError as e:
        raise P4RTError(Code.NOT_FOUND, f"{e.args[0] if e.args else e}") from None
    except (ValueError, OverflowError) as e:
        raise P4RTError(Code.OUT_OF_RANGE, str(e)) from None
    except Exception as e:  # the runtime's TableError, PreError and the like
        name = type(e).__name__
        msg = str(e)
        low = msg.lower()
        if "full" in low:
            raise P4RTError(Code.RESOURCE_EXHAUSTED, msg) from None
        if "exist" in low or "duplicate" in low:
            raise P4RTError(Code.ALREADY_EXISTS, msg) from None
        if "const" in low:
            raise P4RTError(Code.PERMISSION_DENIED, msg) from None
        if name in ("TableError", "PreError"):
            raise P4RTError(Code.INVALID_ARGUMENT, msg) from None
        raise P4RTError(Code.INTERNAL, f"{name}: {msg}") from None
