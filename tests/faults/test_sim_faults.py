"""Every fault type in the simulator: what the engine does, what events.csv
records, and the system's recovery bound (5 s).  Scenarios are the files of
topologies/scenarios/faults/; faults that need the P4 program (switch state,
meters, parser) run on the P4 switch, the others on the faster model switch."""

from __future__ import annotations

import pytest

RECOVERY_BOUND_S = 5.0


def rows(ev, what):
    return [e for e in ev if e[2] == what]


def recovered_after(ev) -> list[float]:
    return [float(e[3].rsplit("after=", 1)[1].rstrip("s")) for e in rows(ev, "recovered")]


def rx_bytes_between(run, host: str, port: int, t0: float, t1: float) -> float:
    return sum(s.value * run.recorder.scenario.metrics_interval / 8 for s in run.recorder.samples
               if s.kind == "session" and s.node == host and s.metric == "throughput_bps" and t0 < s.time <= t1)


def test_switch_crash_restores_tables_and_membership_and_traffic_resumes(sim_fault):
    run, ev = sim_fault("switch-crash")
    assert [e[0] for e in rows(ev, "switch_down")] == [8.0]
    assert [e[0] for e in rows(ev, "switch_up")] == [9.0]
    assert [e[0] for e in rows(ev, "restored")] == [9.5]  # the controller's reconnect delay
    assert rows(ev, "fault") and not rows(ev, "not_recovered")
    assert all(t <= RECOVERY_BOUND_S for t in recovered_after(ev))
    # membership came back through the re-query: both receivers get data again
    for r in ("r1", "r2"):
        assert rx_bytes_between(run, r, 5000, 9.5, 14.0) > 100_000
    assert run.control.queries_sent >= 2  # the restore's query to r1 and r2


def test_a_root_switch_restart_has_the_switches_below_it_join_again(sim_fault):
    """s1 (the sender's switch) restarts empty: its memberships were s2's and
    s3's proxied joins, which they re-send only when asked (``rejoin``).
    Without that, data came back at the next periodic query, 4 s after the
    restore; the bound here is the re-query's response time and a round trip."""
    from p4mcc.controller.diff import diff
    from p4mcc.controller.local import LocalApplier
    from p4mcc.controller.querier import REQUERY_GAP_S, REQUERY_MAX_RESP_DS

    run, ev = sim_fault("root-switch-crash")
    assert [(e[0], e[1]) for e in rows(ev, "restored")] == [(9.5, "s1")]
    assert sorted((e[0], e[1]) for e in rows(ev, "rejoin")) == [(9.5, "s2"), (9.5, "s3")]
    soon = 9.5 + REQUERY_MAX_RESP_DS / 10 + REQUERY_GAP_S
    for r in ("r1", "r2", "r3"):
        assert rx_bytes_between(run, r, 5000, 9.5, soon) > 0, r
    assert recovered_after(ev) and all(t <= RECOVERY_BOUND_S for t in recovered_after(ev))
    # The window over, s2 and s3 hold their own configuration again.
    for sw in ("s2", "s3"):
        want = run.net.desired_states[sw]
        ops = diff(want, LocalApplier(run.net.switches[sw].sw, sw).read_state(want))
        assert [o for o in ops if o.kind == "modify"] == []


def test_a_leader_that_crashes_while_the_sender_competes_is_replaced(sim_fault):
    """VLMCC's leader (the slow branch's only receiver) dies while the sender
    is in its competitive mode, where its silence shows as retransmission
    timeouts: the sender backed off (1, 2, 4 ... s) for good and the four
    live receivers got nothing.  A second timeout in a row with the leader
    silent loses it (``timeout_loses_leader``); a fast-branch receiver leads."""
    from p4mcc.hosts.core import node_id

    run, ev = sim_fault("leader-crash", "model")
    snd = run.agents["vlmcc/h1"]
    assert snd.leader_losses >= 1 and snd.compete_entries >= 1
    assert snd.leader in {node_id(run.net.hosts[h].ip) for h in ("a1", "a2", "a3", "a4")}
    assert recovered_after(ev) and all(t <= RECOVERY_BOUND_S for t in recovered_after(ev))
    # the session now runs at the fast branch's pace, above the dead branch's 2.6 Mbit/s
    for h in ("a1", "a2", "a3", "a4"):
        assert rx_bytes_between(run, h, 0, 17.0, 22.0) * 8 / 5.0 > 2.6e6, h


