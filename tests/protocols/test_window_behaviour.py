"""Behaviour of RLA, MTCP and VLMCC over an in-process network.

The network (``testnet.TinyNet``) runs on the simulator's clock and links
(``netsim.engine``, ``netsim.link``): real frames, drop-tail queues, Bernoulli
loss.  Its routers are plain multicast routers; the switch-assisted MTCP case
that needs the P4 program runs when the simulator has its P4 switch node.
"""

from __future__ import annotations

import pytest
from rla_util import DefaultReceiver, DefaultSender, rules, sender_class
from testnet import CbrSource, Sink, TinyNet
from vlmcc_util import DefaultReceiver as DefaultVlmccReceiver
from vlmcc_util import DefaultSender as DefaultVlmccSender
from vlmcc_util import default_session

from p4mcc.hosts.mtcp import tree as mtcp_tree
from p4mcc.hosts.core import node_id
from mtcp_util import MtcpReceiver, MtcpSender, PaperReceiver, PaperSender, composed

from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.mtcp.constants import ACK_DELAY
from p4mcc.hosts.mtcp.rules import TimerJitter
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.rla import RlaParams
from p4mcc.hosts.vlmcc import VlmccParams, VlmccSender
from p4mcc.hosts.wire import COMMON_LEN, Flags, MtcpAck, MtcpWindowUpdate, VlmccData, body_size, decode

GROUP, PORT, SND = "239.1.1.1", 6000, "10.0.0.1"


def two_branch_net(seed: int, loss: float, per_branch: int = 3) -> tuple[TinyNet, list]:
    """Sender - r0, then a 2 Mbit/s and a 5 Mbit/s branch with lossy access links."""
    net = TinyNet(seed=seed)
    for r in ("r0", "r1", "r2"):
        net.router(r)
    net.host("s", SND)
    net.link("s", "r0", rate_bps=10e6, delay_s=0.005)
    net.link("r0", "r1", rate_bps=2e6, delay_s=0.01, queue=20)
    net.link("r0", "r2", rate_bps=5e6, delay_s=0.01, queue=20)
    hosts = []
    for i in range(2 * per_branch):
        branch = 1 if i < per_branch else 2
        h = net.host(f"h{i}", f"10.0.{branch}.{i + 1}")
        net.link(f"r{branch}", h.name, rate_bps=10e6, delay_s=0.01, loss=loss)
        hosts.append(h)
    return net, hosts


def session(params, local: str) -> SessionConfig:
    return SessionConfig(1, GROUP, PORT, SND, local, params, seed=11)


def assert_everything_delivered(hosts, packets: int, size: int) -> None:
    for h in hosts:
        seqs = [d.seq for d in h.delivered]
        assert seqs == list(range(1, packets + 1)), f"{h.name} got {len(seqs)} packets"
        assert sum(d.size for d in h.delivered) == packets * size
        assert h.ep.corrupt == 0


