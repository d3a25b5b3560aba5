"""The max-min share estimate (p4src/include/share.p4) on the built-in switch.

Flows leave a rated port over timed epochs; the port's registers must hold
the last complete epoch's counts (slots in use, heavy slots, light bytes)
and the share codes the controller's tables and hosts.wire.Share make of
them: (capacity - light) / heavy, on the eighth-octave scale.
"""

from __future__ import annotations

import pytest

from p4mcc.controller import share
from p4mcc.hosts import wire
from p4src_harness import SENDER, Group, Host, SwitchSetup, configure, igmpv2_report, new_switch, outputs, udp_frame

H1 = Host("h1", "10.0.0.1", "00:00:00:00:00:01")
G = "239.1.1.1"
RATE = 250  # 10 Mb/s in 40 kb/s units
SHIFT = 2  # 102.4 ms epochs
EPOCH_S = share.WINDOW_S * 2**SHIFT
CAPACITY = RATE << (7 + SHIFT)  # bytes per epoch
T0 = 1.0


def _switch(stamped: tuple[int, ...] = ()):
    sw = new_switch()
    configure(sw, SwitchSetup(ports=[1, 4], hosts={1: H1, 4: SENDER}, groups=[Group(G, gidx=0, mgid=10)],
                              port_rates={1: RATE}, epoch_shift=SHIFT, stamped=stamped))
    outputs(sw, 1, igmpv2_report(H1, G))
    return sw


def _flow(sw, sport: int, size: int, count: int, epoch: int) -> int:
    """``count`` UDP frames of flow ``sport`` to h1 (port 1) in ``epoch``; the bytes they weigh."""
    frame = udp_frame(SENDER, H1.ip, b"u" * size, sport=sport)
    for i in range(count):
        [(port, _)] = outputs(sw, 4, frame, now=T0 + epoch * EPOCH_S + 1e-3 + i * 1e-4)
        assert port == 1
    return len(frame) * count


def _last(sw) -> tuple[int, int, int]:
    return tuple(sw.register_read(name, 1) for name in ("share_last_flows", "share_last_heavy", "share_last_light"))


def _expected_code(k: int, h: int, light: int, new: bool = False) -> int:
    per = share.floor_log8(max(CAPACITY - light, 1))
    logs = dict((hh, (a, b)) for hh, a, b in share.heavy_log_entries())[h]
    spread = dict(share.spread_log_entries())[k]
    return max(1, per - (logs[1] if new else logs[0]) - spread - 8 * SHIFT)


def test_first_packet_ends_an_idle_epoch_the_share_is_the_whole_port():
    sw = _switch()
    _flow(sw, 5000, 100, 1, epoch=0)
    assert _last(sw) == (0, 0, 0)
    code = sw.register_read("share_code", 1)
    assert code == _expected_code(0, 0, 0) == wire.Share.code_for(10e6)
    assert sw.register_read("share_epoch_tag", 1) == 1


def test_heavy_flows_light_bytes_and_the_share_of_the_last_epoch():
    sw = _switch()
    _flow(sw, 4999, 100, 1, epoch=0)  # starts epoch 0; its threshold is from an idle port
    _flow(sw, 4998, 100, 1, epoch=1)  # epoch 0 ends: one light flow; threshold now a quarter to a half of C
    thr = sw.register_read("share_threshold", 1)
    assert CAPACITY // 4 <= thr <= CAPACITY // 2
    heavy = [_flow(sw, 5000 + i, 1400, 25, epoch=2) for i in range(2)]
    light = sum(_flow(sw, 6000 + i, 200, 2, epoch=2) for i in range(5))
    assert all(b >= thr for b in heavy) and light < thr
    _flow(sw, 4997, 100, 1, epoch=3)  # closes epoch 2
    k, h, lb = _last(sw)
    assert h == 2 and lb == light and k == 7  # no two of these flows share a slot
    code = sw.register_read("share_code", 1)
    assert code == _expected_code(7, 2, light)
    true_share = (CAPACITY - light) / 2 * 8 / EPOCH_S
    assert true_share / 1.2 <= wire.Share.bps(code) <= true_share * 1.1
    assert sw.register_read("share_code_new", 1) == _expected_code(7, 2, light, new=True)


def test_a_whole_idle_epoch_resets_the_counts():
    sw = _switch()
    _flow(sw, 5000, 1400, 25, epoch=0)
    _flow(sw, 5001, 100, 1, epoch=3)  # epochs 1 and 2 idle
    assert _last(sw) == (0, 0, 0)


def test_a_stamped_session_is_heavy_from_its_first_packet():
    sw = _switch(stamped=(7,))
    _flow(sw, 4999, 100, 1, epoch=0)
    msg = wire.WebrcData(session_id=7, seq=1, payload=b"x" * 32).encode()
    outputs(sw, 4, udp_frame(SENDER, G, msg), now=T0 + EPOCH_S + 1e-3)
    unstamped = wire.WebrcData(session_id=8, seq=1, payload=b"x" * 32).encode()
    outputs(sw, 4, udp_frame(SENDER, G, unstamped, sport=5002), now=T0 + EPOCH_S + 2e-3)
    _flow(sw, 4998, 100, 1, epoch=2)
    k, h, _ = _last(sw)
    assert (k, h) == (2, 1)


@pytest.mark.parametrize("k", [1, 64, 128, 200, 256])
def test_linear_counting_correction_is_the_flows_per_slot(k):
    m = share.SLOTS
    ratio = dict(share.spread_log_entries())[k]
    assert ratio == share.log8(share.linear_count(k, m) / k)
    assert share.linear_count(k, m) >= k


def test_a_session_over_two_groups_is_one_flow():
    sw = new_switch()
    groups = [Group(G, gidx=0, mgid=10), Group("239.1.1.2", gidx=1, mgid=11)]
    configure(sw, SwitchSetup(ports=[1, 4], hosts={1: H1, 4: SENDER}, groups=groups,
                              port_rates={1: RATE}, epoch_shift=SHIFT, stamped=(7,)))
    for g in groups:
        outputs(sw, 1, igmpv2_report(H1, g.addr))
    _flow(sw, 4999, 100, 1, epoch=0)
    for i, g in enumerate(groups):  # WEBRC's base channel and a wave: one session
        msg = wire.WebrcData(session_id=7, seq=i, payload=b"x" * 32).encode()
        assert [p for p, _ in outputs(sw, 4, udp_frame(SENDER, g.addr, msg), now=T0 + EPOCH_S + 1e-3 * (i + 1))] == [1]
    _flow(sw, 4998, 100, 1, epoch=2)
    assert _last(sw)[:2] == (1, 1)
