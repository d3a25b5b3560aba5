"""Property: any byte string into any port never raises out of the switch."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.interp import Switch

ROOT = Path(__file__).resolve().parents[2]
STF_DIR = ROOT / "tests" / "stf" / "v1model"
SWITCHES = {}


def switch(name: str) -> Switch:
    if name not in SWITCHES:
        if name == "mcc":  # the project's own program, with a group and a route
            sw = Switch(compile_file(str(ROOT / "p4src" / "mcc.p4"), [str(ROOT / "p4src" / "include")]))
            sw.set_multicast_group(1, [(p, 0) for p in range(1, 5)])
            sw.table_set_default("switch_config", "set_config", {"flood_mgid": 1, "membership_timeout_us": 0,
                                                                  "proxy_refresh_us": 0})
            SWITCHES[name] = sw
            return sw
        sw = Switch(compile_file(str(STF_DIR / f"{name}.p4")))
        if name == "tm":
            sw.set_multicast_group(1, [(2, 1), (3, 2)])
            sw.mirroring_add(5, 4)
            sw.mirroring_add(6, 5)
        if name == "forward":
            sw.table_add("route", {"h.ipv4.dst": 0}, "fwd", {"dmac": 1, "port": 2})
        SWITCHES[name] = sw
    return SWITCHES[name]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["forward", "tm", "externs", "lang", "meta", "mcc"]),
       port=st.integers(0, 511),
       data=st.one_of(st.binary(min_size=0, max_size=64), st.binary(min_size=0, max_size=9000)))
def test_any_bytes_any_port(name: str, port: int, data: bytes) -> None:
    sw = switch(name)
    errors = sw.stats["errors"]
    out = sw.process(port, data, now=0.0)
    assert isinstance(out, list)
    for o in out:
        assert 0 <= o.port < 512 and isinstance(o.data, bytes)
    # the only run-time fault these programs can cause is meta.p4's assume()
    # on a packet too short for its header; any other error is an interpreter bug
    if sw.stats["errors"] != errors:
        assert name == "meta" and sw.last_error and "assume failed" in sw.last_error, sw.last_error
        assert out == []
