"""A restarted MTCP sender takes no claim beyond what its receivers show together.

A forger's report reaches the restarted sender first and claims a million
packets.  The sender calls the roll and gathers its members' answers for
RTO_INITIAL before its first packet: the lowest claim is where it resumes,
and a claim outside a receive buffer of the majority's is forgotten with
its node.  Heard only after the gathering, the first honest report lies
more than a receive buffer below the resumed start: no receiver the sender
kept within a buffer of the others can be there if the claim were true, so
the stream is wound back to the honest report and the honest receiver gets
every packet from there."""

from __future__ import annotations

from mtcp_util import PaperSender, composed
from win_util import cfg, feed, out, run_timers

from p4mcc.hosts.core import node_id
from p4mcc.hosts.mtcp import NO_CWND, MtcpParams
from p4mcc.hosts.wire import Flags, MtcpAck, MtcpData, MtcpWindowUpdate

FORGER, R1, R2 = "10.0.1.66", "10.0.1.1", "10.0.1.2"
CLAIM = 10**6


def _report(node: str, cum: int, cls=MtcpAck):
    return cls(session_id=9, cum_ack=cum, min_cwnd=NO_CWND, max_twnd=0, adv_wnd=4096, node_id=node_id(node))


def _new_data(msgs) -> list[int]:
    return [m.seq for _d, m in msgs if isinstance(m, MtcpData) and not m.flags & Flags.RETRANSMIT]


def _restarted(**switches: bool):
    """A restarted sender that heard only the forger while it gathered answers (no honest one)."""
    s = composed(PaperSender, "default", **switches)(cfg(MtcpParams()))
    s.start(0.0)
    feed(s, _report(FORGER, CLAIM), 0.05, src=FORGER)  # heard before the first packet
    assert not _new_data(out(s))  # it gathers its members' answers first
    run_timers(s, 0.05 + s.RESUME_GATHER_S)
    assert _new_data(out(s))[:1] == [CLAIM + 1] and s.resumed_from == CLAIM + 1
    return s


def test_honest_answers_heard_while_gathering_outvote_a_forged_claim():
    """The first report of data calls the roll; the members' answers within RTO_INITIAL win
    (the lowest claim is where the stream resumes), and a claim outside a receive buffer of
    the majority's is forgotten with its node: the stream never goes past the claim."""
    s = composed(PaperSender, "default")(cfg(MtcpParams()))
    s.start(0.0)
    feed(s, _report(FORGER, CLAIM), 0.05, src=FORGER)
    feed(s, _report(R1, 300, MtcpWindowUpdate), 0.1, src=R1)
    feed(s, _report(R2, 300, MtcpWindowUpdate), 0.12, src=R2)
    assert s.resumed_from == 301 and node_id(FORGER) not in s.children and s.forged >= 1
    run_timers(s, 0.05 + s.RESUME_GATHER_S)
    sent = _new_data(out(s))
    assert sent and sent[0] == 301 and max(sent) < CLAIM


def test_an_honest_report_below_the_buffer_winds_a_forged_resume_back():
    s = _restarted()
    feed(s, _report(R1, 300, MtcpWindowUpdate), 0.1, src=R1)
    assert s.rewinds == 1 and s.resumed_from == 301
    feed(s, _report(FORGER, CLAIM), 0.15, src=FORGER)  # the forger again: clipped to what was sent
    sent = _new_data(out(s))
    assert sent and sent[0] == 301 and max(sent) < CLAIM
    # R1 acknowledges what it got: the stream goes on from there, not from the claim
    feed(s, _report(R1, sent[-1]), 0.2, src=R1)
    assert _new_data(out(s))[0] == sent[-1] + 1
    # the forger cannot wind it back again, and a receiver within a buffer never does
    feed(s, _report(FORGER, 5), 0.25, src=FORGER)
    feed(s, _report(R2, 290), 0.3, src=R2)
    assert s.rewinds == 1 and s.resumed_from == 301


def test_without_the_rewind_a_forged_resume_leaves_the_honest_receiver_behind_for_good():
    """The rule's absence is what the issue measured: the sender stays past the claim."""
    s = _restarted()
    s.rewound_by.add(node_id(R1))  # as if R1 had wound it back already
    feed(s, _report(R1, 300, MtcpWindowUpdate), 0.1, src=R1)
    assert s.rewinds == 0 and s.resumed_from == CLAIM + 1


