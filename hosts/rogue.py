"""A misbehaving receiver, and malformed frames, for fault scenarios.

:class:`Rogue` is a sans-I/O endpoint (the same contract as the protocol
cores) that joins a session's group to learn what honest receivers learn
(the sender's feedback round, timestamps, sequence numbers) and then sends
feedback crafted with :mod:`hosts.wire` that no honest receiver would:

``flood``
    the protocol's own feedback message as fast as ``rate`` packets/s;
``false_report``
    a receiver rate far below the path (``claim`` bit/s): TFMCC reports
    and VLMCC challenges carry a rate the sender may adopt;
``spoof_clr``
    a claim to be the limiting receiver: TFMCC reports with ``IS_CLR`` set
    and a low rate, VLMCC ACKs as if this host were the leader;
``forged_ack``
    a reliable session's ACK (RLA SACK, MTCP ACK) claiming every packet it
    has seen sent, plus ``ahead`` more: under another receiver's id
    (``victim``: believed, that receiver's holes are never repaired), as a
    switch's fold (``fold``, MTCP: one summary for every receiver, with a
    one-packet window), or claiming packets never sent (``ahead``: a
    restarted sender that believes it skips them).

A TFMCC claim's other fields are the rogue's to choose too: the RTT it
claims (``claim_rtt_us``, 0xFFFFFFFF the largest the wire holds, 0 none),
its loss event rate (``claim_loss``, 0 to 1) and whether it echoes the
sender's timestamp (``echo``: without an echo the sender has no RTT sample
of its own to hold the claim against).

Whether the sender believes it is the protocol's business (each protocol
page says which claims it refuses); bounding the flood is the switch's
(``controller/policing.py``).  :func:`malformed_frames` makes the frames a
``malformed`` fault injects at a switch port: truncated, wrong-version and
garbage p4mcc headers, bad IGMP, runt Ethernet frames.

Run in a Mininet host as ``python -m p4mcc.hosts.rogue MODE --proto P --group G
--port N --session ID --local IP --sender IP --rate PPS --for S`` (or ``--until T``).
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Endpoint, JoinGroup, LeaveGroup, node_id

MODES = ("flood", "false_report", "spoof_clr", "forged_ack")
#: Reports per second of the false/spoofed claims when no rate is given:
#: about what an honest CLR sends on a short path.
CLAIM_PPS = 50.0


class Rogue(Endpoint):
    """See the module doc.  ``stop_at`` ends the misbehaviour (None: never)."""

    TIMERS = frozenset({"send"})  # what on_timer handles (Endpoint.TIMERS)

    role = "rogue"

    def __init__(self, mode: str, proto: str, session_id: int, group: str, sender: str, local: str,
                 sender_port: int, *, rate: float | None = None, claim_bps: float = 8_000.0,
                 stop_at: float | None = None, claim_rtt_us: int = 10_000, claim_loss: float = 0.1,
                 echo: bool = True, victim: str | None = None, fold: bool = False, ahead: int = 0) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown rogue mode {mode!r} ({', '.join(MODES)})")
        self.mode = mode
        self.proto = proto.lower()
        self.session_id = session_id
        self.group = group
        self.sender = (sender, sender_port)
        self.me = node_id(local)
        self.rate = float(rate or (20_000.0 if mode == "flood" else CLAIM_PPS))
        self.claim = int(claim_bps)
        self.stop_at = stop_at
        if not 0 <= claim_rtt_us <= 0xFFFFFFFF or not 0.0 <= claim_loss <= 1.0:
            raise ValueError("claim_rtt_us must fit 32 bits and claim_loss lie in [0, 1]")
        self.claim_rtt_us = int(claim_rtt_us)
        self.claim_loss = float(claim_loss)
        self.echo = echo
        if mode == "forged_ack" and self.proto not in ("rla", "mtcp"):
            raise ValueError(f"forged_ack forges RLA or MTCP ACKs, not {proto}'s")
        self.victim = node_id(victim) if victim else self.me
        self.fold = fold
        self.ahead = int(ahead)
        self.highest = 0  # the highest data sequence number seen sent
        self.sent = 0
        self.last: Any = None
        self.last_at = 0.0

    def on_start(self, now: float) -> None:
        self.emit(JoinGroup(self.group))
        self.next_at = now
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Any, now: float) -> None:
        msg = self.decode_session(data, self.session_id)
        if msg is not None:
            self.last, self.last_at = msg, now
            if isinstance(msg, (wire.RlaData, wire.MtcpData)):
                self.highest = max(self.highest, msg.seq)

    def on_timer(self, name: str, now: float) -> None:
        due = getattr(self, "next_at", now)
        if self.stop_at is not None and due >= self.stop_at:
            self.emit(LeaveGroup(self.group))
            return
        m = self.craft(now)
        if m is not None:
            self.send(self.sender, m)
            self.sent += 1
        # paced from the due time, not from now: a driver that wakes late
        # (a real host's loop) catches up, up to a second's worth
        self.next_at = max(getattr(self, "next_at", now), now - 1.0) + 1.0 / self.rate
        self.set_timer("send", self.next_at)

    def craft(self, now: float) -> bytes | None:
        """One feedback message of this rogue's mode for its protocol."""
        last = self.last
        ts = wire.ts_us(now)
        seq = getattr(last, "seq", 0)
        dts = getattr(last, "timestamp", 0)
        held = int((now - self.last_at) * 1e6) & 0xFFFFFFFF if last is not None else 0
        sid = self.session_id
        if self.mode == "forged_ack":
            return self._forged_ack(ts, dts)
        if self.proto == "tfmcc":
            F = wire.TfmccReportFlags
            flags = F.HAVE_RTT | F.HAVE_LOSS
            if self.mode == "spoof_clr":
                flags |= F.IS_CLR
            rate = self.claim if self.mode != "flood" else 1_000_000
            return wire.TfmccReport(
                session_id=sid, seq=self.sent & 0xFFFFFFFF, timestamp=ts, rate=rate,
                fb_round=getattr(last, "fb_round", 0), rflags=flags, rcvr_id=self.me,
                recv_rate=rate, rtt=self.claim_rtt_us, loss_rate=min(int(self.claim_loss * (1 << 32)), 0xFFFFFFFF),
                echo_ts=dts if self.echo else 0, echo_offset=held if self.echo else 0,
            ).encode()
        if self.proto == "vlmcc":
            if self.mode == "spoof_clr":
                return wire.VlmccAck(session_id=sid, seq=seq, timestamp=ts, rcvr_id=self.me,
                                     tstamp_comp=(dts + held) & 0xFFFFFFFF).encode()
            return wire.VlmccChallenge(session_id=sid, seq=seq, timestamp=ts, rate=self.claim,
                                       rcvr_id=self.me, rtt=10_000, win_size=1).encode()
        if self.proto == "rla":
            return wire.RlaSack(session_id=sid, seq=seq, timestamp=ts, cum_ack=0, adv_buf=1,
                                rcvr_id=self.me, echo_ts=dts).encode()
        if self.proto == "mtcp":
            return wire.MtcpAck(session_id=sid, seq=seq, timestamp=ts, cum_ack=0, min_cwnd=1, max_twnd=1,
                                adv_wnd=1, node_id=self.me, echo_ts=dts).encode()
        # WEBRC has no feedback: a flood is TFMCC-shaped reports to its port
        return wire.TfmccReport(session_id=sid, seq=self.sent & 0xFFFFFFFF, timestamp=ts, rate=1,
                                rcvr_id=self.me).encode()

    def _forged_ack(self, ts: int, dts: int) -> bytes | None:
        """An RLA SACK or MTCP ACK claiming up to ``highest + ahead`` (``forged_ack``)."""
        from p4mcc.hosts.mtcp import NO_CWND

        if not self.highest:
            return None  # nothing seen sent yet: nothing to claim
        claim = min(self.highest + self.ahead, 0xFFFFFFFF)
        seq = self.sent & 0xFFFFFFFF
        if self.proto == "rla":
            return wire.RlaSack(session_id=self.session_id, seq=seq, timestamp=ts, cum_ack=claim,
                                adv_buf=4096, rcvr_id=self.victim, echo_ts=dts).encode()
        return wire.MtcpAck(session_id=self.session_id, seq=seq, timestamp=ts,
                            flags=wire.Flags.AGGREGATED if self.fold else 0, cum_ack=claim,
                            min_cwnd=1 if self.fold else NO_CWND, max_twnd=0, adv_wnd=4096,
                            node_id=self.victim, echo_ts=dts, sack_bitmap=0xFFFFFFFF).encode()


