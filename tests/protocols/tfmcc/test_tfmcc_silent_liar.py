"""A TFMCC receiver that claims maximum loss, becomes CLR and goes quiet, in the simulator.

The 4 Mbit/s bottleneck of ``test_tfmcc_rogue_claims`` carries one TFMCC
session to three honest receivers.  From 15 s to 25 s a rogue behind the
same bottleneck reports p = 1 at 8 kbit/s: a receiver that bad is the CLR
and the session follows it (a single-rate protocol follows its slowest
receiver, RFC 4654 sec. 6).  At 25 s it stops talking.  The sender releases
it 10·b·R_max after the first packet it leaves unanswered
(``release_silent_clr``; the paper's 10 T at 8 kbit/s is minutes); within
5 s of the release the rate is ten times the liar's and climbing, and back
to 80 % of the share before the run ends; the honest receivers get packets
in every 3 s from the lie's first seconds on.
"""

from __future__ import annotations

import statistics

import liar_util
from liar_util import HONEST

from p4mcc.hosts.core import node_id
from p4mcc.hosts.tfmcc.constants import CLR_TIMEOUT_ROUNDS, FB_B

START, STOP, END = 15.0, 25.0, 60.0
BOUND_S = 5.0


def scenario_dict() -> dict:
    """``test_tfmcc_rogue_claims``'s bottleneck, run to END."""
    return liar_util.scenario_dict("tfmcc-silent-liar", END)


def run(rules: dict[str, bool] | None = None) -> dict:
    """Per 0.5 s: the sender's rate, each honest receiver's packets; the CLR per step."""
    raw = scenario_dict()
    if rules:
        raw["sessions"][0]["rules"] = {k: "on" if v else "off" for k, v in rules.items()}
    claim = {"mode": "false_report", "claim_bps": 8_000, "claim_loss": 1.0}
    net, snd, _rogue = liar_util.build_with_rogue(raw, claim, START, STOP)
    liar = node_id(net.net.hosts["rogue"].ip)
    out: dict = {"t": [], "rate": [], "got": {r: [] for r in HONEST}, "liar_clr": [], "r_max": []}
    t, seq = 0.0, 0
    before = {r: 0 for r in HONEST}
    while t < END:
        t = round(t + 0.5, 6)
        net.sim.run(t)
        out["t"].append(t)
        out["rate"].append((snd.seq - seq) * 8.0 * snd.p.packet_size / 0.5)
        seq = snd.seq
        for r in HONEST:
            got = net.agents[f"tf/{r}"].packets
            out["got"][r].append(got - before[r])
            before[r] = got
        out["liar_clr"].append(snd.clr == liar)
        out["r_max"].append(snd.r_max)
    return out


def mean(o: dict, key: str, t0: float, t1: float) -> float:
    return statistics.mean(v for t, v in zip(o["t"], o[key]) if t0 < t <= t1)


def test_a_quiet_liar_is_released_and_the_honest_receivers_get_their_share_back() -> None:
    o = run()
    share = mean(o, "rate", 8.0, START)
    assert share > 3.0e6
    assert any(c for t, c in zip(o["t"], o["liar_clr"]) if START < t <= STOP)  # the lie took
    # released 10·b·R_max after the first packet it left unanswered (at most a packet-time
    # at 8 kbit/s after its last report; R_max as the sender held it, 0.5 s sampling)
    r_max = max(r for t, r in zip(o["t"], o["r_max"]) if STOP - 0.5 <= t <= STOP + 10.0)
    released = next(t for t, c in zip(o["t"], o["liar_clr"]) if t > STOP and not c)
    assert released - STOP <= CLR_TIMEOUT_ROUNDS * FB_B * r_max + 8.0 * 1460 / 8_000 + 0.5, (released, r_max)
    # within 5 s of the release the rate has left the liar's 8 kbit/s far behind ...
    assert mean(o, "rate", released + BOUND_S - 1.0, released + BOUND_S) >= 10 * 8_000
    # ... and it climbs back to 80 % of the share before the run ends (one packet per R_max
    # per R_max after a CLR change, 2.2, from an R_max the sparse packets stretched)
    back = next((t for t in o["t"] if t > released and t + 2.0 <= END
                 and mean(o, "rate", t, t + 2.0) >= 0.8 * share), None)
    assert back is not None, released
    # every honest receiver gets packets in every 3 s from the lie's first seconds on
    # (8 kbit/s is a packet per 1.46 s), the release included, and its share once the rate is back
    for r in HONEST:
        got = [g for t, g in zip(o["t"], o["got"][r]) if t > START + 3.0]
        per_3s = [sum(got[i:i + 6]) for i in range(0, len(got) - 5)]
        assert min(per_3s) >= 1, (r, per_3s)
        after = [g for t, g in zip(o["t"], o["got"][r]) if back < t <= back + 2.0]
        assert sum(after) * 8 * 1460 / (0.5 * len(after)) >= 0.7 * share, r


def test_without_the_rule_the_quiet_liar_keeps_the_session_at_its_rate() -> None:
    o = run({"release_silent_clr": False})
    assert all(c for t, c in zip(o["t"], o["liar_clr"]) if STOP < t <= END)
    assert mean(o, "rate", STOP + 1.0, END) < 0.05 * mean(o, "rate", 8.0, START)
