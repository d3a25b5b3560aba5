"""One lowered program for every switch that runs it; per-switch mutable state.

Lowering ``mcc.p4`` costs about 90 ms of CPU, and a simulation builds
thousands of switch nodes from one program (3,413 nodes for 10^4
receivers).  Lowering is deterministic, so every node would generate the
same text, the same classes and the same functions.  Here the program is
lowered once (the *template*); a node gets:

- the template's classes and code objects, shared (immutable);
- its own globals dictionary, with its own function objects built from the
  shared code objects over those globals (``types.FunctionType``: no
  compile, no ``exec``);
- its own copy of every mutable object the generated code reaches through
  its globals: tables, registers, counters, meters, value sets, the packet
  context, random generators (a deep copy of the template's freshly built,
  never-used state, so identical to a fresh lowering's).  The template
  pickles that state once, with every class, function and module in it
  kept as a reference (``deepcopy`` shares those too); each switch
  unpickles its copy, about ten times faster than ``copy.deepcopy``, which
  stays the fallback for state that does not pickle.

Sharing classes is only sound when no class method reaches per-switch
state through its globals; :func:`instance` checks that once per template
and otherwise lowers the program again for each switch.
"""

from __future__ import annotations

import copy
import io
import pickle
import types
from typing import Any, Optional

from .codegen import Lowering

#: kinds of globals that are immutable or shared on purpose
_SHARED_KINDS = (type, types.ModuleType, types.BuiltinFunctionType, int, float, str, bytes, bool,
                 type(None), frozenset)


class _Template:
    """A lowered program kept for the switches that share it."""

    def __init__(self, program: Any, seed: int) -> None:
        self.program = program
        self.low = Lowering(program, seed, share_code=True)
        built = self.low.build()
        g = self.low.g
        #: role (parser, ingress, new_H, ...) -> global name of its function
        self.roles = {role: (fn.__name__ if fn is not None else None) for role, fn in built.items()}
        self.own_fns = {k for k, v in g.items() if isinstance(v, types.FunctionType) and v.__globals__ is g}
        self.stateful = {k for k, v in g.items()
                         if not k.startswith("__") and k not in self.own_fns and not isinstance(v, _SHARED_KINDS)}
        self.shareable = not self._classes_reach(self.stateful)
        self.refs: list[Any] = []
        self.blob: Optional[bytes] = self._pickle_state() if self.shareable else None

    def state(self) -> tuple:
        """What each switch gets its own copy of (``instance`` unpacks it)."""
        tl, g = self.low, self.low.g
        return ({k: g[k] for k in self.stateful}, tl.tables, tl.registers, tl.counters, tl.meters,
                tl.ctx, tl.value_sets, tl.action_specs)

    def _pickle_state(self) -> Optional[bytes]:
        """The state pickled with shared objects as references, or None when
        it does not pickle (then each switch deep-copies it)."""
        tl, g = self.low, self.low.g
        refs, ix = self.refs, {}
        own = {id(g[k]): k for k in self.own_fns}

        def persistent_id(obj: Any) -> Any:
            if obj is tl:
                return ("low", None)
            if obj is g:
                return ("g", None)
            if isinstance(obj, _REF_KINDS):
                name = own.get(id(obj))
                if name is not None:
                    return ("fn", name)
                k = ix.get(id(obj))
                if k is None:
                    k = ix[id(obj)] = len(refs)
                    refs.append(obj)
                return ("ref", k)
            return None

        buf = io.BytesIO()
        p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        p.persistent_id = persistent_id  # type: ignore[method-assign]
        try:
            p.dump(self.state())
        except Exception:  # noqa: BLE001 - anything unpicklable: deepcopy per switch instead
            return None
        return buf.getvalue()

    def _classes_reach(self, names: set[str]) -> bool:
        """Whether a generated class's method names one of ``names`` (per-switch state)."""
        g = self.low.g

        def code_names(code: types.CodeType) -> set[str]:
            out = set(code.co_names)
            for c in code.co_consts:
                if isinstance(c, types.CodeType):
                    out |= code_names(c)
            return out

        for v in g.values():
            if not isinstance(v, type):
                continue
            for attr in vars(v).values():
                fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
                if isinstance(fn, types.FunctionType) and fn.__globals__ is g and code_names(fn.__code__) & names:
                    return True
        return False


#: what a switch shares with the template (``deepcopy`` keeps these as they are)
_REF_KINDS = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType, types.CodeType,
              property)


class _Unpickler(pickle.Unpickler):
    """One switch's copy of a template's pickled state."""

    def __init__(self, blob: bytes, refs: list[Any], low: Any, g: dict[str, Any]) -> None:
        super().__init__(io.BytesIO(blob))
        self._refs, self._low, self._g = refs, low, g

    def persistent_load(self, pid: Any) -> Any:
        kind, x = pid
        if kind == "ref":
            return self._refs[x]
        if kind == "fn":
            return self._g[x]
        return self._low if kind == "low" else self._g


_TEMPLATES: dict[tuple[int, int], _Template] = {}
_TEMPLATES_MAX = 4


def _template(program: Any, seed: int) -> _Template:
    key = (id(program), seed)
    t = _TEMPLATES.get(key)
    if t is None or t.program is not program:
        if len(_TEMPLATES) >= _TEMPLATES_MAX:
            _TEMPLATES.pop(next(iter(_TEMPLATES)))
        t = _TEMPLATES[key] = _Template(program, seed)
    return t


def instance(program: Any, seed: int = 0) -> tuple[Lowering, dict[str, Any]]:
    """A lowering of ``program`` for one switch, and its entry points (as
    ``Lowering.build`` returns them), sharing code and classes with every
    other switch built from the same program object and seed."""
    t = _template(program, seed)
    if not t.shareable:
        low = Lowering(program, seed, share_code=True)
        return low, low.build()
    tl = t.low
    g = tl.g
    new = copy.copy(tl)  # shares the immutable parts (source, field lists, names)
    ng: dict[str, Any] = {}
    memo: dict[int, Any] = {id(tl): new, id(g): ng}
    for k in t.own_fns:
        f = g[k]
        nf = types.FunctionType(f.__code__, ng, f.__name__, f.__defaults__, f.__closure__)
        nf.__qualname__ = f.__qualname__
        if f.__kwdefaults__:
            nf.__kwdefaults__ = dict(f.__kwdefaults__)
        memo[id(f)] = ng[k] = nf
    if t.blob is not None:
        state = _Unpickler(t.blob, t.refs, new, ng).load()
    else:
        hash_rt = g.get("_hash")
        if isinstance(hash_rt, types.MethodType) and hash_rt.__self__ is tl:
            memo[id(hash_rt)] = types.MethodType(hash_rt.__func__, new)
        state = copy.deepcopy(t.state(), memo)
    own, new.tables, new.registers, new.counters, new.meters, new.ctx, new.value_sets, new.action_specs = state
    for k, v in g.items():
        ng[k] = own[k] if k in own else ng.get(k, v)
    new.g = ng
    built: dict[str, Optional[Any]] = {role: (ng[name] if name is not None else None)
                                       for role, name in t.roles.items()}
    return new, built