# End to end: the shipped sender-crash scenario with a forger beside the receivers --------------

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from p4mcc.hosts.core import Endpoint  # noqa: E402

SCENARIO = Path(__file__).resolve().parents[3] / "topologies" / "scenarios" / "faults" / "sender-crash.yaml"
DRAIN_S = 4.0  # what was sent this long before the end must have arrived


class _Claimer(Endpoint):
    """Sends the sender one ACK claiming ``CLAIM`` packets every 10 ms while it runs."""

    role = "claimer"

    def __init__(self, sender: str, local: str, port: int) -> None:
        super().__init__()
        self.sender, self.me, self.port = sender, node_id(local), port

    def on_start(self, now: float) -> None:
        self.set_timer("claim", now)

    def on_datagram(self, data: bytes, src: Any, now: float) -> None:
        pass

    def on_timer(self, name: str, now: float) -> None:
        self.send((self.sender, self.port), MtcpAck(session_id=1, cum_ack=CLAIM, min_cwnd=NO_CWND, max_twnd=0,
                                                    adv_wnd=4096, node_id=self.me).encode())
        self.set_timer("claim", now + 0.01)


def test_a_restarted_sender_that_first_hears_a_forged_claim_loses_no_honest_byte():
    import dataclasses

    import yaml

    from p4mcc.netsim.run import build_run
    from p4mcc.netsim.switches import choose_switch
    from p4mcc.scenario.faults import with_protocol
    from p4mcc.scenario.model import scenario_from_dict

    doc = yaml.safe_load(SCENARIO.read_text())
    doc["topology"]["hosts"].append("forger")  # beside the receivers
    doc["topology"]["links"].append(["forger", "s2"])
    sc = with_protocol(scenario_from_dict(doc), "mtcp")
    # unassisted: a folding switch would already take the lowest of the claim and the receivers'
    sc = dataclasses.replace(sc, sessions=[dataclasses.replace(sc.sessions[0], assistance=False)])
    run = build_run(sc, switch=choose_switch("p4", sc))
    s, hosts = sc.sessions[0], run.net.hosts
    crash = sc.faults[0]
    back = crash.at + crash.duration
    claimer = _Claimer(hosts[s.sender].ip, hosts["forger"].ip, s.port)
    hosts["forger"].add_endpoint(claimer, s.port, label="forger", start_at=back - 0.05, stop_at=back + 0.5)
    label = f"{s.name}/{s.sender}"
    sent: dict[str, int] = {}
    run.sim.at(sc.duration - DRAIN_S, lambda: sent.setdefault("seq", run.agents[label].next_seq - 1))
    run.sim.run(until=sc.duration)
    snd = run.agents[label]
    for r in s.receivers:
        buf = run.agents[f"{s.name}/{r}"].rbuf
        assert buf.cum_ack >= sent["seq"] and sent["seq"] < CLAIM, (r, buf.cum_ack, sent["seq"])
        assert buf.delivered_packets == buf.cum_ack  # 1..cum_ack, each once: nothing skipped
    # outvoted while the sender gathered its members' answers: never sent past, never wound back
    assert snd.rewinds == 0 and 1 < snd.resumed_from < CLAIM and snd.forged >= 1


def test_a_started_sender_drops_an_ack_of_data_never_sent_and_the_member_that_sent_it():
    """RFC 9293 3.10.7.4: an ACK of something not yet sent is dropped.  A member whose report
    claims past the stream is not one: kept, its record would hold the window where it was
    last believed (the forger beside a rebooted sender held it at one packet)."""
    s = composed(PaperSender, "default")(cfg(MtcpParams(receivers=2)))
    s.start(0.0)
    feed(s, _report(R1, 0), 0.01, src=R1)
    feed(s, _report(FORGER, 0), 0.02, src=FORGER)
    sent = _new_data(out(s))
    assert sent and node_id(FORGER) in s.children
    forged = s.forged
    feed(s, _report(FORGER, sent[-1] + CLAIM), 0.1, src=FORGER)
    assert s.forged == forged + 1 and node_id(FORGER) not in s.children
    feed(s, _report(R1, sent[-1]), 0.11, src=R1)  # the honest member's ACK still moves the stream
    assert _new_data(out(s))[0] == sent[-1] + 1
