"""The switch's data path in process: interpreter, link emulation and queue metadata.

Ports are stand-ins that record what is sent; the link scheduler's callbacks
are run by hand on a fake clock, so timing is exact.
"""

from __future__ import annotations

from pathlib import Path

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.linkemu import PortConfig
from p4mcc.p4switch.p4rt.device import Device
from p4mcc.p4switch.switchd import Dataplane, make_builder

QMETA = Path(__file__).parent / "programs" / "qmeta.p4"


class RecordingPort:
    def __init__(self, n: int) -> None:
        self.port = n
        self.iface = f"fake{n}"
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> bool:
        self.sent.append(frame)
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make(links: PortConfig):
    clock = Clock()
    dev = Device(0, make_builder(compile_file(str(QMETA)), None, start_time=clock.t), clock=clock)
    dev.commit_initial()
    ports = {1: RecordingPort(1), 2: RecordingPort(2)}
    dp = Dataplane(dev, ports, links, clock=clock)
    return dp, ports, clock


def run_due(dp: Dataplane, now: float) -> None:
    """Run every link callback due by ``now``, as the scheduler thread would."""
    dp.pump(now)


def frame(i: int) -> bytes:
    return bytes([0, 0, 0, 0, 0, 2]) + bytes(6) + b"\x88\xb5" + bytes([i]) * 986  # 1000 bytes


def meta(f: bytes) -> tuple[int, int]:
    return int.from_bytes(f[6:12], "big"), int.from_bytes(f[12:14], "big")


def test_unshaped_port_sends_at_once_with_zero_queue_metadata():
    dp, ports, clock = make(PortConfig())
    dp.receive(1, frame(1), clock.t)
    assert [meta(f) for f in ports[2].sent] == [(0, 0)]


def test_egress_queue_metadata_follow_the_token_bucket():
    links = PortConfig().with_flag("2:egress:rate=1Mbps,queue=10")
    dp, ports, clock = make(links)
    for i in range(3):
        dp.receive(1, frame(i), clock.t)
    assert ports[2].sent == []  # nothing leaves before the scheduler runs
    run_due(dp, clock.t)
    # 1000-byte frames at 1 Mbit/s: 8 ms each; the first finds a full 1514-byte bucket.
    first_wait = 0
    second_wait = round((1000 - 514) * 8 / 1e6 * 1e6)
    third_wait = second_wait + 8000
    t = clock.t
    for _ in range(50):
        t += 0.001
        run_due(dp, t)
    got = [meta(f) for f in ports[2].sent]
    assert got == [(first_wait, 0), (second_wait, 1), (third_wait, 2)]


def test_drop_tail_counts_refused_frames():
    links = PortConfig().with_flag("2:egress:rate=1Mbps,queue=2")
    dp, ports, clock = make(links)
    for i in range(5):
        dp.receive(1, frame(i), clock.t)
    assert dp.stats.queue_drops == 3


def test_ingress_delay_holds_frames_before_the_pipeline():
    links = PortConfig().with_flag("1:ingress:delay=5ms")
    dp, ports, clock = make(links)
    dp.receive(1, frame(1), clock.t)
    run_due(dp, clock.t + 0.0049)
    assert ports[2].sent == []
    run_due(dp, clock.t + 0.005)
    assert len(ports[2].sent) == 1


def test_frames_to_unattached_ports_are_counted():
    dp, ports, clock = make(PortConfig())
    del dp._egress[2]
    dp.receive(1, frame(1), clock.t)
    assert dp.stats.no_port == 1


VSET = Path(__file__).parent / "programs" / "vset.p4"


def test_value_set_written_over_p4runtime_steers_the_parser():
    from finsy.proto import p4r

    clock = Clock()
    dev = Device(0, make_builder(compile_file(str(VSET)), None, start_time=clock.t), clock=clock)
    dev.commit_initial()
    ports = {1: RecordingPort(1), 2: RecordingPort(2)}
    dp = Dataplane(dev, ports, PortConfig(), clock=clock)
    (vs,) = dev.pipeline.schema.p4info.value_sets
    u = p4r.Update(type=p4r.Update.MODIFY)
    u.entity.value_set_entry.value_set_id = vs.preamble.id
    for et in (0x88B5, 0x0800):
        u.entity.value_set_entry.members.add().match.add(field_id=1).exact.value = et.to_bytes(2, "big")
    dev.write_update(u)
    frame = lambda et: bytes(12) + et.to_bytes(2, "big") + b"data"  # noqa: E731
    for et in (0x88B5, 0x86DD, 0x0800):
        dp.receive(1, frame(et), clock.t)
    assert [f[12:14].hex() for f in ports[2].sent] == ["88b5", "0800"]
    (row,) = dev.read(p4r.Entity(value_set_entry=p4r.ValueSetEntry(value_set_id=vs.preamble.id)))
    assert sorted(m.match[0].exact.value for m in row.value_set_entry.members) == [b"\x08\x00", b"\x88\xb5"]
    too_many = p4r.Update(type=p4r.Update.MODIFY)
    too_many.entity.value_set_entry.value_set_id = vs.preamble.id
    for et in range(5):
        too_many.entity.value_set_entry.members.add().match.add(field_id=1).exact.value = bytes([et + 1])
    from p4mcc.p4switch.p4rt.errors import Code, P4RTError

    try:
        dev.write_update(too_many)
    except P4RTError as e:
        assert e.code == Code.RESOURCE_EXHAUSTED
    else:
        raise AssertionError("a value set larger than its size was accepted")