def test_controller_down_delays_a_restore_until_it_is_back(sim_fault):
    run, ev = sim_fault("controller-restart")
    downs = [e[0] for e in rows(ev, "controller_down")]
    ups = [e[0] for e in rows(ev, "controller_up")]
    assert downs == [5.0, 9.0] and ups == [7.0, 9.5]
    assert [e[0] for e in rows(ev, "restored")] == [7.0]  # the switch came back at 6.0, nobody to restore it
    assert "takeover" in [e for e in rows(ev, "controller_down")][1][3]
    assert len(rows(ev, "recovered")) == 3 and not rows(ev, "not_recovered")
    assert all(t <= RECOVERY_BOUND_S for t in recovered_after(ev))


def test_link_flap_drops_everything_while_down_and_recovers_each_time(sim_fault):
    run, ev = sim_fault("link-flap", "model")
    assert [e[0] for e in rows(ev, "link_down")] == [5.0, 9.0, 13.0]
    assert [e[0] for e in rows(ev, "link_up")] == [6.0, 10.0, 14.0]
    after = recovered_after(ev)
    assert len(after) == 3 and all(t <= RECOVERY_BOUND_S for t in after)
    link = next(l for n, l in run.net.links.items() if "s1" in n and "s2" in n)
    assert link.ab.counters.down_drops > 0
    for r in ("r1", "r2", "r3"):  # nothing arrives during an outage (after what was in flight)
        assert rx_bytes_between(run, r, 5000, 5.5, 6.0) == 0


def test_link_change_bounds_throughput_then_restores(sim_fault):
    run, ev = sim_fault("link-change", "model")
    changes = rows(ev, "link_change")
    assert [e[0] for e in changes] == [6.0, 11.0] and changes[1][3] == "restored"
    # during the change the bottleneck carries at most 1 Mb/s
    per_receiver = rx_bytes_between(run, "r1", 5000, 7.0, 11.0) * 8 / 4.0
    assert per_receiver <= 1.0e6 * 1.02
    link = next(l for n, l in run.net.links.items() if "s1" in n and "s2" in n)
    assert link.ab.rate_bps == 4e6 and link.ab.delay_s == pytest.approx(0.01)
    assert link.ab.counters.loss_drops > 0  # the 1 % loss applied while changed
    assert all(t <= RECOVERY_BOUND_S for t in recovered_after(ev))


def test_receiver_crash_is_silent_and_the_host_rejoins_after_reboot(sim_fault):
    run, ev = sim_fault("receiver-crash", "model")
    r1 = run.net.hosts["r1"]
    log = [(t, what) for t, what, _ in r1.membership_log]
    assert not [x for x in log if 6.0 <= x[0] < 9.0]  # silent: no leave, nothing at all while down
    assert (9.0, "join") in log  # the rebooted host joins again
    assert rows(ev, "crash")[0][0] == 6.0 and rows(ev, "restart")[0][0] == 9.0
    assert rx_bytes_between(run, "r1", 5000, 6.5, 9.0) == 0
    assert rx_bytes_between(run, "r1", 5000, 9.0, 14.0) > 0
    assert rx_bytes_between(run, "r2", 5000, 6.5, 9.0) > 0  # the others are not disturbed


def test_receiver_leave_runs_the_cores_leave_then_the_kernels(sim_fault):
    run, ev = sim_fault("receiver-leave", "model")
    agent = run.agents["tfmcc/r1"]
    assert agent.left  # TFMCC's close(): the LEAVING report went out
    assert ("leave" in [w for t, w, _ in run.net.hosts["r1"].membership_log if t == 6.0])
    assert rx_bytes_between(run, "r1", 5000, 6.5, 14.0) == 0
    assert rows(ev, "graceful_leave")[0][0] == 6.0 and not rows(ev, "not_recovered")


def test_agent_kill_leaves_through_the_kernel_and_the_restart_rejoins(sim_fault):
    run, ev = sim_fault("agent-kill", "model")
    log = [(t, w) for t, w, _ in run.net.hosts["r2"].membership_log]
    assert log == [(0.0, "join"), (6.0, "leave"), (8.0, "join")]
    assert rx_bytes_between(run, "r2", 5000, 6.5, 8.0) == 0
    after = recovered_after(ev)
    assert after and after[0] <= RECOVERY_BOUND_S  # from its restart
    assert rx_bytes_between(run, "r1", 5000, 6.0, 8.0) > 0


