"""``p4mcc switch`` command line: BMv2 flags, refusals that name the problem, logging."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy as fy
import pytest

from switchproc import SwitchProc
from p4mcc.cli.main import main

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.p4rt.device import make_bundle
from p4mcc.p4switch.p4rt.p4info import build_p4info

PROGRAM = Path(__file__).parent / "programs" / "l2.p4"


@pytest.mark.parametrize("flag", ["--thrift-port", "--nanolog", "--json", "--notifications-addr"])
def test_unsupported_bmv2_flags_are_refused_by_name(flag, capsys):
    with pytest.raises(SystemExit) as ei:
        main(["switch", "--no-p4", flag, "x"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert f"BMv2 flag {flag} is not supported" in err


def test_unknown_flags_are_named(capsys):
    with pytest.raises(SystemExit):
        main(["switch", "--no-p4", "--frobnicate"])
    assert "--frobnicate" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["-i", "eth0"], "expected PORT@IFACE"),
        (["-i", "600@eth0"], "out of range"),
        (["-i", "1@a", "-i", "1@b"], "port 1 is given twice"),
        (["--link", "2:egress:speed=1M"], "unknown link parameter 'speed'"),
        (["--link", "2:egress:rate=fast"], "rate"),
        (["--cpu-port", "1", "-i", "1@a"], "CPU port 1 is also attached"),
    ],
)
def test_bad_options_get_one_clear_line(argv, needle, capsys):
    assert main(["switch", "--no-p4", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_program_and_no_p4_conflict(capsys):
    assert main(["switch", str(PROGRAM), "--no-p4"]) == 2
    assert "not both" in capsys.readouterr().err


def test_missing_interface_is_reported(capsys):
    assert main(["switch", "--no-p4", "-i", "1@p4mcc-nonexistent", "--grpc-server-addr", "127.0.0.1:0"]) == 1
    assert "no interface named 'p4mcc-nonexistent'" in capsys.readouterr().err


def test_port_config_file_is_read(tmp_path, capsys):
    cfg = tmp_path / "links.yaml"
    cfg.write_text("ports:\n  2: {egress: {rate: 10Mbps, delay: 5ms}}\n  3: {bogus: 1}\n")
    assert main(["switch", "--no-p4", "--port-config", str(cfg)]) == 2
    assert "port 3: unknown link parameter 'bogus'" in capsys.readouterr().err


def test_console_log_has_one_line_per_packet():
    sp = SwitchProc(str(PROGRAM), "--cpu-port", "64", "--device-id", "1", "--log-console")

    async def go():
        opts = fy.SwitchOptions(p4info=build_p4info(compile_file(str(PROGRAM))), p4blob=make_bundle(str(PROGRAM)),
                                device_id=1)
        async with fy.Switch("s1", sp.address, opts) as sw:
            nxt = asyncio.ensure_future(anext(sw.read_packets()))
            await asyncio.sleep(0)
            await sw.write([fy.P4PacketOut(bytes(14) + b"x", egress_port=64, _pad=0)])
            await asyncio.wait_for(nxt, 10)

    try:
        asyncio.run(asyncio.wait_for(go(), 30))
    finally:
        assert sp.stop() == 0
    log = sp.stderr_text
    lines = [ln for ln in log.splitlines() if "bytes in" in ln]
    assert len(lines) == 1, log
    # Ingress port and size, each table applied with its outcome, egress ports.
    assert "port 64: 17 bytes in; MyIngress.smac miss -> default -> port 64 (17 B)" in lines[0], log
