"""Why a Mininet test cannot run here (None: it can); the same checks as tests/emulation."""

from __future__ import annotations

import os
import shutil


def missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (Mininet creates network namespaces)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet is not importable (run `make install`)"
    for tool in ("mnexec", "iperf3", "ethtool", "ping"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (run `make install`)"
    return None
