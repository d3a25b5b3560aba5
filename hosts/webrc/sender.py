"""WEBRC's sender and its channels (paper 3, Fig. 1; RFC 3738 4): no feedback and no
named rule; the channels and their rates: ``docs/protocols/webrc.md#the-sender``."""

from __future__ import annotations

import ipaddress
import math
import struct
from typing import Any

from p4mcc.hosts import wire
from p4mcc.hosts.core import Address
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint, params_from_dict
from p4mcc.hosts.webrc.params import DATA_HEADER, WebrcParams
from p4mcc.hosts.wire import WEBRC_LAST_PSN, WebrcData, WireError


def _field_offsets() -> dict[str, int]:
    """Byte offsets of the fields a sender changes per packet, from the wire layout."""
    out, pos = {}, 0
    for f in (*wire.COMMON_FIELDS, *WebrcData.BODY):
        out[f.name] = pos
        pos += f.bits // 8
    return out


_OFF = _field_offsets()
_U32 = struct.Struct("!I")
_U16 = struct.Struct("!H")


def encode_data(template: bytes, seq: int, ts: int, cn: int, psn: int, tsi: int) -> bytes:
    """``WebrcData(...).encode()`` from a pre-encoded ``template`` (same session and
    payload length), without re-validating every field: the sender's hot path."""
    buf = bytearray(template)
    _U32.pack_into(buf, _OFF["seq"], seq & 0xFFFFFFFF)
    _U32.pack_into(buf, _OFF["timestamp"], ts & 0xFFFFFFFF)
    _U16.pack_into(buf, _OFF["cn"], cn)
    _U16.pack_into(buf, _OFF["psn"], psn & 0xFFFF)
    _U32.pack_into(buf, _OFF["tsi"], tsi & 0xFFFFFFFF)
    return bytes(buf)


def channel_group(base_group: str, cn: int, t: int) -> str:
    """Group address of channel ``cn`` (base channel cn = T uses the session group)."""
    return base_group if cn == t else str(ipaddress.IPv4Address(base_group) + 1 + cn)


def channel_groups(group: str, params: WebrcParams) -> tuple[str, ...]:
    """Every group of a session: the base channel first, then waves T-1 .. 0."""
    return tuple(channel_group(group, cn, params.t) for cn in range(params.t, -1, -1))


#: The share of its own link a sender's default SR may fill: the sender sends
#: every channel (RFC 3738 4.2), so its link carries all of SR, and an
#: overflow there drops every channel; the rest is room for IGMP and ARP.
SENDER_LINK_SHARE = 0.9


def wire_rate_bps(params: WebrcParams) -> float:
    """The session's rate on the sender's link: SR with every header of a frame."""
    frame = params.packet_length + DATA_HEADER + wire.FRAME_OVERHEAD
    return params.session_rate_bps * frame / params.packet_length


def fit_sender_link(given: dict[str, Any], link_bps: float) -> tuple[dict[str, Any], str | None]:
    """The parameters to add to ``given`` so that a default SR fits in
    :data:`SENDER_LINK_SHARE` of the sender's ``link_bps``, and a warning when
    a rate the session sets does not fit (kept: the user may mean it)."""
    params = params_from_dict(WebrcParams, given)
    need = wire_rate_bps(params)
    room = SENDER_LINK_SHARE * link_bps
    if need <= room:
        return {}, None
    if any(k.replace("-", "_") == "session_rate_bps" for k in given):
        return {}, (f"WEBRC's session_rate_bps {params.session_rate_bps / 1e6:g} Mbit/s needs "
                    f"{need / 1e6:.3g} Mbit/s on the sender's {link_bps / 1e6:g} Mbit/s link: "
                    "its queue will drop packets of every channel")
    rate = math.floor(params.session_rate_bps * room / need)
    try:
        params_from_dict(WebrcParams, {**given, "session_rate_bps": float(rate)})
    except ValueError as e:
        return {}, f"the sender's {link_bps / 1e6:g} Mbit/s link is too slow for WEBRC: {e}"
    return {"session_rate_bps": float(rate)}, None


