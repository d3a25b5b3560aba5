"""Forged feedback from a hostile host, in both engines (``forged_ack``, ``spoof_clr`` faults).

A 4 Mbit/s bottleneck carries one session to three honest receivers, r1
behind a link that loses 2 % (holes only it has); a ``forger`` host behind
the same bottleneck joins the group, so it sees what is sent, and lies to
the sender from ``START`` to ``STOP``:

* ``stolen_id`` (MTCP, RLA): ACKs claiming every packet sent, under r1's
  receiver id, from the forger's own address.  Believed, r1's holes would
  never be repaired;
* ``fake_fold`` (MTCP): ACKs flagged as a switch's fold with a one-packet
  window, though no switch folds for the session.  Believed, the session
  would sit at a packet a second;
* ``forged_resume`` (MTCP, RLA): the sender's host reboots at ``START``
  for 2 s and the forger claims 10^6 packets beyond anything sent.
  Believed by the fresh sender, the stream would skip past every honest
  receiver for good;
* ``quiet_liar`` (TFMCC): claims to be the limiting receiver at 8 kbit/s,
  then goes quiet.  Believed after it stops, the session would stay at
  8 kbit/s.

The honest receivers lose no data and keep at least 80 % of the in-order
delivery they have without the forger, during the attack and from 5 s
after its end (the simulator runs both; a Mininet run is held to its end
state: no receiver left behind, and half the honest run's delivery).  TFMCC's rate is back within 5 s of the liar's end
(the fault's ``recovered`` row) in both engines.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from p4mcc.scenario.model import scenario_from_dict

START, STOP, END = 6.0, 14.0, 22.0
BOUND_S = 5.0
HONEST = ("r1", "r2", "r3")
#: what a receiver may be short of the sender's last packets at the end:
#: a window in flight on the 4 Mbit/s, 12 ms path and its 30-packet queue
IN_FLIGHT = 64

CASES = [("mtcp", "stolen_id"), ("mtcp", "fake_fold"), ("mtcp", "forged_resume"),
         ("rla", "stolen_id"), ("rla", "forged_resume"), ("tfmcc", "quiet_liar")]


def in_order(agent: Any) -> int | None:
    """A reliable receiver's in-order point (its buffer's ``cum_ack``); None for others."""
    for v in vars(agent).values():
        if hasattr(v, "cum_ack") and hasattr(v, "delivered_bytes"):
            return int(v.cum_ack)
    return None


def scenario(proto: str, attack: str | None):
    faults: list[dict[str, Any]] = []
    if attack == "stolen_id":
        faults = [{"type": "forged_ack", "target": "forger", "at": START, "for": STOP - START, "victim": "r1"}]
    elif attack == "fake_fold":
        faults = [{"type": "forged_ack", "target": "forger", "at": START, "for": STOP - START, "fold": True}]
    elif attack == "forged_resume":
        faults = [{"type": "sender_crash", "target": "h1", "at": START, "for": 2.0},
                  {"type": "forged_ack", "target": "forger", "at": START, "for": STOP - START, "ahead": 10**6}]
    elif attack == "quiet_liar":
        faults = [{"type": "spoof_clr", "target": "forger", "at": START, "for": STOP - START}]
    receivers = [*HONEST, "forger"] if proto == "tfmcc" else list(HONEST)
    return scenario_from_dict({
        "name": f"{proto}-{attack or 'honest'}", "duration": END, "seed": 1,
        "topology": {"hosts": ["h1", *HONEST, "forger"], "switches": ["s1", "s2"],
                     "link_defaults": {"rate": "10Mbps", "delay": "2ms", "queue": 50},
                     "links": [{"a": "s1", "b": "s2", "rate": "4Mbps", "delay": "10ms", "queue": 30},
                               ["h1", "s1"], {"a": "r1", "b": "s2", "loss": 0.02}, ["r2", "s2"], ["r3", "s2"],
                               ["forger", "s2"]]},
        "sessions": [{"name": "s", "protocol": proto, "sender": "h1", "receivers": receivers, "port": 5005,
                      **({"leave_at": {"forger": START}} if proto == "tfmcc" else {})}],
        "faults": faults,
    })


def assert_back_within_bound(events: list[tuple[float, str, str, str]]) -> None:
    rows = [(e, d) for _t, _n, e, d in events if e in ("recovered", "not_recovered")]
    assert rows and all(e == "recovered" for e, _ in rows), rows
    worst = max(float(d.split("after=")[1].rstrip("s")) for _e, d in rows)
    assert worst <= BOUND_S, rows


# ---- simulator ---------------------------------------------------------------

def _sim(proto: str, attack: str | None) -> tuple[Any, dict[str, list[tuple[float, int]]]]:
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import model_choice
    from p4mcc.scenario.faults import recovery_events

    sc = scenario(proto, attack)
    run = build_run(sc, switch=model_choice())
    delivered: dict[str, list[tuple[float, int]]] = {r: [] for r in HONEST}

    def sample() -> None:
        for r in HONEST:
            got = in_order(run.agents[f"s/{r}"])
            delivered[r].append((run.sim.now, got if got is not None
                                 else run.net.hosts[r].rx_mcast_bytes.get(sc.sessions[0].port, 0)))
        if run.sim.now + 0.5 <= END:
            run.sim.at(run.sim.now + 0.5, sample)

    run.sim.at(0.5, sample)
    run.sim.run(until=END)
    run.events = recovery_events(run.recorder.samples, sc, END)  # type: ignore[attr-defined]
    return run, delivered


def _at(series: list[tuple[float, int]], t: float) -> int:
    return max(v for tt, v in series if tt <= t + 1e-9)


@pytest.fixture(scope="module")
def honest_sim() -> dict[str, dict[str, list[tuple[float, int]]]]:
    return {p: _sim(p, None)[1] for p in ("mtcp", "rla", "tfmcc")}


@pytest.mark.parametrize("proto, attack", CASES)
def test_in_the_simulator_the_honest_receivers_keep_their_delivery(proto: str, attack: str, honest_sim) -> None:
    run, got = _sim(proto, attack)
    rogue = run.faults.rogues[-1]
    assert rogue.sent >= 20 * (STOP - START)  # it lied all along
    honest = honest_sim[proto]
    after = STOP + BOUND_S
    for r, series in got.items():
        # a reboot stops everyone for its 2 s: judged from the attack's end
        if attack != "forged_resume":
            during, base = _at(series, STOP) - _at(series, START), _at(honest[r], STOP) - _at(honest[r], START)
            assert during >= 0.8 * base, (r, during, base)
        later, base_later = _at(series, END) - _at(series, after), _at(honest[r], END) - _at(honest[r], after)
        assert later >= 0.8 * base_later, (r, later, base_later)
    if proto in ("mtcp", "rla"):
        snd = run.agents["s/h1"]
        assert snd.next_seq - 1 < 10**6  # the stream never skipped ahead
        assert min(in_order(run.agents[f"s/{r}"]) for r in HONEST) >= snd.next_seq - 1 - IN_FLIGHT
    else:
        assert_back_within_bound(run.events)


# ---- Mininet -----------------------------------------------------------------

def _summaries(out: Path) -> dict[str, dict[str, Any]]:
    """Each agent's last ``summary`` record (a restarted agent writes one per life)."""
    got: dict[str, dict[str, Any]] = {}
    for path in (out / "agents").glob("s-*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("state") == "summary":
                got[path.stem.removeprefix("s-")] = rec
    return got


def _emulate(proto: str, attack: str | None, out: Path) -> tuple[list[tuple[float, str, str, str]], dict[str, int]]:
    """A Mininet run on the built-in switch: its events, and each honest receiver's in-order packets."""
    from p4mcc.emulation.run import missing_requirements, run_emulation

    reason = missing_requirements(("ping",))
    if reason:
        pytest.skip(reason)
    run_emulation(scenario(proto, attack), out, target="builtin", progress=False, plots=False)
    events = [(float(r["time"]), r["node"], r["event"], r["detail"]) for r in csv.DictReader((out / "events.csv").open())]
    final = _summaries(out)
    return events, {r: int(final[r]["delivered"]) for r in HONEST if r in final}


@pytest.fixture(scope="module")
def honest_mininet(tmp_path_factory) -> dict[str, dict[str, int]]:
    return {p: _emulate(p, None, tmp_path_factory.mktemp(f"honest-{p}"))[1] for p in ("mtcp", "rla")}


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("proto, attack", [("mtcp", "stolen_id"), ("mtcp", "fake_fold"), ("mtcp", "forged_resume"),
                                           ("rla", "forged_resume"), ("tfmcc", "quiet_liar")])
def test_in_mininet_the_honest_receivers_keep_their_delivery(proto: str, attack: str, tmp_path: Path,
                                                             request: pytest.FixtureRequest) -> None:
    events, got = _emulate(proto, attack, tmp_path)
    assert any(e == "rogue_start" for _t, _n, e, _d in events), events
    if proto == "tfmcc":
        assert_back_within_bound(events)
        return
    honest = request.getfixturevalue("honest_mininet")[proto]
    # r1's holes are repaired like everyone's: it is not left behind
    assert min(got.values()) >= max(got.values()) - IN_FLIGHT, got
    # and the stream goes on.  Broken, each attack ends far below half of the
    # honest run (a packet a second; a stream skipped at the reboot, 6 s into
    # 22); the simulator holds the issue's 80 % exactly, while here the agents'
    # Python shares two busy cores and one run's delivery varies by a quarter
    lost_s = 2.0 if attack == "forged_resume" else 0.0
    for r in HONEST:
        assert got[r] >= 0.5 * honest[r] * (END - lost_s) / END, (r, got, honest)
