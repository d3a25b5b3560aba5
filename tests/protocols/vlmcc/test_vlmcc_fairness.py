"""VLMCC shares a short drop-tail dumbbell with one TCP flow within the TFRC bound
(issue 13), and without its competitive mode (rule ``compete``) it does not."""

from __future__ import annotations

from tcp_dumbbell_util import dumbbell, steady_ratio
from vlmcc_util import DEFAULT_RULES, rules


def test_vlmcc_defaults_share_a_dumbbell_with_tcp_within_the_tfrc_bound():
    # 2 Mbit/s, 44 ms round trip, a queue of one bandwidth-delay product (11 packets).
    ratio = steady_ratio(dumbbell("vlmcc", {}, rate="2Mbps", delay="20ms", queue=11, receivers=2, duration=60))
    assert 0.5 <= ratio <= 2.0, f"vlmcc/TCP = {ratio:.2f}"


def test_vlmcc_pure_vegas_starves_on_a_deep_drop_tail_queue():
    """Without the competitive mode (rule ``compete``) VLMCC gets a fraction of
    TCP's share on a queue of 2 BDP; the rule is what brings it into the bound."""
    sc = dumbbell("vlmcc", {}, rate="2Mbps", delay="20ms", queue=22, receivers=2, duration=60,
                  rules={name: "off" for name in set(DEFAULT_RULES) - set(rules(("compete",)))})
    assert steady_ratio(sc) < 0.5
    sc = dumbbell("vlmcc", {}, rate="2Mbps", delay="20ms", queue=22, receivers=2, duration=60)
    assert 0.5 <= steady_ratio(sc) <= 2.0