def test_feedback_flood_is_policed_to_the_hosts_budget(sim_fault):
    from p4mcc.controller.policing import host_budgets

    run, ev = sim_fault("feedback-flood")
    pps, burst = host_budgets(run.recorder.scenario.topology, run.recorder.scenario.sessions)["r3"]
    assert (pps, burst) == (143, 20)  # 2 reports per 28 ms path RTT, doubled
    fb = [s.value for s in run.recorder.samples if s.metric == "feedback_msgs" and 5.0 < s.time <= 7.0]
    # 5,000 reports/s offered; the sender sees at most the budget, the burst and the honest receivers
    assert sum(fb) <= pps * 2.0 + burst + 50
    assert sum(fb) >= pps * 2.0 * 0.8  # the meter admits the budget, not less
    s2 = run.net.switches["s2"]
    policed = s2.sw.counter_read("port_policed", 4)[0]
    assert policed >= 10_000 - pps * 2 - burst - 5
    assert "sent=10000" in rows(ev, "rogue_stop")[0][3]


@pytest.mark.parametrize("name", ["false-report", "spoof-clr"])
def test_misbehaving_receiver_runs_to_the_end_with_results(sim_fault, name):
    run, ev = sim_fault(name, "model")
    assert rows(ev, "rogue_start")[0][0] == 5.0 and rows(ev, "rogue_stop")[0][0] == 10.0
    rogue = run.faults.rogues[0]
    assert 240 <= rogue.sent <= 260  # 50 claims/s for 5 s
    assert run.summary["sessions"]["tfmcc"]["receivers"]  # full results


def test_malformed_frames_are_dropped_and_counted_without_disturbing_the_session(sim_fault):
    run, ev = sim_fault("malformed")
    assert run.faults.malformed_sent == 2000
    sw = run.net.switches["s2"].sw
    assert sw.stats["dropped"] + sw.stats["parser_errors"] >= 2000 * 0.9
    assert sw.last_error is None
    after = recovered_after(ev)
    assert after == [0.0]
    assert rows(ev, "malformed_end")[0][3] == "frames=2000"


def test_with_membership_ageing_a_silently_crashed_receivers_port_stops_getting_replicas():
    """``membership: {timeout: 3s}``: the querier keeps live receivers' ports, a
    crashed host answers no query, so its port ages out (RFC 2236's timeout)."""
    import dataclasses

    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import Membership
    from p4mcc.scenario.model import load_scenario

    from pathlib import Path

    SCENARIOS = Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults"

    sc = load_scenario(SCENARIOS / "receiver-crash.yaml")
    sc = dataclasses.replace(sc, faults=(dataclasses.replace(sc.faults[0], duration=None),),
                             membership=Membership(timeout=3.0), duration=12.0)
    run = build_run(sc, switch=choose_switch("p4", sc))
    to_r1 = run.net.host_link("r1").ba  # s2 -> r1
    to_r2 = run.net.host_link("r2").ba
    marks: dict[str, tuple[int, int]] = {}
    run.sim.at(10.0, lambda: marks.__setitem__("t10", (to_r1.counters.enqueued_packets,
                                                      to_r2.counters.enqueued_packets)))
    run.sim.run(until=12.0)
    assert run.control.query_interval == pytest.approx(3.0 * 125 / 385)
    r1_10, r2_10 = marks["t10"]
    # crashed at 6 s: aged out by 6 + 3 s (+ a query interval); nothing after 10 s but queries
    assert to_r1.counters.enqueued_packets - r1_10 <= 3
    # the live receiver's port is not aged: WEBRC's data keeps reaching it
    assert to_r2.counters.enqueued_packets - r2_10 >= 8


def test_the_simulator_ages_and_queries_by_default_as_p4mcc_run_does():
    """No ``membership:`` in the scenario: the simulated P4 switches get the
    same ageing and the stand-in controller the same querier as a Mininet run
    (``scenario.faults.membership_timeout`` is the one default)."""
    from p4mcc.scenario.control import scenario_options
    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import DEFAULT_TIMEOUT
    from p4mcc.scenario.model import load_scenario

    from pathlib import Path

    sc = load_scenario(Path(__file__).resolve().parents[2] / "topologies" / "scenarios" / "faults" / "receiver-crash.yaml")
    assert sc.membership.timeout is None
    run = build_run(sc, switch=choose_switch("p4", sc))
    emu_options, emu_query = scenario_options(sc)  # what emulation.run.LiveController gets
    assert run.control.query_interval == emu_query == pytest.approx(DEFAULT_TIMEOUT * 125 / 385)
    for name, st in run.net.desired_states.items():
        params = dict(st.defaults["MccIngress.switch_config"].params)
        assert params["membership_timeout_us"] == emu_options.membership_timeout_us == DEFAULT_TIMEOUT * 1e6, name
