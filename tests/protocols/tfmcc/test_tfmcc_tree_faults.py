"""TFMCC on the fault bench's random trees (bench/faults.py): a link to a leaf
switch that reorders 5 % of its frames by 10 ms for 2 s, in the simulator on
the P4 switch, TCP beside it.

The session must be back to 80 % of its throughput within the bench's 5 s.
Before ``reorder_window`` each overtaken frame was a loss, and this draw
took 10.0 s.
"""

from __future__ import annotations

from bench.faults import BOUND_S, run_tree


def test_tfmcc_recovers_from_reordering_on_a_tree() -> None:
    out = run_tree(2, "tfmcc", "link_reorder")
    assert out["affected"]
    assert out["recover_s"] is not None and out["recover_s"] <= BOUND_S, out["recover_s"]
