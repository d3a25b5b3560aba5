"""The v1model pipeline compiled to native code (C through the system compiler).

``cgen`` emits one C module per program from the front end's typed IR,
``build`` compiles it once per program hash into a shared object cached on
disk, and ``switch.NativeSwitch`` runs packets through it with the same
control-plane API as the interpreter's ``Switch`` (the reference).  A
program the C emitter does not cover, or a machine without a C compiler,
runs on the interpreter with a one-line notice.
"""

from .cgen import NativeUnsupported
from .switch import NativeSwitch, make_switch, native_status

__all__ = ["NativeSwitch", "NativeUnsupported", "make_switch", "native_status"]
