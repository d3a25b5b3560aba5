"""Every TFMCC and WEBRC endpoint drops and counts what it cannot decode.

Random bytes, truncated and bit-flipped copies of valid packets, and valid
packets of the wrong kind or session reach each core; none may raise, every
undecodable one is counted in ``malformed``, and the core keeps working.
"""

from __future__ import annotations

import random

import pytest
from fakes import drain, run_until

from p4mcc.hosts import registry, wire
from p4mcc.hosts.tfmcc import TfmccParams, TfmccSender
from p4mcc.hosts.webrc import WebrcParams
from p4mcc.hosts.wire import TfmccData, TfmccReport, WebrcData

SENDER, ME = "10.0.0.1", "10.0.0.2"


def _valid() -> list[bytes]:
    return [
        TfmccData(session_id=1, seq=7, timestamp=5, payload=bytes(40)).encode(),
        TfmccReport(session_id=1, rate=10_000, rcvr_id=9).encode(),
        WebrcData(session_id=1, cn=3, psn=2, tsi=1, payload=bytes(40)).encode(),
        TfmccData(session_id=2, seq=1, payload=bytes(8)).encode(),  # another session
    ]


def _garbage(rng: random.Random, n: int) -> list[bytes]:
    out: list[bytes] = []
    valid = _valid()
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append(rng.randbytes(rng.randrange(0, 80)))
        else:
            b = bytearray(rng.choice(valid))
            if kind == 1:
                del b[rng.randrange(1, len(b)):]  # truncated
            else:
                for _ in range(3):
                    b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)  # bit flips
            out.append(bytes(b))
    return out


def _endpoints():
    tf, wb = registry.get("tfmcc"), registry.get("webrc")
    tp, wp = TfmccParams(), WebrcParams(session_rate_bps=2e6)
    cfg = lambda p, ip: registry.SessionConfig(1, "239.1.1.1", 5000, SENDER, ip, p)  # noqa: E731
    return {
        "tfmcc-sender": tf.sender(cfg(tp, SENDER)),
        "tfmcc-receiver": tf.receiver(cfg(tp, ME)),
        "webrc-sender": wb.sender(cfg(wp, SENDER)),
        "webrc-receiver": wb.receiver(cfg(wp, ME)),
    }


@pytest.mark.parametrize("name", ["tfmcc-sender", "tfmcc-receiver", "webrc-sender", "webrc-receiver"])
def test_malformed_datagrams_are_dropped_and_counted(name: str) -> None:
    ep = _endpoints()[name]
    ep.start(0.0)
    drain(ep)
    rng = random.Random(14)
    bad = impossible = 0
    for i, data in enumerate(_garbage(rng, 3000)):
        try:
            msg = wire.decode(data)
            # A report no receiver of the paper can send (an RTT of 0 or
            # beyond 60 s, loss flagged with p = 0) is dropped as malformed too.
            impossible += isinstance(msg, TfmccReport) and TfmccSender._impossible(msg)
        except wire.WireError:
            bad += 1
        ep.receive_datagram(data, ("10.9.9.9", 4000), 0.001 * i)
        drain(ep)
    assert bad > 1000
    if name == "tfmcc-receiver":
        # Decodable data whose sequence number jumped further than the sender
        # can send in the time between the timestamps is dropped as well.
        assert bad <= ep.malformed <= bad + 100
    elif name == "tfmcc-sender":
        assert impossible > 0 and bad <= ep.malformed <= bad + impossible
    else:
        assert ep.malformed == bad
    # Still alive: its timers keep firing and it keeps doing its job.
    out = run_until(ep, 10.0)
    if name.endswith("sender") and name.startswith("tfmcc"):
        assert out.datagrams  # still sending data
    if name == "webrc-sender":
        assert out.datagrams
