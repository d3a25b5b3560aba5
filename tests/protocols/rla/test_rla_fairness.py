"""RLA shares a short drop-tail dumbbell with one TCP flow within the TFRC bound (issue 13)."""

from __future__ import annotations

from tcp_dumbbell_util import dumbbell, steady_ratio


def test_rla_defaults_share_a_dumbbell_with_tcp_within_the_tfrc_bound():
    # 2 Mbit/s, 44 ms round trip, a queue of one bandwidth-delay product (11 packets).
    ratio = steady_ratio(dumbbell("rla", {}, rate="2Mbps", delay="20ms", queue=11, receivers=2, duration=60))
    assert 0.5 <= ratio <= 2.0, f"rla/TCP = {ratio:.2f}"
