"""One result, two paths: the native pipeline against the interpreter, bit for bit.

Both switches run the same STF file (same table, PRE and meter state, same
packets at the same times); every output frame (port, bytes, instance
type), the stats, every register cell and every counter must be equal.
Then hypothesis feeds both the same mutated packets (bytes overwritten,
frames cut short, other ports, later times) on the state the STF file left.
A program the C emitter does not cover must run on the interpreter (one
notice) and still pass its STF file.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch
from p4mcc.p4switch.native import NativeSwitch, native_status
from p4mcc.p4switch.stf import StfRunner

ROOT = Path(__file__).resolve().parents[2]
MCC = ROOT / "p4src" / "mcc.p4"
MCC_STF = sorted((ROOT / "tests" / "stf" / "mcc").glob("*.stf"))
V1_STF = sorted((ROOT / "tests" / "stf" / "v1model").glob("*.stf"))
_programs: dict[str, Any] = {}


def program(path: Path) -> Any:
    key = str(path)
    if key not in _programs:
        inc = [str(path.parent / "include")] if (path.parent / "include").is_dir() else []
        _programs[key] = compile_file(key, inc)
    return _programs[key]


class Recording:
    """Wraps a switch's ``process`` to keep every output."""

    def __init__(self, sw: Any) -> None:
        self.sw, self.out = sw, []
        inner = sw.process

        def process(port: int, data: bytes, now: float = 0.0) -> Any:
            r = inner(port, data, now)
            self.out.append([(o.port, bytes(o.data), o.instance_type) for o in r])
            return r
        sw.process = process


def state(sw: Any) -> dict:
    """Every register cell and counter that is not zero, and the stats."""
    regs = {}
    for name, r in sw.registers.items():
        regs[name] = {i: v for i in range(r.size) if (v := r.read(i))}
    ctrs = {}
    for name, c in sw.counters.items():
        ctrs[name] = {i: c.read(i) for i in range(c.size) if c.read(i) != (0, 0)}
    direct = {}
    for table in sorted(set(sw.direct_counters.values())):
        direct[table] = {e.handle: sw.direct_counter_read(table, e.handle) for e in sw.table_entries(table)}
    stats = {k: v for k, v in sw.stats.items()}
    return {"registers": regs, "counters": ctrs, "direct_counters": direct, "stats": stats}


def run_pair(prog: Any, stf: Path) -> tuple[Any, Any]:
    text = stf.read_text()
    pair = []
    for cls in (Switch, NativeSwitch):
        sw = cls(prog)
        rec = Recording(sw)
        res = StfRunner(sw, io.StringIO(), False).run_text(text, str(stf))
        assert res.passed, (cls.__name__, res.messages[:5])
        pair.append(rec)
    return pair[0], pair[1]


def stf_packets(stf: Path) -> list[tuple[int, bytes]]:
    out = []
    for line in stf.read_text().splitlines():
        if line.startswith("packet "):
            _, port, data = line.split(" ", 2)
            out.append((int(port, 0), bytes.fromhex("".join(data.split()))))
    return out


def test_mcc_compiles_to_native() -> None:
    sw = NativeSwitch(program(MCC))
    assert sw.native, native_status(program(MCC))


@pytest.mark.parametrize("name", ["forward", "lang", "meta", "externs"])
def test_v1model_programs_that_compile_to_native(name: str) -> None:
    """Stacks, unions, hashes, checksums with payload, direct counters and
    meters, digests, log_msg, random and truncate are covered natively."""
    prog = program(ROOT / "tests" / "stf" / "v1model" / f"{name}.p4")
    assert NativeSwitch(prog).native, native_status(prog)


@pytest.mark.parametrize("stf", MCC_STF, ids=lambda p: p.stem)
def test_mcc_stf_equal_on_both_paths(stf: Path) -> None:
    a, b = run_pair(program(MCC), stf)
    assert b.sw.native
    assert a.out == b.out
    assert state(a.sw) == state(b.sw)
    assert a.sw.poll_digests() == b.sw.poll_digests()


@pytest.mark.parametrize("stf", V1_STF, ids=lambda p: p.stem)
def test_v1model_corpus_passes_on_native_or_falls_back(stf: Path, capsys: Any) -> None:
    prog = program(stf.with_suffix(".p4"))
    a, b = run_pair(prog, stf)
    assert a.out == b.out
    assert state(a.sw) == state(b.sw)
    if not b.sw.native:
        # the reason is stated once, on one line
        assert native_status(prog) != "native"


def _mutations() -> Any:
    edit = st.tuples(st.integers(0, 200), st.integers(0, 255))
    return st.tuples(st.integers(0, 1 << 30), st.lists(edit, max_size=4), st.integers(0, 300),
                     st.integers(0, 7), st.floats(0.0, 2.0))


RANDOM_CASES = [(MCC, p) for p in MCC_STF if p.stem in ("aggregation", "filtering", "replication", "proxy",
                                                         "stamping", "echo")]
RANDOM_CASES += [(p.with_suffix(".p4"), p) for p in V1_STF]


