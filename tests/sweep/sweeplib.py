"""Tiny sweeps for the tests (a few simulated seconds per point)."""

from __future__ import annotations

from typing import Any

BASE: dict[str, Any] = {
    "name": "tiny",
    "duration": 5,
    "topology": {"generate": {"kind": "dumbbell", "receivers": 2, "tcp_pairs": 1, "rate": "1Mbps",
                              "delay": "10ms"}},
    "sessions": [{"name": "s", "protocol": "tfmcc", "sender": "snd1", "receivers": ["r*"]}],
    "tcp_flows": [{"name": "tcp", "src": "tsrc1", "dst": "tdst1"}],
}


def sweep_doc(switch: str = "model", seeds: tuple[int, ...] = (1, 2), **extra: Any) -> dict[str, Any]:
    return {
        "name": "tiny-sweep",
        "base": BASE,
        "switch": switch,
        "axes": {
            "seed": list(seeds),
            "sessions[0].protocol": ["tfmcc", "webrc"],
            "topology.generate.rate": {"from": 1, "to": 2, "step": 1, "unit": "Mbps"},
        },
        **extra,
    }
