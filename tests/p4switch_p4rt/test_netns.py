"""The switch on real interfaces: veth pairs into network namespaces, frames built with Scapy.

Port map: 1 sender (h1); 2 plain; 3 egress delay 20 ms; 4 egress rate
2 Mbit/s with a deep queue; 5 egress loss 20 %.  CPU port 64.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from pathlib import Path

import finsy as fy
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from netlab import Lab, have_root, recv_matching
from switchproc import SwitchProc

from p4mcc.p4switch.frontend import compile_file
from p4mcc.p4switch.p4rt.device import make_bundle
from p4mcc.p4switch.p4rt.p4info import build_p4info
from p4mcc.p4switch.ports import read_pcap

pytestmark = [pytest.mark.root, pytest.mark.skipif(not have_root(), reason="needs root for network namespaces")]

PROGRAM = Path(__file__).parent / "programs" / "l2.p4"
CPU = 64
DELAY_S = 0.020
RATE_BPS = 2e6
LOSS = 0.2
GROUP_MAC = 0x01005E000001


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(5)
    pcap = tmp_path_factory.mktemp("pcap")
    args = []
    for i, h in enumerate(lab.hosts, 1):
        args += ["-i", f"{i}@{h.switch_if}"]
    args += ["--cpu-port", str(CPU), "--device-id", "1", "--pcap", str(pcap), str(PROGRAM),
             "--link", f"3:egress:delay={DELAY_S * 1000:g}ms",
             "--link", f"4:egress:rate={RATE_BPS:g},queue=2000",
             "--link", f"5:egress:loss={LOSS}", "--seed", "1"]
    try:
        sp = SwitchProc(*args)
    except BaseException:
        lab.close()
        raise
    lab.switch = sp
    lab.pcap = pcap
    lab.socks = [h.socket() for h in lab.hosts]
    try:
        asyncio.run(configure(sp.address))
        yield lab
    finally:
        for s in lab.socks:
            s.close()
        rc = sp.stop()
        lab.close()
        assert rc == 0


def opts(**kw):
    return fy.SwitchOptions(p4info=build_p4info(compile_file(str(PROGRAM))), p4blob=make_bundle(str(PROGRAM)),
                            device_id=1, **kw)


def fwd(mac: int, port: int) -> fy.P4TableEntry:
    return fy.P4TableEntry("MyIngress.fwd", match=fy.Match({"hdr.ethernet.dstAddr": mac}),
                           action=fy.Action("MyIngress.forward", port=port))


async def configure(address: str) -> None:
    async with fy.Switch("s1", address, opts()) as sw:
        await sw.insert([fwd(0x020000000000 + i, i) for i in range(1, 6)])
        await sw.insert([fy.P4TableEntry("MyIngress.fwd", match=fy.Match({"hdr.ethernet.dstAddr": GROUP_MAC}),
                                         action=fy.Action("MyIngress.flood", grp=7))])
        await sw.insert([fy.P4MulticastGroupEntry(7, replicas=[2, 3])])
        await sw.modify([fy.P4TableEntry("MyIngress.fwd", is_default_action=True, action=fy.Action("MyIngress.to_cpu"))])


def frame(dst: int, seq: int, size: int = 100) -> bytes:
    pkt = Ether(dst=dst.to_bytes(6, "big").hex(":"), src="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(
        sport=4000, dport=5000) / seq.to_bytes(4, "big")
    raw = bytes(pkt)
    return raw + bytes(max(0, size - len(raw)))


def seq_of(data: bytes) -> int | None:
    p = Ether(data)
    if UDP in p and p[UDP].dport == 5000:
        return int.from_bytes(bytes(p[UDP].payload)[:4], "big")
    return None


def is_seq(n: int):
    return lambda d: seq_of(d) == n


def test_unicast_forwarding_exact_bytes(lab):
    tx, rx2, rx3 = lab.socks[0], lab.socks[1], lab.socks[2]
    f = frame(0x020000000002, 1001)
    tx.send(f)
    got = recv_matching(rx2, is_seq(1001), time.monotonic() + 5)
    assert got is not None and got[0] == f
    # The sentinel reaches h3 after anything h3 could have seen of frame 1001.
    tx.send(frame(0x020000000003, 1002))
    seen: list[int | None] = []
    assert recv_matching(rx3, lambda d: seen.append(seq_of(d)) or seq_of(d) == 1002, time.monotonic() + 5)
    assert 1001 not in seen


def test_multicast_replicates_to_every_group_port(lab):
    tx = lab.socks[0]
    f = frame(GROUP_MAC, 2001)
    tx.send(f)
    for s in (lab.socks[1], lab.socks[2]):
        got = recv_matching(s, is_seq(2001), time.monotonic() + 5)
        assert got is not None and got[0] == f


def test_cpu_port_packet_in_and_out(lab):
    async def go():
        async with fy.Switch("s1", lab.switch.address, opts(initial_election_id=20)) as sw:
            next_packet = asyncio.ensure_future(anext(sw.read_packets()))
            await asyncio.sleep(0)  # let the reader register before traffic
            lab.socks[0].send(frame(0x0200000000FF, 3001))  # unknown destination: default action to_cpu
            pin = await asyncio.wait_for(next_packet, 10)
            assert pin["ingress_port"] == 1 and seq_of(pin.payload) == 3001
            out = frame(0x020000000002, 3002)
            await sw.write([fy.P4PacketOut(out, egress_port=2, _pad=0)])
            # stay connected until the packet is out: closing the stream at
            # once may cancel the PacketOut before the switch has read it
            return await asyncio.to_thread(recv_matching, lab.socks[1], is_seq(3002), time.monotonic() + 5)

    got = asyncio.run(asyncio.wait_for(go(), 30))
    assert got is not None and got[0] == frame(0x020000000002, 3002)


def one_way(lab, port: int, seq: int) -> float:
    t0 = time.time()
    lab.socks[0].send(frame(0x020000000000 + port, seq, 64))
    got = recv_matching(lab.socks[port - 1], is_seq(seq), time.monotonic() + 5)
    assert got is not None
    return got[1] - t0


def test_added_delay_within_one_millisecond(lab):
    # Interleaved samples; the minimum is the path's fixed latency (processing
    # jitter on a loaded machine only ever adds), so the difference of minima
    # is the delay the link emulation added.
    base, delayed = [], []
    for i in range(20):
        base.append(one_way(lab, 2, 4000 + i))
        delayed.append(one_way(lab, 3, 4100 + i))
    added = min(delayed) - min(base)
    assert abs(added - DELAY_S) <= 0.001, (added, sorted(base)[:5], sorted(delayed)[:5])


def test_rate_within_five_percent(lab):
    n, size = 150, 1000
    tx, rx = lab.socks[0], lab.socks[3]
    for i in range(n):
        tx.send(frame(0x020000000004, 5000 + i, size))
    times = []
    deadline = time.monotonic() + 30
    for i in range(n):
        got = recv_matching(rx, is_seq(5000 + i), deadline)
        assert got is not None, f"frame {i} missing"
        times.append(got[1])
    # Least-squares slope of bytes delivered against arrival time: the rate
    # the link sustained, insensitive to one late wake-up at either end.
    # (The first frame is excluded: the bucket starts full.)
    ts = times[1:]
    ys = [k * size * 8 for k in range(len(ts))]
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    rate = sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / sum((t - mt) ** 2 for t in ts)
    assert abs(rate - RATE_BPS) / RATE_BPS <= 0.05, rate


def test_loss_rate_within_binomial_bounds(lab):
    n = 600
    tx, rx = lab.socks[0], lab.socks[4]
    for i in range(n):
        tx.send(frame(0x020000000005, 6000 + i, 64))
    received: set[int] = set()
    # Sentinels follow the data through the same FIFO; the first one to arrive
    # proves every data frame has either arrived or been dropped.
    for k in range(40):
        tx.send(frame(0x020000000005, 9000 + k, 64))
        deadline = time.monotonic() + 2
        done = recv_matching(rx, lambda d: (s := seq_of(d)) is not None and (
            received.add(s) if 6000 <= s < 6000 + n else s >= 9000), deadline)
        if done is not None:
            break
    else:
        pytest.fail("no sentinel arrived")
    lost = n - len(received)
    sd = math.sqrt(n * LOSS * (1 - LOSS))
    assert abs(lost - n * LOSS) <= 4 * sd, lost


def test_pcap_files_record_port_traffic(lab):
    f = frame(0x020000000002, 7001)
    lab.socks[0].send(f)
    assert recv_matching(lab.socks[1], is_seq(7001), time.monotonic() + 5)
    ins = [d for _, d in read_pcap(lab.pcap / f"{lab.hosts[0].switch_if}_in.pcap")]
    outs = [d for _, d in read_pcap(lab.pcap / f"{lab.hosts[1].switch_if}_out.pcap")]
    assert f in ins and f in outs