def test_rla_delivers_every_byte_to_every_receiver_under_one_percent_loss():
    net, hosts = two_branch_net(seed=3, loss=0.01)
    p = RlaParams(total_packets=1500, receivers=len(hosts), packet_size=1000)
    snd = DefaultSender(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(DefaultReceiver(session(p, h.ip)))
    net.run(60)
    assert snd.done
    assert_everything_delivered(hosts, 1500, 1000)
    lost = sum(net.channel(f"r{1 if i < 3 else 2}", h.name).counters.loss_drops for i, h in enumerate(hosts))
    assert lost > 0  # the links really lost packets
    assert snd.mcast_rexmits + snd.ucast_rexmits >= lost * 0.5
    # Random listening: far fewer cuts than congestion signals from six receivers.
    assert snd.random_cuts + snd.forced_cuts < snd.congestion_signals


@pytest.mark.parametrize("listening", ["random", "worst_path"])
def test_rla_cuts_about_once_per_n_signals_and_keeps_the_bottleneck_busy(listening):
    """Section 5's headline: with n equally troubled receivers the sender cuts on about
    1/n of the congestion signals, so its throughput does not fall as n grows.  The paper's
    random listening draws 1/n for each of n troubled receivers; ``worst_path_listening``
    (default) answers one of them, the acker: on equal paths the same share of signals."""
    n = 4
    net = TinyNet(seed=1)
    net.router("r0")
    net.host("s", SND)
    net.link("s", "r0", rate_bps=100e6, delay_s=0.005)
    hosts = []
    for i in range(n):  # n independent 1 Mbit/s bottlenecks, 20-packet queues, no random loss
        net.router(f"g{i}")
        net.link("r0", f"g{i}", rate_bps=1e6, delay_s=0.02, queue=20)
        h = net.host(f"h{i}", f"10.0.{i + 1}.1")
        net.link(f"g{i}", h.name, rate_bps=100e6, delay_s=0.001 + 0.0005 * i)
        hosts.append(h)
    p = RlaParams(receivers=n)
    cls = DefaultSender if listening == "worst_path" else sender_class(rules(("worst_path_listening",)))
    snd = cls(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(DefaultReceiver(session(p, h.ip)))
    net.run(30.0)
    assert snd.num_trouble_rcvr == (n if listening == "random" else 1)
    cuts = snd.random_cuts + snd.forced_cuts
    assert snd.congestion_signals > 40
    assert 0.5 / n < cuts / snd.congestion_signals < 2.0 / n
    # Goodput of the slowest receiver: at least 90 % of what 1 Mbit/s carries in 1062-byte frames.
    goodput = min(h.ep.buf.delivered_bytes for h in hosts) * 8 / 30.0
    assert goodput > 0.9 * 1e6 * 1000 / 1062


@pytest.mark.parametrize("k", [0, 2])
def test_mtcp_delivers_every_byte_to_every_receiver_under_one_percent_loss(k):
    """k = 0: every receiver a child of the sender; k = 2: a tree built from the topology."""
    net, hosts = two_branch_net(seed=5, loss=0.01)
    if k:
        tree = mtcp_tree.from_graph(net.g, "s", [h.name for h in hosts], k=k)
        ips = {n: (net.hosts[n].ip) for n in ["s", *[h.name for h in hosts]]}
        text = mtcp_tree.from_parent_map(SND, {ips[c]: ips[p] for c, p in tree.parent.items()}, k).encode()
    else:
        text = mtcp_tree.flat(SND, [h.ip for h in hosts]).encode()
    # The paper's window rule: independent losses do not shrink it (the rule
    # ``reno_window``, on by default, halves on them as TCP would).
    p = MtcpParams(total_packets=1500, tree=text, k=k or 16, packet_size=1000)
    vegas = {"reno_window": False, "recovery_hold": False}
    snd = composed(PaperSender, **vegas)(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(composed(PaperReceiver, **vegas)(session(p, h.ip)))
    net.run(60)
    assert snd.done
    assert_everything_delivered(hosts, 1500, 1000)
    agents = [h for h in hosts if h.ep.is_agent]
    assert bool(agents) == (k == 2)
    # Independent losses are repaired by NACKs; few of them shrink the sender's window.
    lost = sum(net.channel(f"r{1 if i < 3 else 2}", h.name).counters.loss_drops for i, h in enumerate(hosts))
    assert snd.nack_rexmits + sum(h.ep.nack_rexmits for h in agents) > 0
    assert lost > 30 and snd.cwnd_cuts * 10 < lost


def test_mtcp_sender_hears_one_summary_per_child_per_ack_round():
    net, hosts = two_branch_net(seed=7, loss=0.0)
    ips = {h.name: h.ip for h in hosts}
    tree = mtcp_tree.from_graph(net.g, "s", list(ips), k=2)
    text = mtcp_tree.from_parent_map(SND, {ips.get(c, SND): ips.get(p, SND) for c, p in tree.parent.items()}, 2).encode()
    p = MtcpParams(total_packets=800, tree=text, k=2)
    snd = MtcpSender(session(p, SND))
    seen: list[tuple[float, int]] = []
    orig = snd.on_datagram

    def spy(data, src, now):
        m = decode(data)
        if isinstance(m, (MtcpAck, MtcpWindowUpdate)):
            seen.append((now, m.node_id, isinstance(m, MtcpAck)))
        orig(data, src, now)

    snd.on_datagram = spy  # type: ignore[method-assign]
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(MtcpReceiver(session(p, h.ip)))
    net.run(30)
    assert snd.done
    children = {node_id(c) for c in mtcp_tree.parse(text, SND).children_of(SND)}
    assert len(children) == 2 < len(hosts)
    assert {n for _t, n, _a in seen} == children  # never a grandchild
    # Per child, at most one ACK per delayed-ACK round (window updates -- hellos,
    # probe answers -- come on their own timers).
    for c in children:
        times = sorted(t for t, n, is_ack in seen if n == c and is_ack)
        # (each round lasts ACK_DELAY jittered by +-TimerJitter.JITTER, so at least half of it)
        close = sum(1 for a, b in zip(times, times[1:]) if b - a < ACK_DELAY * (1 - TimerJitter.JITTER) * 0.99)
        assert close <= 2, f"child {c} sent {close} summaries within one ACK round"


def _fold_mtcp(router, port, payload, src):
    """A stand-in for the P4 program's fold (docs/p4-program.md): min/max over the
    latest summary of each reporter, node_id and echo_ts kept, AGGREGATED set,
    an unchanged fold absorbed."""
    try:
        m = decode(payload)
    except Exception:
        return None
    if not isinstance(m, (MtcpAck, MtcpWindowUpdate)) or router.name != "r0":
        return None
    st = router.__dict__.setdefault("fold_state", {})
    st[m.node_id] = m
    ms = list(st.values())
    folded = type(m)(
        session_id=m.session_id, cum_ack=min(x.cum_ack for x in ms), min_cwnd=min(x.min_cwnd for x in ms),
        max_twnd=max(x.max_twnd for x in ms), adv_wnd=min(x.adv_wnd for x in ms),
        node_id=m.node_id, echo_ts=m.echo_ts, flags=m.flags | Flags.AGGREGATED,
    )
    key = (folded.cum_ack, folded.min_cwnd, folded.max_twnd, folded.adv_wnd)
    if router.__dict__.get("fold_last") == key:
        return []  # an unchanged fold is absorbed
    router.__dict__["fold_last"] = key
    return [folded.encode()]


def test_mtcp_sender_logic_unchanged_with_folded_summaries():
    """Sender-side half of switch assistance, with a Python fold in place of the switch."""
    net, hosts = two_branch_net(seed=9, loss=0.01, per_branch=2)
    net.routers["r0"].fold = _fold_mtcp
    p = MtcpParams(total_packets=600, receivers=1, assisted=True, packet_size=1000)
    snd = MtcpSender(session(p, SND))
    net.hosts["s"].attach(snd)
    for h in hosts:
        h.attach(MtcpReceiver(session(p, h.ip)), at=0.0)
    net.run(60)
    assert snd.done
    assert_everything_delivered(hosts, 600, 1000)
    assert [c.aggregated for c in snd._acking()] == [True]


# VLMCC ---------------------------------------------------------------------------------


def vlmcc_fig5(seed: int = 3) -> tuple[TinyNet, VlmccSender, list]:
    """The paper's Fig. 5: two 1 Mbit/s branches; cross traffic on and off (Fig. 6 timing).

    Cross traffic is constant-rate (0.5 Mbit/s) instead of TCP, on the
    branch of router 2 during [10, 25] and [41, 60] s and of router 3 during
    [27, 45] s.
    """
    net = TinyNet(seed=seed)
    for r in ("R1", "R2", "R3"):
        net.router(r)
    net.host("src", SND)
    net.link("src", "R1", rate_bps=10e6, delay_s=0.001)
    net.link("R1", "R2", rate_bps=1e6, delay_s=0.001, queue=20)
    net.link("R1", "R3", rate_bps=1e6, delay_s=0.001, queue=20)
    rcv = []
    for i, r in enumerate(["R2", "R2", "R3", "R3"]):
        h = net.host(f"v{i}", f"10.0.{r[1]}.{i + 1}")
        net.link(r, h.name, rate_bps=10e6, delay_s=0.001)
        rcv.append(h)
    for j, (r, sink_ip) in enumerate((("R2", "10.0.2.100"), ("R3", "10.0.3.100"))):
        sink = net.host(f"t{j}", sink_ip)
        net.link(r, sink.name, rate_bps=10e6, delay_s=0.001)
        sink.attach(Sink())
    for j, (dst, start, stop) in enumerate((("10.0.2.100", 10, 25), ("10.0.3.100", 27, 45),
                                            ("10.0.2.100", 41, 60))):
        c = net.host(f"c{j}", f"10.0.9.{j + 1}")
        net.link(c.name, "R1", rate_bps=10e6, delay_s=0.001)
        c.attach(CbrSource((dst, 7000 + j), 0.5e6, start=start, stop=stop))
    return net, default_session(net.hosts["src"], rcv, session, stagger=0.1), rcv


def _leader_at(snd: VlmccSender, t: float) -> str:
    leader = 0
    for when, rid in snd.leader_log:
        if when <= t:
            leader = rid
    return {2: "R2", 3: "R3"}.get((leader >> 8) & 0xFF, "?")


def test_vlmcc_leader_follows_the_bottleneck_within_five_seconds():
    net, snd, _rcv = vlmcc_fig5()
    net.run(60)
    # Router 3's branch becomes the bottleneck at 27 s (router 2's cleared at 25 s).
    assert _leader_at(snd, 32.0) == "R3"
    assert all(_leader_at(snd, t) == "R3" for t in (35.0, 40.0, 44.9))
    # At 45 s it clears while router 2's branch is loaded again since 41 s: back to R2.
    assert _leader_at(snd, 50.0) == "R2"
    assert all(_leader_at(snd, t) == "R2" for t in (55.0, 59.9))
    assert _leader_at(snd, 15.0) == "R2"


def test_vlmcc_alone_on_one_megabit_has_no_losses_in_steady_state():
    net = TinyNet(seed=5)
    net.router("R1")
    net.router("R2")
    net.host("src", SND)
    net.link("src", "R1", rate_bps=10e6, delay_s=0.001)
    bottleneck = net.link("R1", "R2", rate_bps=1e6, delay_s=0.02, queue=20)
    p = VlmccParams()
    snd = DefaultVlmccSender(session(p, SND))
    net.hosts["src"].attach(snd)
    rcv = []
    for i in range(3):
        h = net.host(f"v{i}", f"10.0.2.{i + 1}")
        net.link("R2", h.name, rate_bps=10e6, delay_s=0.001)
        h.attach(DefaultVlmccReceiver(session(p, h.ip)))
        rcv.append(h)
    net.run(10.0)
    drops, gaps = bottleneck.ab.counters.queue_drops, [h.ep.lost for h in rcv]
    delivered = bottleneck.ab.counters.delivered_packets
    net.run(60.0)
    assert bottleneck.ab.counters.queue_drops == drops
    assert [h.ep.lost for h in rcv] == gaps
    # ... while using the link: at least 80% of 1 Mbit/s (payloads + headers).
    carried = bottleneck.ab.counters.delivered_packets - delivered
    frame = p.packet_size + COMMON_LEN + body_size(VlmccData) + 42  # + UDP, IPv4, Ethernet
    assert carried / 50.0 >= 0.8 * 1e6 / (frame * 8)
