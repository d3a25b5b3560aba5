"""Device configs the switch accepts in SetForwardingPipelineConfig.

``p4_device_config`` carries the P4 program itself: plain P4_16 source, or a
JSON bundle of the main file and the project files it includes, so programs
split over several files (``p4src/``) travel whole.  The switch compiles it
with the built-in front end, and a pushed program may include only its own
bundled files and the P4 library (``core.p4``, ``v1model.p4``): never a
file of the switch's host.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Iterable

from .errors import Code, P4RTError

BUNDLE_FORMAT = "p4mcc-p4-bundle-v1"
MAX_NAME_BYTES = 255
"""Longest component of a bundled file name (Linux's NAME_MAX)."""
MAX_DEPTH = 32
"""Most folders a bundled file name may nest: ``p4src/`` uses 2, and every
level becomes a folder on the switch's disk while the program compiles."""
MAX_FILES = 4096
"""Most files in one bundle (``p4src/`` has about 20)."""


def make_bundle(main_path: str, include_dirs: Iterable[str] = (), defines: dict[str, str] | None = None) -> bytes:
    """A device config carrying a program and the project files it includes.

    ``p4_device_config`` may be plain P4 source (no project includes) or this
    JSON bundle: ``{"format": ..., "main": name, "files": {name: text},
    "defines": {...}}``.  Files found in ``include_dirs`` and beside the main
    file are bundled by name so ``#include "x.p4"`` resolves on the switch.
    """
    files: dict[str, str] = {}
    main_dir = os.path.dirname(os.path.abspath(main_path))
    with open(main_path, encoding="utf-8") as f:
        files[os.path.basename(main_path)] = f.read()
    for d in [main_dir, *include_dirs]:
        for root, _dirs, names in os.walk(d):
            for n in names:
                if n.endswith(".p4"):
                    full = os.path.join(root, n)
                    rel = os.path.relpath(full, d)
                    if rel not in files:
                        with open(full, encoding="utf-8") as f:
                            files[rel] = f.read()
    doc = {"format": BUNDLE_FORMAT, "main": os.path.basename(main_path), "files": files, "defines": defines or {}}
    return json.dumps(doc).encode()


def _bad(message: str) -> P4RTError:
    return P4RTError(Code.INVALID_ARGUMENT, message)


def _text(value: str, what: str) -> None:
    """Refuse text the switch could not write as UTF-8 (a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(f"{what}: not valid Unicode (a lone surrogate)") from None


def check_bundle_names(files: dict[str, object], main: str) -> None:
    """Refuse every file name the switch could not lay out as a folder tree.

    The names become paths under a fresh folder, so each must be a relative
    path of at most :data:`MAX_DEPTH` folders whose components are non-empty,
    not ``.``/``..``, free of NUL and at most :data:`MAX_NAME_BYTES` bytes; no
    name may be both a file and a folder of another; the main file is a file.
    Checking here, before any disk write, keeps every malformed bundle an
    INVALID_ARGUMENT that names the entry, never an OS error or a path of the
    switch's host."""
    if len(files) > MAX_FILES:
        raise _bad(f"bundle has {len(files)} files (at most {MAX_FILES})")
    folders: set[str] = set()
    for name in files:
        shown = repr(name[:64] + ("..." if len(name) > 64 else ""))
        if not isinstance(name, str) or not name:
            raise _bad("bundle file name is empty")
        _text(name, f"bundle file name {shown}")
        if "\0" in name:
            raise _bad(f"bundle file name {shown} contains a NUL character")
        if name.startswith("/"):
            raise _bad(f"bundle file name {shown} escapes the bundle (absolute)")
        parts = name.split("/")
        if len(parts) > MAX_DEPTH + 1:
            raise _bad(f"bundle file name {shown} nests {len(parts) - 1} folders (at most {MAX_DEPTH})")
        for part in parts:
            if part in ("", ".", ".."):
                raise _bad(f"bundle file name {shown} escapes the bundle or has an empty component")
            if len(part.encode("utf-8")) > MAX_NAME_BYTES:
                raise _bad(f"bundle file name {shown}: a component is longer than {MAX_NAME_BYTES} bytes")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    clash = sorted(folders.intersection(files))
    if clash:
        what = "the main file" if main in clash else f"bundle file name {clash[0][:64]!r}"
        raise _bad(f"{what} is both a file and a folder of other bundled files")


def compile_device_config(blob: bytes) -> Any:
    """Compile a device config (P4 source or bundle) with the built-in front end."""
    from ..frontend import compile_file, compile_text
    from ..frontend.errors import P4Error

    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise P4RTError(Code.INVALID_ARGUMENT, "device config is neither P4 source nor a p4mcc bundle (not UTF-8)") from None
    doc = None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        except RecursionError:
            raise P4RTError(Code.INVALID_ARGUMENT, "device config: JSON nested too deeply") from None
    if not (isinstance(doc, dict) and doc.get("format") == BUNDLE_FORMAT):
        try:
            return compile_text(text, "<device config>")
        except P4Error as e:
            raise P4RTError(Code.INVALID_ARGUMENT, f"device config does not compile: {e}") from None
    files = doc.get("files") or {}
    main = doc.get("main")
    if not isinstance(files, dict) or not isinstance(main, str) or main not in files:
        raise P4RTError(Code.INVALID_ARGUMENT, "bundle lacks its main file")
    defines = doc.get("defines") or {}
    if not isinstance(defines, dict):
        raise P4RTError(Code.INVALID_ARGUMENT, "bundle defines must be a table of names to values")
    for name, body in [*files.items(), *defines.items()]:
        if not isinstance(body, (str, int)) or isinstance(body, bool):
            raise P4RTError(Code.INVALID_ARGUMENT,
                            f"bundle entry {str(name)[:64]!r}: expected text, got {type(body).__name__}")
        _text(str(name), "bundle entry name")
        _text(str(body), f"bundle entry {str(name)[:64]!r}")
    check_bundle_names(files, main)
    with tempfile.TemporaryDirectory(prefix="p4mcc-cfg-") as tmp:
        try:
            for name, body in files.items():
                path = os.path.join(tmp, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(str(body))
            return compile_file(os.path.join(tmp, main), include_dirs=[tmp],
                                defines={str(k): str(v) for k, v in defines.items()})
        except P4Error as e:
            raise _bad(f"device config does not compile: {_hide(str(e), tmp)}") from None
        except (OSError, ValueError, RecursionError) as e:
            # The checks above leave nothing for the disk to refuse; should it
            # still, the client hears which bundle, never the switch's folder.
            raise _bad(f"bundle cannot be laid out: {_hide(str(e), tmp)}") from None


def _hide(message: str, folder: str) -> str:
    """``message`` with the switch's working folder cut out of every path."""
    return message.replace(folder + os.sep, "").replace(folder, "<bundle>")