def _mutated(seeds: list, mut: tuple, clock: dict) -> tuple[int, bytes]:
    """One drawn mutation of an STF packet (bytes changed, cut, another port), its time taken."""
    pick, edits, cut, port_delta, dt = mut
    port, pkt = seeds[pick % len(seeds)]
    data = bytearray(pkt)
    for pos, val in edits:
        if pos < len(data):
            data[pos] = val
    clock["now"] += dt
    frame = bytes(data[:cut]) if cut < len(data) and cut % 3 == 0 else bytes(data)
    return (port + (port_delta if port_delta > 4 else 0)) % 8, frame


@pytest.mark.parametrize("prog_stf", RANDOM_CASES, ids=lambda c: f"{c[0].stem}-{c[1].stem}")
def test_random_packets_equal_on_both_paths(prog_stf: tuple[Path, Path]) -> None:
    prog, stf = prog_stf
    a, b = run_pair(program(prog), stf)
    if not b.sw.native:
        pytest.skip(f"runs on the interpreter: {native_status(program(prog))}")
    seeds = stf_packets(stf)
    clock = {"now": 100.0}

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(_mutations(), min_size=1, max_size=6))
    def feed(muts: list) -> None:
        for mut in muts:
            port, data = _mutated(seeds, mut, clock)
            oa = a.sw.process(port, data, clock["now"])
            ob = b.sw.process(port, data, clock["now"])
            assert [(o.port, o.data, o.instance_type) for o in oa] == [(o.port, o.data, o.instance_type) for o in ob]

    feed()
    sa, sb = state(a.sw), state(b.sw)
    for part in sa:
        assert sa[part] == sb[part], part
    assert a.sw.poll_digests() == b.sw.poll_digests()


def _queue(port: int, now: float) -> tuple[int, int, int]:
    """A queue model whose answer moves with the port and the time, so a
    replica given another port's or another packet's row shows."""
    t = int(now * 1e3)
    return (port * 7 + t) % 40, (port * 131 + t * 17) % 5000, (port + 3 * t) % 40


class OneCall:
    """A native switch on its one-call path (``use_queue_table``), its
    table filled from ``_queue`` before each packet, as a simulator node does;
    its outputs built by the module's CPython entry point or read through ctypes."""

    def __init__(self, prog: Any, way: str) -> None:
        self.sw = sw = NativeSwitch(prog)
        if sw.native and way == "ctypes":
            sw._use_py = False
        elif sw.native and sw._mod.py_process is None:
            pytest.skip("the module was built without its CPython entry point (no Python headers)")
        table = sw.use_queue_table()
        inner = sw.process

        def process(port: int, data: bytes, now: float = 0.0) -> Any:
            if table is not None:
                for p in range(len(table) // 3):
                    table[3 * p], table[3 * p + 1], table[3 * p + 2] = _queue(p, max(now, sw._latest))
            return inner(port, data, now)
        sw.process = process


@pytest.mark.parametrize("way", ["cpython", "ctypes"])
@pytest.mark.parametrize("prog_stf", [(MCC, p) for p in MCC_STF] + RANDOM_CASES[6:],
                         ids=lambda c: f"{c[0].stem}-{c[1].stem}")
def test_one_call_path_equals_the_interpreter(prog_stf: tuple[Path, Path], way: str) -> None:
    """Replication in native code and queue metadata from the table give the
    interpreter's outputs and state, with a queue model that is not zero,
    across the STF file, random packets and a change of every multicast group."""
    prog, stf = prog_stf
    ref = Switch(program(prog))
    ref.queue_model = _queue
    one = OneCall(program(prog), way)
    if not one.sw.native:
        pytest.skip(f"runs on the interpreter: {native_status(program(prog))}")
    recs = [Recording(ref), Recording(one.sw)]
    for r in recs:
        StfRunner(r.sw, io.StringIO(), False).run_text(stf.read_text(), str(stf))
    assert recs[0].out == recs[1].out
    seeds = stf_packets(stf)
    clock = {"now": 100.0}

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(_mutations(), min_size=1, max_size=6))
    def feed(muts: list) -> None:
        for mut in muts:
            port, data = _mutated(seeds, mut, clock)
            outs = [[(o.port, o.data, o.instance_type) for o in r.sw.process(port, data, clock["now"])]
                    for r in recs]
            assert outs[0] == outs[1]

    feed()
    assert (one.sw._py is not None) == (way == "cpython")
    groups = sorted(ref.pre.groups)
    for r in recs:  # every group one replica fewer: the native copy follows
        for m in groups:
            reps = r.sw.pre.replicas(m)
            r.sw.pre.set_group(m, list(reps[1:]))
    for port, pkt in seeds:
        clock["now"] += 0.5
        outs = [[(o.port, o.data, o.instance_type) for o in r.sw.process(port, pkt, clock["now"])] for r in recs]
        assert outs[0] == outs[1]
    sa, sb = state(ref), state(one.sw)
    for part in sa:
        assert sa[part] == sb[part], part
    assert ref.poll_digests() == one.sw.poll_digests()
