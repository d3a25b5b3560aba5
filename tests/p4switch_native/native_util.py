"""The small networks the native node tests build."""

from __future__ import annotations

from typing import Any

from p4mcc.scenario.model import scenario_from_dict


def cbr_tree(name: str, k: int, receivers: int, rate: str) -> Any:
    """A constant-rate session over a k-ary tree of switches, replicated only (no assistance)."""
    return scenario_from_dict({
        "name": name, "duration": 1, "seed": 1,
        "topology": {"generate": {"kind": "kary_tree", "k": k, "receivers": receivers, "rate": rate,
                                  "delay": "1ms"}},
        "sessions": [{"name": "s", "protocol": "cbr", "sender": "snd", "receivers": ["r*"],
                      "group": "239.1.2.3", "port": 5000, "assistance": False}],
    }, known_protocols=None)
