"""A Mininet run with ``assistance: stamp`` on the built-in switch shows the
stamp in its captures, decoded by p4mcc's Wireshark dissector (root).

Two switches, a 2 Mb/s bottleneck from s1 to s2, a stamped TFMCC session
(its reports still filtered) beside a TCP flow. tshark with the generated
dissector (``hosts/wire_lua.py``) reads the pcaps of the bottleneck (s1's
side) and of a receiver's port (s2-p2):

* every TFMCC data message that left s1 carries ``p4mcc.stamp.queue`` >= 1
  (a stamping switch wrote it; senders write 0), and so does every one that
  reached the receiver;
* feedback is never stamped by a switch: a report's byte is its receivers'
  echo (docs/stamp.md, "Carried back"), 0 or a stamp no worse than the
  data those receivers got (its queue code at most the worst the data
  carried, its spare code at least the tightest);
* the share byte (``p4mcc.share``): from the bottleneck's first complete
  epochs on, the data carry s1's max-min share of the 2 Mb/s port, which
  two heavy flows (the session and the TCP flow) split, so it lies within
  [0.25, 2] Mb/s; a report echoes 0 or a share the data carried.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from p4mcc.hosts.wire import Share
from p4mcc.scenario.model import scenario_from_dict

pytestmark = [pytest.mark.root, pytest.mark.slow]

GROUP = "239.1.1.1"
TFMCC_DATA, TFMCC_REPORT = 0x21, 0x22


def scenario():
    return scenario_from_dict({
        "name": "stamp-capture",
        "duration": 8,
        "seed": 1,
        "topology": {
            "hosts": {"h1": {"ip": "10.0.1.1/24"}, "h3": {"ip": "10.0.1.3/24"},
                      "h4": {"ip": "10.0.2.4/24"}, "h8": {"ip": "10.0.2.8/24"}},
            "switches": {"s1": {}, "s2": {}},
            "link_defaults": {"rate": "100Mbps", "delay": "1ms", "queue": 100},
            "links": [{"a": "s1-p1", "b": "s2-p1", "rate": "2Mbps", "delay": "10ms", "queue": 30},
                      ["h1", "s1-p2"], ["h3", "s1-p3"], ["h4", "s2-p2"], ["h8", "s2-p3"]],
        },
        "sessions": [{"name": "m", "protocol": "tfmcc", "sender": "h1", "receivers": ["h4"],
                      "group": GROUP, "port": 5001, "assistance": "stamp"}],
        "tcp_flows": [{"name": "tcp", "src": "h3", "dst": "h8", "port": 5201}],
        "capture": {"ports": ["s1-p1", "s2-p2"]},
    })


def dissected(pcap: Path, lua: Path) -> list[tuple[int, int, int, int]]:
    """(msg_type, stamp.queue, stamp.spare, share) of every p4mcc message tshark decodes in ``pcap``."""
    proc = subprocess.run(
        ["tshark", "-r", str(pcap), "-X", f"lua_script:{lua}", "-Y", "p4mcc && !icmp", "-T", "fields",
         "-E", "separator=,", "-e", "p4mcc.msg_type", "-e", "p4mcc.stamp.queue", "-e", "p4mcc.stamp.spare",
         "-e", "p4mcc.share"],
        capture_output=True, text=True, timeout=120, check=True)
    rows = []
    for line in proc.stdout.splitlines():
        mtype, q, s, share = line.split(",")
        rows.append((int(mtype, 0), int(q, 0), int(s, 0), int(share, 0)))
    return rows


def test_stamped_run_shows_the_stamp_in_its_pcaps(mininet_ready: None, tmp_path: Path) -> None:
    from p4mcc.emulation.run import missing_requirements, run_emulation
    from p4mcc.hosts import wire_lua

    reason = missing_requirements(("tshark",))
    if reason:
        pytest.skip(reason)
    lua = wire_lua.write(tmp_path / "lua")
    run_emulation(scenario(), tmp_path / "run", progress=False, plots=False)
    pcaps = tmp_path / "run" / "pcaps"

    for name in ("s1-eth1_out.pcap", "s2-eth2_out.pcap"):
        data = [(q, s, sh) for t, q, s, sh in dissected(pcaps / name, lua) if t == TFMCC_DATA]
        assert len(data) >= 50, f"{name}: only {len(data)} data messages decoded"
        assert all(q >= 1 for q, _, _ in data), f"{name}: a data message left a stamping switch unstamped"
        later = [sh for _, _, sh in data[len(data) // 2:]]  # past the first epochs (at most 1.6 s each)
        assert all(sh for sh in later), f"{name}: a data message in the second half carries no share"
        assert all(0.25e6 <= Share.bps(sh) <= 2e6 for sh in later), (name, sorted(set(later)))
    at_receiver = [(q, s, sh) for t, q, s, sh in dissected(pcaps / "s2-eth2_out.pcap", lua) if t == TFMCC_DATA]
    worst_q = max(q for q, _, _ in at_receiver)
    tightest_s = min(s for _, s, _ in at_receiver)
    shares = {sh for _, _, sh in at_receiver}

    for name in ("s2-eth2_in.pcap", "s1-eth1_in.pcap"):
        reports = [(q, s, sh) for t, q, s, sh in dissected(pcaps / name, lua) if t == TFMCC_REPORT]
        assert reports, f"{name}: no report decoded"
        for q, s, sh in reports:
            assert (q, s) == (0, 0) or (1 <= q <= worst_q and s >= tightest_s), (name, q, s)
            assert sh == 0 or min(shares - {0}) <= sh <= max(shares), (name, sh, sorted(shares))
