"""Parity: the program's STF tests and its Scapy packet tests run on BMv2
(``simple_switch_grpc`` with p4c-bm2-ss's build) and on ``p4mcc switch``,
both live processes on veth ports configured over P4Runtime, and each sends
the same frames as the built-in interpreter and as the tests expect.

Needs root (veth ports), p4c-bm2-ss and simple_switch_grpc on PATH; skips
and says which is missing otherwise.  One switch process per target serves
the whole module (``LiveSwitch.reset`` gives each test fresh state), and the
machine-wide root lock is held while the ports exist.

Which Scapy tests take part: those of tests/p4src that drive one switch with
packets only, four per module spread over it (``P4MCC_PARITY_ALL=1``: all
42 of them, about 4 minutes).  Tests that step the interpreter's simulated
clock (membership ageing, proxy refresh, VLMCC time windows), read digests,
police with meters or talk to the CPU port stay on the built-in switch
alone: a live switch keeps real time, and its CPU port is a P4Runtime
stream, not a veth.  So does the runt-frame test: a veth refuses a frame
shorter than an Ethernet header.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any, Iterator

import pytest
from bmv2_harness import REPO, P4cBuild, need

from p4mcc.controller.program import MCC
from p4mcc.p4switch.stf import StfRunner

STF_DIR = REPO / "tests" / "stf" / "mcc"
STFS = sorted(p.name for p in STF_DIR.glob("*.stf"))
TARGETS = ("bmv2", "builtin")
SCAPY_MODULES = ("test_forwarding", "test_membership", "test_aggregation", "test_filtering",
                 "test_robustness", "test_proxy")
# what keeps a Scapy test on the built-in switch alone (see the module docstring)
NOT_LIVE = ("now", "timeout_us", "refresh_us", "poll_digests", "meter", "CPU_PORT", "packet_out",
            "to_cpu", "chain", "Chain", "two_levels", "window_us", "runt")

PER_MODULE = 4

pytestmark = [pytest.mark.root, pytest.mark.slow]

sys.path.insert(0, str(REPO / "tests" / "p4src"))


def stf_ports(text: str) -> set[int]:
    """Every data-plane port an STF file names (packets, expectations, PRE nodes)."""
    ports: set[int] = set()
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] in ("packet", "expect"):
            ports.add(int(words[1], 0))
        elif words and words[0] == "mc_node_create":
            ports.update(int(x, 0) for x in words[2:])
    return ports - {510}


def scapy_tests() -> list[tuple[str, str]]:
    """The eligible tests of each module, at most PER_MODULE of them spread
    evenly over the module (all with P4MCC_PARITY_ALL=1): each costs two
    pipeline pushes, about 3 s, and the suite's time must stay modest."""
    out = []
    every = os.environ.get("P4MCC_PARITY_ALL") == "1"
    for modname in SCAPY_MODULES:
        mod = importlib.import_module(modname)
        eligible = []
        for name, fn in vars(mod).items():
            if name.startswith("test_") and callable(fn) and not inspect.signature(fn).parameters:
                src = inspect.getsource(fn)
                if not any(word in src for word in NOT_LIVE):
                    eligible.append((fn.__code__.co_firstlineno, name))
        eligible.sort()
        n = len(eligible)
        picks = range(n) if every or n <= PER_MODULE else sorted(
            {round(i * (n - 1) / (PER_MODULE - 1)) for i in range(PER_MODULE)})
        out += [(modname, eligible[i][1]) for i in picks]
    return out


#: The packet tests' ports, the STFs' ports, and both sides of the fold's
#: port limit (test_aggregation: the last folded port, one beyond it).
PORTS = sorted({1, 2, 3, 4, 9, 20, MCC.agg_k - 1, MCC.agg_k + 4}.union(
    *(stf_ports((STF_DIR / n).read_text()) for n in STFS)))


@pytest.fixture(scope="module")
def live(p4c_build: P4cBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    need("simple_switch_grpc")
    if os.geteuid() != 0:
        pytest.skip("needs root for veth ports")
    assert p4c_build.returncode == 0, p4c_build.stderr
    from live import LiveSwitch

    tmp = tmp_path_factory.mktemp("live")
    switches: dict[str, Any] = {}
    try:
        for target in TARGETS:
            switches[target] = LiveSwitch(target, PORTS, tmp, p4c_build.json, p4c_build.p4info)
        yield switches
    finally:
        for sw in switches.values():
            sw.close()


@pytest.mark.parametrize("name", STFS)
def test_stf_gives_the_same_frames_on_bmv2_and_on_p4mcc_switch(name: str, live: dict[str, Any]) -> None:
    text = (STF_DIR / name).read_text()
    received = {}
    for target in TARGETS:
        runner = StfRunner(live[target].reset())
        result = runner.run_text(text, name)
        assert result.passed, f"{target}:\n" + "\n".join(result.messages)
        assert live[target].mismatches == [], live[target].mismatches
        received[target] = {p: [f.hex() for f in fs] for p, fs in runner.received.items()}
    assert received["bmv2"] == received["builtin"]


@pytest.mark.parametrize("module,name", scapy_tests())
def test_scapy_packet_test_passes_on_bmv2_and_on_p4mcc_switch(module: str, name: str, live: dict[str, Any],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import p4src_harness

    mod = importlib.import_module(module)
    for target in TARGETS:
        sw = live[target]
        monkeypatch.setattr(mod, "new_switch", sw.reset, raising=False)
        monkeypatch.setattr(p4src_harness, "new_switch", sw.reset)
        try:
            getattr(mod, name)()
        except AssertionError as exc:
            raise AssertionError(f"on {target}: {exc}") from exc
        assert sw.mismatches == [], f"{target}: {sw.mismatches}"
