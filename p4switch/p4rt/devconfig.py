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
    try:
        if isinstance(doc, dict) and doc.get("format") == BUNDLE_FORMAT:
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
            with tempfile.TemporaryDirectory(prefix="p4mcc-cfg-") as tmp:
                for name, body in files.items():
                    path = os.path.normpath(os.path.join(tmp, name))
                    if not path.startswith(tmp + os.sep):
                        raise P4RTError(Code.INVALID_ARGUMENT, f"bundle file name {name!r} escapes the bundle")
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(str(body))
                return compile_file(os.path.join(tmp, main), include_dirs=[tmp],
                                    defines={str(k): str(v) for k, v in defines.items()})
        return compile_text(text, "<device config>")
    except P4Error as e:
        raise P4RTError(Code.INVALID_ARGUMENT, f"device config does not compile: {e}") from None
