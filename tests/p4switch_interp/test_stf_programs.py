"""Our own STF programs (tests/stf/v1model): every extern and traffic-manager path."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch
from p4mcc.p4switch.stf import StfRunner, compare, render_diff

STF_DIR = Path(__file__).resolve().parents[1] / "stf" / "v1model"
PROGRAMS = sorted(p.stem for p in STF_DIR.glob("*.stf"))

_cache: dict[str, object] = {}


def program(name: str):
    if name not in _cache:
        _cache[name] = compile_file(str(STF_DIR / f"{name}.p4"))
    return _cache[name]


@pytest.mark.parametrize("name", PROGRAMS)
def test_stf_file_passes(name: str) -> None:
    sw = Switch(program(name))
    res = StfRunner(sw, io.StringIO()).run_text((STF_DIR / f"{name}.stf").read_text(), f"{name}.stf")
    assert res.passed, "\n".join(res.messages)
    assert sw.stats["errors"] == 0, sw.last_error


@pytest.mark.parametrize("name", PROGRAMS)
def test_stf_file_detects_a_wrong_byte(name: str) -> None:
    """Flip one nibble of the first exact expectation: the runner must fail."""
    lines = (STF_DIR / f"{name}.stf").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("expect ") and line.rstrip().endswith("$"):
            parts = line.split()
            last = parts[-2] if parts[-1] == "$" else parts[-1]
            j = len(line) - len(line.rstrip("$ ")) - 1
            j = line.rstrip("$ ").rfind(last) + len(last) - 1
            ch = line[j]
            lines[i] = line[:j] + ("0" if ch != "0" else "1") + line[j + 1:]
            break
    res = StfRunner(Switch(program(name)), io.StringIO()).run_text("\n".join(lines))
    assert not res.passed


def test_compare_rules() -> None:
    assert compare("AB**", bytes.fromhex("ab12")) is None
    assert compare("AB", bytes.fromhex("ab12")) is None  # longer packets pass without $
    assert compare("AB$", bytes.fromhex("ab12")) == -1
    assert compare("ABCD", bytes.fromhex("ab")) == -1
    assert compare("AB0D", bytes.fromhex("ab0c")) == 3
    diff = render_diff("AB0D", bytes.fromhex("ab0c"))
    assert diff[2].rstrip().endswith("^") and diff[2].count("^") == 1


def test_tm_counters_digests_and_api() -> None:
    """Counters, direct counters, digests and registers through the runtime API."""
    sw = Switch(program("externs"))
    h = sw.table_add("Ing.counted", {"h.ext.a": 7}, "hit_dc")
    pkt = bytes.fromhex("04" "00000007" "00000000" "0000" "00000000")
    for _ in range(3):
        out = sw.process(0, pkt, now=1.0)
        assert [o.port for o in out] == [1]
    assert sw.direct_counter_read("counted", h) == (3, 3 * len(pkt))
    assert sw.counter_read("Ing.c", 3) == (3, 45)
    sw.counter_reset("Ing.c")
    assert sw.counter_read("Ing.c", 3) == (0, 0)
    # digest: values as at the end of ingress, named after the struct type
    sw.process(0, bytes.fromhex("07" "00000abc" "00000000" "0000" "00000000"), now=2.0)
    (d,) = sw.poll_digests()
    assert d.name == "learn_t" and d.fields == {"a": 0xABC, "op": 7} and d.time == 2.0
    assert sw.poll_digests() == []
    sw.register_write("r", 2, 0x1_0000_0005)  # masked to 32 bits
    assert sw.register_read("Ing.r", 2) == 5
    with pytest.raises(IndexError):
        sw.register_read("Ing.r", 4)
    with pytest.raises(KeyError):
        sw.table_add("nosuch", {}, "x")


def test_meter_api_per_second_rates() -> None:
    sw = Switch(program("externs"))
    # 1 packet/s committed (burst 1), 2 packets/s peak (burst 1)
    sw.meter_set_rates("mtr", 0, [(1.0, 1), (2.0, 1)], now=0.0)
    pkt = bytes.fromhex("05" + "00" * 14)
    colours = []
    for t in (0.0, 0.1, 0.6, 1.2):
        (o,) = sw.process(0, pkt, now=t)
        colours.append(int.from_bytes(o.data[10:12], "big"))
    # t=0 green; t=0.1 peak empty -> red; t=0.6 peak refilled, committed not -> yellow; t=1.2 green
    assert colours == [0, 2, 1, 0]
    assert sw.meter_get_rates("mtr", 0) == [(1.0, 1), (2.0, 1)]


def test_multicast_api_and_clone_session() -> None:
    sw = Switch(program("tm"))
    sw.set_multicast_group(1, [(3, 1), (4, 1), (9, 2)])
    out = sw.process(1, bytes.fromhex("02ff00000000000000cc"))
    assert [(o.port, o.data[2], o.data[5]) for o in out] == [(3, 5, 3), (4, 5, 4), (9, 5, 9)]
    assert [int.from_bytes(o.data[3:5], "big") for o in out] == [1, 1, 2]
    sw.set_clone_session(5, [(6, 0), (7, 0)], packet_length=4)  # clones truncated to 4 bytes
    out = sw.process(1, bytes.fromhex("03ff00000000000000dd"))
    assert sorted((o.port, len(o.data)) for o in out) == [(2, 10), (6, 4), (7, 4)]
    sw.delete_multicast_group(1)
    assert sw.process(1, bytes.fromhex("02ff00000000000000cc")) == []
    assert sw.stats["dropped"] >= 1


def test_timestamps_and_queue_metadata() -> None:
    """Global timestamps in microseconds since start_time; queue fields from the port model."""
    sw = Switch(program("meta"), start_time=10.0)
    seen = []

    def queue_model(port: int, now: float) -> tuple[int, int, int]:
        seen.append((port, now))
        return 7, 250, 5  # enq_qdepth, deq_timedelta (us), deq_qdepth

    sw.queue_model = queue_model
    pkt = bytes.fromhex("00" + "00" * 23)
    (o,) = sw.process(0, pkt, now=10.5)
    its, ets, delta, qdepth = (int.from_bytes(o.data[i:i + 4], "big") for i in (8, 12, 16, 20))
    assert its == 500_000
    assert ets == 500_250  # egress after waiting deq_timedelta
    assert delta == 250 and qdepth == 7
    assert seen == [(1, 10.5)]


def test_direct_meter_through_api() -> None:
    sw = Switch(program("meta"))
    h = sw.table_add("metered", {"h.m.a": 0x1234}, "colour")
    sw.direct_meter_set_rates("metered", h, [(1.0, 1), (1.0, 2)], now=0.0)
    pkt = bytes.fromhex("05" "0000" "1234" + "00" * 19)
    colours = [sw.process(0, pkt, now=0.0)[0].data[7] for _ in range(3)]
    assert colours == [0, 1, 2]  # GREEN, YELLOW, RED with bursts 1 and 2


def test_p4mcc_stf_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4mcc.cli.main import main

    p4 = str(STF_DIR / "forward.p4")
    assert main(["stf", p4, str(STF_DIR / "forward.stf")]) == 0
    assert "PASS" in capsys.readouterr().out
    bad = tmp_path / "bad.stf"
    bad.write_text("packet 1 000000000001 000000000002 86dd 0102\nexpect 0 000000000001 000000000002 86dd 0103 $\n")
    assert main(["stf", p4, str(bad)]) == 1
    out = capsys.readouterr().out
    assert "port 0: expected 1 packet(s), received 1" in out and "^" in out
    broken = tmp_path / "broken.p4"
    broken.write_text("#include <v1model.p4>\ncontrol c( { }\n")
    assert main(["stf", str(broken), str(bad)]) == 4
    assert "error" in capsys.readouterr().out


def test_stf_value_notation() -> None:
    from p4mcc.p4switch.runtime.tables import Lpm, Ternary
    from p4mcc.p4switch.stf import _lpm, _ternary

    # every written digit is cared for unless it is *; unwritten high digits are not
    assert _ternary("0x0a**", 16) == Ternary(0x0A00, 0xFF00)
    assert _ternary("0b1*0", 8) == Ternary(0b100, 0b101)
    assert _ternary("0x0a", 16) == Ternary(0x0A, 0xFF)
    assert _ternary("10", 16) == Ternary(10, 0xFFFF)
    assert _lpm("0x0a000000/8", 32) == Lpm(0x0A000000, 8)
    assert _lpm("0x0a0*****", 32) == Lpm(0x0A000000, 12)
    assert _lpm("0x0a000001", 32) == Lpm(0x0A000001, 32)


def test_stf_key_name_suffixes_and_errors() -> None:
    from p4mcc.p4switch.runtime.tables import Lpm

    sw = Switch(program("forward"))
    r = StfRunner(sw, io.StringIO())
    res = r.run_text("add route ipv4.dst:0x0a000000/8 fwd(dmac:1, port:5)\n"
                     "add route nosuch:1 fwd(dmac:1, port:5)\n"
                     "add route dst:0x0b000000/8 nosuch()\n"
                     "bogus_command 1\n", "t.stf")
    assert [e.split(":")[1] for e in res.messages] == ["2", "3", "4"]
    assert not res.passed
    (entry,) = sw.table_entries("Ing.route")  # only the good line was applied
    assert entry.keys[0] == Lpm(0x0A000000, 8) and entry.params == (1, 5)


def test_log_msg_reaches_callback() -> None:
    sw = Switch(program("externs"))
    logs: list[str] = []
    sw.on_log = logs.append
    sw.process(0, bytes.fromhex("06" "0000002a" + "00" * 10))
    assert logs == ["op 6, a=42"]
