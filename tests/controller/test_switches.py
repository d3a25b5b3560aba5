"""The controller against real ``p4mcc switch`` processes over P4Runtime.

Two or three switch processes on loopback; the controller pushes the
pipeline and state, reads it back, re-applies (nothing to do), survives a
switch restart, reports another primary, and rejects bad input with one
line naming switch, entity and detail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from p4mcc.controller import fleet
from p4mcc.controller.desired import desired_state, session_from_scenario
from p4mcc.controller.errors import SwitchFault
from p4mcc.controller.events import EventLog
from p4mcc.controller.finsy_codec import canonical
from p4mcc.controller.pipeline import builtin_pipeline
from p4mcc.scenario.control import load_scenario_topology


run_ctl = None  # set by the ``net`` fixture (conftest helpers)

HOSTS = {"h1": {"ip": "10.0.0.1/24"}, "h2": {"ip": "10.0.0.2/24"}, "h3": {"ip": "10.0.0.3/24"}}
LINKS = ["h1 s1-p1", "s1-p2 s2-p2", "h2 s2-p1", "h3 s2-p3"]
SESSIONS = [
    {"name": "m", "protocol": "mtcp", "sender": "h1", "receivers": ["h2", "h3"], "group": "239.1.1.1",
     "session_id": 7},
    {"name": "t", "protocol": "tfmcc", "sender": "h2", "receivers": ["h1", "h3"], "group": "239.1.1.2",
     "session_id": 8},
]


def _links() -> list[list[str]]:
    return [ln.split() for ln in LINKS]


@pytest.fixture
def net(tmp_path: Path, switch_pair, h):
    global run_ctl
    run_ctl = h.run_ctl
    sws = switch_pair
    for sp in sws:
        if sp.proc is None or sp.proc.poll() is not None:
            sp.start()
    h.reset_switches(sws)
    topo_file = h.write_topology(tmp_path / "scn.json", sws, HOSTS, _links(), SESSIONS)
    return tmp_path, topo_file, sws


def _desired(topo_file: Path):
    """What ``p4mcc ctl apply`` wants by default: policing sized per receiving host."""
    from p4mcc.controller.desired import DesiredOptions
    from p4mcc.controller.policing import host_budgets

    topo, scn = load_scenario_topology(topo_file)
    budgets = {h: b for h, b in host_budgets(scn.topology, scn.sessions).items()
               if any(h in s.receivers for s in scn.sessions)}
    return topo, desired_state(topo, [session_from_scenario(s) for s in scn.sessions],
                               DesiredOptions(feedback_by_host=budgets))


async def _read_back(sw_proc, want):
    sw = await fleet.open_switch(fleet.Target(sw_proc.name, sw_proc.address), None, election_id=1,
                                 need_primary=False)
    try:
        want_c = canonical(want, sw.p4info)
        return want_c, await fleet.read_state(sw, want_c)
    finally:
        await fleet.close_switch(sw)


def test_apply_then_read_back_equals_desired_state(net) -> None:
    cwd, topo_file, sws = net
    r = run_ctl("--topology", str(topo_file), "apply", cwd=cwd)
    assert r.returncode == 0, r.stderr
    _, desired = _desired(topo_file)
    for sp in sws:
        want, got = asyncio.run(_read_back(sp, desired[sp.name]))
        assert got.entries == want.entries
        assert got.groups == want.groups
        assert got.defaults == want.defaults
        assert got.meters == want.meters
        assert got.digests == want.digests
    # s2 carries session 7 (from h1) toward h2 (p1) and h3 (p3), upstream p2
    r = run_ctl("--topology", str(topo_file), "groups", "--json", cwd=cwd)
    rows = [g for g in json.loads(r.stdout)["groups"] if g["switch"] == "s2" and g["group"] == "239.1.1.1"]
    assert rows == [{"switch": "s2", "mgid": 2, "group": "239.1.1.1", "upstream_port": 2, "ports": [1, 3]}]


def test_second_apply_writes_nothing(net) -> None:
    cwd, topo_file, _ = net
    first = run_ctl("--topology", str(topo_file), "apply", cwd=cwd)
    assert first.returncode == 0, first.stderr
    second = run_ctl("--topology", str(topo_file), "apply", "--json", cwd=cwd)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)["switches"]
    assert {k: (v["insert"], v["modify"], v["delete"]) for k, v in out.items()} == {"s1": (0, 0, 0), "s2": (0, 0, 0)}
    assert "s1: wrote 0 inserts, 0 modifies, 0 deletes" in run_ctl(
        "--topology", str(topo_file), "apply", cwd=cwd).stdout


def test_dry_run_lists_the_difference_and_writes_nothing(net) -> None:
    cwd, topo_file, sws = net
    r = run_ctl("--topology", str(topo_file), "apply", "--dry-run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "  + MccIngress.sessions [hdr.mcc.session_id=7] -> MccIngress.assist_aggregate(gidx=0, sidx=0)" in r.stdout
    first = r.stdout.splitlines()[0]
    assert first.startswith("s1: would write ") and "pipeline" not in first  # the pipeline is current
    again = run_ctl("--topology", str(topo_file), "apply", "--dry-run", cwd=cwd)
    assert again.stdout == r.stdout  # nothing was written


def test_switch_without_pipeline_is_named(tmp_path: Path, switches, h) -> None:
    (fresh,) = switches(1)
    topo_file = h.write_topology(tmp_path / "one.json", [fresh], {"h1": {}}, [["h1", "s1-p1"]])
    r = h.run_ctl("--topology", str(topo_file), "apply", "--dry-run", cwd=tmp_path)
    assert r.stdout.splitlines()[0].endswith("would be pushed (switch state is then rebuilt)")
    r = h.run_ctl("--topology", str(topo_file), "tables", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == "s1: pipeline: switch has no pipeline (run p4mcc ctl apply)"


def test_changed_session_is_a_small_diff(net) -> None:
    cwd, topo_file, _ = net
    assert run_ctl("--topology", str(topo_file), "apply", cwd=cwd).returncode == 0
    r = run_ctl("--topology", str(topo_file), "sessions", "add", "9", "--source", "h3", "--group", "239.1.1.9",
                "--mode", "off", cwd=cwd)
    assert r.returncode == 0, r.stderr
    # a replication-only group: one PRE group and four group-table entries per switch on its tree
    assert "s1: wrote 5 inserts, 0 modifies, 0 deletes" in r.stdout
    assert "s2: wrote 5 inserts, 0 modifies, 0 deletes" in r.stdout
    r = run_ctl("--topology", str(topo_file), "sessions", "--json", cwd=cwd)
    sessions = {s["session_id"]: s for s in json.loads(r.stdout)["sessions"]}
    assert sessions[7]["mode"] == "aggregate" and sorted(sessions[7]["switches"]) == ["s1", "s2"]
    assert sessions[8]["mode"] == "filter"
    assert sessions[9]["mode"] == "off" and sessions[9]["switches"] == {}
    r = run_ctl("--topology", str(topo_file), "sessions", "del", "9", cwd=cwd)
    assert r.returncode == 0 and "s2: wrote 0 inserts, 0 modifies, 5 deletes" in r.stdout


def test_hand_made_group_add_and_delete(net) -> None:
    cwd, topo_file, _ = net
    assert run_ctl("--topology", str(topo_file), "apply", cwd=cwd).returncode == 0
    r = run_ctl("--topology", str(topo_file), "groups", "add", "100", "--ports", "s2-p1", "s2-p3", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "s2: wrote 1 inserts, 0 modifies, 0 deletes" in r.stdout
    r = run_ctl("--topology", str(topo_file), "groups", cwd=cwd)
    assert any(line.split()[:2] == ["s2", "100"] and line.split()[-1] == "1,3" for line in r.stdout.splitlines())
    # apply keeps hand-made state (it is part of the desired state now)
    r = run_ctl("--topology", str(topo_file), "apply", cwd=cwd)
    assert "s2: wrote 0 inserts, 0 modifies, 0 deletes" in r.stdout
    r = run_ctl("--topology", str(topo_file), "groups", "del", "100", cwd=cwd)
    assert r.returncode == 0 and "s2: wrote 0 inserts, 0 modifies, 1 deletes" in r.stdout


@pytest.mark.parametrize(
    "args,line",
    [
        (["tables", "--switch", "s9"], "s9: switch: unknown switch (known: s1, s2)"),
        (["groups", "add", "70000", "--ports", "s1-p1"], "group 70000: id out of range (1..65535)"),
        (["groups", "add", "3600", "--ports", "s1-p1"],
         "group 3600: ids from 3584 up are the controller's port-set groups"),
        (["groups", "add", "50", "--ports", "s1-p9"], "s1: group 50: port s1-p9 is not in the topology (s1 has ports 1, 2)"),
        (["groups", "add", "50", "--ports", "s7-p1"], "s7: group 50: unknown switch (known: s1, s2)"),
        (["sessions", "add", "30", "--source", "h9", "--group", "239.9.9.9"],
         "p4mcc ctl: session 30: unknown source host 'h9'"),
        (["--target", "bmv2", "--bmv2-json", "/nonexistent/mcc.json", "apply"],
         "p4mcc ctl: BMv2 JSON file /nonexistent/mcc.json is missing; compile p4src/mcc.p4 with p4c "
         "(p4c-bm2-ss --p4runtime-files mcc.p4info.txtpb -o mcc.json mcc.p4) or pass its path"),
    ],
)
def test_bad_input_is_one_line_and_status_2(net, args: list[str], line: str) -> None:
    cwd, topo_file, _ = net
    r = run_ctl("--topology", str(topo_file), *args, cwd=cwd)
    assert r.returncode == 2
    assert r.stderr.strip() == line
    assert "Traceback" not in r.stderr


def test_switch_refusal_names_switch_entity_and_p4runtime_detail(net) -> None:
    cwd, topo_file, sws = net
    assert run_ctl("--topology", str(topo_file), "apply", cwd=cwd).returncode == 0
    # the second switch given a wrong device id: the switch's own NOT_FOUND is reported
    r = run_ctl("--topology", str(topo_file), "--switch", f"s2={sws[1].address}@3", "tables", cwd=cwd)
    assert r.returncode == 2
    assert r.stderr.strip() == "s2: connect: NOT_FOUND: unknown device id 3 (this switch is 0)"
    assert "s1" in r.stdout  # the healthy switch still answered


def test_unreachable_switch_is_retried_then_named(tmp_path: Path, h) -> None:
    port = h.free_port()
    r = h.run_ctl_process("--switch", f"s5=127.0.0.1:{port}", "--retry", "0.6", "tables", cwd=tmp_path)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert line.startswith(f"s5: connect: unreachable at 127.0.0.1:{port} after ")
    assert int(line.split(" after ")[1].split()[0]) >= 2  # retried with backoff
    assert "\n" not in line and "Traceback" not in r.stderr


def test_tables_and_counters_text_and_json(net) -> None:
    cwd, topo_file, _ = net
    assert run_ctl("--topology", str(topo_file), "apply", cwd=cwd).returncode == 0
    r = run_ctl("--topology", str(topo_file), "tables", "--switch", "s2", cwd=cwd)
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["switch", "table", "match", "action"]
    assert ["s2", "MccIngress.ipv4_fwd", "dst_addr=10.0.0.1", "MccIngress.forward(port=2)"] in [ln.split() for ln in lines]
    assert ["s2", "MccIngress.sessions", "hdr.mcc.session_id=8",
            "MccIngress.assist_filter(sidx=1,", "window_us=0)"] in [ln.split() for ln in lines]
    r = run_ctl("--topology", str(topo_file), "tables", "--switch", "s2", "--json", cwd=cwd)
    rows = json.loads(r.stdout)["tables"]["s2"]
    assert {"table": "MccIngress.ipv4_fwd", "default": False, "match": {"dst_addr": "10.0.0.3"},
            "action": "MccIngress.forward", "params": {"port": "3"}, "priority": 0, "const": False} in rows
    r = run_ctl("--topology", str(topo_file), "counters", "--switch", "s1", "--json", cwd=cwd)
    assert r.returncode == 0 and json.loads(r.stdout) == {"counters": [], "errors": []}
    r = run_ctl("--topology", str(topo_file), "counters", "--switch", "s1", "--all", "--json", cwd=cwd)
    names = {c["counter"] for c in json.loads(r.stdout)["counters"]}
    assert {"port_rx", "group_data_tx", "session_feedback_rx"} <= names


def test_restarted_switch_gets_its_state_back(net) -> None:
    cwd, topo_file, sws = net
    topo, desired = _desired(topo_file)
    events: list[dict] = []
    log = EventLog(cwd / "events.jsonl", sink=events.append)
    targets = [fleet.Target(s.name, s.address) for s in topo.switches.values()]
    ctl = fleet.Controller(targets, desired, builtin_pipeline(), log)

    async def until(pred, timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not pred():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out; events: {[(e['switch'], e['event']) for e in events]}")
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        task = asyncio.create_task(ctl.run())
        try:
            await until(lambda: {e["switch"] for e in events if e["event"] == "synced"} == {"s1", "s2"}, 20)
            sws[1].stop()
            sws[1].start()  # same address, empty switch
            await until(lambda: any(e["switch"] == "s2" and e["event"] == "restored" for e in events), 40)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    kinds = [(e["switch"], e["event"]) for e in events]
    assert ("s2", "restarted") in kinds
    restored = next(e for e in events if e["switch"] == "s2" and e["event"] == "restored")
    assert restored["inserts"] > 0 and restored["deletes"] == 0
    want, got = asyncio.run(_read_back(sws[1], desired["s2"]))
    assert got.entries == want.entries and got.groups == want.groups


def test_another_primary_is_reported(net, h) -> None:
    cwd, topo_file, sws = net
    topo, desired = _desired(topo_file)
    events: list[dict] = []
    log = EventLog(None, sink=events.append)
    ctl = fleet.Controller([fleet.Target("s1", sws[0].address)], {"s1": desired["s1"]}, builtin_pipeline(), log,
                           election_id=10)

    async def scenario() -> tuple[int, str]:
        task = asyncio.create_task(ctl.run())
        try:
            while not any(e["event"] == "synced" for e in events):
                await asyncio.sleep(0.05)
            # a one-shot apply with a lower election id cannot become primary
            proc = await asyncio.create_subprocess_exec(
                *h.P4MCC, "ctl", "--topology", str(topo_file), "--election-id", "5",
                "apply", cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            _out, err = await proc.communicate()
            # a controller with a higher id takes primary: the running one reports it
            sw = await fleet.open_switch(fleet.Target("s1", sws[0].address), None, election_id=20)
            try:
                while not any(e["event"] == "primary_lost" for e in events):
                    await asyncio.sleep(0.05)
            finally:
                await fleet.close_switch(sw)
            return proc.returncode or 0, err.decode()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    code, err = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert code == 2
    assert "s1: arbitration: another controller is primary (election id 10; ours 5)" in err
    lost = next(e for e in events if e["event"] == "primary_lost")
    assert lost["switch"] == "s1" and lost["primary_election_id"] == 20


def test_a_primary_with_our_own_election_id_is_waited_for(net) -> None:
    """Two one-shot commands in a row use the same election id; when the
    switch has not yet handled the first one's closed stream, the second
    waits for it (up to ``retry_for``) instead of failing arbitration.  (40:
    above the ids the other tests leave behind, whose streams may still be
    closing.)"""
    _cwd, _topo_file, sws = net
    target = fleet.Target("s1", sws[0].address)

    async def scenario() -> tuple[bool, str]:
        holder = await fleet.open_switch(target, None, election_id=40)

        async def release() -> None:
            await asyncio.sleep(0.5)
            await fleet.close_switch(holder)

        releasing = asyncio.create_task(release())
        sw = await fleet.open_switch(target, None, election_id=40, retry_for=10.0)
        became_primary = sw.is_primary
        await fleet.close_switch(sw)
        await releasing
        # one that stays primary is still reported once the wait is over
        holder = await fleet.open_switch(target, None, election_id=40)
        try:
            await fleet.open_switch(target, None, election_id=40, retry_for=0.5)
            err = ""
        except SwitchFault as exc:
            err = str(exc)
        finally:
            await fleet.close_switch(holder)
        return became_primary, err

    became_primary, err = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert became_primary
    assert err == "s1: arbitration: another controller is primary (election id 40; ours 40); " \
                  "retry with a higher --election-id"


def test_watch_renders_one_refresh_of_rates(net) -> None:
    cwd, topo_file, _ = net
    assert run_ctl("--topology", str(topo_file), "apply", cwd=cwd).returncode == 0
    r = run_ctl("--topology", str(topo_file), "watch", "--count", "1", "--interval", "0", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "p4mcc ctl watch" in r.stdout and "pkt/s" in r.stdout


def test_events_once_prints_the_log_as_text_and_json(net) -> None:
    cwd, topo_file, _ = net
    log = EventLog(cwd / ".p4mcc" / "ctl-events.jsonl", clock=lambda: 0.0)
    log.emit("s1", "membership", group="239.1.1.1", port=3, change="join", members=[3])
    log.emit("s2", "restarted", detail="5 entities written earlier are gone")
    log.close()
    r = run_ctl("--topology", str(topo_file), "events", "--once", "--json", cwd=cwd)
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(e["switch"], e["event"]) for e in recs] == [("s1", "membership"), ("s2", "restarted")]
    r = run_ctl("--topology", str(topo_file), "events", "--once", cwd=cwd)
    assert r.stdout.splitlines()[0].split()[1:] == ["s1", "membership", "group=239.1.1.1", "port=3", "change=join",
                                                    "members=[3]"]
