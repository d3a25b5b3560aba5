"""Any sequence of datagrams -- garbage, foreign, or well-formed with wild values --
leaves every core running: no exception, bounded work, malformed ones counted."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rla_util import DefaultReceiver, DefaultSender
from win_util import cfg
from vlmcc_util import DefaultReceiver as DefaultVlmccReceiver
from vlmcc_util import DefaultSender as DefaultVlmccSender

from mtcp_util import MtcpReceiver, MtcpSender

from p4mcc.hosts.mtcp import MtcpParams
from p4mcc.hosts.rla import RlaParams
from p4mcc.hosts.vlmcc import VlmccParams, VlmccSender
from p4mcc.hosts.wire import (
    MtcpAck,
    MtcpData,
    MtcpNack,
    MtcpWindowUpdate,
    RlaData,
    RlaSack,
    VlmccAck,
    VlmccChallenge,
    VlmccData,
    VlmccStart,
)

U32 = st.integers(0, 0xFFFFFFFF)
NEAR = st.one_of(st.integers(0, 40), U32)  # mostly plausible, sometimes absurd
IDS = st.sampled_from([0x0A000101, 0x0A000102, 0x0A000201, 0xFFFFFFFF, 0])


def _blocks():
    return st.lists(st.tuples(NEAR, NEAR), max_size=4).map(tuple)


MESSAGES = st.one_of(
    st.builds(RlaData, session_id=st.just(9), seq=NEAR, timestamp=U32, flags=st.integers(0, 255),
              payload=st.binary(max_size=40)),
    st.builds(RlaSack, session_id=st.just(9), cum_ack=NEAR, adv_buf=NEAR, rcvr_id=IDS, echo_ts=U32,
              blocks=_blocks()),
    st.builds(MtcpData, session_id=st.just(9), seq=NEAR, timestamp=U32, flags=st.integers(0, 255),
              payload=st.binary(max_size=40)),
    st.builds(MtcpAck, session_id=st.just(9), cum_ack=NEAR, min_cwnd=NEAR, max_twnd=NEAR, adv_wnd=NEAR,
              node_id=IDS, echo_ts=U32, sack_bitmap=U32, flags=st.integers(0, 255)),
    st.builds(MtcpWindowUpdate, session_id=st.just(9), cum_ack=NEAR, min_cwnd=NEAR, max_twnd=NEAR,
              adv_wnd=NEAR, node_id=IDS, echo_ts=U32, sack_bitmap=U32, flags=st.integers(0, 255)),
    st.builds(MtcpNack, session_id=st.just(9), cum_ack=NEAR, node_id=IDS,
              missing=st.lists(NEAR, max_size=8).map(tuple)),
    st.builds(VlmccData, session_id=st.just(9), seq=NEAR, timestamp=U32, leader_id=IDS,
              drift_prev=st.integers(-(2**31), 2**31 - 1), rate=U32),
    st.builds(VlmccAck, session_id=st.just(9), seq=NEAR, rcvr_id=IDS, tstamp_comp=U32),
    st.builds(VlmccChallenge, session_id=st.just(9), timestamp=U32, rate=U32, rcvr_id=IDS, rtt=U32,
              win_size=NEAR),
    st.builds(VlmccStart, session_id=st.just(9), leader=IDS, rate=U32, win_size=NEAR, tstamp_comp=U32),
)
DATAGRAMS = st.one_of(MESSAGES.map(lambda m: m.encode()), st.binary(max_size=60))


def _cores():
    tree = "10.0.1.1>10.0.0.1,10.0.1.2>10.0.1.1"
    yield DefaultSender(cfg(RlaParams(receivers=1)))
    yield DefaultReceiver(cfg(RlaParams(), local="10.0.1.1"))
    yield MtcpSender(cfg(MtcpParams(tree=tree)))
    yield MtcpReceiver(cfg(MtcpParams(tree=tree), local="10.0.1.1"))
    yield MtcpSender(cfg(MtcpParams(assisted=True)))
    yield DefaultVlmccSender(cfg(VlmccParams()))
    yield DefaultVlmccReceiver(cfg(VlmccParams(), local="10.0.1.1"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(DATAGRAMS, st.floats(0, 0.5), st.sampled_from(["10.0.1.1", "10.0.1.2"])),
                max_size=25))
def test_cores_survive_any_datagram_sequence(seq):
    for ep in _cores():
        now = 0.0
        ep.start(now)
        for data, dt, src in seq:
            now += dt
            ep.receive_datagram(data, (src, 6001), now)
            t = ep.get_timer()
            steps = 0
            while t is not None and t <= now and steps < 1000:
                ep.handle_timer(now)
                t = ep.get_timer()
                steps += 1
            assert steps < 1000, f"{type(ep).__name__}: timers never settle"
            ep.datagrams_to_send()
            while ep.next_event() is not None:
                pass


def test_data_past_the_last_sackable_sequence_number_is_dropped_and_counted():
    """A SACK block ends one past a packet in 32 bits, so a receiver cannot
    acknowledge seq 2^32 - 1: such data (hypothesis found it) is malformed,
    not a crash when the receiver answers it."""
    tree = "10.0.1.1>10.0.0.1"
    for rc, msg in ((DefaultReceiver(cfg(RlaParams(), local="10.0.1.1")),
                     RlaData(session_id=9, seq=0xFFFFFFFF, timestamp=0, flags=0, payload=b"")),
                    (MtcpReceiver(cfg(MtcpParams(tree=tree), local="10.0.1.1")),
                     MtcpData(session_id=9, seq=0xFFFFFFFF, timestamp=0, flags=0, payload=b""))):
        rc.start(0.0)
        rc.receive_datagram(msg.encode(), ("10.0.0.1", 6001), 0.0)
        rc.handle_timer(0.5)
        rc.datagrams_to_send()
        assert rc.malformed == 1