def malformed_frames(rng: random.Random, src_mac: bytes, dst_mac: bytes, src_ip: int, dst_ip: int,
                     size: int = 64) -> bytes:
    """One malformed frame (a different kind each call, chosen by ``rng``)."""
    kind = rng.randrange(5)
    eth = dst_mac + src_mac + b"\x08\x00"
    if kind == 0:  # runt: not even an Ethernet header
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 14)))
    if kind == 1:  # garbage after the Ethernet header
        return eth + bytes(rng.getrandbits(8) for _ in range(max(1, size - 14)))
    ip_body_len = 8 + wire.COMMON_LEN
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ip_body_len, 0, 0, 64, 17, 0,
                     src_ip.to_bytes(4, "big"), dst_ip.to_bytes(4, "big"))
    if kind == 2:  # p4mcc header with a wrong version and an impossible length
        head = struct.pack("!HBBBBHIII", wire.MAGIC, 99, 2, 0x22, 0, 0xFFFF, 1, 0, 0)
        return eth + ip + struct.pack("!HHHH", 40000, 5000, 8 + len(head), 0) + head
    if kind == 3:  # truncated p4mcc header (IP says more than there is)
        head = struct.pack("!HBBB", wire.MAGIC, wire.VERSION, 2, 0x22)
        return eth + ip + struct.pack("!HHHH", 40000, 5000, 8 + wire.COMMON_LEN, 0) + head
    # IGMP with a bad checksum and a record count that overruns the packet
    igmp = struct.pack("!BBHHH", 0x22, 0, 0xBEEF, 0, 200)
    ipg = struct.pack("!BBHHHBBH4s4s", 0x45, 0xC0, 20 + len(igmp), 0, 0, 1, 2, 0,
                      src_ip.to_bytes(4, "big"), bytes([224, 0, 0, 22]))
    return bytes.fromhex("01005e000016") + src_mac + b"\x08\x00" + ipg + igmp


