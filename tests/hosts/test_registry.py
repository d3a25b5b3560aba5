"""One way to build agents: the protocol registry and parameter parsing."""

from __future__ import annotations

import json

import pytest

from p4mcc.hosts import registry
from p4mcc.hosts.core import Endpoint
from p4mcc.hosts.tfmcc import TfmccParams, TfmccReceiver, TfmccSender
from p4mcc.hosts.webrc import WebrcParams, WebrcReceiver, WebrcSender


def cfg(params=None) -> registry.SessionConfig:
    return registry.SessionConfig(7, "239.1.2.3", 6000, "10.0.0.1", "10.0.0.2", params)


def test_equation_based_protocols_are_registered() -> None:
    assert {"tfmcc", "webrc"} <= set(registry.names())
    with pytest.raises(registry.ParamError, match="known"):
        registry.get("nope")


@pytest.mark.parametrize(
    "name, params_cls, snd, rcv",
    [("tfmcc", TfmccParams, TfmccSender, TfmccReceiver), ("webrc", WebrcParams, WebrcSender, WebrcReceiver)],
)
def test_factories_build_endpoints(name, params_cls, snd, rcv) -> None:
    proto = registry.get(name)
    assert proto.params_type is params_cls
    s, r = proto.sender(cfg()), proto.receiver(cfg())
    assert isinstance(s, snd) and isinstance(r, rcv)
    assert isinstance(s, Endpoint) and isinstance(r, Endpoint)
    assert isinstance(r.cfg.params, params_cls)  # None became the defaults


def test_parse_params_converts_types_and_accepts_dashes() -> None:
    p = registry.get("tfmcc").parse_params({"packet-size": "1200", "initial_rtt": "0.2",
                                            "fb-receivers": "500", "initial_rate_bps": "none"})
    assert p.packet_size == 1200 and p.initial_rtt == 0.2 and p.fb_receivers == 500
    assert p.initial_rate_bps is None


def test_parse_params_rejects_unknown_names_and_bad_values() -> None:
    proto = registry.get("tfmcc")
    with pytest.raises(registry.ParamError, match="unknown parameter 'colour'"):
        proto.parse_params({"colour": 1})
    with pytest.raises(registry.ParamError, match="packet_size"):
        proto.parse_params({"packet_size": "big"})
    with pytest.raises(registry.ParamError, match="initial_rtt"):
        proto.parse_params({"initial_rtt": 0})  # range checked by the dataclass
    with pytest.raises(registry.ParamError, match="KEY=VALUE"):
        registry.parse_pairs(["oops"])


@pytest.mark.parametrize("proto, name", [("tfmcc", "initial_rtt"), ("webrc", "epoch"), ("rla", "eta"),
                                         ("vlmcc", "initial_rtt")])
def test_nan_is_never_a_parameter_and_inf_only_where_the_default_is(proto, name) -> None:
    p = registry.get(proto)
    for bad in ("nan", float("nan"), "inf", float("inf")):
        with pytest.raises(registry.ParamError, match=f"{name}: .* is not a finite number"):
            p.parse_params({name: bad})
    assert registry.get("webrc").parse_params({"max_rate_bps": "inf"}).max_rate_bps == float("inf")
    with pytest.raises(registry.ParamError, match="max_rate_bps: nan is not a finite number"):
        registry.get("webrc").parse_params({"max_rate_bps": "nan"})


def test_dict_params_in_config_are_parsed() -> None:
    r = registry.get("webrc").receiver(cfg({"tsd": 5}))
    assert r.p.tsd == 5.0
    with pytest.raises(registry.ParamError):
        registry.get("webrc").receiver(cfg(TfmccParams()))


def test_params_file_json_and_toml(tmp_path) -> None:
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"p": 0.8, "tsd": 4}))
    t = tmp_path / "p.toml"
    t.write_text("p = 0.8\ntsd = 4\n")
    proto = registry.get("webrc")
    assert proto.parse_params(registry.load_params_file(j)) == proto.parse_params(
        registry.load_params_file(t))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(registry.ParamError):
        registry.load_params_file(bad)


def test_register_rejects_duplicates() -> None:
    with pytest.raises(ValueError):
        registry.register(registry.get("tfmcc"))


def test_describe_params_lists_defaults() -> None:
    rows = {n: d for n, _t, d in registry.describe_params(TfmccParams)}
    assert rows["fb_receivers"] == 10000 and rows["initial_rtt"] == 0.5
