"""Every bad input the users found gets one clear line and a nonzero exit, never a traceback.

Each case runs the real command line (``p4mcc.cli.main.main``) in process; one
case per command also runs as a subprocess, the way a user meets it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4mcc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def one_line_error(capsys, argv: list[str], rc: int | None = None) -> str:
    code = main(argv)
    assert code != 0 if rc is None else code == rc
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err
    return err


def scenario(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return str(p)


# -- scenarios ---------------------------------------------------------------

def test_a_huge_generated_tree_is_refused_before_it_is_built(tmp_path, capsys):
    s = scenario(tmp_path, "topology: {generate: {kind: kary_tree, receivers: 100000000}}\n"
                           "sessions: [{protocol: tfmcc, sender: snd, receivers: [r1]}]\n")
    err = one_line_error(capsys, ["sim", s], rc=2)
    assert "topology.generate.receivers: 100000000 is outside 0..10000" in err


def test_a_deep_tree_is_refused_by_its_switch_count(tmp_path, capsys):
    s = scenario(tmp_path, "topology: {generate: {kind: kary_tree, receivers: 4, k: 8, depth: 12}}\n")
    err = one_line_error(capsys, ["sim", s], rc=2)
    assert "topology.generate.depth: a 8-ary tree of depth 12 has more than 10000 switches" in err


def test_a_generated_links_bad_rate_delay_loss_and_queue_are_named(tmp_path, capsys):
    s = scenario(tmp_path, "topology: {generate: {kind: dumbbell, receivers: 2, rate: 0Mbps,\n"
                           "  delay: -0.02, loss: 2, queue: -4, access_rate: fast}}\n"
                           "sessions: [{protocol: tfmcc, sender: snd1, receivers: [r1, r2]}]\n")
    err = one_line_error(capsys, ["sim", s], rc=2)
    for line in ("topology.generate.rate: must be positive",
                 "topology.generate.access_rate: cannot read 'fast'",
                 "topology.generate.delay: must not be negative",
                 "topology.generate.loss: 2 is not a probability in [0, 1]",
                 "topology.generate.queue.packets: must be at least 1"):
        assert line in err
    s = scenario(tmp_path, "topology: {generate: {kind: star, receivers: 2, loss: [0.01, 1.5]}}\n")
    assert "topology.generate.loss[1]: 1.5 is not a probability" in one_line_error(capsys, ["sim", s], rc=2)


def test_a_tutorials_topology_with_odd_switch_options_and_commands_is_named(tmp_path, capsys):
    topo = tmp_path / "topology.json"
    topo.write_text('{"hosts": {"h1": {"ip": "10.0.1.1/24", "commands": "route add default"}},'
                    ' "switches": {"s1": {}, "s2": 5}, "links": [["h1", "s1"], ["s1", "s2"]]}')
    err = one_line_error(capsys, ["sim", str(topo)], rc=2)
    assert "topology.hosts.h1.commands: expected a list of command lines, got str" in err
    assert "topology.switches.s2: expected a mapping of switch options, got int 5" in err


def test_a_key_given_twice_is_refused_by_its_position(tmp_path, capsys):
    s = scenario(tmp_path, "duration: 5\ntopology: {generate: {kind: star, receivers: 2}}\nduration: 60\n")
    assert "not valid YAML/JSON at line 3, column 1: key 'duration' given twice" in one_line_error(
        capsys, ["sim", s], rc=2)
    j = tmp_path / "s.json"
    j.write_text('{"duration": 5, "duration": 60}')
    assert "key 'duration' given twice in one object" in one_line_error(capsys, ["sim", str(j)], rc=2)
    sw = tmp_path / "sweep.yaml"
    sw.write_text(f"base: {s}\naxes:\n  seed: [1]\n  seed: [2]\n")
    assert "at line 4, column 3: key 'seed' given twice" in one_line_error(capsys, ["sweep", str(sw)], rc=2)


def test_a_merge_key_may_still_be_overridden(tmp_path):
    from p4mcc.scenario.model import read_document

    p = tmp_path / "m.yaml"
    p.write_text("base: &b {rate: 1Mbps, delay: 5ms}\nlink: {<<: *b, delay: 9ms}\n")
    assert read_document(p)["link"] == {"rate": "1Mbps", "delay": "9ms"}


@pytest.mark.parametrize("flags,needle", [
    (["--duration", "-5"], "--duration: must be a positive, finite number of seconds, got -5.0"),
    (["--duration", "inf"], "--duration: must be a positive, finite number of seconds, got inf"),
    (["--seed", "-1"], "--seed: expected an integer 0..2**64-1, got -1"),
])
def test_a_bad_override_is_named_before_the_run(tmp_path, flags, needle, capsys):
    s = scenario(tmp_path, "topology: {generate: {kind: star, receivers: 2}}\n")
    assert needle in one_line_error(capsys, ["sim", s, "--out", str(tmp_path / "out"), *flags], rc=2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("field,needle", [
    ("metrics_interval: 1e-6", "metrics_interval: must be at least 1 ms, got 1e-06 s"),
    ("membership: {timeout: 10, query_interval: 0.05}",
     "membership.query_interval: must be longer than IGMP's shortest response time (0.1 s), got 0.05 s"),
    ("membership: {timeout: 0.2}", "membership.timeout: 0.2 s gives a query interval of 0.0649 s"),
    ("faults: [{type: link_down, target: [snd, s1], at: 1, every: 1e-6, for: 1e-7}]",
     "faults[0].every: must be at least 1 ms, got 1e-06 s"),
])
def test_a_sampling_or_query_period_finer_than_it_can_mean_is_refused(tmp_path, field, needle, capsys):
    s = scenario(tmp_path, f"{field}\ntopology: {{generate: {{kind: star, receivers: 2}}}}\n")
    assert needle in one_line_error(capsys, ["sim", s], rc=2)


@pytest.mark.parametrize("text,needles", [
    pytest.param("topology: {hosts: [h1, r1], switches: [s1, s1], links: [[h1, s1], [r1, s1]]}\n"
                 "sessions: [{protocol: tfmcc, sender: h1, receivers: [r1]}]\n"
                 "tcp_flows: [{src: h1, dst: r1, rwnd: 1000}]\n",
                 ["topology.switches[1]: 's1' is listed twice",
                  "tcp_flows[0].rwnd: 1000 bytes is less than one segment (1460 bytes)"],
                 id="node-listed-twice-and-window-below-one-segment"),
    pytest.param("topology: {generate: {kind: star, receivers: 2}}\n"
                 "sessions: [{protocol: tfmcc, sender: snd, receivers: [r1, r2],\n"
                 "            join_at: {r1: 20}, leave_at: {r1: 10, r2: 0}}]\n",
                 ["sessions[0].leave_at.r1: 10 s is not after r1's join at 20 s",
                  "sessions[0].leave_at.r2: 0 s is not after r2's join at 0 s"],
                 id="leaving-before-joining"),
])
def test_every_bad_field_of_a_scenario_is_named(tmp_path, capsys, text, needles):
    err = one_line_error(capsys, ["sim", scenario(tmp_path, text)], rc=2)
    for needle in needles:
        assert needle in err


def test_a_topology_file_that_is_not_one_is_named_never_shown(tmp_path, capsys):
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hash-one:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n")
    s = scenario(tmp_path, f"topology: {secret}\n")
    err = one_line_error(capsys, ["sim", s], rc=2)
    assert "topology:" in err and "is this the right file?" in err
    assert "hash-one" not in err and "daemon" not in err


def test_a_scenario_that_is_not_one_is_never_shown(tmp_path, capsys):
    secret = tmp_path / "secret.yaml"
    secret.write_text("key: [unclosed hash-one\n")
    err = one_line_error(capsys, ["sim", str(secret)], rc=2)
    assert "not valid YAML/JSON at line" in err and "hash-one" not in err
    plain = tmp_path / "plain.yaml"
    plain.write_text("just some words hash-two\n")
    err = one_line_error(capsys, ["sim", str(plain)], rc=2)
    assert "hash-two" not in err


def test_etc_shadow_as_topology_prints_none_of_it(tmp_path, capsys):
    s = scenario(tmp_path, "topology: /etc/shadow\n")
    err = one_line_error(capsys, ["sim", s], rc=2).replace(s, "SCENARIO")
    assert err.count("\n") <= 1 and "topology" in err
    try:
        lines = Path("/etc/shadow").read_text().splitlines()
    except OSError:
        lines = []  # unreadable without root: the error is then "Permission denied"
    for line in lines:
        assert line not in err
        for field in line.split(":"):
            if len(field) >= 6:  # user names, hashes; not short numbers
                assert field not in err


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null"])
def test_a_device_as_scenario_is_refused_unread(path, capsys):
    err = one_line_error(capsys, ["sim", path], rc=2)
    assert f"{path}: not a regular file" in err


# -- p4mcc report ------------------------------------------------------------

HEADER = "time,kind,flow,node,metric,value\n"


@pytest.mark.parametrize("summary,timeseries,needle", [
    (None, None, "no summary.json (not a results folder)"),
    ("{}", None, "no timeseries.csv (not a results folder)"),
    ("{bad", HEADER, "summary.json: Expecting property name"),
    ("[]", HEADER, "summary.json holds a list, not a run's summary"),
    ("{}", "time,value\n", "timeseries.csv has no kind, flow, node, metric column"),
    ("{}", HEADER + "1,x,y,z,m,abc\n", "timeseries.csv line 2: not a sample"),
])
def test_a_half_written_results_folder_gets_one_line(tmp_path, summary, timeseries, needle, capsys):
    sizes = {}
    for name, text in (("summary.json", summary), ("timeseries.csv", timeseries)):
        if text is not None:
            (tmp_path / name).write_text(text)
            sizes[name] = (tmp_path / name).stat().st_size
    # marked complete: what is checked here is what the files hold
    (tmp_path / "complete.json").write_text(json.dumps({"files": sizes}))
    err = one_line_error(capsys, ["report", str(tmp_path)], rc=1)
    assert err == f"p4mcc report: {tmp_path}: {needle}" or (needle in err and "\n" not in err)


# -- p4mcc ctl ---------------------------------------------------------------

@pytest.mark.parametrize("value, needle", [("-5", "-5 is outside 1..2^128-1"), ("0", "0 is outside 1..2^128-1"),
                                           (str(1 << 128), f"{1 << 128} is outside 1..2^128-1"),
                                           ("x", "'x' is not a whole number")])
def test_an_election_id_outside_uint128_is_refused_before_connecting(value, needle, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ctl", "--switch", "s1=127.0.0.1:1", "--election-id", value, "groups"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --election-id: {needle}" in err and "connect" not in err


@pytest.mark.parametrize("value", ["-1", "0.3", "nan", "inf"])
def test_a_membership_timeout_too_short_to_query_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ctl", "--switch", "s1=127.0.0.1:1", "--membership-timeout", value, "groups"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --membership-timeout: {value}: 0 (no ageing) or a timeout" in err and "connect" not in err


# -- p4mcc check / stf / switch inputs ---------------------------------------

@pytest.mark.parametrize("argv", [["check", "/dev/zero"], ["stf", "/dev/zero", "x.stf"],
                                  ["switch", "/dev/zero", "--grpc-server-addr", "127.0.0.1:0"]])
def test_a_device_as_p4_source_is_refused_unread(argv, capsys):
    err = one_line_error(capsys, argv, rc=2)
    assert err == f"p4mcc {argv[0]}: /dev/zero: not a regular file"


def test_an_oversized_p4_source_is_refused(tmp_path, capsys):
    from p4mcc.hosts.input_files import input_file_problem

    big = tmp_path / "big.p4"
    big.write_text("// x\n" * 500)
    assert input_file_problem(str(big), 1000) == f"{big}: 2500 bytes, more than the 0 MiB an input file may have"


def test_check_dev_zero_as_a_user_runs_it():
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "check", "/dev/zero"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert r.returncode == 2 and r.stderr.strip() == "p4mcc check: /dev/zero: not a regular file"


# -- p4mcc host ---------------------------------------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["recv", "--group", "10.0.0.1", "--sender", "127.0.0.1"], "--group 10.0.0.1 is not a multicast address"),
    (["recv", "--session", "-4", "--sender", "127.0.0.1"], "--session -4 is outside 1..4294967295"),
    (["send", "--group", "10.1.1.1"], "--group 10.1.1.1 is not a multicast address"),
    (["send", "--local", "239.1.1.1"], "--local 239.1.1.1 is a multicast address"),
    (["send", "--duration", "0"], "--duration 0 must be a positive number"),
])
def test_bad_host_flags_stop_before_the_agent_runs(argv, needle, capsys):
    err = one_line_error(capsys, ["host", *argv, "--proto", "tfmcc"], rc=2)
    assert needle in err and "\n" not in err


@pytest.mark.parametrize("name,text,needle", [
    ("twice.json", '{"p": 0.5, "p": 0.9}', "twice.json: parameter 'p' given twice"),
    ("twice.toml", "p = 0.5\np = 0.6\n", "twice.toml: not valid TOML: Cannot overwrite a value"),
    ("missing.json", None, "missing.json: cannot read: No such file or directory"),
    ("/dev/zero", None, "/dev/zero: not a regular file"),
])
def test_a_bad_params_file_stops_the_agent_unread(tmp_path, name, text, needle, capsys):
    path = Path(name) if name.startswith("/") else tmp_path / name
    if text is not None:
        path.write_text(text)
    err = one_line_error(capsys, ["host", "recv", "--proto", "webrc", "--sender", "127.0.0.1",
                                  "--duration", "0.1", "--params", str(path)], rc=2)
    assert needle in err and "\n" not in err


def test_host_recv_with_a_unicast_group_exits_nonzero_as_a_user_runs_it():
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "host", "recv", "--proto", "tfmcc",
                        "--group", "10.0.0.1", "--sender", "127.0.0.1", "--duration", "2"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "p4mcc host recv: --group 10.0.0.1 is not a multicast address (224.0.0.0/4)"


# -- p4mcc switch (the P4Runtime address and CPU port cases are in
#    tests/p4switch_p4rt/test_server_limits.py) --------------------------------

def test_switch_bad_address_as_a_user_runs_it():
    r = subprocess.run([sys.executable, "-m", "p4mcc.cli.main", "switch", "--no-p4", "--grpc-server-addr",
                        "nohost.invalid:1"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("p4mcc switch: --grpc-server-addr 'nohost.invalid:1': cannot resolve host")


def test_sessions_whose_groups_overlap_get_one_line_not_a_traceback(tmp_path, capsys):
    """WEBRC's wave channels take the groups after its base group; a second
    session on one of them is a scenario mistake, reported in one line."""
    s = scenario(tmp_path, "duration: 1\n"
                           "topology: {generate: {kind: star, receivers: 2}}\n"
                           "sessions:\n"
                           "  - {name: a, protocol: webrc, sender: snd, receivers: [r1], group: 239.1.1.1}\n"
                           "  - {name: b, protocol: tfmcc, sender: snd, receivers: [r2], group: 239.1.1.2}\n")
    err = one_line_error(capsys, ["sim", s, "--out", str(tmp_path / "out"), "--quiet"], rc=2)
    assert "group 239.1.1.2 is already used by another session" in err
