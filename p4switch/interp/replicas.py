"""Scans of the generated code that make per-packet objects cheaper.

Replica copies.  Each replica of a multicast packet runs egress on its own
copy of the headers and user metadata, so a write by one replica's egress
is not seen by another.  A deep copy of the whole header struct (every
header of the program, valid or not) is most of the cost of replication.
But egress, computeChecksum and the deparser can only change a member of
the struct that their code names: a member the egress side never mentions
is read by the deparser alone and can be shared by all replicas.  The check
runs on the generated code of the egress and computeChecksum instances
(with the actions, tables and sub-blocks lowered inside them): every use of
the block's struct parameter must be a member access
``E.p_<param>.f_<member>`` or ``a_<param>.f_<member>`` (those members are
copied), the parameter binding, a ``def`` line, or a copy-out tuple.
Anything else (the whole struct passed to a call, aliased, assigned) makes
the copy a full deep copy.

Frames.  Each block instance gets a frame class with ``__slots__`` for the
attributes its code names, and an apply function reads a parameter that
nothing rebinds from its argument instead of the frame.
"""

from __future__ import annotations

import re
from typing import Optional

_COPY_OUT = re.compile(r"^(?:return|_x\.outs =) \((?:(?:E\.p_|a_)\w+, )*\)$")


def touched_members(text: str, pname: str) -> Optional[set[str]]:
    """Members of parameter ``pname`` that ``text`` (generated code) names,
    or None when the parameter escapes as a whole (then nothing may be shared).

    The parameter appears as ``E.p_<pname>`` (through the frame) or, in an
    apply function that reads it from its argument, ``a_<pname>``."""
    q = re.escape(pname)
    use = re.compile(r"(?:\bE\.p_" + q + r"|(?<![\w.])a_" + q + r")\b(\.f_(\w+))?")
    touched: set[str] = set()
    for line in text.splitlines():
        s = line.strip()
        for m in use.finditer(line):
            if m.group(1):
                touched.add(m.group(2))
            elif s == f"E.p_{pname} = a_{pname}" or s.startswith("def ") or _COPY_OUT.match(s):
                continue
            else:
                return None
    return touched


_AUG = r"\s*(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)"


def written_members(text: str, pname: str) -> Optional[set[str]]:
    """Members of parameter ``pname`` that ``text`` may assign (also
    augmented, or as one target of several), or None when the parameter
    escapes as a whole (``touched_members``).  Only direct assignments
    ``<param>.f_<member> = ...`` can change a scalar member."""
    if touched_members(text, pname) is None:
        return None
    q = re.escape(pname)
    ref = r"(?:\bE\.p_" + q + r"|(?<![\w.])a_" + q + r")\.f_(\w+)"
    out = set(re.findall(ref + _AUG, text))
    for line in text.splitlines():
        if " = " in line:
            head = line.split(" = ", 1)[0]
            if "," in head:
                out.update(re.findall(ref, head))
    return out


def replica_copy_source(fname: str, cls: str, members: list[tuple[str, bool, bool]],
                        touched: Optional[set[str]], shared: bool = False) -> str:
    """Python text of ``fname(s)``: a copy of struct ``s`` (class ``cls``) for
    one replica.  ``members``: (name, is_aggregate, is_varbit) in field order.
    Aggregate members in ``touched`` are copied, the others shared; scalars
    are immutable and always shared.  ``touched`` None: the full copy.
    ``shared``: nothing in the struct is ever changed (no aggregate member
    named, no scalar member assigned), so every replica may use ``s`` itself."""
    if touched is None:
        return f"def {fname}(s):\n    return s.copy()\n"
    if shared:
        return f"def {fname}(s):\n    return s\n"
    lines = [f"def {fname}(s):", f"    n = {cls}.__new__({cls})"]
    for name, agg, varbit in members:
        copy = ".copy()" if agg and name in touched else ""
        lines.append(f"    n.f_{name} = s.f_{name}{copy}")
        if varbit:
            lines.append(f"    n.w_{name} = s.w_{name}")
    lines.append("    return n")
    return "\n".join(lines) + "\n"


_FRAME_ATTR = re.compile(r"\bE\.(\w+)")


def frame_class(name: str, text: str) -> str:
    """Python text of the frame class of one block instance: ``__slots__``
    for every ``E.<attr>`` its generated code (``text``) names, so creating
    the frame and reaching parameters and locals skips the instance dict.
    ``__dict__`` stays as a fallback, so a name the scan missed still works."""
    names = sorted(set(_FRAME_ATTR.findall(text)))
    return f"class {name}(_Frame):\n    __slots__ = {tuple(names + ['__dict__'])!r}\n"


_REBIND = re.compile(r"\bE\.p_(\w+)\s*(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)(.*)$", re.M)
_FRAME_PARAM = re.compile(r"\bE\.p_(\w+)")


def rebound_params(text: str) -> set[str]:
    """Names ``x`` whose frame attribute ``E.p_x`` generated code ``text`` may
    rebind after its binding line ``E.p_x = a_x``: an assignment to it, also
    augmented or as one target of several (one pass over the text)."""
    out: set[str] = set()
    for m in _REBIND.finditer(text):
        if m.group(2).strip() != f"a_{m.group(1)}":
            out.add(m.group(1))
    for line in text.splitlines():
        # several targets (``a, E.p_x = ...``): the lowering emits none; a
        # head with a comma counts all its frame parameters as rebound
        if "E.p_" in line and " = " in line:
            head = line.split(" = ", 1)[0]
            if "," in head and not head.lstrip().startswith(("_x.outs", "return")):
                out.update(_FRAME_PARAM.findall(head))
    return out


def rebound(text: str, pname: str) -> bool:
    """Whether ``text`` may rebind ``E.p_<pname>`` (see ``rebound_params``)."""
    return pname in rebound_params(text)


#: packet-context attributes whose value is the same for every replica of a
#: packet: the length, time and payload, and log_msg's output
PLAIN_CONTEXT = frozenset({"length", "now_us", "payload", "log", "log_on", "fmt"})
_PK_ATTR = re.compile(r"\b_pk\.(\w+)")
_DEF = re.compile(r"^def (\w+)\(", re.M)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def context_attrs(text: str, source: str) -> set[str]:
    """Packet-context attributes (``_pk.<attr>``) that ``text`` (one block's
    generated code) or any top-level function it calls, directly or not,
    names.  A top-level action or function is generated where it is first
    used, which may be another block's code: ``source`` (the whole program)
    supplies their text."""
    defs: dict[str, str] = {}
    starts = [(m.start(), m.group(1)) for m in _DEF.finditer(source)]
    for (a, name), (b, _) in zip(starts, starts[1:] + [(len(source), "")]):
        defs[name] = source[a:b]
    seen: set[str] = set()
    todo = [text]
    attrs: set[str] = set()
    while todo:
        t = todo.pop()
        attrs.update(_PK_ATTR.findall(t))
        for name in set(_NAME.findall(t)) & defs.keys() - seen:
            seen.add(name)
            todo.append(defs[name])
    return attrs
