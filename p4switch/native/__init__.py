"""The v1model pipeline compiled to native code (C through the system compiler).

``cgen`` emits one C module per program from the front end's typed IR,
``build`` compiles it once per program hash into a shared object cached on
disk (with ``c_python``'s CPython entry point when Python's headers are
installed), and ``switch.NativeSwitch`` runs packets through it with the same
control-plane API as the interpreter's ``Switch`` (the reference).  A
program the C emitter does not cover, or a machine without a C compiler,
runs on the interpreter with a one-line notice.
"""

import os

from .cgen import NativeUnsupported
from .switch import NativeSwitch, make_switch, native_status

#: The pipelines a switch can run: ``native`` (the default, compiled) and
#: ``interp`` (the interpreter, the reference the differential tests hold it to).
PIPELINES = ("native", "interp")
DEFAULT_PIPELINE = "native"
#: Environment variable naming the pipeline of every switch created after it is read
#: (``p4mcc switch --pipeline`` and ``p4mcc stf --pipeline`` take precedence).
PIPELINE_ENV = "P4MCC_PIPELINE"


def pipeline_from_env() -> str:
    """The pipeline ``$P4MCC_PIPELINE`` names, else the default; an unknown name is refused."""
    name = os.environ.get(PIPELINE_ENV, "").strip() or DEFAULT_PIPELINE
    if name not in PIPELINES:
        raise ValueError(f"{PIPELINE_ENV}={name!r}: expected one of {', '.join(PIPELINES)}")
    return name


__all__ = ["DEFAULT_PIPELINE", "PIPELINES", "PIPELINE_ENV", "NativeSwitch", "NativeUnsupported",
           "make_switch", "native_status", "pipeline_from_env"]