def main(argv: list[str] | None = None) -> int:
    """UDP driver for a rogue in a real host (Mininet); malformed frames need a raw socket."""
    import socket
    import time

    ap = argparse.ArgumentParser(prog="python -m p4mcc.hosts.rogue", description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=MODES + ("malformed",))
    ap.add_argument("--proto", default="tfmcc")
    ap.add_argument("--group", default="239.1.0.1")
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--session", type=int, default=1)
    ap.add_argument("--local", required=True)
    ap.add_argument("--sender", default="10.0.0.1")
    ap.add_argument("--iface", default="")
    ap.add_argument("--rate", type=float, default=None)
    ap.add_argument("--claim", type=float, default=8000.0)
    ap.add_argument("--claim-rtt-us", type=int, default=10_000, help="TFMCC: the RTT claimed (us)")
    ap.add_argument("--claim-loss", type=float, default=0.1, help="TFMCC: the loss event rate claimed")
    ap.add_argument("--no-echo", action="store_true", help="TFMCC: echo no timestamp")
    ap.add_argument("--victim", default=None, help="forged_ack: the address whose receiver id the ACKs carry")
    ap.add_argument("--fold", action="store_true", help="forged_ack: flag the ACKs as a switch's fold (MTCP)")
    ap.add_argument("--ahead", type=int, default=0, help="forged_ack: packets claimed beyond the highest seen sent")
    ap.add_argument("--for", dest="duration", type=float, default=5.0, help="seconds from this process's start")
    ap.add_argument("--until", type=float, default=None,
                    help="end at this CLOCK_MONOTONIC time instead (one clock for every network namespace of "
                         "the machine): a fault's end stays where the scenario puts it, however late this starts")
    a = ap.parse_args(argv)
    end = a.until if a.until is not None else time.monotonic() + a.duration
    if a.mode == "malformed":
        rng = random.Random(1)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((a.iface, 0))
        mac = s.getsockname()[4][:6]
        src = int.from_bytes(socket.inet_aton(a.local), "big")
        dst = int.from_bytes(socket.inet_aton(a.sender), "big")
        n = 0
        gap = 1.0 / (a.rate or 1000.0)
        refused = 0
        while time.monotonic() < end:
            frame = malformed_frames(rng, mac, b"\xff" * 6, src, dst)
            if len(frame) < 14:  # a packet socket sends nothing shorter than an Ethernet header
                frame += bytes(rng.getrandbits(8) for _ in range(14 - len(frame)))
            try:
                s.send(frame)
                n += 1
            except OSError:
                refused += 1  # the kernel refused it: nothing reached the wire
            time.sleep(gap)
        print(f"malformed frames sent: {n} (refused by the kernel: {refused})", flush=True)
        return 0
    r = Rogue(a.mode, a.proto, a.session, a.group, a.sender, a.local, a.port, rate=a.rate, claim_bps=a.claim,
              claim_rtt_us=a.claim_rtt_us, claim_loss=a.claim_loss, echo=not a.no_echo,
              victim=a.victim, fold=a.fold, ahead=a.ahead)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("", a.port))
    sock.setblocking(False)
    t0 = time.monotonic()
    r.start(0.0)
    while time.monotonic() < end:
        now = time.monotonic() - t0
        ev = r.next_event()
        while ev is not None:
            if isinstance(ev, JoinGroup):
                mreq = socket.inet_aton(ev.group) + socket.inet_aton(a.local)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            ev = r.next_event()
        try:
            while True:
                data, src = sock.recvfrom(65535)
                r.receive_datagram(data, src, now)
        except BlockingIOError:
            pass
        r.handle_timer(now)
        for d in r.datagrams_to_send():
            sock.sendto(d.data, d.dest)
        t = r.get_timer()
        time.sleep(max(0.0, min(0.01, (t - now) if t is not None else 0.01)))
    print(f"rogue {a.mode} sent {r.sent}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