class WebrcSender(SessionEndpoint[WebrcParams], role="webrc-sender"):
    """One packet every 1/SR s from the channel with the most credit at its
    fluid rate; each wave's budget, fixed at its start, ends at PSN 65535."""

    TIMERS = frozenset({"send"})  # what on_timer handles (Endpoint.TIMERS)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        s = self.p
        self.N, self.T, self.Q = s.n, s.t, s.q
        self.sr = s.session_rate_pps
        self.groups = [channel_group(config.group, cn, self.T) for cn in range(self.T + 1)]
        self.t0 = 0.0
        self.slot = 0
        self.credit: dict[int, float] = {}
        self.budget: dict[int, int] = {}
        self.psn: dict[int, int] = {}
        self.base_psn = 0
        self.seq = 0
        self._coef: list[tuple[int, float]] = []
        self._newest = 0
        self._template = WebrcData(session_id=config.session_id, payload=bytes(s.packet_length)).encode()
        #: The schedule's own clock: ticks every 1/SR; each packet leaves at its tick.
        self._tick = 0.0

    def wave_slot_packets(self, age: int) -> float:
        """Fluid packets a wave sends in its slot ``age`` (0 = newest)."""
        s = self.p
        k = s.slot_avg
        if age >= 1:
            return s.base_rate_pps * s.p ** (age - self.N) * k * s.tsd
        others = sum(s.base_rate_pps * s.p ** (j - self.N) * k for j in range(1, self.N))
        return (self.sr - s.base_rate_pps * k - others) * s.tsd

    def _slot_coefficients(self) -> None:
        """Per-slot constants of the fluid model: rate = coef · P^τ (τ: slot fraction)."""
        s = self.p
        k = self.slot
        coef = [(self.T, s.base_rate_pps)]
        for j in range(1, self.N):
            coef.append(((k + self.N - 1 - j) % self.T, s.base_rate_pps * s.p ** (j - self.N)))
        self._coef = coef
        self._newest = (k + self.N - 1) % self.T

    def _start_wave(self, cn: int, age: int) -> None:
        count = max(1, round(sum(self.wave_slot_packets(a) for a in range(age, self.N))))
        self.budget[cn] = count
        self.psn[cn] = (WEBRC_LAST_PSN + 1 - count) & 0xFFFF
        self.credit[cn] = 0.0

    def on_start(self, now: float) -> None:
        self.t0 = now
        self._slot_coefficients()
        self.credit[self.T] = 0.0
        for cn in range(self.N):  # at slot 0 channels 0 .. N-1 carry waves, the newest last
            self._start_wave(cn, self.N - 1 - cn)
        self._tick = now
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        # WEBRC has no feedback: anything arriving is counted and dropped,
        # what does not decode as malformed.
        try:
            wire.decode(data)
        except WireError:
            self.malformed += 1
            return
        self.ignored += 1

    def on_timer(self, name: str, now: float) -> None:
        if name != "send":
            return
        sent_at, now = now, self._tick  # the schedule runs on the tick's time
        slot = math.floor((now - self.t0) / self.p.tsd + 1e-12)
        while self.slot < slot:
            self._slot_boundary(now)
        dt = 1.0 / self.sr
        s = self.p
        tau = (now - self.t0) / s.tsd - self.slot
        pt = s.p**tau
        credit, budget = self.credit, self.budget
        # Fluid rates: coefficient · P^τ, the newest wave takes the remainder of SR.
        rest = self.sr
        for cn, coef in self._coef:
            r = coef * pt
            rest -= r
            if cn in credit:
                credit[cn] += r * dt
        if self._newest in credit:
            credit[self._newest] += rest * dt
        ending = self.slot % self.T  # the oldest wave ends with this slot
        best, best_key = self.T, credit[self.T]
        for c, cr in credit.items():
            if c == self.T or budget.get(c, 0) <= 0:
                continue
            key = cr + (self._end_deficit(now) if c == ending else 0.0)
            if key > best_key or (key == best_key and c < best):
                best, best_key = c, key
        cn = best
        if self.budget.get(ending, 0) > 0:
            slot_end = self.t0 + (self.slot + 1) * self.p.tsd
            ticks_left = math.floor((slot_end - now) * self.sr - 1e-9) + 1
            if self.budget[ending] >= ticks_left:
                cn = ending  # the wave must finish (PSN 65535) inside its slot
        self.credit[cn] -= 1.0
        self._send(cn, sent_at)
        self._tick = now + dt
        self.set_timer("send", max(sent_at, self._tick))

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return {"rate_bps": self.p.session_rate_bps, "tsi": self.slot % self.T, "packets": self.seq}, "steady"

    def _end_deficit(self, now: float) -> float:
        """Packets the ending wave owes beyond what its fluid rate will earn: extra
        credit, so it sends its whole budget (PSN 65535 last) inside its slot."""
        s = self.p
        tau = ((now - self.t0) / s.tsd) % 1.0
        # ∫ from τ to 1 of BCR·P^(u-1) du, in packets.
        fluid = s.base_rate_pps * s.tsd * (s.p ** (tau - 1) - 1) / math.log(1 / s.p)
        return max(0.0, self.budget[self.slot % self.T] - self.credit[self.slot % self.T] - fluid)

    def _slot_boundary(self, now: float) -> None:
        ending = self.slot % self.T  # the oldest wave ends with this slot
        while self.budget.get(ending, 0) > 0:
            self._send(ending, now, tsi=self.slot % self.T)  # flush the wave's last packets
        self.budget.pop(ending, None)
        self.credit.pop(ending, None)
        self.psn.pop(ending, None)
        self.slot += 1
        self._slot_coefficients()
        self._start_wave(self._newest, 0)

    def _send(self, cn: int, now: float, tsi: int | None = None) -> None:
        if cn == self.T:
            psn = self.base_psn
            self.base_psn = (self.base_psn + 1) & 0xFFFF
        else:
            psn = self.psn[cn]
            self.psn[cn] = (psn + 1) & 0xFFFF
            self.budget[cn] -= 1
        data = encode_data(self._template, self.seq, wire.ts_us(now), cn, psn,
                           (self.slot % self.T) if tsi is None else tsi)
        self.seq += 1
        self.send((self.groups[cn], self.cfg.port), data)
