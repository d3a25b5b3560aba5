"""Malformed pipeline bundles and empty bytestrings get INVALID_ARGUMENT over gRPC.

A bundle's file names become paths on the switch while it compiles, so
every name the disk could refuse is refused first, by name, and no answer
shows the switch's working folder.  Against a real server on loopback with
the real pipeline builder.
"""

from __future__ import annotations

import json
import pathlib
import tempfile

import grpc
import pytest
from test_server_grpc import Client, details, fwd_insert, push, service, write  # noqa: F401

from finsy.proto import p4r
from finsy.proto.p4.v1 import p4runtime_pb2_grpc
from p4mcc.p4switch.p4rt.device import BUNDLE_FORMAT, Device
from p4mcc.p4switch.p4rt.devconfig import MAX_DEPTH, MAX_NAME_BYTES
from p4mcc.p4switch.p4rt.server import serve
from p4mcc.p4switch.switchd import make_builder

PROGRAMS = pathlib.Path(__file__).parent / "programs"
MAIN = "#include <core.p4>\n#include <v1model.p4>\n"


def bundle(files: dict[str, str], main: str = "main.p4") -> bytes:
    return json.dumps({"format": BUNDLE_FORMAT, "main": main, "files": files}).encode()


MALFORMED = {
    "nul-in-name": (bundle({"main.p4": MAIN, "a\0b.p4": ""}), "NUL"),
    "300-char-name": (bundle({"main.p4": MAIN, "a" * 300 + ".p4": ""}), f"longer than {MAX_NAME_BYTES} bytes"),
    "file-folder-clash": (bundle({"main.p4": MAIN, "inc": "", "inc/x.p4": ""}), "both a file and a folder"),
    "lone-surrogate": (('{"format": "%s", "main": "main.p4", "files": {"main.p4": "", "\\ud800.p4": ""}}'
                        % BUNDLE_FORMAT).encode(), "lone surrogate"),
    "main-is-a-folder": (bundle({"main.p4": MAIN, "main.p4/x.p4": ""}), "the main file is both a file and a folder"),
    "2000-deep-folders": (bundle({"main.p4": MAIN, "d/" * 2000 + "x.p4": ""}), f"(at most {MAX_DEPTH})"),
    "include-missing": (bundle({"main.p4": MAIN + '#include "inc/x.p4"\n'}), "main.p4:3:1"),
}


@pytest.fixture(scope="module")
def real():
    dev = Device(7, make_builder(None, None))
    server, servicer, port = serve(dev, "127.0.0.1:0", max_workers=4)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    ctl = Client(stub, election=1)
    ctl.arbitrate()
    assert ctl.recv().arbitration.status.code == 0
    yield stub
    ctl.close()
    servicer.close()
    channel.close()
    server.stop(0).wait()


@pytest.mark.parametrize("blob,needle", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_bundle_is_invalid_argument_without_a_switch_path(real, blob, needle) -> None:
    req = p4r.SetForwardingPipelineConfigRequest(device_id=7,
                                                 action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4_device_config = blob
    with pytest.raises(grpc.RpcError) as ei:
        real.SetForwardingPipelineConfig(req, timeout=30)
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, ei.value.details()
    assert needle in ei.value.details()
    assert "p4mcc-cfg" not in ei.value.details() and tempfile.gettempdir() not in ei.value.details()


def test_a_nested_bundle_still_commits(real) -> None:
    """The checks refuse only what cannot be laid out: a program split over folders commits."""
    program = (PROGRAMS / "l2.p4").read_text()
    req = p4r.SetForwardingPipelineConfigRequest(device_id=7,
                                                 action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4_device_config = bundle({"main.p4": '#include "inc/deep/l2.p4"\n', "inc/deep/l2.p4": program})
    real.SetForwardingPipelineConfig(req, timeout=60)


@pytest.mark.parametrize("where", ["match", "param"])
def test_an_empty_bytestring_is_invalid_argument(service, where) -> None:  # noqa: F811
    _, _, stub, _ = service
    c = Client(stub)
    c.arbitrate()
    assert c.recv().arbitration.status.code == 0
    push(stub)
    u = fwd_insert(b"\x01")
    e = u.entity.table_entry
    if where == "match":
        e.match[0].exact.value = b""
    else:
        e.action.action.params[0].value = b""
    with pytest.raises(grpc.RpcError) as ei:
        write(stub, u)
    (err,) = details(ei.value)
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "empty bytestring" in err.message
    c.close()
