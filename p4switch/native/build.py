"""Compile a program's C module once and load it (ctypes).

The shared object is cached on disk under the hash of its C text (which
encodes the program and this emitter), the compiler and its flags, in ``$P4MCC_NATIVE_CACHE`` or
``~/.cache/p4mcc/native``; one process loads it once per program and every
switch node shares it (each node has its own state from ``sw_new``).  It
also holds the CPython entry point of ``c_python.py`` when Python's headers
are installed, loaded as an extension module beside the ctypes library.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from . import c_python
from .cgen import CProgram

CFLAGS = ("-O2", "-shared", "-fPIC", "-w")
_loaded: dict[int, tuple[Any, "Module"]] = {}


class BuildError(Exception):
    """No C compiler, or it refused the module."""


class Module:
    """A loaded native pipeline: the library and the program's layout."""

    def __init__(self, lib: ctypes.CDLL, gen: CProgram, path: Path, py: Any = None) -> None:
        self.lib, self.gen, self.path = lib, gen, path
        #: ``c_python``'s ``process`` (None: the module was built without it)
        self.py_process = getattr(py, "process", None)
        u64, i64, vp = ctypes.c_uint64, ctypes.c_int64, ctypes.c_void_p
        P64 = ctypes.POINTER(u64)
        lib.sw_new.restype = vp
        lib.sw_free.argtypes = [vp]
        lib.sw_reg.restype = vp
        lib.sw_reg.argtypes = [vp, ctypes.c_int]
        lib.sw_ctr.restype = P64
        lib.sw_ctr.argtypes = [vp, ctypes.c_int, ctypes.c_int]
        self.METER_CB = ctypes.CFUNCTYPE(u64, ctypes.c_int, u64, u64, u64)
        lib.sw_set_meter_cb.argtypes = [vp, self.METER_CB]
        self.HASH_CB = ctypes.CFUNCTYPE(u64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint8), ctypes.c_int, u64, u64)
        lib.sw_set_hash_cb.argtypes = [vp, self.HASH_CB]
        self.LOG_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(u64))
        lib.sw_set_log.argtypes = [vp, ctypes.c_int, self.LOG_CB]
        lib.sw_payload_off.restype = i64
        lib.sw_payload_off.argtypes = [vp]
        lib.sw_out.restype = u64
        lib.sw_out.argtypes = [vp, ctypes.c_int]
        lib.sw_ndig.argtypes = [vp]
        lib.sw_dig.argtypes = [vp, ctypes.c_int, P64]
        lib.tbl_clear.argtypes = [vp, ctypes.c_int]
        lib.tbl_done.argtypes = [vp, ctypes.c_int]
        lib.tbl_default.argtypes = [vp, ctypes.c_int, ctypes.c_int, ctypes.c_int, P64, ctypes.c_int]
        lib.tbl_add.argtypes = [vp, ctypes.c_int, ctypes.c_int, ctypes.c_int, P64, P64, P64, P64, ctypes.c_int]
        lib.tbl_load.argtypes = [vp, ctypes.c_int, ctypes.c_int, P64, P64, P64, P64, P64, ctypes.c_int]
        lib.tbl_counters.argtypes = [vp, ctypes.c_int, P64]
        lib.sw_ingress.argtypes = [vp, ctypes.c_char_p, i64, u64, u64]
        lib.sw_egress.argtypes = [vp, P64, P64, ctypes.c_int, ctypes.c_int, ctypes.c_int, u64, u64,
                                  ctypes.c_int, ctypes.c_int, P64, ctypes.c_char_p, ctypes.POINTER(i64), P64]
        lib.sw_pre_load.argtypes = [vp, ctypes.c_int, P64, P64, P64, P64]
        self.outmax = lib.sw_outmax()


def _extension(so: Path) -> Any:
    """``so`` loaded as the Python extension module ``c_python`` makes (None if it will not load)."""
    try:
        loader = importlib.machinery.ExtensionFileLoader(c_python.MODULE_NAME, str(so))
        spec = importlib.util.spec_from_file_location(c_python.MODULE_NAME, str(so), loader=loader)
        if spec is None:
            return None
        ext = importlib.util.module_from_spec(spec)
        loader.exec_module(ext)
        return ext
    except (ImportError, OSError):
        return None


def cache_dir() -> Path:
    d = os.environ.get("P4MCC_NATIVE_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "p4mcc" / "native"


def compile_source(src: str, extra: str = "", flags: tuple[str, ...] = ()) -> Path:
    """The shared object for ``src`` (and the second translation unit
    ``extra``, compiled with ``flags`` too), built unless the cache has it."""
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise BuildError("no C compiler (gcc or cc) on PATH")
    key = hashlib.sha256("\0".join([cc, *CFLAGS, *flags, src, extra]).encode()).hexdigest()[:32]
    d = cache_dir()
    so = d / f"p4mcc_{key}.so"
    if so.exists():
        return so
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create the module cache {d}: {exc.strerror or exc}") from None
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        c = Path(tmp) / "m.c"
        c.write_text(src)
        units = [str(c)]
        if extra:
            (Path(tmp) / "py.c").write_text(extra)
            units.append(str(Path(tmp) / "py.c"))
        out = Path(tmp) / "m.so"
        try:
            r = subprocess.run([cc, *CFLAGS, *flags, "-o", str(out), *units], capture_output=True, text=True)
        except OSError as exc:
            raise BuildError(f"cannot run the C compiler {cc!r}: {exc.strerror or exc}") from None
        if r.returncode != 0:
            lines = r.stderr.strip().splitlines()
            first = next((x for x in lines if "error" in x), lines[0] if lines else f"exit {r.returncode}")
            raise BuildError(f"{cc} failed: {first}")
        os.replace(out, so)  # atomic: concurrent builders of one program agree
    return so


def load(program: Any) -> Module:
    """The native module of ``program`` (emitted, compiled and loaded once per process)."""
    hit = _loaded.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    gen = CProgram(program)
    src = gen.source()
    py: Any = None
    try:  # with the CPython entry point when Python's headers are there
        so = compile_source(src, c_python.source(), c_python.include_flags())
        with_py = True
    except BuildError:
        so, with_py = compile_source(src), False
    try:
        lib = ctypes.CDLL(str(so))
    except OSError as exc:
        raise BuildError(f"cannot load {so}: {exc}") from None
    if with_py:
        py = _extension(so)
    mod = Module(lib, gen, so, py)
    _loaded[id(program)] = (program, mod)
    return mod
