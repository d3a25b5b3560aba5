"""Packets through controller-configured switches: hosts in network namespaces.

``h1 -- s1 -- s2 -- h2``: two hosts in their own namespaces, two ``p4mcc
switch`` processes, veth pairs for the three cables.  The controller (the
long-running ``Controller``, as ``p4mcc ctl events`` runs it) pushes the
pipeline and state to both; then:

* ``h2`` joins the group with an ordinary socket call; its kernel's IGMP
  report reaches s2 (port 1), and s2 proxies it up the port the controller
  named as upstream to s1 (port 2): both switches' membership digests reach
  the event log, and ``p4mcc ctl members`` shows them;
* a UDP datagram ``h1`` sends to the group arrives at ``h2`` through both
  switches: the group entries and PRE groups the controller wrote replicate it;
* a unicast datagram from ``h2`` to ``h1`` arrives (ARP answered by the
  switches' proxy entries, forwarding by the host routes);
* when ``h2``'s receiver exits, the leave climbs to s1 and ``members`` is empty.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from p4mcc.controller import fleet
from p4mcc.controller.desired import desired_state, session_from_scenario
from p4mcc.controller.events import EventLog
from p4mcc.controller.pipeline import builtin_pipeline
from p4mcc.scenario.control import load_scenario_topology

GROUP = "239.1.2.3"
PORT = 5123


def _can_use_netns() -> str | None:
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    if shutil.which("ip") is None or shutil.which("ethtool") is None:
        return "needs iproute2 (ip) and ethtool"
    return None


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def two_hosts(tmp_path: Path, h):
    why = _can_use_netns()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:6]
    # host -> (namespace, ip, mac, switch-side interface)
    hosts = {1: (f"c{tag}h1", "10.0.0.1", "08:00:00:00:00:01", f"c{tag}a1"),
             2: (f"c{tag}h2", "10.0.0.2", "08:00:00:00:00:02", f"c{tag}b1")}
    created_ns, created_links = [], []
    sws = []
    try:
        for port, (ns, ip, mac, sw_if) in hosts.items():
            host_if = f"c{tag}e{port}"
            sh("ip", "netns", "add", ns)
            created_ns.append(ns)
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", host_if)
            created_links.append(sw_if)
            sh("ip", "link", "set", host_if, "netns", ns)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", host_if, "name", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "address", mac)
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "ip", "route", "add", "224.0.0.0/4", "dev", "eth0")
            # the kernel leaves UDP checksums to a veth "offload" that never
            # happens; frames a switch re-sends would carry partial sums
            sh("ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off", "rx", "off")
        # the cable between the two switches: s1-p2 <-> s2-p2
        sh("ip", "link", "add", f"c{tag}a2", "type", "veth", "peer", "name", f"c{tag}b2")
        created_links.append(f"c{tag}a2")
        for ifname in (f"c{tag}a1", f"c{tag}b1", f"c{tag}a2", f"c{tag}b2"):
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1")
            sh("ip", "link", "set", ifname, "up")
        for name, side in (("s1", "a"), ("s2", "b")):
            sw = h.SwitchProc(name, h.free_port(), ["-i", f"1@c{tag}{side}1", "-i", f"2@c{tag}{side}2"])
            sw.start()
            sws.append(sw)
        topo_file = h.write_topology(
            tmp_path / "scn.json", sws,
            {"h1": {"ip": "10.0.0.1/24", "mac": hosts[1][2]}, "h2": {"ip": "10.0.0.2/24", "mac": hosts[2][2]}},
            [["h1", "s1-p1"], ["s1-p2", "s2-p2"], ["h2", "s2-p1"]],
            [{"name": "m", "protocol": "mtcp", "sender": "h1", "receivers": ["h2"], "group": GROUP,
              "session_id": 3}],
        )
        yield tmp_path, topo_file, sws, {p: v[0] for p, v in hosts.items()}
    finally:
        for sw in sws:
            sw.stop()
        for link in created_links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in created_ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


RECEIVER = r"""
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[2])))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton(sys.argv[1]), socket.inet_aton("10.0.0.2")))
print("joined", flush=True)
s.settimeout(20)
data, src = s.recvfrom(2048)
print(data.decode(), src[0], flush=True)
"""

UNICAST_RECEIVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(20)
data, src = s.recvfrom(2048)
print(data.decode(), src[0], flush=True)
"""

SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 4)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(sys.argv[3]))
s.sendto(sys.argv[4].encode(), (sys.argv[1], int(sys.argv[2])))
"""


async def _in_ns(ns: str, script: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", ns, sys.executable, "-c", script, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


def test_join_climbs_the_tree_and_data_comes_down(two_hosts, h) -> None:
    cwd, topo_file, sws, ns = two_hosts
    topo, scn = load_scenario_topology(topo_file)
    desired = desired_state(topo, [session_from_scenario(s) for s in scn.sessions])
    events: list[dict] = []
    log = EventLog(cwd / ".p4mcc" / "ctl-events.jsonl", sink=events.append)
    ctl = fleet.Controller([fleet.Target(sw.name, sw.address) for sw in sws], desired, builtin_pipeline(), log)

    async def wait_for(pred, timeout: float, what: str) -> dict:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            hit = next((e for e in events if pred(e)), None)
            if hit is not None:
                return hit
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no {what}; events: {events}")
            await asyncio.sleep(0.05)

    async def scenario() -> tuple[dict, str, str]:
        task = asyncio.create_task(ctl.run())
        try:
            await wait_for(lambda e: e["event"] == "synced" and e["switch"] == "s1", 20, "sync of s1")
            await wait_for(lambda e: e["event"] == "synced" and e["switch"] == "s2", 20, "sync of s2")
            rx = await _in_ns(ns[2], RECEIVER, GROUP, str(PORT))
            assert (await rx.stdout.readline()).decode().strip() == "joined"
            # h2's join arrives at s2 port 1; s2 proxies it up its port 2 to s1
            joined = await wait_for(lambda e: e["event"] == "membership" and e["switch"] == "s2", 20, "join at s2")
            proxied = await wait_for(lambda e: e["event"] == "membership" and e["switch"] == "s1", 20, "join at s1")
            members_json = await asyncio.to_thread(
                h.run_ctl, "--topology", str(topo_file), "members", "--json", cwd=cwd)
            members_text = await asyncio.to_thread(h.run_ctl, "--topology", str(topo_file), "members", cwd=cwd)
            tx = await _in_ns(ns[1], SENDER, GROUP, str(PORT), "10.0.0.1", "hello-group")
            await tx.wait()
            got, _ = await asyncio.wait_for(rx.communicate(), 20)
            urx = await _in_ns(ns[1], UNICAST_RECEIVER, str(PORT + 1))
            assert (await urx.stdout.readline()).decode().strip() == "ready"
            utx = await _in_ns(ns[2], SENDER, "10.0.0.1", str(PORT + 1), "10.0.0.2", "hello-unicast")
            await utx.wait()
            ugot, _ = await asyncio.wait_for(urx.communicate(), 20)
            # the receiver has exited: its kernel left the group
            left = await wait_for(lambda e: e["event"] == "membership" and e["change"] == "leave"
                                  and e["switch"] == "s1", 20, "leave proxied to s1")
            return joined, proxied, left, members_json, members_text, got.decode().strip(), ugot.decode().strip()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    joined, proxied, left, members_json, members_text, got, ugot = asyncio.run(scenario())
    log.close()
    assert (joined["group"], joined["port"], joined["change"], joined["members"]) == (GROUP, 1, "join", [1])
    assert (proxied["group"], proxied["port"], proxied["change"], proxied["members"]) == (GROUP, 2, "join", [2])
    assert (left["port"], left["members"]) == (2, [])
    assert got == "hello-group 10.0.0.1"
    assert ugot == "hello-unicast 10.0.0.2"
    assert json.loads(members_json.stdout)["members"] == {"s1": {GROUP: [2]}, "s2": {GROUP: [1]}}
    assert [ln.split() for ln in members_text.stdout.splitlines()[1:]] == [["s1", GROUP, "2"], ["s2", GROUP, "1"]]
    r = h.run_ctl("--topology", str(topo_file), "members", "--json", cwd=cwd)
    assert json.loads(r.stdout)["members"] == {}
    r = h.run_ctl("--topology", str(topo_file), "counters", "--json", cwd=cwd)
    rows = {(c["switch"], c["counter"], c["label"]): c["packets"] for c in json.loads(r.stdout)["counters"]}
    assert rows[("s1", "group_data_tx", GROUP)] == 1 and rows[("s2", "group_data_tx", GROUP)] == 1


def test_queries_keep_an_aged_membership_alive(two_hosts) -> None:
    """With a 1.5 s membership timeout, only the controller's queries (every
    0.4 s) keep h2's port a member: data sent 3.5 s after the join, well past
    the timeout, still arrives."""
    from p4mcc.controller.desired import DesiredOptions

    cwd, topo_file, sws, ns = two_hosts
    topo, scn = load_scenario_topology(topo_file)
    desired = desired_state(topo, [session_from_scenario(s) for s in scn.sessions],
                            DesiredOptions(membership_timeout_us=1_500_000, proxy_refresh_us=600_000))
    events: list[dict] = []
    ctl = fleet.Controller([fleet.Target(sw.name, sw.address) for sw in sws], desired, builtin_pipeline(),
                           EventLog(None, sink=events.append), query_interval=0.4)

    async def scenario() -> str:
        task = asyncio.create_task(ctl.run())
        try:
            while {e["switch"] for e in events if e["event"] == "synced"} != {"s1", "s2"}:
                await asyncio.sleep(0.05)
            rx = await _in_ns(ns[2], RECEIVER, GROUP, str(PORT))
            assert (await rx.stdout.readline()).decode().strip() == "joined"
            await asyncio.sleep(3.5)  # the behaviour under test: outliving the 1.5 s timeout
            tx = await _in_ns(ns[1], SENDER, GROUP, str(PORT), "10.0.0.1", "still-here")
            await tx.wait()
            got, _ = await asyncio.wait_for(rx.communicate(), 20)
            return got.decode().strip()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    assert asyncio.run(scenario()) == "still-here 10.0.0.1"
    assert not [e for e in events if e["event"] == "error"]
