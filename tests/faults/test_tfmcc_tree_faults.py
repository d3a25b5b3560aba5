"""TFMCC on the fault bench's random trees (bench/faults.py): a link to a leaf
switch that slows to 500 kbit/s and 40 ms for 2 s, or that reorders 5 % of
its frames by 10 ms, in the simulator on the P4 switch, TCP beside it.

The session must be back to 80 % of its throughput within the bench's 5 s.
Before ``drained_queue_rtt`` the CLR's RTT stayed inflated by the drained
queue and the session never came back (draw 1); before ``reorder_window``
each overtaken frame was a loss, and draw 2 took 10.0 s.
"""

from __future__ import annotations

import pytest

from bench.faults import BOUND_S, run_tree


@pytest.mark.parametrize("kind, draw", [("link_change", 1), ("link_reorder", 2)])
def test_tfmcc_recovers_on_a_tree(kind: str, draw: int) -> None:
    out = run_tree(draw, "tfmcc", kind)
    assert out["affected"]
    assert out["recover_s"] is not None and out["recover_s"] <= BOUND_S, out["recover_s"]
