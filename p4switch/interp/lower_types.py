"""Header, header-union and struct types lowered to Python classes.

Each P4 type becomes a class with ``__slots__``, ``copy``/``eq``/``mk`` and,
for headers, ``pack``/``unpack`` (fixed layout) or ``extract_var`` (varbit)
so the parser and deparser move whole headers with one integer operation.
"""

from __future__ import annotations

from typing import Any

from ..frontend import types as T
from .irutil import UnsupportedError, _Flat, _Leaf, is_aggregate, is_signed, st, width


class TypeLowering:
    """Mixin of ``codegen.Lowering``."""

    # attributes provided by Lowering
    g: dict
    out: list

    def cls(self, t: Any) -> str:
        t = st(t)
        key = id(t)
        if key in self.classes:
            return self.classes[key]
        if not isinstance(t, T.StructLikeType):
            raise UnsupportedError(f"no class for type {t}")
        name = self.fresh("C_" + "".join(c if c.isalnum() else "_" for c in t.name) + "_")
        self.classes[key] = name
        is_hdr = isinstance(t, T.HeaderType)
        is_union = isinstance(t, T.HeaderUnionType)
        slots = [f"f_{f.name}" for f in t.fields]
        for f in t.fields:
            if isinstance(st(f.type), T.VarbitType):
                slots.append(f"w_{f.name}")
        if is_hdr:
            slots.append("_v")
        # Headers with scalar fields only are created lazily: an invalid
        # header holds no field values until one is written (or it becomes
        # valid), and ``__getattr__`` answers unset fields with their zero
        # value.  Creating and copying the many invalid headers of a packet
        # then costs one attribute each.
        lazy = is_hdr and not any(is_aggregate(f.type) for f in t.fields)
        lines = [f"class {name}:", f"    __slots__ = {tuple(slots)!r}", "    def __init__(self):"]
        if lazy:
            lines.append("        self._v = False")
            defaults = {f"f_{f.name}": eval(self.default(f.type), {}) for f in t.fields}
            defaults.update({f"w_{f.name}": 0 for f in t.fields if isinstance(st(f.type), T.VarbitType)})
            lines.append(f"    _ZERO = {defaults!r}")
            lines.append("    def __getattr__(self, name):")
            lines.append("        try:")
            lines.append("            return self._ZERO[name]")
            lines.append("        except KeyError:")
            lines.append("            raise AttributeError(name) from None")
        else:
            for f in t.fields:
                ft = st(f.type)
                if isinstance(ft, T.HeaderType) and not any(is_aggregate(x.type) for x in ft.fields):
                    # a lazily created header, made inline (no __init__ call per header)
                    hc = self.cls(ft)
                    lines.append(f"        h = {hc}.__new__({hc}); h._v = False; self.f_{f.name} = h")
                    continue
                lines.append(f"        self.f_{f.name} = {self.default(f.type)}")
                if isinstance(st(f.type), T.VarbitType):
                    lines.append(f"        self.w_{f.name} = 0")
            if is_hdr:
                lines.append("        self._v = False")
            if not t.fields and not is_hdr:
                lines.append("        pass")
        # copy
        lines.append("    def copy(self):")
        lines.append(f"        n = {name}.__new__({name})")
        if lazy:
            # the fields of an invalid header are undefined (P4_16 8.17): a
            # copy of one is a fresh invalid header
            lines.append("        if not self._v:")
            lines.append("            n._v = False")
            lines.append("            return n")
        for f in t.fields:
            ft = st(f.type)
            if (isinstance(ft, T.HeaderType) and not is_hdr
                    and not any(is_aggregate(x.type) for x in ft.fields)):
                # inline the invalid case of a lazily created header (no call)
                hc = self.cls(ft)
                lines.append(f"        h = self.f_{f.name}")
                lines.append(f"        if h._v: n.f_{f.name} = h.copy()")
                lines.append(f"        else: m = {hc}.__new__({hc}); m._v = False; n.f_{f.name} = m")
                continue
            c = ".copy()" if is_aggregate(f.type) else ""
            lines.append(f"        n.f_{f.name} = self.f_{f.name}{c}")
            if isinstance(ft, T.VarbitType):
                lines.append(f"        n.w_{f.name} = self.w_{f.name}")
        if is_hdr:
            lines.append("        n._v = self._v")
        lines.append("        return n")
        lines.append("    def blank(self):")
        lines.append(f"        return {name}()")
        if is_hdr:
            lines.append("    def reset(self):")
            for f in t.fields:
                lines.append(f"        self.f_{f.name} = {self.default(f.type)}")
                if isinstance(st(f.type), T.VarbitType):
                    lines.append(f"        self.w_{f.name} = 0")
            lines.append("        self._v = True")
        # eq
        lines.append("    def eq(self, o):")
        if is_hdr:
            lines.append("        if self._v != o._v: return False")
            lines.append("        if not self._v: return True")
        if is_union:
            lines.append("        if self.valid() != o.valid(): return False")
        conds = []
        for f in t.fields:
            if is_aggregate(f.type):
                conds.append(f"self.f_{f.name}.eq(o.f_{f.name})")
            else:
                conds.append(f"self.f_{f.name} == o.f_{f.name}")
        lines.append("        return " + (" and ".join(conds) if conds else "True"))
        if is_union:
            lines.append("    def valid(self):")
            lines.append("        return " + (" or ".join(f"self.f_{f.name}._v" for f in t.fields) or "False"))
        # constructor from values in field order (list / struct expressions)
        params = ", ".join(f"a{i}" for i in range(len(t.fields)))
        lines.append("    @staticmethod")
        lines.append(f"    def mk({params}):")
        lines.append(f"        n = {name}.__new__({name})")
        for i, f in enumerate(t.fields):
            lines.append(f"        n.f_{f.name} = a{i}")
            if isinstance(st(f.type), T.VarbitType):
                lines.append(f"        n.w_{f.name} = 0")
        if is_hdr:
            lines.append("        n._v = True")
        lines.append("        return n")
        if is_hdr:
            self._header_codec(t, lines)
        self.out.append("\n".join(lines) + "\n")
        return name

    def _header_codec(self, t: T.HeaderType, lines: list[str]) -> None:
        """pack/unpack for fixed headers, sequential extract for varbit ones."""
        fixed = not any(isinstance(st(f.type), T.VarbitType) for f in t.fields)
        total = sum(width(f.type) for f in t.fields)

        def leaves(fields: list, prefix: str) -> list:
            out = []
            for f in fields:
                ft = st(f.type)
                if isinstance(ft, T.StructType):
                    out.extend(leaves(ft.fields, f"{prefix}f_{f.name}."))
                else:
                    out.append(_Leaf(f"{prefix}f_{f.name}", ft))
            return out

        if fixed:
            t = _Flat(leaves(t.fields, ""))  # type: ignore[assignment]
            lines.append(f"    NBITS = {total}")
            lines.append("    def pack(self):")
            terms = []
            shift = total
            for f in t.fields:
                w = width(f.type)
                shift -= w
                v = f"self.{f.path}"
                if isinstance(st(f.type), T.BoolType):
                    v = f"int({v})"
                elif is_signed(f.type):
                    v = f"({v} & {(1 << w) - 1})"
                terms.append(f"({v} << {shift})" if shift else v)
            lines.append("        return " + (" | ".join(terms) if terms else "0"))
            lines.append("    def unpack(self, v):")
            lines.extend(_unpack_body(t))
            lines.append("        self._v = True")
            # extract = PacketIn.take + unpack in one call: the packet bits are
            # read from the byte slice holding them; each field's mask drops
            # the bits of the slice's first byte before the cursor
            lines.append("    def extract(self, P):")
            lines.append("        pos = P.pos")
            lines.append(f"        end = pos + {total}")
            lines.append("        if end > P.nbits: raise _PErr('PacketTooShort')")
            lines.append("        P.pos = end")
            lines.append("        v = int.from_bytes(P.data[pos >> 3:(end + 7) >> 3], 'big') >> (-end & 7)")
            lines.extend(_unpack_body(t))
            lines.append("        self._v = True")
            lines.append("    def nbits(self):")
            lines.append(f"        return {total}")
        else:
            lines.append("    NBITS = None")
            lines.append("    def extract_var(self, P, vbits):")
            vmax = max(st(f.type).max_width for f in t.fields if isinstance(st(f.type), T.VarbitType))
            fixed_bits = sum(width(f.type) for f in t.fields if not isinstance(st(f.type), T.VarbitType))
            lines.append("        if vbits & 7: raise _PErr('ParserInvalidArgument')")
            lines.append(f"        if vbits > {vmax} or vbits < 0: raise _PErr('HeaderTooShort')")
            lines.append(f"        if P.pos + {fixed_bits} + vbits > P.nbits: raise _PErr('PacketTooShort')")
            for f in t.fields:
                ft = st(f.type)
                if isinstance(ft, T.VarbitType):
                    lines.append(f"        self.f_{f.name} = P.take(vbits)")
                    lines.append(f"        self.w_{f.name} = vbits")
                else:
                    w = width(ft)
                    raw = f"P.take({w})"
                    if isinstance(ft, T.BoolType):
                        raw = f"bool({raw})"
                    elif is_signed(ft):
                        raw = f"_s({raw}, {w})"
                    lines.append(f"        self.f_{f.name} = {raw}")
            lines.append("        self._v = True")
            lines.append("    def nbits(self):")
            lines.append(
                "        return "
                + " + ".join(
                    f"self.w_{f.name}" if isinstance(st(f.type), T.VarbitType) else str(width(f.type))
                    for f in t.fields
                )
            )
            lines.append("    def pack(self):")
            lines.append("        v = 0")
            for f in t.fields:
                ft = st(f.type)
                if isinstance(ft, T.VarbitType):
                    lines.append(f"        v = (v << self.w_{f.name}) | self.f_{f.name}")
                else:
                    w = width(ft)
                    lines.append(f"        v = (v << {w}) | (int(self.f_{f.name}) & {(1 << w) - 1})")
            lines.append("        return v")

    def default(self, t: Any) -> str:
        """Python text for a fresh value of type ``t`` (BMv2 zero-initialises)."""
        t = st(t)
        if isinstance(t, (T.BitsType, T.IntType, T.VarbitType)):
            return "0"
        if isinstance(t, T.BoolType):
            return "False"
        if isinstance(t, T.ErrorType):
            return "'NoError'"
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                return "0"
            return repr(t.members[0]) if t.members else "None"
        if isinstance(t, T.StructLikeType):
            return f"{self.cls(t)}()"
        if isinstance(t, T.StackType):
            c = self.cls(t.elem)
            return f"_Stack([{', '.join([c + '()'] * t.size)}])"
        if isinstance(t, T.TupleType):
            return "(" + "".join(self.default(e) + ", " for e in t.elems) + ")"
        if isinstance(t, T.StringType):
            return "''"
        return "None"


def _unpack_body(flat: Any) -> list[str]:
    """Method-body lines setting each leaf field of a fixed header from the
    integer ``v`` holding its bits (MSB first; bits above the header ignored)."""
    total = sum(width(f.type) for f in flat.fields)
    lines = []
    shift = total
    for f in flat.fields:
        w = width(f.type)
        shift -= w
        raw = f"((v >> {shift}) & {(1 << w) - 1})" if shift else f"(v & {(1 << w) - 1})"
        if isinstance(st(f.type), T.BoolType):
            raw = f"bool({raw})"
        elif is_signed(f.type):
            raw = f"_s({raw}, {w})"
        lines.append(f"        self.{f.path} = {raw}")
    return lines
